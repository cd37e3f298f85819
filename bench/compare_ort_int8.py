#!/usr/bin/env python3
"""Compares byoc's int8 (`byoc bench --quantize --target dnnl`: byoc's Quantize pass, TVM's
default qconfig, on oneDNN's int8 primitives) with onnxruntime running the same model
quantized by its own `quantize_static` (QDQ format, onnxruntime's defaults: uint8
activations, int8 weights, per tensor, MinMax calibration on seeded random inputs), both at
the same thread count, and prints median latencies and ratios. onnxruntime's float32 and
byoc's float32 dnnl run are timed beside them for reference.

The models are the ONNX light CNNs with random weights (scripts/fetch_onnx_light.sh); the
engines are timed in alternating rounds (byoc int8, byoc float32, onnxruntime QDQ,
onnxruntime float32, ...) so that load from other processes hits all alike. byoc's median is
the median of its rounds' medians (`byoc bench`), onnxruntime's the median of all its timed
runs; the fastest run is reported beside each.

Usage:
    python3 bench/compare_ort_int8.py [--byoc target/release/byoc] [--threads 2] [--iters 10]
        [--rounds 5] [--warmup 3] [--dir target/onnx-light] [--calibration 8] [LIGHT_NAME ...]
(default model: resnet50). Needs numpy and onnxruntime (with its quantization tools), a release
build of byoc and of the dnnl plugin (cargo build --release -p byoc -p byoc-plugin-dnnl).
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile

import numpy as np
from onnxruntime.quantization import (CalibrationDataReader, QuantFormat, QuantType,
                                      quantize_static)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from compare_ort import byoc_times, ort_session, ort_times  # noqa: E402


class RandomReader(CalibrationDataReader):
    """`count` seeded uniform [-1, 1) inputs shaped like `feeds`."""

    def __init__(self, feeds: dict, count: int):
        rng = np.random.default_rng(1)
        self.samples = iter([
            {k: rng.uniform(-1, 1, v.shape).astype(np.float32) for k, v in feeds.items()}
            for _ in range(count)
        ])

    def get_next(self):
        return next(self.samples, None)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("models", nargs="*", default=["resnet50"])
    ap.add_argument("--byoc", default="target/release/byoc")
    ap.add_argument("--dir", default="target/onnx-light")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--iters", type=int, default=10)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--calibration", type=int, default=8,
                    help="onnxruntime calibration samples")
    args = ap.parse_args()

    tmp = tempfile.mkdtemp(prefix="byoc-int8-")
    print(f"threads={args.threads} iters={args.iters}x{args.rounds} rounds, warmup={args.warmup}")
    header = (f"{'model':<12} {'ort qdq':>9} {'min':>7} {'ort f32':>9} {'byoc int8':>10} "
              f"{'min':>7} {'int8 pass':>10} {'min':>7} {'byoc f32':>9} {'int8/qdq':>9} "
              f"{'int8/f32ort':>12} {'int8/pass':>10}")
    print(header)
    print("-" * len(header))
    for name in args.models:
        folder = os.path.join(args.dir, name)
        model, inputs = os.path.join(folder, "random.onnx"), os.path.join(folder, "random_input.npz")
        if not os.path.exists(model):
            sys.exit(f"{model} is missing: run scripts/fetch_onnx_light.sh first")
        feeds = dict(np.load(inputs))
        qdq = os.path.join(tmp, f"{name}.qdq.onnx")
        quantize_static(model, qdq, RandomReader(feeds, args.calibration),
                        quant_format=QuantFormat.QDQ, activation_type=QuantType.QUInt8,
                        weight_type=QuantType.QInt8)
        sessions = {"qdq": ort_session(qdq, args.threads), "f32": ort_session(model, args.threads)}
        ort = {k: [] for k in sessions}
        byoc = {"int8": ([], []), "pass": ([], []), "f32": ([], [])}
        runs = [("int8", "dnnl", ("--quantize",)),
                ("pass", "dnnl:dnnl.int8_epilogue=pass", ("--quantize",)),
                ("f32", "dnnl", ())]
        for _ in range(args.rounds):
            for key, target, extra in runs:
                med, mn, _ = byoc_times(args.byoc, model, inputs, args.threads, args.iters,
                                        args.warmup, target, extra)
                byoc[key][0].append(med)
                byoc[key][1].append(mn)
            for key, sess in sessions.items():
                ort[key] += ort_times(sess, feeds, args.iters, args.warmup)
        q, f = float(np.median(ort["qdq"])), float(np.median(ort["f32"]))
        b8, b32 = float(np.median(byoc["int8"][0])), float(np.median(byoc["f32"][0]))
        bp = float(np.median(byoc["pass"][0]))
        print(f"{name:<12} {q:>7.2f}ms {min(ort['qdq']):>5.2f}ms {f:>7.2f}ms {b8:>8.2f}ms "
              f"{min(byoc['int8'][1]):>5.2f}ms {bp:>8.2f}ms {min(byoc['pass'][1]):>5.2f}ms "
              f"{b32:>7.2f}ms {b8 / q:>9.2f} {b8 / f:>12.2f} {b8 / bp:>10.2f}", flush=True)


if __name__ == "__main__":
    main()
