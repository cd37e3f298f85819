//! What the BYOC partitioning passes (AnnotateTarget, MergeCompilerRegions, PartitionGraph,
//! Prune) share: their error type and the copying of nodes from one function into another.

use std::collections::HashMap;

use thiserror::Error;

use byoc_ir::analysis::regions::RegionError;
use byoc_ir::TypeInferError;
use byoc_ir::{ExprId, Function, FunctionBuilder, IrError};

/// An error of the BYOC partitioning passes.
#[derive(Debug, Error, Clone, PartialEq)]
#[non_exhaustive]
pub enum PartitionError {
    /// The input or a built function is malformed.
    #[error(transparent)]
    Ir(#[from] IrError),
    /// Type inference of the input failed.
    #[error(transparent)]
    Type(#[from] TypeInferError),
    /// The compiler annotations are malformed (boxed: the located messages are large).
    #[error(transparent)]
    Region(Box<RegionError>),
}

impl From<RegionError> for PartitionError {
    fn from(e: RegionError) -> Self {
        PartitionError::Region(Box::new(e))
    }
}

/// Copies node `old` of `src` into `b` with its operands mapped through `map` (they must be
/// there), keeps its type, and records the new id in `map`.
pub(crate) fn copy_mapped(
    src: &Function,
    old: ExprId,
    map: &mut HashMap<ExprId, ExprId>,
    b: &mut FunctionBuilder,
) -> Result<ExprId, IrError> {
    let mut missing = None;
    let expr = src.expr(old).map_ids(|o| match map.get(&o) {
        Some(&n) => n,
        None => {
            missing = Some(o);
            o
        }
    });
    if let Some(o) = missing {
        return Err(IrError::BadId(o));
    }
    let new = b.push(expr)?;
    if let Some(ty) = src.ty_shared(old) {
        b.set_ty_shared(new, ty.clone());
    }
    map.insert(old, new);
    Ok(new)
}
