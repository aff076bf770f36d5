#!/usr/bin/env python3
"""Turns psched-bench CSV files into the evaluation tables of docs/evaluation.md.

`platforms` prints, per method, the average and worst normalised makespan on each
platform (one psched-bench CSV per platform, normalised as psched-bench wrote it) beside
the paper's figures from paper-tables/simulation_full.csv.

`exact` summarises, per platform and exact method, how its search ended: stages proven
optimal, the sum of the stage gaps over the makespan (average and worst over the
models), the gap to the whole problem's lower bound, how often a whole-graph warm start
beat the staged solution, and the solver time.

`proofs` summarises exact_proof.sh: per instance set and solver, how many instances it
proved optimal, its solve time (median / max), its gap where it stopped early, and
whether every solver that proved an optimum found the same one (CP-SAT's results are read
from SET.cpsat.jsonl beside each SET.csv).

`ablation` compares search configurations that psched-bench ran separately: each
LABEL=FILE.csv[#METHOD] holds one configuration's rows (those of METHOD if given); the reference per model is the smallest
makespan over every file given (configurations and any `--reference` CSV), so the
configurations share one yardstick. Planning time is psched-bench's planning_ms (fresh
problem: predictions + search), averaged over the models.

Standard library only, so `make bench` needs nothing beyond the build.
"""
import argparse
import csv
import json
import os
import sys

LIST_NAMES = {
    "heft": "HEFT",
    "lookahead-heft": "Lookahead-HEFT",
    "peft": "PEFT",
    "ldcp": "LDCP",
    "ceft": "CEFT",
    "psls": "PSLS",
}


def paper_row(method):
    """The (approach, variant) of simulation_full.csv that `method` reproduces, or None."""
    fixed = {
        "exact": ("Joint-search", "Gurobi"),
        "single:gpu": ("Single-device", "GPU"),
        "single:cpu.l": ("Single-device", "CPU (L)"),
        "single:cpu.m": ("Single-device", "CPU (M)"),
        "partition-only": ("Partition-only", "Min-local-latency"),
        "exact-schedule-only": ("Schedule-only", "Gurobi"),
        "exact-expanded-local": ("Expanded-DAG (Min-local-latency)", "Gurobi"),
        "exact-expanded-equal": ("Expanded-DAG (Equal-size)", "Gurobi"),
        "pa-heft": ("Partition-aware heuristic", "HEFT"),
        "iterative": ("Iterative search", "HEFT"),
    }
    if method in fixed:
        return fixed[method]
    if method in LIST_NAMES:
        return ("Schedule-only", LIST_NAMES[method])
    prefix, _, inner = method.partition(":")
    approach = {
        "expanded-local": "Expanded-DAG (Min-local-latency)",
        "expanded-equal": "Expanded-DAG (Equal-size)",
        "iterative": "Iterative search",
    }.get(prefix)
    if approach is None or inner not in LIST_NAMES:
        return None
    return (approach, LIST_NAMES[inner])


REQUIRED = ("model", "platform", "method", "makespan_us", "planning_ms", "normalized", "ok", "error")


def read_rows(path):
    try:
        with open(path, newline="") as f:
            reader = csv.DictReader(f)
            rows = list(reader)
            columns = reader.fieldnames or []
    except OSError as e:
        sys.exit(f"eval_tables: cannot read {path}: {e.strerror}")
    missing = [c for c in REQUIRED if c not in columns]
    if missing:
        sys.exit(f"eval_tables: {path} is not a psched-bench CSV (no column {', '.join(missing)})")
    if not rows:
        sys.exit(f"eval_tables: {path} holds no rows")
    for r in rows:
        if r["ok"] != "true":
            sys.exit(f"eval_tables: {path}: {r['model']} / {r['method']} failed: {r['error']}")
    return rows


def summarize(values):
    return sum(values) / len(values), max(values)


def platforms(args):
    paper = {}
    with open(args.paper, newline="") as f:
        for r in csv.DictReader(f):
            paper[(r["approach"], r["variant"])] = r
    per_platform = {}
    methods = []
    for path in args.csv:
        rows = read_rows(path)
        platform = rows[0]["platform"]
        by_method = {}
        for r in rows:
            by_method.setdefault(r["method"], []).append(float(r["normalized"]))
            if r["method"] not in methods:
                methods.append(r["method"])
        per_platform[platform] = {m: summarize(v) for m, v in by_method.items()}
    names = list(per_platform)
    header = "| method | paper row | " + " | ".join(f"{p} ours | {p} paper" for p in names) + " |"
    print(header)
    print("|" + " --- |" * (2 + 2 * len(names)))
    for m in methods:
        row = paper_row(m)
        cells = [f"`{m}`", " / ".join(row) if row else "-"]
        for p in names:
            ours = per_platform[p].get(m)
            cells.append(f"{ours[0]:.3f} / {ours[1]:.3f}" if ours else "-")
            theirs = paper.get(row) if row else None
            # A data-backed platform (pixel4-measured) sits beside the paper's phone.
            phone = p[: -len("-measured")] if p.endswith("-measured") else p
            known = theirs is not None and (phone + "_avg") in theirs
            cells.append(f"{theirs[phone + '_avg']} / {theirs[phone + '_worst']}" if known else "-")
        print("| " + " | ".join(cells) + " |")


def exact(args):
    print("| platform | method | stages proven | stage gap avg / worst | bound gap avg / worst "
          "| warm start returned | solver s avg / max / total |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for path in args.csv:
        rows = read_rows(path)
        if "stages" not in rows[0]:
            sys.exit(f"eval_tables: {path} has no exact solver columns")
        by_method = {}
        for r in rows:
            if int(r["stages"]) > 0:
                by_method.setdefault(r["method"], []).append(r)
        for m, rs in by_method.items():
            stages = sum(int(r["stages"]) for r in rs)
            proven = sum(int(r["stages_proven"]) for r in rs)
            gap = [float(r["stage_gap"]) for r in rs]
            bound = [1 - float(r["lower_bound_us"]) / float(r["makespan_us"]) for r in rs]
            warm = sum(1 for r in rs if r["exact_source"] != "staged")
            secs = [float(r["planning_ms"]) / 1000 for r in rs]
            print(f"| {rs[0]['platform']} | `{m}` | {proven} / {stages} | {100 * sum(gap) / len(gap):.2f}% / "
                  f"{100 * max(gap):.2f}% | {100 * sum(bound) / len(bound):.2f}% / {100 * max(bound):.2f}% | "
                  f"{warm} of {len(rs)} | {sum(secs) / len(secs):.1f} / {max(secs):.1f} / {sum(secs):.0f} |")


def proofs(args):
    print("| instances | solver | proven | seconds median / max | worst gap of the unproven | agrees |")
    print("| --- | --- | --- | --- | --- | --- |")
    for path in args.csv:
        try:
            with open(path, newline="") as f:
                rows = list(csv.DictReader(f))
        except OSError as e:
            sys.exit(f"eval_tables: cannot read {path}: {e.strerror}")
        cpsat = os.path.splitext(path)[0] + ".cpsat.jsonl"
        if os.path.exists(cpsat):
            with open(cpsat) as f:
                for line in f:
                    r = json.loads(line)
                    name = os.path.splitext(os.path.basename(r["name"]))[0]
                    optimal = r["status"] == "OPTIMAL"
                    rows.append({"instance": name, "formulation": "cp-sat",
                                 "makespan_us": str(r["makespan"] if r["makespan"] is not None else "inf"),
                                 "lower_bound_us": str(r["bound"] if r["bound"] is not None else 0),
                                 "proven": "true" if optimal else "false", "seconds": str(r["seconds"])})
        optimum = {}
        for r in rows:
            if r["proven"] == "true":
                optimum.setdefault(r["instance"], set()).add(round(float(r["makespan_us"]), 6))
        disagree = {i for i, v in optimum.items() if len(v) > 1}
        label = os.path.splitext(os.path.basename(path))[0]
        for solver in dict.fromkeys(r["formulation"] for r in rows):
            rs = [r for r in rows if r["formulation"] == solver]
            proven = [r for r in rs if r["proven"] == "true"]
            secs = sorted(float(r["seconds"]) for r in rs)
            gaps = [1 - float(r["lower_bound_us"]) / float(r["makespan_us"]) for r in rs
                    if r["proven"] != "true" and float(r["makespan_us"]) > 0]
            mine = {r["instance"] for r in proven}
            agrees = "yes" if not (mine & disagree) else f"NO on {len(mine & disagree)}"
            print(f"| {label} ({len(rs)}) | {solver} | {len(proven)} / {len(rs)} | "
                  f"{secs[len(secs) // 2]:.2f} / {secs[-1]:.2f} | "
                  f"{(f'{100 * max(gaps):.2f}%' if gaps else '-')} | {agrees} |")


def ablation(args):
    configs = []
    for spec in args.config:
        label, sep, path = spec.rpartition("=")
        path, _, method = path.partition("#")
        if not sep or not label or not path:
            sys.exit(f"eval_tables: --config '{spec}' is not LABEL=FILE.csv[#METHOD]")
        rows = [r for r in read_rows(path) if not method or r["method"] == method]
        if not rows:
            sys.exit(f"eval_tables: {path} has no rows of method '{method}'")
        configs.append((label, rows))
    reference = {}
    for _, rows in configs:
        for r in rows:
            ms = float(r["makespan_us"])
            reference[r["model"]] = min(reference.get(r["model"], ms), ms)
    for path in args.reference or []:
        for r in read_rows(path):
            if r["model"] in reference:
                reference[r["model"]] = min(reference[r["model"]], float(r["makespan_us"]))
    print("| configuration | avg | worst | planning ms (avg) | planning ms (max) |")
    print("| --- | --- | --- | --- | --- |")
    for label, rows in configs:
        missing = set(reference) - {r["model"] for r in rows}
        if missing:
            sys.exit(f"eval_tables: configuration '{label}' lacks models {sorted(missing)}")
        norm = [float(r["makespan_us"]) / reference[r["model"]] for r in rows]
        plan = [float(r["planning_ms"]) for r in rows]
        avg, worst = summarize(norm)
        print(f"| {label} | {avg:.3f} | {worst:.3f} | {sum(plan) / len(plan):.1f} | {max(plan):.1f} |")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("platforms", help="methods x platforms beside the paper's simulation table")
    p.add_argument("csv", nargs="+", help="one psched-bench CSV per platform")
    p.add_argument("--paper", default=os.path.join(
        os.environ.get("PSCHED_SHARED_DIR", "/work/shared"), "paper-tables", "simulation_full.csv"))
    e = sub.add_parser("exact", help="how the exact solvers' searches ended, per platform")
    e.add_argument("csv", nargs="+", help="one psched-bench CSV per platform")
    pr = sub.add_parser("proofs", help="exact_proof.sh's results per instance set and solver")
    pr.add_argument("csv", nargs="+", help="exact_proof_bench CSV files")
    a = sub.add_parser("ablation", help="search configurations on one shared reference")
    a.add_argument("--config", action="append", required=True, metavar="LABEL=FILE.csv[#METHOD]")
    a.add_argument("--reference", action="append", metavar="FILE.csv",
                   help="further runs whose makespans count for the per-model reference")
    args = parser.parse_args()
    {"platforms": platforms, "exact": exact, "proofs": proofs, "ablation": ablation}[args.command](args)


if __name__ == "__main__":
    main()
