//! `nn.conv2d` and `nn.conv2d_transpose`: type relations (Relay's Conv2DRel and
//! Conv2DTransposeRel on static shapes) and GEMM-backed host kernels.
//!
//! conv2d takes NCHW or NHWC data and any kernel layout spelled with O, I, H, W (OIHW, HWIO,
//! OHWI, ...); conv2d_transpose takes NCHW data and an IOHW-style weight `[in, out/groups, kh,
//! kw]`. int8/uint8 operands with `out_dtype="int32"` accumulate exactly in int32.

use super::nn_common::{
    check_operand_dtypes, data_nchw, layout_positions, out_dtype, padding2d, pair, strides,
    Layout2d, WindowAxis,
};
use crate::op::{Arity, AttrDef, AttrKind, OpDef, OpImpl, OpPattern, TypeCtx, TypeError};
use crate::{AttrValue, DType, TensorType, Type};

/// Everything a convolution kernel needs, derived from argument types and attributes.
pub struct ConvSetup {
    /// The convolution's geometry.
    pub geom: Conv2dGeom,
    /// The data layout (`data_layout`).
    pub layout: Layout2d,
    /// Logical weight extents and element strides, in the op's weight letter order (OIHW for
    /// conv2d, IOHW for conv2d_transpose).
    pub w_dims: [usize; 4],
    /// Element strides of the weight along the axes of `w_dims`.
    pub w_strides: [usize; 4],
    /// The data (argument 0) dtype.
    pub data_dtype: DType,
    /// The weight (argument 1) dtype.
    pub weight_dtype: DType,
    /// The result type.
    pub out: TensorType,
}

/// Logical extents and strides of the weight (argument 1) under layout attribute
/// `kernel_layout`, spelled with `letters`.
pub fn weight_dims(
    ctx: &TypeCtx<'_>,
    letters: &str,
) -> Result<([usize; 4], [usize; 4]), TypeError> {
    let w = ctx.tensor(1)?;
    if w.rank() != 4 {
        return Err(ctx.err(format!("weight must be 4-D ({letters}), got {w}")));
    }
    let pos = layout_positions(ctx, "kernel_layout", letters)?;
    let st = strides(&w.shape);
    Ok((pos.map(|p| w.shape[p]), pos.map(|p| st[p])))
}

/// Checks the optional `channels` and `kernel_size` attributes against the weight.
pub fn check_declared(
    ctx: &TypeCtx<'_>,
    out_c: usize,
    kernel: [usize; 2],
) -> Result<(), TypeError> {
    if let Some(c) = ctx.opt_int("channels")? {
        if usize::try_from(c) != Ok(out_c) {
            return Err(ctx.err(format!(
                "channels={c} but the weight gives {out_c} output channels"
            )));
        }
    }
    if let Some(ks) = ctx.opt_ints("kernel_size")? {
        if !ks.iter().map(|&k| usize::try_from(k)).eq(kernel.map(Ok)) {
            return Err(ctx.err(format!(
                "kernel_size={ks:?} but the weight has a {}x{} kernel",
                kernel[0], kernel[1]
            )));
        }
    }
    Ok(())
}

fn groups(ctx: &TypeCtx<'_>) -> Result<usize, TypeError> {
    let g = ctx.int("groups")?;
    crate::dims::dim(g)
        .filter(|&g| g >= 1)
        .ok_or_else(|| ctx.err(format!("groups must be at least 1, got {g}")))
}

fn conv2d_setup(ctx: &TypeCtx<'_>) -> Result<ConvSetup, TypeError> {
    let layout = Layout2d::parse(ctx, "data_layout")?;
    layout.check_out_layout(ctx, "out_layout")?;
    let [n, c, h, w] = data_nchw(ctx, 0, "data", layout)?;
    let (w_dims, w_strides) = weight_dims(ctx, "OIHW")?;
    let [o, i, kh, kw] = w_dims;
    let groups = groups(ctx)?;
    let (strides, dilation) = (pair(ctx, "strides", 1)?, pair(ctx, "dilation", 1)?);
    let pad = padding2d(ctx, "padding")?;
    if i * groups != c {
        return Err(ctx.err(format!(
            "input has {c} channels but weight expects {} (groups={groups})",
            i * groups
        )));
    }
    if o % groups != 0 {
        return Err(ctx.err(format!(
            "weight has {o} output channels, not divisible by groups={groups}"
        )));
    }
    check_declared(ctx, o, [kh, kw])?;
    let mut out_hw = [0; 2];
    for (a, (size, k, name)) in [(h, kh, "height"), (w, kw, "width")]
        .into_iter()
        .enumerate()
    {
        let axis = WindowAxis {
            what: "kernel",
            name,
            size,
            kernel: k,
            stride: strides[a],
            dilation: dilation[a],
            pad: [pad[a], pad[a + 2]],
        };
        out_hw[a] = axis.out_len(ctx, false)?;
    }
    let (data, weight) = (ctx.tensor(0)?.dtype, ctx.tensor(1)?.dtype);
    check_operand_dtypes(ctx, ("data", "weight"), data, weight)?;
    let out_dt = out_dtype(ctx, data)?;
    Ok(ConvSetup {
        geom: Conv2dGeom {
            batch: n,
            in_c: c,
            in_h: h,
            in_w: w,
            out_c: o,
            out_h: out_hw[0],
            out_w: out_hw[1],
            kernel: [kh, kw],
            strides,
            dilation,
            pad,
            groups,
            channels_last: layout.channels_last(),
        },
        layout,
        w_dims,
        w_strides,
        data_dtype: data,
        weight_dtype: weight,
        out: TensorType::new(layout.shape([n, o, out_hw[0], out_hw[1]]), out_dt),
    })
}

fn conv2d_transpose_setup(ctx: &TypeCtx<'_>) -> Result<ConvSetup, TypeError> {
    let layout = Layout2d::parse(ctx, "data_layout")?;
    if layout != Layout2d::Nchw {
        return Err(ctx.err("data_layout must be NCHW, got 'NHWC'"));
    }
    layout.check_out_layout(ctx, "out_layout")?;
    let [n, c, h, w] = data_nchw(ctx, 0, "data", layout)?;
    let (w_dims, w_strides) = weight_dims(ctx, "IOHW")?;
    let [i, o_g, kh, kw] = w_dims;
    let groups = groups(ctx)?;
    let (strides, dilation) = (pair(ctx, "strides", 1)?, pair(ctx, "dilation", 1)?);
    let output_padding = pair(ctx, "output_padding", 0)?;
    let pad = padding2d(ctx, "padding")?;
    if i != c {
        return Err(ctx.err(format!(
            "input has {c} channels but weight expects {i} (groups={groups})"
        )));
    }
    if c % groups != 0 {
        return Err(ctx.err(format!(
            "input has {c} channels, not divisible by groups={groups}"
        )));
    }
    let o = o_g * groups;
    check_declared(ctx, o, [kh, kw])?;
    let mut out_hw = [0; 2];
    for (a, (size, k, name)) in [(h, kh, "height"), (w, kw, "width")]
        .into_iter()
        .enumerate()
    {
        if output_padding[a] >= strides[a].max(dilation[a]) {
            return Err(ctx.err(format!(
                "output_padding {output_padding:?} must be smaller than strides or dilation"
            )));
        }
        // (size - 1) * stride + dilation * (k - 1) + 1 + output_padding, checked.
        let full = (size.max(1) - 1)
            .checked_mul(strides[a])
            .zip((k.max(1) - 1).checked_mul(dilation[a]))
            .and_then(|(x, y)| x.checked_add(y))
            .and_then(|v| v.checked_add(1 + output_padding[a]));
        let cut = pad[a].checked_add(pad[a + 2]);
        let (Some(full), Some(cut)) = (full, cut) else {
            return Err(ctx.err(format!(
                "output {name} overflows: input {size}, kernel {k}, strides {strides:?}, \
                 dilation {dilation:?}, padding {pad:?}"
            )));
        };
        if size == 0 || k == 0 || cut >= full {
            return Err(ctx.err(format!(
                "padding {cut} leaves no output {name} (unpadded output {name} {full})"
            )));
        }
        out_hw[a] = full - cut;
    }
    let (data, weight) = (ctx.tensor(0)?.dtype, ctx.tensor(1)?.dtype);
    check_operand_dtypes(ctx, ("data", "weight"), data, weight)?;
    let out_dt = out_dtype(ctx, data)?;
    Ok(ConvSetup {
        geom: Conv2dGeom {
            batch: n,
            in_c: c,
            in_h: h,
            in_w: w,
            out_c: o,
            out_h: out_hw[0],
            out_w: out_hw[1],
            kernel: [kh, kw],
            strides,
            dilation,
            pad,
            groups,
            channels_last: false,
        },
        layout,
        w_dims,
        w_strides,
        data_dtype: data,
        weight_dtype: weight,
        out: TensorType::new(layout.shape([n, o, out_hw[0], out_hw[1]]), out_dt),
    })
}

/// Which convolution an [`ConvOp`] is.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum ConvKind {
    /// `nn.conv2d`.
    Conv2d,
    /// `nn.conv2d_transpose`.
    Transpose,
}

/// `nn.conv2d` or `nn.conv2d_transpose` (Relay's Conv2DRel / Conv2DTransposeRel, static shapes).
pub struct ConvOp(pub ConvKind);

impl ConvOp {
    /// Checks the call's argument types and attributes and derives its [`ConvSetup`].
    pub fn setup(&self, ctx: &TypeCtx<'_>) -> Result<ConvSetup, TypeError> {
        match self.0 {
            ConvKind::Conv2d => conv2d_setup(ctx),
            ConvKind::Transpose => conv2d_transpose_setup(ctx),
        }
    }
}

impl OpImpl for ConvOp {
    fn infer_type(&self, ctx: &TypeCtx<'_>) -> Result<Type, TypeError> {
        Ok(Type::Tensor(self.setup(ctx)?.out))
    }
}

fn common_attrs() -> [AttrDef; 4] {
    [
        AttrDef::new("strides", AttrKind::Ints, AttrValue::ints([1, 1])),
        AttrDef::new("padding", AttrKind::Ints, AttrValue::ints([0, 0])),
        AttrDef::new("dilation", AttrKind::Ints, AttrValue::ints([1, 1])),
        AttrDef::new("groups", AttrKind::Int, 1i64),
    ]
}

pub(crate) fn register(ops: &mut Vec<OpDef>) {
    let [strides, padding, dilation, groups] = common_attrs();
    ops.push(
        OpDef::new(
            "nn.conv2d",
            "2-D convolution",
            Arity::Exact(2),
            OpPattern::OutEWiseFusable,
            ConvOp(ConvKind::Conv2d),
        )
        .with_attrs(vec![
            strides,
            padding,
            dilation,
            groups,
            AttrDef::optional("channels", AttrKind::OptInt),
            AttrDef::optional("kernel_size", AttrKind::OptInts),
            AttrDef::new("data_layout", AttrKind::Str, "NCHW"),
            AttrDef::new("kernel_layout", AttrKind::Str, "OIHW"),
            AttrDef::new("out_layout", AttrKind::Str, ""),
            AttrDef::new("out_dtype", AttrKind::Str, ""),
        ]),
    );
    let [strides, padding, dilation, groups] = common_attrs();
    ops.push(
        OpDef::new(
            "nn.conv2d_transpose",
            "2-D transposed convolution (gradient of conv2d with respect to its input)",
            Arity::Exact(2),
            OpPattern::OutEWiseFusable,
            ConvOp(ConvKind::Transpose),
        )
        .with_attrs(vec![
            AttrDef::optional("channels", AttrKind::OptInt),
            AttrDef::optional("kernel_size", AttrKind::OptInts),
            strides,
            AttrDef::new("output_padding", AttrKind::Ints, AttrValue::ints([0, 0])),
            padding,
            dilation,
            groups,
            AttrDef::new("data_layout", AttrKind::Str, "NCHW"),
            AttrDef::new("kernel_layout", AttrKind::Str, "IOHW"),
            AttrDef::new("out_layout", AttrKind::Str, ""),
            AttrDef::new("out_dtype", AttrKind::Str, ""),
        ]),
    );
}

/// The geometry of a 2-D (transposed) convolution in logical N, C, H, W terms. `in_*` describe
/// the data argument, `out_*` the result.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Conv2dGeom {
    /// Batch size (N).
    pub batch: usize,
    /// Input channels.
    pub in_c: usize,
    /// Input height.
    pub in_h: usize,
    /// Input width.
    pub in_w: usize,
    /// Output channels.
    pub out_c: usize,
    /// Output height.
    pub out_h: usize,
    /// Output width.
    pub out_w: usize,
    /// Kernel height and width.
    pub kernel: [usize; 2],
    /// Stride along height and width.
    pub strides: [usize; 2],
    /// Dilation along height and width.
    pub dilation: [usize; 2],
    /// Top, left, bottom, right.
    pub pad: [usize; 4],
    /// Channel groups, each mapping `in_c / groups` input to `out_c / groups` output channels.
    pub groups: usize,
    /// NHWC data (otherwise NCHW).
    pub channels_last: bool,
}

impl Conv2dGeom {
    /// True when the convolution is a plain matrix product over the input pixels.
    pub fn pointwise(&self) -> bool {
        self.kernel == [1, 1] && self.strides == [1, 1] && self.pad == [0; 4]
    }

    /// Input coordinate of output coordinate `o` and kernel tap `k` along axis `a` (0 = H, 1 = W);
    /// may lie in the padding (negative or past the end).
    #[inline(always)]
    pub fn src(&self, a: usize, o: usize, k: usize) -> isize {
        (o * self.strides[a] + k * self.dilation[a]) as isize - self.pad[a] as isize
    }
}
