//! C code generation for csource partitions.
//!
//! [`CSourceCodegen::generate`] takes one partitioned function (a global function with
//! `Compiler="csource"` and a `global_symbol`, as PartitionGraph makes it; composites inside
//! are calls of function literals with a `Composite` attribute) and returns a
//! [`GeneratedSource`]: one self-contained C file with an inner function on raw pointers and
//! an exported DLTensor-style entry taking inputs then outputs (destination-passing style, as
//! TVM's BYOC C codegen does with `<symbol>_` and its wrapper).
//!
//! The pipeline: type inference when types are missing → `lower` (a visitor producing
//! kernel steps, fusing conv2d/dense epilogues) → `memory` (liveness-based arena offsets,
//! outputs written in place) → `emit` (the C text). Generation is deterministic: the same
//! function and options give byte-identical C.

mod emit;
mod error;
mod kernel;
mod lower;
mod memory;
mod ops;
mod program;
mod writer;

use std::collections::BTreeMap;
use std::sync::Arc;

use byoc_sdk::ir::infer_function;
use byoc_sdk::ir::partition::{symbol_of, target_of};
use byoc_sdk::ir::target::{CallView, RejectReason};
use byoc_sdk::ir::Tensor;
use byoc_sdk::ir::{Function, TensorType, Type};

pub use error::CodegenError;

use crate::support::TARGET;

/// Options of the generator.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CodegenOptions {
    /// Embed constants as `static const float` arrays in the C file (TVM's `bind_constants`);
    /// when false they become extra entry arguments after the outputs, carried beside the
    /// compiled module in [`GeneratedSource::constants`].
    pub embed_constants: bool,
    /// Fuse conv2d/dense with following bias_add and activations into one loop nest (always
    /// true for what composites were made for; turning it off generates one loop nest per op,
    /// which is useful to compare against).
    pub fuse: bool,
}

impl Default for CodegenOptions {
    fn default() -> Self {
        CodegenOptions {
            embed_constants: true,
            fuse: true,
        }
    }
}

/// The generated C of one partition and what its entry point expects.
#[derive(Clone, Debug)]
pub struct GeneratedSource {
    /// The exported entry symbol (the partition's `global_symbol`).
    pub symbol: String,
    /// The C file.
    pub code: String,
    /// Input tensor types, in entry-argument order.
    pub inputs: Vec<TensorType>,
    /// Output tensor types, in entry-argument order after the inputs.
    pub outputs: Vec<TensorType>,
    /// Constants passed as entry arguments after the outputs (empty when embedded).
    pub constants: Vec<Arc<Tensor>>,
    /// Bytes of intermediate storage each call allocates.
    pub arena_bytes: usize,
}

/// The csource code generator.
#[derive(Clone, Debug, Default)]
pub struct CSourceCodegen {
    options: CodegenOptions,
}

/// True when `s` is a C identifier.
pub(crate) fn is_c_identifier(s: &str) -> bool {
    let mut chars = s.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

impl CSourceCodegen {
    /// A generator with these options.
    pub fn new(options: CodegenOptions) -> Self {
        CSourceCodegen { options }
    }

    /// Generates the C file of the partition `f`.
    pub fn generate(&self, f: &Function) -> Result<GeneratedSource, CodegenError> {
        let symbol = symbol_of(f).ok_or(CodegenError::MissingSymbol)?.to_string();
        if !is_c_identifier(&symbol) {
            return Err(CodegenError::BadSymbol { symbol });
        }
        match target_of(f) {
            Some(TARGET) => {}
            other => {
                return Err(CodegenError::WrongCompiler {
                    partition: symbol,
                    found: other.map_or("none".to_string(), |c| format!("\"{c}\"")),
                })
            }
        }
        let typed;
        let f = if f.live_ids().into_iter().all(|id| f.ty(id).is_some()) {
            f
        } else {
            let mut copy = f.clone();
            infer_function(&symbol, &mut copy, &BTreeMap::new()).map_err(|source| {
                CodegenError::Type {
                    partition: symbol.clone(),
                    source,
                }
            })?;
            typed = copy;
            &typed
        };
        let program = lower::lower(&symbol, f, self.options.fuse)?;
        let plan = memory::plan(&program);
        let code = emit::emit(&emit::EmitInput {
            symbol: &symbol,
            program: &program,
            plan: &plan,
            embed_constants: self.options.embed_constants,
        });
        let (inputs, outputs) = emit::signature(&program);
        let constants = if self.options.embed_constants {
            Vec::new()
        } else {
            program.constants.clone()
        };
        Ok(GeneratedSource {
            symbol,
            code,
            inputs,
            outputs,
            constants,
            arena_bytes: plan.arena_bytes,
        })
    }
}

/// Whether the generator lowers this op call, by the same checks as generation (attributes,
/// layouts, ranks, float32 tensors); `Err` gives the reason, which AnnotateTarget reports.
/// The plugin's support predicates are this function, so partitioning never hands the
/// generator a call it refuses.
pub fn check_call(call: &CallView<'_>) -> Result<(), RejectReason> {
    fn tensor<'t>(t: &'t Type, what: &dyn Fn() -> String) -> Result<&'t TensorType, RejectReason> {
        match t {
            Type::Tensor(t) if t.dtype == crate::support::DTYPE => Ok(t),
            Type::Tensor(t) => Err(RejectReason(format!(
                "{} has dtype {}; csource generates float32 code only",
                what(),
                t.dtype
            ))),
            other => Err(RejectReason(format!("{} is {other}, not a tensor", what()))),
        }
    }
    let op = call.op.name();
    let args = call
        .arg_types
        .iter()
        .enumerate()
        .map(|(i, t)| tensor(t, &|| format!("argument {i}")))
        .collect::<Result<Vec<_>, _>>()?;
    let cx = ops::OpCtx {
        partition: "",
        op,
        attrs: call.attrs,
        args,
        out: tensor(call.result_type, &|| "the result".to_string())?,
    };
    match ops::lower_op(&cx) {
        Ok(_) => Ok(()),
        Err(CodegenError::UnsupportedOp { reason, .. }) => Err(RejectReason(reason)),
        Err(e) => Err(RejectReason(e.to_string())),
    }
}
