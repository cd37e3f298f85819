#!/usr/bin/env bash
# Renders `byoc inspect --format html` reports in headless Chromium and checks the screenshots:
# the PNG exists, is not tiny, and is not one flat colour. Installs Debian's chromium when it
# is missing (needs apt-get and root; otherwise says what to install and fails).
#   ./scripts/check_html.sh [OUT_DIR]      (default target/check_html; screenshots kept there)
set -euo pipefail
cd "$(dirname "$0")/.."
out_dir="${1:-target/check_html}"
mkdir -p "$out_dir"

if ! command -v chromium >/dev/null 2>&1; then
    if command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
        apt-get install -y chromium >/dev/null
    else
        echo "check_html: needs chromium (apt-get install -y chromium)" >&2
        exit 2
    fi
fi

cargo build --quiet --bin byoc
byoc=target/debug/byoc

report() { # NAME MODEL TARGET-SPEC...
    local name=$1 model=$2
    shift 2
    local specs=()
    for s in "$@"; do specs+=(--target-spec "$s"); done
    "$byoc" inspect "$model" "${specs[@]}" --format html -o "$out_dir/$name.html"
}

printf '%s\n' '{"target": "acc", "ops": [{"op": "nn.conv2d", "attrs": {"groups": 1}}, "nn.bias_add"],' \
    ' "prune": {"require_any": ["nn.conv2d"]}}' >"$out_dir/acc.json"
printf '%s\n' '{"target": "vec", "ops": ["nn.relu", "add", "nn.dense", "nn.bias_add", "nn.softmax"]}' \
    >"$out_dir/vec.json"
report small_cnn examples/models/small_cnn.relay examples/targets/myacc.json "$out_dir/vec.json"
report onnx_conv tests/data/onnx/conv/model.onnx "$out_dir/acc.json"

for name in small_cnn onnx_conv; do
    png="$out_dir/$name.png"
    rm -f "$png"
    chromium --headless --no-sandbox --disable-gpu --disable-background-networking \
        --disable-component-update --disable-sync --no-first-run \
        --user-data-dir="$(mktemp -d)" --screenshot="$png" --window-size=1400,1000 \
        "file://$(realpath "$out_dir/$name.html")" >/dev/null 2>&1
    python3 scripts/check_png.py "$png"
done
