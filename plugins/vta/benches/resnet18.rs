//! The cycle model and the simulator's speed on ResNet-18's conv workloads C2–C11 (bias,
//! shift, clip epilogue): simulated cycles and GEMM utilisation with 1 and 2 virtual threads
//! against the ideal (MACs / 256 per cycle), and simulated MACs per second of host time: of
//! the simulating thread's CPU time (`/proc/thread-self/schedstat`, so that a loaded machine
//! does not count the time others took), and of wall-clock time. Every run is also checked
//! bit-exact against the host executor.
//!
//! `cargo bench -p byoc-plugin-vta --bench resnet18`

#[path = "../tests/common/mod.rs"]
mod common;

use std::time::{Duration, Instant};

use anyhow::{anyhow, Result};
use byoc_plugin_vta::{VtaConfig, VtaModule};
use common::{assert_same, build, host, partition, run, Case, RESNET18};

/// The CPU time this thread has run, from `/proc/thread-self/schedstat` (nanoseconds on the
/// CPU, first field).
fn thread_cpu_time() -> Result<Duration> {
    let text = std::fs::read_to_string("/proc/thread-self/schedstat")?;
    let ns: u64 = text
        .split_whitespace()
        .next()
        .and_then(|v| v.parse().ok())
        .ok_or_else(|| anyhow!("unreadable schedstat: {text:?}"))?;
    Ok(Duration::from_nanos(ns))
}

fn main() -> Result<()> {
    let config = VtaConfig::default();
    println!("| layer | MACs | ideal cycles | cycles 1 vt | util 1 vt | cycles 2 vt | util 2 vt | ideal/cycles 2 vt | CPU ms (2 vt) | sim GMAC/s (CPU) | sim GMAC/s (wall) |");
    println!("|---|---|---|---|---|---|---|---|---|---|---|");
    let (mut sum1, mut sum2) = (0.0, 0.0);
    let (mut macs_total, mut cpu_total, mut wall_total) = (0u64, 0.0f64, 0.0f64);
    for (name, h, c, o, k, pad, stride) in RESNET18 {
        let case = Case::resnet(h, c, o, k, pad, stride);
        let (m, inputs) = build(&case, 1)?;
        let want = host(&m, &inputs)?;
        let f = partition(&m)?;
        let (oh, ow) = case.out_hw();
        let macs = (oh * ow * o * c * k * k) as u64;
        let ideal = macs / 256;
        let mut row = Vec::new();
        let (mut cpu, mut wall) = (0.0, 0.0);
        for threads in [1, 2] {
            let module = VtaModule::compile(&f, &config, threads).map_err(|e| anyhow!("{e}"))?;
            let (start, start_cpu) = (Instant::now(), thread_cpu_time()?);
            let got = run(&module, &inputs, &want)?;
            cpu = (thread_cpu_time()? - start_cpu).as_secs_f64();
            wall = start.elapsed().as_secs_f64();
            assert_same(&got, &want, name)?;
            let p = module.last_profile().remove(0);
            row.push((p.cycles, p.gemm_utilization()));
        }
        sum1 += row[0].1;
        sum2 += row[1].1;
        macs_total += macs;
        cpu_total += cpu;
        wall_total += wall;
        println!(
            "| {name} | {macs} | {ideal} | {} | {:.1}% | {} | {:.1}% | {:.1}% | {:.1} | {:.2} | {:.2} |",
            row[0].0,
            100.0 * row[0].1,
            row[1].0,
            100.0 * row[1].1,
            100.0 * ideal as f64 / row[1].0 as f64,
            cpu * 1e3,
            macs as f64 / cpu / 1e9,
            macs as f64 / wall / 1e9
        );
    }
    println!(
        "\naverage GEMM utilisation C2-C11: {:.1}% (1 vt), {:.1}% (2 vt); simulated {:.2} GMAC/s of CPU time, {:.2} of wall-clock time, overall (packing included)",
        100.0 * sum1 / 10.0,
        100.0 * sum2 / 10.0,
        macs_total as f64 / cpu_total / 1e9,
        macs_total as f64 / wall_total / 1e9
    );
    Ok(())
}
