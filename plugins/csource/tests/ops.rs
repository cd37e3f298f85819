//! Every supported op, compiled to C and compared with byoc's host kernels through the
//! host executor, on odd shapes: sizes that are not multiples of 8, asymmetric padding,
//! dilation, groups and depthwise, strides, ceil_mode, broadcasting.

mod common;

use anyhow::Result;
use common::check;

fn t(shape: &str) -> String {
    format!("Tensor[({shape}), float32]")
}

#[test]
fn conv2d_padding_1() -> Result<()> {
    check(&format!(
        "def @main(%x: {}, %w: {}) {{ nn.conv2d(%x, %w, padding=[1, 1]) }}",
        t("1, 3, 7, 9"),
        t("5, 3, 3, 3")
    ))?;
    Ok(())
}

#[test]
fn conv2d_strides_asymmetric_padding_dilation() -> Result<()> {
    check(&format!(
        "def @main(%x: {}, %w: {}) {{ nn.conv2d(%x, %w, strides=[2, 3], padding=[1, 0, 2, 1], dilation=[2, 1]) }}",
        t("2, 3, 11, 13"),
        t("6, 3, 3, 2")
    ))?;
    Ok(())
}

#[test]
fn conv2d_column_stride_dilation_and_one_sided_padding() -> Result<()> {
    // Stride 2 across with dilation 2 across, padding on the right only, 3 groups, widths
    // that are not multiples of the vector length.
    check(&format!(
        "def @main(%x: {}, %w: {}) {{ nn.conv2d(%x, %w, strides=[1, 2], padding=[0, 0, 0, 2], dilation=[1, 2], groups=3) }}",
        t("2, 6, 5, 19"),
        t("9, 2, 2, 3")
    ))?;
    // Padding on the bottom only, stride 2 both ways, an output width of 1.
    check(&format!(
        "def @main(%x: {}, %w: {}) {{ nn.conv2d(%x, %w, strides=[2, 2], padding=[0, 0, 1, 0]) }}",
        t("1, 3, 6, 3"),
        t("5, 3, 3, 3")
    ))?;
    Ok(())
}

#[test]
fn conv2d_groups_and_depthwise() -> Result<()> {
    check(&format!(
        "def @main(%x: {}, %w: {}) {{ nn.conv2d(%x, %w, padding=[1], groups=2) }}",
        t("1, 6, 5, 7"),
        t("4, 3, 3, 3")
    ))?;
    check(&format!(
        "def @main(%x: {}, %w: {}) {{ nn.conv2d(%x, %w, strides=[2, 2], padding=[1, 1], groups=5) }}",
        t("1, 5, 9, 10"),
        t("5, 1, 3, 3")
    ))?;
    Ok(())
}

#[test]
fn conv2d_1x1_batch_and_large_stride() -> Result<()> {
    check(&format!(
        "def @main(%x: {}, %w: {}) {{ nn.conv2d(%x, %w) }}",
        t("3, 17, 4, 5"),
        t("9, 17, 1, 1")
    ))?;
    check(&format!(
        "def @main(%x: {}, %w: {}) {{ nn.conv2d(%x, %w, strides=[4, 4], padding=[3, 3, 0, 0], kernel_size=[2, 2]) }}",
        t("1, 2, 10, 10"),
        t("3, 2, 2, 2")
    ))?;
    Ok(())
}

#[test]
fn dense_2d_and_3d() -> Result<()> {
    check(&format!(
        "def @main(%x: {}, %w: {}) {{ nn.dense(%x, %w) }}",
        t("3, 13"),
        t("7, 13")
    ))?;
    check(&format!(
        "def @main(%x: {}, %w: {}) {{ nn.dense(%x, %w) }}",
        t("2, 3, 5"),
        t("4, 5")
    ))?;
    Ok(())
}

#[test]
fn bias_add_on_any_axis() -> Result<()> {
    check(&format!(
        "def @main(%x: {}, %b: {}) {{ nn.bias_add(%x, %b) }}",
        t("2, 5, 3, 3"),
        t("5")
    ))?;
    check(&format!(
        "def @main(%x: {}, %b: {}) {{ nn.bias_add(%x, %b, axis=-1) }}",
        t("4, 11"),
        t("11")
    ))?;
    check(&format!(
        "def @main(%x: {}, %b: {}) {{ nn.bias_add(%x, %b, axis=2) }}",
        t("2, 3, 7, 2"),
        t("7")
    ))?;
    Ok(())
}

#[test]
fn binary_ops_broadcast() -> Result<()> {
    for op in ["add", "subtract", "multiply"] {
        check(&format!(
            "def @main(%x: {}, %y: {}) {{ {op}(%x, %y) }}",
            t("2, 3, 5"),
            t("3, 1")
        ))?;
        check(&format!(
            "def @main(%x: {}, %y: {}) {{ {op}(%x, %y) }}",
            t("1, 4"),
            t("3, 1")
        ))?;
        check(&format!(
            "def @main(%x: {}, %y: {}) {{ {op}(%x, %y) }}",
            t("3, 7"),
            t("3, 7")
        ))?;
        check(&format!(
            "def @main(%x: {}) {{ {op}(%x, 0.5f) }}",
            t("2, 9")
        ))?;
    }
    Ok(())
}

#[test]
fn activations() -> Result<()> {
    for body in [
        "nn.relu(%x)",
        "clip(%x, a_min=-0.25f, a_max=0.5f)",
        "sigmoid(%x)",
        "tanh(%x)",
    ] {
        check(&format!("def @main(%x: {}) {{ {body} }}", t("3, 5, 7")))?;
    }
    Ok(())
}

#[test]
fn max_pool2d_padding_strides_ceil_dilation() -> Result<()> {
    for attrs in [
        "pool_size=[3, 3], strides=[2, 2], padding=[1, 1]",
        "pool_size=[2, 3], strides=[2, 2], padding=[0, 1, 1, 0], ceil_mode=True",
        "pool_size=[2, 2], dilation=[2, 2], padding=[1, 1]",
        "pool_size=[3, 3], strides=[3, 3], ceil_mode=True",
    ] {
        check(&format!(
            "def @main(%x: {}) {{ nn.max_pool2d(%x, {attrs}) }}",
            t("2, 3, 7, 10")
        ))?;
    }
    Ok(())
}

#[test]
fn avg_pool2d_count_include_pad_and_ceil_mode() -> Result<()> {
    for attrs in [
        "pool_size=[3, 3], strides=[2, 2], padding=[1, 1]",
        "pool_size=[3, 3], strides=[2, 2], padding=[1, 1], count_include_pad=True",
        "pool_size=[2, 3], strides=[2, 2], padding=[1, 0, 0, 2], ceil_mode=True, count_include_pad=True",
        "pool_size=[3, 2], strides=[3, 2], ceil_mode=True",
    ] {
        check(&format!(
            "def @main(%x: {}) {{ nn.avg_pool2d(%x, {attrs}) }}",
            t("1, 4, 8, 7")
        ))?;
    }
    Ok(())
}

#[test]
fn global_pools() -> Result<()> {
    for op in ["nn.global_max_pool2d", "nn.global_avg_pool2d"] {
        check(&format!(
            "def @main(%x: {}) {{ {op}(%x) }}",
            t("2, 5, 3, 7")
        ))?;
    }
    Ok(())
}

#[test]
fn softmax_on_any_axis() -> Result<()> {
    check(&format!(
        "def @main(%x: {}) {{ nn.softmax(%x) }}",
        t("3, 10")
    ))?;
    check(&format!(
        "def @main(%x: {}) {{ nn.softmax(%x, axis=1) }}",
        t("2, 5, 3")
    ))?;
    Ok(())
}

#[test]
fn views_cost_no_code() -> Result<()> {
    // A view feeding a kernel, and views as outputs (copied into the output buffer).
    let src = check(&format!(
        "def @main(%x: {}) {{
           %0 = nn.batch_flatten(%x);
           %1 = nn.relu(%0);
           %2 = reshape(%1, newshape=[3, 2, 5]);
           %3 = expand_dims(%2, axis=0);
           %4 = squeeze(%3, axis=[0]);
           (%4, reshape(%x, newshape=[30]))
         }}",
        t("3, 2, 5, 1")
    ))?;
    assert_eq!(src.code.matches("/* %").count(), 1, "{}", src.code);
    Ok(())
}
