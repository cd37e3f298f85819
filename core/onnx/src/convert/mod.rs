//! ONNX op converters: one function per ONNX op type, mapping a node onto Relay-named ops, one
//! file per op family. Semantics follow TVM Relay's ONNX frontend (v0.16) where it is right.
//!
//! A converter reads its node through [`NodeCtx`] and returns the node's outputs in order; it
//! may return fewer than the node names only when the rest are optional outputs it does not
//! compute (the importer rejects a model that uses them).

mod einsum;
mod elementwise;
mod index;
mod matmul;
mod microsoft;
mod nn;
mod quant;
mod recurrent;
mod reduce;
mod resize;
mod shape;
mod transformer;

use super::ctx::NodeCtx;
use super::OnnxError;
use byoc_ir::ExprId;

/// A converter: the node's output values in order.
pub(crate) type Convert = fn(&mut NodeCtx<'_>) -> Result<Vec<ExprId>, OnnxError>;

/// The converter of op `op_type` of `domain`: the default domain (`""` or `ai.onnx`) or
/// onnxruntime's `com.microsoft`.
pub(crate) fn converter(domain: &str, op_type: &str) -> Option<Convert> {
    let table = match domain {
        "" | "ai.onnx" => CONVERTERS,
        "com.microsoft" => MICROSOFT,
        _ => return None,
    };
    table
        .iter()
        .find(|(name, _)| *name == op_type)
        .map(|&(_, f)| f)
}

/// The supported `com.microsoft` ops (microsoft.rs).
const MICROSOFT: &[(&str, Convert)] = &[
    ("Attention", microsoft::attention),
    ("EmbedLayerNormalization", microsoft::embed_layer_norm),
    ("SkipLayerNormalization", microsoft::skip_layer_norm),
    (
        "SkipSimplifiedLayerNormalization",
        microsoft::skip_simplified_layer_norm,
    ),
    ("BiasGelu", microsoft::bias_gelu),
    ("FastGelu", microsoft::fast_gelu),
    ("Gelu", microsoft::gelu),
    ("QuickGelu", microsoft::quick_gelu),
];

/// The converter of a node that [`super::qdq::fuse`] made from a QDQ group.
pub(crate) fn fused_converter(op_type: &str) -> Option<Convert> {
    match op_type {
        super::qdq::QDQ_CONV => Some(quant::qdq_conv),
        super::qdq::QDQ_MATMUL => Some(quant::qdq_matmul),
        _ => None,
    }
}

/// Every supported op type with its converter, by family.
const CONVERTERS: &[(&str, Convert)] = &[
    // elementwise.rs
    ("Add", elementwise::add),
    ("Sub", elementwise::sub),
    ("Mul", elementwise::mul),
    ("Div", elementwise::div),
    ("Pow", elementwise::pow),
    ("Max", elementwise::max),
    ("Min", elementwise::min),
    ("Sum", elementwise::sum),
    ("Equal", elementwise::equal),
    ("Less", elementwise::less),
    ("Greater", elementwise::greater),
    ("GreaterOrEqual", elementwise::greater_or_equal),
    ("LessOrEqual", elementwise::less_or_equal),
    ("And", elementwise::and),
    ("Or", elementwise::or),
    ("Xor", elementwise::xor),
    ("Not", elementwise::not),
    ("Where", elementwise::where_),
    ("Relu", elementwise::relu),
    ("Sigmoid", elementwise::sigmoid),
    ("Tanh", elementwise::tanh),
    ("Erf", elementwise::erf),
    ("Exp", elementwise::exp),
    ("Log", elementwise::log),
    ("Abs", elementwise::abs),
    ("Neg", elementwise::neg),
    ("Sqrt", elementwise::sqrt),
    ("Reciprocal", elementwise::reciprocal),
    ("Floor", elementwise::floor),
    ("Ceil", elementwise::ceil),
    ("Round", elementwise::round),
    ("Sign", elementwise::sign),
    ("Mod", elementwise::modulo),
    ("IsNaN", elementwise::is_nan),
    ("IsInf", elementwise::is_inf),
    ("Softplus", elementwise::softplus),
    ("Mish", elementwise::mish),
    ("Gelu", elementwise::gelu),
    ("LeakyRelu", elementwise::leaky_relu),
    ("PRelu", elementwise::prelu),
    ("HardSigmoid", elementwise::hard_sigmoid),
    ("HardSwish", elementwise::hard_swish),
    ("Clip", elementwise::clip),
    ("Cast", elementwise::cast),
    ("Identity", elementwise::identity),
    ("Dropout", elementwise::identity),
    // nn.rs
    ("Conv", nn::conv),
    ("ConvTranspose", nn::conv_transpose),
    ("BatchNormalization", nn::batch_norm),
    ("LayerNormalization", nn::layer_norm),
    ("LRN", nn::lrn),
    ("MaxPool", nn::max_pool),
    ("AveragePool", nn::avg_pool),
    ("GlobalAveragePool", nn::global_avg_pool),
    ("GlobalMaxPool", nn::global_max_pool),
    ("Softmax", nn::softmax),
    ("LogSoftmax", nn::log_softmax),
    // recurrent.rs
    ("RNN", recurrent::rnn),
    ("GRU", recurrent::gru),
    ("LSTM", recurrent::lstm),
    // transformer.rs
    ("Attention", transformer::attention),
    ("RMSNormalization", transformer::rms_norm),
    ("RotaryEmbedding", transformer::rotary_embedding),
    // matmul.rs
    ("Gemm", matmul::gemm),
    ("MatMul", matmul::matmul),
    ("Einsum", einsum::einsum),
    // quant.rs
    ("QuantizeLinear", quant::quantize_linear),
    ("DequantizeLinear", quant::dequantize_linear),
    ("DynamicQuantizeLinear", quant::dynamic_quantize_linear),
    ("QLinearConv", quant::qlinear_conv),
    ("QLinearMatMul", quant::qlinear_matmul),
    ("ConvInteger", quant::conv_integer),
    ("MatMulInteger", quant::matmul_integer),
    // shape.rs
    ("Flatten", shape::flatten),
    ("Reshape", shape::reshape),
    ("Transpose", shape::transpose),
    ("Squeeze", shape::squeeze),
    ("Unsqueeze", shape::unsqueeze),
    ("Concat", shape::concat),
    ("Split", shape::split),
    ("Slice", shape::slice),
    ("Gather", shape::gather),
    ("Pad", shape::pad),
    // index.rs
    ("Range", index::range),
    ("Tile", index::tile),
    ("Trilu", index::trilu),
    ("GatherElements", index::gather_elements),
    ("GatherND", index::gather_nd),
    ("ScatterND", index::scatter_nd),
    ("ScatterElements", index::scatter_elements),
    ("NonZero", index::non_zero),
    ("Expand", shape::expand),
    ("Shape", shape::shape),
    ("Constant", shape::constant),
    ("ConstantOfShape", shape::constant_of_shape),
    // resize.rs
    ("Resize", resize::resize),
    ("Upsample", resize::upsample),
    // reduce.rs
    ("ReduceMean", reduce::reduce_mean),
    ("ReduceSum", reduce::reduce_sum),
    ("ReduceMax", reduce::reduce_max),
    ("ReduceMin", reduce::reduce_min),
    ("ReduceProd", reduce::reduce_prod),
    ("ReduceL1", reduce::reduce_l1),
    ("ReduceL2", reduce::reduce_l2),
    ("ReduceSumSquare", reduce::reduce_sum_square),
    ("ReduceLogSum", reduce::reduce_log_sum),
    ("ReduceLogSumExp", reduce::reduce_log_sum_exp),
    ("CumSum", reduce::cumsum),
    ("TopK", reduce::topk),
    ("ArgMax", reduce::argmax),
    ("ArgMin", reduce::argmin),
];

/// `parts` joined along `axis` (`concatenate` of their tuple).
fn concat_values(ctx: &mut NodeCtx<'_>, parts: &[ExprId], axis: i64) -> Result<ExprId, OnnxError> {
    let t = ctx.tuple(parts)?;
    ctx.call(
        "concatenate",
        &[t],
        byoc_ir::Attrs::new().with("axis", axis),
    )
}

/// A one-output result.
fn one(id: ExprId) -> Result<Vec<ExprId>, OnnxError> {
    Ok(vec![id])
}
