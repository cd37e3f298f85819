#!/usr/bin/env python3
"""Where a dnnl partition's time goes, primitive by primitive.

Runs `byoc bench MODEL --target dnnl` with `BYOC_DNNL_PROFILE=1` (the runtime then times
every step of every run, waiting after each) and reduces the per-run step tables: for each
step its median (or, with `--stat min`, its fastest time: the better estimate on a loaded
machine, where most of a step's time can be other processes') over the timed runs, then the sum per primitive kind (convolution, pooling,
reorder, concat, eltwise, the int8 passes, ...) and the slowest steps. The per-step sum is
the partition's time without the overlap between steps, so comparing it with `byoc bench`'s
median (printed beside it) shows what the steps' boundaries cost: the wait after each step
and the OpenMP team's wake-up that an unprofiled run partly hides.

Usage:
    python3 bench/dnnl_profile.py MODEL [--byoc target/release/byoc] [--threads 2]
        [--iters 20] [--warmup 3] [--top 12] [--stat median|min] [-- EXTRA_BYOC_ARGS...]
e.g. `python3 bench/dnnl_profile.py target/onnx-light/squeezenet/random.onnx`, or with
`-- --quantize` for the int8 network, or `-- --plugin-option dnnl.int8_epilogue=pass`.
Needs a release build of byoc and the dnnl plugin
(`cargo build --release -p byoc -p byoc-plugin-dnnl`).
"""
from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
from collections import defaultdict

STEP = re.compile(r"^\s*step\s+(\d+)\s+node\s+(\d+)\s+([0-9.]+) ms\s+(.*)$")


def kind_of(label: str) -> str:
    """The primitive kind of a step label (`convolution dnnl.conv2d_bias_relu [brg...]`)."""
    word = label.split()[0]
    if label.endswith("[byoc:int]"):
        return f"{word} (byoc integer pass)"
    if "with its epilogue as post-ops" in label:
        return f"{word} (int8, epilogue as post-ops)"
    return word


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("model")
    ap.add_argument("--byoc", default="target/release/byoc")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--top", type=int, default=12)
    ap.add_argument("--stat", choices=["median", "min"], default="median")
    argv = sys.argv[1:]
    split = argv.index("--") if "--" in argv else len(argv)
    args = ap.parse_args(argv[:split])
    extra = argv[split + 1:]
    cmd = [args.byoc, "bench", args.model, "--target", "dnnl", "--threads", str(args.threads),
           "--iters", str(args.iters), "--warmup", str(args.warmup), *extra]
    env = dict(os.environ, BYOC_DNNL_PROFILE="1")
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if proc.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed ({proc.returncode}):\n{proc.stderr[-4000:]}")
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    # Each run prints its steps from 0; keep the last `iters` runs (after the warm-up ones).
    runs: list[dict[int, tuple[float, str]]] = []
    for line in proc.stderr.splitlines():
        m = STEP.match(line)
        if not m:
            continue
        step, ms, label = int(m.group(1)), float(m.group(3)), m.group(4)
        if step == 0:
            runs.append({})
        if runs:
            runs[-1][step] = (ms, label)
    runs = runs[-args.iters:]
    if not runs:
        sys.exit("no profile lines: is the model partitioned for dnnl?")
    steps = sorted(runs[0])
    reduce = statistics.median if args.stat == "median" else min
    median = {s: reduce([r[s][0] for r in runs if s in r]) for s in steps}
    labels = {s: runs[0][s][1] for s in steps}
    per_kind: dict[str, list[float]] = defaultdict(list)
    for s in steps:
        per_kind[kind_of(labels[s])].append(median[s])
    total = sum(median.values())
    print(f"{args.model}: {len(steps)} steps, {len(runs)} profiled runs, {args.threads} threads")
    print(f"byoc bench median {report['median_ms']:.3f} ms, min {report['min_ms']:.3f} ms "
          f"(profiled runs, a wait after each step); sum of per-step {args.stat}s "
          f"{total:.3f} ms")
    print(f"{'kind':<44} {'steps':>5} {'ms':>9} {'share':>7}")
    for kind, times in sorted(per_kind.items(), key=lambda kv: -sum(kv[1])):
        t = sum(times)
        print(f"{kind:<44} {len(times):>5} {t:>9.3f} {100 * t / total:>6.1f}%")
    print(f"slowest {args.top} steps ({args.stat} ms):")
    for s in sorted(steps, key=lambda s: -median[s])[:args.top]:
        print(f"  step {s:>3} {median[s]:>8.3f}  {labels[s]}")


if __name__ == "__main__":
    main()
