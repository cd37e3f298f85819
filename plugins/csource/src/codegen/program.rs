//! The lowered form of a partition: tensor values and the kernel steps that compute them.
//!
//! Invariants: values are dense row-major `float32` tensors; a step's operands are values
//! defined earlier (inputs, constants, earlier steps or views of them); a view has the bytes of
//! the value it views (reshape-like ops), so [`Program::root`] of any value is an input, a
//! constant or a step result.

use std::sync::Arc;

use byoc_sdk::ir::Tensor;

use super::kernel::Kernel;

/// Index of a value in [`Program::values`].
pub(crate) type ValueId = usize;

/// Where a value's elements live.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Source {
    /// Partition input `i`.
    Input(usize),
    /// Constant `k` of [`Program::constants`].
    Constant(usize),
    /// The result of step `s`.
    Step(usize),
    /// The same bytes as another value, under a different shape.
    View(ValueId),
}

/// A tensor value.
#[derive(Clone, Debug)]
pub(crate) struct Value {
    /// The shape (the dtype is always float32).
    pub shape: Vec<usize>,
    /// Where the elements live.
    pub source: Source,
}

impl Value {
    /// Number of elements.
    pub fn len(&self) -> usize {
        self.shape.iter().product()
    }
}

/// One kernel call.
#[derive(Clone, Debug)]
pub(crate) struct Step {
    /// The loop nest.
    pub kernel: Kernel,
    /// Operand values, in the kernel's order.
    pub args: Vec<ValueId>,
    /// The value it defines.
    pub out: ValueId,
    /// What it computes, for the comment above its loop nest (`%7 = nn.conv2d + nn.relu`).
    pub label: String,
}

/// A lowered partition.
#[derive(Clone, Debug, Default)]
pub(crate) struct Program {
    /// Every value.
    pub values: Vec<Value>,
    /// Steps in execution order.
    pub steps: Vec<Step>,
    /// The value of each partition parameter, in order.
    pub inputs: Vec<ValueId>,
    /// The value of each partition output, in order (values may repeat).
    pub outputs: Vec<ValueId>,
    /// Constant tensors, each once.
    pub constants: Vec<Arc<Tensor>>,
}

impl Program {
    /// Adds a value.
    pub fn push_value(&mut self, shape: Vec<usize>, source: Source) -> ValueId {
        self.values.push(Value { shape, source });
        self.values.len() - 1
    }

    /// Adds a step defining a new value of `shape`.
    pub fn push_step(
        &mut self,
        kernel: Kernel,
        args: Vec<ValueId>,
        shape: Vec<usize>,
        label: String,
    ) -> ValueId {
        let out = self.push_value(shape, Source::Step(self.steps.len()));
        self.steps.push(Step {
            kernel,
            args,
            out,
            label,
        });
        out
    }

    /// The value holding the elements of `v` (following views).
    pub fn root(&self, mut v: ValueId) -> ValueId {
        while let Source::View(of) = self.values[v].source {
            v = of;
        }
        v
    }
}
