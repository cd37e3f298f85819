#!/usr/bin/env python3
"""CPU time per inference of byoc's host executor and onnxruntime on the light models, for
comparisons on a machine that other work keeps busy (where wall-clock latencies are noise).

Both engines run single-threaded unless `--threads N` asks for more; then the CPU time is
that of all N threads together (work split overhead included, so comparing `--threads 1` with
`--threads 2` shows what the split costs), and onnxruntime's intra-op threads do not spin
while idle (`session.intra_op.allow_spinning = 0`), so that its CPU time is work as well.
byoc's time per inference is the difference of the child
CPU time (user + system, from `resource.getrusage`) of two `byoc bench` runs with different
iteration counts (after an untimed run), divided by the difference of the counts, so loading
and compiling the model cancel out; onnxruntime's is `time.process_time()` over its timed runs in this process. Each
`--env NAME=VALUE` adds a byoc column run with that environment variable set (e.g.
`--env BYOC_HOST_SIMD=portable` for the float kernels without AVX-512), and a second
`--byoc PATH` adds a column per binary (e.g. a build of the previous commit), so builds and
paths are compared in one run.

Usage:
    python3 bench/cpu_time_ort.py [--byoc target/release/byoc ...] [--dir target/onnx-light]
        [--iters 20] [--threads 1] [--host-codegen llvm] [--env NAME=VALUE ...] [LIGHT_NAME ...]
"""
from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import time

import numpy as np
import onnxruntime as ort

LIGHT = ["bvlc_alexnet", "densenet121", "inception_v1", "inception_v2", "resnet50",
         "shufflenet", "squeezenet", "vgg19", "zfnet512"]


def child_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def byoc_cpu(args, byoc: str, model: str, inputs: str, env: dict[str, str]) -> float:
    """CPU ms per inference of `byoc bench` (see the module doc)."""
    def run(iters: int) -> float:
        cmd = [byoc, "bench", model, "--inputs", inputs, "--threads", str(args.threads),
               "--iters", str(iters), "--warmup", "1", "--host-codegen", args.host_codegen]
        before = child_cpu()
        subprocess.run(cmd, check=True, capture_output=True, env={**os.environ, **env})
        return child_cpu() - before
    low, high = max(1, args.iters // 4), args.iters
    run(1)  # untimed: warms the file cache and any build cache for both timed runs
    return (run(high) - run(low)) / (high - low) * 1e3


def ort_cpu(model: str, inputs: str, iters: int, threads: int) -> float:
    """CPU ms per inference of onnxruntime on `threads` intra-op threads (not spinning)."""
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = threads
    opts.inter_op_num_threads = 1
    if threads > 1:
        opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
    opts.log_severity_level = 3
    sess = ort.InferenceSession(model, opts, providers=["CPUExecutionProvider"])
    feeds = dict(np.load(inputs))
    sess.run(None, feeds)
    start = time.process_time()
    for _ in range(iters):
        sess.run(None, feeds)
    return (time.process_time() - start) / iters * 1e3


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("models", nargs="*")
    ap.add_argument("--byoc", action="append", default=[],
                    help="a byoc binary to time (repeatable; default target/release/byoc)")
    ap.add_argument("--dir", default="target/onnx-light")
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--threads", type=int, default=1,
                    help="threads of both engines (CPU time then sums them)")
    ap.add_argument("--host-codegen", default="llvm", choices=["kernels", "llvm"])
    ap.add_argument("--env", action="append", default=[],
                    help="NAME=VALUE: also time byoc with this variable set (repeatable)")
    args = ap.parse_args()
    if args.iters < 2:
        sys.exit("--iters must be at least 2")
    if args.threads < 1:
        sys.exit("--threads must be at least 1")
    binaries = args.byoc or ["target/release/byoc"]
    envs = [("", {})]
    for kv in args.env:
        name, eq, value = kv.partition("=")
        if not eq or not name:
            sys.exit(f"--env {kv!r}: expected NAME=VALUE")
        envs.append((kv, {name: value}))
    columns = [(" ".join(filter(None, [b, label])), b, env)
               for b in binaries for label, env in envs]
    print("| model | onnxruntime | " + " | ".join(f"{c} | {c}/ort" for c, _, _ in columns) + " |")
    print("|---|---:|" + "---:|---:|" * len(columns))
    for name in args.models or LIGHT:
        if name not in LIGHT:
            sys.exit(f"{name!r} is not one of {', '.join(LIGHT)}")
        folder = os.path.join(args.dir, name)
        model = os.path.join(folder, "random.onnx")
        inputs = os.path.join(folder, "random_input.npz")
        if not os.path.exists(model):
            sys.exit(f"{model} is missing: run scripts/fetch_onnx_light.sh first")
        ort_ms = ort_cpu(model, inputs, args.iters, args.threads)
        cells = []
        for _, byoc, env in columns:
            ms = byoc_cpu(args, byoc, model, inputs, env)
            cells.append(f"{ms:.2f} ms | {ms / ort_ms:.2f}")
        print(f"| {name} | {ort_ms:.2f} ms | " + " | ".join(cells) + " |", flush=True)


if __name__ == "__main__":
    main()
