//! [`CallView`]: one typed op call as support predicates and pattern checks see it, with the
//! readers every target needs (attributes by type, argument and result shapes and dtypes,
//! required attribute values), each answering a [`RejectReason`] that names what is missing
//! or wrong, so predicates stay one line per condition.

use super::RejectReason;
use crate::op::Op;
use crate::{AttrValue, Attrs, DType, TensorType, Type};

/// A typed op call as support rules see it.
#[derive(Clone, Copy, Debug)]
pub struct CallView<'a> {
    /// The op.
    pub op: &'a Op,
    /// Normalized attributes (every schema attribute present).
    pub attrs: &'a Attrs,
    /// Argument types.
    pub arg_types: &'a [Type],
    /// Result type.
    pub result_type: &'a Type,
}

impl<'a> CallView<'a> {
    /// The op's name (`nn.conv2d`).
    pub fn op_name(&self) -> &'a str {
        self.op.name()
    }

    /// Attribute `name`, if present.
    pub fn attr(&self, name: &str) -> Option<&'a AttrValue> {
        self.attrs.get(name)
    }

    /// Integer attribute `name`, if present and an integer.
    pub fn attr_int(&self, name: &str) -> Option<i64> {
        self.attr(name).and_then(AttrValue::as_int)
    }

    /// Number attribute `name` (an integer reads as a float), if present.
    pub fn attr_f64(&self, name: &str) -> Option<f64> {
        self.attr(name).and_then(AttrValue::as_f64)
    }

    /// Boolean attribute `name`, if present and a bool.
    pub fn attr_bool(&self, name: &str) -> Option<bool> {
        self.attr(name).and_then(AttrValue::as_bool)
    }

    /// String attribute `name`, if present and a string.
    pub fn attr_str(&self, name: &str) -> Option<&'a str> {
        self.attr(name).and_then(AttrValue::as_str)
    }

    /// Integer-list attribute `name`, if present and a list of integers.
    pub fn attr_ints(&self, name: &str) -> Option<Vec<i64>> {
        self.attr(name).and_then(AttrValue::as_int_list)
    }

    /// String attribute `name` must be `want` (absent reads as empty).
    pub fn require_str(&self, name: &str, want: &str) -> Result<(), RejectReason> {
        let got = self.attr_str(name).unwrap_or("");
        if got == want {
            Ok(())
        } else {
            Err(format!("{name}=\"{got}\" not supported (needs \"{want}\")").into())
        }
    }

    /// Boolean attribute `name` must be `want`.
    pub fn require_flag(&self, name: &str, want: bool) -> Result<(), RejectReason> {
        let got = self.attr_bool(name);
        if got == Some(want) {
            return Ok(());
        }
        let show = |b: bool| if b { "True" } else { "False" };
        Err(format!(
            "{name}={} not supported (needs {})",
            got.map_or("none", show),
            show(want)
        )
        .into())
    }

    /// The tensor type of argument `index`; a missing argument or a tuple is a reason.
    pub fn arg(&self, index: usize) -> Result<&'a TensorType, RejectReason> {
        let ty = self.arg_types.get(index).ok_or_else(|| {
            RejectReason::from(format!(
                "{} has {} argument(s), no argument {index}",
                self.op_name(),
                self.arg_types.len()
            ))
        })?;
        tensor(ty, || format!("argument {index}"))
    }

    /// The shape of argument `index`.
    pub fn arg_shape(&self, index: usize) -> Result<&'a [usize], RejectReason> {
        self.arg(index).map(|t| t.shape.as_slice())
    }

    /// The rank of argument `index`.
    pub fn arg_rank(&self, index: usize) -> Result<usize, RejectReason> {
        self.arg(index).map(TensorType::rank)
    }

    /// The dtype of argument `index`.
    pub fn arg_dtype(&self, index: usize) -> Result<DType, RejectReason> {
        self.arg(index).map(|t| t.dtype)
    }

    /// The result's tensor type; a tuple result is a reason.
    pub fn result(&self) -> Result<&'a TensorType, RejectReason> {
        tensor(self.result_type, || "the result".to_string())
    }

    /// The result's shape.
    pub fn result_shape(&self) -> Result<&'a [usize], RejectReason> {
        self.result().map(|t| t.shape.as_slice())
    }

    /// The result's dtype.
    pub fn result_dtype(&self) -> Result<DType, RejectReason> {
        self.result().map(|t| t.dtype)
    }
}

fn tensor(ty: &Type, what: impl Fn() -> String) -> Result<&TensorType, RejectReason> {
    ty.as_tensor()
        .ok_or_else(|| format!("{} is {ty}, not a tensor", what()).into())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::op::OpRegistry;

    #[test]
    fn readers_answer_values_or_reasons() {
        let conv = OpRegistry::lookup("nn.conv2d").unwrap();
        let attrs = Attrs::new()
            .with("groups", 2i64)
            .with("data_layout", "NCHW")
            .with("padding", AttrValue::ints([1, 1, 1, 1]));
        let x = Type::tensor([1, 4, 8, 8], DType::Float32);
        let w = Type::tensor([4, 2, 3, 3], DType::Float32);
        let y = Type::Tuple(vec![x.clone()]);
        let args = [x, w];
        let call = CallView {
            op: &conv,
            attrs: &attrs,
            arg_types: &args,
            result_type: &y,
        };
        assert_eq!(call.op_name(), "nn.conv2d");
        assert_eq!(call.attr_int("groups"), Some(2));
        assert_eq!(call.attr_f64("groups"), Some(2.0));
        assert_eq!(call.attr_ints("padding"), Some(vec![1, 1, 1, 1]));
        assert_eq!(call.attr_str("groups"), None);
        assert_eq!(call.arg_shape(1).unwrap(), &[4, 2, 3, 3]);
        assert_eq!(call.arg_rank(0).unwrap(), 4);
        assert_eq!(call.arg_dtype(0).unwrap(), DType::Float32);
        assert_eq!(
            call.arg(2).unwrap_err().0,
            "nn.conv2d has 2 argument(s), no argument 2"
        );
        assert_eq!(
            call.result_shape().unwrap_err().0,
            "the result is (Tensor[(1, 4, 8, 8), float32],), not a tensor"
        );
        assert!(call.require_str("data_layout", "NCHW").is_ok());
        assert_eq!(
            call.require_str("kernel_layout", "OIHW").unwrap_err().0,
            "kernel_layout=\"\" not supported (needs \"OIHW\")"
        );
        assert_eq!(
            call.require_flag("center", true).unwrap_err().0,
            "center=none not supported (needs True)"
        );
    }
}
