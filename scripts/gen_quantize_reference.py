#!/usr/bin/env python3
"""Writes the bit-exact reference of the quantize pass (tests/quantize.rs) to tests/data/quantize/:

- conv_bn_relu.relay: a float model, three conv2d -> batch_norm -> relu blocks and a residual add,
  with its weights and batch-norm statistics as constants;
- input.npz: its input `x`;
- expected.npz: `output_0`, the model quantized with TVM's qconfig (global scale 8.0, no layer
  skipped) and run on integers, computed here with numpy alone.

The batch-norm parameters are chosen so that folding them into the weights is exact in float32
(variance 0.25 and epsilon 0, gammas and means powers-of-two multiples), so the reference does
not depend on how the folding rounds. Usage: python3 scripts/gen_quantize_reference.py [OUT_DIR]
"""

import os
import sys

import numpy as np

OUT = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "tests", "data", "quantize")
rng = np.random.default_rng(20261125)

C_IN, C, H, W = 3, 8, 8, 8
GLOBAL_EXP = -4  # global_scale 8.0 / 128 = 2^-4


def block_params(c_in):
    w = (rng.standard_normal((C, c_in, 3, 3)) * 0.3).astype(np.float32)
    gamma = (2.0 ** rng.integers(-2, 2, C)).astype(np.float32)
    beta = (rng.integers(-64, 64, C) / 128.0).astype(np.float32)
    mean = (rng.integers(-64, 64, C) / 256.0).astype(np.float32)
    var = np.full(C, 0.25, np.float32)
    return w, gamma, beta, mean, var


def const(a):
    vals = ", ".join(repr(float(v)) for v in a.reshape(-1))
    return f"const({tuple(a.shape)}, float32, [{vals}])".replace(",)", ")")


blocks = [block_params(C_IN), block_params(C), block_params(C)]
x = rng.uniform(-1.5, 1.5, (1, C_IN, H, W)).astype(np.float32)

# ---- the float model as Relay text
lines = [f"def @main(%x: Tensor[(1, {C_IN}, {H}, {W}), float32]) {{"]
n = 0
prev = "%x"
outs = []
for w, gamma, beta, mean, var in blocks:
    lines.append(f"  %{n} = nn.conv2d({prev}, {const(w)}, padding=[1, 1, 1, 1], channels={C}, kernel_size=[3, 3]);")
    lines.append(f"  %{n + 1} = nn.batch_norm(%{n}, {const(gamma)}, {const(beta)}, {const(mean)}, {const(var)}, epsilon=0f);")
    lines.append(f"  %{n + 2} = nn.relu(%{n + 1}.0);")
    prev = f"%{n + 2}"
    outs.append(prev)
    n += 3
lines.append(f"  add({outs[1]}, {outs[2]})")
lines.append("}")

# ---- the integer reference


def fold(w, gamma, beta, mean, var):
    scale = (np.float32(1) / np.sqrt(var)) * gamma
    return w * scale[:, None, None, None], beta - mean * scale


def exponent(max_abs):
    return int(np.ceil(np.log2(max_abs))) - 7


def conv_int(q, wq):
    """3x3, padding 1, stride 1, int8 x int8 -> int32 (exact)."""
    n, c, h, w_ = q.shape
    p = np.pad(q.astype(np.int64), ((0, 0), (0, 0), (1, 1), (1, 1)))
    out = np.zeros((n, wq.shape[0], h, w_), np.int64)
    for i in range(3):
        for j in range(3):
            out += np.einsum("nchw,oc->nohw", p[:, :, i:i + h, j:j + w_], wq[:, :, i, j].astype(np.int64))
    return out.astype(np.int32)


def requantize(acc, s):
    """int32 at exponent a -> int8 at a + s (round for shift, clip [-127, 127])."""
    if s > 0:
        acc = (acc + np.int32(1 << (s - 1))) >> np.int32(s)
    elif s < 0:
        acc = acc << np.int32(-s)
    return np.clip(acc, -127, 127).astype(np.int8)


q = np.clip(np.round(x * np.float32(2.0 ** -GLOBAL_EXP)), -127, 127).astype(np.int8)
q_exp = GLOBAL_EXP
acts = []
for k, params in enumerate(blocks):
    wf, bias = fold(*params)
    e_w = exponent(np.abs(wf).max())
    wq = np.clip(np.round(wf / np.float32(2.0 ** e_w)), -127, 127).astype(np.int8)
    e_acc = q_exp + e_w
    bq = np.round(bias.astype(np.float64) / 2.0 ** e_acc).astype(np.int32)
    acc = conv_int(q, wq) + bq[None, :, None, None]
    acc = np.maximum(acc, 0)
    acts.append((acc, e_acc))
    if k < len(blocks) - 1:
        q = requantize(acc, GLOBAL_EXP - e_acc)
        q_exp = GLOBAL_EXP
(a1, e1), (a2, e2) = acts[1], acts[2]
e = min(e1, e2)
res = (a1 << np.int32(e1 - e)) + (a2 << np.int32(e2 - e))
out = res.astype(np.float32) * np.float32(2.0 ** e)

os.makedirs(OUT, exist_ok=True)
with open(os.path.join(OUT, "conv_bn_relu.relay"), "w") as f:
    f.write("\n".join(lines) + "\n")
np.savez(os.path.join(OUT, "input.npz"), x=x)
np.savez(os.path.join(OUT, "expected.npz"), output_0=out)
print(f"wrote {OUT}: output range [{out.min()}, {out.max()}], {np.count_nonzero(out)} non-zero values")
