//! Shared helpers: realized int8 layers built with the IR builder, the vta composites merged
//! and compiled, and the comparison with byoc's host executor running the same realized
//! module with its own integer kernels (the independent reference).

#![allow(dead_code, reason = "each test binary uses a different subset")]

use anyhow::{anyhow, ensure, Result};
use byoc_exec::{ExecOptions, Executor};
use byoc_ir::infer_types;
use byoc_ir::{AttrValue, Attrs, ExprId, Function, FunctionBuilder, Module};
use byoc_ir::{DType, Tensor, TensorType, Type};
use byoc_passes::{Pass, PassContext};
use byoc_patterns::{MergeComposite, PatternTable};
use byoc_plugin_vta::plugin::pattern_table_text;
use byoc_plugin_vta::{Profile, VtaConfig, VtaModule};
use byoc_sdk::CompiledModule;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// ResNet-18's conv workloads C2–C11 (name, H, Cin, Cout, K, pad, stride).
pub const RESNET18: [(&str, usize, usize, usize, usize, usize, usize); 10] = [
    ("C2", 56, 64, 64, 3, 1, 1),
    ("C3", 56, 64, 128, 3, 1, 2),
    ("C4", 56, 64, 128, 1, 0, 2),
    ("C5", 28, 128, 128, 3, 1, 1),
    ("C6", 28, 128, 256, 3, 1, 2),
    ("C7", 28, 128, 256, 1, 0, 2),
    ("C8", 14, 256, 256, 3, 1, 1),
    ("C9", 14, 256, 512, 3, 1, 2),
    ("C10", 14, 256, 512, 1, 0, 2),
    ("C11", 7, 512, 512, 3, 1, 1),
];

/// One realized int8 layer: conv2d (or dense) with its epilogue.
#[derive(Clone, Debug)]
pub struct Case {
    /// Images (dense: rows).
    pub n: usize,
    /// Input channels (dense: features).
    pub c: usize,
    /// Input height and width (ignored for dense).
    pub hw: (usize, usize),
    /// Output channels.
    pub o: usize,
    /// Kernel size.
    pub k: (usize, usize),
    /// Strides.
    pub stride: (usize, usize),
    /// Padding top, left, bottom, right.
    pub pad: [usize; 4],
    /// An int32 (C, 1, 1) bias.
    pub bias: bool,
    /// An int32 full-shape residual input.
    pub residual: bool,
    /// Right shift (with the rounding add before it when > 0).
    pub shift: i64,
    /// Clip bounds.
    pub clip: Option<(f64, f64)>,
    /// relu after the clip.
    pub relu: bool,
    /// Weights and bias as constants (else as parameters).
    pub constants: bool,
    /// nn.dense instead of conv2d.
    pub dense: bool,
    /// The layer ends after the bias / residual / relu with its int32 result (no shift, clip
    /// or cast), as a ResNet shortcut does.
    pub int32_out: bool,
}

impl Case {
    /// A 3x3 stride-1 pad-1 conv with bias, shift 8 and clip to int8, constant weights.
    pub fn conv(c: usize, hw: usize, o: usize) -> Self {
        Case {
            n: 1,
            c,
            hw: (hw, hw),
            o,
            k: (3, 3),
            stride: (1, 1),
            pad: [1, 1, 1, 1],
            bias: true,
            residual: false,
            shift: 8,
            clip: Some((-127.0, 127.0)),
            relu: false,
            constants: true,
            dense: false,
            int32_out: false,
        }
    }

    /// ResNet-18 workload: H W Cin Cout K pad stride.
    pub fn resnet(h: usize, c: usize, o: usize, k: usize, pad: usize, stride: usize) -> Self {
        Case {
            k: (k, k),
            stride: (stride, stride),
            pad: [pad; 4],
            ..Case::conv(c, h, o)
        }
    }

    /// Output height and width.
    pub fn out_hw(&self) -> (usize, usize) {
        (
            (self.hw.0 + self.pad[0] + self.pad[2] - self.k.0) / self.stride.0 + 1,
            (self.hw.1 + self.pad[1] + self.pad[3] - self.k.1) / self.stride.1 + 1,
        )
    }
}

fn random_tensor(shape: &[usize], dtype: DType, lo: i64, hi: i64, rng: &mut StdRng) -> Tensor {
    let n: usize = shape.iter().product();
    match dtype {
        DType::Int8 => Tensor::from_vec(
            shape.to_vec(),
            (0..n)
                .map(|_| rng.gen_range(lo..=hi) as i8)
                .collect::<Vec<i8>>(),
        ),
        _ => Tensor::from_vec(
            shape.to_vec(),
            (0..n)
                .map(|_| rng.gen_range(lo..=hi) as i32)
                .collect::<Vec<i32>>(),
        ),
    }
    .expect("sizes agree")
}

/// A layer's module (`@main`) and the values of its parameters.
pub fn build(case: &Case, seed: u64) -> Result<(Module, Vec<Tensor>)> {
    let mut rng = StdRng::seed_from_u64(seed);
    let mut b = FunctionBuilder::new();
    let mut params = Vec::new();
    let mut values = Vec::new();
    let (dshape, wshape) = if case.dense {
        (vec![case.n, case.c], vec![case.o, case.c])
    } else {
        (
            vec![case.n, case.c, case.hw.0, case.hw.1],
            vec![case.o, case.c, case.k.0, case.k.1],
        )
    };
    let input = |b: &mut FunctionBuilder,
                 name: &str,
                 t: Tensor,
                 constant: bool,
                 params: &mut Vec<ExprId>,
                 values: &mut Vec<Tensor>| {
        if constant {
            b.constant(t)
        } else {
            let p = b.param(name, Type::Tensor(t.ty().clone()));
            params.push(p);
            values.push(t);
            p
        }
    };
    let x = input(
        &mut b,
        "x",
        random_tensor(&dshape, DType::Int8, -128, 127, &mut rng),
        false,
        &mut params,
        &mut values,
    );
    let w = input(
        &mut b,
        "w",
        random_tensor(&wshape, DType::Int8, -128, 127, &mut rng),
        case.constants,
        &mut params,
        &mut values,
    );
    let mut v = if case.dense {
        b.call("nn.dense", &[x, w], Attrs::new().with("out_dtype", "int32"))?
    } else {
        let attrs = Attrs::new()
            .with("strides", vec![case.stride.0 as i64, case.stride.1 as i64])
            .with(
                "padding",
                case.pad.iter().map(|&p| p as i64).collect::<Vec<_>>(),
            )
            .with("channels", AttrValue::Int(case.o as i64))
            .with("kernel_size", vec![case.k.0 as i64, case.k.1 as i64])
            .with("out_dtype", "int32");
        b.call("nn.conv2d", &[x, w], attrs)?
    };
    if case.bias {
        let shape = if case.dense {
            vec![case.o]
        } else {
            vec![case.o, 1, 1]
        };
        let t = random_tensor(&shape, DType::Int32, -(1 << 14), (1 << 14) - 1, &mut rng);
        let bias = input(&mut b, "bias", t, case.constants, &mut params, &mut values);
        v = b.call("add", &[v, bias], Attrs::new())?;
    }
    if case.residual {
        let (oh, ow) = case.out_hw();
        let shape = if case.dense {
            vec![case.n, case.o]
        } else {
            vec![case.n, case.o, oh, ow]
        };
        let t = random_tensor(&shape, DType::Int32, -(1 << 12), 1 << 12, &mut rng);
        let r = input(&mut b, "residual", t, false, &mut params, &mut values);
        v = b.call("add", &[v, r], Attrs::new())?;
        v = b.call("nn.relu", &[v], Attrs::new())?;
    }
    if case.int32_out {
        let mut m = Module::from_main(b.finish(params, v, Attrs::new())?);
        infer_types(&mut m).map_err(|e| anyhow!("{e}"))?;
        return Ok((m, values));
    }
    if case.shift > 0 {
        let round = b.constant(Tensor::scalar(1i32 << (case.shift - 1)));
        v = b.call("add", &[v, round], Attrs::new())?;
        let s = b.constant(Tensor::scalar(case.shift as i32));
        v = b.call("right_shift", &[v, s], Attrs::new())?;
    }
    if let Some((lo, hi)) = case.clip {
        v = b.call(
            "clip",
            &[v],
            Attrs::new()
                .with("a_min", AttrValue::Float(lo))
                .with("a_max", AttrValue::Float(hi)),
        )?;
    }
    if case.relu {
        v = b.call("nn.relu", &[v], Attrs::new())?;
    }
    v = b.call("cast", &[v], Attrs::new().with("dtype", "int8"))?;
    let mut m = Module::from_main(b.finish(params, v, Attrs::new())?);
    infer_types(&mut m).map_err(|e| anyhow!("{e}"))?;
    Ok((m, values))
}

/// `@main` of `m` with the vta composites merged, as a vta partition.
pub fn partition(m: &Module) -> Result<Function> {
    let mut m = m.clone();
    let table = PatternTable::parse(&pattern_table_text()).map_err(|e| anyhow!("{e}"))?;
    MergeComposite::new(&table)
        .run(&mut m, &mut PassContext::new())
        .map_err(|e| anyhow!("{e}"))?;
    let mut f = m.main().map_err(|e| anyhow!("{e}"))?.clone();
    f.attrs = Attrs::new()
        .with("Compiler", "vta")
        .with("global_symbol", "vta_0")
        .with("Primitive", AttrValue::Int(1));
    Ok(f)
}

/// Runs `m` on the host executor.
pub fn host(m: &Module, inputs: &[Tensor]) -> Result<Vec<Tensor>> {
    let exec = Executor::new(m, ExecOptions::default()).map_err(|e| anyhow!("{e}"))?;
    exec.run(inputs).map_err(|e| anyhow!("{e}"))
}

/// Runs a compiled module on `inputs`, with outputs shaped as `like`.
pub fn run(module: &dyn CompiledModule, inputs: &[Tensor], like: &[Tensor]) -> Result<Vec<Tensor>> {
    let mut outs: Vec<Tensor> = like.iter().map(|t| Tensor::zeros(t.ty().clone())).collect();
    let views: Vec<_> = inputs.iter().map(Tensor::view).collect();
    let mut out_views: Vec<_> = outs.iter_mut().map(Tensor::view_mut).collect();
    module
        .run(&views, &mut out_views)
        .map_err(|e| anyhow!("{e}"))?;
    Ok(outs)
}

/// Asserts two int8 (or int32) results are identical, and that they are not trivially
/// constant.
pub fn assert_same(got: &[Tensor], want: &[Tensor], what: &str) -> Result<()> {
    ensure!(got.len() == want.len(), "{what}: output counts differ");
    for (g, w) in got.iter().zip(want) {
        ensure!(
            matches!(w.dtype(), DType::Int8 | DType::Int32) && g.dtype() == w.dtype(),
            "{what}: host output is {}, vta's {}",
            w.dtype(),
            g.dtype()
        );
        let (g, w) = (g.to_f64_vec(), w.to_f64_vec());
        if let Some(i) = (0..w.len()).find(|&i| g[i] != w[i]) {
            return Err(anyhow!("{what}: element {i}: vta {} host {}", g[i], w[i]));
        }
        let distinct: std::collections::BTreeSet<i64> = w.iter().map(|&v| v as i64).collect();
        ensure!(
            distinct.len() > 2,
            "{what}: the reference output is degenerate ({distinct:?})"
        );
    }
    Ok(())
}

/// Compiles `case` for `config` with `threads`, runs it on vta and the host, compares; returns
/// the per-layer profile.
pub fn check_with(
    case: &Case,
    config: &VtaConfig,
    threads: usize,
    seed: u64,
) -> Result<Vec<Profile>> {
    let (m, inputs) = build(case, seed)?;
    let want = host(&m, &inputs)?;
    let module =
        VtaModule::compile(&partition(&m)?, config, threads).map_err(|e| anyhow!("{e}"))?;
    let got = run(&module, &inputs, &want)?;
    assert_same(&got, &want, &format!("{case:?}"))?;
    Ok(module.last_profile())
}

/// [`check_with`] on the default configuration with 2 virtual threads.
pub fn check(case: &Case) -> Result<Vec<Profile>> {
    check_with(case, &VtaConfig::default(), 2, 7)
}

/// A float32 type, for tests that need a non-int8 input.
pub fn f32_type(shape: &[usize]) -> Type {
    Type::Tensor(TensorType::new(shape.to_vec(), DType::Float32))
}
