//! Reductions compiled as loops of their own (HostFuse's `reduction` groups): which axes a
//! reduction op folds, in which order, from which initial value, and how the loop nest over
//! its input is laid out so that every output element is folded exactly as the reference
//! kernel folds it.
//!
//! The reference kernels fold each output's elements one at a time in the row-major order of
//! the reduced axes: `sum`, `mean` from `0` with `+` (`mean` then divides by the element count
//! converted to `float32`), `prod` from `1` with `*`, `max` from `-inf` keeping `x` when
//! `x > acc`, `min` from `+inf` keeping `x` when `x < acc`; `nn.global_avg_pool2d` sums
//! (rows, then columns) and divides by `H * W`, `nn.global_max_pool2d` folds with `f32::max`
//! (`llvm.maxnum`) from `f32::MIN`; `nn.softmax` and `nn.log_softmax` fold each line twice
//! (its maximum with `f32::max` from `-inf`, then the sum of `expf(x - max)` from 0) and
//! compute `expf(x - max) / sum` or `x - max - logf(sum)`. The compiled loop walks the reduction's input in the
//! order *outer kept axes* (the kept axes before the last reduced one), *reduced axes*,
//! *trailing kept axes* (those after the last reduced one): each output still sees its
//! elements in the reference order, the trailing kept axes form a row of neighbouring outputs
//! (an accumulator row the inner loop runs across), and the outer kept positions are
//! independent, so the loop splits over threads there.

use byoc_ir::{Attrs, ExprId};
use byoc_passes::host_fuse::WINDOW_POOLINGS;

use crate::kernel::{unsupported, Piece, Unsupported};
use crate::window::PoolWindow;

/// How a reduction folds one element into its accumulator.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fold {
    /// `acc + x`.
    Sum,
    /// `acc * x`.
    Prod,
    /// `x > acc ? x : acc` (NaN never taken).
    Max,
    /// `x < acc ? x : acc` (NaN never taken).
    Min,
    /// `maxnum(acc, x)`, Rust's `f32::max` (NaN never taken).
    MaxNum,
    /// `acc / x`: an average pooling's division, folded once per output.
    Div,
}

/// A reduction op as its group's loop computes it.
#[derive(Clone, Debug, PartialEq)]
pub struct ReduceOp {
    /// The reduced value.
    pub input: ExprId,
    /// The reduced axes of the input, sorted and distinct.
    pub axes: Vec<usize>,
    /// Reduced axes stay as extent 1 in the output.
    pub keepdims: bool,
    /// The fold.
    pub fold: Fold,
    /// The accumulator's initial value.
    pub init: f32,
    /// The divisor of an average (`mean`, `nn.global_avg_pool2d`), applied to the sum.
    pub divisor: Option<f32>,
    /// For `nn.softmax` (`false`) and `nn.log_softmax` (`true`): the one axis is the line
    /// the kernel folds twice ([`crate::kernel::Softmax`]).
    pub softmax: Option<bool>,
    /// For the windowed poolings: the window folded per output ([`crate::window`]).
    pub window: Option<PoolWindow>,
}

impl ReduceOp {
    /// The reduction `name` (one of HostFuse's `LOOP_REDUCTIONS`) with `attrs`, of `input`
    /// of shape `shape`.
    pub fn of(
        name: &str,
        attrs: &Attrs,
        input: ExprId,
        shape: &[usize],
    ) -> Result<ReduceOp, Unsupported> {
        let rank = shape.len();
        if WINDOW_POOLINGS.contains(&name) {
            if rank != 4 {
                return Err(unsupported(name, "the data is not 4-D"));
            }
            let window = PoolWindow::of(name, attrs)?;
            let (fold, init) = match window.count_include_pad {
                None => (Fold::MaxNum, f32::MIN),
                Some(_) => (Fold::Sum, 0.0),
            };
            return Ok(ReduceOp {
                input,
                axes: vec![2, 3],
                keepdims: true,
                fold,
                init,
                divisor: None,
                softmax: None,
                window: Some(window),
            });
        }
        let flag = |key: &str| attrs.get(key).and_then(|v| v.as_bool()).unwrap_or(false);
        let softmax = match name {
            "nn.softmax" => Some(false),
            "nn.log_softmax" => Some(true),
            _ => None,
        };
        let (axes, keepdims) = if name.starts_with("nn.global_") {
            if rank != 4 {
                return Err(unsupported(name, "the data is not 4-D"));
            }
            (vec![2, 3], true)
        } else if softmax.is_some() {
            let axis = attrs.get("axis").and_then(|v| v.as_int()).unwrap_or(-1);
            let a = if axis < 0 { axis + rank as i64 } else { axis };
            if !(0..rank as i64).contains(&a) {
                return Err(unsupported(name, format!("axis {axis} out of range")));
            }
            (vec![a as usize], true)
        } else {
            let listed = match attrs.get("axis").filter(|v| !v.is_none()) {
                None => None,
                Some(v) => Some(match v.as_int() {
                    Some(a) => vec![a],
                    None => v
                        .as_int_list()
                        .ok_or_else(|| unsupported(name, "axis is not a list of integers"))?,
                }),
            };
            let mut axes = Vec::new();
            for a in listed.clone().unwrap_or_default() {
                let r = rank as i64;
                let a = if a < 0 { a + r } else { a };
                if !(0..r).contains(&a) {
                    return Err(unsupported(name, format!("axis {a} out of range")));
                }
                axes.push(a as usize);
            }
            axes.sort_unstable();
            axes.dedup();
            let axes = match listed {
                None => (0..rank).collect(),
                Some(_) if flag("exclude") => (0..rank).filter(|a| !axes.contains(a)).collect(),
                Some(_) => axes,
            };
            (axes, flag("keepdims"))
        };
        let count: usize = axes.iter().map(|&a| shape[a]).product();
        if count == 0 {
            return Err(unsupported(name, "it reduces an empty axis"));
        }
        let (fold, init, divisor) = match name {
            "sum" => (Fold::Sum, 0.0, None),
            "mean" => (Fold::Sum, 0.0, Some(count as i64 as f32)),
            "prod" => (Fold::Prod, 1.0, None),
            "max" => (Fold::Max, f32::NEG_INFINITY, None),
            "min" => (Fold::Min, f32::INFINITY, None),
            "nn.global_avg_pool2d" => (Fold::Sum, 0.0, Some(count as f64 as f32)),
            "nn.global_max_pool2d" => (Fold::MaxNum, f32::MIN, None),
            // Folded twice, as the kernel's `Softmax` says.
            "nn.softmax" | "nn.log_softmax" => (Fold::MaxNum, f32::NEG_INFINITY, None),
            _ => return Err(unsupported(name, "not a reduction the host loops compile")),
        };
        Ok(ReduceOp {
            input,
            axes,
            keepdims,
            fold,
            init,
            divisor,
            softmax,
            window: None,
        })
    }

    /// The input's axes in the loop's order (outer kept, reduced, trailing kept; see the
    /// module docs) and the number of trailing kept positions (outputs per accumulator row).
    pub fn loop_order(&self, shape: &[usize]) -> (Vec<usize>, usize) {
        let last = self.axes.last().copied();
        let kept = |a: &usize| !self.axes.contains(a);
        let outer = (0..shape.len()).filter(|a| kept(a) && last.is_none_or(|l| *a < l));
        let trailing: Vec<usize> = (0..shape.len())
            .filter(|a| kept(a) && last.is_some_and(|l| *a > l))
            .collect();
        let row = trailing.iter().map(|&a| shape[a]).product();
        let order = outer
            .chain(self.axes.iter().copied())
            .chain(trailing)
            .collect();
        (order, row)
    }
}

/// The folding loop of a reduction group: run over the reduction's input in loop order, it
/// folds each element (its producers computed inline) into the output element it belongs to.
/// The output holds the accumulators: it is set to `init` first, and the group's epilogue
/// kernel (the average's division, the consumers) rewrites it after.
#[derive(Clone, Debug, PartialEq)]
pub struct Reduction {
    /// The fold.
    pub fold: Fold,
    /// The accumulators' initial value.
    pub init: f32,
    /// The loop over the input: its output strides are 0 along the reduced axes.
    pub piece: Piece,
    /// Input elements folded into each output element.
    pub count: usize,
    /// Neighbouring outputs one accumulator row holds: the kernel's range of output positions
    /// is split only at multiples of it.
    pub row: usize,
}

/// The folding loops of a windowed pooling group ([`crate::window`]): the output set to
/// `init`, then each pass folds its box of every output plane, in order: one per window tap
/// (rows outer, columns inner) over the outputs whose tap lies inside the input, the producers
/// computed inline, then for an average one per box of outputs sharing a divisor.
#[derive(Clone, Debug, PartialEq)]
pub struct WindowFold {
    /// The accumulators' initial value.
    pub init: f32,
    /// Output elements per plane (`out_h * out_w`): the kernel's range of output positions is
    /// split only at multiples of it.
    pub plane: usize,
    /// Taps per window.
    pub taps: usize,
    /// The passes, in folding order.
    pub passes: Vec<FoldPass>,
}

/// One pass of a [`WindowFold`]: a loop over the same box of every output plane.
#[derive(Clone, Debug, PartialEq)]
pub struct FoldPass {
    /// How each value joins its output element.
    pub fold: Fold,
    /// The loop over `[N, C, rows, columns]` of the box (collapsed).
    pub piece: Piece,
    /// The piece's positions per plane (the box's elements).
    pub per_plane: usize,
}
