//! 2-D pooling: `nn.max_pool2d`, `nn.avg_pool2d` (Relay's Pool2DRel: 1-, 2- or 4-value
//! padding, dilation, `ceil_mode`, `count_include_pad`) and `nn.global_max_pool2d`,
//! `nn.global_avg_pool2d`, over NCHW or NHWC data. Host kernels for float32 and float64.

use super::nn_common::{data_nchw, padding2d, pair, Layout2d, WindowAxis};
use crate::op::{Arity, AttrDef, AttrKind, OpDef, OpImpl, OpPattern, TypeCtx, TypeError};
use crate::{AttrValue, TensorType, Type};

/// Which pooling an op computes.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Pool {
    Max,
    Avg,
    GlobalMax,
    GlobalAvg,
}

impl Pool {
    fn global(self) -> bool {
        matches!(self, Pool::GlobalMax | Pool::GlobalAvg)
    }
}

/// 2-D pooling: `nn.max_pool2d`, `nn.avg_pool2d`, `nn.global_max_pool2d`, `nn.global_avg_pool2d`.
pub struct PoolOp(pub(crate) Pool);

impl PoolOp {
    /// Checks the call's type and attributes; the pooling's geometry, reduction and result type.
    pub fn setup(
        &self,
        ctx: &TypeCtx<'_>,
    ) -> Result<(Pool2dGeom, PoolKind, TensorType), TypeError> {
        let layout = Layout2d::parse(ctx, "layout")?;
        layout.check_out_layout(ctx, "out_layout")?;
        let [n, c, h, w] = data_nchw(ctx, 0, "data", layout)?;
        let dtype = ctx.tensor(0)?.dtype;
        let kind = match self.0 {
            Pool::Max | Pool::GlobalMax => PoolKind::Max,
            Pool::Avg => PoolKind::Avg {
                count_include_pad: ctx.bool("count_include_pad")?,
            },
            Pool::GlobalAvg => PoolKind::Avg {
                count_include_pad: false,
            },
        };
        let geom = if self.0.global() {
            Pool2dGeom {
                batch: n,
                channels: c,
                in_h: h,
                in_w: w,
                out_h: 1,
                out_w: 1,
                kernel: [h, w],
                strides: [1, 1],
                dilation: [1, 1],
                pad: [0; 4],
                channels_last: layout.channels_last(),
            }
        } else {
            let kernel = pair(ctx, "pool_size", 1)?;
            let strides = pair(ctx, "strides", 1)?;
            let dilation = pair(ctx, "dilation", 1)?;
            let pad = padding2d(ctx, "padding")?;
            let ceil = ctx.bool("ceil_mode")?;
            let mut out = [0; 2];
            for (a, (size, name)) in [(h, "height"), (w, "width")].into_iter().enumerate() {
                let axis = WindowAxis {
                    what: "pool window",
                    name,
                    size,
                    kernel: kernel[a],
                    stride: strides[a],
                    dilation: dilation[a],
                    pad: [pad[a], pad[a + 2]],
                };
                out[a] = axis.out_len(ctx, ceil)?;
            }
            Pool2dGeom {
                batch: n,
                channels: c,
                in_h: h,
                in_w: w,
                out_h: out[0],
                out_w: out[1],
                kernel,
                strides,
                dilation,
                pad,
                channels_last: layout.channels_last(),
            }
        };
        let out = TensorType::new(layout.shape([n, c, geom.out_h, geom.out_w]), dtype);
        Ok((geom, kind, out))
    }
}

impl OpImpl for PoolOp {
    fn infer_type(&self, ctx: &TypeCtx<'_>) -> Result<Type, TypeError> {
        Ok(Type::Tensor(self.setup(ctx)?.2))
    }
}

fn window_attrs(avg: bool) -> Vec<AttrDef> {
    let mut attrs = vec![
        AttrDef::new("pool_size", AttrKind::Ints, AttrValue::ints([1, 1])),
        AttrDef::new("strides", AttrKind::Ints, AttrValue::ints([1, 1])),
        AttrDef::new("dilation", AttrKind::Ints, AttrValue::ints([1, 1])),
        AttrDef::new("padding", AttrKind::Ints, AttrValue::ints([0, 0])),
        AttrDef::new("layout", AttrKind::Str, "NCHW"),
        AttrDef::new("out_layout", AttrKind::Str, ""),
        AttrDef::new("ceil_mode", AttrKind::Bool, false),
    ];
    if avg {
        attrs.push(AttrDef::new("count_include_pad", AttrKind::Bool, false));
    }
    attrs
}

pub(crate) fn register(ops: &mut Vec<OpDef>) {
    for (name, summary, pool) in [
        ("nn.max_pool2d", "2-D max pooling", Pool::Max),
        ("nn.avg_pool2d", "2-D average pooling", Pool::Avg),
        (
            "nn.global_max_pool2d",
            "maximum over each channel's H × W",
            Pool::GlobalMax,
        ),
        (
            "nn.global_avg_pool2d",
            "mean over each channel's H × W",
            Pool::GlobalAvg,
        ),
    ] {
        let attrs = if pool.global() {
            vec![
                AttrDef::new("layout", AttrKind::Str, "NCHW"),
                AttrDef::new("out_layout", AttrKind::Str, ""),
            ]
        } else {
            window_attrs(pool == Pool::Avg)
        };
        ops.push(
            OpDef::new(
                name,
                summary,
                Arity::Exact(1),
                OpPattern::OutEWiseFusable,
                PoolOp(pool),
            )
            .with_attrs(attrs),
        );
    }
}

/// Geometry of a 2-D pooling in logical N, C, H, W terms.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Pool2dGeom {
    /// Batch (N).
    pub batch: usize,
    /// Channels (C).
    pub channels: usize,
    /// Input height.
    pub in_h: usize,
    /// Input width.
    pub in_w: usize,
    /// Output height.
    pub out_h: usize,
    /// Output width.
    pub out_w: usize,
    /// Window height and width (`pool_size`; the whole input for global pooling).
    pub kernel: [usize; 2],
    /// Stride along height and width.
    pub strides: [usize; 2],
    /// Dilation along height and width.
    pub dilation: [usize; 2],
    /// Top, left, bottom, right.
    pub pad: [usize; 4],
    /// NHWC data (otherwise NCHW).
    pub channels_last: bool,
}

/// Which reduction a pooling computes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PoolKind {
    /// Maximum over the window.
    Max,
    /// Mean over the window.
    Avg {
        /// Count padding taps in the divisor.
        count_include_pad: bool,
    },
}
