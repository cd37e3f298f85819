//! Custom datatypes through the LLVM host code generator against the interpreted loop: the
//! posit plugin is built as a `.so` and loaded; every op of TVM's posit test set, a property
//! test over random elementwise chains and SqueezeNet run in posit8/16/32 compiled
//! (`--host-codegen llvm`) and interpreted (`kernels`), and the results must be identical bit
//! for bit. Also: an op the code generator cannot compile falls back to the interpreted loop
//! with a note (an error when strict), and an artifact with compiled custom-datatype code runs
//! from the artifact and refuses clearly without the datatype's plugin.

mod plugin_build;
mod posit_plugin;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use byoc_artifact::io::read_npz;
use byoc_exec::plugin::load_plugin;
use byoc_exec::{ExecOptions, Executor, ExternalModules};
use byoc_host_llvm::{compile_host, HostCodegenError};
use byoc_ir::tensor::Tensor;
use byoc_ir::text::parse_module;
use byoc_ir::DType;
use byoc_ir::Module;
use byoc_kernels::datatypes::convert_tensor;
use byoc_passes::{ChangeDatatype, Pass, PassContext, SimplifyInference};
use byoc_pipeline::datatype::convert_to_datatype;
use byoc_sdk::{CompileOptions, THREADS_OPTION};
use posit_plugin::posit_so;
use proptest::prelude::*;
use rand::{Rng, SeedableRng};

fn loaded() {
    static LOADED: OnceLock<()> = OnceLock::new();
    LOADED.get_or_init(|| {
        load_plugin(posit_so()).expect("the posit plugin loads");
    });
}

fn posit(n: u32) -> DType {
    format!("custom[posites2]{n}").parse().unwrap()
}

/// Seeded float32 values in `lo..hi`.
fn values(seed: u64, count: usize, lo: f32, hi: f32) -> Vec<f32> {
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    (0..count).map(|_| rng.gen_range(lo..hi)).collect()
}

fn options(threads: usize) -> CompileOptions {
    CompileOptions::new().with(THREADS_OPTION, threads.to_string())
}

fn run(m: &Module, externals: &ExternalModules, threads: usize, x: &[Tensor]) -> Vec<Tensor> {
    Executor::with_externals(
        m,
        ExecOptions {
            threads,
            profile: false,
            memory_budget: None,
        },
        externals,
    )
    .and_then(|e| e.run(x))
    .unwrap_or_else(|e| panic!("the module runs: {e}"))
}

/// `module` run interpreted and compiled (strict: every host function must compile) with 1
/// and 3 threads must give the same bytes; returns the number of compiled functions.
fn same_bits(what: &str, module: &Module, x: &[Tensor]) -> usize {
    let want = run(module, &ExternalModules::new(), 1, x);
    let host = compile_host(module, &options(3), true)
        .unwrap_or_else(|e| panic!("{what}: host code generation: {e}"));
    assert!(host.fallbacks.is_empty(), "{what}: {:?}", host.fallbacks);
    for threads in [1, 3] {
        let got = run(&host.module, &host.externals, threads, x);
        assert_eq!(got.len(), want.len(), "{what}: outputs");
        for (i, (g, w)) in got.iter().zip(&want).enumerate() {
            assert_eq!(g.dtype(), w.dtype(), "{what}: output {i} dtype");
            assert!(
                g.as_bytes() == w.as_bytes(),
                "{what}: output {i} differs from the interpreted loop ({threads} threads)"
            );
        }
    }
    host.externals.len()
}

/// `text` in posit`n` two ways: everything converted after `simplify-inference` (inputs and
/// outputs as bit patterns) and as `--dtype` converts it, @main's float32 interface kept
/// (casts at the boundaries).
fn check_model(what: &str, text: &str, inputs: &[Tensor], n: u32) {
    let module = parse_module(text).unwrap();
    let dtype = posit(n);
    let mut all = module.clone();
    SimplifyInference::default()
        .run(&mut all, &mut PassContext::default())
        .unwrap();
    ChangeDatatype::new(DType::Float32, dtype)
        .run(&mut all, &mut PassContext::default())
        .unwrap();
    let bits: Vec<Tensor> = inputs
        .iter()
        .map(|t| convert_tensor(t, dtype).unwrap())
        .collect();
    let compiled = same_bits(&format!("{what} (posit{n})"), &all, &bits);
    assert!(compiled >= 1, "{what} (posit{n}): nothing was compiled");
    let interface = convert_to_datatype(&module, dtype).unwrap();
    same_bits(
        &format!("{what} (posit{n}, float32 interface)"),
        &interface,
        inputs,
    );
}

/// TVM's posit test set (tests/python/relay/test_custom_datatypes.py): each model with
/// seeded inputs.
fn tvm_cases() -> Vec<(String, String, Vec<Tensor>)> {
    let mut cases = Vec::new();
    let tensor = |seed: u64, shape: &[usize], lo: f32, hi: f32| {
        let n = shape.iter().product();
        Tensor::from_vec(shape.to_vec(), values(seed, n, lo, hi)).unwrap()
    };
    let x = "%x: Tensor[(5, 10, 5), float32]";
    for op in [
        "nn.softmax",
        "log",
        "exp",
        "sqrt",
        "rsqrt",
        "sigmoid",
        "tanh",
        "nn.relu",
    ] {
        cases.push((
            op.to_string(),
            format!("def @main({x}) {{ {op}(%x) }}"),
            vec![tensor(1, &[5, 10, 5], 0.0, 1.0)],
        ));
    }
    for op in [
        "nn.max_pool2d(%x, pool_size=[3, 3], strides=[2, 2], padding=[1, 1, 1, 1])",
        "nn.avg_pool2d(%x, pool_size=[3, 3], strides=[2, 2], padding=[1, 1, 1, 1])",
        "nn.avg_pool2d(%x, pool_size=[3, 3], strides=[2, 2], padding=[1, 1, 1, 1], count_include_pad=True)",
        "nn.global_avg_pool2d(%x)",
        "nn.global_max_pool2d(%x)",
    ] {
        cases.push((
            op.split('(').next().unwrap_or(op).to_string(),
            format!("def @main(%x: Tensor[(3, 8, 9, 9), float32]) {{ {op} }}"),
            vec![tensor(2, &[3, 8, 9, 9], -1.0, 1.0)],
        ));
    }
    for op in [
        "add", "subtract", "divide", "multiply", "maximum", "minimum",
    ] {
        cases.push((
            op.to_string(),
            format!("def @main({x}, %y: Tensor[(5), float32]) {{ {op}(%x, %y) }}"),
            vec![tensor(3, &[5, 10, 5], 0.0, 1.0), tensor(4, &[5], 0.0, 1.0)],
        ));
    }
    // (data, weight, groups, dilation), all with padding 1 (TVM's cases, the 224x224 one
    // smaller), and a strided one.
    for (d, w, groups, dilation, strides) in [
        ([1, 32, 18, 18], [32, 1, 3, 3], 32, 1, 1),
        ([1, 32, 18, 18], [32, 4, 3, 3], 8, 1, 1),
        ([1, 32, 18, 18], [64, 1, 3, 3], 32, 1, 1),
        ([1, 3, 32, 32], [10, 3, 3, 3], 1, 1, 1),
        ([1, 3, 18, 18], [10, 3, 3, 3], 1, 3, 1),
        ([2, 4, 11, 11], [6, 4, 3, 3], 1, 1, 2),
    ] {
        let shape = |s: [usize; 4]| format!("({}, {}, {}, {})", s[0], s[1], s[2], s[3]);
        cases.push((
            format!("conv2d {d:?} x {w:?} groups={groups} dilation={dilation} strides={strides}"),
            format!(
                "def @main(%x: Tensor[{}, float32], %w: Tensor[{}, float32]) {{ nn.conv2d(%x, %w, strides=[{strides}, {strides}], padding=[1, 1, 1, 1], groups={groups}, dilation=[{dilation}, {dilation}]) }}",
                shape(d),
                shape(w)
            ),
            vec![tensor(5, &d, -1.0, 1.0), tensor(6, &w, -1.0, 1.0)],
        ));
    }
    let p = "Tensor[(32), float32]";
    cases.push((
        "batch_norm".into(),
        format!(
            "def @main(%x: Tensor[(3, 32, 32), float32], %g: {p}, %b: {p}, %m: {p}, %v: {p}) {{\n  \
             %0 = nn.batch_norm(%x, %g, %b, %m, %v, axis=1, epsilon=2e-05f);\n  %0.0\n}}"
        ),
        vec![
            tensor(7, &[3, 32, 32], 0.0, 1.0),
            tensor(8, &[32], 0.5, 1.5),
            tensor(9, &[32], -0.5, 0.5),
            tensor(10, &[32], -0.5, 0.5),
            tensor(11, &[32], 0.5, 1.5),
        ],
    ));
    cases.push((
        "dense, bias_add, relu, softmax".into(),
        "def @main(%x: Tensor[(4, 12), float32], %w: Tensor[(7, 12), float32], %b: Tensor[(7), float32]) {\n  \
         %0 = nn.dense(%x, %w);\n  %1 = nn.bias_add(%0, %b);\n  %2 = nn.relu(%1);\n  nn.softmax(%2)\n}"
            .into(),
        vec![
            tensor(12, &[4, 12], -1.0, 1.0),
            tensor(13, &[7, 12], -1.0, 1.0),
            tensor(14, &[7], -1.0, 1.0),
        ],
    ));
    cases
}

#[test]
fn tvm_posit_test_set_compiled_equals_interpreted() {
    loaded();
    for (what, text, inputs) in tvm_cases() {
        for n in [8, 16, 32] {
            check_model(&what, &text, &inputs, n);
        }
    }
}

/// One random elementwise op: unary (index into `UNARY`) or binary with an input.
#[derive(Clone, Debug)]
enum Step {
    Unary(usize),
    Binary(usize, usize),
}

const UNARY: [&str; 10] = [
    "exp", "log", "sqrt", "rsqrt", "tanh", "sigmoid", "nn.relu", "negative", "abs", "copy",
];
const BINARY: [&str; 6] = [
    "add", "subtract", "multiply", "divide", "maximum", "minimum",
];

/// Input shapes broadcasting to `[2, 3, 4]`.
const SHAPES: [&[usize]; 5] = [&[2, 3, 4], &[3, 4], &[4], &[3, 1], &[2, 1, 4]];

fn chain_model(steps: &[Step], shapes: &[usize]) -> String {
    let shape = |s: &[usize]| {
        let dims: Vec<String> = s.iter().map(|d| d.to_string()).collect();
        format!(
            "({})",
            dims.join(", ") + if s.len() == 1 { "," } else { "" }
        )
    };
    let mut params = vec![format!("%x: Tensor[{}, float32]", shape(SHAPES[0]))];
    for (k, &s) in shapes.iter().enumerate() {
        params.push(format!("%y{k}: Tensor[{}, float32]", shape(SHAPES[s])));
    }
    let mut body = String::new();
    let mut last = "%x".to_string();
    for (i, step) in steps.iter().enumerate() {
        let expr = match *step {
            Step::Unary(u) => format!("{}({last})", UNARY[u]),
            Step::Binary(b, y) => format!("{}({last}, %y{})", BINARY[b], y % shapes.len()),
        };
        body.push_str(&format!("  %{i} = {expr};\n"));
        last = format!("%{i}");
    }
    format!("def @main({}) {{\n{body}  {last}\n}}", params.join(", "))
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        (0..UNARY.len()).prop_map(Step::Unary),
        (0..BINARY.len(), 0..4usize).prop_map(|(b, y)| Step::Binary(b, y)),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    #[test]
    fn random_elementwise_chains_compiled_equal_interpreted(
        steps in proptest::collection::vec(step(), 1..7),
        shapes in proptest::collection::vec(0..SHAPES.len(), 1..4),
        n in prop_oneof![Just(8u32), Just(16), Just(32)],
        seed in 0u64..1000,
    ) {
        loaded();
        let text = chain_model(&steps, &shapes);
        let mut inputs = vec![Tensor::from_vec(vec![2, 3, 4], values(seed, 24, -2.0, 2.0)).unwrap()];
        for (k, &s) in shapes.iter().enumerate() {
            let count = SHAPES[s].iter().product();
            inputs.push(
                Tensor::from_vec(SHAPES[s].to_vec(), values(seed + 1 + k as u64, count, -2.0, 2.0))
                    .unwrap(),
            );
        }
        check_model(&text, &text, &inputs, n);
    }
}

#[test]
fn an_op_the_codegen_cannot_compile_falls_back_or_fails_when_strict() {
    loaded();
    // A cast to int32 and an NHWC convolution: the interpreted loop runs both, the code
    // generator compiles neither.
    let text = "def @main(%x: Tensor[(1, 5, 5, 2), float32], %w: Tensor[(3, 2, 3, 3), float32]) {\n  \
                %0 = nn.conv2d(%x, %w, padding=[1, 1, 1, 1], data_layout=\"NHWC\", kernel_layout=\"OIHW\");\n  \
                %1 = nn.relu(%0);\n  %2 = cast(%1, dtype=\"int32\");\n  (%2, negative(%x))\n}";
    let module = parse_module(text).unwrap();
    let converted = convert_to_datatype(&module, posit(16)).unwrap();
    let inputs = [
        Tensor::from_vec(vec![1, 5, 5, 2], values(20, 50, -1.0, 1.0)).unwrap(),
        Tensor::from_vec(vec![3, 2, 3, 3], values(21, 54, -1.0, 1.0)).unwrap(),
    ];
    let host = compile_host(&converted, &options(2), false).unwrap();
    let reasons: Vec<String> = host.fallbacks.iter().map(|f| f.to_string()).collect();
    assert!(
        reasons
            .iter()
            .any(|r| r.contains("(nn.conv2d) runs on the reference kernels: nn.conv2d: data_layout NHWC (compiled: NCHW)")),
        "{reasons:?}"
    );
    assert!(
        reasons.iter().any(
            |r| r.contains("(nn.relu, cast) runs on the reference kernels")
                && r.contains("dtype int32")
        ),
        "{reasons:?}"
    );
    // The negative still compiles, and the whole model gives the interpreted loop's results.
    assert!(!host.externals.is_empty(), "{reasons:?}");
    let want = run(&converted, &ExternalModules::new(), 1, &inputs);
    let got = run(&host.module, &host.externals, 2, &inputs);
    for (g, w) in got.iter().zip(&want) {
        assert_eq!(g.as_bytes(), w.as_bytes());
    }
    let err = compile_host(&converted, &options(2), true).unwrap_err();
    assert!(matches!(err, HostCodegenError::Strict { .. }), "{err}");
    assert!(err.to_string().contains("cannot be compiled"), "{err}");
}

/// Runs `byoc` (the executable at `exe`) with `args`; returns (exit code, stderr).
fn byoc_at(exe: &Path, args: &[&str]) -> (i32, String) {
    let out = Command::new(exe).args(args).output().expect("byoc runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn artifacts_with_compiled_posit_code_run_without_recompiling_and_need_the_plugin() {
    loaded();
    let dir = std::env::temp_dir().join(format!("byoc-datatypes-llvm-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let model = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/models/small_cnn.relay");
    let model = model.to_str().unwrap();
    let byoc = Path::new(env!("CARGO_BIN_EXE_byoc"));
    let posit = posit_so().to_str().unwrap();
    let artifact = dir.join("small16.byoc");
    let artifact = artifact.to_str().unwrap();
    let (code, err) = byoc_at(
        byoc,
        &[
            "build",
            model,
            "--dtype",
            "custom[posites2]16",
            "--host-codegen",
            "llvm",
            "--strict-host-codegen",
            "--plugin-path",
            posit,
            "-o",
            artifact,
        ],
    );
    assert_eq!(code, 0, "{err}");
    let run_to = |exe: &Path, what: &str, extra: &[&str], out: &str| {
        let mut args = vec!["run", what, "--random-inputs", "3", "-o", out];
        args.extend_from_slice(extra);
        byoc_at(exe, &args)
    };
    let (m_out, a_out) = (dir.join("m.npz"), dir.join("a.npz"));
    let (m_out, a_out) = (m_out.to_str().unwrap(), a_out.to_str().unwrap());
    // The model on the interpreted loop, the reference of the compiled artifact.
    let (code, err) = run_to(
        byoc,
        model,
        &[
            "--dtype",
            "custom[posites2]16",
            "--plugin-path",
            posit,
            "--host-codegen",
            "kernels",
        ],
        m_out,
    );
    assert_eq!(code, 0, "{err}");
    let (code, err) = run_to(byoc, artifact, &["--plugin-path", posit], a_out);
    assert_eq!(code, 0, "{err}");
    let (want, got) = (
        read_npz(Path::new(m_out)).unwrap(),
        read_npz(Path::new(a_out)).unwrap(),
    );
    assert_eq!(got["output_0"].as_bytes(), want["output_0"].as_bytes());
    // A byoc with no plugins next to it and none on the path refuses the artifact, naming the
    // datatype it needs.
    let bare = dir.join("bare");
    std::fs::create_dir_all(&bare).unwrap();
    let lone = bare.join("byoc");
    if !lone.exists() {
        std::fs::hard_link(byoc, &lone)
            .or_else(|_| std::fs::copy(byoc, &lone).map(|_| ()))
            .unwrap();
    }
    let mut cmd = Command::new(&lone);
    cmd.env_remove("BYOC_PLUGIN_PATH")
        .args(["run", artifact, "--random-inputs", "3", "-o", a_out]);
    let out = cmd.output().expect("byoc runs");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{err}");
    assert!(
        err.contains("custom datatype 'posites2' is not registered"),
        "{err}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// SqueezeNet (ONNX's light model with seeded random weights) in posit16 through LLVM and
/// through the interpreted loop: the same bits.
#[test]
#[ignore = "needs the ONNX light models: ./scripts/fetch_onnx_light.sh"]
fn squeezenet_in_posit16_compiled_equals_interpreted() {
    use byoc_pipeline::inputs::resolve_inputs;
    use byoc_pipeline::model::{load_model, LoadOptions};
    loaded();
    let dir = PathBuf::from(
        std::env::var_os("BYOC_ONNX_LIGHT_DIR")
            .expect("BYOC_ONNX_LIGHT_DIR names the light models"),
    )
    .join("squeezenet");
    let module = load_model(&dir.join("random.onnx"), &LoadOptions::default()).unwrap();
    let inputs = resolve_inputs(&module, Some(&dir.join("random_input.npz")), None).unwrap();
    let converted = convert_to_datatype(&module, posit(16)).unwrap();
    let main = converted.main().unwrap();
    let x: Vec<Tensor> = main
        .params
        .iter()
        .map(|&p| inputs[&main.var(p).unwrap().name].clone())
        .collect();
    let compiled = same_bits("squeezenet (posit16)", &converted, &x);
    assert!(compiled >= 26, "{compiled} compiled host functions");
}
