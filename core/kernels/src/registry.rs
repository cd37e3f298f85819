//! The kernel half of the op registry: the host kernel of each op, found by the op.
//!
//! The IR knows an op by its [`OpDef`]: name, schema and type relation ([`OpImpl`]). Its host
//! reference kernel is built here, by [`host_kernel`]:
//! - a built-in op's implementation is recognized by its type and built by its
//!   [`KernelBuilder`] (the table is filled once, by `kernels::ops`);
//! - an op registered at run time (by an embedder or a test) brings its kernel with
//!   [`register_kernel`], keyed by the op's name.
//!
//! An op with neither has no host kernel: [`host_kernel`] says so, naming it.

use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::sync::{Arc, OnceLock, RwLock};

use thiserror::Error;

use super::spec::{HostKernel, KernelError, KernelSpec};
use byoc_ir::op::{OpDef, OpImpl};
use byoc_ir::{Attrs, TensorType};

/// The kernel half of a built-in op implementation: builds its host kernel for one call site.
pub trait KernelBuilder: OpImpl {
    /// Builds the host reference kernel for the call site `spec` describes.
    fn host_kernel(&self, spec: &KernelSpec<'_>) -> Result<Box<dyn HostKernel>, KernelError>;
}

/// A kernel builder registered by op name ([`register_kernel`]).
pub type NamedBuilder =
    dyn Fn(&KernelSpec<'_>) -> Result<Box<dyn HostKernel>, KernelError> + Send + Sync;

type BuildFn = fn(&dyn Any, &KernelSpec<'_>) -> Result<Box<dyn HostKernel>, KernelError>;

/// The built-in builders, keyed by the type of the op implementation each builds for.
#[derive(Default)]
pub(crate) struct Builders(HashMap<TypeId, BuildFn>);

impl Builders {
    /// Registers `T`'s builder for every op whose implementation is a `T`.
    pub(crate) fn add<T: KernelBuilder>(&mut self) {
        fn build<T: KernelBuilder>(
            imp: &dyn Any,
            spec: &KernelSpec<'_>,
        ) -> Result<Box<dyn HostKernel>, KernelError> {
            match imp.downcast_ref::<T>() {
                Some(imp) => KernelBuilder::host_kernel(imp, spec),
                None => Err(KernelError::new(
                    spec.op,
                    "kernel table entry belongs to another op implementation",
                )),
            }
        }
        self.0.insert(TypeId::of::<T>(), build::<T>);
    }
}

fn builtin() -> &'static Builders {
    static TABLE: OnceLock<Builders> = OnceLock::new();
    TABLE.get_or_init(|| {
        let mut builders = Builders::default();
        super::ops::register(&mut builders);
        builders
    })
}

fn named() -> &'static RwLock<HashMap<String, Arc<NamedBuilder>>> {
    static TABLE: OnceLock<RwLock<HashMap<String, Arc<NamedBuilder>>>> = OnceLock::new();
    TABLE.get_or_init(Default::default)
}

/// Errors of kernel registration.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum KernelRegistryError {
    /// A kernel for that op name is registered already.
    #[error("a host kernel for op '{0}' is already registered")]
    Duplicate(String),
}

/// Registers the host kernel builder of the op named `op` (an op registered at run time with
/// `OpRegistry::register`). Built-in ops have theirs; a second builder for a name is refused.
pub fn register_kernel(
    op: &str,
    build: impl Fn(&KernelSpec<'_>) -> Result<Box<dyn HostKernel>, KernelError> + Send + Sync + 'static,
) -> Result<(), KernelRegistryError> {
    let mut table = named()
        .write()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    if table.contains_key(op) {
        return Err(KernelRegistryError::Duplicate(op.to_string()));
    }
    table.insert(op.to_string(), Arc::new(build));
    Ok(())
}

/// Builds the host reference kernel of `op` for a call site with these attributes and
/// flattened input and output types (see the module docs for where it is found).
pub fn host_kernel(
    op: &OpDef,
    attrs: &Attrs,
    inputs: &[TensorType],
    outputs: &[TensorType],
) -> Result<Box<dyn HostKernel>, KernelError> {
    let spec = KernelSpec {
        op: &op.name,
        attrs,
        inputs,
        outputs,
    };
    let imp: &dyn Any = &*op.imp;
    if let Some(build) = builtin().0.get(&imp.type_id()) {
        return build(imp, &spec);
    }
    let registered = named()
        .read()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
        .get(&op.name)
        .cloned();
    match registered {
        Some(build) => build(&spec),
        None => Err(KernelError::new(&op.name, "has no host kernel")),
    }
}
