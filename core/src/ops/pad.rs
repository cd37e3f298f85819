//! `nn.pad(data, pad_value)`: pads every axis by `pad_width[d] = [before, after]` in
//! `constant`, `edge` or `reflect` mode (Relay v0.16: the pad value is the second argument, a
//! scalar tensor). The host kernel moves raw elements, so it serves every dtype.

use crate::ir::{TensorType, Type};
use crate::kernels::pad::PadMode;
use crate::op::{Arity, AttrDef, AttrKind, OpDef, OpImpl, OpPattern, TypeCtx, TypeError};
#[cfg(feature = "executor")]
use {
    super::nn_common::with_kernel_ctx,
    crate::kernels::pad::pad,
    crate::op::{HostKernel, KernelError, KernelSpec},
    crate::tensor::{Tensor, TensorMut, TensorRef},
};

struct Pad;

#[cfg_attr(
    not(feature = "executor"),
    allow(dead_code, reason = "only the host kernel reads it")
)]
struct PadSetup {
    mode: PadMode,
    widths: Vec<(usize, usize)>,
    data: TensorType,
    out: TensorType,
}

fn setup(ctx: &TypeCtx<'_>) -> Result<PadSetup, TypeError> {
    let data = ctx.tensor(0)?;
    let value = ctx.tensor(1)?;
    if value.rank() != 0 {
        return Err(ctx.err(format!("pad_value must be a scalar, got {value}")));
    }
    let mode = match ctx.str("pad_mode")? {
        "constant" => PadMode::Constant,
        "edge" => PadMode::Edge,
        "reflect" => PadMode::Reflect,
        other => {
            return Err(ctx.err(format!(
                "pad_mode must be constant, edge or reflect, got '{other}'"
            )))
        }
    };
    let rank = data.rank();
    let bad = || {
        ctx.err(format!(
            "pad_width must list one [before, after] pair of non-negative ints per axis ({rank} axes), got {}",
            ctx.attr("pad_width")
        ))
    };
    let rows = ctx.attr("pad_width").as_list().ok_or_else(bad)?;
    if rows.len() != rank {
        return Err(bad());
    }
    let mut widths = Vec::with_capacity(rank);
    for (d, row) in rows.iter().enumerate() {
        let (b, a) = match row.as_int_list().as_deref() {
            Some(&[b, a]) => crate::dims::dim(b)
                .zip(crate::dims::dim(a))
                .ok_or_else(bad)?,
            _ => return Err(bad()),
        };
        let size = data.shape[d];
        let limit_ok = match mode {
            PadMode::Constant => true,
            PadMode::Edge => size > 0 || (b == 0 && a == 0),
            PadMode::Reflect => (b < size && a < size) || (b == 0 && a == 0),
        };
        if !limit_ok {
            return Err(ctx.err(format!(
                "{} padding of axis {d} by [{b}, {a}] needs more than its {size} elements",
                ctx.str("pad_mode")?
            )));
        }
        widths.push((b, a));
    }
    let shape = data
        .shape
        .iter()
        .zip(&widths)
        .enumerate()
        .map(|(d, (s, (b, a)))| {
            s.checked_add(*b)
                .and_then(|n| n.checked_add(*a))
                .ok_or_else(|| {
                    ctx.err(format!(
                        "padding axis {d} of size {s} by [{b}, {a}] overflows 64 bits"
                    ))
                })
        })
        .collect::<Result<Vec<usize>, _>>()?;
    Ok(PadSetup {
        mode,
        widths,
        data: data.clone(),
        out: TensorType::new(shape, data.dtype),
    })
}

impl OpImpl for Pad {
    fn infer_type(&self, ctx: &TypeCtx<'_>) -> Result<Type, TypeError> {
        Ok(Type::Tensor(setup(ctx)?.out))
    }

    #[cfg(feature = "executor")]
    fn host_kernel(&self, spec: &KernelSpec<'_>) -> Result<Box<dyn HostKernel>, KernelError> {
        let s = with_kernel_ctx(spec, setup)?;
        let value = &spec.inputs[1];
        if value.dtype != s.data.dtype && (value.dtype.is_custom() || s.data.dtype.is_custom()) {
            return Err(spec.unsupported(format!(
                "a {} pad value for {} data",
                value.dtype, s.data.dtype
            )));
        }
        Ok(Box::new(PadKernel(s)))
    }
}

#[cfg(feature = "executor")]
struct PadKernel(PadSetup);

#[cfg(feature = "executor")]
impl HostKernel for PadKernel {
    fn run(
        &self,
        inputs: &[TensorRef<'_>],
        outputs: &mut [TensorMut<'_>],
        _threads: usize,
    ) -> Result<(), KernelError> {
        let err = |m: String| KernelError::new("nn.pad", m);
        let s = &self.0;
        let [x, v] = inputs else {
            return Err(err(format!("expected 2 inputs, got {}", inputs.len())));
        };
        let y = outputs
            .first_mut()
            .ok_or_else(|| err("missing output".into()))?;
        // The pad value as one element of the data dtype.
        let value = if v.ty.dtype == s.data.dtype {
            v.to_tensor()
        } else {
            Tensor::from_f64(TensorType::scalar(s.data.dtype), &v.to_f64_vec())
                .map_err(|e| err(e.to_string()))?
        };
        pad(
            s.mode,
            &s.data.shape,
            &s.widths,
            s.data.dtype.size_bytes(),
            value.as_bytes(),
            x.bytes,
            y.bytes,
        );
        Ok(())
    }
}

pub(super) fn register(ops: &mut Vec<OpDef>) {
    ops.push(
        OpDef::new(
            "nn.pad",
            "pads each axis by [before, after] with a value, the edge, or a reflection",
            Arity::Exact(2),
            OpPattern::Injective,
            Pad,
        )
        .with_attrs(vec![
            AttrDef::new(
                "pad_width",
                AttrKind::Any,
                crate::ir::AttrValue::List(vec![]),
            ),
            AttrDef::new("pad_mode", AttrKind::Str, "constant"),
        ]),
    );
}
