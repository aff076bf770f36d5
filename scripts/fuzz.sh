#!/usr/bin/env bash
# Runs every libFuzzer target of fuzz/ for SECONDS each, seeded from fuzz/seeds, the tests'
# data and ../shared's models, and prints executions and findings per target.
# Usage: scripts/fuzz.sh BUILD_DIR SECONDS [SEED] [RUNS]. SEED (default 1) fixes libFuzzer's
# random choices, so a run is repeatable; 0 lets libFuzzer pick. RUNS > 0 stops a target
# after that many executions instead (SECONDS still caps it; 0 = no cap). FUZZ_TARGETS
# (space-separated) runs only those targets; FUZZ_MAX_LEN (default 262144) caps the input
# size (the ONNX target runs ~20x faster on inputs of a few KB than on full-size models). A crash leaves its input as
# BUILD_DIR/fuzz-out/<target>/crash-*; the script then exits 1.
set -euo pipefail
build="$(cd "$1" && pwd)"
seconds="$2"
seed="${3:-1}"
runs_limit="${4:-0}"
targets="${FUZZ_TARGETS:-fuzz_onnx_import fuzz_npy fuzz_config fuzz_taskgraph_json fuzz_plan_json
  fuzz_plan_bundle
  fuzz_gbdt_model_file fuzz_measurements_csv fuzz_input_shapes}"
root="$(cd "$(dirname "$0")/.." && pwd)"
shared="${PSCHED_SHARED_DIR:-$root/../shared}"
out="$build/fuzz-out"
mkdir -p "$out"

seed_dirs() {  # target -> the folders holding its seeds
  case "$1" in
    fuzz_onnx_import) echo "$root/tests/daemon/data" "$root/tests/data/onnx" "$shared/models/graph-only" ;;
    fuzz_npy) echo "$root/tests/daemon/data" ;;
    fuzz_config) echo "$root/fuzz/seeds/config" ;;
    fuzz_taskgraph_json) echo "$root/bench/psched_bench/examples" ;;
    fuzz_plan_json) echo "$root/fuzz/seeds/plan_json" ;;
    fuzz_plan_bundle) echo "$root/fuzz/seeds/plan_bundle" ;;
    fuzz_gbdt_model_file) echo "$root/fuzz/seeds/gbdt_model_file" ;;
    fuzz_measurements_csv) echo "$root/predictor/gbdt/training/testdata" ;;
    fuzz_input_shapes) echo "$root/fuzz/seeds/input_shapes" ;;
  esac
}

failed=0
printf '%-22s %12s %10s %s\n' target executions exec/s result
for target in $targets; do
  work="$out/$target"
  corpus="$work/corpus"
  mkdir -p "$corpus"
  seeds=()
  for dir in $(seed_dirs "$target"); do [ -d "$dir" ] && seeds+=("$dir"); done
  log="$work/log.txt"
  set +e
  (cd "$work" && "$build/fuzz/$target" -max_total_time="$seconds" -runs="$((runs_limit > 0 ? runs_limit : -1))" \
      -seed="$seed" -max_len="${FUZZ_MAX_LEN:-262144}" \
      -timeout=10 -rss_limit_mb=4096 -print_final_stats=1 -artifact_prefix="$work/" \
      "$corpus" "${seeds[@]}") >"$log" 2>&1
  rc=$?
  set -e
  runs="$(grep -E '^stat::number_of_executed_units' "$log" | awk '{print $2}' || true)"
  rate="$(grep -E '^stat::average_exec_per_sec' "$log" | awk '{print $2}' || true)"
  if [ $rc -eq 0 ]; then result="no finding"; else
    artifact="$(ls "$work" | grep -E '^(crash|leak|timeout|oom|slow-unit)-' | head -1 || true)"
    result="FINDING (rc $rc): ${artifact:-no artifact} - see $log"
    failed=1
  fi
  printf '%-22s %12s %10s %s\n' "$target" "${runs:-?}" "${rate:-?}" "$result"
done
exit $failed
