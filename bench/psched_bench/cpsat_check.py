#!/usr/bin/env python3
"""Independent optimum of a psched task graph (docs/taskgraph-format.md) with OR-Tools CP-SAT.

A cross-check of psched's exact solvers, written from the format description alone: it
shares no code with them. Not needed by the build or the tests; bench/psched_bench/
exact_proof.sh creates a venv with `ortools` and runs it on the random proof suite.

Model (paper sec. 4.1): every task either runs whole on one device or is split along one
of its split axes into 2..K parts on distinct devices (K = max_splits or the number of
devices), a part of u units lasting cost[u - 1][device]; optional intervals with one
NoOverlap per device; full-barrier dependencies (every part of a successor starts after
every part of its predecessor ends, plus the edge's transfer cost when the two devices are
in different memory domains); minimise the makespan. Costs must be integers (microseconds)
and the alignment 1, so the model is exact.

Usage: cpsat_check.py FILE.json... [--time-limit S] [--workers N]
Prints one JSON object per file: name, status, makespan, bound, seconds.
"""
import argparse
import json
import sys
import time

from ortools.sat.python import cp_model

AXES = ("cout", "cin", "spatial")


def fail(path, why):
    raise SystemExit(f"cpsat_check: {path}: {why}")


def integer(path, where, v):
    if not isinstance(v, (int, float)) or v < 0 or v != int(v):
        fail(path, f"{where}: cost {v!r} is not a non-negative integer")
    return int(v)


def costs_row(path, where, row, names):
    if isinstance(row, dict):
        return [integer(path, f"{where}.{n}", row[n]) for n in names]
    if len(row) != len(names):
        fail(path, f"{where}: {len(row)} costs for {len(names)} devices")
    return [integer(path, f"{where}[{d}]", c) for d, c in enumerate(row)]


def solve(path, time_limit, workers):
    with open(path) as f:
        doc = json.load(f)
    if doc.get("alignment", 1) != 1:
        fail(path, "only alignment 1 is modelled")
    devices = [d if isinstance(d, str) else d["name"] for d in doc["devices"]]
    domains = [0 if isinstance(d, str) else d.get("memory_domain", 0) for d in doc["devices"]]
    D = len(devices)
    K = min(doc.get("max_splits", 0) or D, D)
    names = [t.get("name", f"t{i}") for i, t in enumerate(doc["tasks"])]
    index = {n: i for i, n in enumerate(names)}
    n = len(names)

    m = cp_model.CpModel()
    horizon = 0
    for t in doc["tasks"]:
        horizon += max(costs_row(path, "cost", t["cost"], devices))
        for table in t.get("splits", {}).values():
            horizon += max(max(costs_row(path, "split", r, devices)) for r in table)
    for e in doc.get("edges", []):
        if isinstance(e, dict):
            horizon += integer(path, "transfer_us", e.get("transfer_us", 0))

    parts = [[] for _ in range(n)]  # per task: (device, presence, start, end)
    completion = []
    for i, t in enumerate(doc["tasks"]):
        choices = []
        whole = costs_row(path, f"tasks[{i}].cost", t["cost"], devices)
        for d in range(D):
            p = m.NewBoolVar(f"w{i}_{d}")
            s = m.NewIntVar(0, horizon, f"s{i}_{d}")
            e = m.NewIntVar(0, horizon, f"e{i}_{d}")
            iv = m.NewOptionalIntervalVar(s, whole[d], e, p, f"iw{i}_{d}")
            parts[i].append((d, p, s, e, iv))
            choices.append(p)
        for axis, table in t.get("splits", {}).items():
            if axis not in AXES:
                fail(path, f"tasks[{i}]: unknown split axis {axis}")
            U = len(table)
            rows = [costs_row(path, f"tasks[{i}].splits.{axis}[{u}]", r, devices) for u, r in enumerate(table)]
            chosen = m.NewBoolVar(f"a{i}_{axis}")
            choices.append(chosen)
            units, present = [], []
            for d in range(D):
                u = m.NewIntVar(0, U, f"u{i}_{axis}_{d}")
                p = m.NewBoolVar(f"p{i}_{axis}_{d}")
                m.Add(u >= 1).OnlyEnforceIf(p)
                m.Add(u == 0).OnlyEnforceIf(p.Not())
                m.AddImplication(p, chosen)
                size = m.NewIntVar(0, max(r[d] for r in rows), f"z{i}_{axis}_{d}")
                m.AddElement(u, [0] + [r[d] for r in rows], size)
                s = m.NewIntVar(0, horizon, f"s{i}_{axis}_{d}")
                e = m.NewIntVar(0, horizon, f"e{i}_{axis}_{d}")
                iv = m.NewOptionalIntervalVar(s, size, e, p, f"i{i}_{axis}_{d}")
                parts[i].append((d, p, s, e, iv))
                units.append(u)
                present.append(p)
            m.Add(sum(units) == U).OnlyEnforceIf(chosen)
            m.Add(sum(present) >= 2).OnlyEnforceIf(chosen)
            m.Add(sum(present) <= K)
        m.AddExactlyOne(choices)
        c = m.NewIntVar(0, horizon, f"c{i}")
        for (_, p, _, e, _) in parts[i]:
            m.Add(c >= e).OnlyEnforceIf(p)
        completion.append(c)

    # One subtask per device per task is implied: the whole-task choice and each axis's
    # parts are exclusive, and an axis has at most one part per device.
    for d in range(D):
        m.AddNoOverlap([iv for i in range(n) for (dd, _, _, _, iv) in parts[i] if dd == d])

    for k, e in enumerate(doc.get("edges", [])):
        a, b = (e[0], e[1]) if isinstance(e, list) else (e["from"], e["to"])
        a = index[a] if isinstance(a, str) else a
        b = index[b] if isinstance(b, str) else b
        transfer = 0 if isinstance(e, list) else integer(path, f"edges[{k}].transfer_us", e.get("transfer_us", 0))
        for (d, p, s, _, _) in parts[b]:
            if transfer == 0 or len(set(domains)) == 1:
                m.Add(s >= completion[a]).OnlyEnforceIf(p)
                continue
            for (f, q, _, fe, _) in parts[a]:
                cost = transfer if domains[f] != domains[d] else 0
                m.Add(s >= fe + cost).OnlyEnforceIf([p, q])

    makespan = m.NewIntVar(0, horizon, "makespan")
    m.AddMaxEquality(makespan, completion)
    m.Minimize(makespan)
    solver = cp_model.CpSolver()
    solver.parameters.max_time_in_seconds = time_limit
    solver.parameters.num_workers = workers
    begin = time.monotonic()
    status = solver.Solve(m)
    seconds = time.monotonic() - begin
    found = status in (cp_model.OPTIMAL, cp_model.FEASIBLE)
    return {
        "name": path,
        "status": solver.StatusName(status),
        "makespan": solver.ObjectiveValue() if found else None,
        "bound": solver.BestObjectiveBound() if found else None,
        "seconds": round(seconds, 3),
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("files", nargs="+")
    ap.add_argument("--time-limit", type=float, default=60)
    ap.add_argument("--workers", type=int, default=2)
    args = ap.parse_args()
    for path in args.files:
        print(json.dumps(solve(path, args.time_limit, args.workers)), flush=True)


if __name__ == "__main__":
    sys.exit(main())
