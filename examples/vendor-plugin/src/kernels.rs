//! tinyacc's kernels: elementwise float32 loops (what the accelerator would run).

/// `out = a + b`.
pub fn add(a: &[f32], b: &[f32], out: &mut [f32]) {
    for ((o, x), y) in out.iter_mut().zip(a).zip(b) {
        *o = x + y;
    }
}

/// `out = a * b`.
pub fn multiply(a: &[f32], b: &[f32], out: &mut [f32]) {
    for ((o, x), y) in out.iter_mut().zip(a).zip(b) {
        *o = x * y;
    }
}

/// `out = max(x, 0)`.
pub fn relu(x: &[f32], out: &mut [f32]) {
    for (o, v) in out.iter_mut().zip(x) {
        *o = v.max(0.0);
    }
}

/// `out = min(max(x, lo), hi)`.
pub fn clip(x: &[f32], lo: f32, hi: f32, out: &mut [f32]) {
    for (o, v) in out.iter_mut().zip(x) {
        *o = v.max(lo).min(hi);
    }
}

/// `out = max(a + b, 0)` in one pass.
pub fn add_relu(a: &[f32], b: &[f32], out: &mut [f32]) {
    for ((o, x), y) in out.iter_mut().zip(a).zip(b) {
        *o = (x + y).max(0.0);
    }
}
