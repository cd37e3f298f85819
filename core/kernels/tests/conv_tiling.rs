//! The host conv2d kernel's work split (pixel tiles with a partial last tile, output-channel
//! blocks, the 1×1 path, groups) against a direct convolution computed here in f64, with 1,
//! 2 and 3 threads. Shapes are chosen so every split is taken: many output pixels (several
//! cache-sized tiles), few output pixels with many channels (channel blocks), and few of both.

use byoc_ir::infer_types;
use byoc_ir::op::OpRegistry;
use byoc_ir::Tensor;
use byoc_ir::{AttrValue, Attrs, DType, Expr, FunctionBuilder, Module, TensorType, Type};
use byoc_kernels::host_kernel;
use rand::rngs::StdRng;
use rand::SeedableRng;

struct Case {
    data: [usize; 4],
    weight: [usize; 4],
    stride: usize,
    pad: usize,
    groups: usize,
}

/// Direct NCHW/OIHW convolution in f64.
fn reference(c: &Case, x: &[f64], w: &[f64], oh: usize, ow: usize) -> Vec<f64> {
    let [n, ci, h, wd] = c.data;
    let [co, cig, kh, kw] = c.weight;
    let cog = co / c.groups;
    let mut y = vec![0.0; n * co * oh * ow];
    for b in 0..n {
        for o in 0..co {
            let g = o / cog;
            for oy in 0..oh {
                for ox in 0..ow {
                    let mut acc = 0.0f64;
                    for i in 0..cig {
                        let ic = g * cig + i;
                        for ky in 0..kh {
                            for kx in 0..kw {
                                let iy = (oy * c.stride + ky) as isize - c.pad as isize;
                                let ix = (ox * c.stride + kx) as isize - c.pad as isize;
                                if iy < 0 || ix < 0 || iy >= h as isize || ix >= wd as isize {
                                    continue;
                                }
                                let xv = x[((b * ci + ic) * h + iy as usize) * wd + ix as usize];
                                let wv = w[((o * cig + i) * kh + ky) * kw + kx];
                                acc += xv * wv;
                            }
                        }
                    }
                    y[((b * co + o) * oh + oy) * ow + ox] = acc;
                }
            }
        }
    }
    y
}

fn check(c: &Case) {
    let dt = TensorType::new(c.data, DType::Float32);
    let wt = TensorType::new(c.weight, DType::Float32);
    let (s, p) = (c.stride as i64, c.pad as i64);
    let attrs = Attrs::new()
        .with("strides", AttrValue::ints([s, s]))
        .with("padding", AttrValue::ints([p, p]))
        .with("groups", c.groups as i64);
    let mut b = FunctionBuilder::new();
    let x = b.param("x", Type::Tensor(dt.clone()));
    let w = b.param("w", Type::Tensor(wt.clone()));
    let call = b.call("nn.conv2d", &[x, w], attrs).unwrap();
    let mut m = Module::from_main(b.finish(vec![x, w], call, Attrs::new()).unwrap());
    infer_types(&mut m).unwrap();
    let main = m.main().unwrap();
    let Expr::Call(call_node) = main.expr(call) else {
        panic!("body is not a call")
    };
    let out_ty = main.ty(call).and_then(Type::as_tensor).unwrap().clone();
    let kernel = host_kernel(
        &OpRegistry::lookup("nn.conv2d").unwrap(),
        &call_node.attrs,
        &[dt.clone(), wt.clone()],
        std::slice::from_ref(&out_ty),
    )
    .unwrap();
    let mut rng = StdRng::seed_from_u64(1);
    let xs = Tensor::random_uniform(dt.clone(), &mut rng).unwrap();
    let ws = Tensor::random_uniform(wt.clone(), &mut rng).unwrap();
    let (xv, wv) = (xs.to_f64_vec(), ws.to_f64_vec());
    let want = reference(c, &xv, &wv, out_ty.shape[2], out_ty.shape[3]);
    for threads in [1, 2, 3] {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap();
        let mut y = Tensor::zeros(out_ty.clone());
        pool.install(|| kernel.run(&[xs.view(), ws.view()], &mut [y.view_mut()], threads))
            .unwrap();
        for (k, (got, want)) in y.to_f64_vec().iter().zip(&want).enumerate() {
            assert!(
                (got - want).abs() <= 1e-4 * (1.0 + want.abs()),
                "{:?} {:?} threads={threads}: element {k}: got {got}, want {want}",
                c.data,
                c.weight
            );
        }
    }
}

#[test]
fn pixel_tiles_with_a_partial_last_tile() {
    // 3x3 over 37x29 (1073 pixels, not a multiple of any tile), 3x3 kernel: several tiles.
    check(&Case {
        data: [2, 40, 37, 29],
        weight: [24, 40, 3, 3],
        stride: 1,
        pad: 1,
        groups: 1,
    });
}

#[test]
fn pointwise_tiles_and_channel_blocks() {
    check(&Case {
        data: [1, 48, 33, 31],
        weight: [20, 48, 1, 1],
        stride: 1,
        pad: 0,
        groups: 1,
    });
    // Few pixels, many channels: channel blocks (not a multiple of 16 per thread).
    check(&Case {
        data: [1, 64, 5, 5],
        weight: [70, 64, 1, 1],
        stride: 1,
        pad: 0,
        groups: 1,
    });
}

#[test]
fn channel_blocks_over_a_shared_im2col() {
    check(&Case {
        data: [1, 32, 9, 8],
        weight: [100, 32, 3, 3],
        stride: 1,
        pad: 1,
        groups: 1,
    });
}

#[test]
fn strided_grouped_and_tiny() {
    check(&Case {
        data: [2, 12, 41, 39],
        weight: [18, 4, 3, 3],
        stride: 2,
        pad: 1,
        groups: 3,
    });
    check(&Case {
        data: [1, 3, 4, 4],
        weight: [2, 3, 3, 3],
        stride: 1,
        pad: 0,
        groups: 1,
    });
}

#[test]
fn groups_in_parallel_depthwise_and_pointwise() {
    // Depthwise: one group per channel, groups run in parallel.
    check(&Case {
        data: [2, 16, 20, 19],
        weight: [16, 1, 3, 3],
        stride: 1,
        pad: 1,
        groups: 16,
    });
    // Grouped 1x1 (ShuffleNet's group convolutions).
    check(&Case {
        data: [1, 12, 10, 10],
        weight: [6, 4, 1, 1],
        stride: 1,
        pad: 0,
        groups: 3,
    });
}
