//! Lowering: `@main` of a typed module becomes a flat list of kernel instructions.
//!
//! Every tensor the program handles is a [`Value`]: an input, a constant (bound once, shared
//! with the module, never copied), the output of an instruction, or a view of another value.
//! Tuples and tuple-get-item exist only during lowering (they alias values, no copies);
//! calls of local function literals (composites) and of host global functions are inlined, each
//! call site getting its own instructions; a call of an external function (`Compiler`
//! attribute) becomes one instruction running its compiled module ([`super::external`]); ops marked [`byoc_ir::op::OpDef::is_view`] become views of
//! their first input instead of instructions. Instructions come out in a topological order:
//! every value is produced before its first use.
//!
//! Call sites are named by the chain of inlined calls, e.g. `@main:%7 > @f:%2` for op `%2` of
//! `@f`, inlined at call `%7` of `@main`.

use std::collections::HashMap;
use std::sync::Arc;

use super::error::ExecError;
use super::external::{ExternalModule, ExternalModules};
use super::promote;
use byoc_ir::op::Op;
use byoc_ir::partition::{target_of, HOST_TARGET};
use byoc_ir::tensor::Tensor;
use byoc_ir::{Call, Callee, Expr, ExprId, Function, Module, TensorType, Type};
use byoc_kernels::HostKernel;

/// Index of a [`Value`] in [`Plan::values`].
pub(crate) type ValueId = usize;

/// Where a value's bytes come from.
#[derive(Clone, Debug)]
pub(crate) enum Source {
    /// Flattened input `i` of `@main`.
    Input(usize),
    /// A constant of the module.
    Constant(Arc<Tensor>),
    /// Written by an instruction.
    Produced,
    /// The bytes of another value (always a non-view root) under this value's type.
    View(ValueId),
}

/// A tensor value of the plan.
#[derive(Clone, Debug)]
pub(crate) struct Value {
    pub ty: TensorType,
    pub source: Source,
}

/// What an instruction runs.
pub(crate) enum Kernel {
    /// A host kernel of an op, built once for this site's types and attributes.
    Host { op: Op, kernel: Box<dyn HostKernel> },
    /// The compiled module of an external function.
    External {
        function: String,
        module: ExternalModule,
    },
}

/// One kernel call.
pub(crate) struct Instr {
    /// What runs.
    pub kernel: Kernel,
    /// The call site (see the module docs).
    pub site: String,
    /// Input values, tuple arguments flattened.
    pub inputs: Vec<ValueId>,
    /// Output values (each [`Source::Produced`]), tuple results flattened.
    pub outputs: Vec<ValueId>,
    /// True for a `concatenate` whose parts lie one after the other in its output (every
    /// dimension before the axis has extent 1: batch 1 along axis 1, or axis 0), so that each
    /// part is a contiguous byte range of the output ([`super::storage`] may place it there).
    pub joins_in_order: bool,
}

/// A named, typed input of the plan.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InputInfo {
    /// The parameter name; a leaf of a tuple-typed parameter `p` is named `p.0`, `p.1`, ...
    pub name: String,
    /// Its type.
    pub ty: TensorType,
}

/// The lowered program.
pub(crate) struct Plan {
    pub values: Vec<Value>,
    pub instrs: Vec<Instr>,
    /// Flattened inputs of `@main`, in parameter order.
    pub inputs: Vec<InputInfo>,
    /// Flattened leaves of `@main`'s result.
    pub outputs: Vec<ValueId>,
    /// `@main`'s result type (its tuple structure).
    pub result_type: Type,
}

impl Instr {
    /// The op name, or `@function` for an external call.
    pub fn label(&self) -> String {
        match &self.kernel {
            Kernel::Host { op, .. } => op.name().to_string(),
            Kernel::External { function, .. } => format!("@{function}"),
        }
    }

    /// The target that runs the instruction.
    pub fn target(&self) -> &str {
        match &self.kernel {
            Kernel::Host { .. } => HOST_TARGET,
            Kernel::External { module, .. } => &module.target,
        }
    }
}

impl Plan {
    /// The value whose storage `v` uses (`v` itself unless it is a view).
    pub fn root(&self, v: ValueId) -> ValueId {
        match self.values[v].source {
            Source::View(r) => r,
            _ => v,
        }
    }
}

/// An expression's value during lowering.
#[derive(Clone)]
enum Lowered<'m> {
    Tensor(ValueId),
    Tuple(Vec<Lowered<'m>>),
    /// A local function literal at this id of this function.
    Closure(&'m Function, ExprId),
}

impl Lowered<'_> {
    fn flatten(&self, site: &str, out: &mut Vec<ValueId>) -> Result<(), ExecError> {
        match self {
            Lowered::Tensor(v) => out.push(*v),
            Lowered::Tuple(fields) => {
                for f in fields {
                    f.flatten(site, out)?;
                }
            }
            Lowered::Closure(_, id) => {
                return Err(lowering(
                    site,
                    format!("the function {id} is used as a value; only calls of it can run"),
                ))
            }
        }
        Ok(())
    }

    fn leaves(&self, site: &str) -> Result<Vec<ValueId>, ExecError> {
        let mut out = Vec::new();
        self.flatten(site, &mut out)?;
        Ok(out)
    }
}

fn lowering(site: &str, message: impl Into<String>) -> ExecError {
    ExecError::Lowering {
        site: site.to_string(),
        message: message.into(),
    }
}

/// Lowers `@main` of `module`, whose live nodes must all be typed; calls of external
/// functions run the modules in `externals`.
pub(crate) fn lower(module: &Module, externals: &ExternalModules) -> Result<Plan, ExecError> {
    let main = module.main()?;
    let mut lowerer = Lowerer {
        module,
        externals,
        values: Vec::new(),
        instrs: Vec::new(),
        inputs: Vec::new(),
        stack: vec!["main".to_string()],
    };
    let mut bindings = Vec::with_capacity(main.params.len());
    for &p in &main.params {
        let var = main
            .var(p)
            .ok_or_else(|| lowering("@main", format!("parameter {p} is not a variable")))?;
        let lowered = lowerer.input(&var.name, &var.ty)?;
        bindings.push((p, lowered));
    }
    let result = lowerer.lower_body(main, "@main", main.body, bindings)?;
    let outputs = result.leaves("@main")?;
    let result_type = main
        .ty(main.body)
        .cloned()
        .ok_or_else(|| lowering("@main", "the result is not typed"))?;
    Ok(Plan {
        values: lowerer.values,
        instrs: lowerer.instrs,
        inputs: lowerer.inputs,
        outputs,
        result_type,
    })
}

struct Lowerer<'m> {
    module: &'m Module,
    externals: &'m ExternalModules,
    values: Vec<Value>,
    instrs: Vec<Instr>,
    inputs: Vec<InputInfo>,
    /// Global functions being inlined, outermost first.
    stack: Vec<String>,
}

impl<'m> Lowerer<'m> {
    fn value(&mut self, ty: TensorType, source: Source) -> ValueId {
        self.values.push(Value { ty, source });
        self.values.len() - 1
    }

    /// Input values for a parameter of type `ty`, tuple leaves named `name.i`.
    fn input(&mut self, name: &str, ty: &Type) -> Result<Lowered<'m>, ExecError> {
        Ok(match ty {
            Type::Tensor(t) => {
                let v = self.value(t.clone(), Source::Input(self.inputs.len()));
                self.inputs.push(InputInfo {
                    name: name.to_string(),
                    ty: t.clone(),
                });
                Lowered::Tensor(v)
            }
            Type::Tuple(fields) => Lowered::Tuple(
                fields
                    .iter()
                    .enumerate()
                    .map(|(i, f)| self.input(&format!("{name}.{i}"), f))
                    .collect::<Result<_, _>>()?,
            ),
            Type::Func(_) => {
                return Err(lowering(
                    "@main",
                    format!("parameter '{name}' has function type {ty}"),
                ))
            }
        })
    }

    /// Lowers the expression `root` of `f` with the parameters in `bindings` bound. `scope`
    /// names the inlining chain, ending in the function's name (`@main:%7 > @f`).
    fn lower_body(
        &mut self,
        f: &'m Function,
        scope: &str,
        root: ExprId,
        bindings: Vec<(ExprId, Lowered<'m>)>,
    ) -> Result<Lowered<'m>, ExecError> {
        let mut env: HashMap<ExprId, Lowered<'m>> = bindings.into_iter().collect();
        for id in reachable(f, root, &env) {
            let site = format!("{scope}:{id}");
            let lowered = match f.expr(id) {
                Expr::Var(v) => {
                    return Err(lowering(
                        &site,
                        format!("free variable %{} is not a parameter here", v.name),
                    ))
                }
                Expr::Constant(t) => {
                    Lowered::Tensor(self.value(t.ty().clone(), Source::Constant(t.clone())))
                }
                Expr::Tuple(fields) => {
                    Lowered::Tuple(fields.iter().map(|x| env[x].clone()).collect())
                }
                Expr::TupleGetItem { tuple, index } => match &env[tuple] {
                    Lowered::Tuple(fields) => fields.get(*index).cloned().ok_or_else(|| {
                        lowering(
                            &site,
                            format!(
                                "index {index} out of range for a tuple of {} fields",
                                fields.len()
                            ),
                        )
                    })?,
                    _ => return Err(lowering(&site, format!("{tuple} is not a tuple"))),
                },
                Expr::Function(_) => Lowered::Closure(f, id),
                Expr::Call(call) => {
                    let args: Vec<Lowered<'m>> = call.args.iter().map(|a| env[a].clone()).collect();
                    match &call.callee {
                        Callee::Op(op) => self.lower_op_call(f, id, &site, op, call, &args)?,
                        Callee::Global(name) => self.lower_global_call(&site, name, args)?,
                        Callee::Local(callee) => {
                            self.lower_local_call(scope, &site, &env[callee], args)?
                        }
                    }
                }
            };
            env.insert(id, lowered);
        }
        Ok(env[&root].clone())
    }

    fn lower_global_call(
        &mut self,
        site: &str,
        name: &str,
        args: Vec<Lowered<'m>>,
    ) -> Result<Lowered<'m>, ExecError> {
        let callee = self
            .module
            .get(name)
            .ok_or_else(|| ExecError::UnknownGlobal {
                site: site.to_string(),
                name: name.to_string(),
            })?;
        if let Some(target) = target_of(callee) {
            return self.lower_external_call(site, name, target, callee, &args);
        }
        if self.stack.iter().any(|s| s == name) {
            return Err(ExecError::Recursive {
                site: site.to_string(),
                name: name.to_string(),
            });
        }
        let bindings = bind(site, &callee.params, args)?;
        self.stack.push(name.to_string());
        let result = self.lower_body(callee, &format!("{site} > @{name}"), callee.body, bindings);
        self.stack.pop();
        result
    }

    /// One instruction running the compiled module of the external function `name`.
    fn lower_external_call(
        &mut self,
        site: &str,
        name: &str,
        target: &str,
        callee: &Function,
        args: &[Lowered<'m>],
    ) -> Result<Lowered<'m>, ExecError> {
        let module = self
            .externals
            .get(name)
            .ok_or_else(|| ExecError::NoRuntime {
                site: site.to_string(),
                function: name.to_string(),
                target: target.to_string(),
            })?
            .clone();
        if callee.params.len() != args.len() {
            return Err(lowering(
                site,
                format!(
                    "@{name} takes {} argument(s) but {} were given",
                    callee.params.len(),
                    args.len()
                ),
            ));
        }
        let mut inputs = Vec::new();
        for a in args {
            a.flatten(site, &mut inputs)?;
        }
        let result_ty = callee
            .ty(callee.body)
            .ok_or_else(|| lowering(site, format!("the result of @{name} is not typed")))?;
        let outputs: Vec<ValueId> = result_ty
            .flatten_tensors()
            .into_iter()
            .map(|t| self.value(t.clone(), Source::Produced))
            .collect();
        self.instrs.push(Instr {
            kernel: Kernel::External {
                function: name.to_string(),
                module,
            },
            site: site.to_string(),
            inputs,
            outputs: outputs.clone(),
            joins_in_order: false,
        });
        rebuild(result_ty, &mut outputs.into_iter())
            .ok_or_else(|| lowering(site, format!("@{name} returns {result_ty}, not tensors")))
    }

    fn lower_local_call(
        &mut self,
        scope: &str,
        site: &str,
        callee: &Lowered<'m>,
        args: Vec<Lowered<'m>>,
    ) -> Result<Lowered<'m>, ExecError> {
        let Lowered::Closure(f, lit_id) = *callee else {
            return Err(lowering(site, "the callee is not a function"));
        };
        let lit = f
            .expr(lit_id)
            .as_function()
            .ok_or_else(|| lowering(site, "the callee is not a function literal"))?;
        let bindings = bind(site, &lit.params, args)?;
        // The literal lives in the arena of the function being lowered, so the inner scope
        // keeps that function's name.
        let fname = scope.rsplit(" > ").next().unwrap_or(scope);
        self.lower_body(f, &format!("{site} > {fname}"), lit.body, bindings)
    }

    fn lower_op_call(
        &mut self,
        f: &Function,
        id: ExprId,
        site: &str,
        op: &Op,
        call: &Call,
        args: &[Lowered<'m>],
    ) -> Result<Lowered<'m>, ExecError> {
        let mut inputs = Vec::new();
        for a in args {
            a.flatten(site, &mut inputs)?;
        }
        let result_ty = f
            .ty(id)
            .ok_or_else(|| lowering(site, format!("{op} call is not typed")))?;
        let out_types: Vec<TensorType> = result_ty.flatten_tensors().into_iter().cloned().collect();
        if op.is_view {
            return self.lower_view(site, op, &inputs, out_types);
        }
        let in_types: Vec<TensorType> = inputs.iter().map(|&v| self.values[v].ty.clone()).collect();
        let kernel =
            promote::host_kernel(op, &call.attrs, &in_types, &out_types).map_err(|source| {
                ExecError::Kernel {
                    op: op.name().to_string(),
                    site: site.to_string(),
                    source,
                }
            })?;
        let joins_in_order = joins_in_order(op, call, &out_types);
        let outputs: Vec<ValueId> = out_types
            .into_iter()
            .map(|t| self.value(t, Source::Produced))
            .collect();
        self.instrs.push(Instr {
            kernel: Kernel::Host {
                op: op.clone(),
                kernel,
            },
            site: site.to_string(),
            inputs,
            outputs: outputs.clone(),
            joins_in_order,
        });
        rebuild(result_ty, &mut outputs.into_iter())
            .ok_or_else(|| lowering(site, format!("{op} returns {result_ty}, not tensors")))
    }

    /// A view op: its single output aliases the first input's storage.
    fn lower_view(
        &mut self,
        site: &str,
        op: &Op,
        inputs: &[ValueId],
        out_types: Vec<TensorType>,
    ) -> Result<Lowered<'m>, ExecError> {
        let (Some(&base), [out]) = (inputs.first(), out_types.as_slice()) else {
            return Err(lowering(
                site,
                format!("view op {op} must map one input to one tensor output"),
            ));
        };
        let base_ty = &self.values[base].ty;
        if base_ty.size_bytes() != out.size_bytes() {
            return Err(lowering(
                site,
                format!("view op {op} maps {base_ty} to {out}, which differ in size"),
            ));
        }
        let root = match self.values[base].source {
            Source::View(r) => r,
            _ => base,
        };
        Ok(Lowered::Tensor(self.value(out.clone(), Source::View(root))))
    }
}

/// True when `op` is a `concatenate` (attributes `attrs`, result `out`) whose parts are
/// contiguous, consecutive byte ranges of its result: every dimension before its axis has
/// extent 1.
fn joins_in_order(op: &Op, call: &Call, out: &[TensorType]) -> bool {
    let [out] = out else {
        return false;
    };
    op.name() == "concatenate"
        && call
            .attrs
            .get_int("axis")
            .and_then(|a| byoc_ir::dims::axis(a, out.rank()))
            .is_some_and(|axis| out.shape[..axis].iter().all(|&d| d == 1))
}

/// Pairs parameters with arguments.
fn bind<'m>(
    site: &str,
    params: &[ExprId],
    args: Vec<Lowered<'m>>,
) -> Result<Vec<(ExprId, Lowered<'m>)>, ExecError> {
    if params.len() != args.len() {
        return Err(lowering(
            site,
            format!(
                "the callee takes {} argument(s) but {} were given",
                params.len(),
                args.len()
            ),
        ));
    }
    Ok(params.iter().copied().zip(args).collect())
}

/// The nodes `root` depends on, in arena (topological) order, stopping at `bound` ids and at
/// function literals (whose bodies are lowered per call).
fn reachable(f: &Function, root: ExprId, bound: &HashMap<ExprId, Lowered<'_>>) -> Vec<ExprId> {
    let mut seen = std::collections::HashSet::new();
    let mut stack = vec![root];
    while let Some(id) = stack.pop() {
        if bound.contains_key(&id) || !seen.insert(id) {
            continue;
        }
        if !matches!(f.expr(id), Expr::Function(_)) {
            stack.extend(f.expr(id).operands());
        }
    }
    let mut ids: Vec<ExprId> = seen.into_iter().collect();
    ids.sort_unstable();
    ids
}

/// Regroups flat leaf values into the tuple structure of `ty`; `None` if `ty` holds a
/// function type.
fn rebuild<'m>(ty: &Type, leaves: &mut impl Iterator<Item = ValueId>) -> Option<Lowered<'m>> {
    match ty {
        Type::Tensor(_) => leaves.next().map(Lowered::Tensor),
        Type::Tuple(fields) => fields
            .iter()
            .map(|f| rebuild(f, leaves))
            .collect::<Option<_>>()
            .map(Lowered::Tuple),
        Type::Func(_) => None,
    }
}
