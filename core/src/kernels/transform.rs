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
    let Some((&inner, outer)) = shape.split_last() else {
        dst[0] = src[base];
        return;
    };
    let inner_step = step[step.len() - 1];
    let mut idx = vec![0usize; outer.len()];
    for row in dst.chunks_mut(inner) {
        let start = idx
            .iter()
            .zip(step)
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
pub(crate) fn take(data: &[u8], indices: &[usize], outer: usize, axis_len: usize, block: usize, out: &mut [u8]) {
    let mut at = 0;
    for o in 0..outer {
        for &k in indices {
            let from = (o * axis_len + k) * block;
            out[at..at + block].copy_from_slice(&data[from..from + block]);
            at += block;
        }
    }
}
