#!/usr/bin/env bash
# The proofs of docs/evaluation.md ("Exact reference: proofs"): the exact solvers on
# seeded random DAGs - brute force, branch and bound and the CBC program on small ones
# (all must agree), branch and bound and CBC on 20-task schedule-only DAGs of three
# densities and 12-task DAGs with partitionable tasks, every instance also solved by
# OR-Tools CP-SAT (cpsat_check.py, in a venv this script creates under OUT_DIR) from the
# exported task-graph files. Prints the summary tables.
#
# Usage: bench/psched_bench/exact_proof.sh BUILD_DIR OUT_DIR
# Environment: TIME_LIMIT_S (default 60, per solver and instance), SEEDS (default 10).
set -euo pipefail

if [[ $# -ne 2 ]]; then
  echo "usage: $0 BUILD_DIR OUT_DIR" >&2
  exit 2
fi
build="$(cd "$1" && pwd)"
out="$2"
root="$(cd "$(dirname "$0")/../.." && pwd)"
bench="$build/bench/psched_bench/exact_proof_bench"
limit="${TIME_LIMIT_S:-60}"
seeds="${SEEDS:-10}"
[[ -x "$bench" ]] || { echo "exact_proof.sh: $bench is missing; build exact_proof_bench first" >&2; exit 1; }
mkdir -p "$out"

run() {  # NAME ARGS...
  local name="$1"
  shift
  "$bench" --seeds "$seeds" --time-limit "$limit" --export "$out/$name" --out "$out/$name.csv" "$@" \
    2>"$out/$name.log"
}
run small_schedule_only --tasks 7 --formulations brute,bnb,mip
run small_partitionable --tasks 5 --partitionable 3 --max-units 3 --formulations brute,bnb,mip
run schedule_only_20 --tasks 20 --edge-probability 0.15,0.3,0.5 --formulations bnb,mip
run partitionable_12 --tasks 12 --partitionable 4 --max-units 4 --edge-probability 0.3 --formulations bnb,mip

venv="$out/venv"
if [[ ! -x "$venv/bin/python" ]]; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet ortools
fi
for set in small_schedule_only small_partitionable schedule_only_20 partitionable_12; do
  "$venv/bin/python" "$root/bench/psched_bench/cpsat_check.py" --time-limit "$limit" "$out/$set"/*.json \
    >"$out/$set.cpsat.jsonl"
done
/usr/bin/python3 "$root/bench/psched_bench/eval_tables.py" proofs \
  "$out"/{small_schedule_only,small_partitionable,schedule_only_20,partitionable_12}.csv
