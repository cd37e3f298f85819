//! LLVM IR for fused kernels, optimized and compiled to an object file for the host CPU.
//!
//! Each [`Kernel`] becomes `void SYMBOL(float **bufs, i64 lo, i64 hi)`: `bufs[0]` is the
//! output, `bufs[1 + k]` input `k`, and the call computes positions `lo..hi` of the kernel's
//! iteration space (the runtime splits the range over the executor's threads). That space is
//! the kernel's pieces one after the other (one piece, the whole output in order, for a
//! kernel without concatenation or pad). Per piece, the loop nest walks its part of the range
//! row by row over the piece's collapsed dims ([`crate::kernel`]): per row it derives each
//! load's and the output's base offset from the row index, then an inner loop over the row
//! computes the expression DAG per element with contiguous (stride 1), loop-invariant
//! (stride 0, loaded once per row) or strided loads.
//!
//! A reduction kernel first sets the output positions `lo..hi` to the fold's initial value,
//! then runs its folding loop over the input positions `lo * count..hi * count` (its loop
//! order puts each accumulator row's inputs there), folding each element into its output
//! element: in a register along a row that folds into one output, in the output buffer across
//! a row of neighbouring outputs (which vectorizes). The pieces then rewrite `lo..hi` as the
//! reduction's epilogue, reading the folded value as [`Node::Acc`].
//!
//! A windowed pooling kernel sets the output positions `lo..hi` (whole output planes) to the
//! fold's initial value, then runs its passes in order, each over its box of those planes:
//! one per window tap, folding the tap's value into the outputs it reaches, then an average's
//! divisions; its pieces then rewrite `lo..hi` as the epilogue.
//!
//! A softmax kernel takes two scratch buffers after its inputs (`bufs[1 + inputs]` maxima,
//! `bufs[2 + inputs]` sums, one per line): for the lines of `lo..hi` (whole lines) it folds the
//! maxima, writes the exponentials to the output, folds their sums (the output read as one
//! more buffer), and its pieces then read them.
//!
//! An epilogue kernel (one with an anchor) rewrites a block of its output in place: `bufs[0]`
//! then points at the block holding elements `lo..hi`, so element `i` sits at `bufs[0][i -
//! lo]`, and [`Node::Acc`] loads it before the store overwrites it.
//!
//! The module is optimized with LLVM's `default<O3>` pipeline on a target machine for the
//! host CPU (its name and features as LLVM detects them), so the inner loops are vectorized
//! with the host's vector width. No fast-math flags are set and FP contraction is off
//! (LLVM's default `Standard` fusion only fuses `llvm.fmuladd`, which is never emitted), so
//! `+ - * /`, `max`, `min`, `sqrt` and the rounding ops give exactly the reference kernels'
//! results; `exp`, `log`, `tanh`, `erf` and `power` call the C library's `expf`, `logf`,
//! `tanhf`, `erff` and `powf`, the functions the reference kernels reach (through Rust's `f32`
//! methods, and for `erf` directly).

use inkwell::builder::Builder;
use inkwell::context::Context;
use inkwell::intrinsics::Intrinsic;
use inkwell::module::{Linkage, Module};
use inkwell::passes::PassBuilderOptions;
use inkwell::targets::{
    CodeModel, FileType, InitializationConfig, RelocMode, Target, TargetMachine,
};
use inkwell::types::FloatType;
use inkwell::values::{FloatValue, FunctionValue, IntValue, PointerValue};
use inkwell::{AddressSpace, FloatPredicate, IntPredicate, OptimizationLevel};

use crate::kernel::{Binary, Kernel, Node, Piece, Unary};
use crate::reduction::{Fold, Reduction};

/// A code generation failure (LLVM refused the IR, or the target is unavailable).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("LLVM code generation: {0}")]
pub struct CodegenError(pub String);

fn err(e: impl std::fmt::Display) -> CodegenError {
    CodegenError(e.to_string())
}

/// A target machine for the host CPU: its triple, CPU name and features, PIC code for a
/// shared library.
pub(crate) fn host_machine() -> Result<TargetMachine, CodegenError> {
    Target::initialize_native(&InitializationConfig::default()).map_err(err)?;
    let triple = TargetMachine::get_default_triple();
    let target = Target::from_triple(&triple).map_err(err)?;
    let cpu = TargetMachine::get_host_cpu_name();
    let features = TargetMachine::get_host_cpu_features();
    target
        .create_target_machine(
            &triple,
            &cpu.to_string(),
            &features.to_string(),
            OptimizationLevel::Aggressive,
            RelocMode::PIC,
            CodeModel::Default,
        )
        .ok_or_else(|| CodegenError(format!("no target machine for {}", triple)))
}

/// The optimized LLVM IR (text) of `kernels`, each under its symbol, for inspection and tests.
pub fn emit_ir(kernels: &[(String, Kernel)]) -> Result<String, CodegenError> {
    let context = Context::create();
    let machine = host_machine()?;
    let module = build_module(&context, &machine, kernels)?;
    Ok(module.print_to_string().to_string())
}

/// Compiles `kernels` into one relocatable object file for the host.
pub fn compile_object(kernels: &[(String, Kernel)]) -> Result<Vec<u8>, CodegenError> {
    let context = Context::create();
    let machine = host_machine()?;
    let module = build_module(&context, &machine, kernels)?;
    let buffer = machine
        .write_to_memory_buffer(&module, FileType::Object)
        .map_err(err)?;
    Ok(buffer.as_slice().to_vec())
}

fn build_module<'c>(
    context: &'c Context,
    machine: &TargetMachine,
    kernels: &[(String, Kernel)],
) -> Result<Module<'c>, CodegenError> {
    let module = context.create_module("byoc_host");
    for (symbol, kernel) in kernels {
        Emitter::new(context, &module).kernel(symbol, kernel)?;
    }
    optimize(&module, machine)?;
    Ok(module)
}

/// Verifies `module` and optimizes it with `default<O3>` for `machine` (whose triple and data
/// layout it takes).
pub(crate) fn optimize(module: &Module<'_>, machine: &TargetMachine) -> Result<(), CodegenError> {
    module.set_triple(&machine.get_triple());
    module.set_data_layout(&machine.get_target_data().get_data_layout());
    module.verify().map_err(err)?;
    module
        .run_passes("default<O3>", machine, PassBuilderOptions::create())
        .map_err(err)
}

/// How a piece's values reach the output.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Store {
    /// Stored at their position of the whole output.
    Write,
    /// Stored at their position of a block of the output (an epilogue): `bufs[0]` points at
    /// the block holding positions `lo..hi`.
    Block,
    /// Folded into the output element they belong to (a reduction's folding loop).
    Fold(Fold),
}

/// Emits one kernel function into a module.
struct Emitter<'a, 'c> {
    context: &'c Context,
    module: &'a Module<'c>,
    builder: Builder<'c>,
    f32: FloatType<'c>,
}

impl<'a, 'c> Emitter<'a, 'c> {
    fn new(context: &'c Context, module: &'a Module<'c>) -> Self {
        Emitter {
            context,
            module,
            builder: context.create_builder(),
            f32: context.f32_type(),
        }
    }

    fn i64(&self, v: usize) -> IntValue<'c> {
        self.context.i64_type().const_int(v as u64, false)
    }

    fn signed(&self, v: i64) -> IntValue<'c> {
        self.context.i64_type().const_int(v as u64, true)
    }

    fn kernel(&self, symbol: &str, k: &Kernel) -> Result<FunctionValue<'c>, CodegenError> {
        let ctx = self.context;
        let b = &self.builder;
        let i64t = ctx.i64_type();
        let fptr = self.f32.ptr_type(AddressSpace::default());
        let fn_type = ctx.void_type().fn_type(
            &[
                fptr.ptr_type(AddressSpace::default()).into(),
                i64t.into(),
                i64t.into(),
            ],
            false,
        );
        let function = self
            .module
            .add_function(symbol, fn_type, Some(Linkage::External));
        let param = |n: u32| {
            function
                .get_nth_param(n)
                .ok_or_else(|| err("missing parameter"))
        };
        let bufs = param(0)?.into_pointer_value();
        let lo = param(1)?.into_int_value();
        let hi = param(2)?.into_int_value();

        // entry: load the buffer pointers.
        let entry = ctx.append_basic_block(function, "entry");
        b.position_at_end(entry);
        let n_bufs = 1 + k.input_lens.len() + k.scratch().len();
        let mut ptrs: Vec<PointerValue<'c>> = Vec::with_capacity(n_bufs);
        for i in 0..n_bufs {
            // SAFETY (of the generated code): the runtime passes n_bufs pointers.
            let slot =
                unsafe { b.build_in_bounds_gep(bufs, &[self.i64(i)], "slot") }.map_err(err)?;
            ptrs.push(b.build_load(slot, "buf").map_err(err)?.into_pointer_value());
        }
        if let Some(r) = &k.reduction {
            let count = self.i64(r.count);
            let from = b.build_int_mul(lo, count, "fold_lo").map_err(err)?;
            let to = b.build_int_mul(hi, count, "fold_hi").map_err(err)?;
            self.fold_loop(function, r, &ptrs, (lo, hi), (from, to), k.len)?;
        }
        if let Some(w) = &k.window {
            // The planes of lo..hi (a multiple of whole planes), each pass over its box of
            // every one of them.
            self.fill(function, w.init, &ptrs, (lo, hi), k.len)?;
            let plane = self.i64(w.plane);
            let first = b
                .build_int_unsigned_div(lo, plane, "first_plane")
                .map_err(err)?;
            let last = b
                .build_int_unsigned_div(hi, plane, "last_plane")
                .map_err(err)?;
            for pass in &w.passes {
                let per_plane = self.i64(pass.per_plane);
                let from = b.build_int_mul(first, per_plane, "from").map_err(err)?;
                let to = b.build_int_mul(last, per_plane, "to").map_err(err)?;
                self.piece(
                    function,
                    &pass.piece,
                    &ptrs,
                    (from, to),
                    (0, pass.piece.positions()),
                    Store::Fold(pass.fold),
                )?;
            }
        }
        if let Some(softmax) = &k.softmax {
            // The lines of lo..hi (a multiple of whole lines), each folded twice into its
            // scratch buffer.
            let line = softmax.max.count;
            let first = b
                .build_int_unsigned_div(lo, self.i64(line), "first_line")
                .map_err(err)?;
            let last = b
                .build_int_unsigned_div(hi, self.i64(line), "last_line")
                .map_err(err)?;
            let scratch = 1 + k.input_lens.len();
            let lines = k.len / line;
            let mut into = ptrs.clone();
            into[0] = ptrs[scratch];
            self.fold_loop(
                function,
                &softmax.max,
                &into,
                (first, last),
                (lo, hi),
                lines,
            )?;
            self.piece(
                function,
                &softmax.exp,
                &ptrs,
                (lo, hi),
                (0, k.len),
                Store::Write,
            )?;
            // The sum folds the output's exponentials, read as the buffer after the scratch.
            into[0] = ptrs[scratch + 1];
            into.push(ptrs[0]);
            self.fold_loop(
                function,
                &softmax.sum,
                &into,
                (first, last),
                (lo, hi),
                lines,
            )?;
        }
        // Each piece walks the part of lo..hi inside its own range of the iteration space.
        let mut start = 0usize;
        for piece in &k.pieces {
            let end = start + piece.positions();
            self.piece(
                function,
                piece,
                &ptrs,
                (lo, hi),
                (start, end),
                if k.anchor.is_some() {
                    Store::Block
                } else {
                    Store::Write
                },
            )?;
            start = end;
        }
        b.build_return(None).map_err(err)?;
        Ok(function)
    }

    /// Accumulators `accs` (of `len`) of `bufs[0]` set to `init`.
    fn fill(
        &self,
        function: FunctionValue<'c>,
        init: f32,
        ptrs: &[PointerValue<'c>],
        accs: (IntValue<'c>, IntValue<'c>),
        len: usize,
    ) -> Result<(), CodegenError> {
        let init = Piece {
            dims: vec![len],
            out_offset: 0,
            out_strides: vec![1],
            loads: Vec::new(),
            nodes: vec![Node::Const(init)],
        };
        self.piece(function, &init, ptrs, accs, (0, len), Store::Write)
    }

    /// A reduction's accumulators `accs` (of `len`) of `bufs[0]` set to its initial value,
    /// then its folding loop over positions `inputs` of its input.
    fn fold_loop(
        &self,
        function: FunctionValue<'c>,
        r: &Reduction,
        ptrs: &[PointerValue<'c>],
        accs: (IntValue<'c>, IntValue<'c>),
        inputs: (IntValue<'c>, IntValue<'c>),
        len: usize,
    ) -> Result<(), CodegenError> {
        self.fill(function, r.init, ptrs, accs, len)?;
        let positions = (0, r.piece.positions());
        self.piece(
            function,
            &r.piece,
            ptrs,
            inputs,
            positions,
            Store::Fold(r.fold),
        )
    }

    /// The loops of one piece, whose positions are `start..end` of the kernel's iteration
    /// space, over the part of `lo..hi` inside that range; the builder continues after them.
    /// `store` says how each value reaches the output.
    fn piece(
        &self,
        function: FunctionValue<'c>,
        p: &Piece,
        ptrs: &[PointerValue<'c>],
        (lo, hi): (IntValue<'c>, IntValue<'c>),
        (start, end): (usize, usize),
        store: Store,
    ) -> Result<(), CodegenError> {
        let fold = match store {
            Store::Fold(f) => Some(f),
            _ => None,
        };
        let ctx = self.context;
        let b = &self.builder;
        let i64t = ctx.i64_type();
        let pre = b
            .get_insert_block()
            .ok_or_else(|| err("no insertion block"))?;
        let row_head = ctx.append_basic_block(function, "row_head");
        let row_body = ctx.append_basic_block(function, "row_body");
        let elem = ctx.append_basic_block(function, "elem");
        let row_end = ctx.append_basic_block(function, "row_end");
        let exit = ctx.append_basic_block(function, "piece_end");

        // pre: the piece's range clamped to lo..hi, in piece positions.
        let (start_v, end_v) = (self.i64(start), self.i64(end));
        let clamp = |v: IntValue<'c>, name: &str| -> Result<IntValue<'c>, CodegenError> {
            let below = b
                .build_int_compare(IntPredicate::SLT, v, start_v, "below")
                .map_err(err)?;
            let v = b
                .build_select(below, start_v, v, name)
                .map_err(err)?
                .into_int_value();
            let above = b
                .build_int_compare(IntPredicate::SGT, v, end_v, "above")
                .map_err(err)?;
            let v = b
                .build_select(above, end_v, v, name)
                .map_err(err)?
                .into_int_value();
            b.build_int_sub(v, start_v, name).map_err(err)
        };
        let first = clamp(lo, "first")?;
        let last = clamp(hi, "last")?;
        // Output positions of a block (epilogue) count from lo.
        let block_at = if store == Store::Block {
            Some(b.build_int_sub(self.i64(0), lo, "block_at").map_err(err)?)
        } else {
            None
        };
        b.build_unconditional_branch(row_head).map_err(err)?;

        // row_head: i in first..last, one row (or the rest of one) per trip.
        b.position_at_end(row_head);
        let i = b.build_phi(i64t, "i").map_err(err)?;
        i.add_incoming(&[(&first, pre)]);
        let iv = i.as_basic_value().into_int_value();
        let more = b
            .build_int_compare(IntPredicate::SLT, iv, last, "more")
            .map_err(err)?;
        b.build_conditional_branch(more, row_body, exit)
            .map_err(err)?;

        // row_body: row index, column, count, and each access's base offset.
        b.position_at_end(row_body);
        let inner = *p.dims.last().ok_or_else(|| err("empty iteration space"))?;
        let inner_v = self.i64(inner);
        let row = b.build_int_unsigned_div(iv, inner_v, "row").map_err(err)?;
        let col = b.build_int_unsigned_rem(iv, inner_v, "col").map_err(err)?;
        let left_in_row = b.build_int_sub(inner_v, col, "left").map_err(err)?;
        let left_in_range = b.build_int_sub(last, iv, "rest").map_err(err)?;
        let shorter = b
            .build_int_compare(IntPredicate::ULT, left_in_row, left_in_range, "shorter")
            .map_err(err)?;
        let count = b
            .build_select(shorter, left_in_row, left_in_range, "count")
            .map_err(err)?
            .into_int_value();
        // Row index -> index along each outer dimension.
        let outer = &p.dims[..p.dims.len() - 1];
        let mut idx = vec![self.i64(0); outer.len()];
        let mut rest = row;
        for (d, &extent) in outer.iter().enumerate().rev() {
            let e = self.i64(extent);
            idx[d] = b.build_int_unsigned_rem(rest, e, "idx").map_err(err)?;
            rest = b.build_int_unsigned_div(rest, e, "rest").map_err(err)?;
        }
        // The element an access reads at the row's first position.
        let base = |offset: usize, strides: &[i64]| -> Result<IntValue<'c>, CodegenError> {
            let mut at = self.i64(offset);
            for (d, &s) in strides.iter().enumerate() {
                let i = if d < idx.len() { idx[d] } else { col };
                if s != 0 {
                    let off = b.build_int_mul(i, self.signed(s), "off").map_err(err)?;
                    at = b.build_int_add(at, off, "base").map_err(err)?;
                }
            }
            Ok(at)
        };
        let mut out_base = base(p.out_offset, &p.out_strides)?;
        if let Some(block_at) = block_at {
            out_base = b
                .build_int_add(out_base, block_at, "out_base")
                .map_err(err)?;
        }
        let bases = p
            .loads
            .iter()
            .map(|l| base(l.offset, &l.strides))
            .collect::<Result<Vec<_>, _>>()?;
        // Loads that do not move along the row happen once per row.
        let inner_stride = |s: &[i64]| s.last().copied().unwrap_or(0);
        let mut invariant = Vec::with_capacity(p.loads.len());
        for (l, &at) in p.loads.iter().zip(&bases) {
            invariant.push(if inner_stride(&l.strides) == 0 {
                let ptr =
                    unsafe { b.build_in_bounds_gep(ptrs[1 + l.input], &[at], "p") }.map_err(err)?;
                Some(b.build_load(ptr, "x").map_err(err)?.into_float_value())
            } else {
                None
            });
        }
        // A row folding into one output element accumulates in a register.
        let row_acc = match fold {
            Some(_) if inner_stride(&p.out_strides) == 0 => {
                let ptr =
                    unsafe { b.build_in_bounds_gep(ptrs[0], &[out_base], "acc_p") }.map_err(err)?;
                Some((
                    ptr,
                    b.build_load(ptr, "acc0").map_err(err)?.into_float_value(),
                ))
            }
            _ => None,
        };
        b.build_unconditional_branch(elem).map_err(err)?;

        // elem: j in 0..count.
        b.position_at_end(elem);
        let j = b.build_phi(i64t, "j").map_err(err)?;
        j.add_incoming(&[(&self.i64(0), row_body)]);
        let acc_phi = match row_acc {
            Some((_, first)) => {
                let phi = b.build_phi(self.f32, "acc").map_err(err)?;
                phi.add_incoming(&[(&first, row_body)]);
                Some(phi)
            }
            None => None,
        };
        let jv = j.as_basic_value().into_int_value();
        // base + j * stride.
        let at = |base: IntValue<'c>, stride: i64| -> Result<IntValue<'c>, CodegenError> {
            let step = match stride {
                0 => return Ok(base),
                1 => jv,
                s => b.build_int_mul(jv, self.signed(s), "step").map_err(err)?,
            };
            b.build_int_add(base, step, "at").map_err(err)
        };
        let out_at = at(out_base, inner_stride(&p.out_strides))?;
        let out_p = unsafe { b.build_in_bounds_gep(ptrs[0], &[out_at], "out_p") }.map_err(err)?;
        let mut values: Vec<FloatValue<'c>> = Vec::with_capacity(p.nodes.len());
        for node in &p.nodes {
            let v = match *node {
                Node::Load(n) => match invariant[n] {
                    Some(v) => v,
                    None => {
                        let l = &p.loads[n];
                        let at = at(bases[n], inner_stride(&l.strides))?;
                        let ptr = unsafe { b.build_in_bounds_gep(ptrs[1 + l.input], &[at], "p") }
                            .map_err(err)?;
                        b.build_load(ptr, "x").map_err(err)?.into_float_value()
                    }
                },
                Node::Acc => b.build_load(out_p, "acc").map_err(err)?.into_float_value(),
                Node::Const(c) => self.f32.const_float(f64::from(c)),
                Node::Unary(op, x) => self.unary(op, values[x])?,
                Node::Binary(op, x, y) => self.binary(op, values[x], values[y])?,
                Node::Clip { x, lo, hi } => self.clip(values[x], lo, hi)?,
            };
            values.push(v);
        }
        let result = *values.last().ok_or_else(|| err("empty kernel"))?;
        let mut folded = None;
        match (fold, acc_phi) {
            (Some(fold), Some(phi)) => {
                let next = self.fold(fold, phi.as_basic_value().into_float_value(), result)?;
                phi.add_incoming(&[(&next, elem)]);
                folded = Some(next);
            }
            (Some(fold), None) => {
                let acc = b.build_load(out_p, "acc").map_err(err)?.into_float_value();
                let next = self.fold(fold, acc, result)?;
                b.build_store(out_p, next).map_err(err)?;
            }
            (None, _) => {
                b.build_store(out_p, result).map_err(err)?;
            }
        }
        let j_next = b.build_int_add(jv, self.i64(1), "j_next").map_err(err)?;
        j.add_incoming(&[(&j_next, elem)]);
        let again = b
            .build_int_compare(IntPredicate::ULT, j_next, count, "again")
            .map_err(err)?;
        b.build_conditional_branch(again, elem, row_end)
            .map_err(err)?;

        // row_end: store a register accumulator, next row.
        b.position_at_end(row_end);
        if let (Some((ptr, _)), Some(v)) = (row_acc, folded) {
            b.build_store(ptr, v).map_err(err)?;
        }
        let i_next = b.build_int_add(iv, count, "i_next").map_err(err)?;
        i.add_incoming(&[(&i_next, row_end)]);
        b.build_unconditional_branch(row_head).map_err(err)?;

        b.position_at_end(exit);
        Ok(())
    }

    /// A call of the intrinsic `name` overloaded on `float`.
    fn intrinsic(
        &self,
        name: &str,
        args: &[FloatValue<'c>],
    ) -> Result<FloatValue<'c>, CodegenError> {
        let f = Intrinsic::find(name)
            .and_then(|i| i.get_declaration(self.module, &[self.f32.into()]))
            .ok_or_else(|| CodegenError(format!("LLVM has no intrinsic {name}")))?;
        self.call(f, args)
    }

    /// A call of the C library function `name` (`float name(float...)`).
    fn libm(&self, name: &str, args: &[FloatValue<'c>]) -> Result<FloatValue<'c>, CodegenError> {
        let f = self.module.get_function(name).unwrap_or_else(|| {
            let params = vec![self.f32.into(); args.len()];
            self.module.add_function(
                name,
                self.f32.fn_type(&params, false),
                Some(Linkage::External),
            )
        });
        self.call(f, args)
    }

    fn call(
        &self,
        f: FunctionValue<'c>,
        args: &[FloatValue<'c>],
    ) -> Result<FloatValue<'c>, CodegenError> {
        let args: Vec<_> = args.iter().map(|&a| a.into()).collect();
        self.builder
            .build_call(f, &args, "call")
            .map_err(err)?
            .try_as_basic_value()
            .basic()
            .map(|v| v.into_float_value())
            .ok_or_else(|| err("a math call returned no value"))
    }

    fn unary(&self, op: Unary, x: FloatValue<'c>) -> Result<FloatValue<'c>, CodegenError> {
        let b = &self.builder;
        let zero = self.f32.const_float(0.0);
        let one = self.f32.const_float(1.0);
        Ok(match op {
            Unary::Relu => {
                let pos = b
                    .build_float_compare(FloatPredicate::OGT, x, zero, "pos")
                    .map_err(err)?;
                b.build_select(pos, x, zero, "relu")
                    .map_err(err)?
                    .into_float_value()
            }
            Unary::Abs => self.intrinsic("llvm.fabs", &[x])?,
            Unary::Negative => b.build_float_neg(x, "neg").map_err(err)?,
            Unary::Exp => self.libm("expf", &[x])?,
            Unary::Log => self.libm("logf", &[x])?,
            Unary::Sqrt => self.intrinsic("llvm.sqrt", &[x])?,
            Unary::Rsqrt => {
                let s = self.intrinsic("llvm.sqrt", &[x])?;
                b.build_float_div(one, s, "rsqrt").map_err(err)?
            }
            Unary::Tanh => self.libm("tanhf", &[x])?,
            Unary::Erf => self.libm("erff", &[x])?,
            Unary::Sigmoid => {
                let n = b.build_float_neg(x, "neg").map_err(err)?;
                let e = self.libm("expf", &[n])?;
                let d = b.build_float_add(one, e, "den").map_err(err)?;
                b.build_float_div(one, d, "sigmoid").map_err(err)?
            }
            Unary::Round => self.intrinsic("llvm.roundeven", &[x])?,
            Unary::Floor => self.intrinsic("llvm.floor", &[x])?,
            Unary::Ceil => self.intrinsic("llvm.ceil", &[x])?,
            Unary::Copy => x,
        })
    }

    fn binary(
        &self,
        op: Binary,
        x: FloatValue<'c>,
        y: FloatValue<'c>,
    ) -> Result<FloatValue<'c>, CodegenError> {
        let b = &self.builder;
        Ok(match op {
            Binary::Add => b.build_float_add(x, y, "add").map_err(err)?,
            Binary::Subtract => b.build_float_sub(x, y, "sub").map_err(err)?,
            Binary::Multiply => b.build_float_mul(x, y, "mul").map_err(err)?,
            Binary::Divide => b.build_float_div(x, y, "div").map_err(err)?,
            Binary::Power => self.libm("powf", &[x, y])?,
            Binary::Maximum | Binary::Minimum => {
                let keep = if op == Binary::Maximum {
                    FloatPredicate::OGE
                } else {
                    FloatPredicate::OLE
                };
                let nan = b
                    .build_float_compare(FloatPredicate::UNO, x, x, "nan")
                    .map_err(err)?;
                let ordered = b.build_float_compare(keep, x, y, "keep").map_err(err)?;
                let take_x = b.build_or(nan, ordered, "take_x").map_err(err)?;
                b.build_select(take_x, x, y, "minmax")
                    .map_err(err)?
                    .into_float_value()
            }
        })
    }

    /// `acc` with `x` folded in, as the reference kernels fold (see [`Fold`]).
    fn fold(
        &self,
        fold: Fold,
        acc: FloatValue<'c>,
        x: FloatValue<'c>,
    ) -> Result<FloatValue<'c>, CodegenError> {
        let b = &self.builder;
        let keep_x = |pred: FloatPredicate| -> Result<FloatValue<'c>, CodegenError> {
            let take = b.build_float_compare(pred, x, acc, "take").map_err(err)?;
            Ok(b.build_select(take, x, acc, "fold")
                .map_err(err)?
                .into_float_value())
        };
        match fold {
            Fold::Sum => b.build_float_add(acc, x, "sum").map_err(err),
            Fold::Prod => b.build_float_mul(acc, x, "prod").map_err(err),
            Fold::Max => keep_x(FloatPredicate::OGT),
            Fold::Min => keep_x(FloatPredicate::OLT),
            Fold::MaxNum => self.intrinsic("llvm.maxnum", &[acc, x]),
            Fold::Div => b.build_float_div(acc, x, "div").map_err(err),
        }
    }

    fn clip(&self, x: FloatValue<'c>, lo: f32, hi: f32) -> Result<FloatValue<'c>, CodegenError> {
        let b = &self.builder;
        let lo = self.f32.const_float(f64::from(lo));
        let hi = self.f32.const_float(f64::from(hi));
        let below = b
            .build_float_compare(FloatPredicate::OLT, x, lo, "below")
            .map_err(err)?;
        let above = b
            .build_float_compare(FloatPredicate::OGT, x, hi, "above")
            .map_err(err)?;
        let upper = b
            .build_select(above, hi, x, "upper")
            .map_err(err)?
            .into_float_value();
        Ok(b.build_select(below, lo, upper, "clip")
            .map_err(err)?
            .into_float_value())
    }
}
