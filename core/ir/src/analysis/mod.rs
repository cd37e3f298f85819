//! Analyses over functions that passes share: annotated regions and the region graph, and
//! the graph algorithms (union-find, topological order) they and the importer use.

pub mod graph;
pub mod regions;
