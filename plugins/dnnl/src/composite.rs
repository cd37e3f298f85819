//! Composite kernel-node names, parsed into a [`CompositeKind`]:
//!
//! - `<target>.<root>[_bias][_sum][_<eltwise>]` (TVM's DNNL convention), parsed generically
//!   into a [`Composite`]: `root` is `conv2d`, `deconv2d`, `dense` or `multiply` (the weight
//!   is the multiplier); `eltwise` one of [`Eltwise::NAMES`]. The kernel node's inputs are,
//!   in order: data, weight, `[bias]`, `[sum operand]`.
//! - `<target>.channel_shuffle` ([`CHANNEL_SHUFFLE`]): ShuffleNet's channel shuffle
//!   `reshape -> transpose -> reshape`; one input, the data.
//! - int8 ([`IntComposite`], the realized quantized form): `<target>.q<conv2d|dense>[_bias]
//!   [_lshift][_sum][_relu][_requant]` (inputs data, weight, `[bias]`, `[left shift amount]`,
//!   `[sum operand]`, `[round constant, shift amount]`), `<target>.requantize` (int32 value, round constant, shift
//!   amount) and `<target>.quantize` (float32 data).

use std::fmt;

/// The compute op a composite is built around.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Root {
    /// `nn.conv2d`.
    Conv2d,
    /// `nn.conv2d_transpose`.
    Deconv2d,
    /// `nn.dense`.
    Dense,
    /// `multiply` (data times a broadcasting weight).
    Multiply,
}

impl Root {
    /// The composite spelling and the Relay op.
    pub const ALL: [(&'static str, Root); 4] = [
        ("conv2d", Root::Conv2d),
        ("deconv2d", Root::Deconv2d),
        ("dense", Root::Dense),
        ("multiply", Root::Multiply),
    ];
}

/// An activation tail, fused as a oneDNN eltwise post-op.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Eltwise {
    /// `nn.relu`.
    Relu,
    /// `tanh`.
    Tanh,
    /// `sigmoid`.
    Sigmoid,
    /// `clip` (`a_min`, `a_max` attributes).
    Clip,
    /// gelu (erf form).
    Gelu,
    /// `x * sigmoid(x)`.
    Swish,
    /// `nn.leaky_relu` (`alpha` attribute).
    LeakyRelu,
}

impl Eltwise {
    /// The composite spellings.
    pub const NAMES: [(&'static str, Eltwise); 7] = [
        ("relu", Eltwise::Relu),
        ("tanh", Eltwise::Tanh),
        ("sigmoid", Eltwise::Sigmoid),
        ("clip", Eltwise::Clip),
        ("gelu", Eltwise::Gelu),
        ("swish", Eltwise::Swish),
        ("leaky_relu", Eltwise::LeakyRelu),
    ];
}

/// The composite name (after `<target>.`) of a channel shuffle.
pub const CHANNEL_SHUFFLE: &str = "channel_shuffle";

/// The composite name (after `<target>.`) of a float32 → int8 quantization
/// `cast(clip(round(x)))`.
pub const QUANTIZE: &str = "quantize";

/// The composite name (after `<target>.`) of an int32 → int8 requantization
/// `cast(clip(right_shift(add(x, round), shift)))`.
pub const REQUANTIZE: &str = "requantize";

/// What a composite kernel node computes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CompositeKind {
    /// A compute op with fused bias, sum and activation.
    Fused(Composite),
    /// A channel shuffle (`<target>.channel_shuffle`).
    ChannelShuffle,
    /// A composite of the quantized (int8) form.
    Int(IntComposite),
}

impl CompositeKind {
    /// Parses a composite name (op names are told apart first, see [`is_composite`]).
    pub fn parse(name: &str) -> Result<CompositeKind, UnknownComposite> {
        match name.split_once('.') {
            Some((_, body)) if body == CHANNEL_SHUFFLE => Ok(CompositeKind::ChannelShuffle),
            Some((_, body)) if body == QUANTIZE => Ok(CompositeKind::Int(IntComposite::Quantize)),
            Some((_, body)) if body == REQUANTIZE => {
                Ok(CompositeKind::Int(IntComposite::Requantize))
            }
            Some((_, body)) if IntRoot::ALL.iter().any(|(n, _)| body.starts_with(n)) => {
                IntFused::parse(name).map(|q| CompositeKind::Int(IntComposite::Compute(q)))
            }
            _ => Composite::parse(name).map(CompositeKind::Fused),
        }
    }
}

/// The int8 compute op of an [`IntFused`] composite (`out_dtype="int32"`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IntRoot {
    /// `nn.conv2d` of int8 data and weight.
    Conv2d,
    /// `nn.dense` of int8 data and weight.
    Dense,
}

impl IntRoot {
    /// The composite spellings.
    pub const ALL: [(&'static str, IntRoot); 2] =
        [("qconv2d", IntRoot::Conv2d), ("qdense", IntRoot::Dense)];
}

/// An int8 conv2d/dense with its epilogue, in the realized form's order: int32 accumulator,
/// `add` of a bias, `left_shift` (aligning it with a residual of a finer scale), `add` of a
/// residual, `nn.relu`, requantization to int8.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IntFused {
    /// The compute op.
    pub root: IntRoot,
    /// An int32 bias (one value per channel) follows the weight.
    pub bias: bool,
    /// `left_shift` by a constant amount (the next input).
    pub lshift: bool,
    /// An int32 residual of the result's shape is added.
    pub sum: bool,
    /// `nn.relu` on the int32 sum.
    pub relu: bool,
    /// `add` of a round constant, `right_shift`, `clip(-127, 127)`, `cast` to int8; the
    /// constant and the amount are the last two inputs.
    pub requant: bool,
}

impl IntFused {
    /// Parses `<target>.q<conv2d|dense>[_bias][_lshift][_sum][_relu][_requant]`.
    pub fn parse(name: &str) -> Result<IntFused, UnknownComposite> {
        let err = |reason: &str| UnknownComposite {
            name: name.to_string(),
            reason: reason.to_string(),
        };
        let body = name.split_once('.').map_or(name, |(_, b)| b);
        let (root, mut rest) = IntRoot::ALL
            .iter()
            .find_map(|&(n, r)| body.strip_prefix(n).map(|rest| (r, rest)))
            .ok_or_else(|| err("the root is not qconv2d or qdense"))?;
        let mut take = |part: &str| match rest.strip_prefix(part) {
            Some(r) if r.is_empty() || r.starts_with('_') => {
                rest = r;
                true
            }
            _ => false,
        };
        let q = IntFused {
            root,
            bias: take("_bias"),
            lshift: take("_lshift"),
            sum: take("_sum"),
            relu: take("_relu"),
            requant: take("_requant"),
        };
        if rest.is_empty() {
            Ok(q)
        } else {
            Err(err(&format!("unexpected '{rest}' after the parts")))
        }
    }

    /// The number of kernel-node inputs.
    pub fn num_inputs(&self) -> usize {
        2 + usize::from(self.bias)
            + usize::from(self.lshift)
            + usize::from(self.sum)
            + 2 * usize::from(self.requant)
    }
}

/// A composite of the quantized (int8) form.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IntComposite {
    /// An int8 conv2d/dense with its epilogue.
    Compute(IntFused),
    /// `<target>.quantize`.
    Quantize,
    /// `<target>.requantize`.
    Requantize,
}

/// A parsed fused-composite name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Composite {
    /// The root op.
    pub root: Root,
    /// A bias input follows the weight.
    pub bias: bool,
    /// A residual operand (last input) is added (`sum` post-op).
    pub sum: bool,
    /// The activation applied last.
    pub eltwise: Option<Eltwise>,
}

/// Why a kernel-node name is not a composite this runtime runs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnknownComposite {
    /// The name.
    pub name: String,
    /// What is wrong.
    pub reason: String,
}

impl fmt::Display for UnknownComposite {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "unknown composite '{}': {} (expected <target>.<conv2d|deconv2d|dense|multiply>[_bias][_sum][_<{}>], \
             <target>.<qconv2d|qdense>[_bias][_lshift][_sum][_relu][_requant], <target>.{QUANTIZE}, \
             <target>.{REQUANTIZE} or <target>.{CHANNEL_SHUFFLE})",
            self.name,
            self.reason,
            Eltwise::NAMES.map(|(n, _)| n).join("|")
        )
    }
}

impl Composite {
    /// Parses a composite name (op names are told apart first, see [`is_composite`]).
    pub fn parse(name: &str) -> Result<Composite, UnknownComposite> {
        let err = |reason: &str| UnknownComposite {
            name: name.to_string(),
            reason: reason.to_string(),
        };
        let Some((_, body)) = name.split_once('.') else {
            return Err(err("no '<target>.' prefix"));
        };
        let (root, mut rest) = Root::ALL
            .iter()
            .find_map(|&(n, r)| body.strip_prefix(n).map(|rest| (r, rest)))
            .ok_or_else(|| err("the root is not conv2d, deconv2d, dense or multiply"))?;
        let mut take = |part: &str| match rest.strip_prefix(part) {
            Some(r) if r.is_empty() || r.starts_with('_') => {
                rest = r;
                true
            }
            _ => false,
        };
        let bias = take("_bias");
        let sum = take("_sum");
        let eltwise = match rest.strip_prefix('_') {
            None if rest.is_empty() => None,
            None => return Err(err(&format!("unexpected '{rest}' after the root"))),
            Some(tail) => Some(
                Eltwise::NAMES
                    .iter()
                    .find(|(n, _)| *n == tail)
                    .map(|&(_, e)| e)
                    .ok_or_else(|| err(&format!("unknown part '{tail}'")))?,
            ),
        };
        if !bias && !sum && eltwise.is_none() {
            return Err(err(
                "a composite fuses at least one of bias, sum, activation",
            ));
        }
        Ok(Composite {
            root,
            bias,
            sum,
            eltwise,
        })
    }

    /// The number of kernel-node inputs: data, weight, `[bias]`, `[sum operand]`.
    pub fn num_inputs(&self) -> usize {
        2 + usize::from(self.bias) + usize::from(self.sum)
    }
}

/// Whether a kernel-node name is a composite (`<target>.<name>` where the target is not a
/// Relay op namespace such as `nn`).
pub fn is_composite(name: &str) -> bool {
    match name.split_once('.') {
        Some((ns, _)) => !matches!(ns, "nn" | "image" | "vision" | "qnn"),
        None => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_parse_generically() {
        let c = Composite::parse("dnnl.conv2d_bias_sum_relu").unwrap();
        assert_eq!(
            c,
            Composite {
                root: Root::Conv2d,
                bias: true,
                sum: true,
                eltwise: Some(Eltwise::Relu)
            }
        );
        assert_eq!(c.num_inputs(), 4);
        let d = Composite::parse("dnnl.dense_leaky_relu").unwrap();
        assert_eq!(
            (d.root, d.bias, d.eltwise),
            (Root::Dense, false, Some(Eltwise::LeakyRelu))
        );
        assert_eq!(
            Composite::parse("dnnl.deconv2d_bias_clip").unwrap().eltwise,
            Some(Eltwise::Clip)
        );
        for bad in [
            "dnnl.conv3d_bias",
            "dnnl.conv2d_bias_mish",
            "dnnl.conv2d",
            "dnnl.conv2dx_relu",
            "dnnl.conv2d_relu_bias",
            "conv2d_bias",
        ] {
            let e = Composite::parse(bad).unwrap_err();
            assert!(e.to_string().contains(bad), "{e}");
        }
        assert_eq!(
            CompositeKind::parse("dnnl.channel_shuffle").unwrap(),
            CompositeKind::ChannelShuffle
        );
        assert_eq!(
            CompositeKind::parse("dnnl.conv2d_relu").unwrap(),
            CompositeKind::Fused(Composite::parse("dnnl.conv2d_relu").unwrap())
        );
        let e = CompositeKind::parse("dnnl.channel_shuffle_relu").unwrap_err();
        assert!(e.to_string().contains("or <target>.channel_shuffle"), "{e}");
        assert_eq!(
            CompositeKind::parse("dnnl.qconv2d_bias_sum_relu_requant").unwrap(),
            CompositeKind::Int(IntComposite::Compute(IntFused {
                root: IntRoot::Conv2d,
                bias: true,
                lshift: false,
                sum: true,
                relu: true,
                requant: true
            }))
        );
        assert_eq!(
            IntFused::parse("dnnl.qconv2d_bias_lshift_sum_relu")
                .unwrap()
                .num_inputs(),
            5
        );
        let q = IntFused::parse("dnnl.qdense_relu").unwrap();
        assert_eq!(
            (q.root, q.bias, q.relu, q.num_inputs()),
            (IntRoot::Dense, false, true, 2)
        );
        assert_eq!(
            IntFused::parse("dnnl.qconv2d_bias_requant")
                .unwrap()
                .num_inputs(),
            5
        );
        assert_eq!(
            CompositeKind::parse("dnnl.requantize").unwrap(),
            CompositeKind::Int(IntComposite::Requantize)
        );
        assert_eq!(
            CompositeKind::parse("dnnl.quantize").unwrap(),
            CompositeKind::Int(IntComposite::Quantize)
        );
        for bad in [
            "dnnl.qconv2d_relu_bias",
            "dnnl.qconv2d_tanh",
            "dnnl.qconv3d_bias",
        ] {
            let e = CompositeKind::parse(bad).unwrap_err();
            assert!(e.to_string().contains(bad), "{e}");
        }
        assert!(is_composite("dnnl.dense_bias"));
        assert!(!is_composite("nn.conv2d"));
        assert!(!is_composite("add"));
    }
}
