//! The vocabulary of the BYOC flow that passes, the executor, the plugin host and reports
//! share: the function attributes partitioning reads and writes, the name of the host target,
//! and the one rule for which global functions the passes leave alone.
//!
//! The rule follows TVM v0.16's `AsOptimizableFunctionNode` (what its function passes visit):
//! a function is left alone when it has a `Compiler` attribute (it was handed to an external
//! codegen), or a non-zero `Extern` or `SkipOptimization` attribute. `Primitive` alone is not a
//! reason: TVM's BYOC passes visit primitive functions that carry no `Compiler`.

use crate::{AttrValue, Attrs, Function};

/// `Compiler="<target>"`: the function belongs to that target's codegen.
pub const COMPILER: &str = "Compiler";
/// `global_symbol="<name>"`: the symbol the function's compiled code is found under.
pub const GLOBAL_SYMBOL: &str = "global_symbol";
/// `Primitive=1`: the function is compiled as one unit and never inlined into its callers.
pub const PRIMITIVE: &str = "Primitive";
/// `Extern=1`: the function is provided from outside and the passes leave it alone.
pub const EXTERN: &str = "Extern";
/// `SkipOptimization=1`: the user asks the passes to leave the function alone.
pub const SKIP_OPTIMIZATION: &str = "SkipOptimization";
/// `Composite="<target>.<name>"`: the pattern-table entry a composite function literal matched.
pub const COMPOSITE: &str = "Composite";
/// `PartitionedFromPattern="<ops>"`: the ops of the pattern a composite was made from.
pub const PARTITIONED_FROM_PATTERN: &str = "PartitionedFromPattern";

/// The target of everything the host runs: the `compiler` of host annotations and the name
/// per-target reports use for host time.
pub const HOST_TARGET: &str = "default";

/// The target a global function is a partition of: its `Compiler` attribute. `None` for a
/// function of the host (no `Compiler`, or `Compiler=None`). With [`crate::Module::partitions`],
/// the one reader of the partition marking.
pub fn target_of(f: &Function) -> Option<&str> {
    f.attrs.get_str(COMPILER)
}

/// The symbol a partition's compiled code is found under: its `global_symbol` attribute.
pub fn symbol_of(f: &Function) -> Option<&str> {
    f.attrs.get_str(GLOBAL_SYMBOL)
}

/// True for a global function every pass leaves alone (see the module docs): a `Compiler`
/// attribute other than `None` (of any value, so a malformed marking is left alone rather than
/// rewritten), or a non-zero `Extern` or `SkipOptimization` attribute.
pub fn skipped_by_passes(f: &Function) -> bool {
    !matches!(f.attrs.get(COMPILER), None | Some(AttrValue::None))
        || nonzero(&f.attrs, EXTERN)
        || nonzero(&f.attrs, SKIP_OPTIMIZATION)
}

/// True when `attrs[name]` is set: present and neither `None`, `0` nor `False`. Any other
/// value counts as set, so a function whose marking is not an integer is left alone rather
/// than rewritten.
pub fn nonzero(attrs: &Attrs, name: &str) -> bool {
    match attrs.get(name) {
        None | Some(AttrValue::None) => false,
        Some(AttrValue::Int(i)) => *i != 0,
        Some(AttrValue::Bool(b)) => *b,
        Some(_) => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::text::parse_module;

    fn external(attrs: &str) -> bool {
        let text = format!(
            "def @f(%x: Tensor[(2), float32]{attrs}) {{ nn.relu(%x) }}\n\
             def @main(%x: Tensor[(2), float32]) {{ @f(%x) }}"
        );
        let module = parse_module(&text).expect("the test module parses");
        skipped_by_passes(module.get("f").expect("@f exists"))
    }

    #[test]
    fn the_markings_that_leave_a_function_alone() {
        assert!(!external(""));
        assert!(external(", Compiler=\"dnnl\""));
        assert!(!external(", Compiler=None"));
        assert!(external(", Extern=1"));
        assert!(external(", Extern=True"));
        assert!(!external(", Extern=0"));
        assert!(!external(", Extern=False"));
        assert!(external(", SkipOptimization=1"));
        assert!(external(", SkipOptimization=True"));
        assert!(!external(", SkipOptimization=0"));
        assert!(!external(", Primitive=1"));
    }
}
