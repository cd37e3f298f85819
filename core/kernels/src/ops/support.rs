//! Helpers shared by kernel builders: kernel-spec checks (the kernel half of
//! [`byoc_ir::ops::support`]).

use crate::{KernelError, KernelSpec};

/// Checks that a kernel spec has `inputs` input and `outputs` output tensors.
pub(super) fn check_io(
    spec: &KernelSpec<'_>,
    inputs: usize,
    outputs: usize,
) -> Result<(), KernelError> {
    if spec.inputs.len() != inputs || spec.outputs.len() != outputs {
        return Err(KernelError::new(
            spec.op,
            format!(
                "expects {inputs} input(s) and {outputs} output(s), got {} and {}",
                spec.inputs.len(),
                spec.outputs.len()
            ),
        ));
    }
    Ok(())
}
