//! BindParams (`bind-params`): replaces parameters of `@main` by constant tensors, by name
//! (TVM's `bind_params_by_name`).
//!
//! Each name must be a parameter of `@main` (exactly one) and its tensor must have the
//! parameter's declared type; otherwise the pass fails naming the parameter, and the module is
//! left unchanged. Bound parameters are removed from `@main`'s parameter list and every use
//! becomes one constant node shared by all users.
//!
//! Needs: a verified module with `@main`. Holds after: `@main` has only the unbound
//! parameters, in their old order; every live expression is typed. Running
//! it again with the same tensors fails (the names are gone); with no tensors it only infers types.
//! Cost: linear in the size of `@main` plus the number of names.

use std::collections::BTreeMap;
use std::sync::Arc;

use byoc_ir::tensor::Tensor;
use byoc_ir::{rewrite::Rebuild, ExprId, Module, Type};

use super::{Pass, PassContext, PassError};
use byoc_ir::infer_types;

/// The `bind-params` pass: binds `@main` parameters to tensors by name.
#[derive(Clone, Debug, Default)]
pub struct BindParams {
    params: BTreeMap<String, Arc<Tensor>>,
}

impl BindParams {
    /// Binds each named parameter of `@main` to its tensor.
    pub fn new(params: BTreeMap<String, Tensor>) -> Self {
        BindParams {
            params: params.into_iter().map(|(k, v)| (k, Arc::new(v))).collect(),
        }
    }
}

impl Pass for BindParams {
    fn name(&self) -> &'static str {
        "bind-params"
    }

    fn run(&self, module: &mut Module, _cx: &mut PassContext) -> Result<(), PassError> {
        let main = module.main()?;
        // For each parameter position, the tensor bound to it.
        let mut bound: Vec<Option<&Arc<Tensor>>> = vec![None; main.params.len()];
        for (name, tensor) in &self.params {
            let positions: Vec<usize> = main
                .params
                .iter()
                .enumerate()
                .filter(|&(_, &p)| main.var(p).is_some_and(|v| &v.name == name))
                .map(|(i, _)| i)
                .collect();
            let &[i] = positions.as_slice() else {
                return Err(if positions.is_empty() {
                    PassError::UnknownParam {
                        name: name.clone(),
                        known: param_names(main.params.iter().filter_map(|&p| main.var(p))),
                    }
                } else {
                    PassError::AmbiguousParam {
                        name: name.clone(),
                        count: positions.len(),
                    }
                });
            };
            let declared = main.param_types()[i].clone();
            let got = Type::Tensor(tensor.ty().clone());
            if declared != got {
                return Err(PassError::ParamType {
                    name: name.clone(),
                    expected: declared,
                    got,
                });
            }
            bound[i] = Some(tensor);
        }
        if bound.iter().all(Option::is_none) {
            return Ok(infer_types(module)?);
        }

        let mut rb = Rebuild::new(main);
        let mut kept: Vec<ExprId> = Vec::new();
        for (&p, value) in main.params.iter().zip(&bound) {
            match value {
                Some(tensor) => {
                    let c = rb.builder.constant(Arc::clone(tensor));
                    rb.set(p, c);
                }
                None => kept.push(rb.copy(p)?),
            }
        }
        for id in main.live_ids() {
            if rb.mapped(id).is_none() {
                rb.copy(id)?;
            }
        }
        let body = rb.get(main.body)?;
        let attrs = main.attrs.clone();
        let new_main = std::mem::take(&mut rb.builder).finish(kept, body, attrs)?;
        module.insert("main", new_main);
        infer_types(module)?;
        Ok(())
    }
}

fn param_names<'a>(vars: impl Iterator<Item = &'a byoc_ir::Var>) -> String {
    vars.map(|v| v.name.as_str()).collect::<Vec<_>>().join(", ")
}
