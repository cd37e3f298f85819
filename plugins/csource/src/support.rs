//! What the csource target handles, as plain data: the ops the code generator lowers (with
//! the attribute values and dtypes they are restricted to) and the composite pattern table.
//! The plugin's description ([`crate::CSource`]'s `describe`) is built from them and is the
//! target's one description; the code generator reads [`op_support`] for what it may assume.
//!
//! Invariant: every op the code generator lowers ([`crate::codegen`]) is listed in
//! [`SUPPORTED_OPS`], and every listed op is lowered; the tests partition with the plugin's
//! description and compile what comes out, so a drift shows up as a codegen error.

use byoc_sdk::ir::target::OpRule;
use byoc_sdk::ir::{AttrValue, DType};

/// The target name: the `Compiler` attribute of csource partitions and the prefix of its
/// composite names.
pub const TARGET: &str = "csource";

/// The only element type the generated C handles.
pub const DTYPE: DType = DType::Float32;

/// One supported op and what restricts it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LoweredOp {
    /// The Relay op name.
    pub op: &'static str,
    /// String attributes that must have these values (schema defaults count).
    pub required_attrs: &'static [(&'static str, &'static str)],
    /// What of the op's semantics is covered, for users reading `byoc plugins`.
    pub note: &'static str,
}

/// The ops the code generator lowers, all on `float32` tensors only.
pub const SUPPORTED_OPS: &[LoweredOp] = &[
    LoweredOp {
        op: "nn.conv2d",
        required_attrs: &[("data_layout", "NCHW"), ("kernel_layout", "OIHW")],
        note: "strides, 1/2/4-value padding, dilation, groups (incl. depthwise)",
    },
    LoweredOp {
        op: "nn.dense",
        required_attrs: &[],
        note: "x[M, K] times w[N, K] transposed",
    },
    LoweredOp {
        op: "nn.bias_add",
        required_attrs: &[],
        note: "any axis",
    },
    LoweredOp {
        op: "add",
        required_attrs: &[],
        note: "numpy broadcasting",
    },
    LoweredOp {
        op: "subtract",
        required_attrs: &[],
        note: "numpy broadcasting",
    },
    LoweredOp {
        op: "multiply",
        required_attrs: &[],
        note: "numpy broadcasting",
    },
    LoweredOp {
        op: "nn.relu",
        required_attrs: &[],
        note: "",
    },
    LoweredOp {
        op: "clip",
        required_attrs: &[],
        note: "a_min / a_max",
    },
    LoweredOp {
        op: "sigmoid",
        required_attrs: &[],
        note: "",
    },
    LoweredOp {
        op: "tanh",
        required_attrs: &[],
        note: "",
    },
    LoweredOp {
        op: "nn.max_pool2d",
        required_attrs: &[("layout", "NCHW")],
        note: "strides, padding, dilation, ceil_mode",
    },
    LoweredOp {
        op: "nn.avg_pool2d",
        required_attrs: &[("layout", "NCHW")],
        note: "strides, padding, dilation, ceil_mode, count_include_pad",
    },
    LoweredOp {
        op: "nn.global_max_pool2d",
        required_attrs: &[("layout", "NCHW")],
        note: "",
    },
    LoweredOp {
        op: "nn.global_avg_pool2d",
        required_attrs: &[("layout", "NCHW")],
        note: "",
    },
    LoweredOp {
        op: "nn.softmax",
        required_attrs: &[],
        note: "any axis",
    },
    LoweredOp {
        op: "reshape",
        required_attrs: &[],
        note: "a view: no code, no copy",
    },
    LoweredOp {
        op: "nn.batch_flatten",
        required_attrs: &[],
        note: "a view: no code, no copy",
    },
    LoweredOp {
        op: "squeeze",
        required_attrs: &[],
        note: "a view: no code, no copy",
    },
    LoweredOp {
        op: "expand_dims",
        required_attrs: &[],
        note: "a view: no code, no copy",
    },
];

/// The composite pattern table, in priority order: `(name, pattern)` in the pattern syntax.
/// Each composite is generated as one fused loop nest that writes every output element once.
/// The conv2d patterns pin the layouts the generator handles (a pattern check sees only the
/// root call of a match, so the inner conv2d is constrained here).
pub const PATTERNS: &[(&str, &str)] = &[
    (
        "csource.conv2d_bias_relu",
        r#"nn.relu(nn.bias_add(nn.conv2d(*, const){data_layout="NCHW", kernel_layout="OIHW"}, const))"#,
    ),
    (
        "csource.conv2d_bias",
        r#"nn.bias_add(nn.conv2d(*, const){data_layout="NCHW", kernel_layout="OIHW"}, const)"#,
    ),
    (
        "csource.conv2d_relu",
        r#"nn.relu(nn.conv2d(*, const){data_layout="NCHW", kernel_layout="OIHW"})"#,
    ),
    (
        "csource.dense_bias_relu",
        "nn.relu(nn.bias_add(nn.dense(*, const), const))",
    ),
    (
        "csource.dense_bias",
        "nn.bias_add(nn.dense(*, const), const)",
    ),
    ("csource.dense_relu", "nn.relu(nn.dense(*, const))"),
];

/// The op entry for `op`, if the target supports it.
pub fn op_support(op: &str) -> Option<&'static LoweredOp> {
    SUPPORTED_OPS.iter().find(|s| s.op == op)
}

/// The pattern table in its text form, one `name = pattern` line per entry.
pub fn pattern_table_text() -> String {
    PATTERNS
        .iter()
        .map(|(name, pattern)| format!("{name} = {pattern}\n"))
        .collect()
}

/// The rule of one supported op: its required attribute values and `float32`.
pub fn op_rule(s: &LoweredOp) -> OpRule {
    s.required_attrs
        .iter()
        .fold(OpRule::new(s.op), |rule, (name, value)| {
            rule.with_attr(name, AttrValue::from(*value))
        })
        .with_dtypes([DTYPE])
}
