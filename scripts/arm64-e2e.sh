#!/usr/bin/env bash
# The arm64 daemon end to end under qemu-user (`make test-arm64`, docs/boards.md): the
# cross-built pschedd on a private socket and state dir, the cross-built pschedctl registers
# a model, plans it, runs one inference through the co-execution engine, and the output must
# match the PyTorch reference to 1e-4 (relative L2, as the native daemon tests check).
# Usage: scripts/arm64-e2e.sh BUILD_DIR. The emulator and the arm64 library root come from
# BUILD_DIR's CMake cache (cmake/aarch64-linux-gnu.cmake).
set -euo pipefail

build="${1:?usage: arm64-e2e.sh BUILD_DIR}"
root="$(cd "$(dirname "$0")/.." && pwd)"
cache_value() { sed -n "s/^$1:[A-Z]*=//p" "$build/CMakeCache.txt"; }
qemu="$(cache_value PSCHED_QEMU_AARCH64)"
cross_root="$(cache_value PSCHED_CROSS_ROOT)"
if [ -z "$qemu" ] || [ -z "$cross_root" ]; then
  echo "arm64-e2e: $build is not an arm64 cross build (no PSCHED_QEMU_AARCH64 in its cache)" >&2
  exit 1
fi
pschedd="$build/daemon/pschedd"
pschedctl="$build/client/pschedctl"
for bin in "$pschedd" "$pschedctl"; do
  [ -x "$bin" ] || { echo "arm64-e2e: $bin is missing; build $build first" >&2; exit 1; }
done

shared="${PSCHED_SHARED_DIR:-$root/../shared}"
name=squeezenet_v1_1
data="$shared/models/reference"
if [ ! -f "$data/$name.onnx" ]; then
  name=tiny_cnn
  data="$root/tests/daemon/data"
fi

. "$root/scripts/daemon-session.sh"
session_open arm64

run() { "$qemu" -L "$cross_root" "$@"; }
ctl() { run "$pschedctl" --socket "$socket" --timeout 600 "$@"; }
step() { printf '==> %s\n' "$*"; }

step "pschedd (arm64, $qemu) on $socket"
# qemu itself in the background (not through run()), so $! is the process SIGTERM must reach.
"$qemu" -L "$cross_root" "$pschedd" --socket "$socket" --state-dir "$work/state" \
  --log-level info >"$work/pschedd.log" 2>&1 &
pid=$!
session_wait_serving 120 "$work/pschedd.log"
ctl platform show

step "model add $name.onnx"
id="$(ctl model add "$data/$name.onnx" | head -n 1)"
echo "model id: $id"

step "plan (iterative)"
ctl -o json plan show "$id" | grep -E '"(makespan_us|planning_ms|scheduler)"'

step "infer $name.input.npy"
ctl infer "$id" --input "$data/$name.input.npy" --output "$work/output.npy"

step "compare with the PyTorch reference $name.output.npy"
/usr/bin/python3 - "$work/output.npy" "$data/$name.output.npy" <<'EOF'
import sys
import numpy as np

got, want = (np.load(path).astype(np.float64) for path in sys.argv[1:3])
if got.shape != want.shape:
    sys.exit(f"arm64-e2e: output shape {got.shape}, reference {want.shape}")
rel_l2 = np.linalg.norm(got - want) / max(np.linalg.norm(want), 1e-30)
max_abs = np.abs(got - want).max()
print(f"relative L2 {rel_l2:.3e}, max abs diff {max_abs:.3e} over {got.size} values")
if not rel_l2 < 1e-4:
    sys.exit("arm64-e2e: FAILED: relative L2 not under 1e-4")
EOF

step "stopping pschedd"
kill -TERM "$pid"
wait "$pid"
pid=""
echo "arm64-e2e: PASSED"
