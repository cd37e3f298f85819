//! What an op is: [`OpDef`] (metadata) plus [`OpImpl`] (type relation and host kernel).

use std::fmt;

use thiserror::Error;

use super::schema::AttrDef;
use crate::ir::{AttrValue, Attrs, IrError, TensorType, Type};
#[cfg(feature = "executor")]
use crate::tensor::{TensorMut, TensorRef};

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

#[cfg(feature = "executor")]
/// A host-kernel error: creating or running a kernel failed.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
#[error("{op}: {message}")]
pub struct KernelError {
    /// The op.
    pub op: String,
    /// What is wrong.
    pub message: String,
}

#[cfg(feature = "executor")]
impl KernelError {
    /// A kernel error of `op`.
    pub fn new(op: impl Into<String>, message: impl Into<String>) -> Self {
        KernelError {
            op: op.into(),
            message: message.into(),
        }
    }
}

#[cfg(feature = "executor")]
impl From<TypeError> for KernelError {
    fn from(e: TypeError) -> Self {
        KernelError {
            op: e.op,
            message: e.message,
        }
    }
}

/// Attribute accessors shared by type relations and kernel builders. Attributes are normalized
/// (every schema attribute present, kinds checked), so these fail only when an op's code asks
/// for an attribute its schema lacks, or for a kind the schema does not promise.
macro_rules! attr_accessors {
    () => {
        /// The attribute's value (`None` if absent).
        pub fn attr(&self, name: &str) -> &AttrValue {
            static NONE: AttrValue = AttrValue::None;
            self.attrs.get(name).unwrap_or(&NONE)
        }

        /// An integer attribute.
        pub fn int(&self, name: &str) -> Result<i64, TypeError> {
            self.attr(name)
                .as_int()
                .ok_or_else(|| self.bad_attr(name, "an int"))
        }

        /// An integer attribute that may be `None`.
        pub fn opt_int(&self, name: &str) -> Result<Option<i64>, TypeError> {
            match self.attr(name) {
                AttrValue::None => Ok(None),
                v => v
                    .as_int()
                    .map(Some)
                    .ok_or_else(|| self.bad_attr(name, "an int")),
            }
        }

        /// A float attribute.
        pub fn float(&self, name: &str) -> Result<f64, TypeError> {
            self.attr(name)
                .as_f64()
                .ok_or_else(|| self.bad_attr(name, "a float"))
        }

        /// A boolean attribute.
        pub fn bool(&self, name: &str) -> Result<bool, TypeError> {
            self.attr(name)
                .as_bool()
                .ok_or_else(|| self.bad_attr(name, "a bool"))
        }

        /// A string attribute.
        pub fn str(&self, name: &str) -> Result<&str, TypeError> {
            self.attr(name)
                .as_str()
                .ok_or_else(|| self.bad_attr(name, "a string"))
        }

        /// A list-of-ints attribute.
        pub fn ints(&self, name: &str) -> Result<Vec<i64>, TypeError> {
            self.attr(name)
                .as_int_list()
                .ok_or_else(|| self.bad_attr(name, "a list of ints"))
        }

        /// A list-of-floats attribute (integers converted).
        pub fn floats(&self, name: &str) -> Result<Vec<f64>, TypeError> {
            self.attr(name)
                .as_list()
                .and_then(|l| l.iter().map(AttrValue::as_f64).collect())
                .ok_or_else(|| self.bad_attr(name, "a list of floats"))
        }

        /// A list-of-ints attribute that may be `None`.
        pub fn opt_ints(&self, name: &str) -> Result<Option<Vec<i64>>, TypeError> {
            match self.attr(name) {
                AttrValue::None => Ok(None),
                v => v
                    .as_int_list()
                    .map(Some)
                    .ok_or_else(|| self.bad_attr(name, "a list of ints")),
            }
        }

        /// A type error of this op.
        pub fn err(&self, message: impl Into<String>) -> TypeError {
            TypeError::new(self.op, message)
        }

        fn bad_attr(&self, name: &str, kind: &str) -> TypeError {
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
    attr_accessors!();

    /// Argument `i` as a tensor type.
    pub fn tensor(&self, i: usize) -> Result<&'a TensorType, TypeError> {
        match self.args.get(i) {
            Some(Type::Tensor(t)) => Ok(t),
            Some(other) => Err(self.err(format!("argument {i} must be a tensor, got {other}"))),
            None => Err(self.err(format!("missing argument {i}"))),
        }
    }
}

#[cfg(feature = "executor")]
/// What a kernel builder sees: the op, its attributes, and the types of the flattened inputs
/// (tuple arguments expanded in order) and outputs.
pub struct KernelSpec<'a> {
    /// The op name.
    pub op: &'a str,
    /// Normalized attributes.
    pub attrs: &'a Attrs,
    /// Input tensor types, tuples flattened.
    pub inputs: &'a [TensorType],
    /// Output tensor types, tuples flattened.
    pub outputs: &'a [TensorType],
}

#[cfg(feature = "executor")]
impl<'a> KernelSpec<'a> {
    attr_accessors!();

    /// A "no host kernel for this dtype" error.
    pub fn unsupported(&self, what: impl fmt::Display) -> KernelError {
        KernelError::new(self.op, format!("host kernel does not support {what}"))
    }
}

#[cfg(feature = "executor")]
/// A host kernel, built once per call site and run many times.
pub trait HostKernel: Send + Sync {
    /// Computes `outputs` from `inputs` (both flattened, shapes as in the [`KernelSpec`]).
    /// `threads` is the executor's thread budget; the executor runs kernels inside a rayon pool
    /// of that size.
    fn run(
        &self,
        inputs: &[TensorRef<'_>],
        outputs: &mut [TensorMut<'_>],
        threads: usize,
    ) -> Result<(), KernelError>;

    /// Like [`HostKernel::run`], then `epilogue` over output 0. Kernels that produce their
    /// output in blocks (conv2d) apply it to each block as soon as the block is final, while it
    /// is in cache; the default applies it once to the whole output.
    fn run_with_epilogue(
        &self,
        inputs: &[TensorRef<'_>],
        outputs: &mut [TensorMut<'_>],
        threads: usize,
        epilogue: &dyn OutputEpilogue,
    ) -> Result<(), KernelError> {
        self.run(inputs, outputs, threads)?;
        apply_to_output(outputs, epilogue);
        Ok(())
    }
}

#[cfg(feature = "executor")]
/// An elementwise function of a kernel's output 0, applied in place to blocks of it by
/// [`HostKernel::run_with_epilogue`]: the fused elementwise consumers of a conv2d or dense.
pub trait OutputEpilogue: Sync {
    /// Applies the epilogue to output elements `offset..offset + n`, whose bytes (n elements of
    /// the output's dtype) are `block`. `block` may be a scratch copy of those elements that
    /// the kernel moves into the output afterwards.
    fn apply(&self, offset: usize, block: &mut [u8]);
}

#[cfg(feature = "executor")]
/// Applies `epilogue` to the whole of output 0 (kernels without a blockwise hook).
pub(crate) fn apply_to_output(outputs: &mut [TensorMut<'_>], epilogue: &dyn OutputEpilogue) {
    if let Some(out) = outputs.first_mut() {
        epilogue.apply(0, out.bytes);
    }
}

/// The behaviour of an op: its type relation and its host kernel.
pub trait OpImpl: Send + Sync {
    /// Infers the result type from the argument types and attributes.
    fn infer_type(&self, ctx: &TypeCtx<'_>) -> Result<Type, TypeError>;

    /// Builds the host reference kernel for one call site.
    #[cfg(feature = "executor")]
    fn host_kernel(&self, spec: &KernelSpec<'_>) -> Result<Box<dyn HostKernel>, KernelError> {
        Err(KernelError::new(spec.op, "has no host kernel"))
    }
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
    /// Type relation and host kernel.
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

    /// Builds the host kernel for a call site.
    #[cfg(feature = "executor")]
    pub fn host_kernel(
        &self,
        attrs: &Attrs,
        inputs: &[TensorType],
        outputs: &[TensorType],
    ) -> Result<Box<dyn HostKernel>, KernelError> {
        self.imp.host_kernel(&KernelSpec {
            op: &self.name,
            attrs,
            inputs,
            outputs,
        })
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
