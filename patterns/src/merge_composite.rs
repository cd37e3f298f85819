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

use byoc_core::ir::{Attrs, Expr, ExprId, Function, Module};
use byoc_core::passes::{infer_types, TypeInferError};
use thiserror::Error;

use crate::overlay::Overlay;
use crate::partition::{partition_into, Declined, PartitionError};
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

/// A match of a table entry that the entry's check rejected.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeclinedMatch {
    /// The global function.
    pub function: String,
    /// The table entry.
    pub pattern: String,
    /// The op of the match's root call (`tuple`, `var`, ... for other roots).
    pub op: String,
    /// The check's reason.
    pub reason: String,
}

/// Applies `table` to one typed function (`name` is for error messages).
pub fn merge_composite_function(
    name: &str,
    f: &Function,
    table: &PatternTable,
) -> Result<Function, MergeCompositeError> {
    merge_composite_function_explained(name, f, table).map(|(f, _)| f)
}

/// [`merge_composite_function`], also returning the matches that checks rejected, in table
/// order.
pub fn merge_composite_function_explained(
    name: &str,
    f: &Function,
    table: &PatternTable,
) -> Result<(Function, Vec<DeclinedMatch>), MergeCompositeError> {
    let mut overlay = Overlay::new(f);
    let mut explained = Vec::new();
    for entry in table.entries() {
        let attrs = Attrs::new().with(COMPOSITE, entry.name.as_str());
        let mut declined: Vec<Declined> = Vec::new();
        partition_into(
            f,
            &mut overlay,
            &entry.pattern,
            &attrs,
            entry.check.as_ref(),
            &mut declined,
        );
        explained.extend(declined.into_iter().map(|d| DeclinedMatch {
            function: name.to_string(),
            pattern: entry.name.clone(),
            op: root_label(f, d.root),
            reason: d.reason,
        }));
    }
    if overlay.is_unchanged() {
        return Ok((f.clone(), explained));
    }
    let merged = overlay
        .rebuild(f)
        .map_err(|source| MergeCompositeError::Partition {
            function: name.to_string(),
            source: Box::new(source),
        })?;
    Ok((merged, explained))
}

/// The op of a root call, else the kind of expression.
fn root_label(f: &Function, root: ExprId) -> String {
    match f.expr(root) {
        Expr::Call(call) => call
            .op()
            .map_or_else(|| "call".to_string(), |op| op.name().to_string()),
        Expr::Tuple(_) => "tuple".to_string(),
        Expr::TupleGetItem { .. } => "tuple field".to_string(),
        Expr::Var(_) => "var".to_string(),
        Expr::Constant(_) => "constant".to_string(),
        Expr::Function(_) => "function".to_string(),
    }
}

/// Applies `table` to every function of `module` that function passes visit.
pub fn merge_composite(
    module: &mut Module,
    table: &PatternTable,
) -> Result<(), MergeCompositeError> {
    merge_composite_explained(module, table).map(|_| ())
}

/// [`merge_composite`], also returning the matches that checks rejected (function by function,
/// in table order): what `byoc inspect` reports as declined composites.
pub fn merge_composite_explained(
    module: &mut Module,
    table: &PatternTable,
) -> Result<Vec<DeclinedMatch>, MergeCompositeError> {
    let untyped = module
        .functions()
        .any(|(_, f)| !is_skipped(f) && f.ty(f.body).is_none());
    if untyped {
        infer_types(module)?;
    }
    let mut explained = Vec::new();
    for name in module.names() {
        let Some(f) = module.get(&name).filter(|f| !is_skipped(f)) else {
            continue;
        };
        let (merged, declined) = merge_composite_function_explained(&name, f, table)?;
        explained.extend(declined);
        module.insert(name, merged);
    }
    Ok(explained)
}
