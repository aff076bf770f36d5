#!/usr/bin/env bash
# The benchmark suite (`make bench`): scheduler quality and planning cost with psched-bench
# on one platform profile, the iterative search's ablation, and the executor and daemon
# overhead benchmarks when their binaries were built. Results go to BUILD/bench-results/;
# every table is also printed. About 5 minutes on 2 shared cores.
#
# Usage: scripts/bench.sh BUILD_DIR
# Environment: PSCHED_BENCH_PLATFORM (default oneplus11), PSCHED_SHARED_DIR (default ../shared).
set -euo pipefail

if [[ $# -ne 1 ]]; then
  echo "usage: $0 BUILD_DIR" >&2
  exit 2
fi
if [[ ! -d "$1" ]]; then
  echo "bench.sh: build directory $1 does not exist; run make build first" >&2
  exit 1
fi
build="$(cd "$1" && pwd)"
root="$(cd "$(dirname "$0")/.." && pwd)"
shared="${PSCHED_SHARED_DIR:-$root/../shared}"
models="$shared/models/graph-only"
platform="${PSCHED_BENCH_PLATFORM:-oneplus11}"
out="$build/bench-results"
bench="$build/bench/psched_bench/psched-bench"
tables="$root/bench/psched_bench/eval_tables.py"
python=/usr/bin/python3

if [[ ! -x "$bench" ]]; then
  echo "bench.sh: $bench is missing; build first (make build)" >&2
  exit 1
fi
if [[ ! -d "$models" ]]; then
  echo "bench.sh: no models at $models; set PSCHED_SHARED_DIR" >&2
  exit 1
fi
mkdir -p "$out"

section() { printf '\n== %s ==\n\n' "$1"; }

# Every method of the paper's Table 3 that runs in seconds (the CBC references take
# minutes per model and are left to docs/evaluation.md).
lists="heft lookahead-heft peft ldcp ceft psls"
methods="single:gpu,single:cpu.l,single:cpu.m,${lists// /,},partition-only"
for prefix in expanded-local expanded-equal; do
  for l in $lists; do methods+=",$prefix:$l"; done
done
methods+=",pa-heft,iterative,iterative:peft,iterative:psls,iterative:lookahead-heft"

section "Scheduler quality on $platform (psched-bench, 18 models)"
"$bench" --models "$models" --platform "$platform" --methods "$methods" \
  --out "$out/methods_$platform.csv" 2>"$out/methods_$platform.log" | tee "$out/methods_$platform.txt"
"$python" "$tables" platforms "$out/methods_$platform.csv" >"$out/methods_vs_paper_$platform.md"
section "Beside the paper (avg / worst)"
cat "$out/methods_vs_paper_$platform.md"

# The ablation of paper sec. 6.4: one psched-bench run per configuration, all normalised to
# the best makespan any of them (or any method above) reached per model.
section "Iterative search ablation on $platform"
configs=(
  "default (heft, K=3, staging, stage 20)|--methods iterative"
  "inner peft|--methods iterative:peft"
  "inner psls|--methods iterative:psls"
  "inner lookahead-heft|--methods iterative:lookahead-heft"
  "initial min-local-latency|--methods iterative --param iterative.initial=min-local-latency"
  "no staging|--methods iterative --param iterative.staging=false"
  "max stage 10|--methods iterative --param iterative.max_stage_size=10"
  "max stage 40|--methods iterative --param iterative.max_stage_size=40"
  "split=2|--methods iterative --param iterative.splits=2"
  "stage timeout 1 ms|--methods iterative --stage-timeout-ms 1"
  "stage timeout 0.3 ms|--methods iterative --stage-timeout-ms 0.3"
  "stage timeout 0.1 ms|--methods iterative --stage-timeout-ms 0.1"
  "stage timeout 0.03 ms|--methods iterative --stage-timeout-ms 0.03"
  "local_moves=5 (not in the paper)|--methods iterative --param iterative.local_moves=5"
  "local_moves=5 + min-local-latency|--methods iterative --param iterative.local_moves=5 --param iterative.initial=min-local-latency"
  "pa-heft (for comparison)|--methods pa-heft"
)
args=()
for i in "${!configs[@]}"; do
  label="${configs[$i]%%|*}"
  read -r -a flags <<<"${configs[$i]#*|}"
  csv="$out/ablation_${platform}_$i.csv"
  "$bench" --models "$models" --platform "$platform" "${flags[@]}" --out "$csv" \
    >/dev/null 2>"$out/ablation_${platform}_$i.log"
  args+=(--config "$label=$csv")
done
"$python" "$tables" ablation "${args[@]}" --reference "$out/methods_$platform.csv" \
  | tee "$out/ablation_$platform.md"

section "Planning time of the iterative search on $platform"
"$bench" --models "$models" --platform "$platform" --planning-time --repeat 3 \
  --out "$out/planning_time_$platform.csv" 2>"$out/planning_time_$platform.log" \
  | tee "$out/planning_time_$platform.txt"

# Overhead benchmarks, each optional: a build without them still benchmarks the scheduler.
run_optional() {
  local name="$1" binary="$2"
  shift 2
  section "$name"
  if [[ ! -x "$binary" ]]; then
    echo "skipped: $binary was not built"
    return
  fi
  if ! "$binary" "$@" 2>&1 | tee "$out/$name.txt"; then
    echo "bench.sh: $name failed (see $out/$name.txt)" >&2
    status=1
  fi
}
status=0
run_optional cpu_overhead "$build/bench/cpu_overhead/psched_cpu_overhead_bench" \
  --model "$models/squeezenet_v1_1.onnx" --iterations 20
run_optional daemon_overhead "$build/bench/daemon_overhead/daemon_overhead" --iterations 100
coexec="$(find "$build/bench/coexec" -maxdepth 1 -type f -executable 2>/dev/null | sort | head -n 1 || true)"
run_optional coexec "${coexec:-$build/bench/coexec/<none>}"

section "Results"
echo "written to $out"
exit "$status"
