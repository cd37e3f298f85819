//! LLVM IR for kernels on custom datatypes: loops whose every scalar operation is a call of
//! the datatype's library function through a table of function pointers.
//!
//! Each [`CustomKernel`] becomes `void SYMBOL(void **bufs, void **fns, i64 lo, i64 hi)`:
//! `bufs[0]` is the output, `bufs[1 + k]` input `k`, `fns[c]` the address of the kernel's
//! call `c` ([`CustomKernel::calls`]), filled by the runtime from the loaded datatype plugin,
//! so the compiled code never links the plugin. The call computes work units `lo..hi`
//! ([`CustomKernel::units`]). Values of the datatype are `iN` integers of its width; they are
//! passed zero-extended to 32 bits (the C ABI of `uint8_t`/`uint16_t` arguments) and results
//! are truncated back. Constants are the bit patterns the kernel converted at build time.

use inkwell::basic_block::BasicBlock;
use inkwell::builder::Builder;
use inkwell::context::Context;
use inkwell::module::{Linkage, Module};
use inkwell::types::{BasicMetadataTypeEnum, BasicType, BasicTypeEnum, FunctionType, IntType};
use inkwell::values::{BasicValueEnum, CallableValue, FunctionValue, IntValue, PointerValue};
use inkwell::{AddressSpace, IntPredicate};

use super::kernel::{
    signature, Body, Chain, Conv2d, CustomKernel, Dense, Elem, Node, Pool, Signature, Softmax,
};
use crate::codegen::CodegenError;

fn err(e: impl std::fmt::Display) -> CodegenError {
    CodegenError(e.to_string())
}

type R<T> = Result<T, CodegenError>;

/// Emits the kernel function `symbol` for `k` into `module`.
pub fn emit_kernel<'c>(
    context: &'c Context,
    module: &Module<'c>,
    symbol: &str,
    k: &CustomKernel,
) -> R<FunctionValue<'c>> {
    let i8p = context.i8_type().ptr_type(AddressSpace::default());
    let i64t = context.i64_type();
    let fn_type = context.void_type().fn_type(
        &[
            i8p.ptr_type(AddressSpace::default()).into(),
            i8p.ptr_type(AddressSpace::default()).into(),
            i64t.into(),
            i64t.into(),
        ],
        false,
    );
    let function = module.add_function(symbol, fn_type, Some(Linkage::External));
    let param = |i: u32| {
        function
            .get_nth_param(i)
            .ok_or_else(|| err("missing parameter"))
    };
    let (bufs, fns) = (
        param(0)?.into_pointer_value(),
        param(1)?.into_pointer_value(),
    );
    let (lo, hi) = (param(2)?.into_int_value(), param(3)?.into_int_value());
    let entry = context.append_basic_block(function, "entry");
    let b = context.create_builder();
    b.position_at_end(entry);
    let bits = k.dtype.size_bytes() as u32 * 8;
    let custom = match bits {
        8 => context.i8_type(),
        16 => context.i16_type(),
        32 => context.i32_type(),
        _ => context.i64_type(),
    };
    let abi = if bits <= 32 {
        context.i32_type()
    } else {
        context.i64_type()
    };
    let mut e = Emitter {
        context,
        module,
        b,
        function,
        entry,
        custom,
        abi,
        fns: Vec::new(),
        bufs: Vec::new(),
    };
    for (c, key) in k.calls.iter().enumerate() {
        let ty = e.fn_type(signature(key));
        let slot = e.gep(fns, e.i64(c))?;
        let raw =
            e.b.build_load(slot, "fn")
                .map_err(err)?
                .into_pointer_value();
        let f =
            e.b.build_pointer_cast(raw, ty.ptr_type(AddressSpace::default()), "f")
                .map_err(err)?;
        e.fns.push((f, signature(key)));
    }
    let elems = std::iter::once(k.output.elem).chain(k.inputs.iter().map(|i| i.elem));
    for (i, elem) in elems.enumerate() {
        let slot = e.gep(bufs, e.i64(i))?;
        let raw =
            e.b.build_load(slot, "buf")
                .map_err(err)?
                .into_pointer_value();
        let ty = e.elem_type(elem).ptr_type(AddressSpace::default());
        e.bufs
            .push(e.b.build_pointer_cast(raw, ty, "buf").map_err(err)?);
    }
    e.for_range(lo, hi, |e, u| match &k.body {
        Body::Chain(c) => e.chain(c, u),
        Body::Conv2d(c) => e.conv2d(c, u),
        Body::Dense(d) => e.dense(d, u),
        Body::Pool(p) => e.pool(p, u),
        Body::Softmax(s) => e.softmax(s, u),
    })?;
    e.b.build_return(None).map_err(err)?;
    Ok(function)
}

struct Emitter<'a, 'c> {
    context: &'c Context,
    module: &'a Module<'c>,
    b: Builder<'c>,
    function: FunctionValue<'c>,
    entry: BasicBlock<'c>,
    custom: IntType<'c>,
    abi: IntType<'c>,
    fns: Vec<(PointerValue<'c>, Signature)>,
    bufs: Vec<PointerValue<'c>>,
}

impl<'c> Emitter<'_, 'c> {
    fn i64(&self, v: usize) -> IntValue<'c> {
        self.context.i64_type().const_int(v as u64, false)
    }

    fn elem_type(&self, elem: Elem) -> BasicTypeEnum<'c> {
        match elem {
            Elem::Custom => self.custom.as_basic_type_enum(),
            Elem::F32 => self.context.f32_type().as_basic_type_enum(),
        }
    }

    fn fn_type(&self, sig: Signature) -> FunctionType<'c> {
        let f32t = self.context.f32_type();
        let abi: BasicMetadataTypeEnum<'c> = self.abi.into();
        match sig {
            Signature::Binary => self.abi.fn_type(&[abi, abi], false),
            Signature::Unary => self.abi.fn_type(&[abi], false),
            Signature::FromF32 => self.abi.fn_type(&[f32t.into()], false),
            Signature::ToF32 => f32t.fn_type(&[abi], false),
        }
    }

    fn gep(&self, ptr: PointerValue<'c>, at: IntValue<'c>) -> R<PointerValue<'c>> {
        // SAFETY (of the generated code): indices stay inside the buffers the runtime checked.
        unsafe { self.b.build_in_bounds_gep(ptr, &[at], "p") }.map_err(err)
    }

    /// Element `at` of buffer `buf` (0 the output, 1 + k input k).
    fn load(&self, buf: usize, at: IntValue<'c>) -> R<BasicValueEnum<'c>> {
        let p = self.gep(self.bufs[buf], at)?;
        self.b.build_load(p, "x").map_err(err)
    }

    fn store(&self, at: IntValue<'c>, v: BasicValueEnum<'c>) -> R<()> {
        let p = self.gep(self.bufs[0], at)?;
        self.b.build_store(p, v).map_err(err)?;
        Ok(())
    }

    fn add(&self, x: IntValue<'c>, y: IntValue<'c>) -> R<IntValue<'c>> {
        self.b.build_int_add(x, y, "add").map_err(err)
    }

    fn mul(&self, x: IntValue<'c>, v: usize) -> R<IntValue<'c>> {
        self.b.build_int_mul(x, self.i64(v), "mul").map_err(err)
    }

    fn div(&self, x: IntValue<'c>, v: usize) -> R<IntValue<'c>> {
        self.b
            .build_int_unsigned_div(x, self.i64(v.max(1)), "div")
            .map_err(err)
    }

    fn rem(&self, x: IntValue<'c>, v: usize) -> R<IntValue<'c>> {
        self.b
            .build_int_unsigned_rem(x, self.i64(v.max(1)), "rem")
            .map_err(err)
    }

    /// `x < v` (unsigned: a coordinate left of the padding wraps and compares false).
    fn below(&self, x: IntValue<'c>, v: usize) -> R<IntValue<'c>> {
        self.b
            .build_int_compare(IntPredicate::ULT, x, self.i64(v), "in")
            .map_err(err)
    }

    /// A constant of the datatype.
    fn constant(&self, bits: u64) -> BasicValueEnum<'c> {
        self.custom.const_int(bits, false).into()
    }

    /// Library function `c` on `args`.
    fn call(&self, c: usize, args: &[BasicValueEnum<'c>]) -> R<BasicValueEnum<'c>> {
        let (f, sig) = self.fns[c];
        let f = CallableValue::try_from(f).map_err(|()| err("a library function pointer"))?;
        let widened = args
            .iter()
            .map(|&a| match a {
                BasicValueEnum::IntValue(v) => self
                    .b
                    .build_int_z_extend_or_bit_cast(v, self.abi, "arg")
                    .map(Into::into),
                other => Ok(other.into()),
            })
            .collect::<Result<Vec<_>, _>>()
            .map_err(err)?;
        let result = self
            .b
            .build_call(f, &widened, "call")
            .map_err(err)?
            .try_as_basic_value()
            .basic()
            .ok_or_else(|| err("a library call returned no value"))?;
        Ok(match sig {
            Signature::ToF32 => result,
            _ => self
                .b
                .build_int_truncate_or_bit_cast(result.into_int_value(), self.custom, "r")
                .map_err(err)?
                .into(),
        })
    }

    /// A stack slot in the entry block (promoted to a register by the optimizer).
    fn slot(&self, ty: BasicTypeEnum<'c>) -> R<PointerValue<'c>> {
        let eb = self.context.create_builder();
        match self.entry.get_first_instruction() {
            Some(i) => eb.position_before(&i),
            None => eb.position_at_end(self.entry),
        }
        eb.build_alloca(ty, "slot").map_err(err)
    }

    /// `for i in start..end { body(i) }`.
    fn for_range(
        &mut self,
        start: IntValue<'c>,
        end: IntValue<'c>,
        body: impl FnOnce(&mut Self, IntValue<'c>) -> R<()>,
    ) -> R<()> {
        let ctx = self.context;
        let pre = self
            .b
            .get_insert_block()
            .ok_or_else(|| err("the builder is not positioned"))?;
        let head = ctx.append_basic_block(self.function, "head");
        let inner = ctx.append_basic_block(self.function, "body");
        let exit = ctx.append_basic_block(self.function, "exit");
        self.b.build_unconditional_branch(head).map_err(err)?;
        self.b.position_at_end(head);
        let i = self.b.build_phi(ctx.i64_type(), "i").map_err(err)?;
        i.add_incoming(&[(&start, pre)]);
        let iv = i.as_basic_value().into_int_value();
        let more = self
            .b
            .build_int_compare(IntPredicate::SLT, iv, end, "more")
            .map_err(err)?;
        self.b
            .build_conditional_branch(more, inner, exit)
            .map_err(err)?;
        self.b.position_at_end(inner);
        body(self, iv)?;
        let next = self.add(iv, self.i64(1))?;
        let latch = self
            .b
            .get_insert_block()
            .ok_or_else(|| err("the builder is not positioned"))?;
        i.add_incoming(&[(&next, latch)]);
        self.b.build_unconditional_branch(head).map_err(err)?;
        self.b.position_at_end(exit);
        Ok(())
    }

    /// `for i in 0..n { body(i) }`.
    fn for_n(&mut self, n: usize, body: impl FnOnce(&mut Self, IntValue<'c>) -> R<()>) -> R<()> {
        self.for_range(self.i64(0), self.i64(n), body)
    }

    /// `if cond { body() }`.
    fn if_then(&mut self, cond: IntValue<'c>, body: impl FnOnce(&mut Self) -> R<()>) -> R<()> {
        let then = self.context.append_basic_block(self.function, "then");
        let join = self.context.append_basic_block(self.function, "join");
        self.b
            .build_conditional_branch(cond, then, join)
            .map_err(err)?;
        self.b.position_at_end(then);
        body(self)?;
        self.b.build_unconditional_branch(join).map_err(err)?;
        self.b.position_at_end(join);
        Ok(())
    }

    /// `*slot = f(*slot, x)` with library function `c`.
    fn accumulate(&self, slot: PointerValue<'c>, c: usize, x: BasicValueEnum<'c>) -> R<()> {
        let acc = self.b.build_load(slot, "acc").map_err(err)?;
        let v = self.call(c, &[acc, x])?;
        self.b.build_store(slot, v).map_err(err)?;
        Ok(())
    }

    /// A slot of the datatype holding `bits`.
    fn custom_slot(&self, bits: u64) -> R<PointerValue<'c>> {
        let slot = self.slot(self.custom.as_basic_type_enum())?;
        self.b.build_store(slot, self.constant(bits)).map_err(err)?;
        Ok(slot)
    }

    fn chain(&mut self, c: &Chain, u: IntValue<'c>) -> R<()> {
        let mut offsets = vec![self.i64(0); c.reads.len()];
        let mut rest = u;
        for (d, &extent) in c.dims.iter().enumerate().rev() {
            let idx = self.rem(rest, extent)?;
            rest = self.div(rest, extent)?;
            for (r, read) in c.reads.iter().enumerate() {
                if read.strides[d] != 0 {
                    let off = self.mul(idx, read.strides[d])?;
                    offsets[r] = self.add(offsets[r], off)?;
                }
            }
        }
        let mut values: Vec<BasicValueEnum<'c>> = Vec::with_capacity(c.nodes.len());
        for node in &c.nodes {
            let v = match node {
                Node::Input(r) => self.load(1 + c.reads[*r].input, offsets[*r])?,
                Node::Const(bits) => self.constant(*bits),
                Node::Call { call, args } => {
                    let args: Vec<_> = args.iter().map(|&a| values[a]).collect();
                    self.call(*call, &args)?
                }
            };
            values.push(v);
        }
        let out = *values.get(c.output).ok_or_else(|| err("no output node"))?;
        self.store(u, out)
    }

    /// One output plane `u = (image, output channel)` of a convolution.
    fn conv2d(&mut self, c: &Conv2d, u: IntValue<'c>) -> R<()> {
        let [in_c, in_h, in_w] = c.input;
        let [out_c, out_h, out_w] = c.output;
        let [kh, kw] = c.kernel;
        let groups = c.groups.max(1);
        let (in_per_group, out_per_group) = (in_c / groups, out_c / groups);
        let image = self.div(u, out_c)?;
        let oc = self.rem(u, out_c)?;
        let group = self.div(oc, out_per_group)?;
        // The first input channel of the group, and the output plane's start.
        let first = self.add(self.mul(image, in_c)?, self.mul(group, in_per_group)?)?;
        let plane = self.mul(u, out_h * out_w)?;
        let acc = self.slot(self.custom.as_basic_type_enum())?;
        let Conv2d {
            strides,
            dilation,
            pad,
            mac,
            ..
        } = *c;
        self.for_n(out_h, |e, oy| {
            e.for_n(out_w, |e, ox| {
                e.b.build_store(acc, e.constant(mac.zero)).map_err(err)?;
                e.for_n(in_per_group, |e, ic| {
                    let channel = e.add(first, ic)?;
                    let w_channel = e.add(e.mul(oc, in_per_group)?, ic)?;
                    e.for_n(kh, |e, ky| {
                        let iy = e.tap(oy, ky, strides[0], dilation[0], pad[0])?;
                        let inside = e.below(iy, in_h)?;
                        e.if_then(inside, |e| {
                            let row = e.mul(e.add(e.mul(channel, in_h)?, iy)?, in_w)?;
                            let w_row = e.mul(e.add(e.mul(w_channel, kh)?, ky)?, kw)?;
                            e.for_n(kw, |e, kx| {
                                let ix = e.tap(ox, kx, strides[1], dilation[1], pad[1])?;
                                let inside = e.below(ix, in_w)?;
                                e.if_then(inside, |e| {
                                    let x = e.load(1, e.add(row, ix)?)?;
                                    let w = e.load(2, e.add(w_row, kx)?)?;
                                    let p = e.call(mac.mul, &[x, w])?;
                                    e.accumulate(acc, mac.add, p)
                                })
                            })
                        })
                    })
                })?;
                let at = e.add(plane, e.add(e.mul(oy, out_w)?, ox)?)?;
                let v = e.b.build_load(acc, "acc").map_err(err)?;
                e.store(at, v)
            })
        })
    }

    /// The input coordinate `o * stride + t * dilation - pad` (wrapping below zero).
    fn tap(
        &self,
        o: IntValue<'c>,
        t: IntValue<'c>,
        stride: usize,
        dilation: usize,
        pad: usize,
    ) -> R<IntValue<'c>> {
        let pos = self.add(self.mul(o, stride)?, self.mul(t, dilation)?)?;
        self.b.build_int_sub(pos, self.i64(pad), "tap").map_err(err)
    }

    /// One row `u` of a matrix product.
    fn dense(&mut self, d: &Dense, u: IntValue<'c>) -> R<()> {
        let [_, n, k] = d.mnk;
        let mac = d.mac;
        let acc = self.slot(self.custom.as_basic_type_enum())?;
        let a_row = self.mul(u, k)?;
        let out_row = self.mul(u, n)?;
        self.for_n(n, |e, j| {
            e.b.build_store(acc, e.constant(mac.zero)).map_err(err)?;
            let w_row = e.mul(j, k)?;
            e.for_n(k, |e, p| {
                let a = e.load(1, e.add(a_row, p)?)?;
                let w = e.load(2, e.add(w_row, p)?)?;
                let prod = e.call(mac.mul, &[a, w])?;
                e.accumulate(acc, mac.add, prod)
            })?;
            let v = e.b.build_load(acc, "acc").map_err(err)?;
            e.store(e.add(out_row, j)?, v)
        })
    }

    /// One plane `u = (image, channel)` of a pooling.
    fn pool(&mut self, p: &Pool, u: IntValue<'c>) -> R<()> {
        let [in_h, in_w] = p.input;
        let [out_h, out_w] = p.output;
        let [kh, kw] = p.kernel;
        let i64t = self.context.i64_type();
        let acc = self.slot(self.custom.as_basic_type_enum())?;
        let valid = self.slot(i64t.as_basic_type_enum())?;
        let padded = self.slot(i64t.as_basic_type_enum())?;
        let counts = match &p.average {
            Some((_, _, counts)) => {
                let values: Vec<IntValue<'c>> = counts
                    .iter()
                    .map(|&c| self.custom.const_int(c, false))
                    .collect();
                let ty = self.custom.array_type(values.len() as u32);
                let g = self.module.add_global(ty, None, "tap_counts");
                g.set_constant(true);
                g.set_linkage(Linkage::Private);
                g.set_initializer(&self.custom.const_array(&values));
                Some(g.as_pointer_value())
            }
            None => None,
        };
        let in_plane = self.mul(u, in_h * in_w)?;
        let out_plane = self.mul(u, out_h * out_w)?;
        let average = p.average.as_ref().map(|(div, include, _)| (*div, *include));
        let (reduce, start) = (p.reduce, p.start);
        let (strides, dilation, pad) = (p.strides, p.dilation, p.pad);
        self.for_n(out_h, |e, oy| {
            e.for_n(out_w, |e, ox| {
                e.b.build_store(acc, e.constant(start)).map_err(err)?;
                e.b.build_store(valid, e.i64(0)).map_err(err)?;
                e.b.build_store(padded, e.i64(0)).map_err(err)?;
                e.for_n(kh, |e, ky| {
                    let pos_y = e.add(e.mul(oy, strides[0])?, e.mul(ky, dilation[0])?)?;
                    let in_pad_y = e.below(pos_y, in_h + pad[0] + pad[2])?;
                    let iy = e.b.build_int_sub(pos_y, e.i64(pad[0]), "iy").map_err(err)?;
                    let inside_y = e.below(iy, in_h)?;
                    e.for_n(kw, |e, kx| {
                        let pos_x = e.add(e.mul(ox, strides[1])?, e.mul(kx, dilation[1])?)?;
                        let in_pad_x = e.below(pos_x, in_w + pad[1] + pad[3])?;
                        let ix = e.b.build_int_sub(pos_x, e.i64(pad[1]), "ix").map_err(err)?;
                        let inside_x = e.below(ix, in_w)?;
                        if average.is_some() {
                            let counted =
                                e.b.build_and(in_pad_y, in_pad_x, "counted").map_err(err)?;
                            e.increment_if(padded, counted)?;
                        }
                        let inside = e.b.build_and(inside_y, inside_x, "inside").map_err(err)?;
                        e.if_then(inside, |e| {
                            let at = e.add(in_plane, e.add(e.mul(iy, in_w)?, ix)?)?;
                            let x = e.load(1, at)?;
                            e.increment_if(valid, e.context.bool_type().const_int(1, false))?;
                            e.accumulate(acc, reduce, x)
                        })
                    })
                })?;
                let mut v = e.b.build_load(acc, "acc").map_err(err)?;
                if let (Some((div, include)), Some(table)) = (average, counts) {
                    let count =
                        e.b.build_load(if include { padded } else { valid }, "count")
                            .map_err(err)?
                            .into_int_value();
                    // SAFETY (of the generated code): a count never exceeds the window's taps.
                    let p = unsafe { e.b.build_in_bounds_gep(table, &[e.i64(0), count], "c") }
                        .map_err(err)?;
                    let n = e.b.build_load(p, "n").map_err(err)?;
                    v = e.call(div, &[v, n])?;
                }
                let at = e.add(out_plane, e.add(e.mul(oy, out_w)?, ox)?)?;
                e.store(at, v)
            })
        })
    }

    /// `*slot += cond` for an `i64` counter.
    fn increment_if(&self, slot: PointerValue<'c>, cond: IntValue<'c>) -> R<()> {
        let i64t = self.context.i64_type();
        let n = self.b.build_load(slot, "n").map_err(err)?.into_int_value();
        let one = self.b.build_int_z_extend(cond, i64t, "one").map_err(err)?;
        let n = self.add(n, one)?;
        self.b.build_store(slot, n).map_err(err)?;
        Ok(())
    }

    /// One softmax line `u = (outer, inner)`.
    fn softmax(&mut self, s: &Softmax, u: IntValue<'c>) -> R<()> {
        let [_, len, inner] = s.view;
        let [max, sub, add, div, exp] = s.calls;
        let [lowest, zero] = s.lowest_zero;
        let o = self.div(u, inner)?;
        let i = self.rem(u, inner)?;
        let base = self.add(self.mul(self.mul(o, len)?, inner)?, i)?;
        let at = move |e: &Self, k: IntValue<'c>| e.add(base, e.mul(k, inner)?);
        let m = self.custom_slot(lowest)?;
        self.for_n(len, |e, k| {
            let x = e.load(1, at(e, k)?)?;
            e.accumulate(m, max, x)
        })?;
        self.for_n(len, |e, k| {
            let x = e.load(1, at(e, k)?)?;
            let mv = e.b.build_load(m, "m").map_err(err)?;
            let d = e.call(sub, &[x, mv])?;
            let y = e.call(exp, &[d])?;
            e.store(at(e, k)?, y)
        })?;
        let total = self.custom_slot(zero)?;
        self.for_n(len, |e, k| {
            let y = e.load(0, at(e, k)?)?;
            e.accumulate(total, add, y)
        })?;
        self.for_n(len, |e, k| {
            let y = e.load(0, at(e, k)?)?;
            let t = e.b.build_load(total, "sum").map_err(err)?;
            let q = e.call(div, &[y, t])?;
            e.store(at(e, k)?, q)
        })
    }
}
