#!/usr/bin/env python3
"""Times two byoc builds host-only with compiled host code (`byoc bench --host-codegen llvm`)
on the ONNX light models whose host code has concatenations or transposes (SqueezeNet,
ShuffleNet, DenseNet-121, Inception-v1), in alternating rounds (before, after, before, ...)
so that load from other processes hits both alike.

Per model and build it prints the median of the rounds' median latencies (`byoc bench`), the
CPU time (user + system) of the bench processes over the rounds (model import and host code
generation included, as the same work for both builds), and the after/before ratios.

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

MODELS = ["squeezenet", "shufflenet", "densenet121", "inception_v1"]


def bench(byoc: str, model_dir: str, threads: int, iters: int, warmup: int):
    """One `byoc bench` run on the model's random-weight variant: (median ms, CPU seconds)."""
    cmd = [byoc, "bench", os.path.join(model_dir, "random.onnx"),
           "--inputs", os.path.join(model_dir, "random_input.npz"),
           "--threads", str(threads), "--iters", str(iters), "--warmup", str(warmup),
           "--host-codegen", "llvm"]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
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
    print(f"{'model':<14} {'before ms':>10} {'after ms':>10} {'ratio':>6} "
          f"{'before cpu s':>13} {'after cpu s':>12} {'ratio':>6}")
    for name in args.models or MODELS:
        model_dir = os.path.join(args.dir, name)
        runs = {"before": [], "after": []}
        for _ in range(args.rounds):
            for which in ("before", "after"):
                byoc = getattr(args, which)
                runs[which].append(bench(byoc, model_dir, args.threads, args.iters,
                                         args.warmup))
        med = {w: statistics.median(r[0] for r in runs[w]) for w in runs}
        cpu = {w: sum(r[1] for r in runs[w]) for w in runs}
        print(f"{name:<14} {med['before']:>10.2f} {med['after']:>10.2f} "
              f"{med['after'] / med['before']:>6.2f} {cpu['before']:>13.2f} "
              f"{cpu['after']:>12.2f} {cpu['after'] / cpu['before']:>6.2f}")


if __name__ == "__main__":
    main()
