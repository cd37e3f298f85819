//! The command line's wording of library errors that a flag fixes. The library crates describe
//! the problem in their own terms (input shapes for a text model, a missing input, a datatype
//! that does not parse, a drawing before partitioning); here each gets the flag that sets or
//! fixes it, and the `--input-shape` values are parsed.

use std::collections::BTreeMap;
use std::num::ParseIntError;

use anyhow::anyhow;
use thiserror::Error;

use crate::datatype::DatatypeError;
use crate::inputs::InputsError;
use crate::model::ModelError;
use crate::report::ReportError;

/// A bad `--input-shape` value; each message names it.
#[derive(Debug, Error)]
pub enum InputShapeError {
    /// The value is not `NAME=D0,D1,...`.
    #[error("--input-shape '{value}': expected NAME=D0,D1,... (e.g. data=1,3,224,224)")]
    Syntax {
        /// The value as given.
        value: String,
    },
    /// A dimension is not a non-negative integer.
    #[error("--input-shape '{value}': dimensions must be non-negative integers")]
    Dimension {
        /// The value as given.
        value: String,
        /// Why the dimension does not parse.
        #[source]
        source: ParseIntError,
    },
    /// The same input is given twice.
    #[error("--input-shape gives '{name}' twice")]
    Duplicate {
        /// The input's name.
        name: String,
    },
}

/// Parses `--input-shape` values `name=d0,d1,...` into a map; errors name the bad value.
pub fn parse_input_shapes(
    values: &[String],
) -> Result<BTreeMap<String, Vec<usize>>, InputShapeError> {
    let mut shapes = BTreeMap::new();
    for v in values {
        let Some((name, dims)) = v.split_once('=') else {
            return Err(InputShapeError::Syntax { value: v.clone() });
        };
        let dims = dims
            .split(',')
            .map(|d| d.trim().parse::<usize>())
            .collect::<Result<Vec<_>, _>>()
            .map_err(|source| InputShapeError::Dimension {
                value: v.clone(),
                source,
            })?;
        if shapes.insert(name.to_string(), dims).is_some() {
            return Err(InputShapeError::Duplicate {
                name: name.to_string(),
            });
        }
    }
    Ok(shapes)
}

/// A model that cannot be loaded, with `--input-shape` named where it is the cause.
pub fn model(e: ModelError) -> anyhow::Error {
    match e {
        ModelError::InputShapesForRelay => {
            anyhow!(
                "--input-shape applies to .onnx models; a .relay model declares its input types"
            )
        }
        e => e.into(),
    }
}

/// Inputs of `model` that cannot be resolved: a missing one says how to give it; a parameter
/// the model declares wrongly, or random values that cannot be made for it, name the model
/// (errors about a `.npz` file name that file).
pub fn inputs(model: &str) -> impl Fn(InputsError) -> anyhow::Error + '_ {
    move |e| match e {
        InputsError::Missing { .. } => {
            anyhow!("{e} (give it in --inputs or pass --random-inputs SEED)")
        }
        InputsError::Ir(_)
        | InputsError::ParamNotVariable
        | InputsError::NotTensor { .. }
        | InputsError::Random { .. } => anyhow::Error::new(e).context(model.to_string()),
        e => e.into(),
    }
}

/// A datatype or datatype option the model cannot take, as `--dtype` and `--plugin-option`.
pub fn datatype(e: DatatypeError) -> anyhow::Error {
    match e {
        DatatypeError::DType { dtype, error } => anyhow!("--dtype '{dtype}': {error}"),
        DatatypeError::NotCustom(dtype) => anyhow!(
            "--dtype '{dtype}': not a custom datatype (expected custom[NAME]BITS, e.g. custom[posites2]16)"
        ),
        DatatypeError::Option(error) => anyhow!("--plugin-option: {error}"),
        DatatypeError::NotApplicable {
            key,
            datatype,
            widths,
        } => anyhow!(
            "--plugin-option {key}=true: the model computes in no custom[{datatype}] type, so there is nothing for it to change (run the model with --dtype custom[{datatype}]{widths})"
        ),
        e => e.into(),
    }
}

/// A report that cannot be drawn, as `--format` and `--stage`.
pub fn report(e: ReportError) -> anyhow::Error {
    match e {
        ReportError::NeedsPartition { format, stage } => anyhow!(
            "--format {format} draws partitions and needs --stage partition (the stage was {stage}); use --format text or json to see earlier stages"
        ),
        e => e.into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn input_shapes_parse_and_bad_values_are_named() {
        let shapes = parse_input_shapes(&["data=1, 3,224,224".into(), "mask=4".into()])
            .expect("valid shapes");
        assert_eq!(shapes["data"], [1, 3, 224, 224]);
        assert_eq!(shapes["mask"], [4]);
        let bad = |v: &str| {
            parse_input_shapes(&[v.to_string()])
                .unwrap_err()
                .to_string()
        };
        assert!(bad("data").contains("expected NAME=D0,D1,..."));
        assert!(bad("data=1,-3").contains("'data=1,-3': dimensions must be non-negative"));
        let twice = parse_input_shapes(&["x=1".into(), "x=2".into()]).unwrap_err();
        assert_eq!(twice.to_string(), "--input-shape gives 'x' twice");
    }
}
