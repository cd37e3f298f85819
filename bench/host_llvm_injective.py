#!/usr/bin/env python3
"""Times two byoc builds host-only with compiled host code (`byoc bench --host-codegen llvm`)
on the ONNX light models whose host code has concatenations or transposes (SqueezeNet,
ShuffleNet, DenseNet-121, Inception-v1), in alternating rounds (before, after, before, ...)
so that load from other processes hits both alike.

Each build first compiles each model into an artifact (`byoc build --host-codegen llvm`, its
CPU time reported as the build column: import, passes and LLVM), then benches the artifact,
which loads without compiling. Per model and build it prints the build's CPU time, the median
of the rounds' median latencies (`byoc bench`), the CPU time (user + system) of the bench
processes over the rounds (loading included, the same work for both builds), and the
after/before ratios.

Usage:
    python3 bench/host_llvm_injective.py BEFORE_BYOC AFTER_BYOC [--dir target/onnx-light]
        [--threads 2] [--iters 20] [--warmup 3] [--rounds 3] [LIGHT_NAME ...]
Both binaries should be release builds (cargo build --release -p byoc).
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import tempfile

MODELS = ["squeezenet", "shufflenet", "densenet121", "inception_v1"]


def cpu_of(cmd: list[str]):
    """Runs `cmd`: (its stdout, the CPU seconds it used)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return out, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def build(byoc: str, model_dir: str, artifact: str) -> float:
    """Compiles the model's random-weight variant into `artifact`: the CPU seconds used."""
    return cpu_of([byoc, "build", os.path.join(model_dir, "random.onnx"),
                   "--host-codegen", "llvm", "-o", artifact])[1]


def bench(byoc: str, artifact: str, model_dir: str, threads: int, iters: int, warmup: int):
    """One `byoc bench` run of `artifact`: (median ms, CPU seconds)."""
    out, cpu = cpu_of([byoc, "bench", artifact,
                       "--inputs", os.path.join(model_dir, "random_input.npz"),
                       "--threads", str(threads), "--iters", str(iters),
                       "--warmup", str(warmup)])
    return json.loads(out)["median_ms"], cpu


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("before")
    ap.add_argument("after")
    ap.add_argument("models", nargs="*")
    ap.add_argument("--dir", default="target/onnx-light")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="byoc-injective-")
    print(f"{'model':<14} {'build cpu s':>11} {'':>6} {'before ms':>10} {'after ms':>9} "
          f"{'ratio':>6} {'before cpu s':>13} {'after cpu s':>12} {'ratio':>6}")
    for name in args.models or MODELS:
        model_dir = os.path.join(args.dir, name)
        artifacts = {w: os.path.join(tmp, f"{name}-{w}.byoc") for w in ("before", "after")}
        built = {w: build(getattr(args, w), model_dir, artifacts[w]) for w in artifacts}
        runs = {"before": [], "after": []}
        for _ in range(args.rounds):
            for which in ("before", "after"):
                runs[which].append(bench(getattr(args, which), artifacts[which], model_dir,
                                         args.threads, args.iters, args.warmup))
        med = {w: statistics.median(r[0] for r in runs[w]) for w in runs}
        cpu = {w: sum(r[1] for r in runs[w]) for w in runs}
        print(f"{name:<14} {built['before']:>5.2f}/{built['after']:<5.2f} "
              f"{built['after'] / built['before']:>6.2f} {med['before']:>10.2f} "
              f"{med['after']:>9.2f} {med['after'] / med['before']:>6.2f} "
              f"{cpu['before']:>13.2f} {cpu['after']:>12.2f} {cpu['after'] / cpu['before']:>6.2f}")


if __name__ == "__main__":
    main()
