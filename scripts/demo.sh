#!/usr/bin/env bash
# The main job end to end (`make demo`): start pschedd on a private socket and state dir,
# register a model, show its plan, run an inference, print the daemon's status, stop it.
# Usage: scripts/demo.sh BUILD_DIR
set -euo pipefail

build="${1:-build}"
root="$(cd "$(dirname "$0")/.." && pwd)"
pschedd="$build/daemon/pschedd"
pschedctl="$build/client/pschedctl"
for bin in "$pschedd" "$pschedctl"; do
  [ -x "$bin" ] || { echo "demo: $bin is missing; build first (make build)" >&2; exit 1; }
done

shared="${PSCHED_SHARED_DIR:-$root/../shared}"
model="$shared/models/reference/squeezenet_v1_1.onnx"
input="$shared/models/reference/squeezenet_v1_1.input.npy"
if [ ! -f "$model" ]; then
  model="$root/tests/daemon/data/tiny_cnn.onnx"
  input="$root/tests/daemon/data/tiny_cnn.input.npy"
fi

work="$(mktemp -d /tmp/psched-demo.XXXXXX)"
socket="$work/pschedd.sock"
pid=""
cleanup() {
  if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then kill -TERM "$pid"; wait "$pid" || true; fi
  rm -rf "$work"
}
trap cleanup EXIT

step() { printf '\n==> %s\n' "$*"; }
ctl() { "$pschedctl" --socket "$socket" "$@"; }

step "starting pschedd (socket $socket, state $work/state)"
"$pschedd" --socket "$socket" --state-dir "$work/state" --log-level warn &
pid=$!
for _ in $(seq 100); do
  ctl status >/dev/null 2>&1 && break
  kill -0 "$pid" 2>/dev/null || { echo "demo: pschedd exited during start-up" >&2; exit 1; }
  sleep 0.1
done
ctl status >/dev/null

step "registering $(basename "$model")"
id="$(ctl model add "$model")"
echo "model id: $id"
ctl model ls

step "plan (computed now)"
ctl plan show "$id" | head -n 12
echo "..."
step "plan again (from the SQLite cache)"
ctl -o json plan show "$id" | grep -E '"(cached|makespan_us|planning_ms|scheduler)"'

step "inference on $(basename "$input")"
ctl infer "$id" --input "$input" --output "$work/output.npy"

step "daemon status"
ctl status

step "stopping pschedd"
kill -TERM "$pid"
wait "$pid"
echo "pschedd exited with status $?"
pid=""
