//! Constants lifted out of a function as placeholders, and put back.
//!
//! Printing a large constant as Relay text costs a decimal number per element; the formats
//! that carry functions (the function record, [`crate::PartitionedFunction::to_record`],
//! and the host program of an artifact) print a placeholder instead and store the tensors as
//! raw bytes beside the text. A placeholder is an `int64` scalar constant holding the index of
//! its tensor in the list the lifting fills. Every constant of a lifted function is a
//! placeholder, so no real constant can be mistaken for one. Lifting keeps node ids: the
//! function is rebuilt node for node.

use std::sync::Arc;

use thiserror::Error;

use byoc_ir::tensor::Tensor;
use byoc_ir::{Expr, Function, FunctionBuilder, IrError};

/// Errors of putting constants back in place of their placeholders.
#[derive(Debug, Error, Clone, PartialEq)]
#[non_exhaustive]
pub enum PlaceholderError {
    /// A constant that is not an `int64` scalar stands where a placeholder should.
    #[error(
        "a constant of type {ty} stands where a constant placeholder (an int64 scalar) should"
    )]
    NotAPlaceholder {
        /// The constant's type.
        ty: String,
    },
    /// A placeholder's index is past the end of the constants.
    #[error("constant placeholder {index} names no constant (there are {count})")]
    UnknownIndex {
        /// The placeholder's index.
        index: i64,
        /// How many constants there are.
        count: usize,
    },
    /// The rebuilt function is not well formed.
    #[error(transparent)]
    Ir(#[from] IrError),
}

/// Rebuilds `f` node for node (ids unchanged), replacing each constant with `map(constant)`.
fn map_constants(
    f: &Function,
    mut map: impl FnMut(&Arc<Tensor>) -> Result<Arc<Tensor>, PlaceholderError>,
) -> Result<Function, PlaceholderError> {
    let mut b = FunctionBuilder::new();
    for (_, node) in f.iter() {
        match &node.expr {
            Expr::Constant(t) => {
                b.constant(map(t)?);
            }
            other => {
                b.push(other.clone())?;
            }
        }
    }
    Ok(b.finish(f.params.clone(), f.body, f.attrs.clone())?)
}

/// `f` with every constant replaced by a placeholder; the constants are appended to
/// `constants` (placeholder `i` names `constants[i]`, so several functions can share one list).
pub fn lift_constants(
    f: &Function,
    constants: &mut Vec<Arc<Tensor>>,
) -> Result<Function, PlaceholderError> {
    map_constants(f, |t| {
        // Exact: a Vec never holds more than isize::MAX elements.
        let index = constants.len() as i64;
        constants.push(t.clone());
        Ok(Arc::new(Tensor::scalar(index)))
    })
}

/// `f` with every placeholder replaced by the constant it names.
pub fn restore_constants(
    f: &Function,
    constants: &[Arc<Tensor>],
) -> Result<Function, PlaceholderError> {
    map_constants(f, |t| {
        let index = t
            .as_slice::<i64>()
            .ok()
            .filter(|_| t.shape().is_empty())
            .and_then(|v| v.first().copied())
            .ok_or_else(|| PlaceholderError::NotAPlaceholder {
                ty: t.ty().to_string(),
            })?;
        usize::try_from(index)
            .ok()
            .and_then(|i| constants.get(i))
            .cloned()
            .ok_or(PlaceholderError::UnknownIndex {
                index,
                count: constants.len(),
            })
    })
}
