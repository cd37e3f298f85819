#!/usr/bin/env python3
"""Times onnxruntime (CPU provider) on the ResNet-50 conv2d layer shapes of
core/kernels/benches/conv2d.rs, with 1 and 2 intra-op threads, for the side-by-side table in
docs/performance.md. Usage: python3 bench/conv2d_ort.py   (needs numpy, onnx, onnxruntime)
"""
import time

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper

LAYERS = [
    ("1x64x56x56  3x3  64 pad 1", (1, 64, 56, 56), (64, 64, 3, 3), 1, 1),
    ("1x256x56x56 1x1  64", (1, 256, 56, 56), (64, 256, 1, 1), 1, 0),
    ("1x3x224x224 7x7  64 s2 pad 3", (1, 3, 224, 224), (64, 3, 7, 7), 2, 3),
    ("1x512x7x7   3x3 512 pad 1", (1, 512, 7, 7), (512, 512, 3, 3), 1, 1),
]

print(f"{'layer':<30} {'threads':>7} {'median ms':>10} {'GFLOP/s':>9}")
for name, data, weight, stride, pad in LAYERS:
    rng = np.random.default_rng(0)
    w = rng.standard_normal(weight).astype(np.float32)
    node = helper.make_node("Conv", ["x", "w"], ["y"], strides=[stride] * 2, pads=[pad] * 4)
    graph = helper.make_graph(
        [node], "conv", [helper.make_tensor_value_info("x", TensorProto.FLOAT, data)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [helper.make_tensor("w", TensorProto.FLOAT, weight, w.reshape(-1).tolist())])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8)
    x = rng.standard_normal(data).astype(np.float32)
    for threads in (1, 2):
        so = ort.SessionOptions()
        so.intra_op_num_threads = threads
        sess = ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])
        times = []
        for rep in range(11):
            t = time.perf_counter()
            y = sess.run(None, {"x": x})[0]
            if rep:
                times.append(time.perf_counter() - t)
        med = sorted(times)[len(times) // 2]
        o, i, kh, kw = weight
        flops = 2.0 * o * i * kh * kw * y.shape[2] * y.shape[3]
        print(f"{name:<30} {threads:>7} {med * 1e3:>10.2f} {flops / med / 1e9:>9.1f}")
