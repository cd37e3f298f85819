//! Concatenation in place: a part written by its producer straight into its slice of the
//! concatenation's output. Every case runs twice, with the parts in place (the default) and
//! copied ([`ConcatParts::Copied`], the reference behaviour), and the outputs must be
//! bit-identical to each other and to an evaluator written here (plain loops over `Vec<f32>`,
//! no executor); the number of parts placed is checked against the eligibility rules.

use byoc_exec::{ConcatParts, ExecOptions, Executor, ExternalModules, InPlaceParts, MemoryReport};
use byoc_ir::{Attrs, ExprId, FunctionBuilder, Module, Type};
use byoc_ir::{DType, Tensor};

/// A tensor of the reference evaluator: shape and row-major values.
#[derive(Clone, Debug, PartialEq)]
struct Val {
    shape: Vec<usize>,
    data: Vec<f32>,
}

impl Val {
    fn tensor(&self) -> Tensor {
        Tensor::from_slice(self.shape.clone(), &self.data).unwrap()
    }

    fn map(&self, f: impl Fn(f32) -> f32) -> Val {
        Val {
            shape: self.shape.clone(),
            data: self.data.iter().map(|&v| f(v)).collect(),
        }
    }
}

/// `concatenate` by definition: along `axis`, each outer row takes each part's row in turn.
fn concat_ref(parts: &[&Val], axis: usize) -> Val {
    let outer: usize = parts[0].shape[..axis].iter().product();
    let mut shape = parts[0].shape.clone();
    shape[axis] = parts.iter().map(|p| p.shape[axis]).sum();
    let mut data = Vec::new();
    for o in 0..outer {
        for p in parts {
            let row: usize = p.shape[axis..].iter().product();
            data.extend_from_slice(&p.data[o * row..(o + 1) * row]);
        }
    }
    Val { shape, data }
}

fn relu(v: f32) -> f32 {
    if v > 0.0 {
        v
    } else {
        0.0
    }
}

/// Deterministic pseudo-random values in [-1, 1) (a 64-bit LCG).
struct Lcg(u64);

impl Lcg {
    fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        self.0 >> 33
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    fn val(&mut self, shape: &[usize]) -> Val {
        let n: usize = shape.iter().product();
        Val {
            shape: shape.to_vec(),
            data: (0..n)
                .map(|_| (self.next() % 2000) as f32 / 1000.0 - 1.0)
                .collect(),
        }
    }
}

fn f32_ty(shape: &[usize]) -> Type {
    Type::tensor(shape, DType::Float32)
}

fn axis(a: i64) -> Attrs {
    Attrs::new().with("axis", a)
}

/// `concatenate((parts...), axis=a)`.
fn concat(b: &mut FunctionBuilder, parts: &[ExprId], a: i64) -> ExprId {
    let t = b.tuple(parts).unwrap();
    b.call("concatenate", &[t], axis(a)).unwrap()
}

fn unary(b: &mut FunctionBuilder, op: &str, x: ExprId) -> ExprId {
    b.call(op, &[x], Attrs::new()).unwrap()
}

fn executor(m: &Module, parts: ConcatParts, threads: usize, profile: bool) -> Executor {
    Executor::with_concat_parts(
        m,
        ExecOptions {
            threads,
            profile,
            memory_budget: None,
        },
        &ExternalModules::new(),
        parts,
    )
    .unwrap()
}

/// Runs `m` with parts in place and copied (1 and 3 threads), checks that every output is
/// bit-identical across the runs and to `want`, and returns the in-place plan's report.
fn check(m: &Module, inputs: &[Tensor], want: &[Val]) -> MemoryReport {
    let copied = executor(m, ConcatParts::Copied, 1, false);
    assert_eq!(copied.memory_report().in_place_parts, 0);
    let reference = copied.run(inputs).unwrap();
    assert_eq!(reference.len(), want.len());
    for (got, want) in reference.iter().zip(want) {
        assert_eq!(got, &want.tensor(), "copied parts vs the evaluator");
    }
    let mut report = None;
    for threads in [1, 3] {
        let in_place = executor(m, ConcatParts::InPlace, threads, false);
        // Twice: the second run reuses the pooled arena, whose bytes the first run left.
        for _ in 0..2 {
            let got = in_place.run(inputs).unwrap();
            for (k, (g, r)) in got.iter().zip(&reference).enumerate() {
                assert_eq!(
                    g.as_bytes(),
                    r.as_bytes(),
                    "output {k}, {threads} thread(s)"
                );
            }
        }
        report = Some(in_place.memory_report());
    }
    report.unwrap()
}

/// A fire module (SqueezeNet): two convolutions of one input, each with its relu,
/// concatenated along the channels; the result is the concatenation's negation.
fn fire_module(rng: &mut Lcg, returned: bool) -> (Module, Val, Module) {
    let x_shape = [1, 3, 5, 5];
    let w1 = rng.val(&[16, 3, 1, 1]).tensor();
    let w2 = rng.val(&[6, 3, 3, 3]).tensor();
    let build = |joined: bool| {
        let mut b = FunctionBuilder::new();
        let x = b.param("x", f32_ty(&x_shape));
        let c1 = b.constant(w1.clone());
        let c2 = b.constant(w2.clone());
        let conv1 = b
            .call(
                "nn.conv2d",
                &[x, c1],
                Attrs::new()
                    .with("channels", 16i64)
                    .with("kernel_size", vec![1i64, 1]),
            )
            .unwrap();
        let conv2 = b
            .call(
                "nn.conv2d",
                &[x, c2],
                Attrs::new()
                    .with("channels", 6i64)
                    .with("kernel_size", vec![3i64, 3])
                    .with("padding", vec![1i64, 1, 1, 1]),
            )
            .unwrap();
        let a = unary(&mut b, "nn.relu", conv1);
        let bb = unary(&mut b, "nn.relu", conv2);
        let body = if joined {
            let c = concat(&mut b, &[a, bb], 1);
            if returned {
                c
            } else {
                unary(&mut b, "negative", c)
            }
        } else {
            b.tuple(&[a, bb]).unwrap()
        };
        Module::from_main(b.finish(vec![x], body, Attrs::new()).unwrap())
    };
    (build(true), rng.val(&x_shape), build(false))
}

#[test]
fn fire_module_parts_are_written_in_place() {
    for returned in [false, true] {
        let mut rng = Lcg(7);
        let (m, x, parts_module) = fire_module(&mut rng, returned);
        // The parts on their own (results of `@main`, so never placed): the reference.
        let parts = executor(&parts_module, ConcatParts::InPlace, 1, false)
            .run(&[x.tensor()])
            .unwrap();
        let val = |t: &Tensor| Val {
            shape: t.shape().to_vec(),
            data: t.as_slice::<f32>().unwrap().to_vec(),
        };
        let joined = concat_ref(&[&val(&parts[0]), &val(&parts[1])], 1);
        let want = if returned { joined } else { joined.map(|v| -v) };
        let report = check(&m, &[x.tensor()], &[want]);
        assert_eq!(report.in_place_parts, 2, "returned: {returned}");
        let copied = executor(&m, ConcatParts::Copied, 1, false).memory_report();
        assert_eq!(report.naive_bytes, copied.naive_bytes);
        // The parts take no buffer of their own (here the copied plan reuses the
        // convolutions' slots for them, so the totals are equal).
        assert!(report.planned_bytes <= copied.planned_bytes);
    }
}

#[test]
fn the_profile_marks_a_concatenation_in_place() {
    let (m, x, _) = fire_module(&mut Lcg(3), false);
    for (parts, want) in [
        (
            ConcatParts::InPlace,
            Some(InPlaceParts {
                written: 2,
                parts: 2,
            }),
        ),
        (ConcatParts::Copied, None),
    ] {
        let exec = executor(&m, parts, 2, true);
        exec.run(&[x.tensor()]).unwrap();
        let profile = exec.last_profile().unwrap();
        let calls: Vec<_> = profile
            .calls
            .iter()
            .filter(|c| c.op == "concatenate")
            .collect();
        assert_eq!(calls.len(), 1, "the concatenation keeps its entry");
        assert_eq!(calls[0].in_place, want);
        assert!(profile
            .calls
            .iter()
            .all(|c| c.op == "concatenate" || c.in_place.is_none()));
    }
    assert_eq!(
        InPlaceParts {
            written: 1,
            parts: 3
        }
        .to_string(),
        "in place: 1 of 3 part(s) written by their producers"
    );
}

#[test]
fn parts_in_place_take_no_memory_of_their_own() {
    // a = relu(x), b = -x, c = concat(a, b), result relu(c); x is [1, 2, 8] (64 bytes).
    let mut b = FunctionBuilder::new();
    let x = b.param("x", f32_ty(&[1, 2, 8]));
    let a = unary(&mut b, "nn.relu", x);
    let n = unary(&mut b, "negative", x);
    let c = concat(&mut b, &[a, n], 1);
    let y = unary(&mut b, "nn.relu", c);
    let m = Module::from_main(b.finish(vec![x], y, Attrs::new()).unwrap());
    let copied = executor(&m, ConcatParts::Copied, 1, false).memory_report();
    let in_place = executor(&m, ConcatParts::InPlace, 1, false).memory_report();
    // Copied: a, b and c live at once (64 + 64 + 128 bytes), plus the 128-byte result.
    assert_eq!(
        (copied.arena_slots, copied.arena_bytes, copied.planned_bytes),
        (3, 256, 384)
    );
    // In place: c's buffer holds a and b from their writes on; nothing else is allocated.
    assert_eq!(
        (
            in_place.arena_slots,
            in_place.arena_bytes,
            in_place.planned_bytes
        ),
        (1, 128, 256)
    );
    assert_eq!(in_place.naive_bytes, copied.naive_bytes);
    let xv = Lcg(1).val(&[1, 2, 8]);
    let want = concat_ref(&[&xv.map(relu), &xv.map(|v| -v)], 1).map(relu);
    check(&m, &[xv.tensor()], &[want]);
}

/// One eligibility case: the module, its inputs, the evaluator's outputs, the parts placed.
struct Case {
    name: &'static str,
    module: Module,
    inputs: Vec<Tensor>,
    want: Vec<Val>,
    placed: usize,
}

fn case(
    name: &'static str,
    shape: &[usize],
    placed: usize,
    build: impl FnOnce(&mut FunctionBuilder, ExprId) -> ExprId,
    reference: impl FnOnce(&Val) -> Vec<Val>,
) -> Case {
    let mut b = FunctionBuilder::new();
    let x = b.param("x", f32_ty(shape));
    let body = build(&mut b, x);
    let module = Module::from_main(b.finish(vec![x], body, Attrs::new()).unwrap());
    let xv = Lcg(name.len() as u64).val(shape);
    Case {
        name,
        module,
        inputs: vec![xv.tensor()],
        want: reference(&xv),
        placed,
    }
}

#[test]
fn only_eligible_parts_are_placed() {
    let neg = |v: f32| -v;
    let cases = vec![
        case(
            "two fresh parts",
            &[1, 2, 8],
            2,
            |b, x| {
                let a = unary(b, "nn.relu", x);
                let n = unary(b, "negative", x);
                concat(b, &[a, n], 1)
            },
            |x| vec![concat_ref(&[&x.map(relu), &x.map(neg)], 1)],
        ),
        case(
            "a part also read by another op",
            &[1, 2, 8],
            2,
            |b, x| {
                let a = unary(b, "nn.relu", x);
                let n = unary(b, "negative", x);
                let c = concat(b, &[a, n], 1);
                let again = unary(b, "negative", a);
                b.tuple(&[c, again]).unwrap()
            },
            |x| {
                vec![
                    concat_ref(&[&x.map(relu), &x.map(neg)], 1),
                    x.map(relu).map(neg),
                ]
            },
        ),
        case(
            // Once `a` is placed, `b = -a` would read and write the same buffer: copied.
            "a part computed from another part",
            &[1, 2, 8],
            1,
            |b, x| {
                let a = unary(b, "nn.relu", x);
                let n = unary(b, "negative", a);
                concat(b, &[a, n], 1)
            },
            |x| vec![concat_ref(&[&x.map(relu), &x.map(relu).map(neg)], 1)],
        ),
        case(
            // `a` is placed in the first concatenation and copied by the second.
            "a part read by two concatenations",
            &[1, 2, 8],
            3,
            |b, x| {
                let a = unary(b, "nn.relu", x);
                let n = unary(b, "negative", x);
                let e = unary(b, "abs", x);
                let c1 = concat(b, &[a, n], 1);
                let c2 = concat(b, &[a, e], 1);
                b.tuple(&[c1, c2]).unwrap()
            },
            |x| {
                vec![
                    concat_ref(&[&x.map(relu), &x.map(neg)], 1),
                    concat_ref(&[&x.map(relu), &x.map(f32::abs)], 1),
                ]
            },
        ),
        case(
            "a part that is a result of @main",
            &[1, 2, 8],
            1,
            |b, x| {
                let a = unary(b, "nn.relu", x);
                let n = unary(b, "negative", x);
                let c = concat(b, &[a, n], 1);
                b.tuple(&[c, a]).unwrap()
            },
            |x| vec![concat_ref(&[&x.map(relu), &x.map(neg)], 1), x.map(relu)],
        ),
        case(
            "an input and a constant",
            &[1, 2, 8],
            1,
            |b, x| {
                let k = b.constant(Tensor::from_slice(vec![1, 1, 8], &[5.0f32; 8]).unwrap());
                let n = unary(b, "negative", x);
                concat(b, &[x, n, k], 1)
            },
            |x| {
                let k = Val {
                    shape: vec![1, 1, 8],
                    data: vec![5.0; 8],
                };
                vec![concat_ref(&[x, &x.map(neg), &k], 1)]
            },
        ),
        case(
            "the same part twice",
            &[1, 2, 8],
            0,
            |b, x| {
                let a = unary(b, "nn.relu", x);
                concat(b, &[a, a], 1)
            },
            |x| vec![concat_ref(&[&x.map(relu), &x.map(relu)], 1)],
        ),
        case(
            "batch 2 along axis 1",
            &[2, 2, 8],
            0,
            |b, x| {
                let a = unary(b, "nn.relu", x);
                let n = unary(b, "negative", x);
                concat(b, &[a, n], 1)
            },
            |x| vec![concat_ref(&[&x.map(relu), &x.map(neg)], 1)],
        ),
        case(
            "axis 2 with 2 channels",
            &[1, 2, 3, 2],
            0,
            |b, x| {
                let a = unary(b, "nn.relu", x);
                let n = unary(b, "negative", x);
                concat(b, &[a, n], 2)
            },
            |x| vec![concat_ref(&[&x.map(relu), &x.map(neg)], 2)],
        ),
        case(
            "axis 3 with 2 channels",
            &[1, 2, 2, 2],
            0,
            |b, x| {
                let a = unary(b, "nn.relu", x);
                let n = unary(b, "negative", x);
                concat(b, &[a, n], 3)
            },
            |x| vec![concat_ref(&[&x.map(relu), &x.map(neg)], 3)],
        ),
        case(
            "axis 2 after extent-1 dimensions",
            &[1, 1, 4, 4],
            2,
            |b, x| {
                let a = unary(b, "nn.relu", x);
                let n = unary(b, "negative", x);
                concat(b, &[a, n], 2)
            },
            |x| vec![concat_ref(&[&x.map(relu), &x.map(neg)], 2)],
        ),
        case(
            "axis 0",
            &[2, 8],
            2,
            |b, x| {
                let a = unary(b, "nn.relu", x);
                let n = unary(b, "negative", x);
                concat(b, &[a, n], 0)
            },
            |x| vec![concat_ref(&[&x.map(relu), &x.map(neg)], 0)],
        ),
        case(
            "a negative axis",
            &[1, 2, 8],
            2,
            |b, x| {
                let a = unary(b, "nn.relu", x);
                let n = unary(b, "negative", x);
                concat(b, &[a, n], -2)
            },
            |x| vec![concat_ref(&[&x.map(relu), &x.map(neg)], 1)],
        ),
        case(
            "a view of a value",
            &[1, 16],
            1,
            |b, x| {
                let a = unary(b, "nn.relu", x);
                let v = b
                    .call(
                        "reshape",
                        &[a],
                        Attrs::new().with("newshape", vec![1i64, 2, 8]),
                    )
                    .unwrap();
                let xs = b
                    .call(
                        "reshape",
                        &[x],
                        Attrs::new().with("newshape", vec![1i64, 2, 8]),
                    )
                    .unwrap();
                let n = unary(b, "negative", xs);
                concat(b, &[v, n], 1)
            },
            |x| {
                let x = Val {
                    shape: vec![1, 2, 8],
                    data: x.data.clone(),
                };
                vec![concat_ref(&[&x.map(relu), &x.map(neg)], 1)]
            },
        ),
        case(
            // Parts of 96 bytes: offsets 0, 96 and 192; 96 is not a multiple of 64.
            "offsets not multiples of 64 bytes",
            &[1, 1, 24],
            2,
            |b, x| {
                let a = unary(b, "nn.relu", x);
                let n = unary(b, "negative", x);
                let e = unary(b, "abs", x);
                concat(b, &[a, n, e], 1)
            },
            |x| {
                vec![concat_ref(
                    &[&x.map(relu), &x.map(neg), &x.map(f32::abs)],
                    1,
                )]
            },
        ),
        case(
            // The two outputs of one split: only one is placed.
            "two outputs of one producer",
            &[1, 4, 8],
            1,
            |b, x| {
                let s = b
                    .call(
                        "split",
                        &[x],
                        Attrs::new()
                            .with("indices_or_sections", 2i64)
                            .with("axis", 1i64),
                    )
                    .unwrap();
                let p = b.tuple_get_item(s, 0).unwrap();
                let q = b.tuple_get_item(s, 1).unwrap();
                concat(b, &[q, p], 1)
            },
            |x| {
                let half = |k: usize| Val {
                    shape: vec![1, 2, 8],
                    data: x.data[k * 16..(k + 1) * 16].to_vec(),
                };
                vec![concat_ref(&[&half(1), &half(0)], 1)]
            },
        ),
        case(
            // Inner parts land in the outer output through the inner concatenation.
            "nested concatenations",
            &[1, 2, 8],
            4,
            |b, x| {
                let a = unary(b, "nn.relu", x);
                let n = unary(b, "negative", x);
                let inner = concat(b, &[a, n], 1);
                let e = unary(b, "abs", x);
                let outer = concat(b, &[e, inner], 1);
                unary(b, "negative", outer)
            },
            |x| {
                let inner = concat_ref(&[&x.map(relu), &x.map(neg)], 1);
                vec![concat_ref(&[&x.map(f32::abs), &inner], 1).map(neg)]
            },
        ),
        case(
            // DenseNet: each block's concatenation feeds a layer and the next concatenation,
            // so the whole chain lands in the last output; each layer writes its slice.
            "a dense block",
            &[1, 2, 8],
            6,
            |b, x| {
                let mut joined = unary(b, "nn.relu", x);
                for _ in 0..3 {
                    let t = unary(b, "abs", joined);
                    let layer = unary(b, "negative", t);
                    joined = concat(b, &[joined, layer], 1);
                }
                unary(b, "negative", joined)
            },
            |x| {
                let mut joined = x.map(relu);
                for _ in 0..3 {
                    let layer = joined.map(f32::abs).map(neg);
                    joined = concat_ref(&[&joined, &layer], 1);
                }
                vec![joined.map(neg)]
            },
        ),
        case(
            // The layer reads the concatenation it would be placed beside: copied.
            "a layer of one op after a concatenation",
            &[1, 2, 8],
            3,
            |b, x| {
                let a = unary(b, "nn.relu", x);
                let n = unary(b, "negative", x);
                let inner = concat(b, &[a, n], 1);
                let layer = unary(b, "abs", inner);
                let outer = concat(b, &[inner, layer], 1);
                unary(b, "negative", outer)
            },
            |x| {
                let inner = concat_ref(&[&x.map(relu), &x.map(neg)], 1);
                vec![concat_ref(&[&inner, &inner.map(f32::abs)], 1).map(neg)]
            },
        ),
    ];
    for c in cases {
        let report = check(&c.module, &c.inputs, &c.want);
        assert_eq!(report.in_place_parts, c.placed, "{}", c.name);
    }
}

#[test]
fn half_precision_parts_are_placed_and_exact() {
    // Quarter steps from -4 to 3.75: exact in float16.
    let shape = [1, 2, 16];
    let xs: Vec<f32> = (0..32).map(|i| (i as f32 - 16.0) * 0.25).collect();
    let mut b = FunctionBuilder::new();
    let x = b.param("x", Type::tensor(shape, DType::Float16));
    let a = unary(&mut b, "nn.relu", x);
    let n = unary(&mut b, "negative", x);
    let c = concat(&mut b, &[a, n], 1);
    let m = Module::from_main(b.finish(vec![x], c, Attrs::new()).unwrap());
    let halves: Vec<half::f16> = xs.iter().map(|&v| half::f16::from_f32(v)).collect();
    let input = Tensor::from_slice(shape.to_vec(), &halves).unwrap();
    let want: Vec<u16> = xs
        .iter()
        .map(|&v| relu(v))
        .chain(xs.iter().map(|&v| -v))
        .map(|v| half::f16::from_f32(v).to_bits())
        .collect();
    let in_place = executor(&m, ConcatParts::InPlace, 1, false);
    assert_eq!(in_place.memory_report().in_place_parts, 2);
    let got = in_place.run(std::slice::from_ref(&input)).unwrap();
    let copied = executor(&m, ConcatParts::Copied, 1, false)
        .run(std::slice::from_ref(&input))
        .unwrap();
    assert_eq!(got[0].as_bytes(), copied[0].as_bytes());
    let values: Vec<u16> = got[0]
        .as_slice::<half::f16>()
        .unwrap()
        .iter()
        .map(|v| v.to_bits())
        .collect();
    assert_eq!(values, want);
}

/// A random program over `[1, c, 16]` tensors (64 bytes per channel): unary ops, adds of equal shapes and
/// concatenations along the channels of 2 to 3 earlier values (repeats allowed), with 1 to 3
/// results. Returns the module, its input and the evaluator's outputs.
fn random_program(rng: &mut Lcg) -> (Module, Tensor, Vec<Val>) {
    let mut b = FunctionBuilder::new();
    let x_shape = [1, 1 + rng.below(3), 16];
    let x = b.param("x", f32_ty(&x_shape));
    let xv = rng.val(&x_shape);
    let mut ids = vec![x];
    let mut vals = vec![xv.clone()];
    for _ in 0..(3 + rng.below(10)) {
        let pick = rng.below(ids.len());
        let (id, val) = match rng.below(4) {
            0 => (unary(&mut b, "nn.relu", ids[pick]), vals[pick].map(relu)),
            1 => (unary(&mut b, "negative", ids[pick]), vals[pick].map(|v| -v)),
            2 => {
                let same: Vec<usize> = (0..ids.len())
                    .filter(|&k| vals[k].shape == vals[pick].shape)
                    .collect();
                let other = same[rng.below(same.len())];
                let id = b
                    .call("add", &[ids[pick], ids[other]], Attrs::new())
                    .unwrap();
                let data = vals[pick]
                    .data
                    .iter()
                    .zip(&vals[other].data)
                    .map(|(p, q)| p + q)
                    .collect();
                let val = Val {
                    shape: vals[pick].shape.clone(),
                    data,
                };
                (id, val)
            }
            _ => {
                let k = 2 + rng.below(2);
                let picks: Vec<usize> = (0..k).map(|_| rng.below(ids.len())).collect();
                let parts: Vec<ExprId> = picks.iter().map(|&p| ids[p]).collect();
                let refs: Vec<&Val> = picks.iter().map(|&p| &vals[p]).collect();
                let val = concat_ref(&refs, 1);
                (concat(&mut b, &parts, 1), val)
            }
        };
        ids.push(id);
        vals.push(val);
    }
    let mut results = vec![ids.len() - 1];
    for _ in 0..rng.below(3) {
        results.push(rng.below(ids.len()));
    }
    let fields: Vec<ExprId> = results.iter().map(|&r| ids[r]).collect();
    let body = b.tuple(&fields).unwrap();
    let m = Module::from_main(b.finish(vec![x], body, Attrs::new()).unwrap());
    let want = results.iter().map(|&r| vals[r].clone()).collect();
    (m, xv.tensor(), want)
}

#[test]
fn random_programs_match_the_evaluator() {
    let mut rng = Lcg(2026);
    let mut placed = 0;
    for _ in 0..300 {
        let (m, x, want) = random_program(&mut rng);
        placed += check(&m, std::slice::from_ref(&x), &want).in_place_parts;
    }
    // The programs do exercise the placement (the count depends only on the fixed seed).
    assert!(placed > 100, "only {placed} parts placed");
}

/// The memory budget counts a concatenation's buffer once, with its parts in it.
#[test]
fn the_memory_budget_counts_parts_in_place_once() {
    // a = relu(x), b = -x, c = concat(a, b), result relu(c); x is [1, 256, 64] (64 KiB).
    let mut b = FunctionBuilder::new();
    let x = b.param("x", f32_ty(&[1, 256, 64]));
    let a = unary(&mut b, "nn.relu", x);
    let n = unary(&mut b, "negative", x);
    let c = concat(&mut b, &[a, n], 1);
    let y = unary(&mut b, "nn.relu", c);
    let m = Module::from_main(b.finish(vec![x], y, Attrs::new()).unwrap());
    let plan = |parts, budget: u64| {
        Executor::with_concat_parts(
            &m,
            ExecOptions {
                threads: 1,
                profile: false,
                memory_budget: Some(budget),
            },
            &ExternalModules::new(),
            parts,
        )
    };
    // Besides the input (64 KiB), copied: a, b and c (256 KiB) plus the result (128 KiB); in
    // place: c and the result.
    let in_place = plan(ConcatParts::InPlace, 330 << 10).expect("320 KiB fit in 330 KiB");
    assert_eq!(in_place.memory_report().planned_bytes, 256 << 10);
    let err = plan(ConcatParts::Copied, 330 << 10)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("to 458752 bytes (448.0 KiB), over the memory budget of 337920 bytes"),
        "{err}"
    );
    // Under 128 KiB the concatenation's result itself is refused, naming it.
    let err = plan(ConcatParts::InPlace, 100 << 10)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains(&format!("{c}: concatenate")) && err.contains("131072 bytes (128.0 KiB)"),
        "{err}"
    );
}
