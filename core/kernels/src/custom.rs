//! Host kernels over custom datatypes (Bring Your Own Datatypes): interpreted loops that call
//! the registering plugin's library function for every scalar operation
//! ([`crate::datatypes::DatatypeCalls`]).
//!
//! Values are the datatype's bit patterns, widened to `u64` while a kernel runs. The loops
//! follow TVM's compute definitions, so a result is the one TVM's lowering of the same op
//! gives, operation for operation:
//! - elementwise ops are the registered intrinsics (`tir.exp`, ...); `rsqrt` is
//!   `1 / sqrt(x)`, `nn.relu` is `max(x, 0)`, `negative` is `0 - x`, `abs` is `tir.fabs` or,
//!   without it, `max(x, 0 - x)`; `clip` is `max(min(x, a_max), a_min)` (an infinite bound
//!   is no bound); `nn.leaky_relu` and `nn.prelu` are `x < 0 ? x * alpha : x`;
//! - comparisons are the registered `EQ`, `NE`, `LT`, `LE`, `GT`, `GE`, giving `bool`;
//! - sums (conv2d, dense, pooling, softmax) start from zero and add one term at a time in
//!   TVM's reduction order (conv2d: input channel, kernel row, kernel column), each `+` and
//!   `×` rounded by the library; padding taps contribute nothing;
//! - with the datatype's dot-product option on ([`crate::datatypes::apply_datatype_options`]),
//!   the sums of conv2d, dense, batch_matmul and average pooling are instead one call of its
//!   exact dot product per output, rounded once (pooling sums its taps as products with one);
//!   softmax's sum stays sequential;
//! - max pooling and softmax's maximum start from the registered min value;
//! - average pooling divides the sum by the tap count converted to the datatype;
//! - softmax is `exp(x - max) / Σ exp(x - max)` along the axis.
//!
//! Layout ops (reshape, transpose, concatenate, ...) move bits and need no kernel here.

use rayon::prelude::*;

use crate::datatypes::{
    read_bits, write_bits, BinaryCall, CastCall, DatatypeCalls, DotProductCall,
};
use crate::{HostKernel, KernelError, KernelSpec};
use byoc_ir::ops::conv::Conv2dGeom;
use byoc_ir::ops::norm::AxisView;
use byoc_ir::ops::pool::{Pool2dGeom, PoolKind};
use byoc_ir::{DType, TensorType};

/// The library calls of the custom dtype of tensor `t`, as a kernel error of `op` when the
/// datatype is not registered.
fn calls(op: &str, t: &TensorType) -> Result<DatatypeCalls, KernelError> {
    DatatypeCalls::new(t.dtype).map_err(|e| KernelError::new(op, e.to_string()))
}

/// A kernel error of `op` from a missing lowering.
fn missing(op: &str) -> impl Fn(crate::datatypes::DatatypeCallError) -> KernelError + '_ {
    move |e| KernelError::new(op, e.to_string())
}

/// A kernel on bit patterns: the inputs (custom-typed ones as bit patterns, others through
/// `load`) go to `body`, which fills the single output's bit patterns.
fn bits_kernel(
    spec: &KernelSpec<'_>,
    body: impl Fn(&[Vec<u64>], &mut [u64], usize) + Send + Sync + 'static,
) -> Box<dyn HostKernel> {
    let len = spec.outputs.first().map_or(0, TensorType::num_elements);
    super::kernel(
        spec.op,
        spec.inputs,
        spec.outputs,
        move |ins, outs, threads| {
            let inputs: Vec<Vec<u64>> = ins.iter().map(read_bits).collect();
            let mut out = vec![0u64; len];
            body(&inputs, &mut out, threads);
            if let Some(y) = outs.first_mut() {
                write_bits(&out, y);
            }
            Ok(())
        },
    )
}

/// Fills `out` in chunks of `chunk` elements, on the rayon pool when `threads > 1`.
fn for_chunks(out: &mut [u64], chunk: usize, threads: usize, f: impl Fn(usize, &mut [u64]) + Sync) {
    let chunk = chunk.max(1);
    if threads > 1 {
        out.par_chunks_mut(chunk)
            .enumerate()
            .for_each(|(i, c)| f(i, c));
    } else {
        out.chunks_mut(chunk).enumerate().for_each(|(i, c)| f(i, c));
    }
}

/// A unary elementwise op on a custom datatype.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Unary {
    /// A registered intrinsic (`tir.exp`).
    Intrinsic(&'static str),
    /// `1 / sqrt(x)`.
    Rsqrt,
    /// `max(x, 0)`.
    Relu,
    /// `0 - x`.
    Negative,
    /// `tir.fabs`, or `max(x, 0 - x)` where the table has no `tir.fabs`.
    Abs,
    /// The input unchanged.
    Copy,
}

/// The kernel of a unary elementwise op.
pub(crate) fn unary(spec: &KernelSpec<'_>, op: Unary) -> Result<Box<dyn HostKernel>, KernelError> {
    let c = calls(spec.op, &spec.inputs[0])?;
    let err = missing(spec.op);
    let zero = c.from_f32(0.0).map_err(&err)?;
    let f: Box<dyn Fn(u64) -> u64 + Send + Sync> = match op {
        Unary::Intrinsic(name) => {
            let f = c.intrinsic(name).map_err(&err)?;
            Box::new(move |x| f.call(x))
        }
        Unary::Rsqrt => {
            let (sqrt, div) = (
                c.intrinsic("tir.sqrt").map_err(&err)?,
                c.binary("Div").map_err(&err)?,
            );
            let one = c.from_f32(1.0).map_err(&err)?;
            Box::new(move |x| div.call(one, sqrt.call(x)))
        }
        Unary::Relu => {
            let max = c.binary("Max").map_err(&err)?;
            Box::new(move |x| max.call(x, zero))
        }
        Unary::Negative => {
            let sub = c.binary("Sub").map_err(&err)?;
            Box::new(move |x| sub.call(zero, x))
        }
        Unary::Abs => match c.intrinsic("tir.fabs") {
            Ok(f) => Box::new(move |x| f.call(x)),
            // Negation and the maximum are exact, so `max(x, 0 - x)` is `|x|` too; without
            // them the error names the direct key.
            Err(direct) => match (c.binary("Max"), c.binary("Sub")) {
                (Ok(max), Ok(sub)) => Box::new(move |x| max.call(x, sub.call(zero, x))),
                _ => return Err(err(direct)),
            },
        },
        Unary::Copy => Box::new(|x| x),
    };
    Ok(bits_kernel(spec, move |ins, out, threads| {
        for_chunks(out, 4096, threads, |i, chunk| {
            for (j, y) in chunk.iter_mut().enumerate() {
                *y = f(ins[0][i * 4096 + j]);
            }
        })
    }))
}

/// `f(a, b)` with numpy broadcasting over two inputs' bit patterns.
fn broadcast_bits(
    spec: &KernelSpec<'_>,
    f: impl Fn(u64, u64) -> u64 + Copy + Send + Sync + 'static,
) -> Box<dyn HostKernel> {
    let plan = super::broadcast::BroadcastPlan::new(
        &spec.outputs[0].shape,
        &[&spec.inputs[0].shape, &spec.inputs[1].shape],
    );
    bits_kernel(spec, move |ins, out, threads| {
        super::broadcast::binary(&plan, &ins[0], &ins[1], out, threads, f);
    })
}

/// A binary op with numpy broadcasting, by TVM's lowering name (`Add`, `Sub`, `Mul`, `Div`,
/// `Max`, `Min`).
pub(crate) fn binary(spec: &KernelSpec<'_>, op: &str) -> Result<Box<dyn HostKernel>, KernelError> {
    let f = calls(spec.op, &spec.inputs[0])?
        .binary(op)
        .map_err(missing(spec.op))?;
    Ok(broadcast_bits(spec, move |a, b| f.call(a, b)))
}

/// A comparison with numpy broadcasting, by TVM's lowering name (`EQ`, `NE`, `LT`, `LE`,
/// `GT`, `GE`); the output is `bool`.
pub(crate) fn compare(spec: &KernelSpec<'_>, op: &str) -> Result<Box<dyn HostKernel>, KernelError> {
    let f = calls(spec.op, &spec.inputs[0])?
        .compare(op)
        .map_err(missing(spec.op))?;
    Ok(broadcast_bits(spec, move |a, b| u64::from(f.call(a, b))))
}

/// `clip`: `Max(Min(x, a_max), a_min)` (TVM's compute), each finite bound converted by the
/// cast from `float32`; an infinite bound clips nothing (a datatype may have no infinity).
pub(crate) fn clip(
    spec: &KernelSpec<'_>,
    lo: f64,
    hi: f64,
) -> Result<Box<dyn HostKernel>, KernelError> {
    let c = calls(spec.op, &spec.inputs[0])?;
    let err = missing(spec.op);
    let bound = |v: f64, op: &str| -> Result<Option<(BinaryCall, u64)>, KernelError> {
        if v.is_infinite() {
            return Ok(None);
        }
        Ok(Some((
            c.binary(op).map_err(&err)?,
            c.from_f32(v as f32).map_err(&err)?,
        )))
    };
    let (upper, lower) = (bound(hi, "Min")?, bound(lo, "Max")?);
    let apply = |b: Option<(BinaryCall, u64)>, x: u64| b.map_or(x, |(f, v)| f.call(x, v));
    Ok(bits_kernel(spec, move |ins, out, threads| {
        for_chunks(out, 4096, threads, |i, chunk| {
            for (j, y) in chunk.iter_mut().enumerate() {
                *y = apply(lower, apply(upper, ins[0][i * 4096 + j]));
            }
        })
    }))
}

/// The slope of the negative side of `nn.leaky_relu` and `nn.prelu`.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Slope {
    /// One `alpha` for every element (`nn.leaky_relu`).
    Constant(f64),
    /// `alpha[c]` from the second input along the view's axis (`nn.prelu`).
    PerChannel(AxisView),
}

/// `nn.leaky_relu` and `nn.prelu`: `LT(x, 0) ? Mul(x, alpha) : x`.
pub(crate) fn leaky(
    spec: &KernelSpec<'_>,
    slope: Slope,
) -> Result<Box<dyn HostKernel>, KernelError> {
    let c = calls(spec.op, &spec.inputs[0])?;
    let err = missing(spec.op);
    let (lt, mul) = (
        c.compare("LT").map_err(&err)?,
        c.binary("Mul").map_err(&err)?,
    );
    let zero = c.from_f32(0.0).map_err(&err)?;
    // One alpha's bits, or `None` to read the element's channel's from the second input.
    let (constant, view) = match slope {
        Slope::Constant(a) => {
            let one = AxisView {
                outer: 1,
                len: 1,
                inner: 1,
            };
            (Some(c.from_f32(a as f32).map_err(&err)?), one)
        }
        Slope::PerChannel(view) => (None, view),
    };
    Ok(bits_kernel(spec, move |ins, out, _| {
        for (i, y) in out.iter_mut().enumerate() {
            let x = ins[0][i];
            let alpha = constant.unwrap_or_else(|| ins[1][channel(view, i)]);
            *y = if lt.call(x, zero) {
                mul.call(x, alpha)
            } else {
                x
            };
        }
    }))
}

/// `cast` between a custom datatype and `float32`, `float64` or `int32`.
pub(crate) fn cast(spec: &KernelSpec<'_>) -> Result<Box<dyn HostKernel>, KernelError> {
    let (from, to) = (&spec.inputs[0], &spec.outputs[0]);
    let err = missing(spec.op);
    match (from.dtype.is_custom(), to.dtype.is_custom()) {
        (true, true) if from.dtype == to.dtype => unary(spec, Unary::Copy),
        (true, false) => {
            let f = calls(spec.op, from)?.cast(to.dtype, false).map_err(&err)?;
            let n = from.num_elements();
            let to_ty = to.clone();
            Ok(super::kernel(
                spec.op,
                spec.inputs,
                spec.outputs,
                move |ins, outs, _| {
                    let x = read_bits(&ins[0]);
                    let values: Vec<f64> = x.iter().map(|&b| f.to_native(b)).collect();
                    debug_assert_eq!(values.len(), n);
                    outs[0]
                        .fill_from_f64(&values)
                        .map_err(|e| KernelError::new("cast", format!("to {}: {e}", to_ty.dtype)))
                },
            ))
        }
        (false, true) => {
            let f = calls(spec.op, to)?.cast(from.dtype, true).map_err(&err)?;
            Ok(super::kernel(
                spec.op,
                spec.inputs,
                spec.outputs,
                move |ins, outs, _| {
                    let bits: Vec<u64> = ins[0]
                        .to_f64_vec()
                        .into_iter()
                        .map(|v| f.from_native(v))
                        .collect();
                    write_bits(&bits, &mut outs[0]);
                    Ok(())
                },
            ))
        }
        _ => Err(spec.unsupported(format_args!("casting from {} to {}", from.dtype, to.dtype))),
    }
}

/// `nn.bias_add`: `data + bias` along the view's axis.
pub(crate) fn bias_add(
    spec: &KernelSpec<'_>,
    view: AxisView,
) -> Result<Box<dyn HostKernel>, KernelError> {
    let add = calls(spec.op, &spec.inputs[0])?
        .binary("Add")
        .map_err(missing(spec.op))?;
    Ok(bits_kernel(spec, move |ins, out, _| {
        for (i, y) in out.iter_mut().enumerate() {
            *y = add.call(ins[0][i], ins[1][channel(view, i)]);
        }
    }))
}

/// The channel of element `i` along `view`'s axis.
fn channel(view: AxisView, i: usize) -> usize {
    (i / view.inner.max(1)) % view.len.max(1)
}

/// Adds `terms` one at a time to zero (bits `zero`).
fn sum(add: BinaryCall, zero: u64, terms: impl Iterator<Item = u64>) -> u64 {
    terms.fold(zero, |acc, t| add.call(acc, t))
}

/// How a kernel sums the terms of one output.
#[derive(Clone, Copy, Debug)]
enum Summation {
    /// `acc = Add(acc, term)` from zero, every addition rounded (TVM's lowering).
    Sequential {
        /// The datatype's `Add`.
        add: BinaryCall,
        /// Zero's bit pattern.
        zero: u64,
    },
    /// The exact dot product, rounded once.
    Exact {
        /// The datatype's `DotProduct`.
        dot: DotProductCall,
        /// One's bit pattern (a plain sum is the dot product with ones).
        one: u64,
    },
}

impl Summation {
    /// The summation of `spec`'s first input's datatype: exact when its dot-product option is
    /// on, sequential otherwise.
    fn of(spec: &KernelSpec<'_>) -> Result<Summation, KernelError> {
        let c = calls(spec.op, &spec.inputs[0])?;
        let err = missing(spec.op);
        Ok(match c.dot_product() {
            Some(dot) => Summation::Exact {
                dot,
                one: c.from_f32(1.0).map_err(&err)?,
            },
            None => Summation::Sequential {
                add: c.binary("Add").map_err(&err)?,
                zero: c.from_f32(0.0).map_err(&err)?,
            },
        })
    }

    /// `Σ terms`.
    fn terms(self, terms: &[u64]) -> u64 {
        match self {
            Summation::Sequential { add, zero } => sum(add, zero, terms.iter().copied()),
            Summation::Exact { dot, one } => dot.call(terms, &vec![one; terms.len()]),
        }
    }
}

/// A sum of products: `Σ Mul(a[i], b[i])` in the kernel's [`Summation`].
#[derive(Clone, Copy, Debug)]
struct ProductSum {
    summation: Summation,
    mul: BinaryCall,
}

impl ProductSum {
    /// The sum of products of `spec`'s first input's datatype.
    fn of(spec: &KernelSpec<'_>) -> Result<ProductSum, KernelError> {
        let mul = calls(spec.op, &spec.inputs[0])?
            .binary("Mul")
            .map_err(missing(spec.op))?;
        Ok(ProductSum {
            summation: Summation::of(spec)?,
            mul,
        })
    }

    /// `Σ a[i]·b[i]` over the common length.
    fn call(self, a: &[u64], b: &[u64]) -> u64 {
        match self.summation {
            Summation::Sequential { add, zero } => sum(
                add,
                zero,
                a.iter().zip(b).map(|(&x, &y)| self.mul.call(x, y)),
            ),
            Summation::Exact { dot, .. } => dot.call(a, b),
        }
    }
}

/// `nn.softmax` along the view's axis.
pub(crate) fn softmax(
    spec: &KernelSpec<'_>,
    view: AxisView,
) -> Result<Box<dyn HostKernel>, KernelError> {
    let c = calls(spec.op, &spec.inputs[0])?;
    let err = missing(spec.op);
    let (max, sub, add, div) = (
        c.binary("Max").map_err(&err)?,
        c.binary("Sub").map_err(&err)?,
        c.binary("Add").map_err(&err)?,
        c.binary("Div").map_err(&err)?,
    );
    let exp = c.intrinsic("tir.exp").map_err(&err)?;
    let (lowest, zero) = (c.min_value().map_err(&err)?, c.from_f32(0.0).map_err(&err)?);
    let AxisView { outer, len, inner } = view;
    Ok(bits_kernel(spec, move |ins, out, _| {
        let x = &ins[0];
        for o in 0..outer {
            for i in 0..inner {
                let at = |k: usize| (o * len + k) * inner + i;
                let m = (0..len).fold(lowest, |m, k| max.call(m, x[at(k)]));
                for k in 0..len {
                    out[at(k)] = exp.call(sub.call(x[at(k)], m));
                }
                let s = sum(add, zero, (0..len).map(|k| out[at(k)]));
                for k in 0..len {
                    out[at(k)] = div.call(out[at(k)], s);
                }
            }
        }
    }))
}

/// The shape of a (batched) matrix product `a × b`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Matmul {
    /// Batch of the result, and of each operand (1 broadcasts).
    pub batch: [usize; 3],
    /// Rows of the result, columns of the result, reduction length.
    pub mnk: [usize; 3],
    /// `a` stored `k × m`; `b` stored `n × k`.
    pub transpose: [bool; 2],
}

/// `nn.dense` and `nn.batch_matmul`: each result element sums its `k` products in order.
pub(crate) fn matmul(
    spec: &KernelSpec<'_>,
    shape: Matmul,
) -> Result<Box<dyn HostKernel>, KernelError> {
    let products = ProductSum::of(spec)?;
    let Matmul {
        batch: [_, batch_a, batch_b],
        mnk: [m, n, k],
        transpose: [ta, tb],
    } = shape;
    Ok(bits_kernel(spec, move |ins, out, threads| {
        let (a, b) = (&ins[0], &ins[1]);
        for_chunks(out, n, threads, |row, y| {
            let (bi, i) = (row / m.max(1), row % m.max(1));
            let (a0, b0) = ((bi % batch_a.max(1)) * m * k, (bi % batch_b.max(1)) * k * n);
            let a_row: Vec<u64> = (0..k)
                .map(|p| a[a0 + if ta { p * m + i } else { i * k + p }])
                .collect();
            let mut b_column = Vec::with_capacity(k);
            for (j, y) in y.iter_mut().enumerate() {
                b_column.clear();
                b_column.extend((0..k).map(|p| b[b0 + if tb { j * k + p } else { p * n + j }]));
                *y = products.call(&a_row, &b_column);
            }
        });
    }))
}

/// Index of element `(b, c, y, x)` of an NCHW or NHWC tensor of `[c, h, w]` per image.
fn at(
    channels_last: bool,
    [c_n, h_n, w_n]: [usize; 3],
    b: usize,
    c: usize,
    y: usize,
    x: usize,
) -> usize {
    if channels_last {
        ((b * h_n + y) * w_n + x) * c_n + c
    } else {
        ((b * c_n + c) * h_n + y) * w_n + x
    }
}

/// The input coordinate of output coordinate `o`, tap `t` on one axis, if inside the input.
fn tap(
    o: usize,
    t: usize,
    stride: usize,
    dilation: usize,
    pad: usize,
    size: usize,
) -> Option<usize> {
    (o * stride + t * dilation)
        .checked_sub(pad)
        .filter(|&i| i < size)
}

/// `nn.conv2d` (any groups, strides, dilation, padding; NCHW or NHWC data) with the weight's
/// `[o, i, kh, kw]` strides.
pub(crate) fn conv2d(
    spec: &KernelSpec<'_>,
    g: Conv2dGeom,
    w_strides: [usize; 4],
) -> Result<Box<dyn HostKernel>, KernelError> {
    let products = ProductSum::of(spec)?;
    let plane = g.out_h * g.out_w;
    Ok(bits_kernel(spec, move |ins, out, threads| {
        let (x, w) = (&ins[0], &ins[1]);
        let (in_per_group, out_per_group) = (g.in_c / g.groups.max(1), g.out_c / g.groups.max(1));
        // One chunk per (image, output channel) plane in NCHW; whole images in NHWC.
        let (chunk, per_image) = if g.channels_last {
            (plane * g.out_c, true)
        } else {
            (plane, false)
        };
        for_chunks(out, chunk, threads, |index, ys| {
            let (mut xs, mut ws) = (Vec::new(), Vec::new());
            for (e, y) in ys.iter_mut().enumerate() {
                let (b, oc, oy, ox) = if per_image {
                    (
                        index,
                        e % g.out_c,
                        e / g.out_c / g.out_w,
                        e / g.out_c % g.out_w,
                    )
                } else {
                    (
                        index / g.out_c.max(1),
                        index % g.out_c.max(1),
                        e / g.out_w,
                        e % g.out_w,
                    )
                };
                let group = oc / out_per_group.max(1);
                xs.clear();
                ws.clear();
                for ic in 0..in_per_group {
                    for ky in 0..g.kernel[0] {
                        let Some(iy) = tap(oy, ky, g.strides[0], g.dilation[0], g.pad[0], g.in_h)
                        else {
                            continue;
                        };
                        for kx in 0..g.kernel[1] {
                            let Some(ix) =
                                tap(ox, kx, g.strides[1], g.dilation[1], g.pad[1], g.in_w)
                            else {
                                continue;
                            };
                            let xi = at(
                                g.channels_last,
                                [g.in_c, g.in_h, g.in_w],
                                b,
                                group * in_per_group + ic,
                                iy,
                                ix,
                            );
                            let wi = oc * w_strides[0]
                                + ic * w_strides[1]
                                + ky * w_strides[2]
                                + kx * w_strides[3];
                            xs.push(x[xi]);
                            ws.push(w[wi]);
                        }
                    }
                }
                *y = products.call(&xs, &ws);
            }
        });
    }))
}

/// The reduction of a pooling window.
#[derive(Clone, Copy, Debug)]
enum Reduce {
    /// `Max` folded from the min value.
    Max(BinaryCall, u64),
    /// The sum of the taps divided (`Div`) by their count (cast from float32), padding taps
    /// counted or not.
    Mean {
        sum: Summation,
        div: BinaryCall,
        count_to_custom: CastCall,
        count_include_pad: bool,
    },
}

/// `nn.max_pool2d`, `nn.avg_pool2d` and their global forms.
pub(crate) fn pool2d(
    spec: &KernelSpec<'_>,
    g: Pool2dGeom,
    kind: PoolKind,
) -> Result<Box<dyn HostKernel>, KernelError> {
    let c = calls(spec.op, &spec.inputs[0])?;
    let err = missing(spec.op);
    // Max pooling folds `Max` from the min value; average pooling sums the taps and divides
    // by their count, a small integer exact in float32.
    let reduce = match kind {
        PoolKind::Max => Reduce::Max(c.binary("Max").map_err(&err)?, c.min_value().map_err(&err)?),
        PoolKind::Avg { count_include_pad } => Reduce::Mean {
            sum: Summation::of(spec)?,
            div: c.binary("Div").map_err(&err)?,
            count_to_custom: c.cast(DType::Float32, true).map_err(&err)?,
            count_include_pad,
        },
    };
    Ok(bits_kernel(spec, move |ins, out, threads| {
        let x = &ins[0];
        let shape_in = [g.channels, g.in_h, g.in_w];
        let shape_out = [g.channels, g.out_h, g.out_w];
        let image = g.channels * g.out_h * g.out_w;
        for_chunks(out, image, threads, |b, ys| {
            let mut taps = Vec::new();
            for c in 0..g.channels {
                for oy in 0..g.out_h {
                    for ox in 0..g.out_w {
                        taps.clear();
                        let mut padded = 0usize;
                        for ky in 0..g.kernel[0] {
                            let pos_y = oy * g.strides[0] + ky * g.dilation[0];
                            let in_pad_y = pos_y < g.in_h + g.pad[0] + g.pad[2];
                            let iy = tap(oy, ky, g.strides[0], g.dilation[0], g.pad[0], g.in_h);
                            for kx in 0..g.kernel[1] {
                                let pos_x = ox * g.strides[1] + kx * g.dilation[1];
                                if in_pad_y && pos_x < g.in_w + g.pad[1] + g.pad[3] {
                                    padded += 1;
                                }
                                let ix = tap(ox, kx, g.strides[1], g.dilation[1], g.pad[1], g.in_w);
                                if let (Some(iy), Some(ix)) = (iy, ix) {
                                    taps.push(x[at(g.channels_last, shape_in, b, c, iy, ix)]);
                                }
                            }
                        }
                        let y = &mut ys[at(g.channels_last, shape_out, 0, c, oy, ox)];
                        *y = match reduce {
                            Reduce::Max(max, lowest) => {
                                taps.iter().fold(lowest, |m, &v| max.call(m, v))
                            }
                            Reduce::Mean {
                                sum,
                                div,
                                count_to_custom,
                                count_include_pad,
                            } => {
                                let count = if count_include_pad {
                                    padded
                                } else {
                                    taps.len()
                                };
                                div.call(
                                    sum.terms(&taps),
                                    count_to_custom.from_native(count as f64),
                                )
                            }
                        };
                    }
                }
            }
        });
    }))
}
