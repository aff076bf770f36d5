#!/usr/bin/env bash
# A bounded soak of pschedd (`make soak SOAK_SECONDS=N`): CLIENTS concurrent pschedctl loops
# infer the tiny CNN and squeezenet and check every output against the reference, while a
# churn loop adds, plans and removes a third model. Every 5 s it samples the daemon's RSS and
# open file descriptors; at the end it prints the table, the answer counts and a verdict: it
# fails on any wrong or failed answer, on file-descriptor growth, or when the RSS does not
# plateau after warm-up. The first third of the samples is warm-up (models load, plans
# compile, the allocator's arenas fill); the median of the last third may not exceed the
# median of the middle third by more than 10%. The post-warm-up trend is printed too. A
# memory-hostile client registers models whose runs would need 3 GiB or more (a Concat of 16
# copies of a [1,16,1024,1024] input and its cousins) and asks for their plans and inferences:
# each must be refused by max_plan_memory_bytes (1 GiB here), and any answer is a failure.
# Usage: scripts/soak.sh BUILD_DIR [SECONDS] [CLIENTS]
set -euo pipefail
build="$(cd "$1" && pwd)"
seconds="${2:-180}"
clients="${3:-4}"
root="$(cd "$(dirname "$0")/.." && pwd)"
shared="${PSCHED_SHARED_DIR:-$root/../shared}"
work="$(mktemp -d /tmp/psched-soak.XXXXXX)"
socket="$work/pschedd.sock"
ctl() { "$build/client/pschedctl" --socket "$socket" --timeout 120 "$@"; }

printf 'max_plan_memory_bytes = 1073741824\n' > "$work/pschedd.toml"
"$build/daemon/pschedd" --config "$work/pschedd.toml" --socket "$socket" \
  --state-dir "$work/state" --log-level warn 2>"$work/pschedd.log" &
pid=$!
cleanup() {
  kill -TERM "$pid" 2>/dev/null && wait "$pid" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
for _ in $(seq 100); do ctl status >/dev/null 2>&1 && break; sleep 0.1; done

tiny="$root/tests/daemon/data/tiny_cnn"
squeeze="$shared/models/reference/squeezenet_v1_1"
churn="$shared/models/reference/peleenet.onnx"
tiny_id="$(ctl model add "$tiny.onnx" | head -1)"
squeeze_id="$(ctl model add "$squeeze.onnx" | head -1)"

# max |a - b| <= 1e-4, in numpy (Debian's python3-numpy is a test dependency).
same() { /usr/bin/python3 -c "import numpy as n,sys; a=n.load(sys.argv[1]); b=n.load(sys.argv[2]); \
sys.exit(0 if a.shape==b.shape and float(n.abs(a-b).max())<=1e-4 else 1)" "$1" "$2" \
  2>>"$work/errors"; }

deadline=$(( $(date +%s) + seconds ))
client() {  # $1: index; alternates the two models, checks each answer
  local i=0 ok=0 bad=0 out="$work/out.$1.npy"
  while [ "$(date +%s)" -lt "$deadline" ]; do
    if (( i % 2 )); then id="$squeeze_id"; ref="$squeeze"; else id="$tiny_id"; ref="$tiny"; fi
    if ctl infer "$id" --input "$ref.input.npy" --output "$out" >/dev/null 2>>"$work/errors" &&
       same "$out" "$ref.output.npy"; then ok=$((ok + 1)); else bad=$((bad + 1)); fi
    i=$((i + 1))
  done
  echo "$ok $bad" > "$work/client.$1"
}
churner() {  # add, plan, remove: the model cache and plan cache grow and shrink
  local rounds=0 bad=0
  while [ "$(date +%s)" -lt "$deadline" ]; do
    if id="$(ctl model add "$churn" 2>>"$work/errors" | head -1)" &&
       ctl plan show "$id" --scheduler heft >/dev/null 2>>"$work/errors" &&
       ctl model rm "$id" >/dev/null 2>>"$work/errors"; then rounds=$((rounds + 1));
    else bad=$((bad + 1)); fi
  done
  echo "$rounds $bad" > "$work/churn"
}
# The memory bombs: a few hundred bytes of ONNX each (python3-onnx is a test dependency).
/usr/bin/python3 - "$work" <<'PY'
import sys
from onnx import TensorProto, helper, save
for name, (channels, side) in {"bomb": (16, 1024), "cousin": (4, 2048), "wide": (1, 4096)}.items():
    nodes = [helper.make_node("Concat", ["x"] * 16, ["c"], axis=1),
             helper.make_node("Relu", ["c"], ["r"]), helper.make_node("Add", ["r", "c"], ["a"]),
             helper.make_node("Sigmoid", ["a"], ["s"]), helper.make_node("Add", ["s", "a"], ["b"]),
             helper.make_node("GlobalAveragePool", ["b"], ["y"])]
    graph = helper.make_graph(
        nodes, name, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, channels, side, side])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 16 * channels, 1, 1])])
    save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]),
         f"{sys.argv[1]}/{name}.onnx")
PY
hostile() {  # every plan and inference of a bomb must be refused by the memory budget
  local refused=0 bad=0
  while [ "$(date +%s)" -lt "$deadline" ]; do
    for bomb in bomb cousin wide; do
      id="$(ctl model add "$work/$bomb.onnx" 2>>"$work/errors" | head -1)" || { bad=$((bad + 1)); continue; }
      for command in "plan show" infer; do
        # shellcheck disable=SC2086
        if ctl $command "$id" --scheduler heft >/dev/null 2>"$work/hostile.err"; then
          bad=$((bad + 1))
        elif grep -q "over max_plan_memory_bytes" "$work/hostile.err"; then
          refused=$((refused + 1))
        else
          bad=$((bad + 1)); cat "$work/hostile.err" >> "$work/errors"
        fi
      done
    done
  done
  echo "$refused $bad" > "$work/hostile"
}
for c in $(seq "$clients"); do client "$c" & done
churner &
hostile &

printf '%8s %10s %6s\n' elapsed_s rss_mib fds
samples=()
start=$(date +%s)
while [ "$(date +%s)" -lt "$deadline" ]; do
  elapsed=$(( $(date +%s) - start ))
  rss=$(awk '/VmRSS/ {printf "%.1f", $2 / 1024}' "/proc/$pid/status")
  fds=$(ls "/proc/$pid/fd" | wc -l)
  printf '%8d %10s %6d\n' "$elapsed" "$rss" "$fds"
  samples+=("$elapsed $rss $fds")
  sleep 5
done
wait $(jobs -p | grep -v "^$pid$") 2>/dev/null || true

ok=0; bad=0
for c in $(seq "$clients"); do read -r o b < "$work/client.$c"; ok=$((ok + o)); bad=$((bad + b)); done
read -r churned churn_bad < "$work/churn"
read -r refused hostile_bad < "$work/hostile"
echo "inferences: $ok correct, $bad wrong or failed; churn: $churned add/plan/remove rounds, $churn_bad failed"
echo "memory bombs: $refused plans and inferences refused by max_plan_memory_bytes, $hostile_bad not"
verdict=$(printf '%s\n' "${samples[@]}" | /usr/bin/python3 -c '
import statistics, sys
rows = [tuple(map(float, l.split())) for l in sys.stdin if l.strip()]
n = len(rows); third = max(1, n // 3)
rss = lambda part: [r[1] for r in part]
mid = statistics.median(rss(rows[third:n - third] or rows))
end = statistics.median(rss(rows[n - third:]))
after = rows[third:]
trend = (statistics.linear_regression([r[0] / 60 for r in after], rss(after)).slope
         if len(after) > 1 else 0.0)
first_fds, last_fds = rows[min(1, n - 1)][2], rows[-1][2]  # the first sample precedes any load
print(f"rss after warm-up: median {mid:.1f} MiB (middle third), {end:.1f} MiB (last third), "
      f"trend {trend:+.1f} MiB/min, peak {max(rss(rows)):.1f} MiB; fds {first_fds:.0f} -> {last_fds:.0f}")
print("ok" if end - mid <= 0.10 * mid and last_fds - first_fds <= 2 else "growth")')
echo "$verdict" | head -1
if [ "$bad" -ne 0 ] || [ "$churn_bad" -ne 0 ] || [ "$hostile_bad" -ne 0 ] ||
   [ "$(echo "$verdict" | tail -1)" != ok ]; then
  echo "soak: FAILED"; [ -s "$work/errors" ] && sort "$work/errors" | uniq -c | head; exit 1
fi
echo "soak: passed"
