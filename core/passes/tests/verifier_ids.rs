//! Verifier errors, as the pass manager reports them, name the global function and use the ids
//! of the printed text (`print_module`, what `byoc inspect` shows), not arena slots: each test
//! builds a function whose arena order differs from the printed numbering and finds the id of
//! the message at the offending binding of the printed module.

use byoc_ir::text::{print_module, printed_ids};
use byoc_ir::{Attrs, DType, ExprId, FunctionBuilder, IrError, Module, Type, VerifyError};
use byoc_passes::{InferType, Pass, PassContext, PassError, PassManager};

fn ty(shape: &[usize]) -> Type {
    Type::tensor(shape.to_vec(), DType::Float32)
}

fn none() -> Attrs {
    Attrs::new()
}

/// The line of `@function`'s definition in `text` that binds `id` (`  %1 = ...;`).
fn binding_line<'t>(text: &'t str, function: &str, id: &str) -> Option<&'t str> {
    let def = format!("def @{function}(");
    let start = text.find(&def)?;
    let body = &text[start..];
    let end = body[1..].find("\ndef @").map_or(body.len(), |e| e + 1);
    body[..end]
        .lines()
        .find(|l| l.trim_start().starts_with(&format!("{id} = ")))
}

/// `@main(%x) = nn.relu(%x)` and `@helper(%x, %y)`, whose arena is
/// `x, relu(x) (dead), y, p, relu(p), fn (p) {relu(p)}, add(x, y), lit(add)`. Printed:
///
/// ```text
/// def @helper(%x: ..., %y: ...) {
///   %0 = fn (%p: ...) {
///     %1 = nn.relu(%p);
///     %1
///   };
///   %2 = add(%x, %y);
///   %3 = %0(%2);
///   %3
/// }
/// ```
///
/// Returns the module and the arena id of `relu(p)` (printed `%1`).
fn two_functions() -> (Module, ExprId) {
    let mut b = FunctionBuilder::new();
    let x = b.param("x", ty(&[2]));
    b.call("nn.relu", &[x], none()).unwrap();
    let y = b.param("y", ty(&[2]));
    let p = b.param("p", ty(&[2]));
    let inner = b.call("nn.relu", &[p], none()).unwrap();
    let lit = b.function(&[p], inner, none()).unwrap();
    let sum = b.call("add", &[x, y], none()).unwrap();
    let out = b.call_local(lit, &[sum]).unwrap();
    let helper = b.finish(vec![x, y], out, none()).unwrap();

    let mut b = FunctionBuilder::new();
    let x = b.param("x", ty(&[2]));
    let r = b.call("nn.relu", &[x], none()).unwrap();
    let mut m = Module::from_main(b.finish(vec![x], r, none()).unwrap());
    m.add("helper", helper).unwrap();
    (m, inner)
}

/// A broken pass: records a wrong type at one expression.
struct CorruptType {
    function: &'static str,
    at: ExprId,
}

impl Pass for CorruptType {
    fn name(&self) -> &'static str {
        "corrupt-type"
    }

    fn run(&self, module: &mut Module, _cx: &mut PassContext) -> Result<(), PassError> {
        let f = module.get_mut(self.function).expect("the function exists");
        f.set_ty(self.at, ty(&[3]));
        Ok(())
    }
}

#[test]
fn printed_ids_are_the_names_print_module_prints() {
    let (m, inner) = two_functions();
    let helper = m.get("helper").unwrap();
    let ids = printed_ids(helper);
    let names: Vec<Option<&str>> = helper.ids().map(|id| ids.get(id)).collect();
    assert_eq!(
        names,
        [
            Some("%x"),
            None,
            Some("%y"),
            Some("%p"),
            Some("%1"),
            Some("%0"),
            Some("%2"),
            Some("%3")
        ]
    );
    assert_eq!(ids.get(inner), Some("%1"));
    assert_eq!(ids.render(ExprId::from_index(1)), "#1 (not printed)");
    assert_eq!(ids.get(ExprId::from_index(99)), None);
    // Every printed binding is where the map says.
    let text = print_module(&m);
    for id in helper.ids() {
        let Some(name) = ids.get(id) else { continue };
        if helper.var(id).is_none() {
            assert!(
                binding_line(&text, "helper", name).is_some(),
                "{name} is not bound in\n{text}"
            );
        }
    }
    assert_eq!(
        binding_line(&text, "helper", "%1"),
        Some("    %1 = nn.relu(%p);")
    );
}

#[test]
fn stale_type_names_the_function_and_the_printed_id() {
    let (mut m, inner) = two_functions();
    assert_eq!(inner.index(), 4, "arena slot and printed id differ");
    let mut pm = PassManager::new()
        .pass(InferType)
        .pass(CorruptType {
            function: "helper",
            at: inner,
        })
        .verify_each(true);
    let err = pm.run(&mut m, &mut PassContext::new()).unwrap_err();
    assert_eq!(
        err.to_string(),
        "in pass corrupt-type: in @helper, at %1: recorded type Tensor[(3), float32] but \
         inference gives Tensor[(2), float32]"
    );
    let PassError::InPass { source, .. } = &err else {
        panic!("not wrapped: {err:?}")
    };
    let PassError::StaleType { function, at, .. } = source.as_ref() else {
        panic!("not a stale type: {source:?}")
    };
    let text = print_module(&m);
    let line = binding_line(&text, function, at).expect("the id is printed");
    assert_eq!(line, "    %1 = nn.relu(%p);");
}

/// `@main(%x)` over the arena `x, relu(x) (dead), p, relu(p), fn (p) {relu(p)}, lit(x),
/// add(relu(p), x), (lit(x), add)`, built with body `lit(x)`; [`Escape`] makes the tuple the
/// body, so the global body uses the literal's parameter `p`. Printed:
///
/// ```text
/// def @main(%x: ...) {
///   %0 = nn.relu(%p);
///   %1 = fn (%p: ...) {
///     %0
///   };
///   %2 = %1(%x);
///   %3 = add(%0, %x);
///   %4 = (%2, %3);
///   %4
/// }
/// ```
fn escaping_param() -> Module {
    let mut b = FunctionBuilder::new();
    let x = b.param("x", ty(&[2]));
    b.call("nn.relu", &[x], none()).unwrap();
    let p = b.param("p", ty(&[2]));
    let inner = b.call("nn.relu", &[p], none()).unwrap();
    let lit = b.function(&[p], inner, none()).unwrap();
    let call = b.call_local(lit, &[x]).unwrap();
    let sum = b.call("add", &[inner, x], none()).unwrap();
    b.tuple(&[call, sum]).unwrap();
    Module::from_main(b.finish(vec![x], call, none()).unwrap())
}

/// A broken pass: makes the last node of `@main`'s arena its body.
struct Escape;

impl Pass for Escape {
    fn name(&self) -> &'static str {
        "escape"
    }

    fn run(&self, module: &mut Module, _cx: &mut PassContext) -> Result<(), PassError> {
        let f = module.get_mut("main").expect("@main exists");
        f.body = ExprId::from_index(f.len() - 1);
        Ok(())
    }
}

#[test]
fn verify_errors_name_the_function_and_the_printed_ids() {
    let mut m = escaping_param();
    let mut pm = PassManager::new().pass(Escape).verify_each(true);
    let err = pm.run(&mut m, &mut PassContext::new()).unwrap_err();
    assert_eq!(
        err.to_string(),
        "in pass escape: the module does not verify: in @main, at %p: variable %p belongs to \
         local function %1 but is used outside it"
    );
    let text = print_module(&m);
    assert_eq!(
        binding_line(&text, "main", "%1"),
        Some("  %1 = fn (%p: Tensor[(2), float32]) {")
    );
    assert!(binding_line(&text, "main", "%3")
        .unwrap()
        .contains("add(%0, %x)"));

    let err: VerifyError = m.verify().unwrap_err();
    assert_eq!(err.function(), "main");
    assert_eq!(err.at(), Some("%p"));
    assert_eq!(
        err.message(),
        "variable %p belongs to local function %1 but is used outside it"
    );
    // The underlying error keeps arena ids.
    assert_eq!(
        err.error().to_string(),
        "variable %p (%2) belongs to local function %4 but is used outside it"
    );
}

#[test]
fn unknown_global_names_the_printed_call() {
    let mut b = FunctionBuilder::new();
    let x = b.param("x", ty(&[2]));
    b.call("nn.relu", &[x], none()).unwrap();
    let call = b.call_global("missing", &[x]).unwrap();
    let m = Module::from_main(b.finish(vec![x], call, none()).unwrap());
    let err = m.verify().unwrap_err();
    assert_eq!(
        err.to_string(),
        "in @main, at %0: call of unknown global function @missing"
    );
    assert_eq!(err.error(), &IrError::UnknownGlobal("missing".to_string()));
    assert_eq!(
        binding_line(&print_module(&m), "main", "%0"),
        Some("  %0 = @missing(%x);")
    );
}

#[test]
fn a_variable_printed_under_another_name_shows_both() {
    // `a.b` prints as `%a_b`; it is made a parameter of `@main` and of the literal.
    let mut b = FunctionBuilder::new();
    let x = b.param("x", ty(&[2]));
    let p = b.param("a.b", ty(&[2]));
    let inner = b.call("nn.relu", &[p], none()).unwrap();
    let lit = b.function(&[p], inner, none()).unwrap();
    let call = b.call_local(lit, &[x]).unwrap();
    let mut f = b.finish(vec![x], call, none()).unwrap();
    f.params.push(p);
    let err = Module::from_main(f).verify().unwrap_err();
    assert_eq!(
        err.to_string(),
        "in @main, at %a_b: variable %a.b (%a_b) is a parameter of more than one function"
    );
}
