//! MergeComposite (reference §3): applies a pattern table to every optimizable function,
//! turning each match into a composite function literal with `Composite=<entry name>` and
//! `PartitionedFromPattern=<ops>`.
//!
//! Needs: a verified module; types are inferred first when the module is not typed yet.
//! Holds after: types stay inferred (each composite carries them over; no whole-function
//! re-inference between entries, unlike TVM). Entries apply in table order, so earlier entries
//! win; nodes already inside a composite are never matched again, though a later entry may
//! match a call of one with a wildcard. Functions with a `Compiler` attribute, or a non-zero
//! `Extern` or `SkipOptimization`, are left alone (TVM's function-pass skipping).
//!
//! How: the entries run over one overlay of the function (`crate::overlay`): each entry sees
//! the graph as if the earlier entries' composites were built, and the function is rebuilt once
//! at the end. A check callback sees the input function (types and attributes are the same as
//! in the partly rewritten graph; an argument that an earlier entry turned into a composite
//! call still shows its original expression there).
//!
//! Cost: per entry, one match attempt per call of an op the pattern's root can match (every
//! live node for patterns rooted at a tuple or wildcard), plus the size and users of each
//! match; one rebuild. Linear in the graph size for a fixed table.

use byoc_core::ir::{Attrs, Function, Module};
use byoc_core::passes::{infer_types, TypeInferError};
use thiserror::Error;

use crate::overlay::Overlay;
use crate::partition::{partition_into, PartitionError};
use crate::table::PatternTable;

/// The function attribute naming a composite's table entry.
pub const COMPOSITE: &str = "Composite";

/// Errors of MergeComposite.
#[derive(Debug, Error, Clone, PartialEq)]
#[non_exhaustive]
pub enum MergeCompositeError {
    /// The module does not type-check.
    #[error(transparent)]
    TypeInfer(#[from] TypeInferError),
    /// Building the function with its composites failed.
    #[error("in @{function}: {source}")]
    Partition {
        /// The global function.
        function: String,
        /// What failed (boxed: the error is large and travels only on failure).
        source: Box<PartitionError>,
    },
}

/// True for functions function passes skip: already external, or marked to be left alone.
pub fn is_skipped(f: &Function) -> bool {
    f.attrs.contains("Compiler")
        || f.attrs.get_int("Extern").is_some_and(|v| v != 0)
        || f.attrs.get_int("SkipOptimization").is_some_and(|v| v != 0)
}

/// Applies `table` to one typed function (`name` is for error messages).
pub fn merge_composite_function(
    name: &str,
    f: &Function,
    table: &PatternTable,
) -> Result<Function, MergeCompositeError> {
    let mut overlay = Overlay::new(f);
    for entry in table.entries() {
        let attrs = Attrs::new().with(COMPOSITE, entry.name.as_str());
        partition_into(
            f,
            &mut overlay,
            &entry.pattern,
            &attrs,
            entry.check.as_ref(),
        );
    }
    if overlay.is_unchanged() {
        return Ok(f.clone());
    }
    overlay
        .rebuild(f)
        .map_err(|source| MergeCompositeError::Partition {
            function: name.to_string(),
            source: Box::new(source),
        })
}

/// Applies `table` to every function of `module` that function passes visit.
pub fn merge_composite(
    module: &mut Module,
    table: &PatternTable,
) -> Result<(), MergeCompositeError> {
    let untyped = module
        .functions()
        .any(|(_, f)| !is_skipped(f) && f.ty(f.body).is_none());
    if untyped {
        infer_types(module)?;
    }
    for name in module.names() {
        let Some(f) = module.get(&name).filter(|f| !is_skipped(f)) else {
            continue;
        };
        let merged = merge_composite_function(&name, f, table)?;
        module.insert(name, merged);
    }
    Ok(())
}
