//! 2-D pooling: `nn.max_pool2d`, `nn.avg_pool2d` (Relay's Pool2DRel: 1-, 2- or 4-value
//! padding, dilation, `ceil_mode`, `count_include_pad`) and `nn.global_max_pool2d`,
//! `nn.global_avg_pool2d`, over NCHW or NHWC data. Host kernels for float32 and float64.

use super::nn_common::{data_nchw, padding2d, pair, Layout2d, WindowAxis};
use crate::ir::{AttrValue, TensorType, Type};
use crate::kernels::pool::{Pool2dGeom, PoolKind};
use crate::op::{Arity, AttrDef, AttrKind, OpDef, OpImpl, OpPattern, TypeCtx, TypeError};
#[cfg(feature = "executor")]
use {
    super::nn_common::{input, output, real_kernel, with_kernel_ctx, RealBody},
    crate::kernels::numeric::Real,
    crate::kernels::pool::pool2d,
    crate::op::{HostKernel, KernelError, KernelSpec},
    crate::tensor::{TensorMut, TensorRef},
};

/// Which pooling an op computes.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Pool {
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

struct PoolOp(Pool);

impl PoolOp {
    fn setup(&self, ctx: &TypeCtx<'_>) -> Result<(Pool2dGeom, PoolKind, TensorType), TypeError> {
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

    #[cfg(feature = "executor")]
    fn host_kernel(&self, spec: &KernelSpec<'_>) -> Result<Box<dyn HostKernel>, KernelError> {
        let (geom, kind, out) = with_kernel_ctx(spec, |ctx| self.setup(ctx))?;
        if out.dtype.is_custom() {
            return crate::kernels::custom::pool2d(spec, geom, kind);
        }
        real_kernel(
            spec,
            out.dtype,
            PoolKernel {
                op: spec.op.to_string(),
                geom,
                kind,
            },
        )
    }
}

#[cfg(feature = "executor")]
struct PoolKernel {
    op: String,
    geom: Pool2dGeom,
    kind: PoolKind,
}

#[cfg(feature = "executor")]
impl RealBody for PoolKernel {
    fn run<T: Real>(
        &self,
        inputs: &[TensorRef<'_>],
        outputs: &mut [TensorMut<'_>],
        threads: usize,
    ) -> Result<(), KernelError> {
        let x = input::<T>(&self.op, inputs, 0)?;
        let y = output::<T>(&self.op, outputs, 0)?;
        pool2d(&self.geom, self.kind, x, y, threads);
        Ok(())
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

pub(super) fn register(ops: &mut Vec<OpDef>) {
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
