//! The simulator's semantics per instruction (padding, truncation, reset, each ALU op,
//! negative shifts, wrapping), its token queues and cycle model, and its errors on bad
//! programs: out-of-buffer accesses, deadlocks, a missing FINISH. Expected values are worked
//! out by hand from fsim's definitions.

use byoc_plugin_vta::isa::{
    AluInsn, AluOp, DepFlags, GemmInsn, Insn, Layout, LoopNest, MemInsn, MemType, Uop,
};
use byoc_plugin_vta::{SimError, Simulator, VtaConfig};

const B: usize = 16;

fn finish() -> Insn {
    Insn::Finish(DepFlags::default())
}

fn load(mem: MemType, sram: u32, dram: u32, y: u32, x: u32, stride: u32, pads: [u32; 4]) -> Insn {
    Insn::Load(MemInsn {
        deps: DepFlags::default(),
        mem,
        sram_base: sram,
        dram_base: dram,
        y_size: y,
        x_size: x,
        x_stride: stride,
        y_pad0: pads[0],
        y_pad1: pads[1],
        x_pad0: pads[2],
        x_pad1: pads[3],
    })
}

fn one_loop(bgn: u32, end: u32, n: u32) -> LoopNest {
    LoopNest {
        uop_bgn: bgn,
        uop_end: end,
        iter_out: 1,
        iter_in: n,
        dst_factor_out: 0,
        dst_factor_in: 1,
        src_factor_out: 0,
        src_factor_in: 1,
    }
}

fn alu(op: AluOp, imm: Option<i16>, nest: LoopNest) -> Insn {
    Insn::Alu(AluInsn {
        deps: DepFlags::default(),
        reset: false,
        nest,
        op,
        use_imm: imm.is_some(),
        imm: imm.unwrap_or(0),
    })
}

/// A simulator whose uop buffer holds `uops` from position 0 (loaded from DRAM offset 0).
fn with_uops(uops: &[Uop], dram: &mut Vec<u8>) -> Vec<Insn> {
    let l = Layout::new(&VtaConfig::default());
    for u in uops {
        dram.extend_from_slice(&l.encode_uop(u).unwrap().to_le_bytes());
    }
    dram.resize(dram.len().div_ceil(256) * 256 + 4096, 0);
    vec![load(
        MemType::Uop,
        0,
        0,
        1,
        uops.len() as u32,
        uops.len() as u32,
        [0; 4],
    )]
}

/// A program that loads the single micro-op `dst`, `src` (weight 0) into uop 0, and its DRAM.
fn one_uop(dst: u32, src: u32) -> (Vec<Insn>, Vec<u8>) {
    let mut dram = Vec::new();
    let prog = with_uops(&[Uop { dst, src, wgt: 0 }], &mut dram);
    (prog, dram)
}

#[test]
fn load_pads_with_zero_rows_and_columns() {
    let mut sim = Simulator::new(&VtaConfig::default());
    // DRAM: 3 rows x 4 input elements; element e holds lanes e*16 + lane (as int8).
    let mut dram: Vec<u8> = (0..12 * B).map(|i| i as u8).collect();
    dram.resize(4096, 0);
    // Rows 1..3, columns 1..3 of the 4-wide image, one zero row above and below, one zero
    // column left and two right: 4 x 5 elements at SRAM 10.
    let prog = vec![load(MemType::Inp, 10, 5, 2, 2, 4, [1, 1, 1, 2]), finish()];
    sim.run(&prog, &mut dram).unwrap();
    let m = sim.machine();
    let elem = |i| m.inp_element(i).unwrap()[0];
    // Row 0 of the tile is padding.
    assert!((10..15).all(|i| m.inp_element(i).unwrap().iter().all(|&v| v == 0)));
    // Row 1: pad, elements 5 and 6, pad, pad.
    assert_eq!(
        [elem(15), elem(16), elem(17), elem(18), elem(19)],
        [0, (5 * B) as i8, (6 * B) as i8, 0, 0]
    );
    assert_eq!(m.inp_element(16).unwrap()[3], (5 * B + 3) as i8);
    // Row 2: elements 9 and 10 (row stride 4).
    assert_eq!(
        [elem(21), elem(22)],
        [(9 * B) as u8 as i8, (10 * B) as u8 as i8]
    );
    assert!((25..30).all(|i| m.inp_element(i).unwrap().iter().all(|&v| v == 0)));
}

#[test]
fn store_keeps_the_low_8_bits() {
    let mut sim = Simulator::new(&VtaConfig::default());
    let lanes: Vec<i32> = (0..B as i32)
        .map(|j| [300, -129, 127, -128][j as usize % 4] + 256 * j)
        .collect();
    assert!(sim.machine_mut().set_acc_element(3, &lanes));
    let mut dram = vec![0u8; 4096];
    let store = Insn::Store(MemInsn {
        mem: MemType::Out,
        sram_base: 3,
        dram_base: 2,
        y_size: 1,
        x_size: 1,
        x_stride: 1,
        ..MemInsn::default()
    });
    let p = sim.run(&[store, finish()], &mut dram).unwrap();
    let want: Vec<u8> = lanes.iter().map(|&v| (v & 0xff) as u8).collect();
    assert_eq!(&dram[32..48], &want[..]);
    assert_eq!(dram[32], 44); // 300 = 0x12c
    assert_eq!(dram[33] as i8, 127); // -129 wraps to 127
    assert_eq!(p.out_store_nbytes, 16);
}

#[test]
fn gemm_accumulates_with_wrapping_and_reset_zeroes() {
    let mut sim = Simulator::new(&VtaConfig::default());
    // Input element 0: lanes k -> k - 8; weight element 0: row j, column k -> (j == k) * 2 + 1.
    let (mut prog, mut dram) = one_uop(4, 0);
    let inp_at = dram.len();
    dram.extend((0..B).map(|k| (k as i8 - 8) as u8));
    let wgt_at = dram.len().div_ceil(256) * 256;
    dram.resize(wgt_at, 0);
    dram.extend((0..B * B).map(|i| if i / B == i % B { 3u8 } else { 1 }));
    dram.resize(dram.len() + 256, 0);
    prog.push(load(MemType::Inp, 0, (inp_at / B) as u32, 1, 1, 1, [0; 4]));
    let mut wgt = load(MemType::Wgt, 0, (wgt_at / (B * B)) as u32, 1, 1, 1, [0; 4]);
    // Without this token the GEMM could run before the weights arrive.
    wgt.deps_mut().push_next = true;
    prog.push(wgt);
    let gemm = |reset, n| {
        Insn::Gemm(GemmInsn {
            deps: DepFlags {
                pop_prev: true,
                ..DepFlags::default()
            },
            reset,
            nest: LoopNest {
                iter_out: 1,
                iter_in: n,
                ..one_loop(0, 1, n)
            },
            wgt_factor_out: 0,
            wgt_factor_in: 0,
        })
    };
    // Three passes over one uop: acc[4 + x] += inp[0 + x] . wgt[0]^T for x in 0..3; only
    // x = 0 reads the loaded element, the others read zeros.
    let (mut p0, p1) = (prog.clone(), prog);
    p0.push(gemm(false, 3));
    p0.push(finish());
    // sum_k (k - 8) = -8; row j: -8 + 2 (j - 8).
    assert!(sim.machine_mut().set_acc_element(4, &[i32::MAX; B]));
    let profile = sim.run(&p0, &mut dram.clone()).unwrap();
    let got = sim.machine().acc_element(4).unwrap().to_vec();
    let want: Vec<i32> = (0..B as i32)
        .map(|j| i32::MAX.wrapping_add(-8 + 2 * (j - 8)))
        .collect();
    assert_eq!(got, want);
    assert_eq!(profile.gemm_counter, 3);
    let mut p1 = p1;
    p1.push(gemm(true, 1));
    p1.push(finish());
    let profile = sim.run(&p1, &mut dram).unwrap();
    assert_eq!(sim.machine().acc_element(4).unwrap(), &[0; B]);
    assert_eq!(profile.gemm_counter, 0, "reset does not count");
}

#[test]
fn each_alu_op_with_immediates_and_tensors() {
    let cases: [(AluOp, i16, i32, i32); 7] = [
        (AluOp::Min, -5, 7, -5),
        (AluOp::Max, -5, -7, -5),
        (AluOp::Add, 1, i32::MAX, i32::MIN),
        (AluOp::Shr, 3, -17, -3),
        (AluOp::Shr, -4, 3, 48),
        (AluOp::Shr, 0, -9, -9),
        (AluOp::Mul, -3, 1 << 30, (1i32 << 30).wrapping_mul(-3)),
    ];
    for (op, imm, x, want) in cases {
        let mut sim = Simulator::new(&VtaConfig::default());
        let (mut prog, mut dram) = one_uop(1, 2);
        sim.machine_mut().set_acc_element(1, &[x; B]);
        sim.machine_mut().set_acc_element(2, &[i32::from(imm); B]);
        prog.push(alu(op, Some(imm), one_loop(0, 1, 1)));
        prog.push(finish());
        sim.run(&prog, &mut dram.clone()).unwrap();
        assert_eq!(
            sim.machine().acc_element(1).unwrap(),
            &[want; B],
            "{op:?} imm {imm}"
        );
        // The same with the operand from the accumulators.
        sim.machine_mut().set_acc_element(1, &[x; B]);
        prog[1] = alu(op, None, one_loop(0, 1, 1));
        let p = sim.run(&prog, &mut dram).unwrap();
        assert_eq!(
            sim.machine().acc_element(1).unwrap(),
            &[want; B],
            "{op:?} tensor {imm}"
        );
        assert_eq!(p.alu_counter, 1);
    }
}

#[test]
fn shift_amounts_outside_31_are_errors() {
    let mut sim = Simulator::new(&VtaConfig::default());
    let (mut prog, mut dram) = one_uop(1, 2);
    prog.push(alu(AluOp::Shr, Some(32), one_loop(0, 1, 1)));
    prog.push(finish());
    let e = sim.run(&prog, &mut dram).unwrap_err().to_string();
    assert!(e.contains("instruction 1") && e.contains("-31..=31"), "{e}");
}

#[test]
fn out_of_buffer_accesses_name_the_instruction() {
    let config = VtaConfig::default();
    let mut sim = Simulator::new(&config);
    let mut dram = vec![0u8; 1 << 16];
    let over = load(
        MemType::Inp,
        (config.inp_depth() - 2) as u32,
        0,
        1,
        3,
        3,
        [0; 4],
    );
    let e = sim.run(&[over, finish()], &mut dram).unwrap_err();
    assert!(matches!(e, SimError::Fault { index: 0, .. }), "{e}");
    assert!(e.to_string().contains("inp buffer"), "{e}");
    let past_dram = load(MemType::Wgt, 0, 1000, 1, 1, 1, [0; 4]);
    let e = sim
        .run(&[past_dram, finish()], &mut dram)
        .unwrap_err()
        .to_string();
    assert!(e.contains("instruction 0") && e.contains("DRAM"), "{e}");
    let (mut prog, mut dram) = one_uop(2040, 0);
    prog.push(alu(AluOp::Add, Some(1), one_loop(0, 1, 9)));
    prog.push(finish());
    let e = sim.run(&prog, &mut dram).unwrap_err().to_string();
    assert!(
        e.contains("instruction 1") && e.contains("acc buffer"),
        "{e}"
    );
}

#[test]
fn token_deadlocks_and_missing_finish_are_errors() {
    let mut sim = Simulator::new(&VtaConfig::default());
    let mut dram = vec![0u8; 4096];
    let mut waits = finish();
    waits.deps_mut().pop_prev = true;
    let e = sim.run(&[waits], &mut dram).unwrap_err();
    assert!(matches!(e, SimError::Deadlock { .. }), "{e}");
    assert!(e.to_string().contains("load->compute"), "{e}");
    let nop = load(MemType::Uop, 0, 0, 0, 0, 0, [0; 4]);
    assert!(matches!(
        sim.run(&[nop], &mut dram),
        Err(SimError::Finish(_))
    ));
    assert!(matches!(
        sim.run(&[finish(), nop], &mut dram),
        Err(SimError::Finish(_))
    ));
    // A store module has no downstream neighbour.
    let mut bad = Insn::Store(MemInsn {
        mem: MemType::Out,
        ..MemInsn::default()
    });
    bad.deps_mut().push_next = true;
    let e = sim
        .run(&[bad, finish()], &mut dram)
        .unwrap_err()
        .to_string();
    assert!(e.contains("push_next"), "{e}");
}

#[test]
fn tokens_order_modules_and_loads_overlap_compute() {
    // Two input loads, each followed by a compute step that waits for it: with tokens the
    // second load runs while the first ALU works.
    let (mut prog, mut dram) = one_uop(0, 0);
    let mut l1 = load(MemType::Inp, 0, 0, 1, 64, 64, [0; 4]);
    l1.deps_mut().push_next = true;
    let l2 = l1;
    let mut a = alu(AluOp::Add, Some(1), one_loop(0, 1, 500));
    a.deps_mut().pop_prev = true;
    prog.extend([l1, a, l2, a, finish()]);
    let mut sim = Simulator::new(&VtaConfig::default());
    let p = sim.run(&prog, &mut dram).unwrap();
    assert_eq!(sim.machine().acc_element(0).unwrap()[0], 2);
    assert_eq!(sim.machine().acc_element(499).unwrap()[0], 2);
    let uop_load = 32 + 1;
    let load_cycles = 32 + 64 * 16 / 8;
    let alu_cycles = 4 + 2 * 500;
    // The second load hides under the first ALU.
    assert_eq!(p.cycles, uop_load.max(load_cycles) + 2 * alu_cycles + 1);
    assert_eq!(p.inp_load_nbytes, 2 * 64 * 16);
    assert_eq!(p.uop_load_nbytes, 4);
}
