#!/usr/bin/env bash
# Reductions compiled with their producers and consumers against the reference kernels:
# bench/reduce_mean.relay (mean(relu(x * s + b)) over H and W) and
# bench/softmax_producer.relay (softmax over a 16384-element last axis with a producer and a
# consumer), each run with --host-codegen kernels and llvm alternately in one run, same
# thread count. Prints `byoc bench`'s JSON line (median, min, max latency) and the CPU time /usr/bin/time measures for
# the whole command (model build included), per side.
#
#   bench/host_llvm_reductions.sh
#
# Needs a release build: cargo build --release -p byoc --bin byoc (or BYOC=... naming another
# build). THREADS (default 2) sets --threads, ITERS (default 10) the timed iterations, ROUNDS
# (default 2) repeats each pair.
set -euo pipefail
cd "$(dirname "$0")/.."

byoc="${BYOC:-target/release/byoc}"
threads="${THREADS:-2}"
iters="${ITERS:-10}"
rounds="${ROUNDS:-2}"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

for model in bench/reduce_mean.relay bench/softmax_producer.relay; do
    for round in $(seq "$rounds"); do
        for codegen in kernels llvm; do
            /usr/bin/time -f "$model round $round $codegen: user %U s, system %S s, wall %e s" \
                "$byoc" bench "$model" --host-codegen "$codegen" --threads "$threads" \
                --iters "$iters" --warmup 2 >"$work/out" 2>"$work/err" \
                || { cat "$work/out" "$work/err"; exit 1; }
            echo "$model round $round $codegen: $(cat "$work/out")"
            tail -1 "$work/err"
        done
    done
done
