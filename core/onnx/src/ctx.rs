//! What a converter works with: the function being built (with every value's type kept up to
//! date, so converters can read static shapes) and one node's inputs and attributes.
//!
//! Every op call goes through [`NodeCtx::call`], which builds the call, infers its type at once
//! and folds it when its arguments are constants ([`super::fold`]). Errors carry the node.

use std::sync::Arc;

use super::error::NodeRef;
use super::proto::{attribute_type, AttributeProto, NodeProto};
use super::tensor_proto::tensor_from_proto;
use super::OnnxError;
use byoc_ir::tensor::Tensor;
use byoc_ir::{Attrs, ExprId, FunctionBuilder, TensorType, Type};

/// The function under construction.
pub(crate) struct Graph {
    /// The arena; every node in it has its type set.
    pub b: FunctionBuilder,
    /// The model's default-domain opset version.
    pub opset: i64,
    /// The model file's directory, where external tensor data lives.
    pub base_dir: Option<std::path::PathBuf>,
}

/// One node being converted.
pub(crate) struct NodeCtx<'a> {
    /// The function under construction.
    pub g: &'a mut Graph,
    /// The node.
    pub node: &'a NodeProto,
    /// The node's name and op type, for errors.
    pub at: NodeRef,
    /// The node's inputs, `None` for omitted optional ones.
    pub inputs: Vec<Option<ExprId>>,
}

impl<'a> NodeCtx<'a> {
    /// The model's opset version.
    pub fn opset(&self) -> i64 {
        self.g.opset
    }

    /// A conversion error of this node.
    pub fn err(&self, reason: impl Into<String>) -> OnnxError {
        OnnxError::Node {
            node: self.at.clone(),
            reason: reason.into(),
        }
    }

    /// Input `i`, which the op requires.
    pub fn input(&self, i: usize) -> Result<ExprId, OnnxError> {
        self.opt_input(i)
            .ok_or_else(|| self.err(format!("required input {i} is missing")))
    }

    /// Input `i`, if given.
    pub fn opt_input(&self, i: usize) -> Option<ExprId> {
        self.inputs.get(i).copied().flatten()
    }

    /// The given inputs, omitted optional ones skipped.
    pub fn present_inputs(&self) -> Vec<ExprId> {
        self.inputs.iter().flatten().copied().collect()
    }

    /// The tensor type of `id`.
    pub fn tensor_ty(&self, id: ExprId) -> Result<TensorType, OnnxError> {
        match self.g.b.ty(id) {
            Some(Type::Tensor(t)) => Ok(t.clone()),
            Some(other) => Err(self.err(format!("expected a tensor value, got {other}"))),
            None => Err(self.err(format!("value {id} has no type"))),
        }
    }

    /// The shape of `id`.
    pub fn shape(&self, id: ExprId) -> Result<Vec<usize>, OnnxError> {
        Ok(self.tensor_ty(id)?.shape)
    }

    /// The rank of `id`.
    pub fn rank(&self, id: ExprId) -> Result<usize, OnnxError> {
        Ok(self.tensor_ty(id)?.rank())
    }

    /// The constant value of `id`, if it is a constant.
    pub fn constant_of(&self, id: ExprId) -> Option<Arc<Tensor>> {
        self.g.b.get(id)?.as_constant().cloned()
    }

    /// Input `i` as a constant; `None` when omitted, an error when it is computed from graph
    /// inputs (the op needs its value at import time).
    pub fn const_input(&self, i: usize) -> Result<Option<Arc<Tensor>>, OnnxError> {
        let Some(id) = self.opt_input(i) else {
            return Ok(None);
        };
        self.constant_of(id).map(Some).ok_or_else(|| {
            self.err(format!(
                "input {i} ('{}') must be a constant known at import time, but it is computed from graph inputs",
                self.node.input.get(i).map(String::as_str).unwrap_or_default()
            ))
        })
    }

    /// Input `i` as constant integers (any integer dtype), if given.
    pub fn const_ints(&self, i: usize) -> Result<Option<Vec<i64>>, OnnxError> {
        let Some(t) = self.const_input(i)? else {
            return Ok(None);
        };
        tensor_ints(&t)
            .map(Some)
            .ok_or_else(|| self.err(format!("input {i} must hold integers, got {}", t.dtype())))
    }

    /// Input `i` as constant floats, if given.
    pub fn const_floats(&self, i: usize) -> Result<Option<Vec<f64>>, OnnxError> {
        Ok(self.const_input(i)?.map(|t| t.to_f64_vec()))
    }

    /// A new constant.
    pub fn constant(&mut self, t: Tensor) -> ExprId {
        self.g.b.constant(t)
    }

    /// A scalar constant of `dtype` holding `value`.
    pub fn scalar(&mut self, dtype: byoc_ir::DType, value: f64) -> Result<ExprId, OnnxError> {
        let t =
            Tensor::full(TensorType::scalar(dtype), value).map_err(|e| self.err(e.to_string()))?;
        Ok(self.constant(t))
    }

    /// A call of the Relay op `op`: built, type-checked, and folded when its arguments are
    /// constants.
    pub fn call(&mut self, op: &str, args: &[ExprId], attrs: Attrs) -> Result<ExprId, OnnxError> {
        let ir = |source| OnnxError::Ir {
            node: self.at.clone(),
            error: source,
        };
        let id = self.g.b.call(op, args, attrs).map_err(ir)?;
        let (def, call) = self
            .g
            .b
            .get(id)
            .and_then(|e| e.as_op_call())
            .ok_or_else(|| self.err(format!("{op} did not build a call")))?;
        let arg_types = call
            .args
            .iter()
            .map(|&a| self.g.b.ty(a).cloned())
            .collect::<Option<Vec<Type>>>()
            .ok_or_else(|| self.err(format!("an argument of {op} has no type")))?;
        let ty = def
            .infer_type(&arg_types, &call.attrs)
            .map_err(|source| OnnxError::Type {
                node: self.at.clone(),
                error: source,
            })?;
        self.g.b.set_ty(id, ty);
        match super::fold::fold_call(&mut self.g.b, id) {
            Ok(folded) => Ok(folded.unwrap_or(id)),
            Err(e) => Err(self.err(format!("evaluating {op} on constants failed: {e}"))),
        }
    }

    /// A tuple of values.
    pub fn tuple(&mut self, fields: &[ExprId]) -> Result<ExprId, OnnxError> {
        let types = fields
            .iter()
            .map(|&f| self.g.b.ty(f).cloned())
            .collect::<Option<Vec<Type>>>()
            .ok_or_else(|| self.err("a tuple field has no type"))?;
        let id = self.g.b.tuple(fields).map_err(|source| OnnxError::Ir {
            node: self.at.clone(),
            error: source,
        })?;
        self.g.b.set_ty(id, Type::Tuple(types));
        Ok(id)
    }

    /// Field `index` of the tuple `tuple` (a constant field of a constant tuple directly).
    pub fn tuple_get_item(&mut self, tuple: ExprId, index: usize) -> Result<ExprId, OnnxError> {
        if let Some(byoc_ir::Expr::Tuple(fields)) = self.g.b.get(tuple) {
            if let Some(&f) = fields.get(index) {
                return Ok(f);
            }
        }
        let field_ty = match self.g.b.ty(tuple) {
            Some(Type::Tuple(fields)) => fields.get(index).cloned(),
            _ => None,
        }
        .ok_or_else(|| self.err(format!("no field {index} in a tuple result")))?;
        let id = self
            .g
            .b
            .tuple_get_item(tuple, index)
            .map_err(|source| OnnxError::Ir {
                node: self.at.clone(),
                error: source,
            })?;
        self.g.b.set_ty(id, field_ty);
        Ok(id)
    }

    fn attribute(&self, name: &str) -> Option<&'a AttributeProto> {
        self.node.attribute.iter().find(|a| a.name == name)
    }

    /// True when the node has attribute `name`.
    pub fn has_attr(&self, name: &str) -> bool {
        self.attribute(name).is_some()
    }

    fn typed_attr(&self, name: &str, want: i32) -> Result<Option<&'a AttributeProto>, OnnxError> {
        match self.attribute(name) {
            None => Ok(None),
            Some(a) if a.r#type == want => Ok(Some(a)),
            Some(a) => Err(OnnxError::AttributeType {
                node: self.at.clone(),
                attr: name.to_string(),
                expected: attribute_type::name(want).to_string(),
                got: attribute_type::name(a.r#type).to_string(),
            }),
        }
    }

    /// An INT attribute, if present.
    pub fn attr_int(&self, name: &str) -> Result<Option<i64>, OnnxError> {
        Ok(self.typed_attr(name, attribute_type::INT)?.map(|a| a.i))
    }

    /// An INT attribute or its default.
    pub fn int_or(&self, name: &str, default: i64) -> Result<i64, OnnxError> {
        Ok(self.attr_int(name)?.unwrap_or(default))
    }

    /// An INT attribute that the operator spec defines as a flag (0 or 1: `keepdims`,
    /// `ceil_mode`, `transB`, ...), or its default; any other value is refused naming the node
    /// and the attribute, never read as "not zero".
    pub fn flag_or(&self, name: &str, default: bool) -> Result<bool, OnnxError> {
        match self.attr_int(name)? {
            None => Ok(default),
            Some(0) => Ok(false),
            Some(1) => Ok(true),
            Some(v) => Err(self.err(format!(
                "attribute '{name}' is {v}, but it is a flag: 0 or 1"
            ))),
        }
    }

    /// A FLOAT attribute or its default; NaN and infinities are refused.
    pub fn float_or(&self, name: &str, default: f64) -> Result<f64, OnnxError> {
        match self.typed_attr(name, attribute_type::FLOAT)? {
            None => Ok(default),
            Some(a) => self.finite(name, &[a.f]).map(|v| v[0]),
        }
    }

    /// An INTS attribute, if present.
    pub fn attr_ints(&self, name: &str) -> Result<Option<Vec<i64>>, OnnxError> {
        Ok(self
            .typed_attr(name, attribute_type::INTS)?
            .map(|a| a.ints.clone()))
    }

    /// A FLOATS attribute, if present; NaN and infinities are refused.
    pub fn attr_floats(&self, name: &str) -> Result<Option<Vec<f64>>, OnnxError> {
        self.typed_attr(name, attribute_type::FLOATS)?
            .map(|a| self.finite(name, &a.floats))
            .transpose()
    }

    /// `values` of attribute `name` widened, or an error naming the first non-finite one.
    fn finite(&self, name: &str, values: &[f32]) -> Result<Vec<f64>, OnnxError> {
        match values.iter().find(|v| !v.is_finite()) {
            Some(v) => Err(self.err(format!("attribute '{name}' must be finite, got {v}"))),
            None => Ok(values.iter().map(|&f| f64::from(f)).collect()),
        }
    }

    /// A STRING attribute or its default.
    pub fn str_or(&self, name: &str, default: &str) -> Result<String, OnnxError> {
        Ok(self.typed_attr(name, attribute_type::STRING)?.map_or_else(
            || default.to_string(),
            |a| String::from_utf8_lossy(&a.s).into_owned(),
        ))
    }

    /// A STRINGS attribute, if present.
    pub fn attr_strings(&self, name: &str) -> Result<Option<Vec<String>>, OnnxError> {
        Ok(self.typed_attr(name, attribute_type::STRINGS)?.map(|a| {
            a.strings
                .iter()
                .map(|s| String::from_utf8_lossy(s).into_owned())
                .collect()
        }))
    }

    /// A TENSOR attribute, converted, if present.
    pub fn attr_tensor(&self, name: &str) -> Result<Option<Tensor>, OnnxError> {
        match self.typed_attr(name, attribute_type::TENSOR)? {
            None => Ok(None),
            Some(a) => match &a.t {
                Some(t) => tensor_from_proto(t, self.g.base_dir.as_deref()).map(Some),
                None => Err(self.err(format!("attribute '{name}' holds no tensor"))),
            },
        }
    }

    /// A dimension as an attribute integer; an error when it does not fit an `i64`.
    pub fn dim_i64(&self, d: usize) -> Result<i64, OnnxError> {
        byoc_ir::dims::dim_i64(d).ok_or_else(|| self.err(format!("dimension {d} is over 2^63-1")))
    }

    /// A shape as attribute integers (see [`NodeCtx::dim_i64`]).
    pub fn dims_i64(&self, shape: &[usize]) -> Result<Vec<i64>, OnnxError> {
        shape.iter().map(|&d| self.dim_i64(d)).collect()
    }

    /// Normalizes a possibly negative `axis` into `0..rank`.
    pub fn axis(&self, axis: i64, rank: usize) -> Result<usize, OnnxError> {
        byoc_ir::dims::axis(axis, rank).ok_or_else(|| {
            self.err(format!(
                "axis {axis} is out of range for a tensor of rank {rank}"
            ))
        })
    }
}

/// The elements of an integer tensor as `i64`.
pub(crate) fn tensor_ints(t: &Tensor) -> Option<Vec<i64>> {
    let ints = |v: Vec<f64>| v.into_iter().map(|x| x as i64).collect();
    match t.dtype() {
        byoc_ir::DType::Int64 => t.as_slice::<i64>().ok().map(<[i64]>::to_vec),
        d if d.is_int() || d == byoc_ir::DType::Bool => Some(ints(t.to_f64_vec())),
        _ => None,
    }
}
