//! Model inputs from .npz files or a seeded random generator, and output naming.

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::{bail, Context, Result};
use byoc_core::ir::DType;
use byoc_core::plugin::convert_tensor;
use byoc_core::{Module, Tensor, TensorType, Type};
use rand::rngs::StdRng;
use rand::SeedableRng;

/// One input of a model: the name users give it (the ONNX name for imported models), the
/// @main parameter it binds, and its type.
pub struct ModelInput {
    /// The name in .npz files and messages.
    pub name: String,
    /// The @main parameter name.
    pub param: String,
    /// The tensor type.
    pub ty: TensorType,
}

/// The names an importer recorded in @main's attribute `attr` (`input_names`, `output_names`).
fn recorded_names(module: &Module, attr: &str) -> Option<Vec<String>> {
    let list = module.main().ok()?.attrs.get(attr)?.as_list()?;
    list.iter()
        .map(|v| v.as_str().map(str::to_string))
        .collect()
}

/// The @main parameters of `module` with their user-facing names and tensor types.
pub fn model_inputs(module: &Module) -> Result<Vec<ModelInput>> {
    let main = module.main()?;
    let recorded = recorded_names(module, "input_names").filter(|n| n.len() == main.params.len());
    main.params
        .iter()
        .enumerate()
        .map(|(i, &p)| {
            let var = main.var(p).context("@main parameter is not a variable")?;
            let Type::Tensor(ty) = &var.ty else {
                bail!(
                    "@main parameter %{} has type {}; only tensor inputs are supported",
                    var.name,
                    var.ty
                );
            };
            let name = recorded
                .as_ref()
                .map_or_else(|| var.name.clone(), |n| n[i].clone());
            Ok(ModelInput {
                name,
                param: var.name.clone(),
                ty: ty.clone(),
            })
        })
        .collect()
}

/// The inputs for a run, keyed by @main parameter name: those in `npz` (keyed by the model's
/// input names, checked), the rest random when `seed` is given. A missing input without `seed`
/// is an error naming it.
pub fn resolve_inputs(
    module: &Module,
    npz: Option<&Path>,
    seed: Option<u64>,
) -> Result<BTreeMap<String, Tensor>> {
    let expected = model_inputs(module)?;
    // Custom-typed inputs come as their bit patterns.
    let custom: BTreeMap<String, DType> = expected
        .iter()
        .filter(|e| e.ty.dtype.is_custom())
        .map(|e| (e.name.clone(), e.ty.dtype))
        .collect();
    let mut given = match npz {
        Some(path) => byoc_core::io::read_npz_as(path, &custom)
            .with_context(|| format!("cannot read inputs '{}'", path.display()))?,
        None => BTreeMap::new(),
    };
    if let Some(unknown) = given
        .keys()
        .find(|k| !expected.iter().any(|e| &e.name == *k))
    {
        let names: Vec<&str> = expected.iter().map(|e| e.name.as_str()).collect();
        bail!(
            "{}: input '{unknown}' is not an input of the model (inputs: {})",
            npz.map_or_else(String::new, |p| p.display().to_string()),
            names.join(", ")
        );
    }
    if let Some(path) = npz {
        for input in &expected {
            match given.get(&input.name) {
                Some(t) if t.shape() != input.ty.shape.as_slice() => bail!(
                    "{}: input '{}' is {} but the model expects {}",
                    path.display(),
                    input.name,
                    t.ty(),
                    input.ty
                ),
                Some(t) if input.ty.dtype.is_custom() && t.dtype() != input.ty.dtype => bail!(
                    "{}: input '{}' is {} but the model expects {}, given as its bit patterns (uint{})",
                    path.display(),
                    input.name,
                    t.ty(),
                    input.ty,
                    input.ty.dtype.bits()
                ),
                _ => {}
            }
        }
    }
    let mut rng = seed.map(StdRng::seed_from_u64);
    let mut inputs = BTreeMap::new();
    for input in &expected {
        let tensor = match (given.remove(&input.name), rng.as_mut()) {
            (Some(t), _) => t,
            (None, Some(rng)) => random_tensor(&input.ty, rng)?,
            (None, None) => bail!(
                "missing input '{}' of type {} (give it in --inputs or pass --random-inputs SEED)",
                input.name,
                input.ty
            ),
        };
        inputs.insert(input.param.clone(), tensor);
    }
    Ok(inputs)
}

/// A tensor of uniform random values (see [`Tensor::random_uniform`]); a custom-typed one
/// holds random `float32` values converted by the datatype's cast.
pub fn random_tensor(ty: &TensorType, rng: &mut StdRng) -> Result<Tensor> {
    let what = || format!("cannot make random values of type {ty}");
    if ty.dtype.is_custom() {
        let float = Tensor::random_uniform(TensorType::new(ty.shape.clone(), DType::Float32), rng)
            .with_context(what)?;
        return convert_tensor(&float, ty.dtype).with_context(what);
    }
    Tensor::random_uniform(ty.clone(), rng).with_context(what)
}

/// Names outputs by the names an importer recorded (ONNX output names), else `output_0`,
/// `output_1`, ... in order.
pub fn output_map(module: &Module, outputs: Vec<Tensor>) -> BTreeMap<String, Tensor> {
    let recorded = recorded_names(module, "output_names").filter(|n| n.len() == outputs.len());
    outputs
        .into_iter()
        .enumerate()
        .map(|(i, t)| {
            let name = recorded
                .as_ref()
                .map_or_else(|| format!("output_{i}"), |n| n[i].clone());
            (name, t)
        })
        .collect()
}
