//! One kernel node → oneDNN primitives: op kernel nodes (`nn.conv2d`, `add`, ...) and
//! composites (`dnnl.conv2d_bias_sum_relu`, `dnnl.channel_shuffle`, see [`crate::composite`]).
//!
//! Every builder validates the node's types and attributes against what it can execute and
//! returns the values of the node's outputs.

use std::sync::Arc;

use byoc_json_runtime::NodeAttrs;
use byoc_sdk::ir::{Tensor, TensorType};

use super::attrs::{pad_before, per_axis, Attrs};
use super::int8;
use super::layout;
use super::plan::{Builder, ValueId};
use super::{check_f32, dims_of, OpError};
use crate::composite::{is_composite, Composite, CompositeKind, Eltwise, Root};
use crate::dnnl::{ffi, Attr, DataType, MemoryDesc, OpDesc, PostOp, PrimitiveDesc, Query, Window};

/// A kernel node being built.
pub(crate) struct NodeCx<'a> {
    /// The node id.
    pub node: usize,
    pub name: &'a str,
    pub attrs: &'a NodeAttrs,
    /// The values of the inputs.
    pub args: &'a [ValueId],
    pub in_types: &'a [&'a TensorType],
    /// The flat entry ids of the inputs.
    pub in_entries: &'a [usize],
    pub out_types: &'a [TensorType],
    /// The flat entry ids of the outputs.
    pub out_entries: &'a [usize],
    /// The last node reading each entry (`usize::MAX` for heads).
    pub last_reader: &'a [usize],
    /// Whether each entry is a part of a concatenation that runs in place when the parts are
    /// channel-blocked ([`layout::in_place_parts`]).
    pub in_place_parts: &'a [bool],
}

impl NodeCx<'_> {
    fn attrs(&self) -> Attrs<'_> {
        Attrs(self.attrs)
    }

    pub(crate) fn expect_inputs(&self, n: usize) -> Result<(), OpError> {
        if self.args.len() == n {
            Ok(())
        } else {
            Err(OpError::msg(format!(
                "expected {n} input(s), got {}",
                self.args.len()
            )))
        }
    }

    pub(crate) fn out_dims(&self, i: usize) -> Result<Vec<i64>, OpError> {
        self.out_types
            .get(i)
            .map(dims_of)
            .ok_or_else(|| OpError::msg(format!("the node has no output {i}")))
    }

    pub(crate) fn in_dims(&self, i: usize) -> Vec<i64> {
        dims_of(self.in_types[i])
    }
}

/// Builds the primitives of one kernel node; returns the value of each output.
pub(crate) fn build(b: &mut Builder<'_>, cx: &NodeCx<'_>) -> Result<Vec<ValueId>, OpError> {
    for ty in cx.in_types.iter().copied().chain(cx.out_types) {
        if ty.shape.contains(&0) {
            return Err(OpError::msg(format!("zero-sized tensor {ty}")));
        }
    }
    let kind = if is_composite(cx.name) {
        Some(CompositeKind::parse(cx.name).map_err(|e| OpError::msg(e.to_string()))?)
    } else {
        None
    };
    let all_f32 = || {
        cx.in_types
            .iter()
            .copied()
            .chain(cx.out_types)
            .try_for_each(check_f32)
    };
    let single = match kind {
        Some(CompositeKind::Int(q)) => int8::build(b, cx, Some(q)),
        None if cx.name == "cast" => int8::build(b, cx, None),
        Some(CompositeKind::Fused(c)) => all_f32().and_then(|()| composite(b, cx, &c)),
        Some(CompositeKind::ChannelShuffle) => all_f32().and_then(|()| channel_shuffle(b, cx)),
        None => return all_f32().and_then(|()| op(b, cx)),
    };
    single.map(|v| vec![v])
}

/// Builds a single-op kernel node on float32 tensors.
fn op(b: &mut Builder<'_>, cx: &NodeCx<'_>) -> Result<Vec<ValueId>, OpError> {
    let one = |r: Result<ValueId, OpError>| r.map(|v| vec![v]);
    match cx.name {
        "nn.conv2d" | "nn.conv2d_transpose" => {
            cx.expect_inputs(2)?;
            one(conv_with(
                b,
                cx,
                cx.name == "nn.conv2d_transpose",
                &Fused::NONE,
            ))
        }
        "nn.dense" => {
            cx.expect_inputs(2)?;
            one(dense_with(b, cx, &Fused::NONE))
        }
        "nn.batch_matmul" => one(batch_matmul(b, cx)),
        "nn.batch_norm" => batch_norm(b, cx),
        "nn.layer_norm" => one(layer_norm(b, cx)),
        "nn.softmax" => one(softmax(b, cx)),
        "nn.lrn" => one(lrn(b, cx)),
        "nn.max_pool2d" | "nn.avg_pool2d" | "nn.global_max_pool2d" | "nn.global_avg_pool2d" => {
            one(pool(b, cx))
        }
        "add" => one(binary(b, cx, ffi::dnnl_binary_add)),
        "multiply" => one(binary(b, cx, ffi::dnnl_binary_mul)),
        "concatenate" => one(concatenate(b, cx)),
        "reshape" | "nn.batch_flatten" => one(reshape(b, cx)),
        name => match eltwise_op(name, &cx.attrs())? {
            Some((alg, alpha, beta)) => one(eltwise(b, cx, alg, alpha, beta)),
            None => Err(OpError::msg(format!(
                "op {name} is not supported by the dnnl runtime"
            ))),
        },
    }
}

/// The eltwise algorithm of a single-op node.
fn eltwise_op(name: &str, a: &Attrs<'_>) -> Result<Option<(i32, f32, f32)>, OpError> {
    Ok(Some(match name {
        "nn.relu" => (ffi::dnnl_eltwise_relu, 0.0, 0.0),
        "nn.leaky_relu" => (
            ffi::dnnl_eltwise_relu,
            a.float_or("alpha", 0.01)? as f32,
            0.0,
        ),
        "tanh" => (ffi::dnnl_eltwise_tanh, 0.0, 0.0),
        "sigmoid" => (ffi::dnnl_eltwise_logistic, 0.0, 0.0),
        "clip" => (
            ffi::dnnl_eltwise_clip,
            a.float("a_min")? as f32,
            a.float("a_max")? as f32,
        ),
        "abs" => (ffi::dnnl_eltwise_abs, 0.0, 0.0),
        "exp" => (ffi::dnnl_eltwise_exp, 0.0, 0.0),
        "log" => (ffi::dnnl_eltwise_log, 0.0, 0.0),
        "sqrt" => (ffi::dnnl_eltwise_sqrt, 0.0, 0.0),
        "round" => (ffi::dnnl_eltwise_round, 0.0, 0.0),
        _ => return Ok(None),
    }))
}

/// The post-op of a composite's activation tail.
fn tail_post_op(e: Eltwise, a: &Attrs<'_>) -> Result<PostOp, OpError> {
    let (alg, alpha, beta) = match e {
        Eltwise::Relu => (ffi::dnnl_eltwise_relu, 0.0, 0.0),
        Eltwise::LeakyRelu => (ffi::dnnl_eltwise_relu, a.float("alpha")? as f32, 0.0),
        Eltwise::Tanh => (ffi::dnnl_eltwise_tanh, 0.0, 0.0),
        Eltwise::Sigmoid => (ffi::dnnl_eltwise_logistic, 0.0, 0.0),
        Eltwise::Clip => (
            ffi::dnnl_eltwise_clip,
            a.float("a_min")? as f32,
            a.float("a_max")? as f32,
        ),
        Eltwise::Gelu => (ffi::dnnl_eltwise_gelu_erf, 0.0, 0.0),
        Eltwise::Swish => (ffi::dnnl_eltwise_swish, 1.0, 0.0),
    };
    Ok(PostOp::Eltwise { alg, alpha, beta })
}

/// A composite: its root primitive with bias, sum and activation fused.
fn composite(b: &mut Builder<'_>, cx: &NodeCx<'_>, c: &Composite) -> Result<ValueId, OpError> {
    cx.expect_inputs(c.num_inputs())?;
    let mut post = Vec::new();
    if c.sum {
        post.push(PostOp::Sum);
    }
    if let Some(e) = c.eltwise {
        post.push(tail_post_op(e, &cx.attrs())?);
    }
    let bias = c.bias.then_some(2);
    let sum = c.sum.then(|| c.num_inputs() - 1);
    let fused = Fused { bias, sum, post };
    match c.root {
        Root::Conv2d => conv_with(b, cx, false, &fused),
        Root::Deconv2d => conv_with(b, cx, true, &fused),
        Root::Dense => dense_with(b, cx, &fused),
        Root::Multiply => multiply_with(b, cx, &fused),
    }
}

/// `dnnl.channel_shuffle`: `reshape(x, (N, g, C/g, H, W))`, `transpose(axes=[0, 2, 1, 3, 4])`,
/// `reshape((N, C, H, W))` as one oneDNN shuffle over axis 1.
///
/// The kernel node carries the first reshape's `newshape` (the composite's root op); the
/// pattern fixed the transpose's axes and its check the last reshape's shapes. Here the
/// `newshape` must be `(N, g, C/g, H, W)` for the result `(N, C, H, W)` (`0` and `-1` resolved
/// as Relay does). Data of the result's shape is shuffled in the producer's layout (blocked
/// ones included); data of another shape with as many elements is first made plain and read
/// as `(N, C, H, W)`, which is what the two reshapes do with it.
fn channel_shuffle(b: &mut Builder<'_>, cx: &NodeCx<'_>) -> Result<ValueId, OpError> {
    cx.expect_inputs(1)?;
    let y = cx.out_dims(0)?;
    let x = cx.in_dims(0);
    let newshape = cx.attrs().ints_or("newshape", &[])?;
    let not_a_shuffle = |why: String| {
        OpError::msg(format!(
            "not a channel shuffle: data {}, newshape {newshape:?}, result {}: {why}",
            cx.in_types[0], cx.out_types[0]
        ))
    };
    if y.len() != 4 {
        return Err(not_a_shuffle("the result is not 4-D (N, C, H, W)".into()));
    }
    if cx.in_types[0].num_elements() != cx.out_types[0].num_elements() {
        return Err(not_a_shuffle("data and result differ in size".into()));
    }
    let inner = resolve_newshape(&newshape, &x).map_err(not_a_shuffle)?;
    let groups = inner[1];
    if [inner[0], inner[3], inner[4]] != [y[0], y[2], y[3]]
        || groups.checked_mul(inner[2]) != Some(y[1])
    {
        return Err(not_a_shuffle(
            "the first reshape is not (N, groups, C / groups, H, W) of the result (N, C, H, W)"
                .into(),
        ));
    }
    let src = if b.desc(cx.args[0]).dims() == y.as_slice() {
        cx.args[0]
    } else {
        b.view(cx.args[0], MemoryDesc::plain(&y)?)?
    };
    // oneDNN's group_size is the length of a row of the transposed matrix: C / groups.
    let op = OpDesc::shuffle(&b.desc(src), 1, inner[2])?;
    let pd = PrimitiveDesc::new(b.engine, &op, &Attr::new(&[])?)?;
    src_dst_step(b, &pd, src, format!("shuffle {}", cx.name))
}

/// A reshape's `newshape` of data with dims `data` as plain dims: `0` copies the data's
/// dimension at the same position, one `-1` takes what is left; positive values stand.
fn resolve_newshape(newshape: &[i64], data: &[i64]) -> Result<Vec<i64>, String> {
    let mut dims = Vec::with_capacity(newshape.len());
    let mut infer = None;
    for (i, &d) in newshape.iter().enumerate() {
        dims.push(match d {
            d if d > 0 => d,
            0 => *data
                .get(i)
                .ok_or_else(|| format!("newshape[{i}] = 0 but the data has rank {}", data.len()))?,
            -1 if infer.is_none() => {
                infer = Some(i);
                1
            }
            d => return Err(format!("newshape[{i}] = {d} is not supported here")),
        });
    }
    if dims.len() != 5 {
        return Err(format!("newshape has {} dimensions, not 5", dims.len()));
    }
    if let Some(i) = infer {
        let product = |d: &[i64]| d.iter().try_fold(1i64, |p, &d| p.checked_mul(d));
        match (product(&dims), product(data)) {
            (Some(known), Some(total)) if known > 0 && total % known == 0 => {
                dims[i] = total / known;
            }
            _ => return Err(format!("newshape[{i}] = -1 cannot be inferred")),
        }
    }
    Ok(dims)
}

/// What a compute primitive fuses: bias input index, sum operand index, post-ops.
struct Fused {
    bias: Option<usize>,
    sum: Option<usize>,
    post: Vec<PostOp>,
}

impl Fused {
    /// Nothing fused (a single op kernel node).
    const NONE: Fused = Fused {
        bias: None,
        sum: None,
        post: Vec::new(),
    };
}

/// The bias input as a plain `{channels}` vector: a 1-D `(C)` tensor or a `(C, 1, ..., 1)`
/// one (leading ones allowed), as bias_add or a broadcasting add over the channel axis give.
fn bias_value(
    b: &mut Builder<'_>,
    cx: &NodeCx<'_>,
    i: usize,
    channels: i64,
    trailing_ones: usize,
) -> Result<ValueId, OpError> {
    let shape: Vec<i64> = cx.in_types[i].shape.iter().map(|&d| d as i64).collect();
    let first = shape
        .iter()
        .position(|&d| d != 1)
        .unwrap_or(shape.len().saturating_sub(1));
    let core = &shape[first.min(shape.len())..];
    let ok = core.first() == Some(&channels)
        && (core.len() == 1
            || (core.len() == 1 + trailing_ones && core[1..].iter().all(|&d| d == 1)));
    let ok = ok || (channels == 1 && shape.iter().all(|&d| d == 1));
    if !ok {
        return Err(OpError::msg(format!(
            "bias {} does not broadcast over the {channels} output channels",
            cx.in_types[i]
        )));
    }
    b.view(cx.args[i], MemoryDesc::plain(&[channels])?)
}

/// The destination of a primitive with a `sum` post-op: the residual operand in the
/// destination layout, in a buffer the primitive may overwrite: the operand's own buffer when
/// this node is its last reader (and reads it only here), else a copy.
fn sum_destination(
    b: &mut Builder<'_>,
    cx: &NodeCx<'_>,
    i: usize,
    dst: MemoryDesc,
) -> Result<ValueId, OpError> {
    if cx.in_types[i].shape != cx.out_types[0].shape {
        return Err(OpError::msg(format!(
            "sum operand {} differs from the result {} (the sum post-op does not broadcast)",
            cx.in_types[i], cx.out_types[0]
        )));
    }
    let v = cx.args[i];
    let entry = cx.in_entries[i];
    let sole_reader = cx.last_reader[entry] == cx.node
        && cx.in_entries.iter().filter(|&&e| e == entry).count() == 1;
    let src = if b.desc(v) == dst {
        v
    } else if dst.is_plain() {
        b.view(v, dst)?
    } else {
        // A fresh reorder: nobody else reads it.
        let r = b.reorder(v, dst)?;
        return Ok(b.alias(r, dst));
    };
    if sole_reader && b.owned_temp(src, entry) {
        let d = b.alias(src, dst);
        b.set_owner(d, cx.out_entries[0]);
        Ok(d)
    } else {
        b.reorder(src, dst)
    }
}

/// The geometry of an NCHW convolution node: dims, groups, oneDNN's weight view and window.
pub(crate) struct ConvGeometry {
    pub x: Vec<i64>,
    pub y: Vec<i64>,
    pub g: i64,
    pub oc: i64,
    pub icg: i64,
    pub kh: i64,
    pub kw: i64,
    /// The weight as oneDNN's logical `[G,] O/G, I/G, KH, KW`, with the element strides of
    /// the node's weight layout.
    pub wdims: Vec<i64>,
    pub wstrides: Vec<i64>,
    strides: Vec<i64>,
    dilates: Vec<i64>,
    pl: Vec<i64>,
    pr: Vec<i64>,
}

impl ConvGeometry {
    /// The primitive's window.
    pub fn window(&self) -> Window<'_> {
        Window {
            strides: &self.strides,
            dilates: &self.dilates,
            pad_l: &self.pl,
            pad_r: &self.pr,
        }
    }
}

/// Reads and checks a (de)convolution node's layouts, shapes, groups and window.
pub(crate) fn conv_geometry(cx: &NodeCx<'_>, deconv: bool) -> Result<ConvGeometry, OpError> {
    let a = cx.attrs();
    a.layout("data_layout", &["NCHW"])?;
    a.layout("kernel_layout", if deconv { &["IOHW"] } else { &["OIHW"] })?;
    a.layout("out_layout", &["NCHW"])?;
    let x = cx.in_dims(0);
    let w = cx.in_dims(1);
    let y = cx.out_dims(0)?;
    if x.len() != 4 || w.len() != 4 || y.len() != 4 {
        return Err(OpError::msg(format!(
            "expected 4-D data, weight and result, got {}, {}, {}",
            cx.in_types[0], cx.in_types[1], cx.out_types[0]
        )));
    }
    let g = a.int_or("groups", 1)?;
    let (kh, kw) = (w[2], w[3]);
    // Weight as oneDNN's logical [G,] O/G, I/G, KH, KW.
    let (oc, icg) = if deconv {
        (w[1] * g, w[0] / g.max(1))
    } else {
        (w[0], w[1])
    };
    if g < 1 || oc % g != 0 || x[1] != icg * g || y[1] != oc || (deconv && w[0] % g != 0) {
        return Err(OpError::msg(format!(
            "channels do not match: data {}, weight {}, result {}, groups={g}",
            cx.in_types[0], cx.in_types[1], cx.out_types[0]
        )));
    }
    let ocg = oc / g;
    let (wdims, wstrides): (Vec<i64>, Vec<i64>) = match (deconv, g) {
        (false, 1) => (vec![oc, icg, kh, kw], vec![icg * kh * kw, kh * kw, kw, 1]),
        (false, _) => (
            vec![g, ocg, icg, kh, kw],
            vec![ocg * icg * kh * kw, icg * kh * kw, kh * kw, kw, 1],
        ),
        // IOHW: element [g*I/G + i, o, h, w].
        (true, 1) => (vec![oc, icg, kh, kw], vec![kh * kw, oc * kh * kw, kw, 1]),
        (true, _) => (
            vec![g, ocg, icg, kh, kw],
            vec![icg * ocg * kh * kw, kh * kw, ocg * kh * kw, kw, 1],
        ),
    };
    let strides = per_axis("strides", &a.ints_or("strides", &[1, 1])?, 2)?;
    let dil = per_axis("dilation", &a.ints_or("dilation", &[1, 1])?, 2)?;
    let pl = pad_before(&a.ints_or("padding", &[0, 0])?, 2)?;
    let mut pr = vec![0; 2];
    for i in 0..2 {
        let k = (w[2 + i] - 1) * dil[i] + 1;
        pr[i] = if deconv {
            (x[2 + i] - 1) * strides[i] + k - pl[i] - y[2 + i]
        } else {
            (y[2 + i] - 1) * strides[i] + k - x[2 + i] - pl[i]
        };
    }
    let dilates: Vec<i64> = dil.iter().map(|d| d - 1).collect();
    Ok(ConvGeometry {
        x,
        y,
        g,
        oc,
        icg,
        kh,
        kw,
        wdims,
        wstrides,
        strides,
        dilates,
        pl,
        pr,
    })
}

fn conv_with(
    b: &mut Builder<'_>,
    cx: &NodeCx<'_>,
    deconv: bool,
    f: &Fused,
) -> Result<ValueId, OpError> {
    let geo = conv_geometry(cx, deconv)?;
    let (x, y, g, oc, icg, kh, kw) = (&geo.x, &geo.y, geo.g, geo.oc, geo.icg, geo.kh, geo.kw);
    let (wdims, wstrides) = (&geo.wdims, &geo.wstrides);
    let window = geo.window();
    let bias_desc = match f.bias {
        Some(_) => MemoryDesc::plain(&[oc])?,
        None => MemoryDesc::zero(),
    };
    let (engine, attr, dt) = (b.engine, Attr::new(&f.post)?, b.operand_type);
    let conv_pd = |src: &MemoryDesc, dst: &MemoryDesc, wdims: &[i64]| {
        let op = OpDesc::convolution(
            deconv,
            src,
            &MemoryDesc::any_of(wdims, dt)?,
            &bias_desc,
            dst,
            &window,
        )?;
        Ok::<_, OpError>(PrimitiveDesc::new(engine, &op, &attr)?)
    };
    let (any_x, any_y) = (MemoryDesc::any_of(x, dt)?, MemoryDesc::any(y)?);
    // Float32 convolutions first try the layouts that spare a copy (`layout`), where oneDNN
    // has an optimized kernel for them.
    let preferred = if deconv || dt != DataType::F32 {
        Vec::new()
    } else {
        let part = cx.in_place_parts[cx.out_entries[0]];
        layout::conv_layouts(b, cx.args[0], x, y, part)
    };
    let chosen = preferred.iter().find_map(|(src, dst)| {
        conv_pd(src, dst, wdims)
            .ok()
            .filter(|pd| !slow_impl(&pd.impl_name()))
    });
    let mut pd = match chosen {
        Some(pd) => pd,
        None => conv_pd(&any_x, &any_y, wdims)?,
    };
    let mut weight = None;
    if !deconv && g > 1 && g <= MAX_UNGROUPED && slow_impl(&pd.impl_name()) {
        if let Some(dense) = b.graph_constant(cx.args[1]).map(|t| block_diagonal(t, g)) {
            let dense = dense?;
            let dims = [oc, icg * g, kh, kw];
            let dense_pd = conv_pd(&any_x, &any_y, &dims)?;
            if !slow_impl(&dense_pd.impl_name()) {
                pd = dense_pd;
                weight = Some(b.constant(Arc::new(dense), MemoryDesc::plain(&dims)?));
            }
        }
    }
    let src = b.in_layout(cx.args[0], pd.query(Query::Src(0)))?;
    let wv = match weight {
        Some(w) => w,
        None => b.view(cx.args[1], MemoryDesc::strided(wdims, wstrides)?)?,
    };
    let wv = b.in_layout(wv, pd.query(Query::Weights(0)))?;
    let mut args = vec![(ffi::DNNL_ARG_SRC, src), (ffi::DNNL_ARG_WEIGHTS, wv)];
    if let Some(i) = f.bias {
        args.push((ffi::DNNL_ARG_BIAS, bias_value(b, cx, i, oc, 2)?));
    }
    let dst_desc = pd.query(Query::Dst(0));
    let dst = match f.sum {
        Some(i) => sum_destination(b, cx, i, dst_desc)?,
        None => b.temp(dst_desc),
    };
    args.push((ffi::DNNL_ARG_DST, dst));
    let kind = if deconv {
        "deconvolution"
    } else {
        "convolution"
    };
    let how = if weight.is_some() {
        format!(" (groups={g} as a block-diagonal weight)")
    } else {
        String::new()
    };
    b.step(&pd, args, format!("{kind} {}{how}", cx.name))?;
    Ok(dst)
}

/// The most groups a grouped convolution is expanded for (see [`block_diagonal`]): at most
/// this many times the multiply-adds.
const MAX_UNGROUPED: i64 = 4;

/// Whether oneDNN's implementation is its gemm-based or reference one, which it falls back
/// to where no optimized kernel takes the shape (e.g. grouped convolutions with 6 input
/// channels per group): slow, and on plain layouts only (reorders around it).
fn slow_impl(name: &str) -> bool {
    name.starts_with("ref") || name.split(':').any(|part| part == "gemm")
}

/// A grouped OIHW convolution weight `(O, I/g, KH, KW)` as the weight of the ungrouped
/// convolution computing the same: `(O, I, KH, KW)`, block-diagonal (output channel `o` of
/// group `o / (O/g)` reads its group's inputs, zeros elsewhere). A grouped convolution that
/// oneDNN runs only with a slow implementation runs this way in an optimized kernel, on
/// blocked layouts, with up to [`MAX_UNGROUPED`] times the multiply-adds.
fn block_diagonal(w: &Tensor, groups: i64) -> Result<Tensor, OpError> {
    let bad = || {
        OpError::msg(format!(
            "weight {} does not split into {groups} groups",
            w.ty()
        ))
    };
    let [o, icg, kh, kw] = *w.shape() else {
        return Err(bad());
    };
    let g = usize::try_from(groups).map_err(|_| bad())?;
    if g == 0 || o % g != 0 {
        return Err(bad());
    }
    let values = w
        .as_slice::<f32>()
        .map_err(|e| OpError::msg(format!("weight {}: {e}", w.ty())))?;
    let (ocg, k) = (o / g, kh * kw);
    let ic = icg * g;
    let mut dense = vec![0f32; o * ic * k];
    for oo in 0..o {
        let first = (oo / ocg) * icg * k;
        let row = &values[oo * icg * k..(oo + 1) * icg * k];
        dense[oo * ic * k + first..oo * ic * k + first + icg * k].copy_from_slice(row);
    }
    Tensor::from_vec(vec![o, ic, kh, kw], dense)
        .map_err(|e| OpError::msg(format!("weight {}: {e}", w.ty())))
}

fn dense_with(b: &mut Builder<'_>, cx: &NodeCx<'_>, f: &Fused) -> Result<ValueId, OpError> {
    let x = cx.in_dims(0);
    let w = cx.in_dims(1);
    let y = cx.out_dims(0)?;
    let k = *x.last().unwrap_or(&1);
    if w.len() != 2 || w[1] != k || y.last() != Some(&w[0]) {
        return Err(OpError::msg(format!(
            "shapes do not match: data {}, weight {}, result {}",
            cx.in_types[0], cx.in_types[1], cx.out_types[0]
        )));
    }
    let units = w[0];
    let m: i64 = x[..x.len() - 1].iter().product();
    let src = if x.len() == 2 {
        cx.args[0]
    } else {
        b.view(cx.args[0], MemoryDesc::plain(&[m, k])?)?
    };
    let bias_desc = match f.bias {
        Some(_) => MemoryDesc::plain(&[1, units])?,
        None => MemoryDesc::zero(),
    };
    let dst_desc = MemoryDesc::plain(&[m, units])?;
    // oneDNN's matmul rather than its inner product: the weight ([units, k], row-major) is the
    // [k, units] operand with strides [1, k], packed once at build.
    let op = OpDesc::matmul(
        &MemoryDesc::plain_of(&[m, k], b.operand_type)?,
        &MemoryDesc::any_of(&[k, units], b.operand_type)?,
        &bias_desc,
        &dst_desc,
    )?;
    let pd = PrimitiveDesc::new(b.engine, &op, &Attr::new(&f.post)?)?;
    let src = b.in_layout(src, pd.query(Query::Src(0)))?;
    let w = b.view(
        cx.args[1],
        MemoryDesc::strided_of(&[k, units], &[1, k], DataType::F32)?,
    )?;
    let wv = b.in_layout(w, pd.query(Query::Weights(0)))?;
    let mut args = vec![(ffi::DNNL_ARG_SRC, src), (ffi::DNNL_ARG_WEIGHTS, wv)];
    if let Some(i) = f.bias {
        let v = bias_value(b, cx, i, units, 0)?;
        args.push((ffi::DNNL_ARG_BIAS, b.view(v, bias_desc)?));
    }
    let dst = match f.sum {
        Some(i) => sum_destination(b, cx, i, dst_desc)?,
        None => b.temp(dst_desc),
    };
    args.push((ffi::DNNL_ARG_DST, dst));
    b.step(&pd, args, format!("matmul {}", cx.name))?;
    if y.len() == 2 {
        Ok(dst)
    } else {
        Ok(b.alias(dst, MemoryDesc::plain(&y)?))
    }
}

fn batch_matmul(b: &mut Builder<'_>, cx: &NodeCx<'_>) -> Result<ValueId, OpError> {
    cx.expect_inputs(2)?;
    let a = cx.attrs();
    let ta = a.flag_or("transpose_a", false)?;
    let tb = a.flag_or("transpose_b", true)?;
    let x = cx.in_dims(0);
    let w = cx.in_dims(1);
    let y = cx.out_dims(0)?;
    if x.len() != 3 || w.len() != 3 || y.len() != 3 {
        return Err(OpError::msg("expected 3-D operands and result"));
    }
    let (m, k) = if ta { (x[2], x[1]) } else { (x[1], x[2]) };
    let (k2, n) = if tb { (w[2], w[1]) } else { (w[1], w[2]) };
    if k != k2 || y[1] != m || y[2] != n {
        return Err(OpError::msg(format!(
            "shapes do not match: {} x {} -> {} (transpose_a={ta}, transpose_b={tb})",
            cx.in_types[0], cx.in_types[1], cx.out_types[0]
        )));
    }
    // Transposed operands are strided views of the row-major data.
    let operand = |dims: &[i64], transposed: bool, dt| -> Result<MemoryDesc, OpError> {
        Ok(if transposed {
            MemoryDesc::strided_of(dims, &[dims[1] * dims[2], 1, dims[1]], dt)?
        } else {
            MemoryDesc::plain_of(dims, dt)?
        })
    };
    let (src_dims, w_dims) = ([x[0], m, k], [w[0], k, n]);
    let dt = b.operand_type;
    let src_desc = operand(&src_dims, ta, dt)?;
    let w_desc = operand(&w_dims, tb, dt)?;
    let dst_desc = MemoryDesc::plain(&y)?;
    let op = OpDesc::matmul(&src_desc, &w_desc, &MemoryDesc::zero(), &dst_desc)?;
    let pd = PrimitiveDesc::new(b.engine, &op, &Attr::new(&[])?)?;
    let src = b.view(cx.args[0], operand(&src_dims, ta, DataType::F32)?)?;
    let src = b.in_layout(src, src_desc)?;
    let wv = b.view(cx.args[1], operand(&w_dims, tb, DataType::F32)?)?;
    let wv = b.in_layout(wv, w_desc)?;
    let dst = b.temp(dst_desc);
    b.step(
        &pd,
        vec![
            (ffi::DNNL_ARG_SRC, src),
            (ffi::DNNL_ARG_WEIGHTS, wv),
            (ffi::DNNL_ARG_DST, dst),
        ],
        "matmul nn.batch_matmul".to_string(),
    )?;
    Ok(dst)
}

/// `(x, gamma, beta, mean, var)` → `(y, mean, var)`; the statistics pass through.
fn batch_norm(b: &mut Builder<'_>, cx: &NodeCx<'_>) -> Result<Vec<ValueId>, OpError> {
    cx.expect_inputs(5)?;
    let a = cx.attrs();
    let x = cx.in_dims(0);
    let axis = a.int_or("axis", 1)?;
    if x.len() < 2 || (axis != 1 && axis != 1 - x.len() as i64) {
        return Err(OpError::msg(format!(
            "axis {axis} of {} is not supported (channels on axis 1 only)",
            cx.in_types[0]
        )));
    }
    let c = x[1];
    for i in 1..5 {
        if cx.in_dims(i) != [c] {
            return Err(OpError::msg(format!(
                "input {i} is {} but the data has {c} channels",
                cx.in_types[i]
            )));
        }
    }
    let (eps, scale, center, flags) = norm_settings(&a, ffi::dnnl_use_global_stats)?;
    let src_desc = b.desc(cx.args[0]);
    let op = OpDesc::batch_norm(&src_desc, eps, flags)?;
    let pd = PrimitiveDesc::new(b.engine, &op, &Attr::new(&[])?)?;
    let src = b.in_layout(cx.args[0], pd.query(Query::Src(0)))?;
    let dst = b.temp(pd.query(Query::Dst(0)));
    let mut args = vec![
        (ffi::DNNL_ARG_SRC, src),
        (ffi::DNNL_ARG_MEAN, cx.args[3]),
        (ffi::DNNL_ARG_VARIANCE, cx.args[4]),
        (ffi::DNNL_ARG_DST, dst),
    ];
    if scale {
        args.push((ffi::DNNL_ARG_SCALE, cx.args[1]));
    }
    if center {
        args.push((ffi::DNNL_ARG_SHIFT, cx.args[2]));
    }
    b.step(&pd, args, "batch_normalization nn.batch_norm".to_string())?;
    let outs = [dst, cx.args[3], cx.args[4]];
    Ok(outs[..cx.out_types.len().min(3)].to_vec())
}

/// A normalization's epsilon, `scale` and `center` flags, and oneDNN's flags: `base` plus
/// scale and shift as the attributes ask.
fn norm_settings(a: &Attrs<'_>, base: u32) -> Result<(f32, bool, bool, u32), OpError> {
    let scale = a.flag_or("scale", true)?;
    let center = a.flag_or("center", true)?;
    let mut flags = base;
    if scale {
        flags |= ffi::dnnl_use_scale;
    }
    if center {
        flags |= ffi::dnnl_use_shift;
    }
    Ok((a.float_or("epsilon", 1e-5)? as f32, scale, center, flags))
}

fn layer_norm(b: &mut Builder<'_>, cx: &NodeCx<'_>) -> Result<ValueId, OpError> {
    cx.expect_inputs(3)?;
    let a = cx.attrs();
    let x = cx.in_dims(0);
    let axis = a.int_or("axis", -1)?;
    if x.len() < 2 || (axis != -1 && axis != x.len() as i64 - 1) {
        return Err(OpError::msg(format!(
            "axis {axis} of {} is not supported (last axis only)",
            cx.in_types[0]
        )));
    }
    let c = x[x.len() - 1];
    for i in 1..3 {
        if cx.in_dims(i) != [c] {
            return Err(OpError::msg(format!(
                "input {i} is {} but the last axis has {c} elements",
                cx.in_types[i]
            )));
        }
    }
    let (eps, scale, center, flags) = norm_settings(&a, 0)?;
    let data = MemoryDesc::plain(&x)?;
    let stat = MemoryDesc::plain(&x[..x.len() - 1])?;
    let op = OpDesc::layer_norm(&data, &stat, eps, flags)?;
    let pd = PrimitiveDesc::new(b.engine, &op, &Attr::new(&[])?)?;
    let src = b.in_layout(cx.args[0], data)?;
    let dst = b.temp(data);
    let mean = b.temp(stat);
    let var = b.temp(stat);
    let mut args = vec![
        (ffi::DNNL_ARG_SRC, src),
        (ffi::DNNL_ARG_MEAN, mean),
        (ffi::DNNL_ARG_VARIANCE, var),
        (ffi::DNNL_ARG_DST, dst),
    ];
    if scale {
        args.push((ffi::DNNL_ARG_SCALE, cx.args[1]));
    }
    if center {
        args.push((ffi::DNNL_ARG_SHIFT, cx.args[2]));
    }
    b.step(&pd, args, "layer_normalization nn.layer_norm".to_string())?;
    Ok(dst)
}

fn softmax(b: &mut Builder<'_>, cx: &NodeCx<'_>) -> Result<ValueId, OpError> {
    cx.expect_inputs(1)?;
    let x = cx.in_dims(0);
    let axis = cx.attrs().int_or("axis", -1)?;
    let rank = x.len() as i64;
    let ax = if axis < 0 { axis + rank } else { axis };
    if !(0..rank).contains(&ax) {
        return Err(OpError::msg(format!(
            "axis {axis} is out of range for rank {rank}"
        )));
    }
    let data = MemoryDesc::plain(&x)?;
    let op = OpDesc::softmax(&data, ax as usize)?;
    let pd = PrimitiveDesc::new(b.engine, &op, &Attr::new(&[])?)?;
    let src = b.in_layout(cx.args[0], data)?;
    let dst = b.temp(data);
    b.step(
        &pd,
        vec![(ffi::DNNL_ARG_SRC, src), (ffi::DNNL_ARG_DST, dst)],
        "softmax nn.softmax".to_string(),
    )?;
    Ok(dst)
}

fn pool(b: &mut Builder<'_>, cx: &NodeCx<'_>) -> Result<ValueId, OpError> {
    cx.expect_inputs(1)?;
    let a = cx.attrs();
    a.layout("layout", &["NCHW"])?;
    a.layout("out_layout", &["NCHW"])?;
    let x = cx.in_dims(0);
    let y = cx.out_dims(0)?;
    if x.len() != 4 || y.len() != 4 {
        return Err(OpError::msg("expected 4-D data and result"));
    }
    let global = cx.name.contains("global");
    let max = cx.name.contains("max");
    let (kernel, strides, dil, pl) = if global {
        (vec![x[2], x[3]], vec![1, 1], vec![1, 1], vec![0, 0])
    } else {
        (
            per_axis("pool_size", &a.ints_or("pool_size", &[1, 1])?, 2)?,
            per_axis("strides", &a.ints_or("strides", &[1, 1])?, 2)?,
            per_axis("dilation", &a.ints_or("dilation", &[1, 1])?, 2)?,
            pad_before(&a.ints_or("padding", &[0, 0])?, 2)?,
        )
    };
    let include_pad = a.flag_or("count_include_pad", false)?;
    if !max && !global && a.flag_or("ceil_mode", false)? {
        return Err(OpError::msg(
            "ceil_mode=1 is not supported for average pooling",
        ));
    }
    let pr: Vec<i64> = (0..2)
        .map(|i| (y[2 + i] - 1) * strides[i] + (kernel[i] - 1) * dil[i] + 1 - x[2 + i] - pl[i])
        .collect();
    let alg = if max {
        ffi::dnnl_pooling_max
    } else if include_pad {
        ffi::dnnl_pooling_avg_include_padding
    } else {
        ffi::dnnl_pooling_avg_exclude_padding
    };
    let dilates: Vec<i64> = dil.iter().map(|d| d - 1).collect();
    let window = Window {
        strides: &strides,
        dilates: &dilates,
        pad_l: &pl,
        pad_r: &pr,
    };
    let src_desc = b.desc(cx.args[0]);
    let op = OpDesc::pooling(alg, &src_desc, &MemoryDesc::any(&y)?, &kernel, &window)?;
    let pd = PrimitiveDesc::new(b.engine, &op, &Attr::new(&[])?)?;
    let src = b.in_layout(cx.args[0], pd.query(Query::Src(0)))?;
    src_dst_step(b, &pd, src, format!("pooling {}", cx.name))
}

fn eltwise(
    b: &mut Builder<'_>,
    cx: &NodeCx<'_>,
    alg: i32,
    alpha: f32,
    beta: f32,
) -> Result<ValueId, OpError> {
    cx.expect_inputs(1)?;
    let op = OpDesc::eltwise(alg, &b.desc(cx.args[0]), alpha, beta)?;
    same_layout_step(b, cx, &op, "eltwise")
}

/// `nn.lrn` across channels (axis 1 of 4-D data), odd window sizes: oneDNN centres its window
/// as Relay does only for those.
fn lrn(b: &mut Builder<'_>, cx: &NodeCx<'_>) -> Result<ValueId, OpError> {
    cx.expect_inputs(1)?;
    let a = cx.attrs();
    let rank = cx.in_dims(0).len();
    let axis = a.int_or("axis", 1)?;
    if rank != 4 || axis != 1 {
        return Err(OpError::msg(format!(
            "axis={axis} of rank-{rank} data not supported (needs axis 1 of 4-D data)"
        )));
    }
    let size = a.int_or("size", 5)?;
    if size < 1 || size % 2 == 0 {
        return Err(OpError::msg(format!(
            "size={size} not supported (needs an odd window size)"
        )));
    }
    let op = OpDesc::lrn(
        &b.desc(cx.args[0]),
        size,
        a.float_or("alpha", 1e-4)? as f32,
        a.float_or("beta", 0.75)? as f32,
        a.float_or("bias", 2.0)? as f32,
    )?;
    same_layout_step(b, cx, &op, "lrn")
}

/// One step of a single-input op whose result has the input's layout.
fn same_layout_step(
    b: &mut Builder<'_>,
    cx: &NodeCx<'_>,
    op: &OpDesc,
    kind: &str,
) -> Result<ValueId, OpError> {
    let pd = PrimitiveDesc::new(b.engine, op, &Attr::new(&[])?)?;
    src_dst_step(b, &pd, cx.args[0], format!("{kind} {}", cx.name))
}

/// One step of a primitive with one source and one destination: a fresh temporary in the
/// layout the primitive chose.
fn src_dst_step(
    b: &mut Builder<'_>,
    pd: &PrimitiveDesc,
    src: ValueId,
    label: String,
) -> Result<ValueId, OpError> {
    let dst = b.temp(pd.query(Query::Dst(0)));
    b.step(
        pd,
        vec![(ffi::DNNL_ARG_SRC, src), (ffi::DNNL_ARG_DST, dst)],
        label,
    )?;
    Ok(dst)
}

/// `dims` with leading ones up to `rank`.
fn padded(dims: Vec<i64>, rank: usize) -> Vec<i64> {
    let mut p = vec![1; rank.saturating_sub(dims.len())];
    p.extend(dims);
    p
}

/// The second operand `c` of a binary primitive over the full-shape `a` (dims `da`): in `a`'s
/// layout when it has the full shape too, else a plain view of its broadcast dims `dc`.
fn second_operand(
    b: &mut Builder<'_>,
    a: ValueId,
    da: &[i64],
    c: ValueId,
    dc: &[i64],
) -> Result<ValueId, OpError> {
    if dc == da {
        if b.desc(c).dims() == dc {
            b.in_layout(c, b.desc(a))
        } else {
            b.view(c, b.desc(a))
        }
    } else {
        b.view(c, MemoryDesc::plain(dc)?)
    }
}

/// A `multiply` composite (`dnnl.multiply[_bias][_<tail>]`): oneDNN's binary mul of the
/// operand of the result's shape by the other one (broadcasting; multiply commutes), the bias
/// (one value per channel, axis 1) as a binary-add post-op and the tail as an eltwise post-op,
/// in one pass over the data. DenseNet's pre-activation batch norm + relu is one such step.
fn multiply_with(b: &mut Builder<'_>, cx: &NodeCx<'_>, f: &Fused) -> Result<ValueId, OpError> {
    if f.sum.is_some() {
        return Err(OpError::msg("a multiply composite takes no sum operand"));
    }
    let y = cx.out_dims(0)?;
    let (d0, d1) = (
        padded(cx.in_dims(0), y.len()),
        padded(cx.in_dims(1), y.len()),
    );
    let (data, dw, w) = if d0 == y {
        (cx.args[0], d1, cx.args[1])
    } else if d1 == y {
        (cx.args[1], d0, cx.args[0])
    } else {
        return Err(OpError::msg(format!(
            "neither {} nor {} has the result's shape {}",
            cx.in_types[0], cx.in_types[1], cx.out_types[0]
        )));
    };
    let data = if b.desc(data).dims() == y.as_slice() {
        data
    } else {
        b.view(data, MemoryDesc::plain(&y)?)?
    };
    let weight = second_operand(b, data, &y, w, &dw)?;
    let mut post = Vec::new();
    let mut args = Vec::new();
    if let Some(i) = f.bias {
        let channels = y.get(1).copied().unwrap_or(1);
        let trailing = y.len().saturating_sub(2);
        let vector = bias_value(b, cx, i, channels, trailing)?;
        let mut dims = vec![1; y.len()];
        if let Some(d) = dims.get_mut(1) {
            *d = channels;
        }
        let src1 = MemoryDesc::plain(&dims)?;
        args.push((PostOp::binary_arg(post.len()), b.view(vector, src1)?));
        post.push(PostOp::Binary {
            alg: ffi::dnnl_binary_add,
            src1: Box::new(src1),
        });
    }
    post.extend(f.post.iter().cloned());
    let src0 = b.desc(data);
    let op = OpDesc::binary(
        ffi::dnnl_binary_mul,
        &src0,
        &b.desc(weight),
        &MemoryDesc::any(&y)?,
    )?;
    let pd = PrimitiveDesc::new(b.engine, &op, &Attr::new(&post)?)?;
    let dst = b.temp(pd.query(Query::Dst(0)));
    args.extend([
        (ffi::DNNL_ARG_SRC, data),
        (ffi::DNNL_ARG_SRC_1, weight),
        (ffi::DNNL_ARG_DST, dst),
    ]);
    b.step(&pd, args, format!("binary {}", cx.name))?;
    Ok(dst)
}

/// `add`/`multiply` with numpy broadcasting: the full-shape operand is src0 (both ops
/// commute), the other one broadcasts as src1.
/// The primitive of binary `alg` over values `a` and `c` into a result of dims `y`. A plain
/// operand is described by its canonical row-major descriptor: a view can give a unit
/// dimension another stride, which oneDNN counts as the same layout but its jit binary
/// refuses, falling back to the reference implementation (many times slower: half of ViT's
/// time went there).
fn binary_pd(
    b: &Builder<'_>,
    alg: i32,
    a: ValueId,
    c: ValueId,
    y: &[i64],
) -> Result<PrimitiveDesc, OpError> {
    let canonical = |v: ValueId| -> Result<MemoryDesc, OpError> {
        let d = b.desc(v);
        Ok(if d.is_plain() { d.plain_like()? } else { d })
    };
    let op = OpDesc::binary(alg, &canonical(a)?, &canonical(c)?, &MemoryDesc::any(y)?)?;
    Ok(PrimitiveDesc::new(b.engine, &op, &Attr::new(&[])?)?)
}

fn binary(b: &mut Builder<'_>, cx: &NodeCx<'_>, alg: i32) -> Result<ValueId, OpError> {
    cx.expect_inputs(2)?;
    let y = cx.out_dims(0)?;
    let (d0, d1) = (
        padded(cx.in_dims(0), y.len()),
        padded(cx.in_dims(1), y.len()),
    );
    let (a, da, c, dc) = if d0 == y {
        (cx.args[0], d0, cx.args[1], d1)
    } else if d1 == y {
        (cx.args[1], d1, cx.args[0], d0)
    } else {
        return Err(OpError::msg(format!(
            "both operands {} and {} broadcast to {}; the dnnl runtime needs one of full shape",
            cx.in_types[0], cx.in_types[1], cx.out_types[0]
        )));
    };
    let a = if b.desc(a).dims() == da.as_slice() {
        a
    } else {
        b.view(a, MemoryDesc::plain(&da)?)?
    };
    let c = second_operand(b, a, &da, c, &dc)?;
    let pd = binary_pd(b, alg, a, c, &y)?;
    let dst = b.temp(pd.query(Query::Dst(0)));
    b.step(
        &pd,
        vec![
            (ffi::DNNL_ARG_SRC, a),
            (ffi::DNNL_ARG_SRC_1, c),
            (ffi::DNNL_ARG_DST, dst),
        ],
        format!("binary {}", cx.name),
    )?;
    Ok(dst)
}

/// `reshape` and `nn.batch_flatten`: the data, made plain, read with the result's dims (no
/// copy when the data is plain already). The buffer is then read through two graph entries,
/// so it is marked shared: no `sum` post-op overwrites it in place.
fn reshape(b: &mut Builder<'_>, cx: &NodeCx<'_>) -> Result<ValueId, OpError> {
    cx.expect_inputs(1)?;
    if cx.in_types[0].num_elements() != cx.out_types[0].num_elements() {
        return Err(OpError::msg(format!(
            "data {} and result {} differ in size",
            cx.in_types[0], cx.out_types[0]
        )));
    }
    let v = b.view(cx.args[0], MemoryDesc::plain(&cx.out_dims(0)?)?)?;
    b.share(v);
    Ok(v)
}

fn concatenate(b: &mut Builder<'_>, cx: &NodeCx<'_>) -> Result<ValueId, OpError> {
    if cx.args.is_empty() {
        return Err(OpError::msg("no inputs"));
    }
    let y = cx.out_dims(0)?;
    let rank = y.len() as i64;
    let axis = cx.attrs().int_or("axis", 0)?;
    let ax = if axis < 0 { axis + rank } else { axis };
    if !(0..rank).contains(&ax) {
        return Err(OpError::msg(format!(
            "axis {axis} is out of range for rank {rank}"
        )));
    }
    let srcs: Vec<MemoryDesc> = cx.args.iter().map(|&v| b.desc(v)).collect();
    if srcs.iter().any(|d| d.dims().len() != y.len()) {
        return Err(OpError::msg("inputs differ in rank from the result"));
    }
    // The parts' producers write into their slices of the result when no later node reads
    // them and their layouts allow it; else a concat step copies them.
    let only_here = cx.in_entries.iter().all(|&e| {
        cx.last_reader[e] == cx.node && cx.in_entries.iter().filter(|&&x| x == e).count() == 1
    });
    if let Some(desc) = MemoryDesc::concat_of_slices(&srcs, ax as usize) {
        if only_here && desc.dims() == y.as_slice() {
            if let Some(dst) = b.concat_in_place(cx.args, desc) {
                return Ok(dst);
            }
        }
    }
    let mut parts = cx.args.to_vec();
    let mut pd = PrimitiveDesc::concat(b.engine, &MemoryDesc::any(&y)?, ax as usize, &srcs)?;
    if slow_impl(&pd.impl_name()) {
        // Parts in different layouts: oneDNN's reference concat. Made plain, they are copied
        // by its simple one.
        let plain = srcs
            .iter()
            .map(|d| d.plain_like())
            .collect::<Result<Vec<_>, _>>()?;
        for (v, d) in parts.iter_mut().zip(&plain) {
            *v = b.in_layout(*v, *d)?;
        }
        pd = PrimitiveDesc::concat(b.engine, &MemoryDesc::any(&y)?, ax as usize, &plain)?;
    }
    let dst = b.temp(pd.query(Query::Dst(0)));
    let mut args: Vec<(i32, ValueId)> = parts
        .iter()
        .enumerate()
        .map(|(i, &v)| (ffi::DNNL_ARG_MULTIPLE_SRC + i as i32, v))
        .collect();
    args.push((ffi::DNNL_ARG_DST, dst));
    b.step(&pd, args, "concat concatenate".to_string())?;
    Ok(dst)
}
