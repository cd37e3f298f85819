#!/usr/bin/env python3
"""Writes the pre-softmax variant of ONNX light models: the model with its final Softmax
removed, so that it returns the logits.

With random weights the light models' logits are nearly equal and their softmax is close to
uniform, so comparing softmax outputs (float against int8, say) says little; the logits keep
the differences. For each NAME (default: the five CNNs of docs/quantization.md's accuracy
table) it reads LIGHT_DIR/NAME/random.onnx (scripts/fetch_onnx_light.sh) and writes
OUT_DIR/NAME/logits.onnx, whose output is the Softmax's input (models whose outputs come from
no Softmax are copied unchanged).

Requirements: pip install onnx. Run from anywhere:
    python3 scripts/light_logits.py LIGHT_DIR OUT_DIR [NAME ...]
"""
from __future__ import annotations

import os
import sys

import onnx

MODELS = ["resnet50", "densenet121", "inception_v1", "squeezenet", "shufflenet"]


def strip_softmax(m):
    """Replaces every graph output produced by a Softmax with that Softmax's input."""
    producer = {o: n for n in m.graph.node for o in n.output}
    for i, out in enumerate(m.graph.output):
        node = producer.get(out.name)
        if node is None or node.op_type != "Softmax":
            continue
        m.graph.node.remove(node)
        m.graph.output[i].CopyFrom(onnx.ValueInfoProto(name=node.input[0]))
    return m


def main():
    if len(sys.argv) < 3:
        sys.exit("usage: light_logits.py LIGHT_DIR OUT_DIR [NAME ...]")
    light, out, names = sys.argv[1], sys.argv[2], sys.argv[3:] or MODELS
    for name in names:
        m = strip_softmax(onnx.load(os.path.join(light, name, "random.onnx")))
        d = os.path.join(out, name)
        os.makedirs(d, exist_ok=True)
        onnx.save(m, os.path.join(d, "logits.onnx"))
        print(f"wrote {os.path.join(d, 'logits.onnx')}")


if __name__ == "__main__":
    main()
