//! The memory budget: the most bytes one tensor, or one run's buffers together, may take.
//!
//! Every tensor type that enters a module is checked where it is created: parameter types by
//! type inference (text parser) and the ONNX importer, op results by [`crate::op::OpDef::infer_type`]
//! (so type inference, the importer, constant folding and every pass that builds calls), and
//! the executor's buffers by its planner. An oversized or overflowing shape is therefore refused
//! with the tensor, its shape, its size and the budget, before anything is allocated; the
//! allocations themselves ([`crate::tensor::Tensor::try_zeros`]) are fallible as well.
//!
//! The buffers one run of the executor holds at once (its scratch arena and its outputs) are
//! counted together against the same budget when the run is planned ([`RunTally`]); memory the
//! system refuses at run time is reported as [`SizeError::Unavailable`], never an abort.
//!
//! The budget is an option of the calls that load, compile and run a model (the pipeline's
//! `LoadOptions`, `BuildOptions` and the executor's `ExecOptions`); each runs its work inside
//! [`with_budget`], which sets the budget of the calling thread for the duration of one call,
//! as TVM's `PassContext` scopes the configuration of the passes it runs. Outside any such call,
//! or where a call gives none, it is the memory available to the process ([`available_memory`]:
//! the machine's, its container's and its address-space limit's), or unlimited where none of
//! these can be read.

mod available;
mod file;

use std::cell::Cell;
use std::fmt;

use thiserror::Error;

use crate::tensor::AlignedBuf;
use crate::{TensorType, Type};

pub use available::{address_space, available_memory};
pub use file::{read_file, read_file_range, read_file_to_string};

thread_local! {
    /// The budget of the innermost [`with_budget`] call on this thread; 0: none (use the
    /// available memory).
    static BUDGET: Cell<u64> = const { Cell::new(0) };
}

/// Runs `f` with `bytes` (at least 1) as the budget of this thread's checks, then restores the
/// budget it had, also when `f` unwinds. `None` keeps the current budget, so a library call
/// given no budget inherits its caller's.
pub fn with_budget<R>(bytes: Option<u64>, f: impl FnOnce() -> R) -> R {
    /// Puts the previous budget back when dropped.
    struct Restore(u64);
    impl Drop for Restore {
        fn drop(&mut self) {
            BUDGET.with(|b| b.set(self.0));
        }
    }
    let Some(bytes) = bytes else {
        return f();
    };
    let _restore = Restore(BUDGET.with(|b| b.replace(bytes.max(1))));
    f()
}

/// The budget in bytes: that of the innermost [`with_budget`] call, else the available memory;
/// never above the address-space limit (`ulimit -v`), which no allocation can pass.
pub fn budget() -> u64 {
    match BUDGET.with(Cell::get) {
        0 => available_memory().unwrap_or(u64::MAX),
        b => b.min(address_space().unwrap_or(u64::MAX)),
    }
}

/// Parses a byte count: digits with an optional `K`, `M`, `G` or `T` suffix (powers of 1024,
/// an optional trailing `B` or `iB`), e.g. `512M`, `8GiB`, `1000000`.
pub fn parse_bytes(text: &str) -> Result<u64, String> {
    let t = text.trim();
    let t = t
        .strip_suffix("iB")
        .or_else(|| t.strip_suffix('B'))
        .unwrap_or(t);
    let not_a_count = || format!("'{text}' is not a byte count (e.g. 512M, 8G, 1000000)");
    let (digits, shift) = match t.char_indices().last() {
        Some((i, _)) if t[..i].parse::<u64>().is_err() && t.parse::<u64>().is_err() => {
            return Err(not_a_count())
        }
        Some((i, c)) if c.is_ascii_alphabetic() => {
            let shift = match c.to_ascii_uppercase() {
                'K' => 10,
                'M' => 20,
                'G' => 30,
                'T' => 40,
                _ => return Err(format!("unknown unit '{c}' in '{text}' (use K, M, G or T)")),
            };
            (&t[..i], shift)
        }
        _ => (t, 0),
    };
    let n: u64 = digits.parse().map_err(|_| not_a_count())?;
    match n.checked_mul(1u64 << shift) {
        Some(0) => Err(format!("'{text}': the budget must be positive")),
        Some(bytes) => Ok(bytes),
        None => Err(format!("'{text}' is too large")),
    }
}

/// A tensor that cannot be represented or that does not fit the budget.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum SizeError {
    /// The element count or byte size overflows the address space.
    #[error("{ty} is too large: its size overflows 64 bits")]
    Overflow {
        /// The tensor type.
        ty: TensorType,
    },
    /// A dimension does not fit a signed 64-bit integer (what files and attributes hold).
    #[error("{ty} has a dimension over 2^63-1")]
    HugeDimension {
        /// The tensor type.
        ty: TensorType,
    },
    /// The byte size is over the budget.
    #[error("{ty} needs {}, over the memory budget of {} (see --max-memory)", Bytes(*.bytes), Bytes(*.budget))]
    OverBudget {
        /// The tensor type.
        ty: TensorType,
        /// Its size in bytes.
        bytes: u64,
        /// The budget in bytes.
        budget: u64,
    },
    /// A run's buffers, counted together up to this tensor's, are over the budget.
    #[error("the run buffer of {ty} ({}) brings the memory of one run to {}, over the memory budget of {} (see --max-memory)", Bytes(*.bytes), Bytes(*.total), Bytes(*.budget))]
    RunOverBudget {
        /// The tensor whose buffer crosses the budget.
        ty: TensorType,
        /// Its buffer's size in bytes.
        bytes: u64,
        /// The run's buffers up to and including this one, in bytes.
        total: u64,
        /// The budget in bytes.
        budget: u64,
    },
    /// The system refused the memory of a tensor within the budget.
    #[error("{ty} needs {}, which the system cannot allocate now (memory budget {}, see --max-memory)", Bytes(*.bytes), Bytes(*.budget))]
    Unavailable {
        /// The tensor type.
        ty: TensorType,
        /// Its size in bytes.
        bytes: u64,
        /// The budget in bytes.
        budget: u64,
    },
}

/// The error for `bytes` of memory for `ty` that could not be allocated.
pub fn unavailable(ty: &TensorType, bytes: usize) -> SizeError {
    SizeError::Unavailable {
        ty: ty.clone(),
        bytes: bytes as u64,
        budget: budget(),
    }
}

/// A zero-filled buffer of `bytes` for a tensor of `ty`, or [`SizeError::Unavailable`] when the
/// system refuses the memory: for buffers whose size comes from a model or its inputs.
pub fn try_buffer(ty: &TensorType, bytes: usize) -> Result<AlignedBuf, SizeError> {
    AlignedBuf::try_zeroed(bytes).ok_or_else(|| unavailable(ty, bytes))
}

/// `n` copies of `value`, or `None` when the memory cannot be allocated: for scratch whose
/// length comes from a model or its inputs.
pub fn try_vec_of<T: Clone>(n: usize, value: T) -> Option<Vec<T>> {
    let mut v = Vec::new();
    v.try_reserve_exact(n).ok()?;
    v.resize(n, value);
    Some(v)
}

/// The running total of buffers that live at the same time (the scratch arena and the outputs
/// of one run), checked against the budget as each is added.
#[derive(Debug)]
pub struct RunTally {
    total: u64,
    budget: u64,
}

impl Default for RunTally {
    fn default() -> Self {
        RunTally::new()
    }
}

impl RunTally {
    /// An empty tally under the current budget ([`budget`]).
    pub fn new() -> Self {
        RunTally {
            total: 0,
            budget: budget(),
        }
    }

    /// Adds the `bytes` buffer of a tensor of `ty`; an error when the total goes over the
    /// budget.
    pub fn add(&mut self, ty: &TensorType, bytes: usize) -> Result<(), SizeError> {
        let bytes = bytes as u64;
        let total = self.total.saturating_add(bytes);
        if total > self.budget {
            return Err(SizeError::RunOverBudget {
                ty: ty.clone(),
                bytes,
                total,
                budget: self.budget,
            });
        }
        self.total = total;
        Ok(())
    }

    /// Adds `n` buffers of tensors of `ty`, counted as one `[n, ..ty.shape]` tensor (what a
    /// batch of samples or of kept values holds).
    pub fn add_batch(&mut self, ty: &TensorType, n: usize) -> Result<(), SizeError> {
        let mut shape = Vec::with_capacity(ty.shape.len() + 1);
        shape.push(n);
        shape.extend(&ty.shape);
        let batch = TensorType::new(shape, ty.dtype);
        let bytes = tensor_bytes(&batch)?;
        self.add(&batch, bytes)
    }

    /// The budget not yet taken by what was added.
    pub fn remaining(&self) -> u64 {
        self.budget - self.total
    }
}

/// A byte count printed exactly with a readable approximation: `4000000000 bytes (3.7 GiB)`.
struct Bytes(u64);

impl fmt::Display for Bytes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        const UNITS: [&str; 5] = ["KiB", "MiB", "GiB", "TiB", "PiB"];
        write!(f, "{} bytes", self.0)?;
        let mut v = self.0 as f64;
        let mut unit = None;
        for u in UNITS {
            if v < 1024.0 {
                break;
            }
            v /= 1024.0;
            unit = Some(u);
        }
        match unit {
            Some(u) => write!(f, " ({v:.1} {u})"),
            None => Ok(()),
        }
    }
}

/// The byte size of `ty`, checked for overflow (no budget). Every dimension must also fit an
/// `i64`, so shapes that pass convert to attributes and files without loss.
pub fn tensor_bytes(ty: &TensorType) -> Result<usize, SizeError> {
    if crate::dims::dims_i64(&ty.shape).is_none() {
        return Err(SizeError::HugeDimension { ty: ty.clone() });
    }
    crate::dims::product(&ty.shape)
        .and_then(|n| n.checked_mul(ty.dtype.size_bytes()))
        .ok_or_else(|| SizeError::Overflow { ty: ty.clone() })
}

/// The byte size of `ty`, which must be within the budget.
pub fn check_tensor(ty: &TensorType) -> Result<usize, SizeError> {
    let bytes = tensor_bytes(ty)?;
    let budget = budget();
    if bytes as u64 > budget {
        return Err(SizeError::OverBudget {
            ty: ty.clone(),
            bytes: bytes as u64,
            budget,
        });
    }
    Ok(bytes)
}

/// Checks every tensor in `ty` (tuple fields included; function types are not values).
pub fn check_type(ty: &Type) -> Result<(), SizeError> {
    match ty {
        Type::Tensor(t) => check_tensor(t).map(|_| ()),
        Type::Tuple(fields) => fields.iter().try_for_each(check_type),
        Type::Func(_) => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::DType;

    #[test]
    fn byte_counts_parse_with_units() {
        assert_eq!(parse_bytes("1000"), Ok(1000));
        assert_eq!(parse_bytes("512M"), Ok(512 << 20));
        assert_eq!(parse_bytes("8GiB"), Ok(8 << 30));
        assert_eq!(parse_bytes("2k"), Ok(2048));
        assert!(parse_bytes("0").is_err());
        assert!(parse_bytes("12X").unwrap_err().contains("unknown unit 'X'"));
        assert!(parse_bytes("lots").is_err());
        assert!(parse_bytes("99999999999T")
            .unwrap_err()
            .contains("too large"));
    }

    #[test]
    fn overflowing_shapes_are_errors_not_wraps() {
        let ty = TensorType::new(vec![usize::MAX / 2, 2], DType::Float32);
        assert_eq!(tensor_bytes(&ty), Err(SizeError::Overflow { ty }));
        let ok = TensorType::new(vec![3, 5], DType::Float64);
        assert_eq!(tensor_bytes(&ok), Ok(120));
        // No elements, but a dimension no attribute or file can hold.
        let empty = TensorType::new(vec![0, usize::MAX], DType::Float32);
        assert_eq!(
            tensor_bytes(&empty),
            Err(SizeError::HugeDimension { ty: empty })
        );
    }

    #[test]
    fn a_run_tally_refuses_the_buffer_that_crosses_the_budget() {
        let ty = TensorType::new(vec![100], DType::Float32);
        let mut tally = RunTally {
            total: 0,
            budget: 1000,
        };
        assert_eq!(tally.add(&ty, 400), Ok(()));
        assert_eq!(tally.add(&ty, 400), Ok(()));
        let err = tally.add(&ty, 400).unwrap_err();
        assert_eq!(
            err.to_string(),
            "the run buffer of Tensor[(100), float32] (400 bytes) brings the memory of one run \
             to 1200 bytes (1.2 KiB), over the memory budget of 1000 bytes (see --max-memory)"
        );
        // A refused buffer is not counted.
        assert_eq!(tally.add(&ty, 200), Ok(()));
    }

    #[test]
    fn a_budget_holds_for_one_call_and_nests() {
        let outside = budget();
        let ty = TensorType::new(vec![1000], DType::Float32);
        with_budget(Some(1000), || {
            assert_eq!(budget(), 1000);
            assert!(matches!(
                check_tensor(&ty),
                Err(SizeError::OverBudget { budget: 1000, .. })
            ));
            with_budget(None, || assert_eq!(budget(), 1000));
            with_budget(Some(8000), || assert_eq!(check_tensor(&ty), Ok(4000)));
            assert_eq!(budget(), 1000);
            // Another thread has its own budget.
            std::thread::spawn(move || assert_eq!(budget(), outside))
                .join()
                .expect("thread runs");
        });
        assert_eq!(budget(), outside);
        let unwound = std::panic::catch_unwind(|| with_budget(Some(5), || panic!("unwinds")));
        assert!(unwound.is_err());
        assert_eq!(budget(), outside);
    }

    #[test]
    fn memory_the_system_refuses_is_an_error() {
        // More than any address space holds: the allocation fails without touching memory.
        let ty = TensorType::new(vec![1 << 61], DType::Float32);
        let err = try_buffer(&ty, 1 << 62).unwrap_err();
        assert!(
            err.to_string().starts_with(
                "Tensor[(2305843009213693952), float32] needs 4611686018427387904 bytes"
            ),
            "{err}"
        );
        assert!(matches!(err, SizeError::Unavailable { .. }));
    }

    #[test]
    fn sizes_print_exactly_and_readably() {
        assert_eq!(Bytes(512).to_string(), "512 bytes");
        assert_eq!(
            Bytes(4_000_000_000).to_string(),
            "4000000000 bytes (3.7 GiB)"
        );
    }
}
