#!/usr/bin/env bash
# csource on SqueezeNet (random weights, from the ONNX light models): C generation time, the
# compile time of each partition with the default flags, and the latency of the whole model
# with its partitions compiled by csource against the host executor (`byoc bench`).
#
#   bench/csource_squeezenet.sh [LIGHT_DIR]     (default: target/onnx-light, made by
#                                                scripts/fetch_onnx_light.sh)
#
# Needs a release build: cargo build --release --bin byoc -p byoc-plugin-csource
set -euo pipefail
cd "$(dirname "$0")/.."

light="${1:-target/onnx-light}"
model="$light/squeezenet/random.onnx"
byoc=target/release/byoc
iters="${ITERS:-20}"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

now() { date +%s.%N; }
ms() { echo "($2 - $1) * 1000" | bc -l | xargs printf '%.0f'; }

t0=$(now)
"$byoc" inspect "$model" --target csource --emit-source "$work/src" >/dev/null 2>&1
t1=$(now)
echo "partition + generate C (whole model, one process): $(ms "$t0" "$t1") ms"
for c in "$work"/src/*.c; do
    s=$(now)
    "${CC:-cc}" -O2 -fPIC -shared -o "$work/$(basename "$c" .c).so" "$c" -lm
    e=$(now)
    echo "  $(basename "$c"): $(wc -c <"$c") bytes of C, compile $(ms "$s" "$e") ms"
done
t0=$(now)
"$byoc" build "$model" --target csource -o "$work/sq.byoc" >/dev/null
t1=$(now)
echo "byoc build --target csource (partition, generate, compile all, write): $(ms "$t0" "$t1") ms"

for threads in 1 2; do
    echo "threads $threads:"
    echo -n "  host:    "
    "$byoc" bench "$model" --threads "$threads" --iters "$iters"
    echo -n "  csource: "
    "$byoc" bench "$work/sq.byoc" --threads "$threads" --iters "$iters"
done
