//! .npy/.npz reading against files numpy wrote (scripts/fixtures/gen_npz_fixtures.py), round
//! trips, and the errors of damaged or unsupported files.

use std::collections::BTreeMap;
use std::path::PathBuf;

use byoc_artifact::io::{read_npy, read_npz, write_npy, write_npz};
use byoc_ir::{DType, Tensor, TensorType};
use half::f16;

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/data/npz")
        .join(name)
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("byoc-io-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

fn check(t: &Tensor, shape: &[usize], dtype: DType, values: &[f64]) {
    assert_eq!(t.ty(), &TensorType::new(shape, dtype));
    assert_eq!(t.to_f64_vec(), values);
}

fn check_all_dtypes(m: &BTreeMap<String, Tensor>) {
    let keys: Vec<&str> = m.keys().map(String::as_str).collect();
    assert_eq!(
        keys,
        ["b", "f16", "f32", "f64", "i16", "i32", "i64", "i8", "scalar", "u8"]
    );
    check(&m["b"], &[3], DType::Bool, &[1.0, 0.0, 1.0]);
    check(&m["i8"], &[3], DType::Int8, &[-128.0, 0.0, 127.0]);
    check(&m["i16"], &[2, 2], DType::Int16, &[-2.0, -1.0, 0.0, 1.0]);
    check(
        &m["i32"],
        &[2, 3],
        DType::Int32,
        &[0.0, 1.0, 2.0, 3.0, 4.0, 5.0],
    );
    check(
        &m["i64"],
        &[2],
        DType::Int64,
        &[-(2f64.powi(40)), 2f64.powi(40)],
    );
    check(&m["u8"], &[2], DType::UInt8, &[0.0, 255.0]);
    check(&m["f16"], &[3], DType::Float16, &[0.5, -2.0, 65504.0]);
    let quarters: Vec<f64> = (0..24).map(|i| f64::from(i) / 4.0).collect();
    check(&m["f32"], &[2, 3, 4], DType::Float32, &quarters);
    check(&m["f64"], &[1], DType::Float64, &[1.0 / 3.0]);
    check(&m["scalar"], &[], DType::Float32, &[7.0]);
}

#[test]
fn reads_every_dtype_numpy_wrote() {
    check_all_dtypes(&read_npz(fixture("all_dtypes.npz")).unwrap());
    check_all_dtypes(&read_npz(fixture("compressed.npz")).unwrap());
}

#[test]
fn reads_c_fortran_and_big_endian_npy() {
    let c = read_npy(fixture("f32_c.npy")).unwrap();
    check(&c, &[2, 3], DType::Float32, &[0.0, 1.0, 2.0, 3.0, 4.0, 5.0]);
    let f = read_npy(fixture("i32_fortran.npy")).unwrap();
    let arange: Vec<f64> = (0..24).map(f64::from).collect();
    check(&f, &[2, 3, 4], DType::Int32, &arange);
    let be = read_npy(fixture("f64_big_endian.npy")).unwrap();
    check(&be, &[2], DType::Float64, &[1.5, -2.25]);
}

#[test]
fn npz_round_trip_keeps_every_dtype() {
    let original = read_npz(fixture("all_dtypes.npz")).unwrap();
    let path = scratch("round_trip.npz");
    write_npz(&path, &original).unwrap();
    let back = read_npz(&path).unwrap();
    assert_eq!(back, original);
}

#[test]
fn npy_round_trip() {
    let t = Tensor::from_vec(
        [2, 2],
        vec![f16::from_f32(1.5), f16::ONE, f16::ZERO, f16::MAX],
    )
    .unwrap();
    let path = scratch("half.npy");
    write_npy(&path, &t).unwrap();
    assert_eq!(read_npy(&path).unwrap(), t);
    // The header is numpy's: magic, version 1.0, a little-endian half dtype, C order.
    let bytes = std::fs::read(&path).unwrap();
    assert_eq!(&bytes[..8], b"\x93NUMPY\x01\x00");
    let header = String::from_utf8_lossy(&bytes[10..]);
    assert!(
        header.starts_with("{'descr': '<f2', 'fortran_order': False, 'shape': (2, 2, ), }"),
        "{header}"
    );
}

#[test]
fn truncated_files_name_the_file() {
    let err = read_npy(fixture("truncated.npy")).unwrap_err();
    let msg = err.to_string();
    assert!(
        msg.ends_with(
            "truncated.npy: Tensor[(2, 3), float32] needs 24 bytes of data but the array holds 19"
        ),
        "{msg}"
    );
    let err = read_npz(fixture("truncated.npz")).unwrap_err();
    let msg = err.to_string();
    assert!(
        msg.contains("truncated.npz: not a valid .npz archive"),
        "{msg}"
    );
}

#[test]
fn damaged_entry_is_reported_with_its_name() {
    // Flip one data byte of the stored (uncompressed) `f32` entry: its CRC check fails.
    let path = scratch("damaged_entry.npz");
    let mut bytes = std::fs::read(fixture("all_dtypes.npz")).unwrap();
    let name_at = bytes
        .windows(7)
        .position(|w| w == b"f32.npy")
        .expect("the archive has an f32 entry");
    // The entry's data: the .npy magic after the entry name, its 128-byte header, the data.
    let magic_at = name_at
        + bytes[name_at..]
            .windows(6)
            .position(|w| w == b"\x93NUMPY")
            .expect("the entry holds an .npy array");
    bytes[magic_at + 128 + 8] ^= 0xff;
    std::fs::write(&path, &bytes).unwrap();
    let err = read_npz(&path).unwrap_err();
    assert_eq!(err.entry.as_deref(), Some("f32"));
    assert!(
        err.to_string()
            .contains(", array 'f32': not a valid .npz archive"),
        "{err}"
    );
}

#[test]
fn unsupported_dtypes_are_rejected_clearly() {
    let err = read_npy(fixture("complex.npy")).unwrap_err();
    assert!(
        err.to_string().ends_with(
            "complex.npy: numpy dtype '<c8' is not supported (supported: bool, int8, int16, \
             int32, int64, uint8, float16, float32, float64)"
        ),
        "{err}"
    );
    let bf = Tensor::from_f64(TensorType::new([2], DType::BFloat16), &[1.0, 2.0]).unwrap();
    let mut m = BTreeMap::new();
    m.insert("weights".to_string(), bf);
    let path = scratch("bf16.npz");
    let err = write_npz(&path, &m).unwrap_err();
    assert_eq!(err.entry.as_deref(), Some("weights"));
    assert!(
        err.to_string()
            .contains(", array 'weights': dtype bfloat16 has no numpy equivalent"),
        "{err}"
    );
    assert!(!path.exists(), "nothing is written when a dtype is refused");
}

#[test]
fn missing_and_non_numpy_files_are_errors() {
    let err = read_npz(fixture("does_not_exist.npz")).unwrap_err();
    assert!(err.to_string().contains("does_not_exist.npz: "), "{err}");
    let err = read_npy(fixture("all_dtypes.npz")).unwrap_err();
    assert!(err.to_string().contains("not a valid .npy array"), "{err}");
}
