#!/usr/bin/env python3
"""Concurrent processes: how byoc's dnnl partitions and onnxruntime degrade when several
processes share the machine.

For each model and each process count K (`--procs 1,2,4`), K onnxruntime processes start at
once, each timing its own session; then K `byoc bench` processes start at once on the model's
dnnl artifact (built once with `byoc build --target dnnl`), for each environment variant
(`--variant`, e.g. `--variant GOMP_SPINCOUNT=10000`; `default` runs with the environment as it
is, minus the OpenMP variables below, so byoc's own bounded spin applies; `--variant
GOMP_SPINCOUNT=300000` is libgomp's default). The two engines alternate in rounds (`--rounds`), so
load from outside hits both alike. A process's figure is its median latency; a K's figure is
the median over its processes and rounds. Printed per K: each engine's median, its slowdown
against K = 1, and dnnl's median over onnxruntime's.

Usage:
    python3 bench/concurrent_ort.py [--byoc target/release/byoc] [--threads 2] [--procs 1,2,4]
        [--iters 30] [--warmup 5] [--rounds 2] [--variant default] [--variant K=V[,K=V]]
        [--dir target/onnx-light] LIGHT_NAME ...
Needs numpy and onnxruntime, the light models (scripts/fetch_onnx_light.sh) and a release
build (cargo build --release -p byoc -p byoc-plugin-dnnl).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from compare_ort import ort_session, ort_times  # noqa: E402

# Cleared in every byoc variant unless the variant sets them, so that `default` means the
# defaults, whatever the calling shell exports.
OPENMP_VARS = ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT")


def worker_ort(model: str, inputs: str, threads: int, iters: int, warmup: int) -> None:
    """One onnxruntime process: prints its median latency (ms) as JSON."""
    sess = ort_session(model, threads)
    times = ort_times(sess, dict(np.load(inputs)), iters, warmup)
    print(json.dumps({"median_ms": float(np.median(times))}))


def parse_variant(v: str) -> dict[str, str]:
    if v == "default":
        return {}
    return dict(kv.split("=", 1) for kv in v.split(","))


def run_at_once(cmds: list[list[str]], env: dict[str, str]) -> list[float]:
    """Starts every command at once; returns each one's `median_ms`."""
    procs = [subprocess.Popen(c, stdout=subprocess.PIPE, text=True, env=env) for c in cmds]
    meds = []
    for p in procs:
        out, _ = p.communicate()
        if p.returncode != 0:
            sys.exit(f"{' '.join(cmds[0])} exited with {p.returncode}")
        meds.append(json.loads(out)["median_ms"])
    return meds


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("models", nargs="*", default=["resnet50", "squeezenet"])
    ap.add_argument("--byoc", default="target/release/byoc")
    ap.add_argument("--dir", default="target/onnx-light")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--procs", default="1,2,4")
    ap.add_argument("--iters", type=int, default=30)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--variant", action="append", default=[])
    ap.add_argument("--worker-ort", nargs=2, metavar=("MODEL", "INPUTS"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker_ort:
        worker_ort(*args.worker_ort, args.threads, args.iters, args.warmup)
        return

    counts = [int(k) for k in args.procs.split(",")]
    variants = args.variant or ["default"]
    base_env = {k: v for k, v in os.environ.items() if k not in OPENMP_VARS}
    tmp = tempfile.mkdtemp(prefix="byoc-concurrent-")
    print(f"threads={args.threads} per process, iters={args.iters}, warmup={args.warmup}, "
          f"rounds={args.rounds}, load average before: {os.getloadavg()[0]:.2f}")
    for name in args.models:
        folder = os.path.join(args.dir, name)
        model, inputs = os.path.join(folder, "random.onnx"), os.path.join(folder, "random_input.npz")
        if not os.path.exists(model):
            sys.exit(f"{model} is missing: run scripts/fetch_onnx_light.sh first")
        artifact = os.path.join(tmp, name + ".byoc")
        subprocess.run([args.byoc, "build", model, "--target", "dnnl", "-o", artifact],
                       check=True, capture_output=True)
        ort_cmd = [sys.executable, os.path.abspath(__file__), "--worker-ort", model, inputs,
                   "--threads", str(args.threads), "--iters", str(args.iters),
                   "--warmup", str(args.warmup)]
        byoc_cmd = [args.byoc, "bench", artifact, "--inputs", inputs, "--threads",
                    str(args.threads), "--iters", str(args.iters), "--warmup", str(args.warmup)]
        meds: dict[tuple[str, int], list[float]] = {}
        for _ in range(args.rounds):
            for k in counts:
                meds.setdefault(("ort", k), []).extend(run_at_once([ort_cmd] * k, base_env))
                for v in variants:
                    env = {**base_env, **parse_variant(v)}
                    meds.setdefault((v, k), []).extend(run_at_once([byoc_cmd] * k, env))
        print(f"\n{name}")
        header = f"{'procs':>5} {'ort ms':>9} {'ort x1':>7}"
        for v in variants:
            header += f" | {v + ' ms':>22} {'x1':>6} {'/ort':>6}"
        print(header)
        print("-" * len(header))
        med = {key: float(np.median(vals)) for key, vals in meds.items()}
        for k in counts:
            o = med[("ort", k)]
            line = f"{k:>5} {o:>9.2f} {o / med[('ort', counts[0])]:>7.2f}"
            for v in variants:
                b = med[(v, k)]
                line += f" | {b:>22.2f} {b / med[(v, counts[0])]:>6.2f} {b / o:>6.2f}"
            print(line, flush=True)


if __name__ == "__main__":
    main()
