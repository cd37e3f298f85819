//! Type inference: fills the checked type of every live expression of every function (the
//! `infer-type` pass of byoc-passes runs [`infer_types`]).
//!
//! Needs: a verified module. Holds after: every live node of every function has `ty` set, and
//! every call's arguments match its callee (op type relation, global or local function
//! parameter types). Global functions are inferred callees first; recursion is rejected.
//! Idempotent. Cost: linear in the module size (one type-relation call per op call).

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use thiserror::Error;

use crate::op::TypeError;
use crate::{Callee, Expr, ExprId, FuncType, Function, Module, Span, Type};

/// A type error located in a function.
#[derive(Debug, Error, Clone, PartialEq)]
pub struct TypeInferError {
    /// The global function.
    pub function: String,
    /// The expression.
    pub at: ExprId,
    /// Its source position, when parsed from text.
    pub span: Option<Span>,
    /// What is wrong.
    pub error: TypeError,
}

impl fmt::Display for TypeInferError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.span {
            Some(span) => write!(f, "{span}: in @{}: {}", self.function, self.error),
            None => write!(f, "in @{}, at {}: {}", self.function, self.at, self.error),
        }
    }
}

/// Infers the types of every function of `module`.
pub fn infer_types(module: &mut Module) -> Result<(), TypeInferError> {
    let order = callee_first_order(module)?;
    let mut signatures: BTreeMap<String, FuncType> = BTreeMap::new();
    for name in order {
        let f = module.get_mut(&name).expect("name comes from the module");
        infer_function(&name, f, &signatures)?;
        let sig = f.func_type().expect("body type was just inferred");
        signatures.insert(name, sig);
    }
    Ok(())
}

/// Infers the types of every function of `module` unless every live expression already has
/// one (passes keep types up to date, so a module coming out of one is fully typed and is not
/// inferred again).
pub fn infer_missing_types(module: &mut Module) -> Result<(), TypeInferError> {
    let typed = |f: &Function| f.live_ids().into_iter().all(|id| f.ty(id).is_some());
    if module.functions().all(|(_, f)| typed(f)) {
        return Ok(());
    }
    infer_types(module)
}

/// Infers the types of one function, given the signatures of the globals it calls.
pub fn infer_function(
    name: &str,
    f: &mut Function,
    globals: &BTreeMap<String, FuncType>,
) -> Result<(), TypeInferError> {
    for id in f.live_ids() {
        let node = f.node(id);
        let located = |error: TypeError| TypeInferError {
            function: name.to_string(),
            at: id,
            span: node.span,
            error,
        };
        let ty = node_type(f, id, globals).map_err(located)?;
        f.set_ty(id, ty);
    }
    Ok(())
}

fn arg_types(f: &Function, args: &[ExprId]) -> Vec<Type> {
    args.iter()
        .map(|&a| f.ty(a).cloned().expect("operands are inferred first"))
        .collect()
}

fn check_args(what: &str, params: &[Type], args: &[Type]) -> Result<(), TypeError> {
    if params.len() != args.len() {
        return Err(TypeError::new(
            what,
            format!(
                "expects {} argument(s) but got {}",
                params.len(),
                args.len()
            ),
        ));
    }
    for (i, (p, a)) in params.iter().zip(args).enumerate() {
        if p != a {
            return Err(TypeError::new(
                what,
                format!("argument {i} has type {a} but the parameter is {p}"),
            ));
        }
    }
    Ok(())
}

fn node_type(
    f: &Function,
    id: ExprId,
    globals: &BTreeMap<String, FuncType>,
) -> Result<Type, TypeError> {
    let ty = |x: ExprId| f.ty(x).cloned().expect("operands are inferred first");
    Ok(match f.expr(id) {
        Expr::Var(v) => {
            crate::memory::check_type(&v.ty)
                .map_err(|e| TypeError::new(format!("%{}", v.name), format!("parameter {e}")))?;
            v.ty.clone()
        }
        Expr::Constant(t) => Type::Tensor(t.ty().clone()),
        Expr::Tuple(fields) => Type::Tuple(fields.iter().map(|&x| ty(x)).collect()),
        Expr::TupleGetItem { tuple, index } => match ty(*tuple) {
            Type::Tuple(fields) => fields.get(*index).cloned().ok_or_else(|| {
                TypeError::new(
                    "tuple-get-item",
                    format!(
                        "index {index} out of range for a tuple of {} fields",
                        fields.len()
                    ),
                )
            })?,
            other => {
                return Err(TypeError::new(
                    "tuple-get-item",
                    format!("{other} is not a tuple"),
                ))
            }
        },
        Expr::Function(lit) => Type::Func(FuncType {
            params: lit.params.iter().map(|&p| ty(p)).collect(),
            ret: Box::new(ty(lit.body)),
        }),
        Expr::Call(call) => {
            let args = arg_types(f, &call.args);
            match &call.callee {
                Callee::Op(op) => op.infer_type(&args, &call.attrs)?,
                Callee::Global(g) => {
                    let sig = globals.get(g).ok_or_else(|| {
                        TypeError::new(format!("@{g}"), "call of an unknown global function")
                    })?;
                    check_args(&format!("@{g}"), &sig.params, &args)?;
                    (*sig.ret).clone()
                }
                Callee::Local(l) => match ty(*l) {
                    Type::Func(sig) => {
                        check_args(&format!("local function {l}"), &sig.params, &args)?;
                        *sig.ret
                    }
                    other => {
                        return Err(TypeError::new(
                            "call",
                            format!("callee {l} has type {other}, not a function"),
                        ))
                    }
                },
            }
        }
    })
}

/// Global function names ordered so that callees come before callers.
fn callee_first_order(module: &Module) -> Result<Vec<String>, TypeInferError> {
    let calls: BTreeMap<&str, BTreeSet<String>> = module
        .functions()
        .map(|(name, f)| {
            let callees = f
                .iter()
                .filter_map(|(_, n)| match &n.expr {
                    Expr::Call(c) => match &c.callee {
                        Callee::Global(g) => Some(g.clone()),
                        _ => None,
                    },
                    _ => None,
                })
                .collect();
            (name, callees)
        })
        .collect();
    let mut order = Vec::new();
    let mut state: BTreeMap<&str, u8> = BTreeMap::new(); // 1 = on stack, 2 = done
    fn visit<'m>(
        name: &'m str,
        calls: &'m BTreeMap<&'m str, BTreeSet<String>>,
        state: &mut BTreeMap<&'m str, u8>,
        order: &mut Vec<String>,
    ) -> Result<(), TypeInferError> {
        match state.get(name) {
            Some(2) => return Ok(()),
            Some(_) => {
                return Err(TypeInferError {
                    function: name.to_string(),
                    at: ExprId::from_index(0),
                    span: None,
                    error: TypeError::new(
                        format!("@{name}"),
                        "recursive global functions are not supported",
                    ),
                })
            }
            None => {}
        }
        state.insert(name, 1);
        for callee in &calls[name] {
            if let Some((key, _)) = calls.get_key_value(callee.as_str()) {
                visit(key, calls, state, order)?;
            }
        }
        state.insert(name, 2);
        order.push(name.to_string());
        Ok(())
    }
    for name in calls.keys() {
        visit(name, &calls, &mut state, &mut order)?;
    }
    Ok(order)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Attrs, DType, FunctionBuilder};

    #[test]
    fn infers_calls_tuples_and_local_functions() {
        let mut b = FunctionBuilder::new();
        let x = b.param("x", Type::tensor([2, 3], DType::Float32));
        let y = b.param("y", Type::tensor([3], DType::Float32));
        let a = b.param("a", Type::tensor([2, 3], DType::Float32));
        let r = b.call("nn.relu", &[a], Attrs::new()).unwrap();
        let lit = b
            .function(&[a], r, Attrs::new().with("Composite", "t.relu"))
            .unwrap();
        let s = b.call("add", &[x, y], Attrs::new()).unwrap();
        let c = b.call_local(lit, &[s]).unwrap();
        let t = b.tuple(&[c, s]).unwrap();
        let g = b.tuple_get_item(t, 1).unwrap();
        let f = b.finish(vec![x, y], g, Attrs::new()).unwrap();
        let mut m = Module::from_main(f);
        infer_types(&mut m).unwrap();
        let main = m.main().unwrap();
        assert_eq!(
            main.ty(main.body).unwrap().to_string(),
            "Tensor[(2, 3), float32]"
        );
        assert_eq!(
            main.ty(lit).unwrap().to_string(),
            "fn (Tensor[(2, 3), float32]) -> Tensor[(2, 3), float32]"
        );
    }

    #[test]
    fn errors_name_the_op_and_location() {
        let mut b = FunctionBuilder::new();
        let x = b.param("x", Type::tensor([2, 3], DType::Float32));
        let y = b.param("y", Type::tensor([4], DType::Float32));
        let s = b.call("add", &[x, y], Attrs::new()).unwrap();
        let f = b.finish(vec![x, y], s, Attrs::new()).unwrap();
        let mut m = Module::from_main(f);
        let err = infer_types(&mut m).unwrap_err();
        assert_eq!(
            err.to_string(),
            "in @main, at %2: add: shapes [2, 3] and [4] do not broadcast (dimension 1: 3 vs 4)"
        );
    }
}
