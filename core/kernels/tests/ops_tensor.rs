//! The tensor op library's host kernels against numpy.
//!
//! Each fixture case `NAME` has inputs `NAME.in<i>.npy` and expected outputs `NAME.out<i>.npy`
//! under `tests/data/ops_tensor/`, written by `scripts/fixtures/gen_tensor_fixtures.py`. A case
//! builds a one-call module, runs type inference (so shapes come from the type relation), then
//! runs the op's host kernel and compares with numpy: integers and bools exactly, floats to a
//! relative tolerance. The second half checks type-relation error messages word for word.

use std::path::PathBuf;

use byoc_ir::infer_types;
use byoc_ir::op::OpRegistry;
use byoc_ir::tensor::Tensor;
use byoc_ir::{AttrValue, Attrs, Expr, FunctionBuilder, Module};
use byoc_ir::{DType, TensorType, Type};
use byoc_kernels::{host_kernel, KernelError};

fn data_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/data/ops_tensor")
}

fn load(path: &PathBuf) -> Tensor {
    byoc_artifact::io::read_npy(path).unwrap_or_else(|e| panic!("{e}"))
}

/// Loads `NAME.<kind>0.npy`, `NAME.<kind>1.npy`, ... until one is missing.
fn load_all(name: &str, kind: &str) -> Vec<Tensor> {
    (0..)
        .map(|i| data_dir().join(format!("{name}.{kind}{i}.npy")))
        .take_while(|p| p.exists())
        .map(|p| load(&p))
        .collect()
}

/// Runs `op` on `inputs` (packed into one tuple argument when `tuple`) and returns its outputs.
fn run_op(
    op: &str,
    attrs: Attrs,
    inputs: &[Tensor],
    tuple: bool,
    threads: usize,
) -> Result<Vec<Tensor>, KernelError> {
    let mut b = FunctionBuilder::new();
    let params: Vec<_> = inputs
        .iter()
        .enumerate()
        .map(|(i, t)| b.param(format!("x{i}"), Type::Tensor(t.ty().clone())))
        .collect();
    let args = if tuple {
        vec![b.tuple(&params).unwrap()]
    } else {
        params.clone()
    };
    let call = b.call(op, &args, attrs).unwrap();
    let f = b.finish(params, call, Attrs::new()).unwrap();
    let mut m = Module::from_main(f);
    infer_types(&mut m).unwrap_or_else(|e| panic!("{op}: {e}"));
    let main = m.main().unwrap();
    let Expr::Call(c) = main.expr(call) else {
        unreachable!()
    };
    let out_types: Vec<TensorType> = main
        .ty(call)
        .unwrap()
        .flatten_tensors()
        .into_iter()
        .cloned()
        .collect();
    let in_types: Vec<TensorType> = inputs.iter().map(|t| t.ty().clone()).collect();
    let def = OpRegistry::lookup(op).unwrap();
    let kernel = host_kernel(&def, &c.attrs, &in_types, &out_types)?;
    let mut outputs: Vec<Tensor> = out_types.into_iter().map(Tensor::zeros).collect();
    let views: Vec<_> = inputs.iter().map(Tensor::view).collect();
    let mut outs: Vec<_> = outputs.iter_mut().map(Tensor::view_mut).collect();
    kernel.run(&views, &mut outs, threads)?;
    Ok(outputs)
}

fn assert_close(case: &str, got: &Tensor, want: &Tensor) {
    assert_eq!(got.ty(), want.ty(), "{case}: output type");
    let rtol = match want.dtype() {
        DType::Float32 => 1e-5,
        DType::Float64 => 1e-12,
        _ => 0.0,
    };
    for (i, (g, w)) in got.to_f64_vec().iter().zip(want.to_f64_vec()).enumerate() {
        let ok = if rtol == 0.0 {
            *g == w
        } else {
            (g - w).abs() <= rtol * (1.0 + w.abs())
        };
        assert!(ok, "{case}: element {i}: got {g}, numpy says {w}");
    }
}

/// Runs fixture case `name` through `op` with `attrs`, on 1 and on 4 threads.
fn check(name: &str, op: &str, attrs: Attrs) {
    let inputs = load_all(name, "in");
    let want = load_all(name, "out");
    assert!(
        !want.is_empty(),
        "{name}: no fixture; run scripts/fixtures/gen_tensor_fixtures.py"
    );
    for threads in [1, 4] {
        let got = run_op(op, attrs.clone(), &inputs, op == "concatenate", threads)
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(got.len(), want.len(), "{name}: number of outputs");
        for (g, w) in got.iter().zip(&want) {
            assert_close(name, g, w);
        }
    }
}

fn ints(v: &[i64]) -> AttrValue {
    AttrValue::ints(v.iter().copied())
}

/// One `#[test]` per fixture case: `name: "op" (attr = value, ...)`.
macro_rules! fixture_cases {
    ($($name:ident: $op:literal $(, $k:ident = $v:expr)*;)*) => {$(
        #[test]
        fn $name() {
            #[allow(unused_mut, reason = "cases without attributes")]
            let mut attrs = Attrs::new();
            $(attrs.set(stringify!($k), $v);)*
            check(stringify!($name), $op, attrs);
        }
    )*};
}

fixture_cases! {
    relu: "nn.relu";
    abs: "abs";
    negative: "negative";
    exp: "exp";
    log: "log";
    sqrt: "sqrt";
    rsqrt: "rsqrt";
    erf: "erf";
    tanh: "tanh";
    sigmoid: "sigmoid";
    round: "round";
    floor: "floor";
    ceil: "ceil";
    clip: "clip", a_min = -0.5, a_max = 0.75;
    copy: "copy";
    exp_f64: "exp";
    erf_f64: "erf";
    round_f64: "round";
    relu_i8: "nn.relu";
    abs_i8: "abs";
    negative_i8: "negative";
    clip_i8: "clip", a_min = -10.0, a_max = 20.0;
    clip_i32: "clip", a_min = -100.0, a_max = 250.0;
    floor_i32: "floor";

    cast_f32_i32: "cast", dtype = "int32";
    cast_f32_i8: "cast", dtype = "int8";
    cast_i32_i8: "cast", dtype = "int8";
    cast_i32_u8: "cast", dtype = "uint8";
    cast_i32_f32: "cast", dtype = "float32";
    cast_f32_bool: "cast", dtype = "bool";
    cast_bool_f32: "cast", dtype = "float32";
    cast_bool_i32: "cast", dtype = "int32";
    cast_u8_i8: "cast", dtype = "int8";
    cast_u8_f64: "cast", dtype = "float64";
    cast_f64_f32: "cast", dtype = "float32";
    cast_i64_i32: "cast", dtype = "int32";

    add_same: "add";
    add_trailing: "add";
    add_both_sides: "add";
    add_scalar_lhs: "add";
    add_scalar_rhs: "add";
    subtract_outer: "subtract";
    multiply_rank_mismatch: "multiply";
    divide: "divide";
    power: "power";
    maximum: "maximum";
    minimum: "minimum";
    subtract_f64: "subtract";
    add_i8_wrap: "add";
    multiply_i8_wrap: "multiply";
    subtract_i8_wrap: "subtract";
    add_i32_wrap: "add";
    multiply_i32_wrap: "multiply";
    divide_i32_trunc: "divide";
    divide_i8_trunc: "divide";
    divide_u8: "divide";
    add_u8_wrap: "add";
    right_shift_i32: "right_shift";
    left_shift_i32: "left_shift";
    right_shift_i8: "right_shift";
    left_shift_i8_wrap: "left_shift";
    maximum_i32: "maximum";
    minimum_i8: "minimum";
    power_i32: "power";

    equal: "equal";
    not_equal: "not_equal";
    less: "less";
    less_equal: "less_equal";
    greater: "greater";
    greater_equal: "greater_equal";
    greater_equal_i32: "greater_equal";
    equal_i8_scalar: "equal";
    equal_bool: "equal";
    logical_and: "logical_and";
    logical_or: "logical_or";
    logical_not: "logical_not";

    where_bcast: "where";
    where_int_cond: "where";
    where_f64: "where";

    reshape_zero_infer: "reshape", newshape = ints(&[0, -1]);
    reshape_flat: "reshape", newshape = ints(&[-1]);
    reshape_keep_rest: "reshape", newshape = ints(&[2, -2]);
    reshape_merge: "reshape", newshape = ints(&[-3, 4]);
    reshape_split: "reshape", newshape = ints(&[-4, 1, -1, -2]);
    reshape_allowzero: "reshape", newshape = ints(&[4, 6]), allowzero = true;
    transpose_default: "transpose";
    transpose_axes: "transpose", axes = ints(&[1, 0, 2]);
    transpose_negative: "transpose", axes = ints(&[-1, 0, 1]);
    transpose_i16: "transpose", axes = ints(&[2, 0, 1]);
    squeeze_all: "squeeze";
    squeeze_axis: "squeeze", axis = ints(&[-2]);
    expand_dims_two: "expand_dims", axis = 1i64, num_newaxis = 2i64;
    expand_dims_last: "expand_dims", axis = -1i64;
    batch_flatten: "nn.batch_flatten";
    concatenate_axis1: "concatenate", axis = 1i64;
    concatenate_neg_axis_i8: "concatenate", axis = -1i64;
    concatenate_axis0: "concatenate";
    split_sections: "split", indices_or_sections = 3i64, axis = 1i64;
    split_indices: "split", indices_or_sections = ints(&[1, 4]), axis = -1i64;
    split_indices_axis0: "split", indices_or_sections = ints(&[2]);
    strided_slice_basic: "strided_slice", begin = ints(&[1, 0]), end = ints(&[3, 4]), strides = ints(&[1, 2]);
    strided_slice_reverse: "strided_slice", begin = ints(&[-1]), end = ints(&[-5]), strides = ints(&[-1]);
    strided_slice_neg_strides: "strided_slice", begin = ints(&[3, 4]), end = ints(&[0, 0]), strides = ints(&[-1, -2]);
    strided_slice_axes: "strided_slice", begin = ints(&[1]), end = ints(&[4]), axes = ints(&[1]);
    strided_slice_size: "strided_slice", begin = ints(&[1, 1]), end = ints(&[2, -1]), slice_mode = "size";
    strided_slice_clamp: "strided_slice", begin = ints(&[-100, -2]), end = ints(&[100, 100]);
    strided_slice_neg_begin: "strided_slice", begin = ints(&[-3, 0]), end = ints(&[-1, 5]), strides = ints(&[1, 3]);
    take_flat: "take";
    take_axis1: "take", axis = 1i64;
    take_clip: "take", axis = 0i64;
    take_wrap: "take", axis = -1i64, mode = "wrap";
    take_fast: "take", axis = 1i64, mode = "fast";
    take_i8: "take";

    sum_all: "sum";
    sum_keepdims: "sum", axis = ints(&[0, -1]), keepdims = true;
    mean_last: "mean", axis = -1i64;
    max_axis1: "max", axis = 1i64;
    min_exclude: "min", axis = 1i64, exclude = true;
    prod_axis0: "prod", axis = 0i64;
    sum_i8_wrap: "sum", axis = 1i64;
    mean_i32_trunc: "mean", axis = 0i64;
    max_i32_all: "max";
    argmax_axis1: "argmax", axis = 1i64;
    argmin_keepdims: "argmin", axis = -1i64, keepdims = true;
    argmax_all: "argmax";
    argmax_first_tie: "argmax", axis = 1i64;
    argmax_last_tie: "argmax", axis = 1i64, select_last_index = true;
    argmin_last_tie: "argmin", axis = 1i64, select_last_index = true;
    argmax_exclude: "argmax", axis = ints(&[0, 2]), exclude = true;

    zeros: "zeros", shape = ints(&[2, 3]);
    ones_i8: "ones", shape = ints(&[2, 3]), dtype = "int8";
    ones_bool: "ones", shape = ints(&[4]), dtype = "bool";
    full_trunc: "full", shape = ints(&[2, 3]), dtype = "int32";
    full_keep_dtype: "full", shape = ints(&[3]);
    full_f64: "full", shape = ints(&[2, 2]), dtype = "float64";
}

// ---- Hand-computed cases (values numpy does not define the way C does) ----

#[test]
fn cast_float_to_int_saturates_and_nan_is_zero() {
    let x = Tensor::from_vec([5], vec![1e10f32, -1e10, f32::NAN, 127.9, -128.9]).unwrap();
    let out = run_op("cast", Attrs::new().with("dtype", "int8"), &[x], false, 1).unwrap();
    assert_eq!(out[0].as_slice::<i8>().unwrap(), &[127, -128, 0, 127, -128]);
}

#[test]
fn integer_division_by_zero_gives_zero_and_shifts_out_of_range_are_defined() {
    let a = Tensor::from_vec([3], vec![5i32, -5, i32::MIN]).unwrap();
    let z = Tensor::from_vec([3], vec![0i32, 0, -1]).unwrap();
    let q = run_op("divide", Attrs::new(), &[a.clone(), z], false, 1).unwrap();
    assert_eq!(q[0].as_slice::<i32>().unwrap(), &[0, 0, i32::MIN]);
    let n = Tensor::from_vec([3], vec![32i32, 40, -1]).unwrap();
    let l = run_op(
        "left_shift",
        Attrs::new(),
        &[a.clone(), n.clone()],
        false,
        1,
    )
    .unwrap();
    assert_eq!(l[0].as_slice::<i32>().unwrap(), &[0, 0, i32::MIN]);
    let r = run_op("right_shift", Attrs::new(), &[a, n], false, 1).unwrap();
    assert_eq!(r[0].as_slice::<i32>().unwrap(), &[0, -1, i32::MIN]);
}

#[test]
fn take_fast_out_of_range_is_an_error_not_a_read() {
    let x = Tensor::from_vec([4], vec![1.0f32, 2.0, 3.0, 4.0]).unwrap();
    let i = Tensor::from_vec([2], vec![1i32, 4]).unwrap();
    let err = run_op("take", Attrs::new().with("mode", "fast"), &[x, i], false, 1).unwrap_err();
    assert_eq!(
        err.to_string(),
        "take: index 4 is out of range for an axis of size 4 (mode=\"fast\")"
    );
}

#[test]
fn maximum_and_minimum_propagate_nan() {
    let a = Tensor::from_vec([2], vec![f32::NAN, 1.0]).unwrap();
    let b = Tensor::from_vec([2], vec![0.0f32, f32::NAN]).unwrap();
    for op in ["maximum", "minimum"] {
        let out = run_op(op, Attrs::new(), &[a.clone(), b.clone()], false, 1).unwrap();
        assert!(
            out[0].as_slice::<f32>().unwrap().iter().all(|v| v.is_nan()),
            "{op}"
        );
    }
}

#[test]
fn large_broadcast_is_the_same_in_parallel() {
    // 3 * 256 * 128 = 98304 elements: above the parallel threshold.
    let n = 3 * 256 * 128;
    let a = Tensor::from_vec([3, 256, 128], (0..n).map(|i| (i % 97) as f32).collect()).unwrap();
    let b = Tensor::from_vec([256, 1], (0..256).map(|i| i as f32 * 0.5).collect()).unwrap();
    let seq = run_op("subtract", Attrs::new(), &[a.clone(), b.clone()], false, 1).unwrap();
    let par = run_op("subtract", Attrs::new(), &[a.clone(), b.clone()], false, 4).unwrap();
    assert_eq!(seq, par);
    let av = a.as_slice::<f32>().unwrap();
    let got = seq[0].as_slice::<f32>().unwrap();
    for idx in [0, 1, 128, 5000, n - 1] {
        let row = (idx / 128) % 256;
        assert_eq!(got[idx], av[idx] - row as f32 * 0.5, "element {idx}");
    }
    let s = run_op("sum", Attrs::new().with("axis", 0i64), &[a], false, 4).unwrap();
    assert_eq!(s[0].shape(), &[256, 128]);
    let sv = s[0].as_slice::<f32>().unwrap();
    for idx in [0, 77, 32767] {
        let want: f32 = (0..3).map(|k| ((k * 32768 + idx) % 97) as f32).sum();
        assert_eq!(sv[idx], want, "sum element {idx}");
    }
}

#[test]
fn kernel_rejects_tensors_of_other_types() {
    let def = OpRegistry::lookup("add").unwrap();
    let ty = TensorType::new([2], DType::Float32);
    let k = host_kernel(
        &def,
        &def.normalize_attrs(Attrs::new()).unwrap(),
        &[ty.clone(), ty.clone()],
        &[ty],
    )
    .unwrap();
    let x = Tensor::from_vec([3], vec![1.0f32, 2.0, 3.0]).unwrap();
    let mut out = Tensor::zeros(TensorType::new([2], DType::Float32));
    let err = k
        .run(&[x.view(), x.view()], &mut [out.view_mut()], 1)
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "add: input 0 is Tensor[(3), float32] (12 bytes) but the kernel was built for Tensor[(2), float32]"
    );
}

#[test]
fn half_precision_is_left_to_the_executor() {
    let def = OpRegistry::lookup("exp").unwrap();
    let ty = TensorType::new([2], DType::Float16);
    let err = host_kernel(
        &def,
        &Attrs::new(),
        std::slice::from_ref(&ty),
        std::slice::from_ref(&ty),
    )
    .err()
    .unwrap();
    assert_eq!(err.to_string(), "exp: host kernel does not support float16");
}

#[test]
fn views_and_patterns_are_declared() {
    for op in ["reshape", "squeeze", "expand_dims", "nn.batch_flatten"] {
        assert!(OpRegistry::lookup(op).unwrap().is_view, "{op}");
    }
    for op in ["transpose", "concatenate", "add", "exp"] {
        assert!(!OpRegistry::lookup(op).unwrap().is_view, "{op}");
    }
    use byoc_ir::op::OpPattern;
    let pattern = |op: &str| OpRegistry::lookup(op).unwrap().pattern;
    assert_eq!(pattern("exp"), OpPattern::ElemWise);
    assert_eq!(pattern("add"), OpPattern::Broadcast);
    assert_eq!(pattern("less"), OpPattern::Broadcast);
    assert_eq!(pattern("transpose"), OpPattern::Injective);
    assert_eq!(pattern("sum"), OpPattern::CommReduce);
    assert_eq!(pattern("argmax"), OpPattern::CommReduce);
}

// ---- Type-relation errors ----

/// The type error of calling `op` on arguments of these types (packed into a tuple when
/// `tuple`).
fn type_error(op: &str, attrs: Attrs, args: &[TensorType], tuple: bool) -> String {
    let mut b = FunctionBuilder::new();
    let params: Vec<_> = args
        .iter()
        .enumerate()
        .map(|(i, t)| b.param(format!("x{i}"), Type::Tensor(t.clone())))
        .collect();
    let call_args = if tuple {
        vec![b.tuple(&params).unwrap()]
    } else {
        params.clone()
    };
    let call = b.call(op, &call_args, attrs).unwrap();
    let f = b.finish(params, call, Attrs::new()).unwrap();
    let mut m = Module::from_main(f);
    infer_types(&mut m).unwrap_err().error.to_string()
}

fn f32t(shape: &[usize]) -> TensorType {
    TensorType::new(shape, DType::Float32)
}

#[test]
fn broadcast_mismatch_is_reported() {
    assert_eq!(
        type_error(
            "add",
            Attrs::new(),
            &[f32t(&[2, 3]), f32t(&[4, 3, 2])],
            false
        ),
        "add: shapes [2, 3] and [4, 3, 2] do not broadcast (dimension 1: 2 vs 3)"
    );
    assert_eq!(
        type_error(
            "add",
            Attrs::new(),
            &[f32t(&[2]), TensorType::new([2], DType::Int8)],
            false
        ),
        "add: operand dtypes differ: float32 vs int8"
    );
    assert_eq!(
        type_error(
            "right_shift",
            Attrs::new(),
            &[f32t(&[2]), f32t(&[2])],
            false
        ),
        "right_shift: requires integer operands, got float32"
    );
}

#[test]
fn reshape_element_count_mismatch_is_reported() {
    assert_eq!(
        type_error(
            "reshape",
            Attrs::new().with("newshape", ints(&[4, 2])),
            &[f32t(&[2, 3])],
            false
        ),
        "reshape: cannot reshape [2, 3] (6 elements) into [4, 2] (8 elements)"
    );
    assert_eq!(
        type_error(
            "reshape",
            Attrs::new().with("newshape", ints(&[4, -1])),
            &[f32t(&[2, 3])],
            false
        ),
        "reshape: cannot infer the -1 in newshape [4, -1] for input shape [2, 3] (6 elements)"
    );
}

#[test]
fn concatenate_mismatches_are_reported() {
    assert_eq!(
        type_error(
            "concatenate",
            Attrs::new(),
            &[f32t(&[2, 3]), f32t(&[2, 3, 1])],
            true
        ),
        "concatenate: field 1 has rank 3 but field 0 has rank 2"
    );
    assert_eq!(
        type_error(
            "concatenate",
            Attrs::new(),
            &[f32t(&[2, 3]), TensorType::new([2, 3], DType::Int32)],
            true
        ),
        "concatenate: field 1 has dtype int32 but field 0 has dtype float32"
    );
    assert_eq!(
        type_error(
            "concatenate",
            Attrs::new().with("axis", 1i64),
            &[f32t(&[2, 3]), f32t(&[3, 3])],
            true
        ),
        "concatenate: field 1 has shape [3, 3], which differs from field 0's [2, 3] outside axis 1"
    );
}

#[test]
fn bad_axes_are_reported() {
    assert_eq!(
        type_error(
            "sum",
            Attrs::new().with("axis", 2i64),
            &[f32t(&[2, 3])],
            false
        ),
        "sum: axis 2 is out of range for a tensor of rank 2 (expected -2 to 1)"
    );
    assert_eq!(
        type_error(
            "concatenate",
            Attrs::new().with("axis", -3i64),
            &[f32t(&[2, 3]), f32t(&[2, 3])],
            true
        ),
        "concatenate: axis -3 is out of range for a tensor of rank 2 (expected -2 to 1)"
    );
    assert_eq!(
        type_error(
            "transpose",
            Attrs::new().with("axes", ints(&[0, 0])),
            &[f32t(&[2, 3])],
            false
        ),
        "transpose: axis 0 is repeated in [0, 0]"
    );
    assert_eq!(
        type_error(
            "squeeze",
            Attrs::new().with("axis", ints(&[0])),
            &[f32t(&[2, 3])],
            false
        ),
        "squeeze: axis 0 has size 2, not 1"
    );
}

#[test]
fn split_sections_must_divide_the_axis() {
    assert_eq!(
        type_error(
            "split",
            Attrs::new()
                .with("indices_or_sections", 3i64)
                .with("axis", 1i64),
            &[f32t(&[2, 4])],
            false
        ),
        "split: 3 sections do not evenly divide axis 1 of size 4"
    );
    assert_eq!(
        type_error(
            "split",
            Attrs::new().with("indices_or_sections", ints(&[3, 1])),
            &[f32t(&[4])],
            false
        ),
        "split: split indices [3, 1] must be ascending and within 0 to 4 (axis 0)"
    );
}

#[test]
fn other_attribute_errors_are_reported() {
    assert_eq!(
        type_error(
            "exp",
            Attrs::new(),
            &[TensorType::new([2], DType::Int32)],
            false
        ),
        "exp: requires a floating-point tensor, got int32"
    );
    assert_eq!(
        type_error(
            "clip",
            Attrs::new().with("a_min", 1.0),
            &[f32t(&[2])],
            false
        ),
        "clip: attribute 'a_max' must be a float, got None"
    );
    assert_eq!(
        type_error("take", Attrs::new(), &[f32t(&[4]), f32t(&[2])], false),
        "take: indices must be int32 or int64, got float32"
    );
    assert_eq!(
        type_error(
            "strided_slice",
            Attrs::new()
                .with("begin", ints(&[0]))
                .with("end", ints(&[2]))
                .with("strides", ints(&[0])),
            &[f32t(&[4])],
            false
        ),
        "strided_slice: stride of axis 0 is 0"
    );
    assert_eq!(
        type_error("full", Attrs::new(), &[f32t(&[2])], false),
        "full: fill_value must be a scalar, got Tensor[(2), float32]"
    );
}

/// Round half up of `x * m * 2^shift / 2^31`, exactly (TVM's `q_multiply_shift`).
fn exact_fixed_point(x: i32, m: i32, shift: i32) -> i32 {
    let num = i128::from(x) * i128::from(m) * (1i128 << shift.max(0));
    let den = 1i128 << (31 + (-shift).max(0));
    (num + den / 2).div_euclid(den) as i32
}

#[test]
fn fixed_point_multiply_per_axis_rescales_each_channel_exactly() {
    let x: Vec<i32> = (0..24).map(|i| (i - 12) * 1_234_567 + i).collect();
    let multipliers = [1_518_500_250, 1 << 30, 2_000_000_000];
    let shifts = [-3, 0, 2];
    let inputs = [
        Tensor::from_vec([2, 3, 4], x.clone()).unwrap(),
        Tensor::from_vec([3], multipliers.to_vec()).unwrap(),
        Tensor::from_vec([3], shifts.to_vec()).unwrap(),
    ];
    let attrs = Attrs::new().with("axis", 1i64);
    let out = run_op(
        "fixed_point_multiply_per_axis",
        attrs.clone(),
        &inputs,
        false,
        1,
    )
    .unwrap();
    let got = out[0].as_slice::<i32>().unwrap();
    for (i, (&g, &v)) in got.iter().zip(&x).enumerate() {
        let c = (i / 4) % 3;
        assert_eq!(
            g,
            exact_fixed_point(v, multipliers[c], shifts[c]),
            "element {i}"
        );
    }
    // A shift outside [-32, 31] is a kernel error, not undefined shifting.
    let bad = [
        inputs[0].clone(),
        inputs[1].clone(),
        Tensor::from_vec([3], vec![0, 40, 0]).unwrap(),
    ];
    let err = run_op("fixed_point_multiply_per_axis", attrs, &bad, false, 1).unwrap_err();
    assert!(err.to_string().contains("shift 40"), "{err}");
}
