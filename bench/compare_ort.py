#!/usr/bin/env python3
"""Compares byoc's host executor with onnxruntime (CPU provider) on the same models, inputs and
thread count, and prints a table of median latencies and their ratio.

By default the models are the nine ONNX light CNNs with random weights prepared by
scripts/fetch_onnx_light.sh (under target/onnx-light/<name>/random.onnx, with the seeded
input random_input.npz). The host-only column runs byoc's reference kernels
(`--host-codegen kernels`). The two engines are timed in alternating rounds (byoc, onnxruntime,
byoc, ...) so that load from other processes hits both alike. byoc's median is the median of
its rounds' medians (`byoc bench`), onnxruntime's the median of all its timed runs; each
engine's fastest run is reported beside it, and the ratio is byoc's median over onnxruntime's.

`--target NAME` (repeatable, e.g. `--target dnnl`) adds a column per target: `byoc bench
--target NAME` (partitions offloaded to that plugin, found next to the byoc binary), timed in
the same alternating rounds, with the plugin told the thread count (`--plugin-option
threads=N`), and its ratio to onnxruntime. `--target NAME:KEY=VALUE[,KEY=VALUE...]` adds
those plugin options to that column (e.g. `--target dnnl --target dnnl:dnnl.fpmath=bf16` times
float32 and bf16 side by side). `--skip-host` drops the host-only column. `--host-llvm` adds a
host-only column with compiled host code (`byoc bench --host-codegen llvm`), timed in the same
rounds, so the reference kernels and the LLVM host code appear side by side.

Usage:
    python3 bench/compare_ort.py [--byoc target/release/byoc] [--threads 2] [--iters 10]
        [--rounds 3] [--warmup 3] [--dir target/onnx-light] [--target dnnl] [--skip-host]
        [--host-llvm] [MODEL.onnx | LIGHT_NAME ...]
A MODEL.onnx given on the command line is fed the input.npz beside it when there is one (the
layout of scripts/fixtures/gen_transformers.py), else seeded random inputs (uniform [-1, 1) for
floats, [0, 100) for integers such as token ids), the same to both engines;
a light model's name (e.g. `resnet50`) selects that one of the nine. Needs numpy and onnxruntime, and a release build
(cargo build --release).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np
import onnxruntime as ort

# The engine label of host-only runs with compiled host code (`--host-llvm`).
HOST_LLVM = "host-llvm"

LIGHT = [
    "bvlc_alexnet",
    "densenet121",
    "inception_v1",
    "inception_v2",
    "resnet50",
    "shufflenet",
    "squeezenet",
    "vgg19",
    "zfnet512",
]


def byoc_times(byoc: str, model: str, inputs: str, threads: int, iters: int, warmup: int,
               target: str | None = None, extra: tuple[str, ...] = ()):
    """One `byoc bench` round: (median, min, max) in ms; `target` (`NAME[:KEY=VALUE,...]`)
    offloads to that plugin, with those plugin options (the host part compiled, the default);
    no target runs host-only on the reference kernels; the target `HOST_LLVM` runs host-only
    with compiled host code; `extra` are more `byoc bench` arguments (e.g. `--quantize`)."""
    cmd = [byoc, "bench", model, "--inputs", inputs, "--threads", str(threads),
           "--iters", str(iters), "--warmup", str(warmup), *extra]
    if target is None:
        cmd += ["--host-codegen", "kernels"]
    elif target == HOST_LLVM:
        cmd += ["--host-codegen", "llvm"]
    else:
        name, _, options = target.partition(":")
        cmd += ["--target", name, "--plugin-option", f"threads={threads}"]
        for kv in filter(None, options.split(",")):
            cmd += ["--plugin-option", kv]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    report = json.loads(out)
    return report["median_ms"], report["min_ms"], report["max_ms"]


def ort_session(model: str, threads: int) -> ort.InferenceSession:
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = threads
    opts.inter_op_num_threads = 1
    opts.log_severity_level = 3
    return ort.InferenceSession(model, opts, providers=["CPUExecutionProvider"])


def ort_times(sess, feeds, iters: int, warmup: int) -> list[float]:
    for _ in range(warmup):
        sess.run(None, feeds)
    times = []
    for _ in range(iters):
        start = time.perf_counter()
        sess.run(None, feeds)
        times.append((time.perf_counter() - start) * 1e3)
    return times


# onnxruntime's input type names and the numpy dtypes of their integer types.
INT_TYPES = {"tensor(int64)": np.int64, "tensor(int32)": np.int32}


def random_inputs(model: str, path: str) -> None:
    """Writes seeded inputs for `model` to `path` (symbolic dims set to 1): uniform [-1, 1)
    floats, integers in [0, 100); both engines read them."""
    sess = ort.InferenceSession(model, providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(0)
    feeds = {}
    for i in sess.get_inputs():
        shape = [d if isinstance(d, int) else 1 for d in i.shape]
        if i.type in INT_TYPES:
            feeds[i.name] = rng.integers(0, 100, shape).astype(INT_TYPES[i.type])
        else:
            feeds[i.name] = rng.uniform(-1, 1, shape).astype(np.float32)
    np.savez(path, **feeds)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("models", nargs="*")
    ap.add_argument("--byoc", default="target/release/byoc")
    ap.add_argument("--dir", default="target/onnx-light")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--iters", type=int, default=10)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--target", action="append", default=[],
                    help="also time byoc with this target, NAME[:KEY=VALUE,...] (repeatable)")
    ap.add_argument("--skip-host", action="store_true", help="no host-only byoc column")
    ap.add_argument("--host-llvm", action="store_true",
                    help="also time byoc host-only with --host-codegen llvm")
    args = ap.parse_args()

    tmp = tempfile.mkdtemp(prefix="byoc-compare-")
    cases = []
    files = [m for m in args.models if m not in LIGHT]
    light = [m for m in args.models if m in LIGHT] or ([] if files else LIGHT)
    for m in files:
        inputs = os.path.join(os.path.dirname(m), "input.npz")
        if not os.path.exists(inputs):
            inputs = os.path.join(tmp, os.path.basename(m) + ".npz")
            random_inputs(m, inputs)
        stem = os.path.splitext(os.path.basename(m))[0]
        name = os.path.basename(os.path.dirname(os.path.abspath(m))) if stem == "model" else stem
        cases.append((name, m, inputs))
    if light:
        for name in light:
            folder = os.path.join(args.dir, name)
            model, inputs = os.path.join(folder, "random.onnx"), os.path.join(folder, "random_input.npz")
            if not os.path.exists(model):
                sys.exit(f"{model} is missing: run scripts/fetch_onnx_light.sh first")
            cases.append((name, model, inputs))

    engines = ([] if args.skip_host else [None]) + ([HOST_LLVM] if args.host_llvm else []) + args.target
    header = f"{'model':<14} {'ort median':>11} {'ort min':>8}"
    for e in engines:
        label = e or "host"
        header += f" {label + ' median':>14} {label + ' min':>10} {label + '/ort':>9}"
    print(f"threads={args.threads} iters={args.iters}x{args.rounds} rounds, warmup={args.warmup}")
    print(header)
    print("-" * len(header))
    for name, model, inputs in cases:
        feeds = dict(np.load(inputs))
        sess = ort_session(model, args.threads)
        meds = {e: [] for e in engines}
        mins = {e: [] for e in engines}
        o_times = []
        for _ in range(args.rounds):
            for e in engines:
                med, mn, _ = byoc_times(args.byoc, model, inputs, args.threads, args.iters,
                                        args.warmup, e)
                meds[e].append(med)
                mins[e].append(mn)
            o_times += ort_times(sess, feeds, args.iters, args.warmup)
        o_med = float(np.median(o_times))
        line = f"{name:<14} {o_med:>9.2f}ms {min(o_times):>6.2f}ms"
        for e in engines:
            b_med = float(np.median(meds[e]))
            line += f" {b_med:>12.2f}ms {min(mins[e]):>8.2f}ms {b_med / o_med:>9.2f}"
        print(line, flush=True)

if __name__ == "__main__":
    main()
