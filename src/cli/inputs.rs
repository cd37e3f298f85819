//! Model inputs from .npz files or a seeded random generator, and output naming.

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::{bail, Context, Result};
use byoc_core::{Module, Tensor, TensorType, Type};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// The @main parameters of `module` with their tensor types.
pub fn model_inputs(module: &Module) -> Result<Vec<(String, TensorType)>> {
    let main = module.main()?;
    main.params
        .iter()
        .map(|&p| {
            let var = main.var(p).context("@main parameter is not a variable")?;
            match &var.ty {
                Type::Tensor(t) => Ok((var.name.clone(), t.clone())),
                other => bail!(
                    "@main parameter %{} has type {other}; only tensor inputs are supported",
                    var.name
                ),
            }
        })
        .collect()
}

/// The inputs for a run: those in `npz` (checked against the model's input names), the rest
/// random when `seed` is given. A missing input without `seed` is an error naming it.
pub fn resolve_inputs(
    module: &Module,
    npz: Option<&Path>,
    seed: Option<u64>,
) -> Result<BTreeMap<String, Tensor>> {
    let expected = model_inputs(module)?;
    let mut given = match npz {
        Some(path) => byoc_core::io::read_npz(path)
            .with_context(|| format!("cannot read inputs '{}'", path.display()))?,
        None => BTreeMap::new(),
    };
    if let Some(unknown) = given
        .keys()
        .find(|k| !expected.iter().any(|(n, _)| n == *k))
    {
        let names: Vec<&str> = expected.iter().map(|(n, _)| n.as_str()).collect();
        bail!(
            "input '{unknown}' is not an input of the model (inputs: {})",
            names.join(", ")
        );
    }
    let mut rng = seed.map(StdRng::seed_from_u64);
    for (name, ty) in &expected {
        if given.contains_key(name) {
            continue;
        }
        let Some(rng) = rng.as_mut() else {
            bail!("missing input '{name}' of type {ty} (give it in --inputs or pass --random-inputs SEED)");
        };
        given.insert(name.clone(), random_tensor(ty, rng)?);
    }
    Ok(given)
}

/// A tensor of uniform random values: [-1, 1) for floats, [-8, 8) for signed and [0, 16)
/// for unsigned integers, 0/1 for bools.
pub fn random_tensor(ty: &TensorType, rng: &mut StdRng) -> Result<Tensor> {
    let n = ty.num_elements();
    let values: Vec<f64> = (0..n)
        .map(|_| {
            if ty.dtype.is_float() {
                rng.gen_range(-1.0..1.0)
            } else if ty.dtype == byoc_core::DType::UInt8 {
                f64::from(rng.gen_range(0u8..16))
            } else if ty.dtype == byoc_core::DType::Bool {
                f64::from(rng.gen_range(0u8..2))
            } else {
                f64::from(rng.gen_range(-8i8..8))
            }
        })
        .collect();
    Tensor::from_f64(ty.clone(), &values)
        .with_context(|| format!("cannot make random values of type {ty}"))
}

/// Names outputs `output_0`, `output_1`, ... in order.
pub fn output_map(outputs: Vec<Tensor>) -> BTreeMap<String, Tensor> {
    outputs
        .into_iter()
        .enumerate()
        .map(|(i, t)| (format!("output_{i}"), t))
        .collect()
}
