use byoc_ir::ops::vision::{Boxes, NmsAttrs};

/// `get_valid_counts`: per batch element, moves the boxes whose score exceeds `threshold`
/// (and whose class id is not negative, when `id_index` is given) to the front in their
/// original order, fills the rest with `-1`, and records each kept box's original index and
/// the count.
#[allow(
    clippy::too_many_arguments,
    reason = "the op's inputs and outputs, each named"
)]
pub(crate) fn get_valid_counts(
    geo: Boxes,
    data: &[f32],
    threshold: f32,
    id_index: Option<usize>,
    score_index: usize,
    valid_count: &mut [i32],
    out: &mut [f32],
    out_indices: &mut [i32],
) {
    for b in 0..geo.batch {
        let mut count = 0;
        for j in 0..geo.anchors {
            let row = geo.row(data, b, j);
            if row[score_index] > threshold && id_index.is_none_or(|id| row[id] >= 0.0) {
                geo.row_mut(out, b, count).copy_from_slice(row);
                out_indices[b * geo.anchors + count] = j as i32;
                count += 1;
            }
        }
        for j in count..geo.anchors {
            geo.row_mut(out, b, j).fill(-1.0);
            out_indices[b * geo.anchors + j] = -1;
        }
        valid_count[b] = count as i32;
    }
}

/// Intersection over union of two boxes given by their corners in any order; 0 when the
/// union is empty.
fn iou(a: &[f32], b: &[f32]) -> f32 {
    let span = |p: f32, q: f32| (p.min(q), p.max(q));
    let ((al, ar), (at, ab)) = (span(a[0], a[2]), span(a[1], a[3]));
    let ((bl, br), (bt, bb)) = (span(b[0], b[2]), span(b[1], b[3]));
    let w = (ar.min(br) - al.max(bl)).max(0.0);
    let h = (ab.min(bb) - at.max(bt)).max(0.0);
    let inter = w * h;
    let union = (ar - al) * (ab - at) + (br - bl) * (bb - bt) - inter;
    if union <= 0.0 {
        0.0
    } else {
        inter / union
    }
}

/// True when the earlier box `kept` (still valid: score > 0, class id not negative)
/// suppresses `row`: same class (or `force_suppress`) and IoU ≥ `iou_threshold`.
fn suppresses(attrs: &NmsAttrs, kept: &[f32], row: &[f32], iou_threshold: f32) -> bool {
    let c = attrs.coord_start;
    let labelled = attrs.id_index.is_none_or(|id| kept[id] >= 0.0);
    let same_class = attrs.force_suppress || attrs.id_index.is_none_or(|id| kept[id] == row[id]);
    kept[attrs.score_index] > 0.0
        && labelled
        && same_class
        && iou(&row[c..c + 4], &kept[c..c + 4]) >= iou_threshold
}

/// Greedy non-maximum suppression of the first `valid_count[b]` boxes of each batch element
/// of `data` (`get_valid_counts`' output). Boxes are taken in descending score order (stable
/// for ties); a box is kept unless it overlaps an already kept box of the same class (any
/// class with `force_suppress`) with IoU ≥ `iou_threshold`, or `max_output_size` (when not
/// negative) boxes are already kept. A score ≤ 0 marks a box as suppressed, as in TVM. With
/// `iou_threshold ≤ 0` nothing is sorted or suppressed.
///
/// Writes `out` (the box tensor: kept boxes in score order, others `-1`) and `box_indices`
/// (`[batch, anchors]`: for each row of `out`, the original index through `indices`, or
/// `-1`). With `return_indices`, the caller uses only `box_indices`, compacted by
/// [`compact_indices`].
#[allow(
    clippy::too_many_arguments,
    reason = "the op's inputs and outputs, each named"
)]
pub(crate) fn non_max_suppression(
    geo: Boxes,
    attrs: &NmsAttrs,
    data: &[f32],
    valid_count: &[i32],
    indices: &[i32],
    max_output_size: i32,
    iou_threshold: f32,
    out: &mut [f32],
    box_indices: &mut [i32],
) {
    let score = attrs.score_index;
    for b in 0..geo.batch {
        let valid = usize::try_from(valid_count[b])
            .unwrap_or(0)
            .min(geo.anchors);
        let idx = &mut box_indices[b * geo.anchors..(b + 1) * geo.anchors];
        if iou_threshold > 0.0 {
            let mut order: Vec<usize> = (0..valid).collect();
            order.sort_by(|&p, &q| {
                let (sp, sq) = (geo.row(data, b, p)[score], geo.row(data, b, q)[score]);
                // A total order (NaN scores sort consistently), descending; stable for ties.
                sq.total_cmp(&sp)
            });
            let keep = match usize::try_from(attrs.top_k) {
                Ok(k) if k > 0 && k < valid => k,
                _ => valid,
            };
            for (j, &src) in order.iter().enumerate() {
                if j < keep {
                    geo.row_mut(out, b, j)
                        .copy_from_slice(geo.row(data, b, src));
                    idx[j] = src as i32;
                } else {
                    geo.row_mut(out, b, j).fill(-1.0);
                    idx[j] = -1;
                }
            }
            let mut kept = 0i32;
            for (j, slot) in idx.iter_mut().enumerate().take(valid) {
                let row = geo.row(out, b, j);
                let suppressed = row[score] <= 0.0
                    || kept == max_output_size
                    || (0..j).any(|k| suppresses(attrs, geo.row(out, b, k), row, iou_threshold));
                if suppressed {
                    geo.row_mut(out, b, j).fill(-1.0);
                    *slot = -1;
                } else {
                    kept += 1;
                }
            }
        } else {
            for (j, slot) in idx.iter_mut().enumerate().take(valid) {
                geo.row_mut(out, b, j).copy_from_slice(geo.row(data, b, j));
                *slot = j as i32;
            }
        }
        for (j, slot) in idx.iter_mut().enumerate().skip(valid) {
            geo.row_mut(out, b, j).fill(-1.0);
            *slot = -1;
        }
        for slot in idx.iter_mut().take(valid) {
            if let Ok(pos) = usize::try_from(*slot) {
                *slot = indices[b * geo.anchors + pos];
            }
        }
    }
}

/// Moves the non-negative entries of each `[batch, anchors]` row to the front (order kept),
/// fills the rest with `-1`, and writes the number kept per row to `counts`.
pub(crate) fn compact_indices(geo: Boxes, box_indices: &mut [i32], counts: &mut [i32]) {
    for (row, count) in box_indices.chunks_mut(geo.anchors).zip(counts.iter_mut()) {
        let mut n = 0;
        for j in 0..row.len() {
            if row[j] >= 0 {
                row[n] = row[j];
                n += 1;
            }
        }
        row[n..].fill(-1);
        *count = n as i32;
    }
}

/// Moves the rows of `out` whose first value is non-negative (TVM's test for a kept box) to
/// the top of each batch element, order kept, and fills the rest with `-1`.
pub(crate) fn boxes_to_top(geo: Boxes, out: &mut [f32]) {
    for b in 0..geo.batch {
        let mut n = 0;
        for j in 0..geo.anchors {
            if geo.row(out, b, j)[0] >= 0.0 {
                if n != j {
                    let start = (b * geo.anchors) * geo.elems;
                    out.copy_within(
                        start + j * geo.elems..start + (j + 1) * geo.elems,
                        start + n * geo.elems,
                    );
                }
                n += 1;
            }
        }
        for j in n..geo.anchors {
            geo.row_mut(out, b, j).fill(-1.0);
        }
    }
}
