//! Shared pieces of the NN op definitions: 2-D layouts, padding and stride forms, `out_dtype`,
//! axis normalization, dtype dispatch of host kernels and typed tensor access in kernels.
//!
//! Parsing helpers take a [`TypeCtx`]; a kernel builder re-runs its op's geometry function on a
//! context built from the kernel spec ([`kernel_ctx`]), so type relation and kernel can never
//! disagree about shapes.

use std::str::FromStr;

use crate::op::{TypeCtx, TypeError};
use crate::DType;

/// A 2-D image layout.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Layout2d {
    /// `NCHW`: channels before height and width.
    Nchw,
    /// `NHWC`: channels last.
    Nhwc,
}

impl Layout2d {
    /// Parses layout attribute `attr`.
    pub fn parse(ctx: &TypeCtx<'_>, attr: &str) -> Result<Self, TypeError> {
        match ctx.str(attr)? {
            "NCHW" => Ok(Layout2d::Nchw),
            "NHWC" => Ok(Layout2d::Nhwc),
            other => Err(ctx.err(format!("{attr} must be NCHW or NHWC, got '{other}'"))),
        }
    }

    /// The layout's name.
    pub fn name(self) -> &'static str {
        match self {
            Layout2d::Nchw => "NCHW",
            Layout2d::Nhwc => "NHWC",
        }
    }

    /// Positions of the N, C, H and W axes.
    pub fn axes(self) -> [usize; 4] {
        match self {
            Layout2d::Nchw => [0, 1, 2, 3],
            Layout2d::Nhwc => [0, 3, 1, 2],
        }
    }

    /// `[N, C, H, W]` of a 4-D shape in this layout.
    pub fn nchw(self, shape: &[usize]) -> [usize; 4] {
        self.axes().map(|a| shape[a])
    }

    /// The shape in this layout of logical `[N, C, H, W]`.
    pub fn shape(self, nchw: [usize; 4]) -> Vec<usize> {
        let mut s = vec![0; 4];
        for (d, a) in self.axes().into_iter().enumerate() {
            s[a] = nchw[d];
        }
        s
    }

    /// True for NHWC.
    pub fn channels_last(self) -> bool {
        self == Layout2d::Nhwc
    }

    /// Checks that `out_layout` is empty or this layout.
    pub fn check_out_layout(self, ctx: &TypeCtx<'_>, attr: &str) -> Result<(), TypeError> {
        match ctx.str(attr)? {
            "" => Ok(()),
            s if s == self.name() => Ok(()),
            s => Err(ctx.err(format!(
                "{attr} '{s}' differs from the data layout {}; layout conversion is not part of this op",
                self.name()
            ))),
        }
    }
}

/// The 4-D data argument `i` in `layout`, as logical `[N, C, H, W]`.
pub fn data_nchw(
    ctx: &TypeCtx<'_>,
    i: usize,
    what: &str,
    layout: Layout2d,
) -> Result<[usize; 4], TypeError> {
    let t = ctx.tensor(i)?;
    if t.rank() != 4 {
        return Err(ctx.err(format!("{what} must be 4-D ({}), got {t}", layout.name())));
    }
    Ok(layout.nchw(&t.shape))
}

/// Positions, in layout attribute `attr`, of each letter of `letters` (the layout must be a
/// permutation of `letters`, e.g. `HWIO` of `OIHW`).
pub fn layout_positions(
    ctx: &TypeCtx<'_>,
    attr: &str,
    letters: &str,
) -> Result<[usize; 4], TypeError> {
    let s = ctx.str(attr)?;
    let bad = || {
        ctx.err(format!(
            "{attr} must be a permutation of {letters}, got '{s}'"
        ))
    };
    if s.len() != 4 {
        return Err(bad());
    }
    let mut pos = [0; 4];
    for (d, l) in letters.chars().enumerate() {
        pos[d] = s.find(l).ok_or_else(bad)?;
    }
    Ok(pos)
}

/// Row-major element strides of `shape`.
pub fn strides(shape: &[usize]) -> Vec<usize> {
    let mut s = vec![1; shape.len()];
    for d in (0..shape.len().saturating_sub(1)).rev() {
        s[d] = s[d + 1] * shape[d + 1];
    }
    s
}

fn non_negative(ctx: &TypeCtx<'_>, attr: &str, v: &[i64]) -> Result<Vec<usize>, TypeError> {
    v.iter()
        .map(|&x| {
            usize::try_from(x)
                .map_err(|_| ctx.err(format!("{attr} must not be negative, got {v:?}")))
        })
        .collect()
}

/// A 2-D padding attribute in Relay's 1-, 2- or 4-value form, as `[top, left, bottom, right]`.
pub fn padding2d(ctx: &TypeCtx<'_>, attr: &str) -> Result<[usize; 4], TypeError> {
    let v = non_negative(ctx, attr, &ctx.ints(attr)?)?;
    match v[..] {
        [p] => Ok([p; 4]),
        [h, w] => Ok([h, w, h, w]),
        [t, l, b, r] => Ok([t, l, b, r]),
        _ => Err(ctx.err(format!(
            "{attr} must have 1, 2 or 4 values, got {}",
            v.len()
        ))),
    }
}

/// A 2-D `(h, w)` attribute given as 1 or 2 values, each at least `min`.
pub fn pair(ctx: &TypeCtx<'_>, attr: &str, min: usize) -> Result<[usize; 2], TypeError> {
    let v = non_negative(ctx, attr, &ctx.ints(attr)?)?;
    let p = match v[..] {
        [a] => [a, a],
        [a, b] => [a, b],
        _ => return Err(ctx.err(format!("{attr} must have 1 or 2 values, got {}", v.len()))),
    };
    if p.iter().any(|&x| x < min) {
        return Err(ctx.err(format!("{attr} must be at least {min}, got {p:?}")));
    }
    Ok(p)
}

/// One axis of a sliding window (convolution, pooling): input length, window taps, stride,
/// dilation and the padding before and after.
pub struct WindowAxis {
    /// What slides, for messages: "kernel", "pool window".
    pub what: &'static str,
    /// The axis, for messages: "height", "width".
    pub name: &'static str,
    pub(crate) size: usize,
    pub(crate) kernel: usize,
    pub(crate) stride: usize,
    pub(crate) dilation: usize,
    pub(crate) pad: [usize; 2],
}

impl WindowAxis {
    /// The number of window positions: `(padded - span) / stride + 1`, where `span` is the
    /// dilated window. With `ceil` the division rounds up, but a last window that would start
    /// in the end padding is dropped (it would hold only padding; onnxruntime and PyTorch drop
    /// it too). Errors when the window does not fit or the arithmetic overflows.
    pub fn out_len(&self, ctx: &TypeCtx<'_>, ceil: bool) -> Result<usize, TypeError> {
        let (what, name) = (self.what, self.name);
        let overflow = || {
            ctx.err(format!(
                "{what} {name} overflows: input {}, kernel {}, dilation {}, padding {:?}",
                self.size, self.kernel, self.dilation, self.pad
            ))
        };
        if self.kernel == 0 || self.stride == 0 {
            return Err(ctx.err(format!(
                "{what} {name} {} and stride {} must be positive",
                self.kernel, self.stride
            )));
        }
        let span = (self.kernel - 1)
            .checked_mul(self.dilation)
            .and_then(|s| s.checked_add(1))
            .ok_or_else(overflow)?;
        let padded = self
            .size
            .checked_add(self.pad[0])
            .and_then(|p| p.checked_add(self.pad[1]))
            .ok_or_else(overflow)?;
        if span > padded {
            return Err(ctx.err(format!(
                "dilated {what} {name} {span} exceeds padded input {name} {padded}"
            )));
        }
        let round_up = if ceil { self.stride - 1 } else { 0 };
        let mut out = (padded - span).checked_add(round_up).ok_or_else(overflow)? / self.stride + 1;
        if ceil && (out - 1) * self.stride >= self.size + self.pad[0] {
            out -= 1;
        }
        Ok(out)
    }
}

/// The `out_dtype` attribute, `default` when empty.
pub fn out_dtype(ctx: &TypeCtx<'_>, default: DType) -> Result<DType, TypeError> {
    match ctx.str("out_dtype")? {
        "" => Ok(default),
        s => DType::from_str(s).map_err(|e| ctx.err(format!("out_dtype: {e}"))),
    }
}

/// Checks that a GEMM-based op's operand dtypes agree: equal, or int8/uint8 mixed.
pub fn check_operand_dtypes(
    ctx: &TypeCtx<'_>,
    what: (&str, &str),
    a: DType,
    b: DType,
) -> Result<(), TypeError> {
    let quantized = |d| matches!(d, DType::Int8 | DType::UInt8);
    if a == b || (quantized(a) && quantized(b)) {
        Ok(())
    } else {
        Err(ctx.err(format!(
            "{} dtype {a} differs from {} dtype {b}",
            what.0, what.1
        )))
    }
}

/// `axis` (possibly negative) normalized for a rank-`rank` input.
pub fn norm_axis(ctx: &TypeCtx<'_>, axis: i64, rank: usize) -> Result<usize, TypeError> {
    crate::dims::axis(axis, rank).ok_or_else(|| {
        ctx.err(format!(
            "axis {axis} is out of range for a rank-{rank} input"
        ))
    })
}
