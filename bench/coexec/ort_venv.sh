#!/bin/sh
# Creates (once) the Python venv the ONNX Runtime peer of psched_coexec_bench runs in, with
# onnxruntime, onnx and numpy from PyPI, and prints its python. Only the benchmark uses it:
# neither the build nor `make test` needs PyPI.
# Usage: ort_venv.sh VENV_DIR
set -eu
venv=${1:?usage: ort_venv.sh VENV_DIR}
if ! "$venv/bin/python" -c 'import onnxruntime, onnx, numpy' 2>/dev/null; then
  python3 -m venv "$venv" >&2
  "$venv/bin/pip" install --quiet --disable-pip-version-check onnxruntime onnx numpy >&2
fi
echo "$venv/bin/python"
