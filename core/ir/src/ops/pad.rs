//! `nn.pad(data, pad_value)`: pads every axis by `pad_width[d] = [before, after]` in
//! `constant`, `edge` or `reflect` mode (Relay v0.16: the pad value is the second argument, a
//! scalar tensor). The host kernel moves raw elements, so it serves every dtype.

use crate::op::{Arity, AttrDef, AttrKind, OpDef, OpImpl, OpPattern, TypeCtx, TypeError};
use crate::{TensorType, Type};

/// `nn.pad(data, pad_value)`.
pub struct Pad;

/// The checked attributes and data type of an `nn.pad` call.
pub struct PadSetup {
    /// The fill (`pad_mode`).
    pub mode: PadMode,
    /// `(before, after)` padding of each axis (`pad_width`).
    pub widths: Vec<(usize, usize)>,
    /// The data (argument 0) type.
    pub data: TensorType,
    out: TensorType,
}

/// Checks an `nn.pad` call's types and `pad_mode` / `pad_width`; derives its [`PadSetup`].
pub fn setup(ctx: &TypeCtx<'_>) -> Result<PadSetup, TypeError> {
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
}

pub(crate) fn register(ops: &mut Vec<OpDef>) {
    ops.push(
        OpDef::new(
            "nn.pad",
            "pads each axis by [before, after] with a value, the edge, or a reflection",
            Arity::Exact(2),
            OpPattern::Injective,
            Pad,
        )
        .with_attrs(vec![
            AttrDef::new("pad_width", AttrKind::Any, crate::AttrValue::List(vec![])),
            AttrDef::new("pad_mode", AttrKind::Str, "constant"),
        ]),
    );
}

/// How padded elements are filled.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PadMode {
    /// The pad value.
    Constant,
    /// The nearest edge element.
    Edge,
    /// The mirror image without repeating the edge (numpy's `reflect`).
    Reflect,
}
