//! Instruction and micro-op encodings against bit vectors derived by hand from `hw_spec.h`'s
//! layout (default configuration), decode of each, and refusal of bad encodings.

use byoc_plugin_vta::isa::{
    AluInsn, AluOp, DepFlags, GemmInsn, Insn, IsaError, Layout, LoopNest, MemInsn, MemType, Uop,
};
use byoc_plugin_vta::VtaConfig;

fn layout() -> Layout {
    Layout::new(&VtaConfig::default())
}

fn roundtrip(insn: Insn, lo: u64, hi: u64) {
    let l = layout();
    assert_eq!(l.encode(&insn).unwrap(), [lo, hi], "{insn}");
    assert_eq!(l.decode([lo, hi]).unwrap(), insn);
}

fn nest(bgn: u32, end: u32, iters: (u32, u32), dst: (u32, u32), src: (u32, u32)) -> LoopNest {
    LoopNest {
        uop_bgn: bgn,
        uop_end: end,
        iter_out: iters.0,
        iter_in: iters.1,
        dst_factor_out: dst.0,
        dst_factor_in: dst.1,
        src_factor_out: src.0,
        src_factor_in: src.1,
    }
}

#[test]
fn load_inp_with_padding() {
    // opcode 0; push_next bit 6 = 0x40; memory_type 2 << 7 = 0x100; dram 0x1000 << 26.
    // hi: y 14, x 14 << 16, stride 56 << 32, pads 1 at bits 48, 52, 56, 60.
    roundtrip(
        Insn::Load(MemInsn {
            deps: DepFlags {
                push_next: true,
                ..DepFlags::default()
            },
            mem: MemType::Inp,
            sram_base: 0,
            dram_base: 0x1000,
            y_size: 14,
            x_size: 14,
            x_stride: 56,
            y_pad0: 1,
            y_pad1: 1,
            x_pad0: 1,
            x_pad1: 1,
        }),
        0x0000_0040_0000_0140,
        0x1111_0038_000e_000e,
    );
}

#[test]
fn load_uop() {
    roundtrip(
        Insn::Load(MemInsn {
            mem: MemType::Uop,
            dram_base: 0x2000,
            y_size: 1,
            x_size: 9,
            x_stride: 9,
            ..MemInsn::default()
        }),
        0x0000_0080_0000_0000,
        0x0000_0009_0009_0001,
    );
}

#[test]
fn gemm() {
    // opcode 2 | pop_prev 0x8 | push_prev 0x20 = 0x2a; uop_end 9 << 21; iter_out 4 << 35;
    // iter_in 14 << 49. hi: dst 196 | 14 << 11; src 0 | 16 << 33; wgt 9 << 44.
    roundtrip(
        Insn::Gemm(GemmInsn {
            deps: DepFlags {
                pop_prev: true,
                push_prev: true,
                ..DepFlags::default()
            },
            reset: false,
            nest: nest(0, 9, (4, 14), (196, 14), (0, 16)),
            wgt_factor_out: 9,
            wgt_factor_in: 0,
        }),
        0x001c_0020_0120_002a,
        0x0000_9020_0000_70c4,
    );
}

#[test]
fn alu_shr_and_max_with_immediates() {
    let alu = |op, imm| {
        Insn::Alu(AluInsn {
            deps: DepFlags::default(),
            reset: false,
            nest: nest(9, 10, (1, 196), (0, 1), (0, 1)),
            op,
            use_imm: true,
            imm,
        })
    };
    // opcode 4; uop_bgn 9 << 8; uop_end 10 << 21; iter 1 << 35, 196 << 49.
    // hi: dst_in 1 << 11, src_in 1 << 33, opcode 3 << 44, use_imm 1 << 47, imm 8 << 48.
    roundtrip(
        alu(AluOp::Shr, 8),
        0x0188_0008_0140_0904,
        0x0008_b002_0000_0800,
    );
    // MAX = 1 << 44; imm -127 = 0xff81.
    roundtrip(
        alu(AluOp::Max, -127),
        0x0188_0008_0140_0904,
        0xff81_9002_0000_0800,
    );
}

#[test]
fn store_and_finish() {
    roundtrip(
        Insn::Store(MemInsn {
            deps: DepFlags {
                pop_prev: true,
                push_prev: true,
                ..DepFlags::default()
            },
            mem: MemType::Out,
            sram_base: 0,
            dram_base: 0x3000,
            y_size: 14,
            x_size: 14,
            x_stride: 28,
            ..MemInsn::default()
        }),
        0x0000_00c0_0000_0229,
        0x0000_001c_000e_000e,
    );
    roundtrip(Insn::Finish(DepFlags::default()), 3, 0);
}

#[test]
fn uop_fields() {
    let l = layout();
    let u = Uop {
        dst: 5,
        src: 17,
        wgt: 3,
    };
    assert_eq!(l.encode_uop(&u).unwrap(), 0x00c0_8805);
    assert_eq!(l.decode_uop(0x00c0_8805), u);
}

#[test]
fn bad_encodings_are_errors() {
    let l = layout();
    assert_eq!(l.decode([5, 0]), Err(IsaError::Opcode(5)));
    assert_eq!(l.decode([7 << 7, 0]), Err(IsaError::MemType(7)));
    assert_eq!(l.decode([4, 7 << 44]), Err(IsaError::AluOpcode(7)));
    let too_big = Insn::Gemm(GemmInsn {
        deps: DepFlags::default(),
        reset: false,
        nest: nest(0, 1, (1 << 14, 1), (0, 0), (0, 0)),
        wgt_factor_out: 0,
        wgt_factor_in: 0,
    });
    assert!(matches!(
        l.encode(&too_big),
        Err(IsaError::FieldOverflow {
            field: "iter_out",
            ..
        })
    ));
    assert!(matches!(
        l.encode_uop(&Uop {
            dst: 2048,
            src: 0,
            wgt: 0
        }),
        Err(IsaError::FieldOverflow {
            field: "uop dst_idx",
            ..
        })
    ));
}

#[test]
fn every_instruction_prints_its_fields_on_one_line() {
    let text = Insn::Gemm(GemmInsn {
        deps: DepFlags {
            pop_prev: true,
            ..DepFlags::default()
        },
        reset: true,
        nest: nest(3, 5, (2, 7), (7, 1), (0, 0)),
        wgt_factor_out: 0,
        wgt_factor_in: 0,
    })
    .to_string();
    assert_eq!(
        text,
        "GEMM   rst  uop=3..5 iter=2x7 dst=7/1 src=0/0 wgt=0/0 pop_prev"
    );
}
