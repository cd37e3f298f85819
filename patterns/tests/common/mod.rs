//! Shared helpers of the pattern tests: test definitions of the ops the tests use (registered
//! only when the op library lacks them), and builders for modules and composites.

#![allow(dead_code, reason = "each test file uses a different subset")]

use byoc_core::ir::{Attrs, ExprId, Function, FunctionBuilder, Module, Type};
use byoc_core::op::{
    Arity, AttrDef, AttrKind, OpDef, OpImpl, OpPattern, OpRegistry, TypeCtx, TypeError,
};
use byoc_core::{DType, TensorType};
use byoc_patterns::{merge_composite, PatternTable};

/// Result type is argument 0's type.
struct SameAsFirst;

impl OpImpl for SameAsFirst {
    fn infer_type(&self, ctx: &TypeCtx<'_>) -> Result<Type, TypeError> {
        Ok(Type::Tensor(ctx.tensor(0)?.clone()))
    }
}

/// NCHW x OIHW convolution, strides 1.
struct Conv2d;

impl OpImpl for Conv2d {
    fn infer_type(&self, ctx: &TypeCtx<'_>) -> Result<Type, TypeError> {
        let x = ctx.tensor(0)?;
        let w = ctx.tensor(1)?;
        let pad = ctx.ints("padding")?;
        let (pt, pl, pb, pr) = match pad.as_slice() {
            [p] => (*p, *p, *p, *p),
            [h, w] => (*h, *w, *h, *w),
            [t, l, b, r] => (*t, *l, *b, *r),
            _ => return Err(ctx.err("bad padding")),
        };
        let h = x.shape[2] as i64 + pt + pb - w.shape[2] as i64 + 1;
        let wd = x.shape[3] as i64 + pl + pr - w.shape[3] as i64 + 1;
        Ok(Type::tensor(
            [x.shape[0], w.shape[0], h as usize, wd as usize],
            x.dtype,
        ))
    }
}

/// `(x, mean, var)`-shaped result of batch norm.
struct BatchNorm;

impl OpImpl for BatchNorm {
    fn infer_type(&self, ctx: &TypeCtx<'_>) -> Result<Type, TypeError> {
        let x = ctx.tensor(0)?.clone();
        let g = ctx.tensor(1)?.clone();
        Ok(Type::Tuple(vec![x.into(), g.clone().into(), g.into()]))
    }
}

fn define(name: &str, arity: Arity, imp: impl OpImpl + 'static, attrs: Vec<AttrDef>) {
    if OpRegistry::lookup(name).is_none() {
        // Another test thread may register it first; either way it exists afterwards.
        let _ = OpRegistry::register(
            OpDef::new(name, "test op", arity, OpPattern::Opaque, imp).with_attrs(attrs),
        );
    }
}

/// Makes sure every op the tests use exists.
pub fn ops() {
    for name in ["subtract", "multiply", "divide"] {
        define(name, Arity::Exact(2), SameAsFirst, vec![]);
    }
    for name in ["abs", "exp", "sigmoid", "tanh", "nn.relu"] {
        define(name, Arity::Exact(1), SameAsFirst, vec![]);
    }
    define(
        "nn.bias_add",
        Arity::Exact(2),
        SameAsFirst,
        vec![AttrDef::new("axis", AttrKind::Int, 1)],
    );
    define(
        "nn.leaky_relu",
        Arity::Exact(1),
        SameAsFirst,
        vec![AttrDef::new("alpha", AttrKind::Float, 0.01)],
    );
    define(
        "clip",
        Arity::Exact(1),
        SameAsFirst,
        vec![
            AttrDef::new("a_min", AttrKind::Float, 0.0),
            AttrDef::new("a_max", AttrKind::Float, 0.0),
        ],
    );
    define(
        "nn.conv2d",
        Arity::Exact(2),
        Conv2d,
        vec![
            AttrDef::new("strides", AttrKind::Ints, vec![1, 1]),
            AttrDef::new("padding", AttrKind::Ints, vec![0, 0, 0, 0]),
            AttrDef::new("dilation", AttrKind::Ints, vec![1, 1]),
            AttrDef::new("groups", AttrKind::Int, 1),
            AttrDef::optional("channels", AttrKind::OptInt),
            AttrDef::optional("kernel_size", AttrKind::OptInts),
            AttrDef::new("data_layout", AttrKind::Str, "NCHW"),
            AttrDef::new("kernel_layout", AttrKind::Str, "OIHW"),
        ],
    );
    define(
        "nn.batch_norm",
        Arity::Exact(5),
        BatchNorm,
        vec![
            AttrDef::new("axis", AttrKind::Int, 1),
            AttrDef::new("epsilon", AttrKind::Float, 1e-5),
        ],
    );
}

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
    byoc_core::passes::infer_types(&mut m).expect("test function type-checks");
    m.remove("main").expect("main exists")
}

/// Runs MergeComposite with `table` on a module holding only `f` as `main`.
pub fn merge(f: Function, table: &PatternTable) -> Function {
    let mut m = Module::from_main(f);
    merge_composite(&mut m, table).expect("merge composite succeeds");
    let out = m.remove("main").expect("main exists");
    byoc_core::ir::verify_function(&out).expect("result verifies");
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
    if let Err(m) = byoc_core::ir::structural_eq_function(got, want) {
        panic!("functions differ: {m}\n got: {got:#?}");
    }
}

/// A table from `(name, pattern text)` pairs.
pub fn table(entries: &[(&str, &str)]) -> PatternTable {
    ops();
    let mut t = PatternTable::new();
    for (name, pat) in entries {
        t.add(*name, pat.parse().expect("test pattern parses"))
            .expect("test entry is valid");
    }
    t
}
