#!/usr/bin/env bash
# SqueezeNet (random weights, from the ONNX light models) in posit16 on the host, with TVM's
# sequential sums and with the quire (`--plugin-option posit.quire=true`): user CPU time of one
# `byoc run` each (import, conversion and one run), one thread, measured with /usr/bin/time -v,
# and the outputs' errors against float32 (`byoc verify`).
#
#   bench/posit_quire_squeezenet.sh [BYOC] [LIGHT_DIR]
#
# BYOC defaults to target/release/byoc (cargo build --release --bin byoc -p byoc-plugin-posit;
# the posit plugin is found next to it); LIGHT_DIR to target/onnx-light, made by
# scripts/fetch_onnx_light.sh.
set -euo pipefail
cd "$(dirname "$0")/.."

byoc="${1:-target/release/byoc}"
light="${2:-target/onnx-light}"
model="$light/squeezenet/random.onnx"
inputs="$light/squeezenet/random_input.npz"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

cpu() {
    /usr/bin/time -v "$@" >/dev/null 2>"$work/time" || { cat "$work/time"; exit 1; }
    awk -F': ' '/User time/ {u=$2} /System time/ {s=$2} /Elapsed/ {w=$2}
        END {printf "user %s s, system %s s, wall %s\n", u, s, w}' "$work/time"
}

for quire in false true; do
    echo "posit16, posit.quire=$quire:"
    echo -n "  byoc run --threads 1: "
    cpu "$byoc" run "$model" --inputs "$inputs" --dtype 'custom[posites2]16' \
        --plugin-option "posit.quire=$quire" --threads 1
    echo -n "  against float32: "
    "$byoc" verify "$model" --inputs "$inputs" --samples 1 --dtype 'custom[posites2]16' \
        --plugin-option "posit.quire=$quire" | grep max_abs_err
done
