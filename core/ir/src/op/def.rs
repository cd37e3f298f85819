//! What an op is: [`OpDef`] (metadata) plus [`OpImpl`] (type relation and host kernel).

use std::any::Any;
use std::fmt;

use thiserror::Error;

use super::schema::AttrDef;
use crate::{AttrValue, Attrs, IrError, TensorType, Type};

/// How many arguments an op takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Arity {
    /// Exactly this many.
    Exact(usize),
    /// Between these, inclusive.
    Range(usize, usize),
    /// At least this many.
    AtLeast(usize),
}

impl Arity {
    /// True when `n` arguments are accepted.
    pub fn accepts(self, n: usize) -> bool {
        match self {
            Arity::Exact(k) => n == k,
            Arity::Range(lo, hi) => (lo..=hi).contains(&n),
            Arity::AtLeast(lo) => n >= lo,
        }
    }
}

impl fmt::Display for Arity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Arity::Exact(k) => write!(f, "{k}"),
            Arity::Range(lo, hi) => write!(f, "{lo} to {hi}"),
            Arity::AtLeast(lo) => write!(f, "at least {lo}"),
        }
    }
}

/// TVM's op pattern kinds, which say how an op fuses.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum OpPattern {
    /// Output element i depends only on input element i.
    ElemWise,
    /// Elementwise with numpy broadcasting.
    Broadcast,
    /// Each output element depends on one input element, in any arrangement (reshape, ...).
    Injective,
    /// A commutative reduction.
    CommReduce,
    /// Complex op whose output can take elementwise ops fused after it (conv2d, dense).
    OutEWiseFusable,
    /// A tuple-producing op.
    Tuple,
    /// Cannot be fused.
    Opaque,
}

impl fmt::Display for OpPattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            OpPattern::ElemWise => "elemwise",
            OpPattern::Broadcast => "broadcast",
            OpPattern::Injective => "injective",
            OpPattern::CommReduce => "comm-reduce",
            OpPattern::OutEWiseFusable => "out-elemwise-fusable",
            OpPattern::Tuple => "tuple",
            OpPattern::Opaque => "opaque",
        })
    }
}

/// A type-relation error: the op and what is wrong, e.g.
/// `nn.conv2d: input has 3 channels but weight expects 4 (groups=1)`.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
#[error("{op}: {message}")]
pub struct TypeError {
    /// The op (or construct) that rejected its inputs.
    pub op: String,
    /// What is wrong.
    pub message: String,
}

impl TypeError {
    /// A type error of `op`.
    pub fn new(op: impl Into<String>, message: impl Into<String>) -> Self {
        TypeError {
            op: op.into(),
            message: message.into(),
        }
    }
}

/// Attribute accessors shared by type relations and kernel builders (`TypeCtx` here, the
/// kernels' `KernelSpec`): a struct with `op: &str` and `attrs: &Attrs` fields gets them.
/// Attributes are normalized (every schema attribute present, kinds checked), so these fail
/// only when an op's code asks for an attribute its schema lacks, or for a kind the schema does
/// not promise.
#[doc(hidden)]
#[macro_export]
macro_rules! attr_accessors {
    () => {
        /// The attribute's value (`None` if absent).
        pub fn attr(&self, name: &str) -> &$crate::AttrValue {
            static NONE: $crate::AttrValue = $crate::AttrValue::None;
            self.attrs.get(name).unwrap_or(&NONE)
        }

        /// An integer attribute.
        pub fn int(&self, name: &str) -> Result<i64, $crate::op::TypeError> {
            self.attr(name)
                .as_int()
                .ok_or_else(|| self.bad_attr(name, "an int"))
        }

        /// An integer attribute that may be `None`.
        pub fn opt_int(&self, name: &str) -> Result<Option<i64>, $crate::op::TypeError> {
            match self.attr(name) {
                $crate::AttrValue::None => Ok(None),
                v => v
                    .as_int()
                    .map(Some)
                    .ok_or_else(|| self.bad_attr(name, "an int")),
            }
        }

        /// A float attribute.
        pub fn float(&self, name: &str) -> Result<f64, $crate::op::TypeError> {
            self.attr(name)
                .as_f64()
                .ok_or_else(|| self.bad_attr(name, "a float"))
        }

        /// A boolean attribute.
        pub fn bool(&self, name: &str) -> Result<bool, $crate::op::TypeError> {
            self.attr(name)
                .as_bool()
                .ok_or_else(|| self.bad_attr(name, "a bool"))
        }

        /// A string attribute.
        pub fn str(&self, name: &str) -> Result<&str, $crate::op::TypeError> {
            self.attr(name)
                .as_str()
                .ok_or_else(|| self.bad_attr(name, "a string"))
        }

        /// A list-of-ints attribute.
        pub fn ints(&self, name: &str) -> Result<Vec<i64>, $crate::op::TypeError> {
            self.attr(name)
                .as_int_list()
                .ok_or_else(|| self.bad_attr(name, "a list of ints"))
        }

        /// A list-of-floats attribute (integers converted).
        pub fn floats(&self, name: &str) -> Result<Vec<f64>, $crate::op::TypeError> {
            self.attr(name)
                .as_list()
                .and_then(|l| l.iter().map($crate::AttrValue::as_f64).collect())
                .ok_or_else(|| self.bad_attr(name, "a list of floats"))
        }

        /// A list-of-ints attribute that may be `None`.
        pub fn opt_ints(&self, name: &str) -> Result<Option<Vec<i64>>, $crate::op::TypeError> {
            match self.attr(name) {
                $crate::AttrValue::None => Ok(None),
                v => v
                    .as_int_list()
                    .map(Some)
                    .ok_or_else(|| self.bad_attr(name, "a list of ints")),
            }
        }

        /// A type error of this op.
        pub fn err(&self, message: impl Into<String>) -> $crate::op::TypeError {
            $crate::op::TypeError::new(self.op, message)
        }

        fn bad_attr(&self, name: &str, kind: &str) -> $crate::op::TypeError {
            self.err(format!(
                "attribute '{name}' must be {kind}, got {}",
                self.attr(name)
            ))
        }
    };
}

/// What a type relation sees: the op, its normalized attributes and its argument types.
pub struct TypeCtx<'a> {
    /// The op name.
    pub op: &'a str,
    /// Normalized attributes.
    pub attrs: &'a Attrs,
    /// Argument types.
    pub args: &'a [Type],
}

impl<'a> TypeCtx<'a> {
    crate::attr_accessors!();

    /// Argument `i` as a tensor type.
    pub fn tensor(&self, i: usize) -> Result<&'a TensorType, TypeError> {
        match self.args.get(i) {
            Some(Type::Tensor(t)) => Ok(t),
            Some(other) => Err(self.err(format!("argument {i} must be a tensor, got {other}"))),
            None => Err(self.err(format!("missing argument {i}"))),
        }
    }
}

/// The behaviour of an op the IR needs: its type relation. An op's host kernel is built by the
/// kernels, which find it by the op (`Any` lets them recognize the built-in implementations).
pub trait OpImpl: Any + Send + Sync {
    /// Infers the result type from the argument types and attributes.
    fn infer_type(&self, ctx: &TypeCtx<'_>) -> Result<Type, TypeError>;
}

/// A registered op.
pub struct OpDef {
    /// The Relay name (`nn.conv2d`).
    pub name: String,
    /// One line saying what it computes.
    pub summary: &'static str,
    /// Number of arguments.
    pub arity: Arity,
    /// Attribute schema with Relay's defaults, in Relay's declaration order.
    pub attrs: Vec<AttrDef>,
    /// Fusion pattern kind.
    pub pattern: OpPattern,
    /// True when the output is the first input's bytes unchanged under another shape (reshape,
    /// squeeze, ...), so an executor may alias the buffers instead of running the kernel.
    pub is_view: bool,
    /// Type relation.
    pub imp: Box<dyn OpImpl>,
}

impl OpDef {
    /// A new op definition.
    pub fn new(
        name: impl Into<String>,
        summary: &'static str,
        arity: Arity,
        pattern: OpPattern,
        imp: impl OpImpl + 'static,
    ) -> Self {
        OpDef {
            name: name.into(),
            summary,
            arity,
            attrs: Vec::new(),
            pattern,
            is_view: false,
            imp: Box::new(imp),
        }
    }

    /// Sets the attribute schema.
    pub fn with_attrs(mut self, attrs: Vec<AttrDef>) -> Self {
        self.attrs = attrs;
        self
    }

    /// Marks the op as a view of its first input (see [`OpDef::is_view`]).
    pub fn view(mut self) -> Self {
        self.is_view = true;
        self
    }

    /// Checks the argument count.
    pub fn check_arity(&self, n: usize) -> Result<(), IrError> {
        if self.arity.accepts(n) {
            Ok(())
        } else {
            Err(IrError::Arity {
                op: self.name.clone(),
                expected: self.arity.to_string(),
                got: n,
            })
        }
    }

    /// Validates and completes call attributes (see the schema module).
    pub fn normalize_attrs(&self, attrs: Attrs) -> Result<Attrs, IrError> {
        super::schema::normalize(&self.name, &self.attrs, attrs)
    }

    /// The schema default of attribute `name`, if the op has it.
    pub fn default_attr(&self, name: &str) -> Option<&AttrValue> {
        self.attrs
            .iter()
            .find(|d| d.name == name)
            .map(|d| &d.default)
    }

    /// Runs the type relation; a result over the memory budget ([`crate::memory`]) is a type
    /// error of the op.
    pub fn infer_type(&self, args: &[Type], attrs: &Attrs) -> Result<Type, TypeError> {
        let ty = self.imp.infer_type(&TypeCtx {
            op: &self.name,
            attrs,
            args,
        })?;
        crate::memory::check_type(&ty)
            .map_err(|e| TypeError::new(&self.name, format!("result {e}")))?;
        Ok(ty)
    }
}

impl fmt::Debug for OpDef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OpDef")
            .field("name", &self.name)
            .field("arity", &self.arity)
            .field("pattern", &self.pattern)
            .finish_non_exhaustive()
    }
}
