//! Which layouts a float32 convolution asks oneDNN for, where leaving the choice to oneDNN
//! (`format_tag::any` for data and result) would cost a copy.
//!
//! oneDNN 2.6 chooses per primitive. On AVX-512 it gives the small-channel convolutions of
//! SqueezeNet's fire modules NHWC (`acdb`, its `brgconv` kernels), and in NHWC a part of a
//! concatenation along the channels is a strided slice of every pixel of the result: the
//! expansions cannot write into it (oneDNN 2.6 runs a convolution with such a strided result
//! only on its reference kernel), so a concat step copies them. In the channel-blocked layout
//! (`aBcd16b`, `aBcd8b`: oneDNN's `jit` kernels, as fast on these shapes) a part of one
//! image whose channels fill whole blocks is one contiguous run of bytes of the result, and
//! the plan concatenates in place (`Builder::concat_in_place`). Two rules:
//!
//! - a convolution whose result is such a part ([`in_place_parts`]) reads and writes the
//!   channel-blocked layout;
//! - a convolution whose data is already channel-blocked reads it as it is (no reorder in
//!   front of it) and leaves its result's layout to oneDNN, which then keeps the blocks: the
//!   concatenation's result feeds the next fire module without a reorder.
//!
//! A rule applies only where oneDNN has an optimized kernel for those layouts; otherwise the
//! convolution gets oneDNN's own choice.

use byoc_json_runtime::{JsonGraph, NodeKind};

use super::attrs::Attrs;
use super::dims_of;
use super::plan::{Builder, ValueId};
use crate::composite::{is_composite, CompositeKind, Root};
use crate::dnnl::{channel_block, MemoryDesc};

/// Whether a node is a float32 convolution, which [`conv_layouts`] applies to.
fn is_conv(name: &str) -> bool {
    name == "nn.conv2d"
        || (is_composite(name)
            && matches!(CompositeKind::parse(name), Ok(CompositeKind::Fused(c)) if c.root == Root::Conv2d))
}

/// For every graph entry: whether it is a part of a concatenation that runs in place when its
/// parts are channel-blocked: a 4-D concatenation of one image along the channels, the only
/// reader of each of its parts (each given once, read by no later node), every part the
/// result of a convolution (which then takes the channel-blocked layout; a part of another
/// op's layout would leave a concat step over mixed layouts, which oneDNN runs on its
/// reference kernel) with channels a whole number of `block`s.
pub(crate) fn in_place_parts(graph: &JsonGraph, last_reader: &[usize], block: i64) -> Vec<bool> {
    let mut parts = vec![false; graph.num_entries()];
    for (id, node) in graph.nodes.iter().enumerate() {
        if node.kind != NodeKind::Kernel || node.name != "concatenate" {
            continue;
        }
        let Some(out) = node.outputs.first() else {
            continue;
        };
        let y = dims_of(out);
        let axis = Attrs(&node.attrs).int_or("axis", 0).unwrap_or(-1);
        let axis = if axis < 0 {
            axis + y.len() as i64
        } else {
            axis
        };
        if y.len() != 4 || axis != 1 || y[0] != 1 {
            continue;
        }
        let entries: Vec<usize> = node.inputs.iter().map(|&e| graph.entry_id(e)).collect();
        let fits = node.inputs.iter().zip(&entries).all(|(&e, &entry)| {
            let x = dims_of(graph.entry_type(e));
            x.len() == 4
                && x[1] % block == 0
                && graph
                    .nodes
                    .get(e.node as usize)
                    .is_some_and(|p| p.kind == NodeKind::Kernel && is_conv(&p.name))
                && last_reader[entry] == id
                && entries.iter().filter(|&&o| o == entry).count() == 1
        });
        if fits {
            for entry in entries {
                parts[entry] = true;
            }
        }
    }
    parts
}

/// The (data, result) layouts to try, in order, for a float32 convolution of data `src`
/// (`x`) to a result `y`: the channel-blocked layout for both when the result is an in-place
/// concatenation's part (`part`), the data's own layout when it is channel-blocked; empty when
/// neither rule applies. The caller takes the first one oneDNN has an optimized kernel for,
/// else oneDNN's choice.
pub(crate) fn conv_layouts(
    b: &Builder<'_>,
    src: ValueId,
    x: &[i64],
    y: &[i64],
    part: bool,
) -> Vec<(MemoryDesc, MemoryDesc)> {
    let block = channel_block();
    let mut out = Vec::new();
    if part {
        if let (Ok(xb), Ok(yb)) = (
            MemoryDesc::channel_blocked(x, block),
            MemoryDesc::channel_blocked(y, block),
        ) {
            out.push((xb, yb));
        }
    }
    let data = b.desc(src);
    if data.is_channel_blocked(block) {
        if let Ok(any) = MemoryDesc::any(y) {
            out.push((data, any));
        }
    }
    out
}
