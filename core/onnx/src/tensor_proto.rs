//! `TensorProto` to [`Tensor`]: element types, the typed data fields, `raw_data`, and external
//! data files.
//!
//! Every size is checked before anything is allocated: the element count of `dims` must match
//! the data given, so a hostile file cannot make the importer allocate more than it holds
//! (external data aside, which is read from the file it names, bounded by that file's size).

use std::path::{Component, Path};

use half::{bf16, f16};

use super::proto::{data_type, TensorProto};
use super::OnnxError;
use byoc_ir::tensor::Tensor;
use byoc_ir::{DType, TensorType};

/// The byoc dtype of an ONNX element type code.
pub(crate) fn dtype_of(code: i32) -> Result<DType, String> {
    Ok(match code {
        data_type::FLOAT => DType::Float32,
        data_type::UINT8 => DType::UInt8,
        data_type::INT8 => DType::Int8,
        data_type::INT16 => DType::Int16,
        data_type::INT32 => DType::Int32,
        data_type::INT64 => DType::Int64,
        data_type::BOOL => DType::Bool,
        data_type::FLOAT16 => DType::Float16,
        data_type::DOUBLE => DType::Float64,
        data_type::BFLOAT16 => DType::BFloat16,
        other => {
            return Err(format!(
                "element type {} is not supported",
                data_type::name(other)
            ))
        }
    })
}

/// Reads a serialized `TensorProto` (an ONNX test data `.pb` file) into a tensor.
pub fn read_tensor_file(path: &Path) -> Result<Tensor, OnnxError> {
    let bytes = byoc_ir::memory::read_file(path).map_err(|source| OnnxError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    let proto = <TensorProto as prost::Message>::decode(bytes.as_slice()).map_err(|e| {
        OnnxError::Decode {
            reason: e.to_string(),
        }
    })?;
    tensor_from_proto(&proto, path.parent())
}

/// Converts a tensor proto. `base_dir` is the model's directory, where external data lives;
/// `None` when the model came from memory.
pub(crate) fn tensor_from_proto(
    t: &TensorProto,
    base_dir: Option<&Path>,
) -> Result<Tensor, OnnxError> {
    let bad = |reason: String| OnnxError::BadValue {
        name: t.name.clone(),
        reason,
    };
    let dtype = dtype_of(t.data_type).map_err(bad)?;
    let shape = t
        .dims
        .iter()
        .map(|&d| usize::try_from(d).map_err(|_| bad(format!("negative dimension {d}"))))
        .collect::<Result<Vec<_>, _>>()?;
    let count = byoc_ir::dims::product(&shape)
        .ok_or_else(|| bad(format!("shape {shape:?} is too large")))?;
    let ty = TensorType::new(shape, dtype);
    if t.data_location == 1 {
        let bytes = read_external(t, base_dir)?;
        return raw_tensor(ty, &bytes).map_err(bad);
    }
    if !t.raw_data.is_empty() || count == 0 {
        return raw_tensor(ty, &t.raw_data).map_err(bad);
    }
    let mismatch = |got: usize| {
        bad(format!(
            "shape {:?} holds {count} elements but the tensor has {got} values",
            ty.shape
        ))
    };
    macro_rules! typed {
        ($field:expr, $conv:expr) => {{
            if $field.len() != count {
                return Err(mismatch($field.len()));
            }
            let values: Vec<_> = $field.iter().map($conv).collect();
            Tensor::from_vec(ty.shape.clone(), values).map_err(|e| bad(e.to_string()))
        }};
    }
    // ONNX stores the narrow types widened to int32 (half floats as their bit pattern, 0 to
    // 65535); a value outside the type's range is malformed, not truncated.
    macro_rules! narrow {
        ($to:ty, $from_bits:expr) => {{
            if t.int32_data.len() != count {
                return Err(mismatch(t.int32_data.len()));
            }
            let values = t
                .int32_data
                .iter()
                .map(|&v| {
                    <$to>::try_from(v).map($from_bits).map_err(|_| {
                        bad(format!("int32_data value {v} is out of range for {dtype}"))
                    })
                })
                .collect::<Result<Vec<_>, _>>()?;
            Tensor::from_vec(ty.shape.clone(), values).map_err(|e| bad(e.to_string()))
        }};
    }
    match dtype {
        DType::Float32 => typed!(t.float_data, |&v| v),
        DType::Float64 => typed!(t.double_data, |&v| v),
        DType::Int64 => typed!(t.int64_data, |&v| v),
        DType::Int32 => typed!(t.int32_data, |&v| v),
        DType::Int16 => narrow!(i16, |v| v),
        DType::Int8 => narrow!(i8, |v| v),
        DType::UInt8 => narrow!(u8, |v| v),
        DType::Float16 => narrow!(u16, f16::from_bits),
        DType::BFloat16 => narrow!(u16, bf16::from_bits),
        DType::Bool => {
            if t.int32_data.len() != count {
                return Err(mismatch(t.int32_data.len()));
            }
            let bytes: Vec<u8> = t.int32_data.iter().map(|&v| u8::from(v != 0)).collect();
            Tensor::from_bytes(ty, &bytes).map_err(|e| bad(e.to_string()))
        }
        DType::Custom { .. } => Err(bad(format!("element type {dtype} is not supported"))),
    }
}

fn raw_tensor(ty: TensorType, bytes: &[u8]) -> Result<Tensor, String> {
    let mut t = Tensor::from_bytes(ty, bytes).map_err(|e| e.to_string())?;
    if t.dtype() == DType::Bool {
        // Any non-zero byte is true; byoc stores booleans as exactly 0 or 1.
        if let Ok(b) = t.as_slice_mut::<u8>() {
            b.iter_mut().for_each(|v| *v = u8::from(*v != 0));
        }
    }
    Ok(t)
}

fn read_external(t: &TensorProto, base_dir: Option<&Path>) -> Result<Vec<u8>, OnnxError> {
    let entry = |key: &str| {
        t.external_data
            .iter()
            .find(|e| e.key == key)
            .map(|e| e.value.as_str())
    };
    let location = entry("location").unwrap_or_default().to_string();
    let fail = |reason: String| OnnxError::ExternalData {
        tensor: t.name.clone(),
        location: location.clone(),
        reason,
    };
    if location.is_empty() {
        return Err(fail("the tensor has no 'location' entry".into()));
    }
    let rel = Path::new(&location);
    if !rel
        .components()
        .all(|c| matches!(c, Component::Normal(_) | Component::CurDir))
    {
        return Err(fail(
            "the location must be a relative path inside the model's directory".into(),
        ));
    }
    let Some(dir) = base_dir else {
        return Err(fail(
            "the model was loaded from memory; load it from its file so external data can be found"
                .into(),
        ));
    };
    let number = |key: &str| -> Result<Option<u64>, OnnxError> {
        entry(key)
            .map(|v| {
                v.parse::<u64>()
                    .map_err(|_| fail(format!("'{key}' is not a byte count: '{v}'")))
            })
            .transpose()
    };
    let offset = number("offset")?.unwrap_or(0);
    let length = number("length")?;
    let path = dir.join(rel);
    // Only the tensor's range is read: one file usually holds every weight of the model.
    byoc_ir::memory::read_file_range(&path, offset, length)
        .map_err(|e| fail(format!("{}: {e}", path.display())))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::StringStringEntryProto;

    fn narrow(data_type: i32, values: Vec<i32>) -> Result<Tensor, OnnxError> {
        let t = TensorProto {
            name: "t".into(),
            dims: vec![i64::try_from(values.len()).unwrap()],
            data_type,
            int32_data: values,
            ..TensorProto::default()
        };
        tensor_from_proto(&t, None)
    }

    #[test]
    fn narrow_values_widened_to_int32_are_range_checked() {
        // ONNX data types: 3 int8, 2 uint8, 10 float16.
        let t = narrow(3, vec![-128, 127]).unwrap();
        assert_eq!(t.as_slice::<i8>().unwrap(), [-128, 127]);
        let t = narrow(10, vec![0x3c00]).unwrap();
        assert_eq!(t.as_slice::<f16>().unwrap(), [f16::ONE]);
        let err = narrow(3, vec![1, 300]).unwrap_err().to_string();
        assert!(
            err.contains("int32_data value 300 is out of range for int8"),
            "{err}"
        );
        let err = narrow(2, vec![-1]).unwrap_err().to_string();
        assert!(
            err.contains("int32_data value -1 is out of range for uint8"),
            "{err}"
        );
        let err = narrow(10, vec![70000]).unwrap_err().to_string();
        assert!(
            err.contains("int32_data value 70000 is out of range for float16"),
            "{err}"
        );
    }

    /// External data is read from the tensor's byte range of its file (one file usually holds
    /// every weight), and a range past the file's end is refused with the file's length.
    #[test]
    fn external_data_is_read_from_its_range() {
        let dir = std::env::temp_dir().join(format!("byoc-external-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let values: Vec<u8> = [1.5f32, -2.0, 4.0, 8.0, 0.25]
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect();
        std::fs::write(dir.join("weights.bin"), &values).unwrap();
        let external = |offset: &str, length: &str| TensorProto {
            name: "w".into(),
            dims: vec![2],
            data_type: 1,
            data_location: 1,
            external_data: [
                ("location", "weights.bin"),
                ("offset", offset),
                ("length", length),
            ]
            .iter()
            .map(|(k, v)| StringStringEntryProto {
                key: (*k).into(),
                value: (*v).into(),
            })
            .collect(),
            ..TensorProto::default()
        };
        let t = tensor_from_proto(&external("8", "8"), Some(&dir)).unwrap();
        assert_eq!(t.as_slice::<f32>().unwrap(), &[4.0, 8.0]);
        let err = tensor_from_proto(&external("16", "8"), Some(&dir))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("offset 16 and length 8 exceed the file's 20 bytes"),
            "{err}"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
