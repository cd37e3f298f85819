//! The printer of the text format: deterministic Relay-style text that [`super::parse_module`]
//! reads back to a structurally equal module.
//!
//! Per function, every live node except variables gets one binding `%N = ...;`, numbered
//! afresh in print order; parameters keep their names (made unique and never all-digit, so they
//! cannot clash with binding numbers). Each node is printed in the scope it belongs to: the
//! innermost function (global or local literal) enclosing all its users. Because local functions
//! are closed, only variable-free nodes (constants and what is computed from them) can be shared
//! between scopes; they are printed once in the common enclosing scope, before the literals
//! that use them. Call attributes equal to the op's schema default are left out (the reader
//! fills them back in). Cost: linear in the number of nodes times the scope nesting depth.
//!
//! [`printed_ids`] gives the names this numbering assigns (`%3`, `%x`) by arena slot, so
//! messages about a function (verifier errors) can use the ids of its printed text.

use std::collections::HashSet;
use std::fmt::Write;

use super::literal;
use crate::tensor::Tensor;
use crate::{escape, AttrValue, Attrs, Callee, Expr, ExprId, Function, Module, Type};

/// How to print.
#[derive(Clone, Debug, Default)]
pub struct PrintOptions {
    /// Append `/* ty=... */` to each binding whose node has an inferred type, and `-> T` to
    /// functions whose body has one.
    pub show_types: bool,
}

/// Prints a module with default options.
pub fn print_module(module: &Module) -> String {
    print_module_with(module, &PrintOptions::default())
}

/// Prints a module.
pub fn print_module_with(module: &Module, options: &PrintOptions) -> String {
    let mut out = String::from("#[version = \"0.0.5\"]\n");
    for (name, f) in module.functions() {
        FnPrinter::new(f, options).def(name, &mut out);
    }
    out
}

/// The name [`print_module`] prints for each node of a global function, by arena slot.
///
/// Bindings are `%0`, `%1`, ... in print order and variables keep their (sanitized, unique)
/// names such as `%x`; nodes the printer leaves out (dead ones) have no name. Built by the
/// printer itself, so the names are those of `print_module` output, whatever the arena order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PrintedIds {
    names: Vec<Option<String>>,
}

impl PrintedIds {
    /// The printed name of `id` (with its `%`), or `None` when the printer does not print it
    /// or `id` is outside the arena.
    pub fn get(&self, id: ExprId) -> Option<&str> {
        self.names.get(id.index())?.as_deref()
    }

    /// The printed name of `id`, or `#<slot> (not printed)` for a node the printer leaves out,
    /// so a message can always name it.
    pub fn render(&self, id: ExprId) -> String {
        match self.get(id) {
            Some(name) => name.to_string(),
            None => format!("#{} (not printed)", id.index()),
        }
    }
}

/// The printed names of `f`'s nodes, as `print_module` numbers them (see [`PrintedIds`]).
///
/// Runs the printer's traversal with the text thrown away and constants not formatted (large
/// weights cost nothing). A function whose body or parameters lie outside its arena (which
/// the printer cannot print) gets no names.
pub fn printed_ids(f: &Function) -> PrintedIds {
    let n = f.len();
    if f.body.index() >= n || f.params.iter().any(|p| p.index() >= n) {
        return PrintedIds {
            names: vec![None; n],
        };
    }
    let options = PrintOptions::default();
    let mut printer = FnPrinter::new(f, &options);
    printer.constants = false;
    printer.global_scope(&mut String::new());
    let mut names: Vec<Option<String>> = vec![None; n];
    for id in f.live_ids() {
        let name = &printer.names[id.index()];
        if !name.is_empty() {
            names[id.index()] = Some(format!("%{name}"));
        }
    }
    PrintedIds { names }
}

/// Scope index 0 is the global function; each local literal opens one more.
struct Scope {
    parent: usize,
    depth: usize,
}

struct FnPrinter<'f> {
    f: &'f Function,
    options: &'f PrintOptions,
    /// The printed name of each node (params from the start, bindings as they are printed).
    names: Vec<String>,
    /// The nodes (other than variables) bound in each scope, in arena order.
    members: Vec<Vec<ExprId>>,
    /// The scope a local literal opens, by arena slot.
    opens: Vec<Option<usize>>,
    next: usize,
    /// Whether constants are formatted (off when only the names are wanted).
    constants: bool,
}

impl<'f> FnPrinter<'f> {
    fn new(f: &'f Function, options: &'f PrintOptions) -> Self {
        let n = f.len();
        let live = f.live_ids();
        let mut scopes = vec![Scope {
            parent: 0,
            depth: 0,
        }];
        let mut scope_of: Vec<Option<usize>> = vec![None; n];
        let mut opens = vec![None; n];
        scope_of[f.body.index()] = Some(0);
        for &p in &f.params {
            scope_of[p.index()] = Some(0);
        }
        // Users precede operands in reverse arena order, so a node's scope is final (the common
        // ancestor of its users' scopes) by the time it is reached.
        for &id in live.iter().rev() {
            let s = scope_of[id.index()].unwrap_or(0);
            match f.expr(id) {
                Expr::Function(lit) => {
                    let inner = scopes.len();
                    scopes.push(Scope {
                        parent: s,
                        depth: scopes[s].depth + 1,
                    });
                    opens[id.index()] = Some(inner);
                    for &p in &lit.params {
                        scope_of[p.index()] = Some(inner);
                    }
                    join(&scopes, &mut scope_of[lit.body.index()], inner);
                }
                e => {
                    for o in e.operands() {
                        join(&scopes, &mut scope_of[o.index()], s);
                    }
                }
            }
        }
        let mut members = vec![Vec::new(); scopes.len()];
        for &id in &live {
            if f.var(id).is_none() {
                members[scope_of[id.index()].unwrap_or(0)].push(id);
            }
        }
        FnPrinter {
            f,
            options,
            names: param_names(f),
            members,
            opens,
            next: 0,
            constants: true,
        }
    }

    fn def(mut self, name: &str, out: &mut String) {
        let _ = write!(out, "def @{name}(");
        self.signature(&self.f.params, &self.f.attrs, out);
        out.push(')');
        if let Some(ty) = self.f.ty(self.f.body).filter(|_| self.options.show_types) {
            let _ = write!(out, " -> {ty}");
        }
        out.push_str(" {\n");
        self.global_scope(out);
        out.push_str("}\n");
    }

    /// The global function's bindings and result: the one traversal that numbers the nodes.
    fn global_scope(&mut self, out: &mut String) {
        self.scope(0, self.f.body, 1, out);
    }

    /// `%x: T, %y: T, Attr=value` (without the parentheses).
    fn signature(&self, params: &[ExprId], attrs: &Attrs, out: &mut String) {
        let mut items: Vec<String> = params
            .iter()
            .map(|&p| {
                let ty = self.f.var(p).map(|v| v.ty.to_string()).unwrap_or_default();
                format!("%{}: {ty}", self.names[p.index()])
            })
            .collect();
        items.extend(attrs.iter().map(|(k, v)| format!("{k}={}", attr_value(v))));
        out.push_str(&items.join(", "));
    }

    /// The bindings of `scope` and then its result, each line indented `level` steps.
    fn scope(&mut self, scope: usize, body: ExprId, level: usize, out: &mut String) {
        let members = std::mem::take(&mut self.members[scope]);
        for &id in &members {
            self.binding(id, level, out);
        }
        let _ = writeln!(out, "{}%{}", indent(level), self.names[body.index()]);
    }

    fn binding(&mut self, id: ExprId, level: usize, out: &mut String) {
        let name = self.next.to_string();
        self.next += 1;
        self.names[id.index()] = name.clone();
        let pad = indent(level);
        let _ = write!(out, "{pad}%{name} = ");
        let text = self.expr(id, level);
        let _ = write!(out, "{text};");
        if let Some(ty) = self.f.ty(id).filter(|_| self.options.show_types) {
            let _ = write!(out, " /* ty={ty} */");
        }
        out.push('\n');
    }

    fn name(&self, id: ExprId) -> String {
        format!("%{}", self.names[id.index()])
    }

    fn args(&self, args: &[ExprId]) -> Vec<String> {
        args.iter().map(|&a| self.name(a)).collect()
    }

    /// The right-hand side of `id`'s binding; a local literal's scope is printed inside it.
    fn expr(&mut self, id: ExprId, level: usize) -> String {
        let f = self.f;
        match f.expr(id) {
            Expr::Var(_) => self.name(id),
            Expr::Constant(t) if self.constants => constant(t),
            Expr::Constant(_) => String::new(),
            Expr::Call(call) => {
                let mut items = self.args(&call.args);
                let callee = match &call.callee {
                    Callee::Op(op) => {
                        let schema: Vec<&str> = op.attrs.iter().map(|d| d.name).collect();
                        // Schema order first (Relay's declaration order), then anything else.
                        let mut names: Vec<&str> = schema
                            .iter()
                            .copied()
                            .filter(|n| call.attrs.contains(n))
                            .collect();
                        names.extend(
                            call.attrs
                                .iter()
                                .map(|(k, _)| k)
                                .filter(|k| !schema.contains(k)),
                        );
                        for n in names {
                            let Some(v) = call.attrs.get(n) else { continue };
                            if op.default_attr(n) != Some(v) {
                                items.push(format!("{n}={}", attr_value(v)));
                            }
                        }
                        op.name().to_string()
                    }
                    Callee::Global(g) => format!("@{g}"),
                    Callee::Local(l) => self.name(*l),
                };
                format!("{callee}({})", items.join(", "))
            }
            Expr::Tuple(fields) => {
                let items = self.args(fields);
                if items.len() == 1 {
                    format!("({},)", items[0])
                } else {
                    format!("({})", items.join(", "))
                }
            }
            Expr::TupleGetItem { tuple, index } => format!("{}.{index}", self.name(*tuple)),
            Expr::Function(lit) => {
                let inner =
                    self.opens[id.index()].expect("`new` opens a scope for every live literal");
                let mut out = String::from("fn (");
                self.signature(&lit.params, &lit.attrs, &mut out);
                out.push_str(") {\n");
                self.scope(inner, lit.body, level + 1, &mut out);
                out.push_str(&indent(level));
                out.push('}');
                out
            }
        }
    }
}

/// Moves `slot` to the common ancestor of its scope and `s`.
fn join(scopes: &[Scope], slot: &mut Option<usize>, s: usize) {
    let Some(mut a) = *slot else {
        *slot = Some(s);
        return;
    };
    let mut b = s;
    while a != b {
        if scopes[a].depth >= scopes[b].depth {
            a = scopes[a].parent;
        } else {
            b = scopes[b].parent;
        }
    }
    *slot = Some(a);
}

/// Parameter names: sanitized to `[A-Za-z0-9_]`, never all digits, unique in the function.
fn param_names(f: &Function) -> Vec<String> {
    let mut names = vec![String::new(); f.len()];
    let mut used = HashSet::new();
    for (id, node) in f.iter() {
        let Some(v) = node.expr.as_var() else {
            continue;
        };
        let mut base: String = v
            .name
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '_' {
                    c
                } else {
                    '_'
                }
            })
            .collect();
        if base.chars().all(|c| c.is_ascii_digit()) {
            base.insert(0, 'p');
        }
        let mut name = base.clone();
        let mut k = 1;
        while !used.insert(name.clone()) {
            name = format!("{base}_{k}");
            k += 1;
        }
        names[id.index()] = name;
    }
    names
}

fn indent(level: usize) -> String {
    "  ".repeat(level)
}

/// An attribute value as the reader reads it back.
fn attr_value(v: &AttrValue) -> String {
    match v {
        AttrValue::Float(x) if x.is_nan() => "nan".to_string(),
        AttrValue::Float(x) if x.is_infinite() => if *x < 0.0 { "-inf" } else { "inf" }.to_string(),
        AttrValue::Float(x) => format!("{x:?}f"),
        AttrValue::Str(s) => format!("\"{}\"", escape(s)),
        AttrValue::List(items) => {
            let items: Vec<String> = items.iter().map(attr_value).collect();
            format!("[{}]", items.join(", "))
        }
        other => other.to_string(),
    }
}

/// A scalar literal where the dtype has a suffix and the value is a plain number, else
/// `const(shape, dtype, fill=v)` when all elements are equal, else the full value list.
fn constant(t: &Tensor) -> String {
    let dtype = t.dtype();
    let size = dtype.size_bytes();
    let bytes = t.as_bytes();
    if t.shape().is_empty() {
        if let Some(suffix) = literal::scalar_suffix(dtype) {
            if literal::is_finite_number(dtype, bytes) {
                return literal::format(dtype, bytes, suffix);
            }
        }
        if dtype == crate::DType::Bool && bytes.first().is_some_and(|&b| b <= 1) {
            return literal::format(dtype, bytes, "");
        }
    }
    let shape = Type::tensor(t.shape().to_vec(), dtype).to_string();
    // `Tensor[(2, 2), float32]` -> `(2, 2), float32`
    let head = shape.trim_start_matches("Tensor[").trim_end_matches(']');
    let mut elems = bytes.chunks_exact(size.max(1));
    if let Some(first) = elems.next() {
        if elems.all(|e| e == first) {
            return format!("const({head}, fill={})", literal::format(dtype, first, ""));
        }
    }
    let values: Vec<String> = bytes
        .chunks_exact(size.max(1))
        .map(|e| literal::format(dtype, e, ""))
        .collect();
    format!("const({head}, [{}])", values.join(", "))
}
