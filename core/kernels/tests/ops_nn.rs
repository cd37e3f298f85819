//! The neural-network ops' type relations and host kernels against numpy references.
//!
//! Each case builds a one-call module, infers its types, builds the op's host kernel and runs
//! it on the inputs of `tests/data/ops_nn/<case>_in<i>.npy`, comparing every result with
//! `<case>_out<i>.npy` (written by `scripts/fixtures/gen_nn_fixtures.py`). Integer results
//! must match exactly; float results to a relative tolerance. Kernels run with 1 and 2 threads.

use std::path::PathBuf;

use anyhow::{anyhow, bail, Context, Result};
use byoc_ir::infer_types;
use byoc_ir::op::OpRegistry;
use byoc_ir::Tensor;
use byoc_ir::{AttrValue, Attrs, DType, Expr, FunctionBuilder, Module, TensorType, Type};
use byoc_kernels::host_kernel;

fn data_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/data/ops_nn")
}

fn read_npy(path: &PathBuf) -> Result<Tensor> {
    Ok(byoc_artifact::io::read_npy(path)?)
}

/// Files `<case>_<kind><i>.npy` for i = 0, 1, ... while they exist.
fn load_all(case: &str, kind: &str) -> Result<Vec<Tensor>> {
    let mut out = Vec::new();
    loop {
        let p = data_dir().join(format!("{case}_{kind}{}.npy", out.len()));
        if !p.exists() {
            return Ok(out);
        }
        out.push(read_npy(&p)?);
    }
}

/// Builds `op(args..., attrs)` over parameters of the given types and infers its type.
/// Returns the normalized call attributes and the result type.
fn typed_call(op: &str, args: &[TensorType], attrs: Attrs) -> Result<(Attrs, Type)> {
    let mut b = FunctionBuilder::new();
    let params: Vec<_> = args
        .iter()
        .enumerate()
        .map(|(i, t)| b.param(format!("p{i}"), Type::Tensor(t.clone())))
        .collect();
    let call = b.call(op, &params, attrs)?;
    let f = b.finish(params, call, Attrs::new())?;
    let mut m = Module::from_main(f);
    infer_types(&mut m).map_err(|e| anyhow!("{e}"))?;
    let main = m.main()?;
    let Expr::Call(c) = main.expr(call) else {
        bail!("body is not a call");
    };
    let ty = main.ty(call).cloned().context("call has no type")?;
    Ok((c.attrs.clone(), ty))
}

/// The type error `infer_types` reports for `op(args..., attrs)`.
fn type_error(op: &str, args: &[TensorType], attrs: Attrs) -> String {
    match typed_call(op, args, attrs) {
        Ok((_, ty)) => panic!("{op}: expected a type error, got {ty}"),
        Err(e) => e.to_string(),
    }
}

fn check_close(case: &str, i: usize, got: &Tensor, want: &Tensor) {
    assert_eq!(got.ty(), want.ty(), "{case}: output {i} type");
    let (g, w) = (got.to_f64_vec(), want.to_f64_vec());
    let tol = match want.dtype() {
        DType::Float32 => 1e-4,
        DType::Float64 => 1e-10,
        _ => 0.0,
    };
    for (k, (a, b)) in g.iter().zip(&w).enumerate() {
        let err = (a - b).abs();
        assert!(
            err <= tol * (1.0 + b.abs()),
            "{case}: output {i} element {k}: got {a}, want {b}"
        );
    }
}

/// Runs one fixture case through type inference and the host kernel.
fn run_case(case: &str, op: &str, attrs: Attrs) {
    let inputs = load_all(case, "in").unwrap();
    let expected = load_all(case, "out").unwrap();
    assert!(!inputs.is_empty(), "{case}: no fixture inputs");
    let in_types: Vec<TensorType> = inputs.iter().map(|t| t.ty().clone()).collect();
    let (attrs, ty) = typed_call(op, &in_types, attrs).unwrap_or_else(|e| panic!("{case}: {e:#}"));
    let out_types: Vec<TensorType> = ty.flatten_tensors().into_iter().cloned().collect();
    assert_eq!(out_types.len(), expected.len(), "{case}: result count");
    let opdef = OpRegistry::lookup(op).unwrap();
    let kernel = host_kernel(&opdef, &attrs, &in_types, &out_types)
        .unwrap_or_else(|e| panic!("{case}: {e}"));
    for threads in [1, 2] {
        let mut outs: Vec<Tensor> = out_types.iter().cloned().map(Tensor::zeros).collect();
        let views: Vec<_> = inputs.iter().map(Tensor::view).collect();
        let mut out_views: Vec<_> = outs.iter_mut().map(Tensor::view_mut).collect();
        kernel
            .run(&views, &mut out_views, threads)
            .unwrap_or_else(|e| panic!("{case}: {e}"));
        for (i, (g, w)) in outs.iter().zip(&expected).enumerate() {
            check_close(&format!("{case} (threads={threads})"), i, g, w);
        }
    }
}

fn ints(v: &[i64]) -> AttrValue {
    AttrValue::ints(v.iter().copied())
}

fn a() -> Attrs {
    Attrs::new()
}

#[test]
fn conv2d_float() {
    run_case(
        "conv2d_basic",
        "nn.conv2d",
        a().with("padding", ints(&[1, 1])),
    );
    run_case(
        "conv2d_stride_dil_pad4",
        "nn.conv2d",
        a().with("strides", ints(&[2, 1]))
            .with("padding", ints(&[1, 2, 0, 1]))
            .with("dilation", ints(&[2, 1])),
    );
    run_case(
        "conv2d_groups",
        "nn.conv2d",
        a().with("padding", ints(&[1])).with("groups", 2i64),
    );
    run_case(
        "conv2d_depthwise",
        "nn.conv2d",
        a().with("padding", ints(&[1]))
            .with("strides", ints(&[2, 2]))
            .with("groups", 3i64)
            .with("channels", 6i64)
            .with("kernel_size", ints(&[3, 3])),
    );
    run_case("conv2d_1x1", "nn.conv2d", a());
    run_case(
        "conv2d_ohwi",
        "nn.conv2d",
        a().with("padding", ints(&[0, 1]))
            .with("kernel_layout", "OHWI"),
    );
    run_case(
        "conv2d_f64",
        "nn.conv2d",
        a().with("padding", ints(&[1]))
            .with("strides", ints(&[2, 2])),
    );
}

fn nhwc() -> Attrs {
    a().with("data_layout", "NHWC")
        .with("kernel_layout", "HWIO")
}

#[test]
fn conv2d_nhwc() {
    run_case(
        "conv2d_nhwc_hwio",
        "nn.conv2d",
        nhwc().with("padding", ints(&[1, 0])),
    );
    run_case(
        "conv2d_nhwc_groups",
        "nn.conv2d",
        nhwc()
            .with("padding", ints(&[1]))
            .with("groups", 2i64)
            .with("strides", ints(&[2, 2])),
    );
    run_case(
        "conv2d_1x1_nhwc_groups",
        "nn.conv2d",
        nhwc().with("groups", 2i64),
    );
}

#[test]
fn conv2d_quantized_accumulates_in_int32() {
    run_case(
        "conv2d_int8",
        "nn.conv2d",
        a().with("padding", ints(&[1])).with("out_dtype", "int32"),
    );
    run_case(
        "conv2d_uint8_int8",
        "nn.conv2d",
        a().with("padding", ints(&[1]))
            .with("groups", 2i64)
            .with("out_dtype", "int32"),
    );
    run_case(
        "conv2d_int8_nhwc",
        "nn.conv2d",
        nhwc()
            .with("padding", ints(&[1]))
            .with("out_dtype", "int32"),
    );
}

#[test]
fn conv2d_transpose() {
    run_case(
        "conv2d_transpose_basic",
        "nn.conv2d_transpose",
        a().with("strides", ints(&[2, 2]))
            .with("padding", ints(&[1]))
            .with("output_padding", ints(&[1, 1])),
    );
    run_case(
        "conv2d_transpose_groups_dil",
        "nn.conv2d_transpose",
        a().with("strides", ints(&[1, 2]))
            .with("padding", ints(&[1, 0, 0, 1]))
            .with("output_padding", ints(&[0, 1]))
            .with("dilation", ints(&[2, 1]))
            .with("groups", 2i64),
    );
    run_case(
        "conv2d_transpose_int8",
        "nn.conv2d_transpose",
        a().with("strides", ints(&[2, 2]))
            .with("out_dtype", "int32"),
    );
}

#[test]
fn dense_and_batch_matmul() {
    run_case("dense", "nn.dense", a().with("units", 7i64));
    run_case("dense_3d", "nn.dense", a());
    run_case("dense_f64", "nn.dense", a());
    run_case("dense_int8", "nn.dense", a().with("out_dtype", "int32"));
    run_case("batch_matmul", "nn.batch_matmul", a());
    run_case(
        "batch_matmul_ta_bcast",
        "nn.batch_matmul",
        a().with("transpose_a", true).with("transpose_b", false),
    );
}

#[test]
fn normalization() {
    run_case("bias_add", "nn.bias_add", a());
    run_case("bias_add_last", "nn.bias_add", a().with("axis", -1i64));
    run_case("bias_add_int32", "nn.bias_add", a());
    run_case("batch_norm", "nn.batch_norm", a());
    run_case(
        "batch_norm_axis3",
        "nn.batch_norm",
        a().with("axis", 3i64)
            .with("epsilon", 1e-3)
            .with("center", false),
    );
    run_case("layer_norm", "nn.layer_norm", a());
    run_case(
        "layer_norm_axis1",
        "nn.layer_norm",
        a().with("axis", 1i64).with("scale", false),
    );
    run_case("lrn", "nn.lrn", a());
    run_case(
        "lrn_axis2",
        "nn.lrn",
        a().with("size", 3i64)
            .with("axis", 2i64)
            .with("bias", 1.0)
            .with("alpha", 0.5)
            .with("beta", 0.5),
    );
}

#[test]
fn softmax_family() {
    run_case("softmax", "nn.softmax", a());
    run_case("softmax_axis1", "nn.softmax", a().with("axis", 1i64));
    run_case("softmax_f64", "nn.softmax", a());
    run_case("log_softmax", "nn.log_softmax", a());
    run_case(
        "log_softmax_axis0",
        "nn.log_softmax",
        a().with("axis", 0i64),
    );
}

fn pool(size: &[i64], strides: &[i64]) -> Attrs {
    a().with("pool_size", ints(size))
        .with("strides", ints(strides))
}

#[test]
fn max_pool2d() {
    run_case(
        "max_pool2d",
        "nn.max_pool2d",
        pool(&[3, 3], &[2, 2]).with("padding", ints(&[1])),
    );
    run_case(
        "max_pool2d_ceil",
        "nn.max_pool2d",
        pool(&[3, 3], &[2, 2]).with("ceil_mode", true),
    );
    run_case(
        "max_pool2d_dilation",
        "nn.max_pool2d",
        pool(&[2, 3], &[1, 2])
            .with("dilation", ints(&[2, 2]))
            .with("padding", ints(&[1, 0, 0, 1])),
    );
    run_case(
        "max_pool2d_nhwc",
        "nn.max_pool2d",
        pool(&[2, 2], &[2, 2])
            .with("padding", ints(&[0, 0, 1, 1]))
            .with("layout", "NHWC"),
    );
}

#[test]
fn avg_pool2d() {
    run_case(
        "avg_pool2d",
        "nn.avg_pool2d",
        pool(&[3, 3], &[2, 2]).with("padding", ints(&[1])),
    );
    run_case(
        "avg_pool2d_include_pad",
        "nn.avg_pool2d",
        pool(&[3, 3], &[2, 2])
            .with("padding", ints(&[1]))
            .with("count_include_pad", true),
    );
    run_case(
        "avg_pool2d_ceil_include_pad",
        "nn.avg_pool2d",
        pool(&[3, 3], &[2, 2])
            .with("padding", ints(&[1, 0]))
            .with("ceil_mode", true)
            .with("count_include_pad", true),
    );
    run_case(
        "avg_pool2d_ceil",
        "nn.avg_pool2d",
        pool(&[3, 3], &[2, 2]).with("ceil_mode", true),
    );
    run_case(
        "avg_pool2d_nhwc_pad4",
        "nn.avg_pool2d",
        pool(&[3, 2], &[1, 2])
            .with("padding", ints(&[1, 0, 2, 1]))
            .with("count_include_pad", true)
            .with("layout", "NHWC"),
    );
    run_case("avg_pool2d_f64", "nn.avg_pool2d", pool(&[2, 2], &[2, 2]));
}

#[test]
fn global_pool2d() {
    run_case("global_avg_pool2d", "nn.global_avg_pool2d", a());
    run_case("global_max_pool2d", "nn.global_max_pool2d", a());
    run_case(
        "global_avg_pool2d_nhwc",
        "nn.global_avg_pool2d",
        a().with("layout", "NHWC"),
    );
}

fn pad_width() -> AttrValue {
    AttrValue::List(vec![ints(&[0, 1]), ints(&[2, 1]), ints(&[1, 3])])
}

#[test]
fn pad_modes() {
    run_case("pad_constant", "nn.pad", a().with("pad_width", pad_width()));
    run_case(
        "pad_edge",
        "nn.pad",
        a().with("pad_width", pad_width()).with("pad_mode", "edge"),
    );
    run_case(
        "pad_reflect",
        "nn.pad",
        a().with("pad_width", pad_width())
            .with("pad_mode", "reflect"),
    );
    run_case(
        "pad_int8",
        "nn.pad",
        a().with(
            "pad_width",
            AttrValue::List(vec![ints(&[1, 0]), ints(&[0, 2])]),
        ),
    );
    run_case(
        "pad_value_cast",
        "nn.pad",
        a().with("pad_width", pad_width()),
    );
}

fn resize(size: &[i64], method: &str, mode: &str) -> Attrs {
    a().with("size", ints(size))
        .with("method", method)
        .with("coordinate_transformation_mode", mode)
}

#[test]
fn resize2d() {
    let nn = "nearest_neighbor";
    run_case(
        "resize_nearest_asymmetric",
        "image.resize2d",
        resize(&[8, 6], nn, "asymmetric"),
    );
    run_case(
        "resize_nearest_half_pixel",
        "image.resize2d",
        resize(&[6, 7], nn, "half_pixel"),
    );
    run_case(
        "resize_nearest_align_corners",
        "image.resize2d",
        resize(&[7, 5], nn, "align_corners"),
    );
    run_case(
        "resize_nearest_ceil",
        "image.resize2d",
        resize(&[3, 6], nn, "asymmetric").with("rounding_method", "ceil"),
    );
    run_case(
        "resize_linear_half_pixel",
        "image.resize2d",
        resize(&[8, 6], "linear", "half_pixel"),
    );
    run_case(
        "resize_linear_align_corners",
        "image.resize2d",
        resize(&[7, 7], "linear", "align_corners"),
    );
    run_case(
        "resize_linear_asymmetric",
        "image.resize2d",
        resize(&[5, 8], "linear", "asymmetric"),
    );
    run_case(
        "resize_linear_down",
        "image.resize2d",
        resize(&[3, 2], "linear", "half_pixel"),
    );
    run_case(
        "resize_cubic_half_pixel",
        "image.resize2d",
        resize(&[7, 6], "cubic", "half_pixel"),
    );
    run_case(
        "resize_linear_nhwc",
        "image.resize2d",
        resize(&[5, 6], "linear", "half_pixel").with("layout", "NHWC"),
    );
}

#[test]
fn activations_and_dropout() {
    run_case("prelu", "nn.prelu", a());
    run_case("leaky_relu", "nn.leaky_relu", a());
    run_case("leaky_relu_alpha", "nn.leaky_relu", a().with("alpha", 0.2));
    run_case("dropout", "nn.dropout", a().with("rate", 0.25));
}

fn f32t(shape: &[usize]) -> TensorType {
    TensorType::new(shape.to_vec(), DType::Float32)
}

#[test]
fn type_relations_infer_relay_shapes() {
    let (_, t) = typed_call(
        "nn.conv2d",
        &[f32t(&[1, 3, 224, 224]), f32t(&[64, 3, 7, 7])],
        a().with("strides", ints(&[2, 2]))
            .with("padding", ints(&[3])),
    )
    .unwrap();
    assert_eq!(t.to_string(), "Tensor[(1, 64, 112, 112), float32]");
    let (_, t) = typed_call(
        "nn.batch_norm",
        &[
            f32t(&[1, 8, 4, 4]),
            f32t(&[8]),
            f32t(&[8]),
            f32t(&[8]),
            f32t(&[8]),
        ],
        a(),
    )
    .unwrap();
    assert_eq!(
        t.to_string(),
        "(Tensor[(1, 8, 4, 4), float32], Tensor[(8), float32], Tensor[(8), float32])"
    );
    let (_, t) = typed_call("nn.dropout", &[f32t(&[2, 3])], a()).unwrap();
    assert_eq!(
        t.to_string(),
        "(Tensor[(2, 3), float32], Tensor[(2, 3), float32])"
    );
    let (_, t) = typed_call(
        "nn.max_pool2d",
        &[f32t(&[1, 3, 6, 6])],
        pool(&[3, 3], &[2, 2]).with("ceil_mode", true),
    )
    .unwrap();
    assert_eq!(t.to_string(), "Tensor[(1, 3, 3, 3), float32]");
    let (attrs, t) = typed_call(
        "nn.conv2d",
        &[
            TensorType::new([1, 4, 5, 5], DType::Int8),
            TensorType::new([2, 4, 3, 3], DType::Int8),
        ],
        a().with("out_dtype", "int32"),
    )
    .unwrap();
    assert_eq!(t.to_string(), "Tensor[(1, 2, 3, 3), int32]");
    assert_eq!(attrs.get_str("kernel_layout"), Some("OIHW"));
    let (attrs, _) = typed_call(
        "nn.batch_matmul",
        &[f32t(&[1, 2, 3]), f32t(&[1, 4, 3])],
        a(),
    )
    .unwrap();
    assert_eq!(attrs.get("transpose_b"), Some(&AttrValue::Bool(true)));
}

#[test]
fn type_errors_name_the_problem() {
    let conv = type_error(
        "nn.conv2d",
        &[f32t(&[1, 3, 8, 8]), f32t(&[8, 4, 3, 3])],
        a(),
    );
    assert_eq!(
        conv,
        "in @main, at %2: nn.conv2d: input has 3 channels but weight expects 4 (groups=1)"
    );
    let dense = type_error("nn.dense", &[f32t(&[2, 8]), f32t(&[4, 7])], a());
    assert_eq!(
        dense,
        "in @main, at %2: nn.dense: data has 8 input features but weight [4, 7] expects 7"
    );
    let pool_pad = type_error(
        "nn.max_pool2d",
        &[f32t(&[1, 3, 8, 8])],
        pool(&[2, 2], &[2, 2]).with("padding", ints(&[1, 1, 1])),
    );
    assert_eq!(
        pool_pad,
        "in @main, at %1: nn.max_pool2d: padding must have 1, 2 or 4 values, got 3"
    );
    let bn = type_error(
        "nn.batch_norm",
        &[
            f32t(&[1, 8, 4, 4]),
            f32t(&[8]),
            f32t(&[8]),
            f32t(&[8]),
            f32t(&[8]),
        ],
        a().with("axis", 4i64),
    );
    assert_eq!(
        bn,
        "in @main, at %5: nn.batch_norm: axis 4 is out of range for a rank-4 input"
    );
    let mixed = type_error(
        "nn.conv2d",
        &[
            f32t(&[1, 3, 8, 8]),
            TensorType::new([8, 3, 3, 3], DType::Float64),
        ],
        a(),
    );
    assert!(
        mixed.ends_with("nn.conv2d: data dtype float32 differs from weight dtype float64"),
        "{mixed}"
    );
    let big = type_error(
        "nn.conv2d",
        &[f32t(&[1, 3, 4, 4]), f32t(&[8, 3, 5, 5])],
        a().with("dilation", ints(&[1, 1])),
    );
    assert!(
        big.ends_with("dilated kernel height 5 exceeds padded input height 4"),
        "{big}"
    );
    let layout = type_error(
        "nn.conv2d",
        &[f32t(&[1, 3, 4, 4]), f32t(&[8, 3, 1, 1])],
        a().with("data_layout", "NCWH"),
    );
    assert!(
        layout.ends_with("data_layout must be NCHW or NHWC, got 'NCWH'"),
        "{layout}"
    );
    let reflect = type_error(
        "nn.pad",
        &[f32t(&[2, 3]), f32t(&[])],
        a().with(
            "pad_width",
            AttrValue::List(vec![ints(&[0, 0]), ints(&[3, 0])]),
        )
        .with("pad_mode", "reflect"),
    );
    assert!(
        reflect.ends_with("reflect padding of axis 1 by [3, 0] needs more than its 3 elements"),
        "{reflect}"
    );
}

#[test]
fn half_precision_kernels_are_rejected_cleanly() {
    let f16 = TensorType::new([1, 2, 4, 4], DType::Float16);
    let op = OpRegistry::lookup("nn.max_pool2d").unwrap();
    let (attrs, ty) = typed_call(
        "nn.max_pool2d",
        std::slice::from_ref(&f16),
        pool(&[2, 2], &[2, 2]),
    )
    .unwrap();
    let out = ty.as_tensor().unwrap().clone();
    let err = host_kernel(&op, &attrs, &[f16], &[out]).err().unwrap();
    assert_eq!(
        err.to_string(),
        "nn.max_pool2d: host kernel does not support float16"
    );
}

#[test]
fn op_patterns_follow_tvm() {
    use byoc_ir::op::OpPattern::*;
    for (name, pattern) in [
        ("nn.conv2d", OutEWiseFusable),
        ("nn.conv2d_transpose", OutEWiseFusable),
        ("nn.dense", OutEWiseFusable),
        ("nn.batch_matmul", OutEWiseFusable),
        ("nn.bias_add", Broadcast),
        ("nn.max_pool2d", OutEWiseFusable),
        ("nn.global_avg_pool2d", OutEWiseFusable),
        ("nn.softmax", OutEWiseFusable),
        ("nn.pad", Injective),
        ("image.resize2d", Injective),
        ("nn.leaky_relu", ElemWise),
        ("nn.prelu", Broadcast),
        ("nn.batch_norm", Opaque),
        ("nn.dropout", Opaque),
    ] {
        assert_eq!(OpRegistry::lookup(name).unwrap().pattern, pattern, "{name}");
    }
}
