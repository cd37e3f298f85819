//! Data-movement loops (transpose, slicing, concatenation, gathers). They move whole elements
//! of any width, so one instantiation per element size serves every dtype, custom ones too.

use super::strides;

/// `dst[idx] = src[base + Σ idx[d] * step[d]]` over the row-major indices of `shape`; steps are
/// in elements and may be negative. The caller guarantees every address is inside `src`.
pub(crate) fn strided_gather<W: Copy>(
    src: &[W],
    dst: &mut [W],
    shape: &[usize],
    base: usize,
    step: &[isize],
) {
    if dst.is_empty() {
        return;
    }
    let (shape, step) = coalesce(shape, step);
    let Some((&inner, outer)) = shape.split_last() else {
        dst[0] = src[base];
        return;
    };
    let inner_step = step[step.len() - 1];
    let mut idx = vec![0usize; outer.len()];
    for row in dst.chunks_mut(inner) {
        let start = idx
            .iter()
            .zip(&step)
            .fold(base as isize, |acc, (&i, &s)| acc + i as isize * s);
        if inner_step == 1 {
            let start = start as usize;
            row.copy_from_slice(&src[start..start + inner]);
        } else {
            for (i, d) in row.iter_mut().enumerate() {
                *d = src[(start + i as isize * inner_step) as usize];
            }
        }
        // Odometer increment over the outer dimensions.
        for d in (0..outer.len()).rev() {
            idx[d] += 1;
            if idx[d] < outer[d] {
                break;
            }
            idx[d] = 0;
        }
    }
}

/// `shape` and `step` with size-1 dimensions dropped and each dimension merged into the one
/// outside it where that one steps over exactly it (`step[d] == step[d + 1] · shape[d + 1]`):
/// the same addresses in the same order, in fewer and longer rows (a channel shuffle's
/// transpose keeps whole planes as rows instead of rows of one image row).
fn coalesce(shape: &[usize], step: &[isize]) -> (Vec<usize>, Vec<isize>) {
    let (mut dims, mut steps): (Vec<usize>, Vec<isize>) = (Vec::new(), Vec::new());
    for (&n, &s) in shape.iter().zip(step) {
        if n == 1 {
            continue;
        }
        match (dims.last_mut(), steps.last_mut()) {
            (Some(outer_n), Some(outer_s)) if *outer_s == s * n as isize => {
                *outer_n *= n;
                *outer_s = s;
            }
            _ => {
                dims.push(n);
                steps.push(s);
            }
        }
    }
    (dims, steps)
}

/// Transposes `src` of shape `shape` so output dimension `i` is input dimension `axes[i]`.
pub(crate) fn permute<W: Copy>(src: &[W], dst: &mut [W], shape: &[usize], axes: &[usize]) {
    let s = strides(shape);
    let out_shape: Vec<usize> = axes.iter().map(|&a| shape[a]).collect();
    let step: Vec<isize> = axes.iter().map(|&a| s[a] as isize).collect();
    strided_gather(src, dst, &out_shape, 0, &step);
}

/// Concatenates byte blocks: for each of `outer` rows, the row's block of every part in order.
/// `parts` holds each input's bytes and its block size in bytes.
pub(crate) fn concat(parts: &[(&[u8], usize)], outer: usize, out: &mut [u8]) {
    let mut at = 0;
    for o in 0..outer {
        for &(bytes, block) in parts {
            out[at..at + block].copy_from_slice(&bytes[o * block..(o + 1) * block]);
            at += block;
        }
    }
}

/// The inverse of [`concat`]: deals each row's consecutive blocks out to the parts.
pub(crate) fn split(src: &[u8], outer: usize, parts: &mut [(&mut [u8], usize)]) {
    let mut at = 0;
    for o in 0..outer {
        for (bytes, block) in parts.iter_mut() {
            let block = *block;
            bytes[o * block..(o + 1) * block].copy_from_slice(&src[at..at + block]);
            at += block;
        }
    }
}

/// Gathers blocks along an axis: `data` is `[outer, axis_len, block]` bytes-wise, the output
/// `[outer, indices.len(), block]`; every index is already inside `0..axis_len`.
pub(crate) fn take(
    data: &[u8],
    indices: &[usize],
    outer: usize,
    axis_len: usize,
    block: usize,
    out: &mut [u8],
) {
    let mut at = 0;
    for o in 0..outer {
        for &k in indices {
            let from = (o * axis_len + k) * block;
            out[at..at + block].copy_from_slice(&data[from..from + block]);
            at += block;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Transposes of every axis order of small shapes (size-1 axes, mergeable and
    /// non-mergeable neighbours) and negative steps equal indexing by definition.
    #[test]
    fn gathers_match_the_definition() {
        let shapes: [&[usize]; 5] = [&[2, 3, 4], &[1, 4, 3, 5], &[2, 1, 3, 1], &[4, 2, 3, 2], &[]];
        for shape in shapes {
            let n: usize = shape.iter().product();
            let src: Vec<u32> = (0..n as u32).collect();
            let s = strides(shape);
            let rank = shape.len();
            let mut axes: Vec<usize> = (0..rank).collect();
            // Every permutation, by Heap's algorithm over swaps of the running order.
            let mut perms = vec![axes.clone()];
            let mut c = vec![0; rank];
            let mut i = 0;
            while i < rank {
                if c[i] < i {
                    let j = if i % 2 == 0 { 0 } else { c[i] };
                    axes.swap(j, i);
                    perms.push(axes.clone());
                    c[i] += 1;
                    i = 0;
                } else {
                    c[i] = 0;
                    i += 1;
                }
            }
            for axes in perms {
                let out_shape: Vec<usize> = axes.iter().map(|&a| shape[a]).collect();
                let mut want = Vec::with_capacity(n);
                let out_strides = strides(&out_shape);
                for o in 0..n {
                    let at: usize = (0..rank)
                        .map(|d| (o / out_strides[d] % out_shape[d]) * s[axes[d]])
                        .sum();
                    want.push(src[at]);
                }
                let mut got = vec![u32::MAX; n];
                permute(&src, &mut got, shape, &axes);
                assert_eq!(got, want, "{shape:?} {axes:?}");
            }
        }
        // Reversed rows: a negative inner step from the end of each row.
        let src: Vec<u32> = (0..12).collect();
        let mut got = vec![0; 12];
        strided_gather(&src, &mut got, &[3, 4], 3, &[4, -1]);
        assert_eq!(got, [3, 2, 1, 0, 7, 6, 5, 4, 11, 10, 9, 8]);
    }
}
