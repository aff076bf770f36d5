#!/usr/bin/env python3
"""Exploration behind the GBDT design choices of docs/predictors.md (not part of the build).

Held-out (grouped 5-fold by CNN, seeded) MAPE of pixel4 GPU convolution models on the
phone data, for a few ensemble sizes, with the target as psched-train uses it - log latency
over a fitted linear baseline in FLOPs and bytes - and as a raw log latency. Needs numpy
and XGBoost's Python package (Debian: python3-xgboost); psched-train itself is C++.

    bench/prediction/explore_gbdt.py [--data ../shared/data/mobile-ml-benchmark] [--device pixel4]
"""
import argparse
import ast
import csv
import math
import random

import numpy as np
import xgboost as xgb

KERNELS = {"convolution_2d": 0, "convolution_winograd_4x4_6x6": 1, "fully_connected": 2,
           "convolution_2d_grouped": 3, "depthwise_convolution": 4}
CONVS = ("CONV_2D", "DEPTHWISE_CONV_2D", "CONV_2D_GROUP")


def kernel_class(name):
    base = name.split("_linked_")[0].rsplit("_", 1)[0]
    return KERNELS.get(base, 8)


def conv_rows(path, device):
    x, y, groups, cost = [], [], [], []
    with open(path, newline="") as f:
        for r in csv.DictReader(f):
            if r["operation"] not in CONVS:
                continue
            d = ast.literal_eval(r["feature"])
            hin, cin, hout = float(d["Input_shape"]), float(d["Input_channel"]), float(d["Output_shape"])
            k, s, cout = float(d["Kernel"]), float(d["Stride"]), float(d["Filter"])
            g = float(d["Group"]) if d["Group"] not in ("-", "") else 1.0
            if r["operation"] == "DEPTHWISE_CONV_2D":
                g, cout = cin, cin * cout
            flops = 2 * hout * hout * cout * k * k * cin / g
            sizes = (hin * hin * cin, hout * hout * cout, cout * k * k * cin / g)
            kc = kernel_class(r[device + "|gpu|kernel"])
            slices = math.ceil(cout / 4)
            grid = (math.ceil(hout / 4) ** 2, 1, slices) if kc == 1 else (
                (slices, 1, 1) if kc == 2 else (hout, hout, slices))
            x.append([hin, hout, cin, cout, k, s, g, *sizes, flops, kc, *grid])
            y.append(float(r[device + "|gpu|float"]))
            groups.append(r["model"])
            cost.append((flops / 1e6, 4 * sum(sizes) / 1e6))
    return np.array(x), np.array(y), groups, np.array(cost)


def fit_baseline(cost, y):
    """Non-negative a * MFLOP + b * MB + c minimising relative error (subset enumeration)."""
    a = np.column_stack([cost[:, 0], cost[:, 1], np.ones(len(y))]) / y[:, None]
    best = None
    for mask in range(1, 8):
        idx = [i for i in range(3) if mask >> i & 1]
        sol, *_ = np.linalg.lstsq(a[:, idx], np.ones(len(y)), rcond=None)
        if (sol < 0).any():
            continue
        full = np.zeros(3)
        full[idx] = sol
        err = ((a @ full - 1) ** 2).sum()
        if best is None or err < best[0]:
            best = (err, full)
    return best[1]


def held_out_mape(x, y, groups, cost, rounds, depth, eta, residual, folds=5, seed=1):
    models = sorted(set(groups))
    random.Random(seed).shuffle(models)
    fold = {m: i % folds for i, m in enumerate(models)}
    pred = np.zeros(len(y))
    for k in range(folds):
        train = np.array([fold[g] != k for g in groups])
        c = fit_baseline(cost[train], y[train]) if residual else np.array([0.0, 0.0, 1.0])
        base = cost @ c[:2] + c[2]
        target = np.log(y) - np.log(base)
        params = {"max_depth": depth, "eta": eta, "objective": "reg:squarederror",
                  "subsample": 0.8, "colsample_bytree": 0.8, "min_child_weight": 2, "seed": 1,
                  "nthread": 1, "base_score": float(target[train].mean())}
        booster = xgb.train(params, xgb.DMatrix(x[train], label=target[train]), rounds)
        pred[~train] = np.exp(booster.predict(xgb.DMatrix(x[~train]))) * base[~train]
    return 100 * np.mean(np.abs(pred - y) / y)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data", default="../shared/data/mobile-ml-benchmark")
    p.add_argument("--device", default="pixel4")
    args = p.parse_args()
    x, y, groups, cost = conv_rows(args.data + "/tflite_cnn_ops_gpu.csv", args.device)
    print("| trees | depth | eta | residual target MAPE % | raw log target MAPE % |")
    print("| ---: | ---: | ---: | ---: | ---: |")
    for rounds, depth, eta in [(300, 6, 0.1), (100, 6, 0.1), (100, 5, 0.15), (150, 4, 0.15), (60, 6, 0.2)]:
        r = held_out_mape(x, y, groups, cost, rounds, depth, eta, True)
        raw = held_out_mape(x, y, groups, cost, rounds, depth, eta, False)
        print(f"| {rounds} | {depth} | {eta} | {r:.2f} | {raw:.2f} |")


if __name__ == "__main__":
    main()
