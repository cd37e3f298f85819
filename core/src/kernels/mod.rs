//! Numeric host kernels: the loops behind the built-in ops' host reference kernels.
//!
//! Op definitions in [`crate::ops`] check types and attributes and turn them into plain geometry
//! structs; the functions here only compute over slices laid out as those structs say. They are
//! generic over the element type (one implementation for every dtype the op supports) and take
//! the executor's thread budget: with more than one thread they split work with rayon, inside
//! the pool the executor runs them in.

pub(crate) mod conv;
pub(crate) mod gemm;
pub(crate) mod norm;
pub(crate) mod pad;
pub(crate) mod pool;
pub(crate) mod resize;
pub(crate) mod scalar;
