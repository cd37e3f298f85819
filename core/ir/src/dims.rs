//! Checked conversions of dimensions, axes and counts between the signed 64-bit integers of
//! files and attributes (ONNX dims, Relay attribute lists, npz headers) and the `usize` of
//! shapes.
//!
//! A value from input never goes through an `as` cast: a negative dimension, one beyond
//! `i64::MAX`, an axis outside its rank or a non-finite or out-of-range float is `None` here, and
//! the caller turns it into an error that names what and where. Casts that stay in the code are
//! on values these functions have already checked, or on sizes the program made itself.

/// A non-negative `i64` (a dimension, a pad, a stride) as `usize`.
pub fn dim(v: i64) -> Option<usize> {
    usize::try_from(v).ok()
}

/// A dimension as `i64`, for an attribute or a file: `None` beyond `i64::MAX`.
pub fn dim_i64(d: usize) -> Option<i64> {
    i64::try_from(d).ok()
}

/// A shape as `i64`s (see [`dim_i64`]).
pub fn dims_i64(shape: &[usize]) -> Option<Vec<i64>> {
    shape.iter().map(|&d| dim_i64(d)).collect()
}

/// A possibly negative `axis` (Python style: -1 is the last) resolved against `rank`.
pub fn axis(axis: i64, rank: usize) -> Option<usize> {
    let r = i64::try_from(rank).ok()?;
    let a = if axis < 0 { axis.checked_add(r)? } else { axis };
    if (0..r).contains(&a) {
        usize::try_from(a).ok()
    } else {
        None
    }
}

/// A float (a rounded scale, a quantized value) as `i64`: `None` when it is not finite or
/// outside `i64`'s range, instead of the saturation of `as`.
pub fn f64_to_i64(v: f64) -> Option<i64> {
    // 2^63 is exactly representable; every finite float below it and at or above -2^63 fits.
    const LIMIT: f64 = 9_223_372_036_854_775_808.0;
    (v.is_finite() && (-LIMIT..LIMIT).contains(&v)).then_some(v as i64)
}

/// The product of `dims`, or `None` when it overflows `usize`.
pub fn product(dims: &[usize]) -> Option<usize> {
    dims.iter().try_fold(1usize, |n, &d| n.checked_mul(d))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dimensions_convert_only_in_range() {
        assert_eq!(dim(7), Some(7));
        assert_eq!(dim(-1), None);
        assert_eq!(dim(i64::MIN), None);
        assert_eq!(dim(i64::MAX), Some(i64::MAX as usize));
        assert_eq!(dim_i64(usize::MAX), None);
        assert_eq!(dims_i64(&[2, 3]), Some(vec![2, 3]));
        assert_eq!(dims_i64(&[2, usize::MAX]), None);
    }

    #[test]
    fn axes_resolve_against_the_rank() {
        assert_eq!(axis(-1, 3), Some(2));
        assert_eq!(axis(2, 3), Some(2));
        assert_eq!(axis(3, 3), None);
        assert_eq!(axis(-4, 3), None);
        assert_eq!(axis(i64::MIN, 3), None);
        assert_eq!(axis(i64::MAX, 3), None);
        assert_eq!(axis(0, 0), None);
    }

    #[test]
    fn floats_convert_without_saturation() {
        assert_eq!(f64_to_i64(2.0), Some(2));
        assert_eq!(f64_to_i64(-(2f64.powi(63))), Some(i64::MIN));
        assert_eq!(f64_to_i64(2f64.powi(63)), None);
        assert_eq!(f64_to_i64(1e30), None);
        assert_eq!(f64_to_i64(f64::NAN), None);
        assert_eq!(f64_to_i64(f64::INFINITY), None);
        assert_eq!(f64_to_i64(f64::NEG_INFINITY), None);
    }

    #[test]
    fn products_overflow_to_none() {
        assert_eq!(product(&[2, 3, 4]), Some(24));
        assert_eq!(product(&[]), Some(1));
        assert_eq!(product(&[usize::MAX, 2]), None);
    }
}
