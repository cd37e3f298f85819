//! Host kernels of the compare ops: the kernel half of [`byoc_ir::ops::compare`].

use crate::registry::Builders;
use crate::KernelBuilder;
pub(crate) use byoc_ir::ops::compare::*;

use {
    super::binary::broadcast_kernel,
    super::elementwise::map_kernel,
    super::support::check_io,
    crate::{HostKernel, KernelError, KernelSpec},
};

fn compare_kernel<T: crate::Scalar>(
    spec: &KernelSpec<'_>,
    op: CompareOp,
) -> Result<Box<dyn HostKernel>, KernelError> {
    use CompareOp::*;
    match op {
        Equal => broadcast_kernel(spec, |a: T, b: T| u8::from(a == b)),
        NotEqual => broadcast_kernel(spec, |a: T, b: T| u8::from(a != b)),
        Less => broadcast_kernel(spec, |a: T, b: T| u8::from(a < b)),
        LessEqual => broadcast_kernel(spec, |a: T, b: T| u8::from(a <= b)),
        Greater => broadcast_kernel(spec, |a: T, b: T| u8::from(a > b)),
        GreaterEqual => broadcast_kernel(spec, |a: T, b: T| u8::from(a >= b)),
    }
}

/// TVM's lowering name of the comparison on custom datatypes (`LT`).
fn tvm_name(op: CompareOp) -> &'static str {
    use CompareOp::*;
    match op {
        Equal => "EQ",
        NotEqual => "NE",
        Less => "LT",
        LessEqual => "LE",
        Greater => "GT",
        GreaterEqual => "GE",
    }
}

impl KernelBuilder for Compare {
    fn host_kernel(&self, spec: &KernelSpec<'_>) -> Result<Box<dyn HostKernel>, KernelError> {
        check_io(spec, 2, 1)?;
        let dtype = spec.inputs[0].dtype;
        if dtype.is_custom() {
            return crate::custom::compare(spec, tvm_name(self.0));
        }
        crate::with_numeric_or_bool!(
            dtype,
            |T| compare_kernel::<T>(spec, self.0),
            Err(spec.unsupported(dtype))
        )
    }
}

impl KernelBuilder for Logical {
    fn host_kernel(&self, spec: &KernelSpec<'_>) -> Result<Box<dyn HostKernel>, KernelError> {
        match self.0 {
            LogicalOp::And => broadcast_kernel(spec, |a: u8, b: u8| u8::from(a != 0 && b != 0)),
            LogicalOp::Or => broadcast_kernel(spec, |a: u8, b: u8| u8::from(a != 0 || b != 0)),
            LogicalOp::Not => {
                check_io(spec, 1, 1)?;
                Ok(map_kernel(spec, |a: u8| u8::from(a == 0)))
            }
        }
    }
}

/// Registers the builders of this family.
pub(crate) fn register(builders: &mut Builders) {
    builders.add::<Compare>();
    builders.add::<Logical>();
}
