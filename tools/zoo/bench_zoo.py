#!/usr/bin/python3
"""Times pschedd as it ships against ONNX Runtime on zoo models (`make bench-zoo`) and prints
one table: per model the daemon's default plan and its best plan among --schedulers (client-side
latency through gRPC), ONNX Runtime with 1 and 2 threads, and the ratios, as medians over
interleaved rounds with their spread (min-max of the round medians).

The private pschedd runs with the default configuration (discovered CPU clusters and a GPU
when OpenCL has one) and its first-start calibration: the first model registered starts it,
and nothing is timed until it is done. Each round times every configuration of a model one
after another (--runs inferences each, median); rounds repeat --rounds times, so a noisy
neighbour lands on all of them alike. Reuses run_zoo.py's daemon and ONNX Runtime peer.

  bench_zoo.py ZOO_DIR|MANIFEST --ort-venv DIR [--set bench] [--models a,b] [--opset 17]
               [--rounds 5] [--runs 5] [--schedulers ,single:cpu] [--build DIR] [--json OUT]
"""

import argparse
import json
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import run_zoo  # noqa: E402
from zoo_sets import SETS  # noqa: E402


def spread(values):
    return (min(values), max(values)) if values else (None, None)


def fmt(v, digits=2):
    return "-" if v is None else f"{v:.{digits}f}"


def wait_for_calibration(client, timeout_s):
    """Waits while the first-start calibration runs; its final state."""
    deadline = time.monotonic() + timeout_s
    state = client.status().calibration
    while time.monotonic() < deadline and (
            state.startswith(("running", "starting", "waiting")) or not state):
        time.sleep(0.5)
        state = client.status().calibration
    return state


def time_psched(client, model, feed, scheduler, runs):
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        client.infer(model, feed, scheduler=scheduler)
        times.append((time.perf_counter() - t) * 1e3)
    return statistics.median(times)


def bench_model(client, entry, folder, args, ort1, ort2):
    import numpy as np

    path = os.path.join(folder, entry["file"])
    inp = os.path.join(folder, entry["input_file"])
    out = os.path.join(folder, entry["output_file"])
    model = client.add_model(path)
    feed = {model.inputs[0].name: np.load(inp).astype(np.float32)}
    schedulers = args.schedulers
    # Plan (and warm) each configuration before the rounds: planning is not what is timed.
    for s in schedulers:
        client.plan(model, s)
        client.infer(model, feed, scheduler=s)
    rounds = {s or "default": [] for s in schedulers}
    rounds["ort1"], rounds["ort2"] = [], []
    for _ in range(args.rounds):
        for s in schedulers:
            rounds[s or "default"].append(time_psched(client, model, feed, s, args.runs))
        for name, ort in (("ort1", ort1), ("ort2", ort2)):
            answer = ort.run(path, inp, out, args.runs)
            if "ms" in answer:
                rounds[name].append(answer["ms"])
    row = {"model": f"{entry['name']}.opset{entry.get('opset')}"}
    for name, values in rounds.items():
        row[name] = statistics.median(values) if values else None
        row[name + "_spread"] = spread(values)
    psched = {s or "default": row[s or "default"] for s in schedulers}
    row["best_plan"] = min(psched, key=lambda k: psched[k])
    row["best"] = psched[row["best_plan"]]
    row["default_plan"] = client.plan(model, "").scheduler
    return row


def print_table(rows, out=sys.stdout):
    cols = ["model", "default ms", "(spread)", "best ms", "best plan", "ORT 1t ms", "ORT 2t ms",
            "default/ORT2", "best/ORT2", "best/ORT1"]
    table = []
    for r in rows:
        lo, hi = r["default_spread"]
        ratio = lambda a, b: fmt(a / b) if a is not None and b else "-"  # noqa: E731
        table.append([r["model"], fmt(r["default"]), f"{fmt(lo)}-{fmt(hi)}", fmt(r["best"]),
                      r["best_plan"], fmt(r["ort1"]), fmt(r["ort2"]), ratio(r["default"], r["ort2"]),
                      ratio(r["best"], r["ort2"]), ratio(r["best"], r["ort1"])])
    widths = [max(len(c), *(len(t[i]) for t in table)) if table else len(c)
              for i, c in enumerate(cols)]
    print("  ".join(c.ljust(w) for c, w in zip(cols, widths)), file=out)
    for t in table:
        print("  ".join(c.ljust(w) for c, w in zip(t, widths)), file=out)
    ratios = [r["default"] / r["ort2"] for r in rows if r["default"] and r["ort2"]]
    if ratios:
        print(f"\ndefault/ORT2: median {statistics.median(ratios):.2f}, "
              f"min {min(ratios):.2f}, max {max(ratios):.2f} over {len(ratios)} models", file=out)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("zoo", help="the folder export_zoo.py wrote, or its manifest.json")
    p.add_argument("--build", default=os.path.join(run_zoo.ROOT, "build"))
    p.add_argument("--set", choices=sorted(SETS), default="bench")
    p.add_argument("--models", help="comma-separated model names (default: the set's)")
    p.add_argument("--opset", type=int, default=17)
    p.add_argument("--rounds", type=int, default=5, help="interleaved rounds (default 5)")
    p.add_argument("--runs", type=int, default=5, help="inferences per configuration and round")
    p.add_argument("--schedulers", default=",single:cpu",
                   help="comma-separated schedulers; empty is the daemon's default (default: "
                        "',single:cpu')")
    p.add_argument("--calibration-timeout", type=float, default=300)
    p.add_argument("--ort-python", help="a python with onnxruntime")
    p.add_argument("--ort-venv", help="a venv with onnxruntime (made from PyPI when missing)")
    p.add_argument("--json", help="write the rows as JSON here")
    args = p.parse_args(argv)
    args.schedulers = args.schedulers.split(",")
    args.no_ort = False

    sys.path.insert(0, os.path.join(args.build, "client", "python"))
    import psched

    models = set(args.models.split(",")) if args.models else set(SETS[args.set])
    folder, entries = run_zoo.load_entries(args.zoo, models, {args.opset})
    entries = [e for e in entries if "file" in e]
    if not entries:
        print("bench_zoo: no exported models selected", file=sys.stderr)
        return 2
    ort_python = run_zoo.find_ort(args)
    if ort_python is False:
        print("bench_zoo: ONNX Runtime is needed (--ort-venv DIR)", file=sys.stderr)
        return 2
    ort1, ort2 = run_zoo.OrtRunner(ort_python, 1), run_zoo.OrtRunner(ort_python, 2)
    daemon = run_zoo.Daemon(os.path.join(args.build, "daemon", "pschedd"),
                            "max_model_bytes = 2147483647\n", auto_calibrate=True)
    rows = []
    try:
        status = daemon.start(psched.Client)
        print(f"pschedd {status.version}: devices {', '.join(d.name for d in status.devices)}; "
              f"ONNX Runtime {ort1.version}; {len(entries)} models, {args.rounds} rounds of "
              f"{args.runs} runs", file=sys.stderr, flush=True)
        with psched.Client(daemon.socket, timeout=900) as client:
            first = entries[0]
            client.add_model(os.path.join(folder, first["file"]))
            state = wait_for_calibration(client, args.calibration_timeout)
            print(f"first-start calibration: {state}", file=sys.stderr, flush=True)
            for i, entry in enumerate(entries, 1):
                t = time.monotonic()
                try:
                    rows.append(bench_model(client, entry, folder, args, ort1, ort2))
                except psched.PschedError as e:
                    print(f"[{i}/{len(entries)}] {entry['name']}: {e}", file=sys.stderr)
                    continue
                r = rows[-1]
                print(f"[{i}/{len(entries)}] {r['model']}: default {fmt(r['default'])} ms, "
                      f"ORT2 {fmt(r['ort2'])} ms ({time.monotonic() - t:.0f}s)",
                      file=sys.stderr, flush=True)
    finally:
        ort1.close()
        ort2.close()
        daemon.cleanup()
    print()
    print_table(rows)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)
            f.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
