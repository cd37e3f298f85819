//! Bit-exact agreement of vta with the host's integer kernels on realized int8 layers: the
//! ResNet-18 conv workloads C2–C11, residual + relu epilogues, channel counts that are not
//! multiples of 16, 1x1 / 5x5 kernels, strides 1 and 2, dense, weights as constants and as
//! inputs, both virtual-thread settings, and random shapes and epilogues.

mod common;

use anyhow::Result;
use byoc_plugin_vta::VtaConfig;
use common::{check, check_with, Case, RESNET18};
use proptest::prelude::*;

#[test]
fn resnet18_workloads_match_the_host() -> Result<()> {
    for (name, h, c, o, k, pad, stride) in RESNET18 {
        let profile = check(&Case::resnet(h, c, o, k, pad, stride))?;
        let p = &profile[0];
        assert!(
            p.gemm_counter > 0 && p.cycles > p.gemm_counter / 2,
            "{name}: {p:?}"
        );
    }
    Ok(())
}

#[test]
fn residual_and_relu_epilogue() -> Result<()> {
    check(&Case {
        residual: true,
        relu: true,
        ..Case::conv(32, 10, 48)
    })?;
    // Without a clip the cast to int8 wraps, as STORE truncates.
    check(&Case {
        residual: true,
        clip: None,
        shift: 4,
        ..Case::conv(16, 6, 16)
    })?;
    Ok(())
}

#[test]
fn int32_outputs_leave_as_byte_planes() -> Result<()> {
    // A ResNet-50 downsample shortcut: 1x1 stride 2 with its bias, int32 out.
    check(&Case {
        k: (1, 1),
        pad: [0; 4],
        stride: (2, 2),
        int32_out: true,
        ..Case::conv(64, 14, 256)
    })?;
    // A residual sum with relu, int32 out, channels padded, values beyond 16 bits.
    check(&Case {
        residual: true,
        relu: true,
        int32_out: true,
        ..Case::conv(24, 9, 40)
    })?;
    for threads in [1, 2] {
        check_with(
            &Case {
                bias: false,
                int32_out: true,
                ..Case::conv(32, 7, 16)
            },
            &VtaConfig::default(),
            threads,
            11,
        )?;
    }
    Ok(())
}

#[test]
fn channel_counts_are_padded_to_blocks() -> Result<()> {
    check(&Case::conv(24, 9, 40))?;
    check(&Case {
        k: (7, 7),
        stride: (2, 2),
        pad: [3; 4],
        ..Case::conv(3, 32, 32)
    })?;
    check(&Case::conv(3, 8, 5))?;
    Ok(())
}

#[test]
fn kernels_strides_and_asymmetric_padding() -> Result<()> {
    check(&Case {
        k: (1, 1),
        pad: [0; 4],
        ..Case::conv(32, 12, 32)
    })?;
    check(&Case {
        k: (5, 5),
        pad: [2; 4],
        ..Case::conv(16, 11, 32)
    })?;
    check(&Case {
        k: (5, 5),
        stride: (2, 2),
        pad: [2; 4],
        ..Case::conv(16, 11, 16)
    })?;
    check(&Case {
        k: (3, 2),
        stride: (2, 1),
        pad: [0, 1, 2, 0],
        ..Case::conv(16, 9, 16)
    })?;
    check(&Case {
        n: 2,
        ..Case::conv(16, 5, 32)
    })?;
    Ok(())
}

#[test]
fn dense_layers() -> Result<()> {
    let dense = Case {
        dense: true,
        n: 1,
        c: 512,
        o: 100,
        hw: (1, 1),
        ..Case::conv(0, 1, 0)
    };
    check(&dense)?;
    check(&Case {
        n: 4,
        c: 40,
        o: 24,
        residual: true,
        ..dense.clone()
    })?;
    check(&Case {
        constants: false,
        ..dense
    })?;
    Ok(())
}

#[test]
fn weights_and_biases_as_inputs() -> Result<()> {
    check(&Case {
        constants: false,
        ..Case::conv(32, 8, 48)
    })?;
    Ok(())
}

#[test]
fn one_and_two_virtual_threads_agree_with_the_host() -> Result<()> {
    let case = Case::resnet(56, 64, 64, 3, 1, 1);
    let config = VtaConfig::default();
    let one = check_with(&case, &config, 1, 3)?;
    let two = check_with(&case, &config, 2, 3)?;
    assert_eq!(one[0].gemm_counter, two[0].gemm_counter);
    assert!(
        two[0].cycles < one[0].cycles,
        "latency hiding: {} vs {}",
        two[0].cycles,
        one[0].cycles
    );
    Ok(())
}

#[test]
fn a_smaller_and_a_wider_configuration() -> Result<()> {
    let small = VtaConfig::from_json(
        r#"{"LOG_INP_WIDTH": 3, "LOG_WGT_WIDTH": 3, "LOG_ACC_WIDTH": 5, "LOG_BATCH": 0, "LOG_BLOCK": 4,
            "LOG_UOP_BUFF_SIZE": 12, "LOG_INP_BUFF_SIZE": 12, "LOG_WGT_BUFF_SIZE": 14, "LOG_ACC_BUFF_SIZE": 13}"#,
    )?;
    check_with(&Case::conv(64, 20, 32), &small, 2, 5)?;
    let wide = VtaConfig::from_json(
        r#"{"LOG_INP_WIDTH": 3, "LOG_WGT_WIDTH": 3, "LOG_ACC_WIDTH": 5, "LOG_BATCH": 0, "LOG_BLOCK": 5,
            "LOG_UOP_BUFF_SIZE": 15, "LOG_INP_BUFF_SIZE": 15, "LOG_WGT_BUFF_SIZE": 19, "LOG_ACC_BUFF_SIZE": 17}"#,
    )?;
    check_with(&Case::conv(40, 12, 70), &wide, 2, 5)?;
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    #[test]
    fn random_layers_match_the_host(
        c in 1usize..40, o in 1usize..40, hw in 1usize..12, k in 1usize..4,
        stride in 1usize..3, pad in 0usize..3, bias: bool, residual: bool,
        shift in 0i64..12, clip: bool, relu: bool, constants: bool, dense: bool, seed in 0u64..1000,
        int32_out: bool,
    ) {
        let k = k.min(hw + 2 * pad);
        let case = Case {
            n: 1, c, hw: (hw, hw), o, k: (k, k), stride: (stride, stride), pad: [pad; 4],
            bias, residual, shift, clip: clip.then_some((-100.0, 90.0)), relu, constants, dense,
            int32_out: int32_out && !dense,
        };
        let result = check_with(&case, &VtaConfig::default(), 2, seed);
        match result {
            Ok(_) => {}
            // Tiny layers may give a constant output (e.g. a single clipped value): the
            // comparison itself is what matters there.
            Err(e) if e.to_string().contains("degenerate") => {}
            Err(e) => prop_assert!(false, "{e:#}"),
        }
    }
}
