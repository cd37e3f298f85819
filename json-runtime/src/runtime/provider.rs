//! The vendor side of the runtime: a [`KernelProvider`] builds one [`NodeKernel`] per kernel
//! node, given the node's name, attributes, input and output types and the values of the inputs
//! that are constants (so weights can be pre-packed once).

use std::collections::BTreeMap;
use std::sync::Arc;

use byoc_sdk::ir::tensor::{Tensor, TensorMut, TensorRef};
use byoc_sdk::ir::TensorType;
use thiserror::Error;

use crate::format::NodeAttrs;

/// Constants by `const` node name; they travel beside the JSON graph.
pub type ConstantMap = BTreeMap<String, Arc<Tensor>>;

/// A provider's failure to build or run a kernel; the runtime adds the node id and name.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
#[error("{message}")]
pub struct ProviderError {
    /// What went wrong.
    pub message: String,
}

impl ProviderError {
    /// An error with this message.
    pub fn new(message: impl Into<String>) -> Self {
        ProviderError {
            message: message.into(),
        }
    }
}

/// What a provider sees of one kernel node.
#[derive(Clone, Copy, Debug)]
pub struct KernelSpec<'a> {
    /// The node id.
    pub node: usize,
    /// The op or composite name (`nn.conv2d`, `dnnl.conv2d_bias_relu`).
    pub name: &'a str,
    /// The op attributes (string lists, TVM's encoding).
    pub attrs: &'a NodeAttrs,
    /// Input tensor types, in input order.
    pub inputs: &'a [TensorType],
    /// Output tensor types.
    pub outputs: &'a [TensorType],
    /// For each input, its value when it is a constant.
    pub constants: &'a [Option<&'a Tensor>],
}

/// A built kernel for one node. It is shared by concurrent runs, so it must not keep per-run
/// state outside its arguments.
pub trait NodeKernel: Send + Sync {
    /// Computes `outputs` from `inputs`; shapes and dtypes are those of the [`KernelSpec`] and
    /// have been checked by the runtime.
    fn run(
        &self,
        inputs: &[TensorRef<'_>],
        outputs: &mut [TensorMut<'_>],
    ) -> Result<(), ProviderError>;
}

/// A vendor's kernel builder.
pub trait KernelProvider: Send + Sync {
    /// The kernel type it builds.
    type Kernel: NodeKernel;

    /// Builds the kernel for one node (called once per node, at initialization).
    fn build(&self, spec: &KernelSpec<'_>) -> Result<Self::Kernel, ProviderError>;
}
