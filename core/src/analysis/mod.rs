//! Analyses over functions that passes share: annotated regions and the region graph.

pub mod regions;
