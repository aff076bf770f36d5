#!/usr/bin/python3
"""Joins psched_coexec_bench --per-op-dir files: where one model's time goes, per op
configuration, psched's single-core plan against ONNX Runtime with one thread, with the
GFLOP/s each reaches on convolutions and fully-connected ops and the share of the core's
peak (FLOP per cycle x clock; the clock from /proc/cpuinfo unless --ghz). With --cluster, also
psched's 2-core cluster device: its time and its speedup over one core per configuration.

Usage: per_op_table.py [--peak-flop-per-cycle N] [--ghz F] [--top N] [--cluster MODEL.cluster.csv]
                       MODEL.psched.csv MODEL.ort.csv
Plain Python 3, no packages.
"""
import argparse
import csv
import re

CONV = re.compile(r"conv(\d+)x(\d+)/s\d+ g(\w+) (\d+)>(\d+) @(\d+)x(\d+)")
FC = re.compile(r"fc (\d+)>(\d+)")


def flops(key):
    """Multiply-adds x 2 of one op of this configuration; 0 when not a conv or fc."""
    m = CONV.fullmatch(key)
    if m:
        kh, kw, g, cin, cout, oh, ow = m.groups()
        cin, cout = int(cin), int(cout)
        inputs_per_output = 1 if g == "dw" else cin // int(g)
        return 2 * int(oh) * int(ow) * cout * inputs_per_output * int(kh) * int(kw)
    m = FC.fullmatch(key)
    return 2 * int(m.group(1)) * int(m.group(2)) if m else 0


def read(path):
    with open(path) as f:
        return {r["key"]: (int(r["count"]), float(r["us"])) for r in csv.DictReader(f)}


def cpu_ghz():
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("cpu MHz"):
                return float(line.split(":")[1]) / 1e3
    return 0.0


def cpu_flop_per_cycle():
    """FP32 FLOP per cycle of one core with two FMA ports: 64 with AVX-512, else 32 (AVX2)."""
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("flags"):
                return 64.0 if "avx512f" in line.split() else 32.0
    return 32.0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("psched")
    ap.add_argument("ort")
    ap.add_argument("--peak-flop-per-cycle", type=float, default=0.0,
                    help="FP32 FLOP per cycle of one core (default from /proc/cpuinfo: "
                         "64 with AVX-512, 32 with AVX2; two FMA ports)")
    ap.add_argument("--ghz", type=float, default=0.0)
    ap.add_argument("--top", type=int, default=25)
    ap.add_argument("--cluster", help="psched_coexec_bench's <model>.cluster.csv")
    args = ap.parse_args()
    ours, theirs = read(args.psched), read(args.ort)
    cluster = read(args.cluster) if args.cluster else {}
    if not args.peak_flop_per_cycle:
        args.peak_flop_per_cycle = cpu_flop_per_cycle()
    peak = args.peak_flop_per_cycle * (args.ghz or cpu_ghz())  # GFLOP/s
    rows = []
    for key in set(ours) | set(theirs):
        n, us = ours.get(key, (0, 0.0))
        n_ort, us_ort = theirs.get(key, (0, 0.0))
        rows.append((key, n, us, n_ort, us_ort))
    rows.sort(key=lambda r: -max(r[2], r[4]))
    print(f"core peak {peak:.1f} GFLOP/s ({args.peak_flop_per_cycle:g} FLOP/cycle)")
    print(f"{'op configuration':42} {'n':>3} {'psched_us':>10} {'ort_us':>10} {'ratio':>6} "
          f"{'psched_GF/s':>11} {'ort_GF/s':>9} {'%peak':>6} {'gap_us':>8}"
          + (f" {'2core_us':>9} {'speedup':>7}" if cluster else ""))
    for key, n, us, n_ort, us_ort in rows[:args.top]:
        f = flops(key)
        gf = f * n / us / 1e3 if us > 0 and f else 0.0
        gf_ort = f * n_ort / us_ort / 1e3 if us_ort > 0 and f else 0.0
        ratio = f"{us / us_ort:.2f}" if us > 0 and us_ort > 0 else "-"
        gap = us - us_ort if n and n_ort else 0.0
        line = (f"{key:42} {n:>3} {us:>10.1f} {us_ort:>10.1f} {ratio:>6} "
                f"{gf:>11.1f} {gf_ort:>9.1f} {100 * gf / peak if peak else 0:>6.1f} {gap:>8.1f}")
        if cluster:
            us_2 = cluster.get(key, (0, 0.0))[1]
            line += f" {us_2:>9.1f} {us / us_2 if us and us_2 else 0:>7.2f}"
        print(line)
    total, total_ort = sum(r[2] for r in rows), sum(r[4] for r in rows)
    matched = [r for r in rows if r[1] and r[3]]
    total_2 = sum(us for _, us in cluster.values())
    print(f"{'total (all ops)':42} {'':>3} {total:>10.1f} {total_ort:>10.1f} "
          f"{total / total_ort if total_ort else 0:>6.2f}"
          + (f" {'':>11} {'':>9} {'':>6} {'':>8} {total_2:>9.1f} {total / total_2:>7.2f}"
             if total_2 else ""))
    print(f"{'configurations on both sides':42} {len(matched):>3} "
          f"{sum(r[2] for r in matched):>10.1f} {sum(r[4] for r in matched):>10.1f}")


if __name__ == "__main__":
    main()
