//! Lowering of one typed op call to a [`Kernel`] (or to a view), with the attribute checks
//! that decide whether the generator handles it.
//!
//! Shapes come from the inferred types, which the IR's type relations already checked;
//! attributes are read here only for what types do not say (strides, padding, axes, bounds).
//! Anything outside the supported set is an [`CodegenError::UnsupportedOp`] naming the op.

use byoc_sdk::ir::{AttrValue, Attrs, TensorType};

use super::error::CodegenError;
use super::kernel::{
    contiguous_strides, Activation, BinaryOp, Conv2dGeom, Epilogue, Kernel, PoolGeom, PoolKind,
};
use crate::support::op_support;

/// A typed op call being lowered.
pub(crate) struct OpCtx<'a> {
    /// The partition, for errors.
    pub partition: &'a str,
    /// The op name.
    pub op: &'a str,
    /// Normalized attributes.
    pub attrs: &'a Attrs,
    /// Argument types.
    pub args: Vec<&'a TensorType>,
    /// Result type.
    pub out: &'a TensorType,
}

/// What an op call becomes.
pub(crate) enum Lowering {
    /// A loop nest.
    Kernel(Kernel),
    /// The same bytes as argument 0 under the result's shape.
    View,
}

impl OpCtx<'_> {
    fn unsupported(&self, reason: impl Into<String>) -> CodegenError {
        CodegenError::UnsupportedOp {
            partition: self.partition.to_string(),
            op: self.op.to_string(),
            reason: reason.into(),
        }
    }

    fn attr(&self, name: &str) -> Result<&AttrValue, CodegenError> {
        self.attrs
            .get(name)
            .ok_or_else(|| self.unsupported(format!("attribute {name} is missing")))
    }

    fn int(&self, name: &str) -> Result<i64, CodegenError> {
        let v = self.attr(name)?;
        v.as_int()
            .ok_or_else(|| self.unsupported(format!("attribute {name}={v} is not an integer")))
    }

    fn float(&self, name: &str) -> Result<f32, CodegenError> {
        let v = self.attr(name)?;
        v.as_f64()
            .map(|f| f as f32)
            .ok_or_else(|| self.unsupported(format!("attribute {name}={v} is not a number")))
    }

    fn flag(&self, name: &str) -> Result<bool, CodegenError> {
        let v = self.attr(name)?;
        v.as_bool()
            .ok_or_else(|| self.unsupported(format!("attribute {name}={v} is not a bool")))
    }

    fn uints(&self, name: &str) -> Result<Vec<usize>, CodegenError> {
        let v = self.attr(name)?;
        v.as_int_list()
            .and_then(|l| l.into_iter().map(|i| usize::try_from(i).ok()).collect())
            .ok_or_else(|| self.unsupported(format!("attribute {name}={v} is not a list of sizes")))
    }

    /// A `(h, w)` attribute given as 1 or 2 values, each at least 1.
    fn pair(&self, name: &str) -> Result<[usize; 2], CodegenError> {
        let p = match self.uints(name)?[..] {
            [a] => [a, a],
            [a, b] => [a, b],
            ref v => return Err(self.unsupported(format!("{name} has {} values", v.len()))),
        };
        if p.contains(&0) {
            return Err(self.unsupported(format!("{name}={p:?} has a zero")));
        }
        Ok(p)
    }

    /// Relay's 1-, 2- or 4-value padding as top, left, bottom, right.
    fn padding(&self) -> Result<[usize; 4], CodegenError> {
        match self.uints("padding")?[..] {
            [p] => Ok([p; 4]),
            [h, w] => Ok([h, w, h, w]),
            [t, l, b, r] => Ok([t, l, b, r]),
            ref v => Err(self.unsupported(format!("padding has {} values", v.len()))),
        }
    }

    /// Checks the string attributes the support table pins (layouts).
    fn check_required_attrs(&self) -> Result<(), CodegenError> {
        let support = op_support(self.op)
            .ok_or_else(|| self.unsupported("op not supported by the csource target"))?;
        for (name, want) in support.required_attrs {
            let got = self.attr(name)?;
            if got.as_str() != Some(want) {
                return Err(
                    self.unsupported(format!("{name}={got} not supported (needs \"{want}\")"))
                );
            }
        }
        Ok(())
    }

    /// An out_layout attribute must be empty or equal to the data layout.
    fn check_out_layout(&self, attr: &str) -> Result<(), CodegenError> {
        match self.attrs.get(attr).and_then(AttrValue::as_str) {
            None | Some("") | Some("NCHW") => Ok(()),
            Some(other) => Err(self.unsupported(format!("{attr}=\"{other}\" not supported"))),
        }
    }

    fn rank_of(&self, i: usize, want: usize) -> Result<&[usize], CodegenError> {
        let t = self
            .args
            .get(i)
            .ok_or_else(|| self.unsupported(format!("argument {i} is missing")))?;
        if t.rank() != want {
            return Err(
                self.unsupported(format!("argument {i} has rank {} (needs {want})", t.rank()))
            );
        }
        Ok(&t.shape)
    }

    /// `axis` normalized against `rank`.
    fn axis(&self, rank: usize) -> Result<usize, CodegenError> {
        let axis = self.int("axis")?;
        let r = rank as i64;
        let a = if axis < 0 { axis + r } else { axis };
        usize::try_from(a)
            .ok()
            .filter(|&a| a < rank)
            .ok_or_else(|| self.unsupported(format!("axis={axis} out of range for rank {rank}")))
    }
}

/// `(outer, len, inner)` of `shape` around `axis`.
fn around(shape: &[usize], axis: usize) -> (usize, usize, usize) {
    (
        shape[..axis].iter().product(),
        shape[axis],
        shape[axis + 1..].iter().product(),
    )
}

/// Lowers one op call (the producer of a fused chain gets its epilogue later).
pub(crate) fn lower_op(cx: &OpCtx<'_>) -> Result<Lowering, CodegenError> {
    cx.check_required_attrs()?;
    let act = |a| {
        Ok(Lowering::Kernel(Kernel::Activation(
            a,
            cx.out.num_elements(),
        )))
    };
    match cx.op {
        "nn.conv2d" => Ok(Lowering::Kernel(Kernel::Conv2d(
            conv2d_geom(cx)?,
            Epilogue::default(),
        ))),
        "nn.dense" => {
            let (m, k, n) = dense_dims(cx)?;
            Ok(Lowering::Kernel(Kernel::Dense {
                m,
                k,
                n,
                epilogue: Epilogue::default(),
            }))
        }
        "nn.bias_add" => {
            let shape = &cx.out.shape;
            let (outer, channels, inner) = around(shape, cx.axis(shape.len())?);
            Ok(Lowering::Kernel(Kernel::BiasAdd {
                outer,
                channels,
                inner,
            }))
        }
        "add" => binary(cx, BinaryOp::Add),
        "subtract" => binary(cx, BinaryOp::Subtract),
        "multiply" => binary(cx, BinaryOp::Multiply),
        "nn.relu" | "clip" | "sigmoid" | "tanh" => act(activation(cx)?),
        "nn.max_pool2d" | "nn.avg_pool2d" | "nn.global_max_pool2d" | "nn.global_avg_pool2d" => {
            pool(cx)
        }
        "nn.softmax" => {
            let shape = &cx.out.shape;
            let (outer, len, inner) = around(shape, cx.axis(shape.len())?);
            Ok(Lowering::Kernel(Kernel::Softmax { outer, len, inner }))
        }
        "reshape" | "nn.batch_flatten" | "squeeze" | "expand_dims" => Ok(Lowering::View),
        _ => Err(cx.unsupported("op not supported by the csource target")),
    }
}

/// The activation an element-wise op computes, if it is one of them.
pub(crate) fn activation(cx: &OpCtx<'_>) -> Result<Activation, CodegenError> {
    match cx.op {
        "nn.relu" => Ok(Activation::Relu),
        "clip" => Ok(Activation::Clip {
            lo: cx.float("a_min")?,
            hi: cx.float("a_max")?,
        }),
        "sigmoid" => Ok(Activation::Sigmoid),
        "tanh" => Ok(Activation::Tanh),
        _ => Err(cx.unsupported("not an element-wise activation")),
    }
}

fn conv2d_geom(cx: &OpCtx<'_>) -> Result<Conv2dGeom, CodegenError> {
    cx.check_out_layout("out_layout")?;
    let [n, c, h, w] =
        <[usize; 4]>::try_from(cx.rank_of(0, 4)?).map_err(|_| cx.unsupported("data is not 4-D"))?;
    let weight = cx.rank_of(1, 4)?;
    let (oc, kh, kw) = (weight[0], weight[2], weight[3]);
    let out = &cx.out.shape;
    if out.len() != 4 {
        return Err(cx.unsupported("result is not 4-D"));
    }
    let groups = usize::try_from(cx.int("groups")?)
        .ok()
        .filter(|&g| g > 0 && c % g == 0 && oc % g == 0)
        .ok_or_else(|| cx.unsupported("groups must divide the input and output channels"))?;
    Ok(Conv2dGeom {
        input: [n, c, h, w],
        out: [oc, out[2], out[3]],
        kernel: [kh, kw],
        strides: cx.pair("strides")?,
        dilation: cx.pair("dilation")?,
        pad: cx.padding()?,
        groups,
    })
}

/// `(m, k, n)` of a dense: data `[..., k]` flattened to `m` rows, weight `[n, k]`.
fn dense_dims(cx: &OpCtx<'_>) -> Result<(usize, usize, usize), CodegenError> {
    let data = &cx
        .args
        .first()
        .ok_or_else(|| cx.unsupported("no data"))?
        .shape;
    let weight = cx.rank_of(1, 2)?;
    let k = *data
        .last()
        .ok_or_else(|| cx.unsupported("data is a scalar"))?;
    let m = data[..data.len() - 1].iter().product();
    Ok((m, k, weight[0]))
}

/// Element strides of an operand of `shape` broadcast to `out` (numpy rules: dimensions
/// aligned at the right, size-1 dimensions repeated).
fn broadcast_strides(shape: &[usize], out: &[usize]) -> Vec<usize> {
    let own = contiguous_strides(shape);
    let lead = out.len() - shape.len();
    (0..out.len())
        .map(|d| match d.checked_sub(lead) {
            Some(i) if shape[i] != 1 => own[i],
            _ => 0,
        })
        .collect()
}

fn binary(cx: &OpCtx<'_>, op: BinaryOp) -> Result<Lowering, CodegenError> {
    let out = cx.out.shape.clone();
    let mut strides = [Vec::new(), Vec::new()];
    for (i, s) in strides.iter_mut().enumerate() {
        let arg = cx
            .args
            .get(i)
            .ok_or_else(|| cx.unsupported(format!("argument {i} is missing")))?;
        if arg.rank() > out.len() {
            return Err(cx.unsupported(format!("argument {i} has a higher rank than the result")));
        }
        *s = broadcast_strides(&arg.shape, &out);
    }
    Ok(Lowering::Kernel(Kernel::Binary {
        op,
        shape: out,
        strides,
    }))
}

fn pool(cx: &OpCtx<'_>) -> Result<Lowering, CodegenError> {
    cx.check_out_layout("out_layout")?;
    let [n, c, h, w] =
        <[usize; 4]>::try_from(cx.rank_of(0, 4)?).map_err(|_| cx.unsupported("data is not 4-D"))?;
    let out = &cx.out.shape;
    if out.len() != 4 {
        return Err(cx.unsupported("result is not 4-D"));
    }
    let global = cx.op.starts_with("nn.global_");
    let kind = if cx.op.contains("max") {
        PoolKind::Max
    } else {
        PoolKind::Avg {
            count_include_pad: !global && cx.flag("count_include_pad")?,
        }
    };
    let geom = if global {
        PoolGeom {
            planes: n * c,
            in_hw: [h, w],
            out_hw: [1, 1],
            kernel: [h, w],
            strides: [1, 1],
            dilation: [1, 1],
            pad: [0; 4],
        }
    } else {
        // The output size (ceil_mode included) is the inferred type's.
        PoolGeom {
            planes: n * c,
            in_hw: [h, w],
            out_hw: [out[2], out[3]],
            kernel: cx.pair("pool_size")?,
            strides: cx.pair("strides")?,
            dilation: cx.pair("dilation")?,
            pad: cx.padding()?,
        }
    };
    Ok(Lowering::Kernel(Kernel::Pool(geom, kind)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn broadcasting_zeroes_repeated_dims() {
        assert_eq!(broadcast_strides(&[3, 1], &[2, 3, 4]), vec![0, 1, 0]);
        assert_eq!(broadcast_strides(&[], &[2, 3]), vec![0, 0]);
        assert_eq!(broadcast_strides(&[2, 3], &[2, 3]), vec![3, 1]);
    }
}
