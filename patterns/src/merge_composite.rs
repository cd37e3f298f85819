//! MergeComposite (TVM Relay's `MergeComposite`): applies pattern tables to every function
//! the passes visit, turning each match into a composite function literal with
//! `Composite=<entry name>` and `PartitionedFromPattern=<ops>`. [`MergeComposite`] is a
//! [`Pass`] (`merge-composite`) whose declined matches go to [`PassContext::declined`]; its
//! typed entry points return them directly.
//!
//! Needs: a verified module; types are inferred first when the module is not typed yet.
//! Holds after: types stay inferred (each composite carries them over; no whole-function
//! re-inference between entries, unlike TVM). Tables apply in the order given (the pipeline gives the
//! targets' tables in priority order), entries in table order, so earlier entries win; nodes already inside a composite are never matched again, though a later entry may
//! match a call of one with a wildcard. Functions [`skipped_by_passes`] leaves alone (`Compiler`, or a
//! non-zero `Extern` or `SkipOptimization`) are not visited (TVM's function-pass skipping).
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

use byoc_ir::partition::skipped_by_passes;
use byoc_ir::{infer_types, TypeInferError};
use byoc_ir::{Attrs, Expr, ExprId, Function, Module};
use byoc_passes::{DeclinedMatch, Pass, PassContext, PassError};
use thiserror::Error;

use crate::overlay::Overlay;
use crate::partition::{partition_into, Declined, PartitionError};
use crate::table::PatternTable;

pub use byoc_ir::partition::COMPOSITE;

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

impl From<MergeCompositeError> for PassError {
    fn from(e: MergeCompositeError) -> Self {
        match e {
            MergeCompositeError::TypeInfer(e) => PassError::Type(e),
            MergeCompositeError::Partition { function, source } => PassError::Rewrite {
                function,
                message: source.to_string(),
            },
        }
    }
}

/// The MergeComposite pass over one or more pattern tables.
#[derive(Clone, Debug, Default)]
pub struct MergeComposite<'t> {
    tables: Vec<&'t PatternTable>,
}

impl<'t> MergeComposite<'t> {
    /// MergeComposite with one table.
    pub fn new(table: &'t PatternTable) -> Self {
        MergeComposite {
            tables: vec![table],
        }
    }

    /// MergeComposite with several tables, applied in this order (targets in priority order).
    pub fn with_tables(tables: impl IntoIterator<Item = &'t PatternTable>) -> Self {
        MergeComposite {
            tables: tables.into_iter().collect(),
        }
    }

    /// Applies the tables to every function of `module` that the passes visit, and returns
    /// the matches that checks rejected (table by table, function by function, in entry
    /// order): what `byoc inspect` reports as declined composites.
    fn merge(&self, module: &mut Module) -> Result<Vec<DeclinedMatch>, MergeCompositeError> {
        let untyped = module
            .functions()
            .any(|(_, f)| !skipped_by_passes(f) && f.ty(f.body).is_none());
        if untyped {
            infer_types(module)?;
        }
        let mut explained = Vec::new();
        for table in &self.tables {
            for name in module.names() {
                let Some(f) = module.get(&name).filter(|f| !skipped_by_passes(f)) else {
                    continue;
                };
                let (merged, declined) = apply_table(&name, f, table)?;
                explained.extend(declined);
                module.insert(name, merged);
            }
        }
        Ok(explained)
    }
}

impl Pass for MergeComposite<'_> {
    fn name(&self) -> &'static str {
        "merge-composite"
    }

    /// Applies the tables; declined matches go to [`PassContext::declined`].
    fn run(&self, module: &mut Module, cx: &mut PassContext) -> Result<(), PassError> {
        cx.declined.extend(self.merge(module)?);
        Ok(())
    }
}

/// Applies one table to one typed function.
fn apply_table(
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
