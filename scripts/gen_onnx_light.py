#!/usr/bin/env python3
"""Prepares the ONNX "light" model zoo for byoc's end-to-end tests and benchmarks.

The onnx wheel ships nine classic CNNs under onnx/backend/test/data/light/ (ResNet-50,
DenseNet-121, Inception v1/v2, ShuffleNet, SqueezeNet, VGG-19, AlexNet, ZFNet-512) whose
float weights were replaced by `ConstantOfShape` nodes (every weight 0.02), each with the
expected output of ONNX's reference evaluator on ONNX's dummy input
(`arange(n).reshape(shape) / n`, see onnx.backend.test.runner.generate_dummy_data).

Constant weights make most outputs uniform (softmax of equal logits), so each model also gets
a random-weight variant: every `ConstantOfShape` weight becomes a seeded random initializer
(He-normal for Conv/Gemm weights, small biases, BatchNormalization statistics near 1), the
last layer before the Softmax is rescaled so the logits have a standard deviation of 2, and
onnxruntime (CPU provider) computes the reference outputs on a seeded normal input.

Layout written under OUT_DIR (one folder per model, keyed by input/output ONNX names):
    <name>/model.onnx           the shipped light model
    <name>/input.npz            ONNX's dummy input
    <name>/expected.npz         the shipped expected output
    <name>/random.onnx          the random-weight variant (IR version 8)
    <name>/random_input.npz     seeded N(0, 1) input
    <name>/random_expected.npz  onnxruntime's outputs

Usage: gen_onnx_light.py LIGHT_DIR OUT_DIR
  LIGHT_DIR: the extracted onnx/backend/test/data/light folder (scripts/fetch_onnx_light.sh).
Needs numpy, onnx, onnxruntime.
"""
from __future__ import annotations

import os
import sys

import numpy as np
import onnx
import onnxruntime as ort
from onnx import helper, numpy_helper

MODELS = [
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
SEED = 20240521
LOGIT_STD = 2.0
# Ops that pass a weight through unchanged in value (only its shape changes).
RESHAPING = {"Reshape", "Unsqueeze", "Squeeze", "Flatten"}
# Ops between the last Conv/Gemm and the Softmax that commute with a positive scale.
SCALE_TRANSPARENT = {"Relu", "GlobalAveragePool", "AveragePool", "Reshape", "Flatten", "Dropout"}


def data_inputs(model: onnx.ModelProto) -> list[onnx.ValueInfoProto]:
    """Graph inputs that are not initializers (IR < 4 models list both)."""
    inits = {i.name for i in model.graph.initializer}
    return [i for i in model.graph.input if i.name not in inits]


def static_shape(vi: onnx.ValueInfoProto) -> tuple[int, ...]:
    """The input's shape with symbolic dims set to 1 (as ONNX's backend tests do)."""
    return tuple(
        d.dim_value if d.HasField("dim_value") else 1 for d in vi.type.tensor_type.shape.dim
    )


def consumers(graph: onnx.GraphProto) -> dict[str, list[tuple[onnx.NodeProto, int]]]:
    out: dict[str, list[tuple[onnx.NodeProto, int]]] = {}
    for node in graph.node:
        for k, name in enumerate(node.input):
            out.setdefault(name, []).append((node, k))
    return out


def attr(node: onnx.NodeProto, name: str, default):
    for a in node.attribute:
        if a.name == name:
            return helper.get_attribute_value(a)
    return default


def final_use(name, uses, inits):
    """Follows a weight through reshaping ops to the node that computes with it; returns
    (node, input index, the weight's shape as that node sees it or None)."""
    seen_shape = None
    while True:
        (node, k), *_ = uses[name]
        if node.op_type not in RESHAPING:
            return node, k, seen_shape
        if node.op_type == "Reshape" and node.input[1] in inits:
            seen_shape = tuple(int(d) for d in numpy_helper.to_array(inits[node.input[1]]))
        name = node.output[0]


def random_weight(shape, node, k, seen_shape, rng):
    """Seeded values for one weight by its role; keeps activations finite and non-trivial."""
    shape = tuple(int(d) for d in shape)
    op = node.op_type
    if op == "Conv" and k == 1:
        fan_in = int(np.prod(shape[1:]))
        return rng.standard_normal(shape) * np.sqrt(2.0 / fan_in)
    if op == "Gemm" and k == 1:
        as_used = seen_shape if seen_shape and -1 not in seen_shape else shape
        fan_in = as_used[1] if attr(node, "transB", 0) else as_used[0]
        return rng.standard_normal(shape) * np.sqrt(2.0 / fan_in)
    if op == "BatchNormalization" and k in (1, 4):  # scale, variance
        return rng.uniform(0.5, 1.5, shape)
    if op == "Mul":  # a scale (DenseNet, Inception v2 fold BN into Mul/Add)
        return rng.uniform(0.5, 1.5, shape)
    # biases, BN bias/mean, Add operands
    return rng.standard_normal(shape) * 0.1


def randomize(model: onnx.ModelProto, rng) -> tuple[onnx.ModelProto, dict[str, str]]:
    """Replaces every ConstantOfShape by a random initializer; returns the model and, per
    initializer, the op type it feeds."""
    graph = model.graph
    inits = {i.name: i for i in graph.initializer}
    uses = consumers(graph)
    new_inits, keep, role = [], [], {}
    for node in graph.node:
        if node.op_type != "ConstantOfShape" or node.input[0] not in inits:
            keep.append(node)
            continue
        shape = numpy_helper.to_array(inits[node.input[0]])
        out = node.output[0]
        user, k, seen = final_use(out, uses, inits)
        values = random_weight(shape, user, k, seen, rng).astype(np.float32)
        new_inits.append(numpy_helper.from_array(values, out))
        role[out] = f"{user.op_type}:{k}"
    del graph.node[:]
    graph.node.extend(keep)
    graph.initializer.extend(new_inits)
    # Shape initializers of the removed ConstantOfShape nodes are now unused.
    used = {i for n in graph.node for i in n.input} | {o.name for o in graph.output}
    live = [i for i in graph.initializer if i.name in used]
    del graph.initializer[:]
    graph.initializer.extend(live)
    live_names = {i.name for i in live}
    inputs = [i for i in graph.input if i.name in used or i.name not in inits]
    inputs = [i for i in inputs if i.name not in live_names]  # IR >= 4: initializers need no input
    del graph.input[:]
    graph.input.extend(inputs)
    model.ir_version = 8
    return model, role


def session(model: onnx.ModelProto) -> ort.InferenceSession:
    opts = ort.SessionOptions()
    opts.log_severity_level = 3
    return ort.InferenceSession(
        model.SerializeToString(), opts, providers=["CPUExecutionProvider"]
    )


def calibrate_logits(model: onnx.ModelProto, feeds) -> None:
    """Scales the weights (and bias) of the last Conv/Gemm before the Softmax so the Softmax
    input has standard deviation LOGIT_STD: positive scales commute with the ops between."""
    graph = model.graph
    softmax = [n for n in graph.node if n.op_type == "Softmax"]
    if not softmax:
        return
    producer = {o: n for n in graph.node for o in n.output}
    logits = softmax[-1].input[0]
    node = producer[logits]
    while node.op_type in SCALE_TRANSPARENT:
        node = producer[node.input[0]]
    if node.op_type not in ("Conv", "Gemm"):
        raise SystemExit(f"cannot calibrate: {node.op_type} before the Softmax")
    probe = onnx.ModelProto()
    probe.CopyFrom(model)
    probe.graph.output.append(onnx.ValueInfoProto(name=logits))
    z = session(probe).run([logits], feeds)[0]
    scale = LOGIT_STD / float(np.std(z))
    inits = {i.name: i for i in graph.initializer}
    for name in node.input[1:]:
        # Follow reshapes back to the initializer (Inception v1 reshapes its classifier).
        while name not in inits and name in producer and producer[name].op_type in RESHAPING:
            name = producer[name].input[0]
        if name in inits:
            arr = numpy_helper.to_array(inits[name]) * np.float32(scale)
            inits[name].CopyFrom(numpy_helper.from_array(arr.astype(np.float32), name))


def save_npz(path: str, arrays: dict[str, np.ndarray]) -> None:
    np.savez(path, **arrays)


def prepare(light_dir: str, out_dir: str, name: str) -> None:
    src = os.path.join(light_dir, f"light_{name}.onnx")
    model = onnx.load(src)
    folder = os.path.join(out_dir, name)
    os.makedirs(folder, exist_ok=True)
    onnx.save(model, os.path.join(folder, "model.onnx"))

    inputs = data_inputs(model)
    dummy = {}
    for vi in inputs:
        shape = static_shape(vi)
        n = int(np.prod(shape))
        dummy[vi.name] = (np.arange(n).reshape(shape) / n).astype(np.float32)
    save_npz(os.path.join(folder, "input.npz"), dummy)
    expected = {}
    for i, out in enumerate(model.graph.output):
        pb = os.path.join(light_dir, f"light_{name}_output_{i}.pb")
        expected[out.name] = numpy_helper.to_array(onnx.load_tensor(pb))
    save_npz(os.path.join(folder, "expected.npz"), expected)

    rng = np.random.default_rng([SEED, MODELS.index(name)])
    rand, _ = randomize(model, rng)
    feeds = {
        vi.name: rng.standard_normal(static_shape(vi)).astype(np.float32) for vi in inputs
    }
    calibrate_logits(rand, feeds)
    onnx.checker.check_model(rand)
    onnx.save(rand, os.path.join(folder, "random.onnx"))
    outs = session(rand).run(None, feeds)
    save_npz(os.path.join(folder, "random_input.npz"), feeds)
    save_npz(
        os.path.join(folder, "random_expected.npz"),
        {o.name: v for o, v in zip(rand.graph.output, outs)},
    )
    summary = ", ".join(
        f"{o.name} {v.shape} |max| {np.abs(v).max():.3g}" for o, v in zip(rand.graph.output, outs)
    )
    print(f"{name}: {summary}")


def main() -> None:
    if len(sys.argv) != 3:
        raise SystemExit(__doc__)
    light_dir, out_dir = sys.argv[1], sys.argv[2]
    for name in MODELS:
        prepare(light_dir, out_dir, name)


if __name__ == "__main__":
    main()
