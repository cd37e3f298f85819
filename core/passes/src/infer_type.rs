//! InferType (`infer-type`): [`infer_types`] as a pass (see `byoc_ir::infer_types` for what it
//! needs and what holds after).

use byoc_ir::{infer_types, Module};

use crate::{Pass, PassContext, PassError};

/// The `infer-type` pass: [`infer_types`] over the whole module.
#[derive(Clone, Copy, Debug, Default)]
pub struct InferType;

impl Pass for InferType {
    fn name(&self) -> &'static str {
        "infer-type"
    }

    fn run(&self, module: &mut Module, _cx: &mut PassContext) -> Result<(), PassError> {
        Ok(infer_types(module)?)
    }
}
