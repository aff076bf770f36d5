#!/usr/bin/env bash
# The main job end to end (`make demo`): start pschedd on a private socket and state dir
# with cpu.0 and a GPU (PoCL's OpenCL device here; cpu.1 instead when OpenCL is missing),
# register a model, show its partition-aware plan, run inferences through the co-execution
# engine with measured vs predicted latency and a Chrome trace, print the status, stop.
# Usage: scripts/demo.sh BUILD_DIR [SCHEDULER]; PSCHED_DEMO_KEEP=1 keeps the work dir
# (plan.svg, trace.json, the daemon state).
set -euo pipefail

build="${1:-build}"
scheduler="${2:-iterative}"
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

. "$root/scripts/daemon-session.sh"
session_open demo

step() { printf '\n==> %s\n' "$*"; }
ctl() { "$pschedctl" --socket "$socket" "$@"; }

# [[devices]]: cpu.0 on core 0 and a second device NAME KIND with extra lines.
devices() {
  printf '[[devices]]\nname = "cpu.0"\nkind = "cpu"\ncores = [0]\n\n'
  printf '[[devices]]\nname = "%s"\nkind = "%s"\n%s\n' "$1" "$2" "$3"
}

start() {
  "$pschedd" --config "$work/pschedd.toml" --socket "$socket" --state-dir "$work/state" \
    --log-level warn &
  pid=$!
  session_wait_serving 30
}

step "starting pschedd (socket $socket, state $work/state) with cpu.0 + gpu (OpenCL)"
devices gpu gpu $'opencl_device = "pthread"\ncores = [1]' >"$work/pschedd.toml"
start
if ! ctl -o json status | grep -q '"gpu"'; then
  step "no usable OpenCL device: restarting with cpu.0 + cpu.1"
  kill -TERM "$pid"
  wait "$pid" || true
  devices cpu.1 cpu 'cores = [1]' >"$work/pschedd.toml"
  start
fi

step "registering $(basename "$model")"
id="$(ctl model add "$model")"
echo "model id: $id"
ctl model ls

step "calibrating the host latency model (times the model's ops and their slices on each device)"
ctl calibrate --budget-s 3

step "$scheduler plan (computed now; Gantt chart in $work/plan.svg)"
ctl plan show "$id" --scheduler "$scheduler" --svg "$work/plan.svg" >"$work/plan.txt"
head -n 3 "$work/plan.txt"
echo "partitioned ops (one row per subtask):"
awk 'NR > 3 && $3 != "none" && n++ < 16' "$work/plan.txt"
echo "($(awk 'NR > 3 && $3 != "none"' "$work/plan.txt" | wc -l) partitioned subtasks," \
  "$(awk 'NR > 3' "$work/plan.txt" | wc -l) subtasks in all)"
step "plan again (from the SQLite cache)"
ctl -o json plan show "$id" --scheduler "$scheduler" |
  grep -E '"(cached|makespan_us|planning_ms|scheduler)"'

step "inference on $(basename "$input") through the co-execution engine (compiled ahead by plan show)"
ctl infer "$id" --scheduler "$scheduler" --input "$input" --output "$work/output.npy"
step "10 more: measured vs predicted latency; Chrome trace of the last in $work/trace.json"
ctl infer "$id" --scheduler "$scheduler" --input "$input" --repeat 10 --trace "$work/trace.json"

step "daemon status"
ctl status

step "stopping pschedd"
kill -TERM "$pid"
wait "$pid"
echo "pschedd exited with status $?"
pid=""
