#!/usr/bin/env bash
# The paper's Table 3 with psched's exact reference (docs/evaluation.md, "Normalised to the
# exact reference"): all 31 systems - single devices, partition-only, the six list
# schedulers alone and under both expansions, PA-HEFT, the iterative search with four
# inner schedulers, and the four exact solvers (joint, schedule-only, expanded-local,
# expanded-equal) - on the 18 graph-only models, one psched-bench run per platform,
# normalised per model to `exact`, then the tables beside the paper's.
#
# Usage: bench/psched_bench/exact_table.sh BUILD_DIR OUT_DIR [PLATFORM...]
# Environment: STAGE_LIMIT_S (default 2, seconds per stage for each exact solver),
# MODELS (space-separated model names of graph-only/, default all 18), PSCHED_SHARED_DIR
# (default ../shared). Runs under `nice`; hours on 2 shared cores for all 18 models.
set -euo pipefail

if [[ $# -lt 2 ]]; then
  echo "usage: $0 BUILD_DIR OUT_DIR [PLATFORM...]" >&2
  exit 2
fi
build="$(cd "$1" && pwd)"
out="$2"
shift 2
platforms=("$@")
[[ ${#platforms[@]} -gt 0 ]] || platforms=(oneplus11 motorola2022 pixel4 pixel5)
root="$(cd "$(dirname "$0")/../.." && pwd)"
shared="${PSCHED_SHARED_DIR:-$root/../shared}"
bench="$build/bench/psched_bench/psched-bench"
tables="$root/bench/psched_bench/eval_tables.py"
limit="${STAGE_LIMIT_S:-2}"
[[ -x "$bench" ]] || { echo "exact_table.sh: $bench is missing; build psched-bench first" >&2; exit 1; }
[[ -d "$shared/models/graph-only" ]] || { echo "exact_table.sh: no models in $shared/models/graph-only" >&2; exit 1; }
mkdir -p "$out"
models=("$shared/models/graph-only")
if [[ -n "${MODELS:-}" ]]; then
  models=()
  for m in $MODELS; do
    [[ -f "$shared/models/graph-only/$m.onnx" ]] || { echo "exact_table.sh: no model $m in $shared/models/graph-only" >&2; exit 1; }
    models+=("$shared/models/graph-only/$m.onnx")
  done
fi

lists="heft lookahead-heft peft ldcp ceft psls"
methods="single:gpu,single:cpu.l,single:cpu.m,partition-only,${lists// /,},exact-schedule-only"
for prefix in expanded-local expanded-equal; do
  for l in $lists; do methods+=",$prefix:$l"; done
  methods+=",exact-$prefix"
done
methods+=",pa-heft,iterative,iterative:peft,iterative:psls,iterative:lookahead-heft,exact"

for p in "${platforms[@]}"; do
  start=$(date +%s)
  nice -n 10 "$bench" --models "${models[@]}" --platform "$p" --methods "$methods" \
    --param "exact.stage_time_limit_s=$limit" --out "$out/table3_$p.csv" \
    >"$out/table3_$p.txt" 2>"$out/table3_$p.log"
  echo "$p: $(( $(date +%s) - start )) s" | tee -a "$out/elapsed.txt"
done
csvs=()
for p in "${platforms[@]}"; do csvs+=("$out/table3_$p.csv"); done
/usr/bin/python3 "$tables" platforms "${csvs[@]}" --paper "$shared/paper-tables/simulation_full.csv" \
  >"$out/table3_vs_paper.md"
/usr/bin/python3 "$tables" exact "${csvs[@]}" >"$out/exact_gaps.md"
cat "$out/table3_vs_paper.md" "$out/exact_gaps.md"
