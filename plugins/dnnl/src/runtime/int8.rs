//! Quantized graphs (the realized int8 form, docs/quantization.md) on oneDNN's int8
//! primitives, bit-exact with the host's integer kernels.
//!
//! - **Convolution / inner product** (`dnnl.qconv2d…`, `dnnl.qdense…`): oneDNN computes the
//!   int32 accumulator of int8 data and weights (VNNI, AMX-INT8 where present) with no
//!   scales, bias or post-ops. Its kernels pass the accumulator through float32 on the way to
//!   an int32 destination, which is exact while `|acc| <= 2^24`. The weights are constants,
//!   so the bound is known per output channel: `|acc| <= 128 · Σ|w|`. A channel beyond it
//!   splits the weight into `w = 16 · hi + lo` (`hi`, `lo` in `[-8, 8]`): two convolutions,
//!   each within the bound for up to [`MAX_SPLIT_REDUCTION`] products, recombined in int32
//!   by the epilogue. A weight that is not a constant is taken only when even its worst case
//!   (`128 · 128` per product) is within the bound.
//! - **Epilogue**: bias, left shift, residual, relu and requantization (`add` of the round
//!   constant, `right_shift`, `clip`, `cast` to int8). oneDNN's post-ops compute in
//!   float32, whose sums lose exactness above 2^24 and whose conversion rounds to nearest
//!   where the shift floors; [`fuse`] rewrites the requantization so that rounding to
//!   nearest gives the floor, and proves by interval arithmetic, node by node, that every
//!   intermediate stays where float32 is exact. Where it does, the epilogue runs as the
//!   primitive's bias and post-ops (one step, an int8 result written once); elsewhere (and
//!   with `dnnl.int8_epilogue=pass`) as one integer pass of the runtime's own over the int32
//!   accumulator ([`Epilogue`]), with the host's semantics (wrapping adds, the shift's
//!   rules, C casts), on the OpenMP team oneDNN uses.
//! - **Quantize** (`dnnl.quantize`: `cast(clip(round(x)))` of float32 data) and
//!   **requantize** (`dnnl.requantize` of an int32 value) are integer passes too; `cast` of
//!   int8/int32 to float32 is a oneDNN reorder (exact, ties to even beyond 2^24 as the
//!   host's).
//!
//! Integer activations are laid out channels-last (`NHWC`, oneDNN's int8 layout) for 4-D
//! tensors and row-major otherwise, so the channel is the innermost index of every row.

use std::ffi::c_void;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use byoc_sdk::ir::DType;
use byoc_sdk::ir::{Tensor, TensorType};

use super::ops::{conv_geometry, ConvGeometry, NodeCx};
use super::plan::{Builder, ValueId};
use super::{dims_of, OpError};
use crate::composite::{IntComposite, IntFused, IntRoot};
use crate::dnnl::{
    effective_cpu_isa, ffi, inexact_int8_isa, Attr, DataType, MemoryDesc, OpDesc, PostOp,
    PrimitiveDesc, Query,
};

mod fuse;

pub(crate) use fuse::IntRange;

/// The largest accumulator magnitude float32 holds exactly.
const EXACT: i64 = 1 << 24;

/// The most products per output a convolution or inner product may sum with a split weight
/// (`128 · 8` per product): `2^24 / 1024`.
pub const MAX_SPLIT_REDUCTION: i64 = EXACT / (128 * 8);

/// The bounds of the realized form's requantization and quantization clip (the patterns
/// match only these).
pub const CLIP: (i32, i32) = (-127, 127);

/// Requantization of an int32 value to int8: `cast(clip(right_shift(add(x, round), shift)))`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Requant {
    round: i32,
    /// `None`: a negative amount, which leaves the value unchanged (the host's rule).
    shift: Option<u32>,
}

impl Requant {
    #[inline(always)]
    fn apply(self, v: i32) -> i8 {
        let v = v.wrapping_add(self.round);
        let v = match self.shift {
            Some(k) => v >> k,
            None => v,
        };
        v.clamp(CLIP.0, CLIP.1) as i8
    }
}

/// One operand added to the accumulator.
#[derive(Clone, Debug)]
pub(crate) enum Addend {
    /// One constant per channel (the bias).
    PerChannel(Vec<i32>),
    /// A tensor of the result's shape and layout (a residual), read from the step's values.
    Full,
}

/// One step of an [`Epilogue`] on the int32 value, in the realized form's order.
#[derive(Clone, Debug)]
pub(crate) enum Stage {
    /// Wrapping `add`.
    Add(Addend),
    /// `left_shift` by a constant: the host's rule (`None`: an amount of 32 or more, giving
    /// 0; a negative amount is no stage at all).
    LeftShift(Option<u32>),
    /// `nn.relu`.
    Relu,
}

/// The integer epilogue of an int8 convolution or inner product, or a standalone
/// requantization. Values: the accumulator (two, `hi` and `lo`, for a split weight), one per
/// [`Addend::Full`], then the result.
#[derive(Debug)]
pub(crate) struct Epilogue {
    rows: usize,
    /// Elements per row (the channels).
    row: usize,
    split: bool,
    stages: Vec<Stage>,
    requant: Option<Requant>,
}

/// An integer pass of the runtime's own.
#[derive(Debug)]
pub(crate) enum IntPass {
    /// float32 → int8: round half to even, clip to [`CLIP`], cast (NaN → 0, as the host).
    /// Values: the data, the result.
    Quantize { len: usize },
    /// See [`Epilogue`].
    Epilogue(Epilogue),
}

impl IntPass {
    /// Runs the pass over the values' buffers (`ptrs` in the pass's value order), on the
    /// calling thread's OpenMP team. `false` if a worker panicked.
    ///
    /// # Safety
    /// Each pointer addresses a buffer of the size and element type the pass was built for
    /// (the plan's values), the result not overlapping the others.
    pub unsafe fn run(&self, ptrs: &[*mut u8]) -> bool {
        let (units, min_units) = match self {
            IntPass::Quantize { len } => (*len, 1 << 14),
            IntPass::Epilogue(e) => (e.rows, (1 << 14) / e.row.max(1)),
        };
        let shared = Buffers(ptrs);
        let work = |t: usize, n: usize| {
            let (s, e) = (units * t / n, units * (t + 1) / n);
            let ptrs = shared.get();
            // SAFETY: the caller's contract; [s, e) lies within the pass's units, and the
            // threads write disjoint ranges of the result.
            unsafe {
                match self {
                    IntPass::Quantize { .. } => quantize_range(ptrs, s, e),
                    IntPass::Epilogue(ep) => ep.run_rows(ptrs, s, e),
                }
            }
        };
        if units < min_units.max(2) {
            return catch_unwind(AssertUnwindSafe(|| work(0, 1))).is_ok();
        }
        parallel(&work)
    }
}

/// The buffers of a pass, shared by the threads of its parallel region.
struct Buffers<'a>(&'a [*mut u8]);

// SAFETY: the threads of a pass read its inputs and write disjoint parts of its result.
unsafe impl Sync for Buffers<'_> {}

impl Buffers<'_> {
    fn get(&self) -> &[*mut u8] {
        self.0
    }
}

/// `round_ties_even`, clip and cast of `[s, e)`, as the host's f32 kernels do it.
unsafe fn quantize_range(ptrs: &[*mut u8], s: usize, e: usize) {
    // SAFETY: the caller's contract (`IntPass::run`).
    unsafe { quantize_range_unchecked(ptrs, s, e) }
}

#[allow(
    unsafe_op_in_unsafe_fn,
    reason = "pointer arithmetic within IntPass::run's contract"
)]
unsafe fn quantize_range_unchecked(ptrs: &[*mut u8], s: usize, e: usize) {
    let (src, dst) = (ptrs[0] as *const f32, ptrs[1] as *mut i8);
    let (lo, hi) = (CLIP.0 as f32, CLIP.1 as f32);
    for i in s..e {
        let x = src.add(i).read_unaligned().round_ties_even();
        let x = if x < lo {
            lo
        } else if x > hi {
            hi
        } else {
            x
        };
        dst.add(i).write_unaligned(f64::from(x) as i8);
    }
}

impl Epilogue {
    /// Rows `[s, e)` (see [`IntPass::run`] for the contract).
    #[allow(
        unsafe_op_in_unsafe_fn,
        reason = "pointer arithmetic within IntPass::run's contract"
    )]
    unsafe fn run_rows(&self, ptrs: &[*mut u8], s: usize, e: usize) {
        let n = self.row;
        let mut acc = vec![0i32; n];
        let first_addend = if self.split { 2 } else { 1 };
        let out = ptrs[ptrs.len() - 1];
        for r in s..e {
            let o = r * n;
            let a0 = (ptrs[0] as *const i32).add(o);
            if self.split {
                let a1 = (ptrs[1] as *const i32).add(o);
                for (c, v) in acc.iter_mut().enumerate() {
                    *v = a0
                        .add(c)
                        .read_unaligned()
                        .wrapping_mul(16)
                        .wrapping_add(a1.add(c).read_unaligned());
                }
            } else {
                for (c, v) in acc.iter_mut().enumerate() {
                    *v = a0.add(c).read_unaligned();
                }
            }
            let mut full = first_addend;
            for stage in &self.stages {
                match stage {
                    Stage::Add(Addend::PerChannel(bias)) => {
                        for (v, b) in acc.iter_mut().zip(bias) {
                            *v = v.wrapping_add(*b);
                        }
                    }
                    Stage::Add(Addend::Full) => {
                        let p = (ptrs[full] as *const i32).add(o);
                        full += 1;
                        for (c, v) in acc.iter_mut().enumerate() {
                            *v = v.wrapping_add(p.add(c).read_unaligned());
                        }
                    }
                    Stage::LeftShift(Some(k)) => {
                        for v in acc.iter_mut() {
                            *v <<= k;
                        }
                    }
                    Stage::LeftShift(None) => acc.fill(0),
                    Stage::Relu => {
                        for v in acc.iter_mut() {
                            *v = (*v).max(0);
                        }
                    }
                }
            }
            match self.requant {
                Some(q) => {
                    let d = (out as *mut i8).add(o);
                    for (c, &v) in acc.iter().enumerate() {
                        d.add(c).write_unaligned(q.apply(v));
                    }
                }
                None => {
                    let d = (out as *mut i32).add(o);
                    for (c, &v) in acc.iter().enumerate() {
                        d.add(c).write_unaligned(v);
                    }
                }
            }
        }
    }
}

/// A parallel region's work and whether a worker panicked.
struct Job<'a> {
    work: &'a (dyn Fn(usize, usize) + Sync),
    panicked: AtomicBool,
}

unsafe extern "C" fn job_trampoline(data: *mut c_void) {
    // SAFETY: `data` is the `Job` that `parallel` keeps alive across the region.
    let job = unsafe { &*(data as *const Job<'_>) };
    // SAFETY: plain queries of the OpenMP runtime inside a parallel region.
    let (t, n) = unsafe { (ffi::omp_get_thread_num(), ffi::omp_get_num_threads()) };
    let (t, n) = (t.max(0) as usize, n.max(1) as usize);
    if catch_unwind(AssertUnwindSafe(|| (job.work)(t.min(n - 1), n))).is_err() {
        job.panicked.store(true, Ordering::Relaxed);
    }
}

/// Runs `work(thread, threads)` on every thread of the calling thread's OpenMP team (the
/// team oneDNN's primitives use, warm between steps). `false` if a worker panicked.
fn parallel(work: &(dyn Fn(usize, usize) + Sync)) -> bool {
    let job = Job {
        work,
        panicked: AtomicBool::new(false),
    };
    // SAFETY: the trampoline only reads `job`, which outlives the region (GOMP_parallel
    // returns after every thread finished); panics are caught before they reach C.
    unsafe {
        ffi::GOMP_parallel(
            job_trampoline,
            (&job as *const Job<'_>).cast_mut().cast::<c_void>(),
            0,
            0,
        )
    };
    !job.panicked.load(Ordering::Relaxed)
}

/// The oneDNN element type of a tensor the runtime holds.
pub(crate) fn data_type(ty: &TensorType) -> Result<DataType, OpError> {
    match ty.dtype {
        DType::Float32 => Ok(DataType::F32),
        DType::Int32 => Ok(DataType::S32),
        DType::Int8 => Ok(DataType::S8),
        other => Err(OpError::msg(format!(
            "dtype {other} is not supported (the dnnl runtime runs float32, and int8/int32 in \
             quantized graphs)"
        ))),
    }
}

/// The layout of integer activations: channels-last for 4-D tensors, row-major otherwise.
pub(crate) fn int_layout(dims: &[i64], dt: DataType) -> Result<MemoryDesc, OpError> {
    if let &[_, c, h, w] = dims {
        let strides = [c * h * w, 1, w * c, c];
        Ok(MemoryDesc::strided_of(dims, &strides, dt)?)
    } else {
        Ok(MemoryDesc::plain_of(dims, dt)?)
    }
}

/// The length of a row of [`int_layout`] (the innermost index: channels of 4-D tensors).
fn row_len(dims: &[i64]) -> usize {
    let d = if dims.len() == 4 {
        dims[1]
    } else {
        *dims.last().unwrap_or(&1)
    };
    d.max(1) as usize
}

fn num_elements(dims: &[i64]) -> usize {
    dims.iter().map(|&d| d.max(0) as usize).product()
}

fn require_dtype(cx: &NodeCx<'_>, input: usize, want: DType) -> Result<(), OpError> {
    let ty = cx.in_types[input];
    if ty.dtype == want {
        Ok(())
    } else {
        Err(OpError::msg(format!("input {input} is {ty}, not {want}")))
    }
}

/// A constant int32 scalar input (a shift amount or round constant).
fn scalar(b: &Builder<'_>, cx: &NodeCx<'_>, input: usize, what: &str) -> Result<i32, OpError> {
    let not = || {
        OpError::msg(format!(
            "the {what} (input {input}, {}) must be a constant int32 scalar",
            cx.in_types[input]
        ))
    };
    let t = b.graph_constant(cx.args[input]).ok_or_else(not)?;
    match t.as_slice::<i32>() {
        Ok([v]) => Ok(*v),
        _ => Err(not()),
    }
}

/// The requantization whose round constant and shift amount are inputs `at` and `at + 1`.
fn requant_at(b: &Builder<'_>, cx: &NodeCx<'_>, at: usize) -> Result<Requant, OpError> {
    let round = scalar(b, cx, at, "round constant")?;
    let shift = scalar(b, cx, at + 1, "shift amount")?;
    Ok(Requant {
        round,
        shift: u32::try_from(shift).ok().map(|k| k.min(31)),
    })
}

/// Builds an int8 composite or `cast`; returns the result's value.
pub(crate) fn build(
    b: &mut Builder<'_>,
    cx: &NodeCx<'_>,
    kind: Option<IntComposite>,
) -> Result<ValueId, OpError> {
    for ty in cx.in_types.iter().copied().chain(cx.out_types) {
        data_type(ty)?;
    }
    match kind {
        Some(IntComposite::Quantize) => quantize(b, cx),
        Some(IntComposite::Requantize) => requantize(b, cx),
        Some(IntComposite::Compute(q)) => compute(b, cx, &q),
        None => cast(b, cx),
    }
}

/// `cast` of int8 or int32 to float32: a oneDNN reorder into the integer layout.
fn cast(b: &mut Builder<'_>, cx: &NodeCx<'_>) -> Result<ValueId, OpError> {
    cx.expect_inputs(1)?;
    let (from, to) = (cx.in_types[0].dtype, cx.out_types[0].dtype);
    if !matches!(from, DType::Int8 | DType::Int32) || to != DType::Float32 {
        return Err(OpError::msg(format!(
            "cast from {from} to {to} is not supported (int8 or int32 to float32 only)"
        )));
    }
    let y = cx.out_dims(0)?;
    let dst = int_layout(&y, DataType::F32)?;
    b.reorder(cx.args[0], dst)
}

/// `dnnl.quantize`: float32 data → int8 (`cast(clip(round(x)))`).
fn quantize(b: &mut Builder<'_>, cx: &NodeCx<'_>) -> Result<ValueId, OpError> {
    cx.expect_inputs(1)?;
    require_dtype(cx, 0, DType::Float32)?;
    let y = cx.out_dims(0)?;
    if cx.out_types[0].dtype != DType::Int8 || cx.in_dims(0) != y {
        return Err(OpError::msg(format!(
            "quantize of {} to {} is not float32 to int8 of the same shape",
            cx.in_types[0], cx.out_types[0]
        )));
    }
    let src = b.in_layout(cx.args[0], int_layout(&y, DataType::F32)?)?;
    let dst = b.temp(int_layout(&y, DataType::S8)?);
    let pass = IntPass::Quantize {
        len: num_elements(&y),
    };
    b.int_step(pass, &[src, dst], format!("quantize {}", cx.name));
    b.set_int_range(dst, IntRange::CLIPPED);
    Ok(dst)
}

/// `dnnl.requantize`: int32 → int8 by round, shift, clip, cast.
fn requantize(b: &mut Builder<'_>, cx: &NodeCx<'_>) -> Result<ValueId, OpError> {
    cx.expect_inputs(3)?;
    require_dtype(cx, 0, DType::Int32)?;
    let y = cx.out_dims(0)?;
    if cx.out_types[0].dtype != DType::Int8 || cx.in_dims(0) != y {
        return Err(OpError::msg(format!(
            "requantize of {} to {} is not int32 to int8 of the same shape",
            cx.in_types[0], cx.out_types[0]
        )));
    }
    let requant = requant_at(b, cx, 1)?;
    let src = b.in_layout(cx.args[0], int_layout(&y, DataType::S32)?)?;
    let dst = b.temp(int_layout(&y, DataType::S8)?);
    let row = row_len(&y);
    let pass = IntPass::Epilogue(Epilogue {
        rows: num_elements(&y) / row,
        row,
        split: false,
        stages: Vec::new(),
        requant: Some(requant),
    });
    b.int_step(pass, &[src, dst], format!("requantize {}", cx.name));
    let x = b.int_range(cx.args[0]).unwrap_or(IntRange::I32);
    b.set_int_range(dst, fuse::prove(&[x], &[], &[], Some(requant)).result);
    Ok(dst)
}

/// The weight of an int8 compute op as oneDNN operands: one, or `hi` and `lo` of a split
/// (see the module doc). `rows` output channels of `k` products each.
fn weight_parts(
    b: &mut Builder<'_>,
    cx: &NodeCx<'_>,
    rows: usize,
    k: i64,
) -> Result<Vec<ValueId>, OpError> {
    let w = cx.args[1];
    let Some(t) = b.graph_constant(w) else {
        if 128 * 128 * k <= EXACT {
            return Ok(vec![w]);
        }
        return Err(OpError::msg(format!(
            "weight {} is not a constant and its {k} products per output may exceed 2^24, \
             where oneDNN's int8 accumulator stops being exact (at most {} for a weight that \
             is not a constant)",
            cx.in_types[1],
            EXACT / (128 * 128)
        )));
    };
    let values = t
        .as_slice::<i8>()
        .map_err(|e| OpError::msg(format!("weight {}: {e}", cx.in_types[1])))?;
    let len = values.len() / rows.max(1);
    let bound = |f: &dyn Fn(i8) -> i64| {
        values
            .chunks(len.max(1))
            .map(|row| row.iter().map(|&v| f(v).abs()).sum::<i64>() * 128)
            .max()
            .unwrap_or(0)
    };
    if bound(&|v| i64::from(v)) <= EXACT {
        return Ok(vec![w]);
    }
    let hi: Vec<i8> = values.iter().map(|&v| split_hi(v)).collect();
    let lo: Vec<i8> = values
        .iter()
        .map(|&v| (i32::from(v) - 16 * i32::from(split_hi(v))) as i8)
        .collect();
    if bound(&|v| i64::from(split_hi(v))) > EXACT
        || bound(&|v| i64::from(v) - 16 * i64::from(split_hi(v))) > EXACT
    {
        return Err(OpError::msg(format!(
            "weight {}: {k} products per output exceed what oneDNN's int8 accumulator sums \
             exactly even with a split weight (at most {MAX_SPLIT_REDUCTION})",
            cx.in_types[1]
        )));
    }
    let desc = b.desc(w);
    let shape = t.shape().to_vec();
    let mut parts = Vec::with_capacity(2);
    for part in [hi, lo] {
        let tensor = Tensor::from_vec(shape.clone(), part)
            .map_err(|e| OpError::msg(format!("weight {}: {e}", cx.in_types[1])))?;
        parts.push(b.constant(Arc::new(tensor), desc));
    }
    Ok(parts)
}

/// `round(v / 16)` (ties away from zero), so that `v - 16 · hi` lies in `[-8, 8]`.
fn split_hi(v: i8) -> i8 {
    let v = i32::from(v);
    ((v + 8 * v.signum()) / 16) as i8
}

/// The primitive of an int8 compute node.
enum Root {
    Conv(ConvGeometry),
    Dense { x: Vec<i64>, w: Vec<i64> },
}

impl Root {
    fn of(cx: &NodeCx<'_>, root: IntRoot, y: &[i64]) -> Result<Self, OpError> {
        match root {
            IntRoot::Conv2d => Ok(Root::Conv(conv_geometry(cx, false)?)),
            IntRoot::Dense => {
                let (x, w) = (cx.in_dims(0), cx.in_dims(1));
                let [m, k] = x[..] else {
                    return Err(OpError::msg(format!(
                        "data {} is not 2-D (an int8 dense takes rank-2 data)",
                        cx.in_types[0]
                    )));
                };
                if w.len() != 2 || w[1] != k || y != [m, w[0]] {
                    return Err(OpError::msg(format!(
                        "shapes do not match: data {}, weight {}, result {}",
                        cx.in_types[0], cx.in_types[1], cx.out_types[0]
                    )));
                }
                Ok(Root::Dense { x, w })
            }
        }
    }

    /// The op descriptor with this bias (zero: none) and destination.
    fn op(&self, bias: &MemoryDesc, dst: &MemoryDesc) -> Result<OpDesc, OpError> {
        Ok(match self {
            Root::Conv(g) => OpDesc::convolution(
                false,
                &int_layout(&g.x, DataType::S8)?,
                &MemoryDesc::any_of(&g.wdims, DataType::S8)?,
                bias,
                dst,
                &g.window(),
            )?,
            Root::Dense { x, w } => OpDesc::inner_product(
                &MemoryDesc::plain_of(x, DataType::S8)?,
                &MemoryDesc::any_of(w, DataType::S8)?,
                bias,
                dst,
            )?,
        })
    }

    /// Output channels and the products summed per output.
    fn rows_and_reduction(&self) -> (i64, i64) {
        match self {
            Root::Conv(g) => (g.oc, g.icg * g.kh * g.kw),
            Root::Dense { w, .. } => (w[0], w[1]),
        }
    }

    /// The weight's row-major descriptor as the node holds it.
    fn weight_desc(&self) -> Result<MemoryDesc, OpError> {
        Ok(match self {
            Root::Conv(g) => MemoryDesc::strided_of(&g.wdims, &g.wstrides, DataType::S8)?,
            Root::Dense { w, .. } => MemoryDesc::plain_of(w, DataType::S8)?,
        })
    }

    fn kind(&self) -> &'static str {
        match self {
            Root::Conv(_) => "convolution",
            Root::Dense { .. } => "inner_product",
        }
    }
}

/// The epilogue stages of an int8 compute node, read from its inputs after data and weight.
struct Parsed {
    stages: Vec<Stage>,
    /// One per [`Addend::Full`] stage: the operand in the integer layout and its range.
    residuals: Vec<(ValueId, IntRange)>,
    requant: Option<Requant>,
}

fn parse_epilogue(
    b: &mut Builder<'_>,
    cx: &NodeCx<'_>,
    q: &IntFused,
    y: &[i64],
) -> Result<Parsed, OpError> {
    let mut stages = Vec::new();
    let mut residuals = Vec::new();
    let mut at = 2;
    if q.bias {
        stages.push(addend(b, cx, at, y, &mut residuals)?);
        at += 1;
    }
    if q.lshift {
        let k = scalar(b, cx, at, "left shift amount")?;
        // The host's rule: negative amounts leave the value, 32 or more give 0.
        if let Ok(k) = u32::try_from(k) {
            stages.push(Stage::LeftShift((k < 32).then_some(k)));
        }
        at += 1;
    }
    if q.sum {
        stages.push(addend(b, cx, at, y, &mut residuals)?);
        at += 1;
    }
    if q.relu {
        stages.push(Stage::Relu);
    }
    let requant = if q.requant {
        Some(requant_at(b, cx, at)?)
    } else {
        None
    };
    Ok(Parsed {
        stages,
        residuals,
        requant,
    })
}

/// The range of each output channel's accumulator for data in `x`: from the weights when
/// they are a constant, else from the worst case of any int8 weight.
fn accumulator_ranges(
    b: &Builder<'_>,
    cx: &NodeCx<'_>,
    rows: usize,
    k: i64,
    x: IntRange,
) -> Vec<IntRange> {
    let weights = b
        .graph_constant(cx.args[1])
        .and_then(|t| t.as_slice::<i8>().ok());
    match weights {
        Some(values) if rows > 0 => values
            .chunks(values.len().div_ceil(rows).max(1))
            .map(|row| x.dot(row))
            .collect(),
        _ => {
            let m = k
                .saturating_mul(128)
                .saturating_mul(x.lo.abs().max(x.hi.abs()));
            vec![IntRange { lo: -m, hi: m }; rows.max(1)]
        }
    }
}

/// An int8 convolution or inner product with its fused epilogue: as oneDNN post-ops where
/// [`fuse::prove`] shows them exact (and the build enables them), else the primitive into
/// an int32 accumulator followed by the runtime's integer pass.
fn compute(b: &mut Builder<'_>, cx: &NodeCx<'_>, q: &IntFused) -> Result<ValueId, OpError> {
    if let Some(isa) = inexact_int8_isa(effective_cpu_isa()) {
        return Err(OpError::msg(format!(
            "exact int8 convolutions and inner products need VNNI (avx512_core_vnni or \
             avx2_vnni), and oneDNN finds {isa} on this CPU, where it halves the weights to \
             keep 16-bit sums from saturating; partition the model here (int8 layers then \
             stay on the host) instead of loading one built on a VNNI machine"
        )));
    }
    cx.expect_inputs(q.num_inputs())?;
    require_dtype(cx, 0, DType::Int8)?;
    require_dtype(cx, 1, DType::Int8)?;
    let want = if q.requant { DType::Int8 } else { DType::Int32 };
    if cx.out_types[0].dtype != want {
        return Err(OpError::msg(format!(
            "the result is {}, not {want}",
            cx.out_types[0]
        )));
    }
    let y = cx.out_dims(0)?;
    let root = Root::of(cx, q.root, &y)?;
    let epilogue = parse_epilogue(b, cx, q, &y)?;
    let (rows, k) = root.rows_and_reduction();
    let rows = rows.max(1) as usize;
    let x = b.int_range(cx.args[0]).unwrap_or(IntRange::I8);
    let acc = accumulator_ranges(b, cx, rows, k, x);
    let residual_ranges: Vec<IntRange> = epilogue.residuals.iter().map(|r| r.1).collect();
    let proof = fuse::prove(&acc, &epilogue.stages, &residual_ranges, epilogue.requant);
    let fused = if b.int8_post_ops && proof.exact {
        with_post_ops(b, cx, &root, &epilogue, &y)?
    } else {
        None
    };
    let out = match fused {
        Some(out) => out,
        None => with_pass(b, cx, &root, epilogue, &y, rows, k)?,
    };
    b.set_int_range(out, proof.result);
    Ok(out)
}

/// The node as one primitive with its epilogue as post-ops; `None` where oneDNN has no
/// optimized implementation of that (it refuses, or offers only its reference kernel).
fn with_post_ops(
    b: &mut Builder<'_>,
    cx: &NodeCx<'_>,
    root: &Root,
    epilogue: &Parsed,
    y: &[i64],
) -> Result<Option<ValueId>, OpError> {
    let Some(fused) = fuse::post_ops(&epilogue.stages, epilogue.requant, y)? else {
        return Ok(None);
    };
    let out_type = if epilogue.requant.is_some() {
        DataType::S8
    } else {
        DataType::S32
    };
    let dst = int_layout(y, out_type)?;
    let bias_desc = match &fused.bias {
        Some(bias) => MemoryDesc::plain_of(&[bias.len() as i64], DataType::S32)?,
        None => MemoryDesc::zero(),
    };
    let op = root.op(&bias_desc, &dst)?;
    let mut attr = Attr::new(&fused.post_ops)?;
    if let Some(scale) = fused.scale {
        attr = attr.with_output_scale(scale)?;
    }
    let Ok(pd) = PrimitiveDesc::new(b.engine, &op, &attr) else {
        return Ok(None);
    };
    if pd.impl_name().starts_with("ref") {
        return Ok(None);
    }
    let src = b.in_layout(cx.args[0], pd.query(Query::Src(0)))?;
    let w = b.view(cx.args[1], root.weight_desc()?)?;
    let w = b.in_layout(w, pd.query(Query::Weights(0)))?;
    let out = b.temp(dst);
    let mut args = vec![
        (ffi::DNNL_ARG_SRC, src),
        (ffi::DNNL_ARG_WEIGHTS, w),
        (ffi::DNNL_ARG_DST, out),
    ];
    if let Some(bias) = fused.bias {
        let tensor = Tensor::from_vec(vec![bias.len()], bias)
            .map_err(|e| OpError::msg(format!("bias {}: {e}", cx.in_types[2])))?;
        args.push((ffi::DNNL_ARG_BIAS, b.constant(Arc::new(tensor), bias_desc)));
    }
    let binaries = fused
        .post_ops
        .iter()
        .enumerate()
        .filter(|(_, op)| matches!(op, PostOp::Binary { .. }));
    for ((index, _), &(residual, _)) in binaries.zip(&epilogue.residuals) {
        args.push((PostOp::binary_arg(index), residual));
    }
    b.step(
        &pd,
        args,
        format!("{} {} with its epilogue as post-ops", root.kind(), cx.name),
    )?;
    Ok(Some(out))
}

/// The node as the primitive into an int32 accumulator (two for a split weight) and the
/// runtime's integer pass.
fn with_pass(
    b: &mut Builder<'_>,
    cx: &NodeCx<'_>,
    root: &Root,
    epilogue: Parsed,
    y: &[i64],
    rows: usize,
    k: i64,
) -> Result<ValueId, OpError> {
    let acc_desc = int_layout(y, DataType::S32)?;
    let op = root.op(&MemoryDesc::zero(), &acc_desc)?;
    let pd = PrimitiveDesc::new(b.engine, &op, &Attr::new(&[])?)?;
    let src = b.in_layout(cx.args[0], pd.query(Query::Src(0)))?;
    let parts = weight_parts(b, cx, rows, k)?;
    let split = parts.len() == 2;
    let wdesc = root.weight_desc()?;
    let mut values = Vec::with_capacity(5);
    for (i, &part) in parts.iter().enumerate() {
        let wv = b.view(part, wdesc)?;
        let wv = b.in_layout(wv, pd.query(Query::Weights(0)))?;
        let acc = b.temp(acc_desc);
        let which = match (split, i) {
            (false, _) => "",
            (true, 0) => " (weight high part)",
            (true, _) => " (weight low part)",
        };
        b.step(
            &pd,
            vec![
                (ffi::DNNL_ARG_SRC, src),
                (ffi::DNNL_ARG_WEIGHTS, wv),
                (ffi::DNNL_ARG_DST, acc),
            ],
            format!("{} {}{which}", root.kind(), cx.name),
        )?;
        values.push(acc);
    }
    values.extend(epilogue.residuals.iter().map(|r| r.0));
    let out_type = if epilogue.requant.is_some() {
        DataType::S8
    } else {
        DataType::S32
    };
    let out = b.temp(int_layout(y, out_type)?);
    values.push(out);
    let row = row_len(y);
    let pass = IntPass::Epilogue(Epilogue {
        rows: num_elements(y) / row,
        row,
        split,
        stages: epilogue.stages,
        requant: epilogue.requant,
    });
    b.int_step(pass, &values, format!("epilogue {}", cx.name));
    Ok(out)
}

/// The stage adding the int32 operand of input `i`: one constant per channel (axis 1: a
/// `(C, 1, 1)` or `(C)` bias), or a tensor of the result's shape, put in the integer layout
/// and pushed onto `residuals` with its proven range.
fn addend(
    b: &mut Builder<'_>,
    cx: &NodeCx<'_>,
    i: usize,
    y: &[i64],
    residuals: &mut Vec<(ValueId, IntRange)>,
) -> Result<Stage, OpError> {
    require_dtype(cx, i, DType::Int32)?;
    let dims = dims_of(cx.in_types[i]);
    let mut padded = vec![1; y.len().saturating_sub(dims.len())];
    padded.extend(&dims);
    if padded == y {
        let range = b
            .int_range(cx.args[i])
            .or_else(|| {
                let t = b.graph_constant(cx.args[i])?;
                let values = t.as_slice::<i32>().ok()?;
                Some(IntRange::of(values.iter().map(|&v| i64::from(v))))
            })
            .unwrap_or(IntRange::I32);
        let v = if b.desc(cx.args[i]).dims() == y {
            cx.args[i]
        } else {
            b.view(cx.args[i], MemoryDesc::plain_of(y, DataType::S32)?)?
        };
        residuals.push((b.in_layout(v, int_layout(y, DataType::S32)?)?, range));
        return Ok(Stage::Add(Addend::Full));
    }
    let channels = y.get(1).copied().unwrap_or(1);
    let per_channel = padded.len() == y.len()
        && padded
            .iter()
            .enumerate()
            .all(|(a, &d)| d == if a == 1 { channels } else { 1 });
    if !per_channel {
        return Err(OpError::msg(format!(
            "operand {} is neither one value per channel nor of the result's shape {}",
            cx.in_types[i], cx.out_types[0]
        )));
    }
    let values = b
        .graph_constant(cx.args[i])
        .and_then(|t| t.as_slice::<i32>().ok())
        .ok_or_else(|| {
            OpError::msg(format!(
                "the per-channel operand {} must be a constant",
                cx.in_types[i]
            ))
        })?;
    Ok(Stage::Add(Addend::PerChannel(values.to_vec())))
}
