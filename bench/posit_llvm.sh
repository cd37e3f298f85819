#!/usr/bin/env bash
# SqueezeNet in posit16 (ONNX light model with seeded random weights): the interpreted loop
# (--host-codegen kernels) against compiled host code (--host-codegen llvm), in one run, same
# input, same thread count. Prints each side's CPU and wall time from /usr/bin/time and checks
# that both give the same output arrays (the .npy members of the two .npz files, byte for
# byte; the zip headers carry the write time).
#
#   bench/posit_llvm.sh [LIGHT_DIR]     (default: target/onnx-light, made by
#                                        scripts/fetch_onnx_light.sh)
#
# Needs a release build: cargo build --release -p byoc --bin byoc && cargo build --release -p byoc-plugin-posit
# (or BYOC=... POSIT_PLUGIN=... naming other builds, e.g. the test profile's target/debug/byoc
# and the posit plugin the tests build next to it). THREADS (default 1) sets --threads;
# ROUNDS (default 1) repeats the pair.
set -euo pipefail
cd "$(dirname "$0")/.."

light="${1:-target/onnx-light}"
dir="$light/squeezenet"
byoc="${BYOC:-target/release/byoc}"
plugin="${POSIT_PLUGIN:-target/release/libbyoc_plugin_posit.so}"
threads="${THREADS:-1}"
rounds="${ROUNDS:-1}"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

for round in $(seq "$rounds"); do
    for codegen in kernels llvm; do
        /usr/bin/time -f "round $round $codegen: user %U s, system %S s, wall %e s, max RSS %M KiB" \
            "$byoc" run "$dir/random.onnx" --inputs "$dir/random_input.npz" \
            --dtype 'custom[posites2]16' --host-codegen "$codegen" --threads "$threads" \
            --plugin-path "$plugin" -o "$work/$codegen.npz" --profile 2>"$work/$codegen.err" \
            || { cat "$work/$codegen.err"; exit 1; }
        grep -E '^round|^host-codegen' "$work/$codegen.err" || true
    done
    if cmp -s <(unzip -p "$work/kernels.npz") <(unzip -p "$work/llvm.npz"); then
        echo "round $round: outputs identical"
    else
        echo "round $round: outputs DIFFER" >&2
        exit 1
    fi
done
