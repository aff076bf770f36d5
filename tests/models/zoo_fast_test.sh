#!/bin/sh
# The fast zoo set (tools/zoo/zoo_sets.py): torchvision and torch.nn models exported with seeded
# random weights, registered with a real pschedd, planned and run; every file must import, run
# and match PyTorch within rel L2 1e-4. Usage: zoo_fast_test.sh BUILD_DIR SOURCE_DIR
set -eu
build="$1"
src="$2"
python=/usr/bin/python3
if ! "$python" -c "import torch, torchvision, onnx" 2>/dev/null; then
  echo "SKIP: $python lacks torch, torchvision or onnx"
  exit 0
fi
out="$(mktemp -d "${TMPDIR:-/tmp}/psched_zoo_fast.XXXXXX")"
trap 'rm -rf "$out"' EXIT
"$python" "$src/tools/zoo/export_zoo.py" --out "$out" --set fast --jobs 2
"$python" "$src/tools/zoo/run_zoo.py" "$out" --build "$build" --set fast --runs 1 --no-ort \
  --tolerance 1e-4 --check
