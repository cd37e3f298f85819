//! Shared helpers of the pattern tests: builders for modules, composites and tables over the
//! built-in ops.

#![allow(dead_code, reason = "each test file uses a different subset")]

use byoc_ir::{Attrs, ExprId, Function, FunctionBuilder, Module, Type};
use byoc_ir::{DType, TensorType};
use byoc_passes::{Pass, PassContext};
use byoc_patterns::{MergeComposite, PatternTable};

/// A float32 tensor type.
pub fn t(shape: &[usize]) -> Type {
    Type::Tensor(TensorType::new(shape.to_vec(), DType::Float32))
}

/// A call that must build.
pub fn call(b: &mut FunctionBuilder, op: &str, args: &[ExprId]) -> ExprId {
    b.call(op, args, Attrs::new()).expect("test call builds")
}

/// A call with attributes that must build.
pub fn call_attrs(b: &mut FunctionBuilder, op: &str, args: &[ExprId], attrs: Attrs) -> ExprId {
    b.call(op, args, attrs).expect("test call builds")
}

/// Finishes and types a function.
pub fn finish(b: FunctionBuilder, params: Vec<ExprId>, body: ExprId) -> Function {
    let f = b
        .finish(params, body, Attrs::new())
        .expect("test function verifies");
    let mut m = Module::from_main(f);
    byoc_ir::infer_types(&mut m).expect("test function type-checks");
    m.remove("main").expect("main exists")
}

/// Runs MergeComposite with `table` on a module holding only `f` as `main`.
pub fn merge(f: Function, table: &PatternTable) -> Function {
    let mut m = Module::from_main(f);
    MergeComposite::new(table)
        .run(&mut m, &mut PassContext::new())
        .expect("merge composite succeeds");
    let out = m.remove("main").expect("main exists");
    byoc_ir::verify_function(&out).expect("result verifies");
    out
}

/// A composite function literal: params of `tys`, body from `body`, attrs `Composite` and
/// `PartitionedFromPattern`.
pub fn composite(
    b: &mut FunctionBuilder,
    name: &str,
    from: &str,
    tys: &[Type],
    body: impl FnOnce(&mut FunctionBuilder, &[ExprId]) -> ExprId,
) -> ExprId {
    let params: Vec<ExprId> = tys
        .iter()
        .enumerate()
        .map(|(i, ty)| b.param(format!("in_{i}"), ty.clone()))
        .collect();
    let out = body(b, &params);
    let mut attrs = Attrs::new();
    if !name.is_empty() {
        attrs.set("Composite", name);
    }
    attrs.set("PartitionedFromPattern", from);
    b.function(&params, out, attrs).expect("composite builds")
}

/// Asserts structural equality with a readable failure.
pub fn assert_same(got: &Function, want: &Function) {
    if let Err(m) = byoc_ir::structural_eq_function(got, want) {
        panic!("functions differ: {m}\n got: {got:#?}");
    }
}

/// A table from `(name, pattern text)` pairs.
pub fn table(entries: &[(&str, &str)]) -> PatternTable {
    let mut t = PatternTable::new();
    for (name, pat) in entries {
        t.add(*name, pat.parse().expect("test pattern parses"))
            .expect("test entry is valid");
    }
    t
}
