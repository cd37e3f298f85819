//! HostFuse (`host-fuse`): TVM's FuseOps over what `@main` still runs on the host.
//!
//! First, batch norms over constant statistics become a multiply and an add by per-channel
//! constants, bit-exact with the batch-norm kernel ([`super::fold_batch_norm`]), so that they
//! fuse like any elementwise op.
//!
//! Then the fields of each `split` (read only through `TupleGetItem`s) become
//! `strided_slice`s of its data ([`super::split_slices`]), which the loops read through.
//!
//! Elementwise and broadcast op calls with arguments (op pattern [`OpPattern::ElemWise`] or
//! [`OpPattern::Broadcast`]) form groups: walking `@main` from its result back to its inputs,
//! an op joins the group of its users when every user is an op of one same group and the value
//! is not a result of `@main`; otherwise it starts a group of its own. A group is therefore a
//! connected DAG with one output (its last op), diamonds included (`x * sigmoid(x)`), and every
//! intermediate value of a group is used only inside it, so a fused loop never writes it to
//! memory.
//!
//! The injective ops of [`LOOP_INJECTIVE`] on `float32` (`transpose`, `strided_slice`,
//! `concatenate`, constant `nn.pad`, and the reshapes) join groups under the same rule, with elementwise producers and
//! consumers: the code generator reads through them with index maps, so they move no data of
//! their own. Reshapes alias their input in the executor, so a reshape at a group's edge (of
//! a group input, or as the group's output) is left out of it, and a group of injective ops
//! alone is no group (the reference kernels move each element once already). A
//! concatenation's tuple joins its group when the concatenation alone uses it.
//!
//! An op whose output takes elementwise consumers ([`OpPattern::OutEWiseFusable`]: conv2d,
//! dense, windowed pooling without a producer to fold; softmax, the NCHW global poolings and
//! the NCHW windowed poolings over an elementwise producer are reductions) joins the group of its users under the same rule when its result
//! has the group's output shape; it becomes the group's *anchor* and closes the group, so its
//! own arguments stay outside (TVM fuses nothing into a conv's inputs). The code generator
//! runs the anchor's host kernel and applies the rest of the group to its output in place, as
//! its epilogue. A group has at most one anchor and never consists of an anchor alone. An
//! anchored group holds no injective op, and the elementwise ops an anchor would take as its
//! epilogue do not join a group with one (as in TVM, where an anchored group fuses into
//! nothing injective): SqueezeNet's convolutions keep bias and relu, and the concatenation
//! of their results stays on its reference kernel.
//!
//! A reduction of [`LOOP_REDUCTIONS`] (`sum`, `mean`, `max`, `min`, `prod` on `float32`, the
//! global poolings over NCHW data: TVM's `kCommReduce`; and `nn.softmax`, `nn.log_softmax`) joins the group of its users under
//! the same rule when its result has the group's output shape and the group holds no
//! injective op (its elementwise consumers become its epilogue), or starts a group. The
//! members joining past it are its *producers*, computed inside the reduction's loop and
//! never written to memory: elementwise ops and the injective ops that read in order
//! (transposes, reshapes; no concatenation or pad, which cut the loop into boxes), each used
//! only by the reduction and its other producers, and none bound to an anchor's or another
//! reduction's epilogue (a conv keeps its bias and relu; the pooling after it folds the conv's
//! output). A group holds at most one reduction or anchor, never both. A reduction without
//! producers or consumers is no group: its reference kernel runs.
//!
//! A windowed pooling of [`WINDOW_POOLINGS`] on `float32` NCHW data is such a reduction (over
//! its window) when its data is an elementwise op that joins its group as a producer: used by
//! the pooling alone, not a result of `@main`, and not bound to an anchor's or reduction's
//! epilogue. Otherwise it stays an anchor on its optimized kernel ([`anchored_windows`]).
//!
//! Each group is outlined into a global function `@host_fused_N` marked
//! `Compiler="llvm"` ([`HOST_CODEGEN_TARGET`]), `Primitive=1` and `global_symbol`, called from
//! `@main` with the group's inputs (constants stay in `@main` and are passed as arguments). The
//! host code generator (crate `byoc-host-llvm`) compiles each into one loop; a group it cannot
//! compile goes back to the host by dropping its `Compiler` attribute, after which the executor
//! inlines it and runs the reference kernels ([`unfuse`]).
//!
//! Ops inside local function literals (composites) are left alone, and so are external
//! functions and global functions other than `@main`.

use std::collections::{BTreeMap, HashSet};

use byoc_ir::op::OpPattern;
use byoc_ir::partition::{target_of, COMPILER, GLOBAL_SYMBOL, PRIMITIVE};
use byoc_ir::rewrite::Rebuild;
use byoc_ir::{Attrs, DType, Expr, ExprId, Function, FunctionBuilder, IrError, Module, Type};

use super::fold_batch_norm::fold_batch_norms;
use super::split_slices::split_fields_as_slices;
use super::{Pass, PassContext, PassError};
use byoc_ir::infer_types;

/// The `Compiler` attribute of fused host functions: the target the host code generator
/// compiles.
pub const HOST_CODEGEN_TARGET: &str = "llvm";

/// The name prefix of fused host functions.
pub const FUSED_PREFIX: &str = "host_fused_";

/// The HostFuse pass (see the module docs).
#[derive(Clone, Copy, Debug, Default)]
pub struct HostFuse;

impl Pass for HostFuse {
    fn name(&self) -> &'static str {
        "host-fuse"
    }

    fn run(&self, module: &mut Module, _cx: &mut PassContext) -> Result<(), PassError> {
        infer_types(module)?;
        let main = split_fields_as_slices(&fold_batch_norms(module.main()?)?)?;
        module.insert("main", main);
        infer_types(module)?;
        let main = module.main()?.clone();
        let groups = fusion_groups(&main);
        if groups.is_empty() {
            return Ok(());
        }
        let mut next = 0usize;
        let mut fresh_name = || loop {
            let name = format!("{FUSED_PREFIX}{next}");
            next += 1;
            if module.get(&name).is_none() {
                return name;
            }
        };
        let names: Vec<String> = groups.iter().map(|_| fresh_name()).collect();
        let (new_main, fused) = outline(&main, &groups, &names)?;
        for (name, f) in fused {
            module.insert(name, f);
        }
        module.insert("main", new_main);
        infer_types(module)?;
        Ok(())
    }
}

/// The injective ops HostFuse puts into loops: reshapes (views of their input, so never at a
/// group's edge: see [`prune_views`]), `transpose`, `strided_slice`, `concatenate` and
/// constant `nn.pad`.
pub const LOOP_INJECTIVE: &[&str] = &[
    "reshape",
    "squeeze",
    "expand_dims",
    "nn.batch_flatten",
    "transpose",
    "strided_slice",
    "concatenate",
    "nn.pad",
];

/// True for the elementwise or broadcast op calls HostFuse groups: with at least one argument
/// (`zeros`, `ones` make tensors from nothing) and one tensor result.
fn elementwise(f: &Function, id: ExprId) -> bool {
    let Some((op, call)) = f.expr(id).as_op_call() else {
        return false;
    };
    matches!(op.pattern, OpPattern::ElemWise | OpPattern::Broadcast)
        && !op.is_view
        && !call.args.is_empty()
        && matches!(f.ty(id), Some(Type::Tensor(_)))
}

/// True for the [`LOOP_INJECTIVE`] op calls on `float32` (the loops on custom datatypes stay
/// elementwise), a pad only in constant mode, a concatenation only of a tuple it alone uses.
fn injective(f: &Function, id: ExprId, users: &[Vec<ExprId>]) -> bool {
    let Some((op, call)) = f.expr(id).as_op_call() else {
        return false;
    };
    let name = op.name();
    let float = |x: ExprId| matches!(f.ty(x), Some(Type::Tensor(t)) if t.dtype == DType::Float32);
    LOOP_INJECTIVE.contains(&name)
        && float(id)
        && call.args.first().is_some_and(|&a| match f.expr(a) {
            Expr::Tuple(parts) => {
                name == "concatenate" && users[a.index()] == [id] && parts.iter().all(|&p| float(p))
            }
            _ => name != "concatenate" && float(a),
        })
        && (name != "nn.pad" || call.attrs.get_str("pad_mode").unwrap_or("constant") == "constant")
}

/// The reductions HostFuse compiles as loops of their own: the `float32` reductions over
/// axes, the global poolings over NCHW data (reductions over H and W), and softmax (a
/// maximum and a sum per line).
pub const LOOP_REDUCTIONS: &[&str] = &[
    "sum",
    "mean",
    "max",
    "min",
    "prod",
    "nn.global_avg_pool2d",
    "nn.global_max_pool2d",
    "nn.softmax",
    "nn.log_softmax",
];

/// The windowed poolings HostFuse compiles as reductions over their window when they have an
/// elementwise producer to fold (otherwise they anchor a group).
pub const WINDOW_POOLINGS: &[&str] = &["nn.max_pool2d", "nn.avg_pool2d"];

/// True for the [`LOOP_REDUCTIONS`] op calls on `float32` (a global pooling only over NCHW
/// data), and for the [`WINDOW_POOLINGS`] on `float32` NCHW data computed by an elementwise
/// op of `f`: they take their elementwise and injective producers and their elementwise
/// consumers into one group (see the module docs). In a fused function, a windowed pooling
/// is a reduction exactly when its producers were fused into its group; in `@main`,
/// [`fusion_groups`] keeps one as an anchor when its producer cannot join its group.
pub fn is_reduction(f: &Function, id: ExprId) -> bool {
    let Some((op, call)) = f.expr(id).as_op_call() else {
        return false;
    };
    let float = |x: ExprId| matches!(f.ty(x), Some(Type::Tensor(t)) if t.dtype == DType::Float32);
    let name = op.name();
    let window = WINDOW_POOLINGS.contains(&name);
    let nchw = call.attrs.get_str("layout").unwrap_or("NCHW") == "NCHW";
    (LOOP_REDUCTIONS.contains(&name) || window)
        && float(id)
        && call.args.len() == 1
        && float(call.args[0])
        && (nchw || !(window || name.starts_with("nn.global_")))
        && (!window || elementwise(f, call.args[0]))
}

/// True for the injective ops that choose per element which operand to read (concatenation,
/// pad): a reduction's producers never hold one, so that its loop reads its input in order.
fn piecewise(f: &Function, id: ExprId) -> bool {
    f.expr(id)
        .as_op_call()
        .is_some_and(|(op, _)| matches!(op.name(), "concatenate" | "nn.pad"))
}

/// True for a view op (a reshape: the executor aliases its input).
fn is_view(f: &Function, id: ExprId) -> bool {
    f.expr(id).as_op_call().is_some_and(|(op, _)| op.is_view)
}

/// True for op calls that anchor a group: [`OpPattern::OutEWiseFusable`] ops with a tensor
/// result, other than the global poolings compiled as reductions ([`is_reduction`]).
pub fn is_anchor(f: &Function, id: ExprId) -> bool {
    let Some((op, _)) = f.expr(id).as_op_call() else {
        return false;
    };
    op.pattern == OpPattern::OutEWiseFusable
        && matches!(f.ty(id), Some(Type::Tensor(_)))
        && !is_reduction(f, id)
}

/// The op name of the anchor of fused function `f`, if it has one.
pub fn anchor_op(f: &Function) -> Option<String> {
    f.live_ids()
        .into_iter()
        .find(|&id| is_anchor(f, id))
        .and_then(|id| f.expr(id).as_op_call())
        .map(|(op, _)| op.name().to_string())
}

/// The op name of the reduction of fused function `f`, if it has one.
pub fn reduction_op(f: &Function) -> Option<String> {
    f.live_ids()
        .into_iter()
        .find(|&id| is_reduction(f, id))
        .and_then(|id| f.expr(id).as_op_call())
        .map(|(op, _)| op.name().to_string())
}

/// The kind of fused function `f`: `reduction` (a reduction with its producers and
/// consumers), `anchored` (an anchor with its elementwise epilogue), `injective` (elementwise
/// ops with at least one [`LOOP_INJECTIVE`] op), or `elementwise`.
pub fn group_kind(f: &Function) -> &'static str {
    if reduction_op(f).is_some() {
        "reduction"
    } else if anchor_op(f).is_some() {
        "anchored"
    } else if f
        .op_names()
        .iter()
        .any(|n| LOOP_INJECTIVE.contains(&n.as_str()))
    {
        "injective"
    } else {
        "elementwise"
    }
}

/// The tensor shape of `id`, if typed as a tensor.
fn shape(f: &Function, id: ExprId) -> Option<&[usize]> {
    match f.ty(id) {
        Some(Type::Tensor(t)) => Some(&t.shape),
        _ => None,
    }
}

/// The nodes reachable from the bodies of local function literals.
fn inside_literals(f: &Function, live: &[ExprId]) -> HashSet<ExprId> {
    let mut inside = HashSet::new();
    let mut stack: Vec<ExprId> = live
        .iter()
        .filter_map(|&id| match f.expr(id) {
            Expr::Function(lit) => Some(lit.body),
            _ => None,
        })
        .collect();
    while let Some(id) = stack.pop() {
        if inside.insert(id) {
            stack.extend(f.expr(id).operand_iter());
        }
    }
    inside
}

/// The elementwise ops an anchor or a reduction would take as its epilogue: those whose
/// operand is an anchor, a reduction or such an op, of their shape, used by them alone. They
/// never join a group with an injective op, nor a reduction's group as its producers, so that
/// the anchor or reduction keeps its epilogue (TVM fuses an anchored group into nothing
/// injective).
fn epilogue_bound(f: &Function, live: &[ExprId], users: &[Vec<ExprId>]) -> HashSet<ExprId> {
    let mut bound = HashSet::new();
    for &id in live {
        if !elementwise(f, id) {
            continue;
        }
        let fed = f.expr(id).operand_iter().any(|a| {
            (is_anchor(f, a) || is_reduction(f, a) || bound.contains(&a))
                && users[a.index()] == [id]
                && shape(f, a) == shape(f, id)
        });
        if fed {
            bound.insert(id);
        }
    }
    bound
}

/// The windowed poolings of `f` that [`is_reduction`] names but that stay anchors, since
/// their producer cannot join their group: it has other users, is `f`'s result, or is bound
/// to another op's epilogue (a conv keeps its relu; the pooling after it reads the conv's
/// output).
fn anchored_windows(
    f: &Function,
    live: &[ExprId],
    users: &[Vec<ExprId>],
    bound: &HashSet<ExprId>,
) -> HashSet<ExprId> {
    live.iter()
        .copied()
        .filter(|&id| {
            let Some((op, call)) = f.expr(id).as_op_call() else {
                return false;
            };
            WINDOW_POOLINGS.contains(&op.name())
                && is_reduction(f, id)
                && call
                    .args
                    .first()
                    .is_some_and(|&a| users[a.index()] != [id] || a == f.body || bound.contains(&a))
        })
        .collect()
}

/// One group under construction.
struct Group {
    /// Its output.
    output: ExprId,
    /// An anchor closed it.
    closed: bool,
    /// It holds an injective op.
    injective: bool,
    /// Its reduction, once one joined: the members joining after it are its producers.
    reduction: Option<ExprId>,
    /// The reduction's producers in the group.
    producers: HashSet<ExprId>,
}

impl Group {
    fn new(output: ExprId, injective: bool, reduction: Option<ExprId>) -> Group {
        Group {
            output,
            closed: false,
            injective,
            reduction,
            producers: HashSet::new(),
        }
    }

    /// Whether `id`, used by `users`, may join this group past its reduction (if it has one):
    /// as a producer used only by the reduction and its other producers, neither a
    /// reduction, an anchor, a concatenation or pad, nor bound to another op's epilogue.
    fn takes_producer(&self, f: &Function, id: ExprId, users: &[ExprId], bound: bool) -> bool {
        let Some(r) = self.reduction else {
            return true;
        };
        !bound
            && !is_reduction(f, id)
            && !is_anchor(f, id)
            && !piecewise(f, id)
            && users.iter().all(|u| *u == r || self.producers.contains(u))
    }
}

/// The fusion groups of `f`, each a list of expressions in topological order (its last one is
/// the group's output; a concatenation's tuple is in its group), groups in the order of their
/// outputs.
pub fn fusion_groups(f: &Function) -> Vec<Vec<ExprId>> {
    let live = f.live_ids();
    let users = f.users();
    let inside = inside_literals(f, &live);
    let bound = epilogue_bound(f, &live, &users);
    let kept = anchored_windows(f, &live, &users, &bound);
    let mut group: BTreeMap<ExprId, usize> = BTreeMap::new();
    let mut groups: Vec<Group> = Vec::new();
    for &id in live.iter().rev() {
        if inside.contains(&id) {
            continue;
        }
        let anchor = is_anchor(f, id) || kept.contains(&id);
        let reduction = is_reduction(f, id) && !kept.contains(&id);
        let inj = injective(f, id, &users);
        if !anchor && !reduction && !inj && !elementwise(f, id) {
            continue;
        }
        // A concatenation's part is used through its tuple: by the concatenation.
        let us: Vec<ExprId> = users[id.index()]
            .iter()
            .map(|&u| match (f.expr(u), users[u.index()].as_slice()) {
                (Expr::Tuple(_), &[c]) if injective(f, c, &users) => c,
                _ => u,
            })
            .collect();
        let shared = us
            .first()
            .and_then(|u| group.get(u).copied())
            .filter(|&g| id != f.body && !groups[g].closed)
            .filter(|&g| us.iter().all(|u| group.get(u) == Some(&g)))
            .filter(|&g| !(groups[g].injective && bound.contains(&id)))
            .filter(|&g| groups[g].takes_producer(f, id, &us, bound.contains(&id)));
        // Anchors and reductions join a group of elementwise consumers of their shape.
        let consumers_of = |g: usize| {
            !groups[g].injective
                && groups[g].reduction.is_none()
                && shape(f, id) == shape(f, groups[g].output)
        };
        match (shared, anchor, reduction) {
            (Some(g), true, _) if consumers_of(g) => {
                groups[g].closed = true;
                group.insert(id, g);
            }
            (_, true, _) => {}
            (Some(g), _, true) if consumers_of(g) => {
                groups[g].reduction = Some(id);
                group.insert(id, g);
            }
            (_, _, true) => {
                group.insert(id, groups.len());
                groups.push(Group::new(id, false, Some(id)));
            }
            (Some(g), false, false) => {
                groups[g].injective |= inj;
                if groups[g].reduction.is_some() {
                    groups[g].producers.insert(id);
                }
                group.insert(id, g);
            }
            (None, false, false) => {
                group.insert(id, groups.len());
                groups.push(Group::new(id, inj, None));
            }
        }
    }
    let mut members: Vec<Vec<ExprId>> = vec![Vec::new(); groups.len()];
    for (&id, &g) in &group {
        members[g].push(id);
    }
    let mut members: Vec<Vec<ExprId>> = members
        .into_iter()
        .map(|m| with_tuples(f, prune_views(f, m)))
        .filter(|m| !m.is_empty())
        .collect();
    members.sort_by_key(|m| m.last().copied());
    members
}

/// A group without the views at its edges: a reshape of a group input or of the group's
/// output moves no data in the executor (it aliases the buffer), while inside a loop it would
/// cost index arithmetic. A group left without arithmetic (injective ops only) is dropped: its
/// reference kernels already move each element once, so a compiled loop would only add
/// compile time.
fn prune_views(f: &Function, mut members: Vec<ExprId>) -> Vec<ExprId> {
    loop {
        let set: HashSet<ExprId> = members.iter().copied().collect();
        let before = members.len();
        members
            .retain(|&id| !is_view(f, id) || f.expr(id).operand_iter().all(|a| set.contains(&a)));
        if members.last().is_some_and(|&id| is_view(f, id)) {
            members.pop();
        }
        if members.len() == before {
            break;
        }
    }
    let moves_only = |id: ExprId| {
        f.expr(id)
            .as_op_call()
            .is_some_and(|(op, _)| LOOP_INJECTIVE.contains(&op.name()))
    };
    let lone_reduction = matches!(members.as_slice(), &[r] if is_reduction(f, r));
    if lone_reduction || members.iter().all(|&id| moves_only(id)) {
        members.clear();
    }
    members
}

/// A group with the tuples of its concatenations added (each used by its concatenation alone).
fn with_tuples(f: &Function, mut members: Vec<ExprId>) -> Vec<ExprId> {
    let tuples: Vec<ExprId> = members
        .iter()
        .filter_map(|&id| f.expr(id).as_op_call())
        .filter_map(|(_, call)| call.args.first().copied())
        .filter(|&a| matches!(f.expr(a), Expr::Tuple(_)))
        .collect();
    members.extend(tuples);
    members.sort();
    members
}

/// `@main` with each group replaced by a call of its outlined function, and the outlined
/// functions by name.
fn outline(
    main: &Function,
    groups: &[Vec<ExprId>],
    names: &[String],
) -> Result<(Function, Vec<(String, Function)>), PassError> {
    let mut owner: BTreeMap<ExprId, usize> = BTreeMap::new();
    for (g, m) in groups.iter().enumerate() {
        for &id in m {
            owner.insert(id, g);
        }
    }
    let mut fused = Vec::new();
    let new_main = Rebuild::new(main).run(|rb, id| -> Result<Option<ExprId>, PassError> {
        let Some(&g) = owner.get(&id) else {
            return Ok(None);
        };
        let members = &groups[g];
        if members.last() != Some(&id) {
            // Built inside the group's function, at its output.
            return Ok(Some(id_placeholder(rb, id)?));
        }
        let (function, inputs) = outline_group(main, members, &names[g])?;
        let args = inputs
            .iter()
            .map(|&i| rb.get(i))
            .collect::<Result<Vec<_>, _>>()?;
        fused.push((names[g].clone(), function));
        Ok(Some(rb.builder.call_global(names[g].clone(), &args)?))
    })?;
    Ok((new_main, fused))
}

/// Group members other than the output are never used outside their group, so their new id
/// is never read; they map to their first operand's (every fused op has one).
fn id_placeholder(rb: &mut Rebuild<'_>, id: ExprId) -> Result<ExprId, PassError> {
    let first = rb
        .src
        .expr(id)
        .operand_iter()
        .next()
        .ok_or(PassError::Ir(IrError::BadId(id)))?;
    Ok(rb.get(first)?)
}

/// The outlined function of one group and its inputs (values of `main`), in first-use order.
fn outline_group(
    main: &Function,
    members: &[ExprId],
    name: &str,
) -> Result<(Function, Vec<ExprId>), PassError> {
    let set: HashSet<ExprId> = members.iter().copied().collect();
    let mut b = FunctionBuilder::new();
    let mut map: BTreeMap<ExprId, ExprId> = BTreeMap::new();
    let mut inputs = Vec::new();
    let mut params = Vec::new();
    for &id in members {
        for arg in main.expr(id).operand_iter() {
            if set.contains(&arg) || map.contains_key(&arg) {
                continue;
            }
            let ty = main
                .ty(arg)
                .cloned()
                .ok_or(PassError::Ir(IrError::BadId(arg)))?;
            let p = b.param(format!("p{}", inputs.len()), ty);
            map.insert(arg, p);
            inputs.push(arg);
            params.push(p);
        }
        let expr = main.expr(id).map_ids(|x| map[&x]);
        let new = b.push(expr)?;
        if let Some(ty) = main.ty_shared(id) {
            b.set_ty_shared(new, ty.clone());
        }
        map.insert(id, new);
    }
    let body = *map
        .get(
            members
                .last()
                .ok_or(PassError::Ir(IrError::BadId(main.body)))?,
        )
        .ok_or(PassError::Ir(IrError::BadId(main.body)))?;
    let attrs = Attrs::new()
        .with(COMPILER, HOST_CODEGEN_TARGET)
        .with(PRIMITIVE, 1i64)
        .with(GLOBAL_SYMBOL, name);
    Ok((b.finish(params, body, attrs)?, inputs))
}

/// Sends the fused host function `name` back to the reference kernels: it loses its
/// `Compiler` attribute, so the executor inlines it. Returns false when `module` has no such
/// fused function.
pub fn unfuse(module: &mut Module, name: &str) -> bool {
    match module.get_mut(name) {
        Some(f) if target_of(f) == Some(HOST_CODEGEN_TARGET) => {
            f.attrs.remove(COMPILER);
            true
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use byoc_ir::text::{parse_module, print_module};

    fn fused(src: &str) -> Module {
        let mut m = parse_module(src).expect("the test module parses");
        HostFuse
            .run(&mut m, &mut PassContext::new())
            .expect("host-fuse runs");
        m
    }

    fn fused_ops(m: &Module) -> Vec<Vec<String>> {
        m.functions()
            .filter(|(n, _)| n.starts_with(FUSED_PREFIX))
            .map(|(_, f)| f.op_names())
            .collect()
    }

    #[test]
    fn an_elementwise_chain_becomes_one_function() {
        let m = fused(
            "def @main(%x: Tensor[(2, 3), float32], %b: Tensor[(3), float32]) {
               %0 = add(%x, %b);
               %1 = nn.relu(%0);
               %2 = multiply(%1, 2f);
               sigmoid(%2)
             }",
        );
        assert_eq!(
            fused_ops(&m),
            [["add", "nn.relu", "multiply", "sigmoid"]],
            "{}",
            print_module(&m)
        );
        let main = m.main().unwrap();
        assert_eq!(main.op_names(), Vec::<String>::new());
    }

    #[test]
    fn a_value_used_twice_inside_a_group_stays_in_it_and_results_split_groups() {
        let m = fused(
            "def @main(%x: Tensor[(1, 4), float32], %w: Tensor[(5, 4), float32]) {
               %0 = sigmoid(%x);
               %1 = multiply(%x, %0);
               %2 = nn.dense(%1, %w);
               %3 = exp(%2);
               %4 = add(%3, 1f);
               (%3, %4)
             }",
        );
        // sigmoid and multiply fuse (a diamond on %x); exp is a result of @main, so it ends
        // its group (with the dense as its anchor) and add starts another.
        assert_eq!(
            fused_ops(&m),
            [
                vec!["sigmoid", "multiply"],
                vec!["nn.dense", "exp"],
                vec!["add"]
            ],
            "{}",
            print_module(&m)
        );
        assert!(m.main().unwrap().op_names().is_empty());
    }

    #[test]
    fn a_conv_anchors_its_epilogue_and_closes_the_group() {
        let m = fused(
            "def @main(%x: Tensor[(1, 2, 5, 5), float32], %w: Tensor[(3, 2, 3, 3), float32],
                       %b: Tensor[(3), float32], %r: Tensor[(1, 3, 3, 3), float32]) {
               %0 = nn.relu(%x);
               %1 = nn.conv2d(%0, %w);
               %2 = nn.bias_add(%1, %b);
               %3 = add(%2, %r);
               nn.relu(%3)
             }",
        );
        // The conv joins its epilogue's group; the relu before it stays outside.
        assert_eq!(
            fused_ops(&m),
            [
                vec!["nn.relu"],
                vec!["nn.conv2d", "nn.bias_add", "add", "nn.relu"]
            ],
            "{}",
            print_module(&m)
        );
        assert!(m.main().unwrap().op_names().is_empty());
    }

    #[test]
    fn a_batch_norm_over_constants_folds_into_the_conv_epilogue() {
        let m = fused(
            "def @main(%x: Tensor[(1, 2, 4, 4), float32], %w: Tensor[(3, 2, 1, 1), float32]) {
               %0 = nn.conv2d(%x, %w);
               %1 = nn.batch_norm(%0, const((3), float32, fill=2), const((3), float32, fill=1),
                                  const((3), float32, fill=0.5), const((3), float32, fill=4));
               %2 = %1.0;
               nn.relu(%2)
             }",
        );
        assert_eq!(
            fused_ops(&m),
            [["nn.conv2d", "multiply", "add", "nn.relu"]],
            "{}",
            print_module(&m)
        );
    }

    #[test]
    fn an_anchor_stays_alone_when_its_consumer_broadcasts_it_or_it_is_the_result() {
        let m = fused(
            "def @main(%x: Tensor[(1, 4), float32], %w: Tensor[(5, 4), float32],
                       %y: Tensor[(3, 5), float32]) {
               %0 = nn.dense(%x, %w);
               %1 = add(%0, %y);
               (nn.dense(%x, %w), %1)
             }",
        );
        // The first dense broadcasts to (3, 5); the second is a field of @main's result.
        assert_eq!(fused_ops(&m), [vec!["add"]], "{}", print_module(&m));
        assert_eq!(m.main().unwrap().op_names(), ["nn.dense", "nn.dense"]);
    }

    #[test]
    fn a_value_used_by_two_groups_is_a_group_output() {
        let m = fused(
            "def @main(%x: Tensor[(4), float32]) {
               %0 = exp(%x);
               %1 = nn.dense(reshape(%0, newshape=[1, 4]), ones(shape=[2, 4], dtype=\"float32\"));
               %2 = add(%0, 1f);
               (%1, %2)
             }",
        );
        assert_eq!(fused_ops(&m), [vec!["exp"], vec!["add"]]);
    }

    #[test]
    fn injective_ops_fuse_with_elementwise_producers_and_consumers() {
        let m = fused(
            "def @main(%x: Tensor[(1, 12, 5, 5), float32], %y: Tensor[(1, 4, 5, 5), float32]) {
               %0 = nn.relu(%x);
               %1 = reshape(%0, newshape=[1, 3, 4, 5, 5]);
               %2 = transpose(%1, axes=[0, 2, 1, 3, 4]);
               %3 = reshape(%2, newshape=[1, 12, 5, 5]);
               %4 = concatenate((%3, exp(%y)), axis=1);
               %5 = nn.pad(%4, 0f, pad_width=[[0, 0], [0, 0], [1, 1], [1, 1]]);
               multiply(%5, 2f)
             }",
        );
        assert_eq!(
            fused_ops(&m),
            [[
                "nn.relu",
                "reshape",
                "transpose",
                "reshape",
                "exp",
                "concatenate",
                "nn.pad",
                "multiply"
            ]],
            "{}",
            print_module(&m)
        );
        assert!(m.main().unwrap().op_names().is_empty());
    }

    #[test]
    fn reshapes_at_a_group_edge_stay_outside_and_injective_ops_alone_are_no_group() {
        let m = fused(
            "def @main(%x: Tensor[(2, 6), float32]) {
               %0 = reshape(%x, newshape=[2, 2, 3]);
               %1 = transpose(%0, axes=[0, 2, 1]);
               %2 = reshape(%1, newshape=[12]);
               (%2, reshape(%x, newshape=[12]))
             }",
        );
        assert!(fused_ops(&m).is_empty(), "{}", print_module(&m));
        assert_eq!(
            m.main().unwrap().op_names(),
            ["reshape", "transpose", "reshape", "reshape"]
        );
        // With arithmetic, the transpose fuses and the reshapes at the edges stay outside.
        let m = fused(
            "def @main(%x: Tensor[(2, 6), float32]) {
               %0 = reshape(%x, newshape=[2, 2, 3]);
               %1 = transpose(%0, axes=[0, 2, 1]);
               reshape(exp(%1), newshape=[12])
             }",
        );
        assert_eq!(
            fused_ops(&m),
            [["transpose", "exp"]],
            "{}",
            print_module(&m)
        );
        assert_eq!(m.main().unwrap().op_names(), ["reshape", "reshape"]);
    }

    #[test]
    fn anchored_epilogues_stay_out_of_injective_groups() {
        let m = fused(
            "def @main(%x: Tensor[(1, 2, 4, 4), float32], %w: Tensor[(3, 2, 1, 1), float32],
                       %b: Tensor[(3), float32], %y: Tensor[(1, 2, 4, 4), float32]) {
               %0 = nn.conv2d(%x, %w);
               %1 = nn.relu(nn.bias_add(%0, %b));
               %2 = concatenate((%1, nn.relu(%y)), axis=1);
               nn.relu(%2)
             }",
        );
        // The conv keeps bias and relu; the other relu, not bound to an anchor, joins the
        // concatenation and its consumer.
        assert_eq!(
            fused_ops(&m),
            [
                vec!["nn.conv2d", "nn.bias_add", "nn.relu"],
                vec!["nn.relu", "concatenate", "nn.relu"]
            ],
            "{}",
            print_module(&m)
        );
        // An injective op between an anchor and its consumers ends the anchor's group.
        let m = fused(
            "def @main(%x: Tensor[(1, 4), float32], %w: Tensor[(6, 4), float32]) {
               %0 = nn.dense(%x, %w);
               %1 = transpose(%0);
               nn.relu(%1)
             }",
        );
        assert_eq!(
            fused_ops(&m),
            [["transpose", "nn.relu"]],
            "{}",
            print_module(&m)
        );
        assert_eq!(m.main().unwrap().op_names(), ["nn.dense"]);
    }

    #[test]
    fn a_concatenation_of_a_shared_tuple_or_a_non_float_type_does_not_fuse() {
        let m = fused(
            "def @main(%x: Tensor[(2, 3), float32], %i: Tensor[(2, 3), int32]) {
               %0 = (%x, %x);
               %1 = concatenate(%0, axis=0);
               %2 = concatenate(%0, axis=1);
               %3 = transpose(%i);
               (%1, %2, %3)
             }",
        );
        assert!(fused_ops(&m).is_empty(), "{}", print_module(&m));
    }

    #[test]
    fn a_reduction_takes_its_producers_and_consumers() {
        let m = fused(
            "def @main(%x: Tensor[(2, 3, 4, 4), float32], %s: Tensor[(3, 1, 1), float32]) {
               %0 = multiply(%x, %s);
               %1 = transpose(nn.relu(%0), axes=[0, 1, 3, 2]);
               %2 = mean(%1, axis=[2, 3]);
               sigmoid(%2)
             }",
        );
        assert_eq!(
            fused_ops(&m),
            [["multiply", "nn.relu", "transpose", "mean", "sigmoid"]],
            "{}",
            print_module(&m)
        );
        let f = m.get("host_fused_0").unwrap();
        assert_eq!(group_kind(f), "reduction");
        assert_eq!(reduction_op(f).as_deref(), Some("mean"));
        assert_eq!(anchor_op(f), None);
        assert!(m.main().unwrap().op_names().is_empty());
    }

    #[test]
    fn reduction_groups_keep_anchor_epilogues_concatenations_and_shared_values_out() {
        let m = fused(
            "def @main(%x: Tensor[(1, 2, 4, 4), float32], %w: Tensor[(3, 2, 1, 1), float32],
                       %b: Tensor[(3), float32], %y: Tensor[(1, 3, 4, 4), float32]) {
               %0 = nn.conv2d(%x, %w);
               %1 = nn.relu(nn.bias_add(%0, %b));
               %2 = concatenate((%1, exp(%y)), axis=1);
               %3 = nn.global_avg_pool2d(negative(%2));
               %4 = exp(%y);
               %5 = sum(%4, axis=[1]);
               (%3, add(%5, 1f), %4)
             }",
        );
        // The conv keeps its epilogue, the concatenation ends the pooling's producers (it
        // stays on its kernel with the exp before it), and a value used outside (%4) is no
        // producer.
        assert_eq!(
            fused_ops(&m),
            [
                vec!["nn.conv2d", "nn.bias_add", "nn.relu"],
                vec!["exp", "concatenate"],
                vec!["negative", "nn.global_avg_pool2d"],
                vec!["exp"],
                vec!["sum", "add"],
            ],
            "{}",
            print_module(&m)
        );
        // A lone reduction, or one of NHWC data (an anchor), is no reduction group.
        let m = fused(
            "def @main(%x: Tensor[(2, 5), float32], %y: Tensor[(1, 4, 4, 3), float32]) {
               %0 = max(%x, axis=[1]);
               %1 = nn.global_max_pool2d(%y, layout=\"NHWC\");
               (%0, nn.relu(%1))
             }",
        );
        assert_eq!(
            fused_ops(&m),
            [["nn.global_max_pool2d", "nn.relu"]],
            "{}",
            print_module(&m)
        );
        assert_eq!(group_kind(m.get("host_fused_0").unwrap()), "anchored");
        assert_eq!(m.main().unwrap().op_names(), ["max"]);
    }

    #[test]
    fn a_windowed_pooling_folds_its_producers_or_stays_an_anchor() {
        // Elementwise producers: the pooling is a reduction over its window.
        let m = fused(
            "def @main(%x: Tensor[(1, 3, 8, 8), float32], %s: Tensor[(3, 1, 1), float32]) {
               %0 = nn.relu(multiply(%x, %s));
               %1 = nn.max_pool2d(%0, pool_size=[3, 3], strides=[2, 2], padding=[1, 1, 1, 1]);
               sigmoid(%1)
             }",
        );
        assert_eq!(
            fused_ops(&m),
            [["multiply", "nn.relu", "nn.max_pool2d", "sigmoid"]],
            "{}",
            print_module(&m)
        );
        let f = m.get("host_fused_0").unwrap();
        assert_eq!(group_kind(f), "reduction");
        assert_eq!(reduction_op(f).as_deref(), Some("nn.max_pool2d"));
        assert_eq!(anchor_op(f), None);
        // No producer, a producer bound to a conv's epilogue, a producer with another user,
        // NHWC data: the pooling anchors its consumers.
        let m = fused(
            "def @main(%x: Tensor[(1, 2, 6, 6), float32], %w: Tensor[(2, 2, 1, 1), float32],
                       %y: Tensor[(1, 6, 6, 2), float32]) {
               %0 = nn.avg_pool2d(%x, pool_size=[2, 2]);
               %1 = nn.relu(nn.conv2d(%x, %w));
               %2 = nn.max_pool2d(%1, pool_size=[2, 2]);
               %3 = exp(%x);
               %4 = nn.max_pool2d(%3, pool_size=[2, 2]);
               %5 = nn.max_pool2d(exp(%y), pool_size=[2, 2], layout=\"NHWC\");
               (negative(%0), negative(%2), negative(%4), %3, negative(%5))
             }",
        );
        let mut ops = fused_ops(&m);
        ops.sort();
        assert_eq!(
            ops,
            [
                vec!["exp"],
                vec!["exp"],
                vec!["nn.avg_pool2d", "negative"],
                vec!["nn.conv2d", "nn.relu"],
                vec!["nn.max_pool2d", "negative"],
                vec!["nn.max_pool2d", "negative"],
                vec!["nn.max_pool2d", "negative"],
            ],
            "{}",
            print_module(&m)
        );
        for (_, f) in m.functions().filter(|(n, _)| n.starts_with(FUSED_PREFIX)) {
            assert_ne!(group_kind(f), "reduction", "{}", print_module(&m));
        }
    }

    #[test]
    fn split_fields_become_slices_that_fuse_with_their_consumers() {
        let m = fused(
            "def @main(%x: Tensor[(2, 6, 3), float32]) {
               %0 = split(%x, indices_or_sections=[1, 4], axis=-2);
               %1 = exp(%0.1);
               %2 = add(%0.2, 1f);
               (%1, %2, %0.0)
             }",
        );
        assert_eq!(
            fused_ops(&m),
            [["strided_slice", "exp"], ["strided_slice", "add"]],
            "{}",
            print_module(&m)
        );
        // The field without arithmetic is a slice on its kernel; the split is gone.
        assert_eq!(m.main().unwrap().op_names(), ["strided_slice"]);
        let text = print_module(&m);
        assert!(text.contains("begin=[1], end=[4]"), "{text}");
    }

    #[test]
    fn unfused_functions_lose_their_compiler_attribute() {
        let mut m = fused("def @main(%x: Tensor[(4), float32]) { nn.relu(%x) }");
        assert!(unfuse(&mut m, "host_fused_0"));
        assert!(!unfuse(&mut m, "host_fused_0"));
        assert!(m.get("host_fused_0").map(target_of).unwrap().is_none());
    }
}
