//! A compiled vta partition: its layers with their instruction streams and the constants
//! packed at build time; running it on the simulator over the executor's buffers; and its
//! serialized form.
//!
//! Serialized layout (integers little-endian):
//!
//! ```text
//! "BYOCVTA\0"       8 bytes magic
//! format version    u32
//! header length     u32
//! header            JSON: {"config", "threads", "num_params", "layers": [...], "outputs": [...],
//!                          "blobs": [length...]}
//! blobs             the packed constants (weights, biases, residuals), in order
//! ```
//!
//! Reading validates the configuration and every layer (the instruction streams are
//! regenerated from the layers, deterministically, so an artifact never carries a stream the
//! compiler did not make) and checks each packed blob has the size its layer needs.

use std::sync::Mutex;

use byoc_sdk::ir::Tensor;
use byoc_sdk::{CompiledModule, PluginError, TensorMut, TensorRef};
use serde::{Deserialize, Serialize};

use crate::compiler::layer::{
    EpilogueOp, Geometry, Layer, LayerKind, Operand, OperandRole, Source,
};
use crate::compiler::pack::Packer;
use crate::compiler::program::{compile_layer, LayerProgram};
use crate::compiler::{read_partition, CompileError};
use crate::config::VtaConfig;
use crate::sim::{Profile, Simulator};

/// The first bytes of a serialized vta module.
pub const MODULE_MAGIC: &[u8; 8] = b"BYOCVTA\0";
/// The layout version written and read.
pub const FORMAT_VERSION: u32 = 1;

/// Where a layer input comes from at run time.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Input {
    /// Partition parameter `i` (packed at run time).
    Param(usize),
    /// The output of layer `i` (packed at run time).
    Layer(usize),
    /// Packed at build time: blob `i`.
    Packed(usize),
}

/// A layer as serialized.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LayerSpec {
    /// The op.
    pub kind: LayerKind,
    /// The geometry.
    pub geometry: Geometry,
    /// The epilogue.
    pub epilogue: Vec<EpilogueOp>,
    /// The epilogue's tensor operands.
    pub operands: Vec<Operand>,
    /// data, weight, operands.
    pub inputs: Vec<Input>,
    /// The output shape.
    pub out_shape: Vec<usize>,
    /// The output is int32 (stored as four byte planes), not int8.
    #[serde(default)]
    pub int32_out: bool,
}

#[derive(Serialize, Deserialize)]
struct Header {
    config: VtaConfig,
    threads: usize,
    num_params: usize,
    layers: Vec<LayerSpec>,
    outputs: Vec<Input>,
    blobs: Vec<usize>,
}

/// A compiled layer.
#[derive(Clone, Debug)]
struct CompiledLayer {
    spec: LayerSpec,
    program: LayerProgram,
}

/// A compiled vta partition.
#[derive(Debug)]
pub struct VtaModule {
    config: VtaConfig,
    threads: usize,
    num_params: usize,
    layers: Vec<CompiledLayer>,
    outputs: Vec<Input>,
    blobs: Vec<Vec<u8>>,
    profile: Mutex<Vec<Profile>>,
}

fn err(e: impl std::fmt::Display) -> PluginError {
    PluginError::new(e.to_string())
}

/// `n` zeros for `what`, or an error when the memory cannot be allocated (the sizes come from
/// the compiled program, which an artifact carries).
fn zeroed<T: Clone + Default>(n: usize, what: &str) -> Result<Vec<T>, PluginError> {
    byoc_sdk::ir::memory::try_vec_of(n, T::default()).ok_or_else(|| {
        err(format!(
            "vta: {what} ({n} values of {} bytes) cannot be allocated",
            size_of::<T>()
        ))
    })
}

fn numel(shape: &[usize]) -> usize {
    shape.iter().product()
}

/// Bytes of each packed input of a layer: weight, then operands.
fn packed_len(spec: &LayerSpec, b: usize, k: usize) -> usize {
    let g = &spec.geometry;
    let (cb, ob) = (g.c.div_ceil(b), g.o.div_ceil(b));
    match k {
        1 => ob * cb * g.kh * g.kw * b * b,
        _ => match spec.operands[k - 2].role {
            OperandRole::Channel => ob * b * 4,
            OperandRole::Full => g.n * ob * g.oh * g.ow * b * 4,
        },
    }
}

impl VtaModule {
    /// Compiles a partition.
    pub fn compile(
        f: &byoc_sdk::ir::Function,
        config: &VtaConfig,
        threads: usize,
    ) -> Result<Self, CompileError> {
        let read = read_partition(f)?;
        let b = config.block();
        let mut blobs = Vec::new();
        let mut specs = Vec::new();
        let to_input = |s: &Source| match s {
            Source::Param(i) => Input::Param(*i),
            Source::Layer(i) => Input::Layer(*i),
            Source::Const(_) => unreachable!("constants are packed below"),
        };
        for layer in &read.layers {
            let mut spec = LayerSpec {
                kind: layer.kind,
                geometry: layer.geometry,
                epilogue: layer.epilogue.clone(),
                operands: layer.operands.clone(),
                inputs: Vec::new(),
                out_shape: layer.out_shape.clone(),
                int32_out: layer.int32_out,
            };
            for (k, source) in layer.sources.iter().enumerate() {
                let input = match source {
                    Source::Const(t) if k > 0 => {
                        let mut bytes = vec![0u8; packed_len(&spec, b, k)];
                        pack_into(&spec, b, k, &t.view(), &mut bytes).map_err(|e| {
                            CompileError::Unsupported(format!("constant input {k}: {}", e.message))
                        })?;
                        blobs.push(bytes);
                        Input::Packed(blobs.len() - 1)
                    }
                    Source::Const(_) => {
                        return Err(CompileError::Unsupported(
                            "a layer's data is a constant (fold it on the host)".to_string(),
                        ))
                    }
                    s => to_input(s),
                };
                spec.inputs.push(input);
            }
            specs.push(spec);
        }
        let outputs = read.outputs.iter().map(to_input).collect();
        Self::assemble(
            config.clone(),
            threads,
            f.params.len(),
            specs,
            outputs,
            blobs,
        )
    }

    /// Builds the programs of validated layer specs.
    fn assemble(
        config: VtaConfig,
        threads: usize,
        num_params: usize,
        specs: Vec<LayerSpec>,
        outputs: Vec<Input>,
        blobs: Vec<Vec<u8>>,
    ) -> Result<Self, CompileError> {
        let bad = |m: String| CompileError::Unsupported(m);
        if !(1..=2).contains(&threads) {
            return Err(bad(format!("virtual_threads = {threads}: expected 1 or 2")));
        }
        let b = config.block();
        let mut layers = Vec::with_capacity(specs.len());
        for (i, spec) in specs.into_iter().enumerate() {
            if spec.inputs.len() != 2 + spec.operands.len() {
                return Err(bad(format!(
                    "layer {i}: {} inputs for {} operands",
                    spec.inputs.len(),
                    spec.operands.len()
                )));
            }
            validate_operands(&spec).map_err(|m| bad(format!("layer {i}: {m}")))?;
            let layer = Layer {
                kind: spec.kind,
                geometry: spec.geometry,
                epilogue: spec.epilogue.clone(),
                operands: spec.operands.clone(),
                sources: Vec::new(),
                out_shape: spec.out_shape.clone(),
                int32_out: spec.int32_out,
            };
            let g = &spec.geometry;
            let expected_out = match spec.kind {
                LayerKind::Conv2d => vec![g.n, g.o, g.oh, g.ow],
                LayerKind::Dense => vec![g.ow, g.o],
            };
            if spec.out_shape != expected_out {
                return Err(bad(format!(
                    "layer {i}: output shape {:?} does not match its geometry",
                    spec.out_shape
                )));
            }
            // Compiling checks every size against the DRAM image before anything is sized
            // by the spec's numbers.
            let program = compile_layer(&layer, &config, threads)?;
            for (k, input) in spec.inputs.iter().enumerate() {
                match *input {
                    Input::Param(p) if p >= num_params => {
                        return Err(bad(format!("layer {i}: parameter {p} of {num_params}")))
                    }
                    Input::Layer(l) if l >= i => {
                        return Err(bad(format!(
                            "layer {i}: input from layer {l}, not an earlier one"
                        )))
                    }
                    Input::Packed(blob) => {
                        let ok = k > 0
                            && blobs
                                .get(blob)
                                .is_some_and(|v| v.len() == packed_len(&spec, b, k));
                        if !ok {
                            return Err(bad(format!(
                                "layer {i}: packed input {k} has the wrong size"
                            )));
                        }
                    }
                    _ => {}
                }
            }
            layers.push(CompiledLayer { spec, program });
        }
        for o in &outputs {
            match *o {
                Input::Param(p) if p < num_params => {}
                Input::Layer(l) if l < layers.len() => {}
                _ => return Err(bad(format!("output {o:?} does not exist"))),
            }
        }
        Ok(VtaModule {
            config,
            threads,
            num_params,
            layers,
            outputs,
            blobs,
            profile: Mutex::new(Vec::new()),
        })
    }

    /// Each layer's instruction stream as assembly, one instruction a line, with a header per
    /// layer and the micro-op kernels.
    pub fn assembly(&self) -> String {
        use std::fmt::Write;
        let mut s = format!(
            "; vta {} with {} virtual thread(s), {} layer(s)\n",
            self.config.name(),
            self.threads,
            self.layers.len()
        );
        let layout = crate::isa::Layout::new(&self.config);
        for (i, l) in self.layers.iter().enumerate() {
            let g = &l.spec.geometry;
            let t = l.program.tiling.tile;
            let _ =
                writeln!(
                s,
                "\n; layer {i}: {:?} {}x{}x{}x{} -> {}x{}x{} kernel {}x{} stride {}x{} pad {}x{}",
                l.spec.kind, g.n, g.c, g.h, g.w, g.o, g.oh, g.ow, g.kh, g.kw, g.sh, g.sw, g.pt, g.pl
            );
            let _ = writeln!(
                s,
                "; epilogue {:?}\n; tile {} out-blocks x {} rows x {} cols, {} in-blocks per chunk",
                l.spec.epilogue, t.ob, t.oh, t.ow, t.ib
            );
            for (k, insn) in l.program.insns.iter().enumerate() {
                let _ = writeln!(s, "{k:6}: {insn}");
            }
            let _ = writeln!(s, "; micro-ops (DRAM uop element: fields)");
            for (k, w) in l.program.uop_bytes.chunks_exact(4).enumerate() {
                let u = layout.decode_uop(u32::from_le_bytes([w[0], w[1], w[2], w[3]]));
                let _ = writeln!(s, ";   uop {k:5}: {u}");
            }
        }
        s
    }

    /// Each layer's counters of the last run (empty before the first run).
    pub fn last_profile(&self) -> Vec<Profile> {
        self.profile.lock().map(|p| p.clone()).unwrap_or_default()
    }

    /// The layers' specifications, in execution order.
    pub fn layers(&self) -> Vec<&LayerSpec> {
        self.layers.iter().map(|l| &l.spec).collect()
    }

    /// The layers' instruction counts and tilings, for tests and reports.
    pub fn programs(&self) -> Vec<&LayerProgram> {
        self.layers.iter().map(|l| &l.program).collect()
    }

    /// Reads the serialized form.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, PluginError> {
        let prefix = 16;
        if bytes.len() < prefix || &bytes[..8] != MODULE_MAGIC {
            return Err(err("not a vta module (bad magic)"));
        }
        let version = u32::from_le_bytes([bytes[8], bytes[9], bytes[10], bytes[11]]);
        if version != FORMAT_VERSION {
            return Err(err(format!(
                "vta module format version {version} is not supported (this plugin reads {FORMAT_VERSION}); rebuild the artifact"
            )));
        }
        let hlen = u32::from_le_bytes([bytes[12], bytes[13], bytes[14], bytes[15]]) as usize;
        let header_bytes = bytes
            .get(prefix..prefix.saturating_add(hlen))
            .ok_or_else(|| err("vta module: truncated header"))?;
        let header: Header = serde_json::from_slice(header_bytes)
            .map_err(|e| err(format!("vta module header: {e}")))?;
        header.config.validate().map_err(err)?;
        let mut at = prefix + hlen;
        let mut blobs = Vec::with_capacity(header.blobs.len().min(1 << 16));
        for &len in &header.blobs {
            let blob = bytes
                .get(at..at.saturating_add(len))
                .ok_or_else(|| err("vta module: truncated constants"))?;
            blobs.push(blob.to_vec());
            at += len;
        }
        if at != bytes.len() {
            return Err(err(format!(
                "vta module: {} trailing bytes",
                bytes.len() - at
            )));
        }
        Self::assemble(
            header.config,
            header.threads,
            header.num_params,
            header.layers,
            header.outputs,
            blobs,
        )
        .map_err(err)
    }

    /// Runs one layer on `sim`; returns its output (int8, or int32).
    fn run_layer(
        &self,
        l: &CompiledLayer,
        inputs: &[TensorRef<'_>],
        done: &[Tensor],
        sim: &mut Simulator,
    ) -> Result<(Tensor, Profile), PluginError> {
        let p = &l.program;
        let b = self.config.block();
        let mut dram = zeroed(p.dram.total, "the simulated DRAM")?;
        dram[p.dram.uop..p.dram.uop + p.uop_bytes.len()].copy_from_slice(&p.uop_bytes);
        let g = &l.spec.geometry;
        let packer = Packer {
            kind: l.spec.kind,
            g: *g,
            b,
        };
        let region = |k: usize| match k {
            0 => p.dram.inp,
            1 => p.dram.wgt,
            _ => p.dram.operands[k - 2],
        };
        for (k, input) in l.spec.inputs.iter().enumerate() {
            let len = if k == 0 {
                g.n * g.c.div_ceil(b) * g.h * g.w * b
            } else {
                packed_len(&l.spec, b, k)
            };
            let dst = &mut dram[region(k)..region(k) + len];
            match *input {
                Input::Packed(i) => dst.copy_from_slice(&self.blobs[i]),
                Input::Param(i) => {
                    let view = inputs.get(i).ok_or_else(|| {
                        err(format!("vta: input {i} missing ({} given)", inputs.len()))
                    })?;
                    pack_into(&l.spec, b, k, view, dst)?;
                }
                Input::Layer(i) => pack_into(&l.spec, b, k, &done[i].view(), dst)?,
            }
        }
        let profile = sim
            .run(&p.insns, &mut dram)
            .map_err(|e| err(format!("vta simulator: {e}")))?;
        let shape = l.spec.out_shape.clone();
        let out = if l.spec.int32_out {
            let mut out = zeroed(numel(&shape), "the layer output")?;
            packer.output_int32(&dram[p.dram.out..], &mut out);
            Tensor::from_vec(shape, out)
        } else {
            let mut out = zeroed(numel(&shape), "the layer output")?;
            packer.output(&dram[p.dram.out..], &mut out);
            Tensor::from_vec(shape, out)
        };
        Ok((out.map_err(err)?, profile))
    }
}

/// Checks that a layer's epilogue names existing operands and that each operand's shape fits
/// its role (broadcastable to the output; one value or one per channel for a per-channel one).
fn validate_operands(spec: &LayerSpec) -> Result<(), String> {
    for op in &spec.epilogue {
        match *op {
            EpilogueOp::Add(k) if k >= spec.operands.len() => {
                return Err(format!(
                    "epilogue adds operand {k} of {}",
                    spec.operands.len()
                ))
            }
            EpilogueOp::Shr(s) if s > 31 => return Err(format!("shift by {s}")),
            _ => {}
        }
    }
    let out = &spec.out_shape;
    for (k, op) in spec.operands.iter().enumerate() {
        let fits = op.shape.len() <= out.len()
            && op
                .shape
                .iter()
                .zip(&out[out.len() - op.shape.len()..])
                .all(|(&d, &o)| d == 1 || d == o);
        let channel_ok = op.role != OperandRole::Channel
            || matches!(numel(&op.shape), 1)
            || numel(&op.shape) == spec.geometry.o;
        if !fits || !channel_ok {
            return Err(format!(
                "operand {k} of shape {:?} does not broadcast to the output {out:?} as a {:?} operand",
                op.shape, op.role
            ));
        }
    }
    Ok(())
}

/// Packs input `k` of a layer (0 data, 1 weight, then operands) from a tensor view.
fn pack_into(
    spec: &LayerSpec,
    b: usize,
    k: usize,
    t: &TensorRef<'_>,
    dst: &mut [u8],
) -> Result<(), PluginError> {
    let g = &spec.geometry;
    let packer = Packer {
        kind: spec.kind,
        g: *g,
        b,
    };
    let want = |n: usize, what: &str| -> Result<(), PluginError> {
        let got = numel(t.shape());
        if got != n {
            return Err(err(format!(
                "vta: {what} has {got} elements, the layer needs {n}"
            )));
        }
        Ok(())
    };
    match k {
        0 => {
            want(g.n * g.c * g.h * g.w, "the data")?;
            packer.input(t.as_slice::<i8>()?, dst);
        }
        1 => {
            want(g.o * g.c * g.kh * g.kw, "the weight")?;
            packer.weight(t.as_slice::<i8>()?, dst);
        }
        _ => {
            let op = &spec.operands[k - 2];
            want(numel(&op.shape), "an epilogue operand")?;
            let values = t.as_slice::<i32>()?;
            match op.role {
                OperandRole::Channel => packer.channel(values, op.offset, dst),
                OperandRole::Full => packer.full(&op.shape, values, op.offset, dst),
            }
        }
    }
    Ok(())
}

impl CompiledModule for VtaModule {
    fn run(
        &self,
        inputs: &[TensorRef<'_>],
        outputs: &mut [TensorMut<'_>],
    ) -> Result<(), PluginError> {
        if inputs.len() != self.num_params {
            return Err(err(format!(
                "vta: {} inputs given, the partition has {}",
                inputs.len(),
                self.num_params
            )));
        }
        if outputs.len() != self.outputs.len() {
            return Err(err(format!(
                "vta: {} outputs given, the partition has {}",
                outputs.len(),
                self.outputs.len()
            )));
        }
        let mut sim = Simulator::new(&self.config);
        let mut done: Vec<Tensor> = Vec::with_capacity(self.layers.len());
        let mut profiles = Vec::with_capacity(self.layers.len());
        for l in &self.layers {
            let (out, profile) = self.run_layer(l, inputs, &done, &mut sim)?;
            done.push(out);
            profiles.push(profile);
        }
        for (dst, src) in outputs.iter_mut().zip(&self.outputs) {
            let data = match *src {
                Input::Layer(i) => done[i].view(),
                Input::Param(i) => inputs[i],
                Input::Packed(_) => return Err(err("vta: an output is a constant")),
            };
            if dst.ty != data.ty {
                return Err(err(format!(
                    "vta: output is {}, the layer gives {}",
                    dst.ty, data.ty
                )));
            }
            dst.bytes.copy_from_slice(data.bytes);
        }
        if let Ok(mut p) = self.profile.lock() {
            *p = profiles;
        }
        Ok(())
    }

    fn serialize(&self) -> Result<Vec<u8>, PluginError> {
        let header = Header {
            config: self.config.clone(),
            threads: self.threads,
            num_params: self.num_params,
            layers: self.layers.iter().map(|l| l.spec.clone()).collect(),
            outputs: self.outputs.clone(),
            blobs: self.blobs.iter().map(Vec::len).collect(),
        };
        let json = serde_json::to_vec(&header).map_err(err)?;
        let mut out =
            Vec::with_capacity(16 + json.len() + self.blobs.iter().map(Vec::len).sum::<usize>());
        out.extend_from_slice(MODULE_MAGIC);
        out.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
        out.extend_from_slice(&(json.len() as u32).to_le_bytes());
        out.extend_from_slice(&json);
        for blob in &self.blobs {
            out.extend_from_slice(blob);
        }
        Ok(out)
    }

    /// The last run's counters summed over the layers (programs run one after another).
    fn counters(&self) -> Result<Vec<(String, f64)>, PluginError> {
        let layers = self.last_profile();
        if layers.is_empty() {
            return Ok(Vec::new());
        }
        let mut total = Profile::default();
        for p in &layers {
            total.accumulate(p);
        }
        Ok(total
            .counters()
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect())
    }
}
