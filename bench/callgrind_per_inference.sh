#!/usr/bin/env bash
# Instructions per inference of `byoc bench` under callgrind: a count that load on the machine
# does not change, for comparing builds where CPU times are noise. The model is built into an
# artifact first; the count is the difference of two runs with 1 and 3 iterations, halved, so
# loading the artifact cancels out. One thread, `--host-codegen kernels`: valgrind does not
# execute AVX-512, which the compiled host loops use on such a CPU (the reference kernels
# choose their SIMD path at run time and so run under it).
#
# Usage: bench/callgrind_per_inference.sh BYOC MODEL.onnx INPUTS.npz
#   e.g. bench/callgrind_per_inference.sh target/release/byoc \
#          target/onnx-light/squeezenet/random.onnx target/onnx-light/squeezenet/random_input.npz
set -euo pipefail
if [ $# -ne 3 ]; then
    sed -n '2,12p' "$0" >&2
    exit 2
fi
byoc=$1 model=$2 inputs=$3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$byoc" build "$model" -o "$work/model.byoc" --host-codegen kernels >/dev/null
count() {
    if ! valgrind --tool=callgrind --callgrind-out-file="$work/cg.$1" \
        "$byoc" bench "$work/model.byoc" --inputs "$inputs" --threads 1 --warmup 0 \
        --iters "$1" >/dev/null 2>"$work/log.$1"; then
        tail -n 20 "$work/log.$1" >&2
        echo "callgrind run with --iters $1 failed" >&2
        exit 1
    fi
    grep -m1 '^summary:' "$work/cg.$1" | awk '{print $2}'
}
one=$(count 1)
three=$(count 3)
echo $(((three - one) / 2))
