//! The dnnl target's capability answer: supported ops with their predicates, the composite
//! pattern table and the prune settings, following TVM's `python/tvm/relay/op/contrib/dnnl.py`
//! (v0.16) where the runtime can follow it.
//!
//! - **Ops**: float32 only (the runtime computes in float32), NCHW data and OIHW (IOHW for
//!   `nn.conv2d_transpose`) weights, average pooling without `ceil_mode` (max pooling takes
//!   it), `nn.dense` on data of rank 2 or more, `nn.batch_norm` over axis 1 and
//!   `nn.layer_norm` over the last axis with both `center` and `scale`, `nn.lrn` across the
//!   channels of 4-D data with an odd window (beyond TVM's list: Inception's LRNs would
//!   otherwise split its partitions). Every rejection carries its reason.
//! - **Patterns** (earlier entries win, as in TVM): `dnnl.dense_bias_sum`,
//!   `dnnl.conv2d_bias_sum_relu`, `dnnl.conv2d_bias_sum`, then for bias on/off, for each
//!   eltwise tail (`relu`, `tanh`, `sigmoid`, `clip`, `gelu`, `swish`, `leaky_relu`, none), for
//!   root `conv2d`, `deconv2d` (`nn.conv2d_transpose`), `dense`:
//!   `dnnl.<root>[_bias][_<tail>]` (bias and tail not both absent); then the same for root
//!   `multiply` (beyond TVM: a per-channel scale, shift and activation in one oneDNN binary
//!   step, which is what a batch norm + relu that follows no conv becomes after FoldScaleAxis;
//!   DenseNet has 58). Dense composites need
//!   rank-2 data (so axis 1 is the output channel). A composite's parameters
//!   are data, weight, bias (when present), sum operand (when present), in that order: the
//!   pattern's named leaves in post-order, which is how MergeComposite orders parameters.
//! - **Bias** is `nn.bias_add(.., axis=1)`, per output channel by its type relation. In the
//!   plain `dnnl.<root>_bias` entries it may also be an `add` whose other operand is one value
//!   per output channel (`(C, 1, 1)`, `(1, C, 1, 1)`; `(C)`, `(1, C)` after a dense), checked on
//!   the match. Tails and sums see only their own root call, so there bias must be the
//!   `nn.bias_add` form: prepare's FoldScaleAxis (asked for here, after SimplifyInference)
//!   turns the per-channel constant adds after a conv2d or dense, batch norms included, into
//!   that form.
//! - **Sum**: the second operand of the residual `add` must have the output's shape (checked
//!   where the `add` is the match's root).
//! - **Channel shuffle** (last entry): `dnnl.channel_shuffle` =
//!   `reshape(transpose(reshape(?data : float32)){axes=[0, 2, 1, 3, 4]})`, ShuffleNet's
//!   `(N, C, H, W)` → `(N, g, C/g, H, W)` → swap → `(N, C, H, W)`. The check sees the last
//!   reshape: `(N, C/g, g, H, W)` back to `(N, C, H, W)`. The data's shape is beyond its
//!   sight; the runtime reads any data of that many elements as the reshape does and refuses
//!   a first `newshape` that does not fit (docs/dnnl.md). `reshape` and `nn.batch_flatten`
//!   are also single ops (views), so flattening before a classifier stays in the partition.
//! - **int8** (the quantized realized form, first in the table): `dnnl.q<conv2d|dense>
//!   [_bias][_lshift][_sum][_relu][_requant]`, every combination, the most fused first: an
//!   int8 `nn.conv2d` (NCHW/OIHW) or `nn.dense` with `out_dtype="int32"`, `add` of an int32
//!   bias, `left_shift` by an int32 amount, `add` of an int32 residual, `nn.relu`, and the requantization `cast(clip(right_shift(
//!   add(x, ?round), ?shift)){a_min=-127, a_max=127}){dtype="int8"}`; `dnnl.requantize`
//!   (that requantization alone) and `dnnl.quantize` (`cast(clip(round(?data : float32)))`
//!   to int8 with the same bounds). `cast` of int8/int32 to float32 is a single op. The
//!   runtime runs them bit-exactly (docs/dnnl.md); the check refuses a bare int8 conv or
//!   dense whose products per output exceed what it sums exactly.
//! - **Prune**: partitions without `nn.conv2d`, `nn.conv2d_transpose`, `nn.dense`,
//!   `nn.batch_matmul`, `nn.layer_norm` or `nn.global_avg_pool2d` go back to the host (TVM's
//!   `prune_dnnl_subgraphs`).

use byoc_sdk::prelude::*;

use crate::composite::{IntRoot, CHANNEL_SHUFFLE, QUANTIZE, REQUANTIZE};
use crate::dnnl::{effective_cpu_isa, ffi, inexact_int8_isa};
use crate::runtime::MAX_SPLIT_REDUCTION;

/// The target name, the `Compiler` attribute of dnnl partitions.
pub const TARGET: &str = "dnnl";

/// Ops that run as single kernels with no condition beyond float32.
const PLAIN_OPS: [&str; 17] = [
    "nn.relu",
    "nn.leaky_relu",
    "tanh",
    "sigmoid",
    "clip",
    "abs",
    "exp",
    "log",
    "sqrt",
    "round",
    "add",
    "multiply",
    "nn.softmax",
    "concatenate",
    "nn.batch_matmul",
    "reshape",
    "nn.batch_flatten",
];

/// The compute-heavy ops one of which a partition needs to stay on dnnl.
pub const HEAVY_OPS: [&str; 6] = [
    "nn.conv2d",
    "nn.conv2d_transpose",
    "nn.dense",
    "nn.batch_matmul",
    "nn.layer_norm",
    "nn.global_avg_pool2d",
];

/// Eltwise tails in TVM's order (`leaky_relu` where TVM has `mish`), as pattern text over
/// `{x}`, the biased root.
const TAILS: [(&str, &str); 7] = [
    ("relu", "nn.relu({x})"),
    ("tanh", "tanh({x})"),
    ("sigmoid", "sigmoid({x})"),
    ("clip", "clip({x})"),
    // TVM's gelu, x * (erf(x / sqrt(2)) + 1) * 0.5, the constants kept inside the composite.
    // oneDNN computes the exact GELU, so the pattern names the constants that make it one
    // (TVM's takes any constants).
    (
        "gelu",
        "multiply(multiply({x}, add(erf(divide({x}, const(1.4142135623730951))), const(1))), const(0.5))",
    ),
    ("swish", "multiply({x}, sigmoid({x}))"),
    ("leaky_relu", "nn.leaky_relu({x})"),
];

/// The roots of fused composites: name in the composite, and the pattern of the call.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Root {
    Conv2d,
    Deconv2d,
    Dense,
    Multiply,
}

impl Root {
    const ALL: [Root; 4] = [Root::Conv2d, Root::Deconv2d, Root::Dense, Root::Multiply];

    fn name(self) -> &'static str {
        match self {
            Root::Conv2d => "conv2d",
            Root::Deconv2d => "deconv2d",
            Root::Dense => "dense",
            Root::Multiply => "multiply",
        }
    }

    fn pattern(self) -> &'static str {
        match self {
            Root::Conv2d => {
                "nn.conv2d(?data : float32, ?weight : float32)\
                 {data_layout=\"NCHW\", kernel_layout=\"OIHW\", out_layout=\"\"}"
            }
            Root::Deconv2d => {
                "nn.conv2d_transpose(?data : float32, ?weight : float32)\
                 {data_layout=\"NCHW\", kernel_layout=\"IOHW\", out_layout=\"\"}"
            }
            Root::Dense => "nn.dense(?data : float32, ?weight : float32)",
            Root::Multiply => "multiply(?data : float32, ?weight : float32)",
        }
    }
}

/// One pattern table entry, before it becomes text.
#[derive(Clone, Copy)]
struct Fused {
    root: Root,
    bias: bool,
    sum: bool,
    tail: Option<(&'static str, &'static str)>,
}

impl Fused {
    fn name(&self) -> String {
        let mut name = format!("{TARGET}.{}", self.root.name());
        if self.bias {
            name.push_str("_bias");
        }
        if self.sum {
            name.push_str("_sum");
        }
        if let Some((tail, _)) = self.tail {
            name.push('_');
            name.push_str(tail);
        }
        name
    }

    fn pattern(&self) -> String {
        let root = self.root.pattern();
        let mut x = if self.bias {
            let bias_add = format!("nn.bias_add({root}, ?bias){{axis=1}}");
            if self.sum || self.tail.is_some() {
                bias_add
            } else {
                format!("{bias_add} | add({root}, ?bias)")
            }
        } else {
            root.to_string()
        };
        if self.sum {
            x = format!("add({x}, ?sum)");
        }
        match self.tail {
            Some((_, tail)) => tail.replace("{x}", &x),
            None => x,
        }
    }

    /// The check on the match's root call.
    fn check(self, call: &CallView<'_>) -> Result<(), RejectReason> {
        let out = call.result_shape()?;
        if self.root == Root::Dense && out.len() != 2 {
            return Err(format!(
                "{}: dense output has rank {}, not 2",
                self.name(),
                out.len()
            )
            .into());
        }
        if self.tail.is_some() {
            return Ok(());
        }
        if self.sum {
            return same_shapes(call, out);
        }
        if call.op_name() == "add" {
            return per_channel_operand(call, out);
        }
        Ok(())
    }
}

/// The table entries in priority order.
fn fused_entries() -> Vec<Fused> {
    let mut entries = vec![
        Fused {
            root: Root::Dense,
            bias: true,
            sum: true,
            tail: None,
        },
        Fused {
            root: Root::Conv2d,
            bias: true,
            sum: true,
            tail: Some(TAILS[0]),
        },
        Fused {
            root: Root::Conv2d,
            bias: true,
            sum: true,
            tail: None,
        },
    ];
    let tails = TAILS.iter().copied().map(Some).chain([None]);
    // The multiply composites last: a compute root's tail (gelu, swish) holds multiplies.
    for roots in [&Root::ALL[..3], &Root::ALL[3..]] {
        for bias in [true, false] {
            for tail in tails.clone() {
                if !bias && tail.is_none() {
                    continue;
                }
                for &root in roots {
                    entries.push(Fused {
                        root,
                        bias,
                        sum: false,
                        tail,
                    });
                }
            }
        }
    }
    entries
}

/// The dnnl target description.
pub fn description() -> TargetDescription {
    let f32_rule = |op: &str| OpRule::new(op).with_dtypes([DType::Float32]);
    let mut d = TargetDescription::new(TARGET)
        .with_prepare("simplify-inference")
        .with_prepare("fold-scale-axis")
        .with_prune(PruneConfig {
            require_any: HEAVY_OPS.iter().map(|s| s.to_string()).collect(),
            ..PruneConfig::default()
        });
    for op in PLAIN_OPS {
        d = d.with_rule(f32_rule(op));
    }
    d = d
        .with_rule_checked(f32_rule("nn.conv2d"), |c| {
            layouts(c, &[("data_layout", "NCHW"), ("kernel_layout", "OIHW")])
        })
        .with_rule_checked(f32_rule("nn.conv2d_transpose"), |c| {
            layouts(c, &[("data_layout", "NCHW"), ("kernel_layout", "IOHW")])
        })
        .with_rule_checked(f32_rule("nn.dense"), |c| {
            let rank = c.arg_rank(0)?;
            if rank >= 2 {
                Ok(())
            } else {
                Err(
                    format!("data has rank {rank}; dnnl's inner product needs rank 2 or more")
                        .into(),
                )
            }
        })
        .with_rule_checked(f32_rule("nn.batch_norm"), |c| {
            c.require_flag("center", true)?;
            c.require_flag("scale", true)?;
            match c.attr_int("axis") {
                Some(1) => Ok(()),
                other => Err(format!("axis={} not supported (needs 1)", show(other)).into()),
            }
        })
        .with_rule_checked(f32_rule("nn.layer_norm"), |c| {
            c.require_flag("center", true)?;
            c.require_flag("scale", true)?;
            let rank = c.arg_rank(0)?;
            match c.attr_int("axis") {
                Some(-1) => Ok(()),
                Some(a) if a + 1 == rank as i64 => Ok(()),
                other => {
                    Err(format!("axis={} not supported (needs the last axis)", show(other)).into())
                }
            }
        });
    d = d
        .with_rule_checked(f32_rule("nn.lrn"), |c| {
            let rank = c.arg_rank(0)?;
            let axis = c.attr_int("axis");
            if rank != 4 || axis != Some(1) {
                return Err(format!(
                    "axis={} of rank-{rank} data not supported (needs the channels of 4-D data)",
                    show(axis)
                )
                .into());
            }
            match c.attr_int("size") {
                Some(n) if n % 2 == 1 => Ok(()),
                other => Err(format!(
                    "size={} not supported (oneDNN centres only odd windows as Relay does)",
                    show(other)
                )
                .into()),
            }
        })
        .with_rule_checked(f32_rule("nn.max_pool2d"), |c| {
            layouts(c, &[("layout", "NCHW")])
        })
        .with_rule_checked(f32_rule("nn.avg_pool2d"), |c| {
            layouts(c, &[("layout", "NCHW")])?;
            match c.attr_bool("ceil_mode") {
                Some(true) => Err("ceil_mode=True not supported for average pooling".into()),
                _ => Ok(()),
            }
        });
    for op in ["nn.global_avg_pool2d", "nn.global_max_pool2d"] {
        d = d.with_rule_checked(f32_rule(op), |c| layouts(c, &[("layout", "NCHW")]));
    }
    d = d.with_rule_checked(
        OpRule::new("cast").with_dtypes([DType::Int8, DType::Int32, DType::Float32]),
        |c| {
            let from = c
                .arg_types
                .first()
                .and_then(Type::as_tensor)
                .map(|t| t.dtype);
            match (from, c.attr_str("dtype")) {
                (Some(DType::Int8 | DType::Int32), Some("float32")) => Ok(()),
                (from, to) => Err(format!(
                    "cast from {} to {} not supported (int8 or int32 to float32 only)",
                    from.map_or_else(|| "?".to_string(), |d| d.to_string()),
                    to.unwrap_or("?")
                )
                .into()),
            }
        },
    );
    for entry in int_entries() {
        d = d.with_pattern_checked(entry.name(), entry.pattern(), move |c| entry.check(c));
    }
    d = d
        .with_pattern_checked(
            format!("{TARGET}.{REQUANTIZE}"),
            REQUANT.replace("{x}", "?data : int32"),
            |_| Ok(()),
        )
        .with_pattern_checked(format!("{TARGET}.{QUANTIZE}"), QUANTIZE_PATTERN, |_| Ok(()));
    for entry in fused_entries() {
        d = d.with_pattern_checked(entry.name(), entry.pattern(), move |c| entry.check(c));
    }
    d.with_pattern_checked(
        format!("{TARGET}.{CHANNEL_SHUFFLE}"),
        CHANNEL_SHUFFLE_PATTERN,
        channel_shuffle_check,
    )
}

/// The realized form's requantization of `{x}` (int32) to int8.
const REQUANT: &str = "cast(clip(right_shift(add({x}, ?round : int32), ?shift : int32))\
                       {a_min=-127, a_max=127}){dtype=\"int8\"}";

/// The realized form's quantization of float32 data to int8 (after its multiply by the
/// scale, which stays a float32 op).
const QUANTIZE_PATTERN: &str =
    "cast(clip(round(?data : float32)){a_min=-127, a_max=127}){dtype=\"int8\"}";

/// One int8 pattern table entry.
#[derive(Clone, Copy)]
struct IntEntry {
    root: IntRoot,
    bias: bool,
    lshift: bool,
    sum: bool,
    relu: bool,
    requant: bool,
}

impl IntEntry {
    fn name(&self) -> String {
        let root = IntRoot::ALL
            .iter()
            .find(|(_, r)| *r == self.root)
            .map_or("", |(n, _)| n);
        let mut name = format!("{TARGET}.{root}");
        for (on, part) in [
            (self.bias, "_bias"),
            (self.lshift, "_lshift"),
            (self.sum, "_sum"),
            (self.relu, "_relu"),
            (self.requant, "_requant"),
        ] {
            if on {
                name.push_str(part);
            }
        }
        name
    }

    fn pattern(&self) -> String {
        let mut x = match self.root {
            IntRoot::Conv2d => "nn.conv2d(?data : int8, ?weight : int8)\
                 {data_layout=\"NCHW\", kernel_layout=\"OIHW\", out_layout=\"\", out_dtype=\"int32\"}"
                .to_string(),
            IntRoot::Dense => {
                "nn.dense(?data : int8, ?weight : int8){out_dtype=\"int32\"}".to_string()
            }
        };
        if self.bias {
            x = format!("add({x}, ?bias : int32)");
        }
        if self.lshift {
            x = format!("left_shift({x}, ?lshift : int32)");
        }
        if self.sum {
            x = format!("add({x}, ?sum : int32)");
        }
        if self.relu {
            x = format!("nn.relu({x})");
        }
        if self.requant {
            x = REQUANT.replace("{x}", &x);
        }
        x
    }

    /// The check on the match's root: oneDNN's int8 kernels on this CPU are exact (VNNI); a
    /// bare conv or dense sums at most [`MAX_SPLIT_REDUCTION`] products per output; the data
    /// of a dense is 2-D.
    fn check(self, call: &CallView<'_>) -> Result<(), RejectReason> {
        self.check_on(call, effective_cpu_isa())
    }

    /// [`IntEntry::check`] on a CPU where oneDNN dispatches to `isa`.
    fn check_on(self, call: &CallView<'_>, isa: ffi::dnnl_cpu_isa_t) -> Result<(), RejectReason> {
        if let Some(isa) = inexact_int8_isa(isa) {
            return Err(format!(
                "{}: oneDNN's int8 kernels on {isa} (no VNNI) halve the weights to keep 16-bit \
                 sums from saturating, so they would not match exact int8 arithmetic",
                self.name()
            )
            .into());
        }
        if !matches!(call.op_name(), "nn.conv2d" | "nn.dense") {
            return Ok(());
        }
        let w = call.arg_shape(1)?;
        let k: usize = w.get(1..).unwrap_or_default().iter().product();
        if k as i64 > MAX_SPLIT_REDUCTION {
            return Err(format!(
                "{}: {k} products per output exceed the {MAX_SPLIT_REDUCTION} that oneDNN's \
                 int8 accumulator sums exactly",
                self.name()
            )
            .into());
        }
        if self.root == IntRoot::Dense && call.arg_rank(0)? != 2 {
            return Err(format!("{}: dense data is not 2-D", self.name()).into());
        }
        Ok(())
    }
}

/// The int8 entries, the most fused first.
fn int_entries() -> Vec<IntEntry> {
    let mut entries = Vec::new();
    // A sum right after the root is the bias entry's pattern (`add` of an int32 operand);
    // the runtime tells a per-channel operand from a residual by its shape.
    for bits in (0..32u8).rev().filter(|b| b & 7 != 4) {
        for (_, root) in IntRoot::ALL {
            entries.push(IntEntry {
                root,
                requant: bits & 16 != 0,
                relu: bits & 8 != 0,
                sum: bits & 4 != 0,
                lshift: bits & 2 != 0,
                bias: bits & 1 != 0,
            });
        }
    }
    entries.sort_by_key(|e| {
        std::cmp::Reverse(
            usize::from(e.bias)
                + usize::from(e.lshift)
                + usize::from(e.sum)
                + usize::from(e.relu)
                + usize::from(e.requant),
        )
    });
    entries
}

/// ShuffleNet's channel shuffle as the ONNX importer writes it (caffe2/PyTorch):
/// `reshape(x, (N, g, C/g, H, W))`, swap the two channel axes, `reshape((N, C, H, W))`.
const CHANNEL_SHUFFLE_PATTERN: &str =
    "reshape(transpose(reshape(?data : float32)){axes=[0, 2, 1, 3, 4]})";

/// The check on a channel shuffle's root, the last reshape: `(N, C/g, g, H, W)` (the
/// transposed `(N, g, C/g, H, W)`) back to `(N, C, H, W)`. The data's own shape is out of
/// the check's sight; the runtime reads it (docs/dnnl.md).
fn channel_shuffle_check(call: &CallView<'_>) -> Result<(), RejectReason> {
    let out = call.result_shape()?;
    if call.arg_types.len() != 1 {
        return Err("reshape with other than one operand".into());
    }
    let x = call.arg_shape(0)?;
    match (x, out) {
        (&[n, cg, g, h, w], &[n2, c, h2, w2])
            if (n, h, w) == (n2, h2, w2) && cg.checked_mul(g) == Some(c) =>
        {
            Ok(())
        }
        _ => Err(format!(
            "{TARGET}.{CHANNEL_SHUFFLE}: reshape of {x:?} to {out:?} is not \
             (N, C/g, g, H, W) to (N, C, H, W)"
        )
        .into()),
    }
}

fn show(v: Option<i64>) -> String {
    v.map_or_else(|| "none".to_string(), |v| v.to_string())
}

/// Layout attributes must be these; `out_layout` must be empty or the data layout.
fn layouts(call: &CallView<'_>, wanted: &[(&str, &str)]) -> Result<(), RejectReason> {
    for (name, want) in wanted {
        call.require_str(name, want)?;
    }
    let data_layout = wanted[0].1;
    let out = call.attr_str("out_layout").unwrap_or("");
    if !out.is_empty() && out != data_layout {
        return Err(format!(
            "out_layout=\"{out}\" not supported (needs \"\" or \"{data_layout}\")"
        )
        .into());
    }
    Ok(())
}

/// The residual add: both operands have the output's shape (oneDNN's sum post-op).
fn same_shapes(call: &CallView<'_>, out: &[usize]) -> Result<(), RejectReason> {
    for i in 0..call.arg_types.len() {
        let s = call.arg_shape(i)?;
        if s != out {
            return Err(format!("sum operand has shape {s:?}, not the output's {out:?}").into());
        }
    }
    Ok(())
}

/// A bias `add`: one operand is the root's output, the other one value per output channel
/// (axis 1 of the output).
fn per_channel_operand(call: &CallView<'_>, out: &[usize]) -> Result<(), RejectReason> {
    let shapes = (0..call.arg_types.len())
        .map(|i| call.arg_shape(i))
        .collect::<Result<Vec<_>, _>>()?;
    let [a, b] = shapes.as_slice() else {
        return Err("add with other than two operands".into());
    };
    let bias = if *a == out { b } else { a };
    let channels = out.get(1).copied().unwrap_or(0);
    let offset = out.len().checked_sub(bias.len()).filter(|&o| o <= 1);
    let fits = offset.is_some_and(|o| {
        bias.iter()
            .enumerate()
            .all(|(i, &d)| if o + i == 1 { d == channels } else { d == 1 })
    });
    if fits {
        Ok(())
    } else {
        Err(format!("bias of shape {bias:?} is not one value per output channel of {out:?}").into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use byoc_sdk::ir::Attrs;

    #[test]
    fn names_follow_the_contract_and_tvm_order() {
        let names: Vec<String> = fused_entries().iter().map(Fused::name).collect();
        assert_eq!(
            names[..6],
            [
                "dnnl.dense_bias_sum",
                "dnnl.conv2d_bias_sum_relu",
                "dnnl.conv2d_bias_sum",
                "dnnl.conv2d_bias_relu",
                "dnnl.deconv2d_bias_relu",
                "dnnl.dense_bias_relu",
            ]
        );
        let at = |n: &str| names.iter().position(|x| x == n).unwrap();
        assert!(at("dnnl.conv2d_bias_leaky_relu") < at("dnnl.conv2d_bias"));
        assert!(at("dnnl.conv2d_bias") < at("dnnl.conv2d_relu"));
        assert_eq!(names.len(), 3 + 4 * (8 + 7));
        assert_eq!(names[3 + 3 * 15], "dnnl.multiply_bias_relu");
        assert!(at("dnnl.conv2d_swish") < at("dnnl.multiply_bias"));
        assert!(!names.contains(&"dnnl.conv2d".to_string()));
    }

    fn call_check(
        entry: &str,
        op: &str,
        args: &[&[usize]],
        out: &[usize],
    ) -> Result<(), RejectReason> {
        let fused = fused_entries()
            .into_iter()
            .find(|f| f.name() == entry)
            .unwrap();
        let op = byoc_sdk::ir::op::OpRegistry::lookup(op).unwrap();
        let ty = |s: &[usize]| Type::tensor(s.to_vec(), DType::Float32);
        let arg_types: Vec<Type> = args.iter().map(|s| ty(s)).collect();
        let result_type = ty(out);
        fused.check(&CallView {
            op: &op,
            attrs: &Attrs::new(),
            arg_types: &arg_types,
            result_type: &result_type,
        })
    }

    #[test]
    fn int8_entries_put_the_most_fused_first_and_bound_the_reduction() {
        let entries = int_entries();
        let names: Vec<String> = entries.iter().map(IntEntry::name).collect();
        assert_eq!(names[0], "dnnl.qconv2d_bias_lshift_sum_relu_requant");
        assert_eq!(names[1], "dnnl.qdense_bias_lshift_sum_relu_requant");
        // A sum right after the root is the bias entry's pattern.
        assert!(!names.iter().any(|n| n.starts_with("dnnl.qconv2d_sum")));
        assert_eq!(names.len(), 2 * 28);
        let bare = entries
            .iter()
            .find(|e| e.name() == "dnnl.qconv2d")
            .copied()
            .unwrap();
        let op = byoc_sdk::ir::op::OpRegistry::lookup("nn.conv2d").unwrap();
        let check_on = |w: Vec<usize>, isa| {
            let arg_types = [
                Type::tensor(vec![1, 4096, 8, 8], DType::Int8),
                Type::tensor(w, DType::Int8),
            ];
            bare.check_on(
                &CallView {
                    op: &op,
                    attrs: &Attrs::new(),
                    arg_types: &arg_types,
                    result_type: &Type::tensor(vec![1, 8, 8, 8], DType::Int32),
                },
                isa,
            )
        };
        let check = |w| check_on(w, ffi::dnnl_cpu_isa_avx512_core_vnni);
        assert_eq!(check(vec![8, 1024, 4, 4]), Ok(()));
        let err = check(vec![8, 4096, 3, 3]).unwrap_err();
        assert_eq!(
            err.0,
            "dnnl.qconv2d: 36864 products per output exceed the 16384 that oneDNN's int8 \
             accumulator sums exactly"
        );
        // A weight without dims is no reason to panic.
        assert_eq!(check(vec![]), Ok(()));
        // Below VNNI, oneDNN's int8 is not exact: declined whatever the shapes.
        let err = check_on(vec![8, 1024, 4, 4], ffi::dnnl_cpu_isa_avx2).unwrap_err();
        assert!(err.0.contains("on avx2 (no VNNI)"), "{err}");
    }

    #[test]
    fn a_bias_add_is_one_value_per_output_channel() {
        let out: &[usize] = &[1, 8, 5, 5];
        for bias in [&[8, 1, 1][..], &[1, 8, 1, 1]] {
            assert_eq!(
                call_check("dnnl.conv2d_bias", "add", &[out, bias], out),
                Ok(())
            );
            assert_eq!(
                call_check("dnnl.conv2d_bias", "add", &[bias, out], out),
                Ok(())
            );
        }
        for bias in [&[8][..], &[1, 8, 5, 5], &[1, 1, 1], &[4, 1, 1]] {
            let err = call_check("dnnl.conv2d_bias", "add", &[out, bias], out).unwrap_err();
            assert!(err.0.contains("not one value per output channel"), "{err}");
        }
        assert_eq!(
            call_check("dnnl.conv2d_bias", "nn.bias_add", &[out, &[8]], out),
            Ok(())
        );
        let dense: &[usize] = &[2, 10];
        assert_eq!(
            call_check("dnnl.dense_bias", "add", &[dense, &[10]], dense),
            Ok(())
        );
        assert_eq!(
            call_check("dnnl.dense_bias", "add", &[dense, &[1, 10]], dense),
            Ok(())
        );
        assert!(call_check("dnnl.dense_bias", "add", &[dense, &[2, 10]], dense).is_err());
    }

    #[test]
    fn a_channel_shuffle_root_goes_back_to_the_data_shape() {
        let check = |x: &[usize], out: &[usize]| {
            let op = byoc_sdk::ir::op::OpRegistry::lookup("reshape").unwrap();
            let arg_types = [Type::tensor(x.to_vec(), DType::Float32)];
            channel_shuffle_check(&CallView {
                op: &op,
                attrs: &Attrs::new(),
                arg_types: &arg_types,
                result_type: &Type::tensor(out.to_vec(), DType::Float32),
            })
        };
        assert_eq!(check(&[1, 28, 4, 56, 56], &[1, 112, 56, 56]), Ok(()));
        assert_eq!(check(&[2, 3, 4, 5, 6], &[2, 12, 5, 6]), Ok(()));
        for (x, out) in [
            (&[1, 28, 4, 56, 56][..], &[1, 112, 3136, 1][..]),
            (&[1, 28, 4, 56, 56], &[1, 351232]),
            (&[1, 28, 4, 56, 56], &[2, 56, 56, 56]),
            (&[1, 112, 56, 56], &[1, 112, 56, 56]),
        ] {
            let err = check(x, out).unwrap_err();
            assert_eq!(
                err.0,
                format!(
                    "dnnl.channel_shuffle: reshape of {x:?} to {out:?} is not \
                     (N, C/g, g, H, W) to (N, C, H, W)"
                )
            );
        }
    }

    #[test]
    fn a_sum_operand_has_the_output_shape_and_dense_is_rank_2() {
        let out: &[usize] = &[1, 8, 5, 5];
        assert_eq!(
            call_check("dnnl.conv2d_bias_sum", "add", &[out, out], out),
            Ok(())
        );
        let err = call_check("dnnl.conv2d_bias_sum", "add", &[out, &[8, 1, 1]], out).unwrap_err();
        assert_eq!(
            err.0,
            "sum operand has shape [8, 1, 1], not the output's [1, 8, 5, 5]"
        );
        let err =
            call_check("dnnl.dense_bias_relu", "nn.relu", &[&[2, 3, 4]], &[2, 3, 4]).unwrap_err();
        assert_eq!(
            err.0,
            "dnnl.dense_bias_relu: dense output has rank 3, not 2"
        );
        assert_eq!(
            call_check("dnnl.dense_relu", "nn.relu", &[&[2, 4]], &[2, 4]),
            Ok(())
        );
    }
}
