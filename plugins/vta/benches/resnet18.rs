//! The cycle model and the simulator's speed on ResNet-18's conv workloads C2–C11 (bias,
//! shift, clip epilogue): simulated cycles and GEMM utilisation with 1 and 2 virtual threads
//! against the ideal (MACs / 256 per cycle), and simulated MACs per second of host time.
//! Every run is also checked bit-exact against the host executor.
//!
//! `cargo bench -p byoc-plugin-vta --bench resnet18`

#[path = "../tests/common/mod.rs"]
mod common;

use std::time::Instant;

use anyhow::{anyhow, Result};
use byoc_plugin_vta::{VtaConfig, VtaModule};
use common::{assert_same, build, host, partition, run, Case};

const RESNET18: [(&str, usize, usize, usize, usize, usize, usize); 10] = [
    ("C2", 56, 64, 64, 3, 1, 1),
    ("C3", 56, 64, 128, 3, 1, 2),
    ("C4", 56, 64, 128, 1, 0, 2),
    ("C5", 28, 128, 128, 3, 1, 1),
    ("C6", 28, 128, 256, 3, 1, 2),
    ("C7", 28, 128, 256, 1, 0, 2),
    ("C8", 14, 256, 256, 3, 1, 1),
    ("C9", 14, 256, 512, 3, 1, 2),
    ("C10", 14, 256, 512, 1, 0, 2),
    ("C11", 7, 512, 512, 3, 1, 1),
];

fn main() -> Result<()> {
    let config = VtaConfig::default();
    println!("| layer | MACs | ideal cycles | cycles 1 vt | util 1 vt | cycles 2 vt | util 2 vt | ideal/cycles 2 vt | host ms (2 vt) | sim GMAC/s |");
    println!("|---|---|---|---|---|---|---|---|---|---|");
    let (mut sum1, mut sum2) = (0.0, 0.0);
    let (mut macs_total, mut secs_total) = (0u64, 0.0f64);
    for (name, h, c, o, k, pad, stride) in RESNET18 {
        let case = Case::resnet(h, c, o, k, pad, stride);
        let (m, inputs) = build(&case, 1)?;
        let want = host(&m, &inputs)?;
        let f = partition(&m)?;
        let (oh, ow) = case.out_hw();
        let macs = (oh * ow * o * c * k * k) as u64;
        let ideal = macs / 256;
        let mut row = Vec::new();
        let mut secs = 0.0;
        for threads in [1, 2] {
            let module = VtaModule::compile(&f, &config, threads).map_err(|e| anyhow!("{e}"))?;
            let start = Instant::now();
            let got = run(&module, &inputs, &want)?;
            secs = start.elapsed().as_secs_f64();
            assert_same(&got, &want, name)?;
            let p = module.last_profile().remove(0);
            row.push((p.cycles, p.gemm_utilization()));
        }
        sum1 += row[0].1;
        sum2 += row[1].1;
        macs_total += macs;
        secs_total += secs;
        println!(
            "| {name} | {macs} | {ideal} | {} | {:.1}% | {} | {:.1}% | {:.1}% | {:.1} | {:.2} |",
            row[0].0,
            100.0 * row[0].1,
            row[1].0,
            100.0 * row[1].1,
            100.0 * ideal as f64 / row[1].0 as f64,
            secs * 1e3,
            macs as f64 / secs / 1e9
        );
    }
    println!(
        "\naverage GEMM utilisation C2-C11: {:.1}% (1 vt), {:.1}% (2 vt); simulated {:.2} GMAC/s of host time overall (packing included)",
        100.0 * sum1 / 10.0,
        100.0 * sum2 / 10.0,
        macs_total as f64 / secs_total / 1e9
    );
    Ok(())
}
