//! What crosses the plugin boundary: partitioned functions and single op calls.
//!
//! A [`PartitionedFunction`] is one external function (`Compiler="<target>"`) of a
//! partitioned module, with its symbol. It crosses the ABI in one of two [`FunctionForm`]s and
//! is parsed and type-checked on the receiving side: the function record (ABI 1.2: the Relay
//! text of a module holding just that function with its constants as placeholders, and the
//! constants as raw bytes, see [`super::record`]) or, for plugins built against ABI 1.0 or 1.1, the
//! Relay text with every constant printed inline. [`PartitionedFunction::from_bytes`] tells
//! the two apart by the record's magic, so a reader accepts both.
//! An op call that a predicate or pattern check is asked about crosses the same way, as a
//! one-call function `def @main(%a0: T0, ...) { op(%a0, ..., attrs) }` ([`call_to_text`],
//! [`OwnedCall::parse`]).

use std::sync::Arc;

use thiserror::Error;

use super::placeholders::{lift_constants, restore_constants, PlaceholderError};
use super::record::{is_record, read_record, write_record, RecordError};
use byoc_ir::op::Op;
use byoc_ir::target::CallView;
use byoc_ir::tensor::Tensor;
use byoc_ir::text::{parse_module, print_module, ParseError};
use byoc_ir::{infer_types, TypeInferError};
use byoc_ir::{Attrs, Callee, Expr, Function, FunctionBuilder, IrError, Module, Type};

/// Errors of reading a function or call that crossed the boundary as text.
#[derive(Debug, Error, Clone, PartialEq)]
#[non_exhaustive]
pub enum CrossingError {
    /// The text does not parse.
    #[error("malformed function text: {0}")]
    Parse(#[from] ParseError),
    /// The text holds no function or several.
    #[error("expected exactly one function in the text, found {0}")]
    FunctionCount(usize),
    /// The function does not type-check.
    #[error("{0}")]
    Types(#[from] TypeInferError),
    /// A call text whose body is not one op call over the parameters.
    #[error("call text: the body is not a single op call")]
    NotACall,
    /// The function could not be built.
    #[error(transparent)]
    Ir(#[from] IrError),
    /// The function record is malformed.
    #[error(transparent)]
    Record(#[from] RecordError),
    /// The record's constants do not fit its placeholders.
    #[error("function record: {0}")]
    Placeholder(#[from] PlaceholderError),
    /// Function text that is not UTF-8.
    #[error("function text is not UTF-8 ({0})")]
    NotUtf8(String),
}

/// The form a [`PartitionedFunction`] crosses the boundary in (see the module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FunctionForm {
    /// Relay text with every constant inline: what plugins of ABI 1.0 and 1.1 read and write.
    Text,
    /// The binary function record: what plugins of ABI 1.2 and later read and write.
    Record,
}

/// One partition: the external function and its symbol (`global_symbol`, e.g. `vendor_0`).
#[derive(Clone, Debug)]
pub struct PartitionedFunction {
    /// The symbol: the global function's name.
    pub symbol: String,
    /// The typed function, with its attributes (`Compiler`, `global_symbol`, `Primitive`).
    pub function: Function,
}

impl PartitionedFunction {
    /// The target that the function is for (its `Compiler` attribute), if any.
    pub fn target(&self) -> Option<&str> {
        byoc_ir::partition::target_of(&self.function)
    }

    /// The module holding just this function.
    fn module(&self, function: Function) -> Module {
        let mut m = Module::new();
        m.insert(self.symbol.clone(), function);
        m
    }

    /// The Relay text of a module holding just this function.
    pub fn to_text(&self) -> String {
        print_module(&self.module(self.function.clone()))
    }

    /// Reads the text of [`PartitionedFunction::to_text`] and infers its types.
    pub fn from_text(text: &str) -> Result<Self, CrossingError> {
        Self::from_module(parse_module(text)?, None)
    }

    /// The function record of this function (see [`super::record`]).
    pub fn to_record(&self) -> Result<Vec<u8>, CrossingError> {
        let mut constants = Vec::new();
        let lifted = lift_constants(&self.function, &mut constants)?;
        Ok(write_record(
            &print_module(&self.module(lifted)),
            &constants,
        ))
    }

    /// Reads a function record of [`PartitionedFunction::to_record`] and infers its types.
    pub fn from_record(bytes: &[u8]) -> Result<Self, CrossingError> {
        let (text, constants) = read_record(bytes)?;
        Self::from_module(parse_module(text)?, Some(&constants))
    }

    /// The function in `form`.
    pub fn to_bytes(&self, form: FunctionForm) -> Result<Vec<u8>, CrossingError> {
        match form {
            FunctionForm::Text => Ok(self.to_text().into_bytes()),
            FunctionForm::Record => self.to_record(),
        }
    }

    /// Reads a function in either form, and says which one it was.
    pub fn from_bytes(bytes: &[u8]) -> Result<(Self, FunctionForm), CrossingError> {
        if is_record(bytes) {
            return Ok((Self::from_record(bytes)?, FunctionForm::Record));
        }
        let text = std::str::from_utf8(bytes).map_err(|e| CrossingError::NotUtf8(e.to_string()))?;
        Ok((Self::from_text(text)?, FunctionForm::Text))
    }

    /// The single function of `m`, typed; for a record, its placeholders replaced by
    /// `constants`.
    fn from_module(
        mut m: Module,
        constants: Option<&[Arc<Tensor>]>,
    ) -> Result<Self, CrossingError> {
        if m.len() != 1 {
            return Err(CrossingError::FunctionCount(m.len()));
        }
        let symbol = m.names().remove(0);
        let function = m.remove(&symbol).ok_or(CrossingError::FunctionCount(0))?;
        let restored = match constants {
            Some(constants) => restore_constants(&function, constants)?,
            None => function,
        };
        let mut m = Module::new();
        m.insert(symbol.clone(), restored);
        infer_types(&mut m)?;
        let function = m.remove(&symbol).ok_or(CrossingError::FunctionCount(0))?;
        Ok(PartitionedFunction { symbol, function })
    }
}

/// The text of a one-call function for `call` (see the module docs).
pub fn call_to_text(call: &CallView<'_>) -> Result<String, CrossingError> {
    let mut b = FunctionBuilder::new();
    let params: Vec<_> = call
        .arg_types
        .iter()
        .enumerate()
        .map(|(i, t)| b.param(format!("a{i}"), t.clone()))
        .collect();
    let body = b.call_op(call.op, &params, call.attrs.clone())?;
    let f = b.finish(params, body, Attrs::new())?;
    Ok(print_module(&Module::from_main(f)))
}

/// An op call read back from [`call_to_text`]: owns what a [`CallView`] borrows.
#[derive(Clone, Debug)]
pub struct OwnedCall {
    /// The op.
    pub op: Op,
    /// Its normalized attributes.
    pub attrs: Attrs,
    /// Argument types.
    pub arg_types: Vec<Type>,
    /// The inferred result type.
    pub result_type: Type,
}

impl OwnedCall {
    /// Parses and types a call text.
    pub fn parse(text: &str) -> Result<Self, CrossingError> {
        let mut m = parse_module(text)?;
        infer_types(&mut m)?;
        let f = m
            .main()
            .map_err(|_| CrossingError::FunctionCount(m.len()))?;
        let Expr::Call(call) = f.expr(f.body) else {
            return Err(CrossingError::NotACall);
        };
        let Callee::Op(op) = &call.callee else {
            return Err(CrossingError::NotACall);
        };
        let ty = |id| f.ty(id).cloned().ok_or(CrossingError::NotACall);
        Ok(OwnedCall {
            op: op.clone(),
            attrs: call.attrs.clone(),
            arg_types: call.args.iter().map(|&a| ty(a)).collect::<Result<_, _>>()?,
            result_type: ty(f.body)?,
        })
    }

    /// The call as predicates see it.
    pub fn view(&self) -> CallView<'_> {
        CallView {
            op: &self.op,
            attrs: &self.attrs,
            arg_types: &self.arg_types,
            result_type: &self.result_type,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use byoc_ir::op::OpRegistry;
    use byoc_ir::{AttrValue, DType};

    #[test]
    fn call_text_round_trips() {
        let clip = OpRegistry::lookup("clip").unwrap();
        let attrs = clip
            .normalize_attrs(
                Attrs::new()
                    .with("a_min", AttrValue::Float(0.0))
                    .with("a_max", AttrValue::Float(6.0)),
            )
            .unwrap();
        let t = Type::tensor([2, 3], DType::Float32);
        let view = CallView {
            op: &clip,
            attrs: &attrs,
            arg_types: std::slice::from_ref(&t),
            result_type: &t,
        };
        let back = OwnedCall::parse(&call_to_text(&view).unwrap()).unwrap();
        assert_eq!(back.op.name(), "clip");
        assert_eq!(back.attrs, attrs);
        assert_eq!(back.arg_types, vec![t.clone()]);
        assert_eq!(back.result_type, t);
    }

    #[test]
    fn partitioned_function_round_trips_and_bad_text_is_an_error() {
        let text = "def @acc_0(%x: Tensor[(2), float32], Compiler=\"acc\", global_symbol=\"acc_0\", Primitive=1) {\n  nn.relu(%x)\n}\n";
        let f = PartitionedFunction::from_text(text).unwrap();
        assert_eq!(f.symbol, "acc_0");
        assert_eq!(f.target(), Some("acc"));
        let again = PartitionedFunction::from_text(&f.to_text()).unwrap();
        assert!(byoc_ir::structural_eq_function(&f.function, &again.function).is_ok());
        assert!(matches!(
            PartitionedFunction::from_text("def @a("),
            Err(CrossingError::Parse(_))
        ));
    }
}
