#!/usr/bin/env python3
"""Times int8 ResNet-50 on byoc's host kernels against float32 and against onnxruntime running
onnxruntime's own QDQ model, all on the same input and thread count, in alternating rounds
(so that load from other processes hits every engine alike).

Rows:
  byoc float32            byoc bench random.onnx
  byoc int8 (--quantize)  byoc bench random.onnx --quantize (TVM's recipe, power-of-two scales)
  byoc int8 (QDQ import)  byoc bench QDQ.onnx (onnxruntime's quantize_static model, imported
                          into integer arithmetic)
  onnxruntime float32     random.onnx
  onnxruntime int8 (QDQ)  QDQ.onnx (onnxruntime fuses the QDQ groups into QLinearConv etc.)
With --portable, the two byoc int8 rows are also timed with BYOC_INT8_GEMM=portable (the plain
widening int32 loop instead of the AVX512-VNNI/AVX2 int8 GEMM), in the same rounds.
Each row gives the median and minimum over all rounds (byoc: the median of its rounds'
`byoc bench` medians) and the ratio of its median to byoc float32's.

Usage:
    python3 bench/int8_resnet50.py [--byoc target/release/byoc] [--threads 2] [--iters 5]
        [--rounds 3] [--warmup 2] [--light target/onnx-light] [--qdq target/onnx-qdq]
        [--portable]
The light model comes from scripts/fetch_onnx_light.sh, the QDQ model (per-channel, int8) from
scripts/fixtures/gen_qdq_models.py. Needs numpy and onnxruntime, and a release build
(cargo build --release -p byoc).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from compare_ort import ort_session, ort_times  # noqa: E402


def byoc_round(byoc, model, inputs, args, extra, env):
    """One `byoc bench` round with the flags `extra` and environment additions `env`:
    (median, min) in ms."""
    cmd = [byoc, "bench", model, *extra, "--inputs", inputs, "--threads", str(args.threads),
           "--iters", str(args.iters), "--warmup", str(args.warmup)]
    report = json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True,
                                       env={**os.environ, **env}).stdout)
    return report["median_ms"], report["min_ms"]


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--byoc", default="target/release/byoc")
    ap.add_argument("--light", default="target/onnx-light")
    ap.add_argument("--qdq", default="target/onnx-qdq")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--iters", type=int, default=5)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--portable", action="store_true",
                    help="also time the byoc int8 rows on the portable int8 GEMM")
    args = ap.parse_args()

    float_model = os.path.join(args.light, "resnet50", "random.onnx")
    qdq_dir = os.path.join(args.qdq, "resnet50_per_channel")
    qdq_model, inputs = os.path.join(qdq_dir, "model.onnx"), os.path.join(qdq_dir, "input.npz")
    for path in (float_model, qdq_model, args.byoc):
        if not os.path.exists(path):
            sys.exit(f"{path} is missing (see the usage in {__file__})")
    feeds = dict(np.load(inputs))
    sessions = {"onnxruntime float32": ort_session(float_model, args.threads),
                "onnxruntime int8 (QDQ)": ort_session(qdq_model, args.threads)}
    byoc_rows = {"byoc float32": (float_model, [], {}),
                 "byoc int8 (--quantize)": (float_model, ["--quantize"], {}),
                 "byoc int8 (QDQ import)": (qdq_model, [], {})}
    if args.portable:
        portable = {"BYOC_INT8_GEMM": "portable"}
        byoc_rows["byoc int8 (--quantize), portable GEMM"] = (float_model, ["--quantize"], portable)
        byoc_rows["byoc int8 (QDQ import), portable GEMM"] = (qdq_model, [], portable)
    meds = {name: [] for name in list(byoc_rows) + list(sessions)}
    mins = {name: [] for name in meds}
    for _ in range(args.rounds):
        for name, (model, extra, env) in byoc_rows.items():
            med, mn = byoc_round(args.byoc, model, inputs, args, extra, env)
            meds[name].append(med)
            mins[name].append(mn)
        for name, sess in sessions.items():
            times = ort_times(sess, feeds, args.iters, args.warmup)
            meds[name] += times
            mins[name] += times
    base = float(np.median(meds["byoc float32"]))
    print(f"ResNet-50, threads={args.threads}, iters={args.iters}x{args.rounds} rounds, "
          f"warmup={args.warmup}")
    print("| engine | median ms | min ms | / byoc float32 |")
    print("|---|---|---|---|")
    for name in meds:
        med = float(np.median(meds[name]))
        print(f"| {name} | {med:.1f} | {min(mins[name]):.1f} | {med / base:.2f} |")


if __name__ == "__main__":
    main()
