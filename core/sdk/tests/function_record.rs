//! The function record: partitioned functions written with their constants as raw bytes and
//! read back, and damaged records refused with errors that name the damaged part.

use std::sync::Arc;

use byoc_ir::Tensor;
use byoc_ir::{structural_eq_function, Attrs, DType, Expr, FunctionBuilder, TensorType};
use byoc_sdk::record::{RecordError, RECORD_MAGIC, RECORD_VERSION};
use byoc_sdk::{CrossingError, FunctionForm, PartitionedFunction};

/// A partition with a composite function literal (holding a constant), a tuple result, and
/// constants of several dtypes.
const PARTITION: &str = r#"
def @acc_0(%x: Tensor[(2, 2), float16], %y: Tensor[(4), int8], %m: Tensor[(3), bool], %b: Tensor[(2), bfloat16], Compiler="acc", global_symbol="acc_0", Primitive=1) {
  %0 = fn (%a: Tensor[(2, 2), float16], Composite="acc.add_relu") {
    %1 = add(%a, const((2, 2), float16, [1f, -2.5f, 0.25f, 65504f]));
    nn.relu(%1)
  };
  %2 = %0(%x);
  %3 = add(%y, const((4), int8, [1, -2, 3, 127]));
  %4 = logical_and(%m, const((3), bool, [True, False, True]));
  %5 = multiply(%b, const((2), bfloat16, [0.5f, -3f]));
  (%2, %3, %4, %5)
}
"#;

/// The constants of `f` in node order.
fn constants(f: &PartitionedFunction) -> Vec<Arc<Tensor>> {
    f.function
        .iter()
        .filter_map(|(_, n)| match &n.expr {
            Expr::Constant(t) => Some(t.clone()),
            _ => None,
        })
        .collect()
}

fn partition() -> PartitionedFunction {
    PartitionedFunction::from_text(PARTITION).unwrap()
}

#[test]
fn a_partition_with_a_composite_and_a_tuple_round_trips() {
    let f = partition();
    let record = f.to_record().unwrap();
    assert!(record.starts_with(RECORD_MAGIC));
    let back = PartitionedFunction::from_record(&record).unwrap();
    assert_eq!(back.symbol, "acc_0");
    assert_eq!(back.target(), Some("acc"));
    structural_eq_function(&f.function, &back.function).unwrap();
    let (want, got) = (constants(&f), constants(&back));
    assert_eq!(want.len(), 4);
    let dtypes: Vec<DType> = got.iter().map(|t| t.dtype()).collect();
    assert_eq!(
        dtypes,
        [DType::Float16, DType::Int8, DType::Bool, DType::BFloat16]
    );
    for (w, g) in want.iter().zip(&got) {
        assert_eq!(w.ty(), g.ty());
        assert_eq!(w.as_bytes(), g.as_bytes());
    }
    // Hand-computed encodings: int8 [1, -2, 3, 127], bool [1, 0, 1], bf16 0.5 = 0x3f00.
    assert_eq!(got[1].as_bytes(), [1, 0xfe, 3, 127]);
    assert_eq!(got[2].as_bytes(), [1, 0, 1]);
    assert_eq!(&got[3].as_bytes()[..2], [0x00, 0x3f]);
    // Both forms are read by `from_bytes`, which says which it was.
    let (_, form) = PartitionedFunction::from_bytes(&record).unwrap();
    assert_eq!(form, FunctionForm::Record);
    let (text, form) = PartitionedFunction::from_bytes(f.to_text().as_bytes()).unwrap();
    assert_eq!(form, FunctionForm::Text);
    structural_eq_function(&f.function, &text.function).unwrap();
    // Writing is deterministic.
    assert_eq!(back.to_record().unwrap(), record);
}

#[test]
fn constants_keep_their_exact_bits() {
    // float16 NaN with a payload, -0, the smallest subnormal, infinity; bfloat16 likewise;
    // a float32 NaN with a payload: bit patterns that decimal text does not keep.
    let halves = [0x7e01u16, 0x8000, 0x0001, 0x7c00];
    let brains = [0x7fc1u16, 0x8000, 0x0001, 0xff80];
    let bytes16 = |v: &[u16]| v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>();
    let f16 =
        Tensor::from_bytes(TensorType::new(vec![4], DType::Float16), &bytes16(&halves)).unwrap();
    let bf16 =
        Tensor::from_bytes(TensorType::new(vec![4], DType::BFloat16), &bytes16(&brains)).unwrap();
    let f32 = Tensor::from_bytes(
        TensorType::new(vec![1], DType::Float32),
        &0x7fc0_0123u32.to_le_bytes(),
    )
    .unwrap();
    let mut b = FunctionBuilder::new();
    let x = b.param("x", byoc_ir::Type::tensor([4], DType::Float16));
    let y = b.param("y", byoc_ir::Type::tensor([4], DType::BFloat16));
    let z = b.param("z", byoc_ir::Type::tensor([1], DType::Float32));
    let (c0, c1, c2) = (b.constant(f16), b.constant(bf16), b.constant(f32));
    let s0 = b.call("add", &[x, c0], Attrs::new()).unwrap();
    let s1 = b.call("add", &[y, c1], Attrs::new()).unwrap();
    let s2 = b.call("add", &[z, c2], Attrs::new()).unwrap();
    let body = b.tuple(&[s0, s1, s2]).unwrap();
    let attrs = Attrs::new()
        .with("Compiler", "acc")
        .with("global_symbol", "acc_1");
    let function = b.finish(vec![x, y, z], body, attrs).unwrap();
    let f = PartitionedFunction {
        symbol: "acc_1".to_string(),
        function,
    };
    let back = PartitionedFunction::from_record(&f.to_record().unwrap()).unwrap();
    let got = constants(&back);
    assert_eq!(got[0].as_bytes(), bytes16(&halves));
    assert_eq!(got[1].as_bytes(), bytes16(&brains));
    assert_eq!(got[2].as_bytes(), 0x7fc0_0123u32.to_le_bytes());
}

/// The offset of the first constant's dtype length: magic, version, text length, text,
/// constant count.
fn first_constant(record: &[u8]) -> usize {
    let mut len = [0u8; 8];
    len.copy_from_slice(&record[12..20]);
    20 + u64::from_le_bytes(len) as usize + 8
}

fn record_error(bytes: &[u8]) -> RecordError {
    match PartitionedFunction::from_record(bytes) {
        Err(CrossingError::Record(e)) => e,
        other => panic!("expected a record error, got {other:?}"),
    }
}

#[test]
fn every_truncation_is_an_error_that_names_the_part() {
    let record = partition().to_record().unwrap();
    for end in 0..record.len() {
        let err = PartitionedFunction::from_record(&record[..end]).unwrap_err();
        let message = err.to_string();
        if end < RECORD_MAGIC.len() {
            assert!(
                message.contains("not a function record"),
                "{end}: {message}"
            );
        } else {
            assert!(
                matches!(err, CrossingError::Record(RecordError::Truncated { .. })),
                "{end}: {message}"
            );
            assert!(message.contains("truncated function record"), "{message}");
        }
    }
    let err = record_error(&record[..record.len() - 1]);
    assert!(
        err.to_string().contains("constant 3 data needs 4 bytes"),
        "{err}"
    );
}

#[test]
fn damaged_headers_are_refused_without_huge_allocations() {
    let record = partition().to_record().unwrap();
    let at = first_constant(&record);
    let patch = |offset: usize, bytes: &[u8]| {
        let mut r = record.clone();
        r[offset..offset + bytes.len()].copy_from_slice(bytes);
        r
    };

    let err = record_error(&patch(8, &7u32.to_le_bytes()));
    assert_eq!(
        err,
        RecordError::Version {
            found: 7,
            supported: RECORD_VERSION
        }
    );
    // A text length past the end.
    let err = record_error(&patch(12, &u64::MAX.to_le_bytes()));
    assert!(err.to_string().contains("the function text needs"), "{err}");
    // A constant count far past what the bytes hold.
    let err = record_error(&patch(at - 8, &u64::MAX.to_le_bytes()));
    assert!(err.to_string().contains("constant 4 dtype length"), "{err}");
    // A dtype that does not exist ("float16" -> "floxt16").
    let err = record_error(&patch(at + 4 + 3, b"x"));
    assert!(
        matches!(err, RecordError::Constant { index: 0, .. })
            && err.to_string().contains("floxt16"),
        "{err}"
    );
    // A rank of u32::MAX.
    let err = record_error(&patch(at + 4 + 7, &u32::MAX.to_le_bytes()));
    assert!(err.to_string().contains("constant 0 dims needs"), "{err}");
    // A dimension past i64.
    let mut dims = u64::MAX.to_le_bytes().to_vec();
    dims.extend_from_slice(&u64::MAX.to_le_bytes());
    let err = record_error(&patch(at + 4 + 7 + 4, &dims));
    assert!(
        err.to_string().contains("has a dimension over 2^63-1"),
        "{err}"
    );
    // Dimensions whose product overflows.
    let mut dims = (1u64 << 40).to_le_bytes().to_vec();
    dims.extend_from_slice(&(1u64 << 40).to_le_bytes());
    let err = record_error(&patch(at + 4 + 7 + 4, &dims));
    assert!(err.to_string().contains("overflows"), "{err}");
    // A data length that does not match the shape.
    let err = record_error(&patch(at + 4 + 7 + 4 + 16, &9u64.to_le_bytes()));
    assert!(
        err.to_string()
            .contains("constant 0: 9 data bytes for shape [2, 2] of float16, which needs 8"),
        "{err}"
    );
    // Bytes after the last constant.
    let mut long = record.clone();
    long.extend_from_slice(b"xyz");
    let err = record_error(&long);
    assert_eq!(
        err,
        RecordError::Trailing {
            count: 3,
            offset: record.len()
        }
    );
}

/// The length of the constant at the start of `bytes`.
fn constant_len(bytes: &[u8]) -> usize {
    let u32_at = |c: usize| u32::from_le_bytes(bytes[c..c + 4].try_into().unwrap()) as usize;
    let dims_at = 4 + u32_at(0) + 4;
    let data_len_at = dims_at + 8 * u32_at(dims_at - 4);
    let data = u64::from_le_bytes(bytes[data_len_at..data_len_at + 8].try_into().unwrap());
    data_len_at + 8 + data as usize
}

#[test]
fn placeholders_that_name_no_constant_are_refused() {
    let record = partition().to_record().unwrap();
    let at = first_constant(&record);
    // Keep the first three constants only: the fourth placeholder then names nothing.
    let mut end = at;
    for _ in 0..3 {
        end += constant_len(&record[end..]);
    }
    let mut short = record[..end].to_vec();
    short[at - 8..at].copy_from_slice(&3u64.to_le_bytes());
    let err = PartitionedFunction::from_record(&short).unwrap_err();
    assert!(
        err.to_string()
            .contains("constant placeholder 3 names no constant (there are 3)"),
        "{err}"
    );
}
