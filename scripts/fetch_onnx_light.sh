#!/usr/bin/env bash
# Fetches the ONNX "light" models (shipped inside the onnx wheel) and prepares their test
# data with scripts/gen_onnx_light.py: the shipped models with their expected outputs, and
# random-weight variants with onnxruntime's outputs.
#
#   scripts/fetch_onnx_light.sh [OUT_DIR]     (default: target/onnx-light)
#
# Idempotent: a finished OUT_DIR carries a stamp naming the onnx version and the generator's
# checksum, and a second run with both unchanged does nothing. numpy, onnx and onnxruntime are
# used from the system Python when importable, else installed into a virtual environment
# under OUT_DIR. Prints the prepared directory on its last line.
set -euo pipefail
cd "$(dirname "$0")/.."

ONNX_VERSION=1.17.0
out="${1:-target/onnx-light}"
gen=scripts/gen_onnx_light.py
stamp="$out/.stamp"
want="onnx==$ONNX_VERSION $(sha256sum "$gen" | cut -d' ' -f1)"

if [[ -f "$stamp" && "$(cat "$stamp")" == "$want" ]]; then
    echo "$out"
    exit 0
fi
mkdir -p "$out"

python=python3
if ! "$python" -c 'import numpy, onnx, onnxruntime' 2>/dev/null; then
    venv="$out/venv"
    if [[ ! -x "$venv/bin/python" ]]; then
        "$python" -m venv "$venv"
    fi
    python="$venv/bin/python"
    if ! "$python" -c 'import numpy, onnx, onnxruntime' 2>/dev/null; then
        "$python" -m pip install --quiet --disable-pip-version-check numpy onnx onnxruntime
    fi
fi

wheel_dir="$out/wheel"
if ! compgen -G "$wheel_dir/onnx-$ONNX_VERSION-*.whl" >/dev/null; then
    mkdir -p "$wheel_dir"
    "$python" -m pip download --quiet --disable-pip-version-check --no-deps \
        --only-binary=:all: -d "$wheel_dir" "onnx==$ONNX_VERSION"
fi
wheel=$(compgen -G "$wheel_dir/onnx-$ONNX_VERSION-*.whl" | head -n 1)

light="$out/light"
rm -rf "$light"
mkdir -p "$light"
"$python" - "$wheel" "$light" <<'EOF'
import os, sys, zipfile
wheel, dest = sys.argv[1], sys.argv[2]
prefix = "onnx/backend/test/data/light/"
with zipfile.ZipFile(wheel) as z:
    names = [n for n in z.namelist() if n.startswith(prefix) and n.endswith((".onnx", ".pb"))]
    for n in names:
        with open(os.path.join(dest, os.path.basename(n)), "wb") as f:
            f.write(z.read(n))
print(f"extracted {len(names)} files from {os.path.basename(wheel)}", file=sys.stderr)
EOF

"$python" "$gen" "$light" "$out" >&2
echo "$want" >"$stamp"
echo "$out"
