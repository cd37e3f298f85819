#!/usr/bin/env python3
"""Times `byoc build` (partition, compile every partition, host code, write the artifact) on
ResNet-50 and on synthetic residual chains of about 100k ops, for one or two byoc binaries in
alternating rounds, and prints the best and median wall time of each with their ratio.

The synthetic chain is the network of `benches/pipeline.rs` written as Relay text: six kinds of
blocks on a [1, 4, 4, 4] tensor (conv2d + bias_add + relu, the same with a residual add,
conv2d + tanh, multiply + abs + sigmoid, exp, add + relu) for the two target specs of that bench
(`dnn`: convolutions and their epilogues with composites; `vec`: elementwise math, whose small
regions Prune inlines back); `exp` is on neither target. ResNet-50 is the ONNX light model
(scripts/fetch_onnx_light.sh) built for the dnnl plugin found next to each binary.

The host part runs on the reference kernels (`--host-codegen kernels`) for the synthetic chain,
as in `benches/pipeline.rs`, and is compiled with LLVM (the default) for ResNet-50.

Usage:
    python3 bench/build_time.py [--byoc target/release/byoc] [--against OTHER/byoc]
        [--rounds 5] [--ops 100000] [--dir target/onnx-light] [--skip-resnet]
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

DNN = {
    "target": "dnn",
    "ops": ["nn.conv2d", "nn.bias_add", "nn.relu", "add"],
    "patterns": [
        {"name": "dnn.conv2d_bias_relu", "pattern": "nn.relu(nn.bias_add(nn.conv2d(*, *), *))"},
        {"name": "dnn.conv2d_bias", "pattern": "nn.bias_add(nn.conv2d(*, *), *)"},
        {"name": "dnn.add_relu", "pattern": "nn.relu(add(*, *))"},
    ],
    "prune": {"min_ops": 2, "require_any": ["nn.conv2d"]},
}
VEC = {
    "target": "vec",
    "ops": ["tanh", "sigmoid", "multiply", "abs", "add"],
    "patterns": [{"name": "vec.mul_abs", "pattern": "abs(multiply(*, *))"}],
    "prune": {"min_ops": 5},
}


def chain(n: int) -> str:
    """The synthetic residual chain of about `n` ops as Relay text."""
    lines = []
    ids = 0

    def call(op: str, *args: str) -> str:
        nonlocal ids
        lines.append(f"  %{ids} = {op}({', '.join(args)});")
        ids += 1
        return f"%{ids - 1}"

    h, count, block = "%x", 0, 0
    while count < n:
        kind = block % 6
        if kind == 0:
            h = call("nn.relu", call("nn.bias_add", call("nn.conv2d", h, "%w"), "%bias"))
            count += 3
        elif kind == 1:
            a = call("nn.bias_add", call("nn.conv2d", h, "%w"), "%bias")
            h = call("nn.relu", call("add", a, h))
            count += 4
        elif kind == 2:
            h = call("tanh", call("nn.conv2d", h, "%w"))
            count += 2
        elif kind == 3:
            h = call("sigmoid", call("abs", call("multiply", h, h)))
            count += 3
        elif kind == 4:
            h = call("exp", h)
            count += 1
        else:
            h = call("nn.relu", call("add", h, "%x"))
            count += 2
        block += 1
    head = (
        "def @main(%x: Tensor[(1, 4, 4, 4), float32], %w: Tensor[(4, 4, 1, 1), float32], "
        "%bias: Tensor[(4), float32]) {"
    )
    return "\n".join([head, *lines, f"  {h}", "}", ""])


def timed(cmd: list[str]) -> float:
    start = time.perf_counter()
    done = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed:\n{done.stderr}")
    return elapsed


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--byoc", default="target/release/byoc")
    ap.add_argument("--against", help="a second byoc binary, timed in the same rounds")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--ops", type=int, default=100_000)
    ap.add_argument("--dir", default="target/onnx-light")
    ap.add_argument("--skip-resnet", action="store_true")
    args = ap.parse_args()

    binaries = [args.byoc] + ([args.against] if args.against else [])
    with tempfile.TemporaryDirectory() as tmp:
        relay = os.path.join(tmp, "chain.relay")
        with open(relay, "w") as f:
            f.write(chain(args.ops))
        specs = []
        for spec in (DNN, VEC):
            path = os.path.join(tmp, f"{spec['target']}.json")
            with open(path, "w") as f:
                json.dump(spec, f)
            specs += ["--target-spec", path]
        out = os.path.join(tmp, "out.byoc")
        cases = [(f"chain {args.ops // 1000}k ops", [relay, *specs, "--host-codegen", "kernels"])]
        resnet = os.path.join(args.dir, "resnet50", "model.onnx")
        if not args.skip_resnet:
            if not os.path.exists(resnet):
                sys.exit(f"{resnet} is missing: run scripts/fetch_onnx_light.sh, or pass --skip-resnet")
            cases.append(("resnet50 (dnnl)", [resnet, "--target", "dnnl"]))
        times = {(c, b): [] for c, _ in cases for b in binaries}
        for _ in range(args.rounds):
            for case, extra in cases:
                for b in binaries:
                    times[(case, b)].append(timed([b, "build", *extra, "-o", out]))
    print(f"{'model':<20} {'binary':<40} {'best s':>8} {'median s':>9}")
    for case, _ in cases:
        for b in binaries:
            t = times[(case, b)]
            print(f"{case:<20} {b:<40} {min(t):>8.2f} {statistics.median(t):>9.2f}")
        if args.against:
            ratio = statistics.median(times[(case, args.byoc)]) / statistics.median(times[(case, args.against)])
            print(f"{case:<20} {'median ratio (byoc / against)':<40} {ratio:>8.2f}")


if __name__ == "__main__":
    main()
