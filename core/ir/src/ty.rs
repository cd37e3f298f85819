//! Types of IR expressions: tensors with static shapes, tuples, and function types.
//!
//! `Display` prints the Relay text form: `Tensor[(1, 3, 8, 8), float32]`, `(T1, T2)`,
//! `fn (T1, T2) -> T3`.

use std::fmt;

use super::DType;

/// A tensor type: a static shape and an element dtype. A scalar has an empty shape.
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub struct TensorType {
    /// Dimensions, outermost first.
    pub shape: Vec<usize>,
    /// Element type.
    pub dtype: DType,
}

impl TensorType {
    /// A tensor type of this shape and dtype.
    pub fn new(shape: impl Into<Vec<usize>>, dtype: DType) -> Self {
        TensorType {
            shape: shape.into(),
            dtype,
        }
    }

    /// A scalar (rank-0) tensor type.
    pub fn scalar(dtype: DType) -> Self {
        TensorType {
            shape: Vec::new(),
            dtype,
        }
    }

    /// Number of dimensions.
    pub fn rank(&self) -> usize {
        self.shape.len()
    }

    /// Number of elements (1 for a scalar).
    pub fn num_elements(&self) -> usize {
        self.shape.iter().product()
    }

    /// Number of bytes the elements occupy.
    pub fn size_bytes(&self) -> usize {
        self.num_elements() * self.dtype.size_bytes()
    }
}

/// The type of a function: parameter types and result type.
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub struct FuncType {
    /// Parameter types in order.
    pub params: Vec<Type>,
    /// Result type.
    pub ret: Box<Type>,
}

/// The type of an expression.
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub enum Type {
    /// A tensor.
    Tensor(TensorType),
    /// A tuple of values.
    Tuple(Vec<Type>),
    /// A function (the type of a local function literal).
    Func(FuncType),
}

impl Type {
    /// A tensor type of this shape and dtype.
    pub fn tensor(shape: impl Into<Vec<usize>>, dtype: DType) -> Self {
        Type::Tensor(TensorType::new(shape, dtype))
    }

    /// The tensor type, if this is a tensor.
    pub fn as_tensor(&self) -> Option<&TensorType> {
        match self {
            Type::Tensor(t) => Some(t),
            _ => None,
        }
    }

    /// The field types, if this is a tuple.
    pub fn as_tuple(&self) -> Option<&[Type]> {
        match self {
            Type::Tuple(fields) => Some(fields),
            _ => None,
        }
    }

    /// The tensor types of this type's leaves, tuples flattened depth-first.
    pub fn flatten_tensors(&self) -> Vec<&TensorType> {
        let mut out = Vec::new();
        self.collect_tensors(&mut out);
        out
    }

    fn collect_tensors<'a>(&'a self, out: &mut Vec<&'a TensorType>) {
        match self {
            Type::Tensor(t) => out.push(t),
            Type::Tuple(fields) => fields.iter().for_each(|f| f.collect_tensors(out)),
            Type::Func(_) => {}
        }
    }
}

impl From<TensorType> for Type {
    fn from(t: TensorType) -> Self {
        Type::Tensor(t)
    }
}

impl fmt::Display for TensorType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Tensor[(")?;
        for (i, d) in self.shape.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            write!(f, "{d}")?;
        }
        // Relay prints a one-element shape as `(16)`, without a trailing comma.
        write!(f, "), {}]", self.dtype)
    }
}

impl fmt::Display for Type {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Type::Tensor(t) => t.fmt(f),
            Type::Tuple(fields) => {
                f.write_str("(")?;
                for (i, t) in fields.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    t.fmt(f)?;
                }
                if fields.len() == 1 {
                    f.write_str(",")?;
                }
                f.write_str(")")
            }
            Type::Func(ft) => {
                f.write_str("fn (")?;
                for (i, t) in ft.params.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    t.fmt(f)?;
                }
                write!(f, ") -> {}", ft.ret)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_matches_relay() {
        assert_eq!(
            Type::tensor([1, 3, 8, 8], DType::Float32).to_string(),
            "Tensor[(1, 3, 8, 8), float32]"
        );
        assert_eq!(
            Type::tensor([16], DType::Int8).to_string(),
            "Tensor[(16), int8]"
        );
        assert_eq!(
            Type::tensor(Vec::new(), DType::Float32).to_string(),
            "Tensor[(), float32]"
        );
        let tup = Type::Tuple(vec![
            Type::tensor([2], DType::Float32),
            Type::tensor([3], DType::Int32),
        ]);
        assert_eq!(
            tup.to_string(),
            "(Tensor[(2), float32], Tensor[(3), int32])"
        );
        assert_eq!(tup.flatten_tensors().len(), 2);
    }
}
