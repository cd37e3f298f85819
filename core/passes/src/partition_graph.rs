//! PartitionGraph: lifts every annotated region into a global function of its target
//! (TVM Relay's `PartitionGraph`).
//!
//! Needs: a verified module whose regions are well formed (see [`byoc_ir::analysis::regions`]);
//! types are inferred here unless every expression has one. `default` annotations are removed
//! first (they delimit nothing). Holds after: each region of a non-`default` target is a global function
//! `@<target>_<n>` with attributes `Compiler="<target>"`, `global_symbol="<target>_<n>"`,
//! `Primitive=1`, called where the region was; `n` counts per target over the module, in
//! function-name order and, within a function, in arena (topological) order of the region's
//! first node, skipping names already taken. Parameters are `%<name>_i0, ...`, one per distinct
//! producer (several begins of one value collapse); regions holding no call (a lone tuple)
//! stay on the host; with `bind_constants` (the default)
//! constant inputs and all-constant tuples are copied into the function instead. Outputs are
//! de-duplicated; a region with several outputs, or a tuple-literal output, returns one flat
//! tuple of tensors and its users read it through tuple-get-item. Composite function literals
//! used by a region are copied into the function body. Functions already carrying `Compiler`,
//! `Extern` or `SkipOptimization` are left as they are.
//!
//! Unlike TVM, the function name does not embed the caller's name and module-wide type
//! inference does not run after every region: every node built here gets its type directly.
//! Cost: linear in the module size plus `O(v log v)` for ordering the region graph.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use super::partitioning::copy_mapped;
use crate::{PartitionError, Pass, PassContext, PassError};
use byoc_ir::analysis::regions::{annotation, strip_annotations, Region, RegionSet, Vertex};
use byoc_ir::infer_missing_types;
use byoc_ir::partition::{skipped_by_passes, COMPILER, GLOBAL_SYMBOL, PRIMITIVE};
use byoc_ir::{
    rewrite::Rebuild, Attrs, Callee, Expr, ExprId, Function, FunctionBuilder, IrError, Module, Type,
};

/// The PartitionGraph pass.
#[derive(Clone, Copy, Debug)]
pub struct PartitionGraph {
    bind_constants: bool,
}

impl Default for PartitionGraph {
    fn default() -> Self {
        PartitionGraph {
            bind_constants: true,
        }
    }
}

impl PartitionGraph {
    /// The pass with constants bound into the functions.
    pub fn new() -> Self {
        PartitionGraph::default()
    }

    /// Whether constant inputs are bound into the functions (`true`) or passed as parameters.
    pub fn bind_constants(mut self, bind: bool) -> Self {
        self.bind_constants = bind;
        self
    }

    /// Outlines the regions of every function of `module` in place.
    fn partition(&self, module: &mut Module) -> Result<(), PartitionError> {
        infer_missing_types(module)?;
        let original = module.names();
        let mut names = Namer {
            taken: original.iter().cloned().collect(),
            next: BTreeMap::new(),
        };
        for fname in original {
            let Some(f) = module.get(&fname).filter(|f| !skipped_by_passes(f)) else {
                continue;
            };
            let (host, externals) = self.partition_function(&fname, f, &mut names)?;
            module.insert(fname, host);
            for (name, ext) in externals {
                module.add(name, ext)?;
            }
        }
        Ok(())
    }

    fn partition_function(
        &self,
        fname: &str,
        f: &Function,
        names: &mut Namer,
    ) -> Result<(Function, Vec<(String, Function)>), PartitionError> {
        let regions = RegionSet::build(f, fname, true)?;
        let graph = regions.graph(f, fname)?;
        // Regions without any call (a lone tuple, say) are not worth a function: they stay
        // on the host with their annotations dropped.
        let region_names: Vec<Option<String>> = regions
            .regions()
            .iter()
            .map(|r| {
                let has_call = r.nodes.iter().any(|&id| {
                    matches!(f.expr(id), Expr::Call(_)) && annotation(f.expr(id)).is_none()
                });
                has_call.then(|| names.fresh(&r.target))
            })
            .collect();
        let outlined = |id| {
            regions
                .region_of(id)
                .is_some_and(|r| region_names[r.index()].is_some())
        };
        let on_host = host_needed(f, &regions, outlined);
        let mut rb = Rebuild::new(f);
        let mut externals = Vec::new();
        for &v in &graph.order {
            match v {
                Vertex::Node(id) => {
                    if on_host[id.index()] {
                        copy_to_host(&mut rb, id)?;
                    }
                }
                Vertex::Region(r) => match &region_names[r.index()] {
                    Some(name) => {
                        let ext = self.outline(&mut rb, regions.region(r), name)?;
                        externals.push((name.clone(), ext));
                    }
                    None => {
                        for &id in &regions.region(r).nodes {
                            copy_to_host(&mut rb, id)?;
                        }
                    }
                },
            }
        }
        Ok((rb.finish()?, externals))
    }

    /// Builds the function of `region` and its call in the host arena.
    fn outline(
        &self,
        rb: &mut Rebuild<'_>,
        region: &Region,
        name: &str,
    ) -> Result<Function, PartitionError> {
        let f = rb.src;
        let mut ext = Outliner {
            f,
            b: FunctionBuilder::new(),
            map: HashMap::new(),
        };
        let mut params = Vec::new();
        let mut args = Vec::new();
        let mut by_producer: HashMap<ExprId, ExprId> = HashMap::new();
        for &begin in &region.ins {
            let arg = annotation(f.expr(begin))
                .map(|a| a.arg)
                .ok_or(IrError::BadId(begin))?;
            let producer = strip_annotations(f, arg);
            let value = match by_producer.get(&producer) {
                Some(&v) => v,
                None => {
                    let v = if self.binds(f, producer) {
                        ext.copy_closed(producer)?
                    } else {
                        let ty = typed(f, begin)?.clone();
                        let p = ext.b.param(format!("{name}_i{}", params.len()), ty);
                        params.push(p);
                        args.push(rb.get(arg)?);
                        p
                    };
                    by_producer.insert(producer, v);
                    v
                }
            };
            ext.map.insert(begin, value);
        }
        for &id in &region.nodes {
            if ext.map.contains_key(&id) || annotation(f.expr(id)).is_some() {
                continue;
            }
            if let Expr::Call(call) = f.expr(id) {
                if let Callee::Local(lit) = call.callee {
                    ext.copy_closed(lit)?;
                }
            }
            ext.copy(id)?;
        }
        // Outputs: unique producers in end order, flattened into tensor leaves.
        let mut outputs: Vec<ExprId> = Vec::new();
        for &end in &region.outs {
            let a = annotation(f.expr(end)).ok_or(IrError::BadId(end))?;
            if !outputs.contains(&a.arg) {
                outputs.push(a.arg);
            }
        }
        let single = outputs.len() == 1 && !matches!(f.expr(outputs[0]), Expr::Tuple(_));
        let mut leaves = Vec::new();
        let mut shapes = HashMap::new();
        for &o in &outputs {
            let shape = if single {
                leaves.push(ext.get(o)?);
                OutShape::Leaf(0)
            } else {
                ext.flatten(o, ext.get(o)?, typed(f, o)?, &mut leaves)?
            };
            shapes.insert(o, shape);
        }
        let body = if leaves.len() == 1 {
            leaves[0]
        } else {
            let types = leaves
                .iter()
                .map(|&l| ext.b.ty(l).cloned().ok_or(IrError::BadId(l)))
                .collect::<Result<Vec<_>, _>>()?;
            let t = ext.b.tuple(&leaves)?;
            ext.b.set_ty(t, Type::Tuple(types));
            t
        };
        let ret = ext.b.ty(body).cloned().ok_or(IrError::BadId(body))?;
        let leaf_types: Vec<Type> = leaves
            .iter()
            .map(|&l| ext.b.ty(l).cloned().ok_or(IrError::BadId(l)))
            .collect::<Result<_, _>>()?;
        let attrs = Attrs::new()
            .with(COMPILER, region.target.as_str())
            .with(GLOBAL_SYMBOL, name)
            .with(PRIMITIVE, 1i64);
        let function = ext.b.finish(params, body, attrs)?;
        // The call site.
        let call = rb.builder.call_global(name, &args)?;
        rb.builder.set_ty(call, ret);
        let mut site = CallSite {
            call,
            single: leaf_types.len() == 1,
            leaf_types,
            items: HashMap::new(),
        };
        let mut values: HashMap<ExprId, ExprId> = HashMap::new();
        for &end in &region.outs {
            let a = annotation(f.expr(end)).ok_or(IrError::BadId(end))?;
            let v = match values.get(&a.arg) {
                Some(&v) => v,
                None => {
                    let v = site.value(&mut rb.builder, &shapes[&a.arg])?;
                    values.insert(a.arg, v);
                    v
                }
            };
            rb.set(end, v);
        }
        Ok(function)
    }

    /// True when `producer` is bound into functions: a constant or a tuple of constants,
    /// with `bind_constants` on.
    fn binds(&self, f: &Function, producer: ExprId) -> bool {
        if !self.bind_constants {
            return false;
        }
        let is_const = |id| matches!(f.expr(id), Expr::Constant(_));
        match f.expr(producer) {
            Expr::Constant(_) => true,
            Expr::Tuple(fields) => {
                !fields.is_empty() && fields.iter().all(|&x| is_const(strip_annotations(f, x)))
            }
            _ => false,
        }
    }
}

impl Pass for PartitionGraph {
    fn name(&self) -> &'static str {
        "partition-graph"
    }

    fn run(&self, module: &mut Module, _cx: &mut PassContext) -> Result<(), PassError> {
        Ok(self.partition(module)?)
    }
}

/// The nodes the host function keeps: those the body reaches without entering an outlined
/// region, where a region needs only the arguments of its begins (its call's arguments). A
/// function literal used only inside regions is copied into their functions, not the host.
fn host_needed(f: &Function, regions: &RegionSet, outlined: impl Fn(ExprId) -> bool) -> Vec<bool> {
    let mut need = vec![false; f.len()];
    need[f.body.index()] = true;
    for &p in &f.params {
        need[p.index()] = true;
    }
    for region in regions.regions() {
        if region.ins.first().is_some_and(|&b| outlined(b)) {
            for &b in &region.ins {
                if let Some(a) = annotation(f.expr(b)) {
                    need[a.arg.index()] = true;
                }
            }
        }
    }
    for id in f.ids().rev() {
        if need[id.index()] && !outlined(id) {
            for o in f.expr(id).operand_iter() {
                need[o.index()] = true;
            }
        }
    }
    need
}

/// Copies a node to the host arena; an annotation there is dropped (read through).
fn copy_to_host(rb: &mut Rebuild<'_>, id: ExprId) -> Result<(), IrError> {
    match annotation(rb.src.expr(id)) {
        Some(a) => {
            let arg = rb.get(a.arg)?;
            rb.set(id, arg);
        }
        None => {
            rb.copy(id)?;
        }
    }
    Ok(())
}

fn typed(f: &Function, id: ExprId) -> Result<&Type, IrError> {
    f.ty(id).ok_or(IrError::BadId(id))
}

/// How one region output is rebuilt from the flat results at the call site.
#[derive(Clone, Debug)]
enum OutShape {
    Leaf(usize),
    Tuple(Vec<OutShape>),
}

/// Copies region nodes from the source function into a new function's arena.
struct Outliner<'f> {
    f: &'f Function,
    b: FunctionBuilder,
    map: HashMap<ExprId, ExprId>,
}

impl Outliner<'_> {
    fn get(&self, old: ExprId) -> Result<ExprId, IrError> {
        self.map.get(&old).copied().ok_or(IrError::BadId(old))
    }

    /// Copies one node whose operands are already copied.
    fn copy(&mut self, old: ExprId) -> Result<ExprId, IrError> {
        copy_mapped(self.f, old, &mut self.map, &mut self.b)
    }

    /// Copies `root` and everything it refers to (a closed function literal, a constant, a
    /// tuple of constants), looking through annotations.
    fn copy_closed(&mut self, root: ExprId) -> Result<ExprId, IrError> {
        let mut todo = vec![root];
        let mut needed = BTreeSet::new();
        while let Some(id) = todo.pop() {
            if self.map.contains_key(&id) || !needed.insert(id) {
                continue;
            }
            todo.extend(self.f.expr(id).operand_iter());
        }
        for id in needed {
            match annotation(self.f.expr(id)) {
                Some(a) => {
                    let v = self.get(a.arg)?;
                    self.map.insert(id, v);
                }
                None => {
                    self.copy(id)?;
                }
            }
        }
        self.get(root)
    }

    /// Appends the tensor leaves of output `old` (new id `new`) and says how to rebuild it.
    fn flatten(
        &mut self,
        old: ExprId,
        new: ExprId,
        ty: &Type,
        leaves: &mut Vec<ExprId>,
    ) -> Result<OutShape, IrError> {
        if let Expr::Tuple(fields) = self.f.expr(old) {
            let fields = fields.clone();
            let mut shapes = Vec::with_capacity(fields.len());
            for x in fields {
                let fty = self.f.ty(x).ok_or(IrError::BadId(x))?;
                shapes.push(self.flatten(x, self.get(x)?, fty, leaves)?);
            }
            return Ok(OutShape::Tuple(shapes));
        }
        self.flatten_typed(new, ty, leaves)
    }

    fn flatten_typed(
        &mut self,
        new: ExprId,
        ty: &Type,
        leaves: &mut Vec<ExprId>,
    ) -> Result<OutShape, IrError> {
        match ty {
            Type::Tuple(types) => {
                let mut shapes = Vec::with_capacity(types.len());
                for (i, t) in types.iter().enumerate() {
                    let item = self.b.tuple_get_item(new, i)?;
                    self.b.set_ty(item, t.clone());
                    shapes.push(self.flatten_typed(item, t, leaves)?);
                }
                Ok(OutShape::Tuple(shapes))
            }
            _ => {
                leaves.push(new);
                Ok(OutShape::Leaf(leaves.len() - 1))
            }
        }
    }
}

/// The call of an outlined function and the values read from it.
struct CallSite {
    call: ExprId,
    single: bool,
    leaf_types: Vec<Type>,
    items: HashMap<usize, ExprId>,
}

impl CallSite {
    fn value(&mut self, b: &mut FunctionBuilder, shape: &OutShape) -> Result<ExprId, IrError> {
        match shape {
            OutShape::Leaf(_) if self.single => Ok(self.call),
            OutShape::Leaf(i) => {
                if let Some(&v) = self.items.get(i) {
                    return Ok(v);
                }
                let v = b.tuple_get_item(self.call, *i)?;
                b.set_ty(v, self.leaf_types[*i].clone());
                self.items.insert(*i, v);
                Ok(v)
            }
            OutShape::Tuple(fields) => {
                let mut ids = Vec::with_capacity(fields.len());
                let mut types = Vec::with_capacity(fields.len());
                for s in fields {
                    let v = self.value(b, s)?;
                    types.push(b.ty(v).cloned().ok_or(IrError::BadId(v))?);
                    ids.push(v);
                }
                let t = b.tuple(&ids)?;
                b.set_ty(t, Type::Tuple(types));
                Ok(t)
            }
        }
    }
}

/// Hands out `<target>_<n>` names, skipping taken ones.
struct Namer {
    taken: BTreeSet<String>,
    next: BTreeMap<String, usize>,
}

impl Namer {
    fn fresh(&mut self, target: &str) -> String {
        let base: String = target
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
            .collect();
        let n = self.next.entry(base.clone()).or_insert(0);
        loop {
            let name = format!("{base}_{n}");
            *n += 1;
            if self.taken.insert(name.clone()) {
                return name;
            }
        }
    }
}
