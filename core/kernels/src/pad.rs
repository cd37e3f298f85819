use byoc_ir::ops::pad::PadMode;

/// Source index along one axis for each output index.
fn axis_map(mode: PadMode, size: usize, before: usize, after: usize) -> Vec<Option<usize>> {
    (0..before + size + after)
        .map(|o| {
            let i = o as isize - before as isize;
            let n = size as isize;
            if (0..n).contains(&i) {
                return Some(i as usize);
            }
            match mode {
                PadMode::Constant => None,
                PadMode::Edge => Some(i.clamp(0, n - 1) as usize),
                PadMode::Reflect if n == 1 => Some(0),
                PadMode::Reflect => {
                    let period = 2 * (n - 1);
                    let r = i.rem_euclid(period);
                    Some((if r >= n { period - r } else { r }) as usize)
                }
            }
        })
        .collect()
}

/// Pads `x` (shape `shape`, `elem` bytes per element) into `y`; `widths[d] = (before, after)`;
/// `value` holds one element's bytes for constant padding.
pub(crate) fn pad(
    mode: PadMode,
    shape: &[usize],
    widths: &[(usize, usize)],
    elem: usize,
    value: &[u8],
    x: &[u8],
    y: &mut [u8],
) {
    let maps: Vec<Vec<Option<usize>>> = shape
        .iter()
        .zip(widths)
        .map(|(&s, &(b, a))| axis_map(mode, s, b, a))
        .collect();
    if maps.is_empty() {
        y.copy_from_slice(x);
        return;
    }
    let rank = shape.len();
    let out_shape: Vec<usize> = maps.iter().map(Vec::len).collect();
    let in_strides = strides(shape);
    let last = &maps[rank - 1];
    let row_bytes = out_shape[rank - 1] * elem;
    if row_bytes == 0 {
        return;
    }
    let outer = &out_shape[..rank - 1];
    let mut idx = vec![0usize; rank - 1];
    for row in y.chunks_mut(row_bytes) {
        // Source offset of this row, or None when the row lies in the padding.
        let src: Option<usize> = idx.iter().enumerate().try_fold(0, |acc, (d, &o)| {
            maps[d][o].map(|i| acc + i * in_strides[d])
        });
        for (o, dst) in row.chunks_mut(elem).enumerate() {
            match (src, last[o]) {
                (Some(s), Some(i)) => {
                    let at = (s + i) * elem;
                    dst.copy_from_slice(&x[at..at + elem]);
                }
                _ => dst.copy_from_slice(value),
            }
        }
        // Advance the row index (odometer over the outer axes).
        for d in (0..outer.len()).rev() {
            idx[d] += 1;
            if idx[d] < outer[d] {
                break;
            }
            idx[d] = 0;
        }
    }
}

fn strides(shape: &[usize]) -> Vec<usize> {
    let mut s = vec![1; shape.len()];
    for d in (0..shape.len().saturating_sub(1)).rev() {
        s[d] = s[d + 1] * shape[d + 1];
    }
    s
}
