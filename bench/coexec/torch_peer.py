#!/usr/bin/python3
"""PyTorch peer for psched_coexec_bench: runs ONNX graphs node by node with
torch.nn.functional on synthetic weights and prints the median latency per model.

Output, one line per model: "<model> <median_ms>"; exit 2 when torch is missing.
Usage: torch_peer.py [--threads N] [--warmup N] [--runs N] MODEL.onnx...
"""
import argparse
import os
import sys
import time

try:
    import numpy as np
    import onnx
    from onnx import numpy_helper
    import torch
    import torch.nn.functional as F
except ImportError as e:  # the C++ bench reports the skip
    print(f"torch peer unavailable: {e}", file=sys.stderr)
    sys.exit(2)


def attrs(node):
    return {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}


def synthetic(init, rng):
    shape = tuple(init.dims)
    if init.data_type == onnx.TensorProto.INT64:
        return torch.from_numpy(numpy_helper.to_array(init).copy()) if init.raw_data else \
            torch.zeros(shape, dtype=torch.int64)
    if init.data_location != onnx.TensorProto.EXTERNAL and (init.raw_data or init.float_data):
        return torch.from_numpy(numpy_helper.to_array(init).astype(np.float32).copy())
    fan_in = int(np.prod(shape[1:])) if len(shape) > 1 else 1
    scale = 1.0 / np.sqrt(max(fan_in, 1))
    return torch.from_numpy(rng.uniform(-scale, scale, shape).astype(np.float32))


def pads_of(a, rank):
    p = a.get("pads", [0] * (2 * rank))
    return p[:rank], p[rank:]


def pool_pad(x, begin, end, value):
    if any(begin) or any(end):
        return F.pad(x, [begin[1], end[1], begin[0], end[0]], value=value)
    return x


def run_node(node, env):
    op, a = node.op_type, attrs(node)
    ins = [env[i] if i else None for i in node.input]
    x = ins[0] if ins else None
    if op in ("Identity", "Dropout"):
        return x
    if op == "Constant":
        return torch.from_numpy(numpy_helper.to_array(a["value"]).copy())
    if op == "Conv":
        begin, end = pads_of(a, 2)
        if begin != end:
            x, padding = F.pad(x, [begin[1], end[1], begin[0], end[0]]), 0
        else:
            padding = tuple(begin)
        return F.conv2d(x, ins[1], ins[2] if len(ins) > 2 else None, a.get("strides", [1, 1]),
                        padding, a.get("dilations", [1, 1]), a.get("group", 1))
    if op == "Relu":
        return F.relu(x)
    if op == "Clip":
        lo = ins[1].item() if len(ins) > 1 and ins[1] is not None else a.get("min", -3.4e38)
        hi = ins[2].item() if len(ins) > 2 and ins[2] is not None else a.get("max", 3.4e38)
        return torch.clamp(x, lo, hi)
    if op == "Sigmoid":
        return torch.sigmoid(x)
    if op in ("MaxPool", "AveragePool"):
        begin, end = pads_of(a, 2)
        k, s, ceil = a["kernel_shape"], a.get("strides", [1, 1]), bool(a.get("ceil_mode", 0))
        if op == "MaxPool":
            if begin == end:
                return F.max_pool2d(x, k, s, tuple(begin), ceil_mode=ceil)
            return F.max_pool2d(pool_pad(x, begin, end, float("-inf")), k, s, ceil_mode=ceil)
        include = bool(a.get("count_include_pad", 0))
        if begin == end:
            return F.avg_pool2d(x, k, s, tuple(begin), ceil_mode=ceil, count_include_pad=include)
        return F.avg_pool2d(pool_pad(x, begin, end, 0.0), k, s, ceil_mode=ceil)
    if op == "GlobalAveragePool":
        return F.adaptive_avg_pool2d(x, 1)
    if op == "Concat":
        return torch.cat(ins, dim=a["axis"])
    if op == "Add":
        return ins[0] + ins[1]
    if op == "Mul":
        return ins[0] * ins[1]
    if op == "Sub":
        return ins[0] - ins[1]
    if op == "Pad":
        p = ins[1].tolist() if len(ins) > 1 else a["pads"]
        r = len(p) // 2
        torch_pads = []
        for d in reversed(range(r)):
            torch_pads += [p[d], p[d + r]]
        value = ins[2].item() if len(ins) > 2 and ins[2] is not None else 0.0
        return F.pad(x, torch_pads, value=value)
    if op == "Resize":
        sizes = ins[3] if len(ins) > 3 and ins[3] is not None and ins[3].numel() else None
        mode = a.get("mode", b"nearest").decode()
        if sizes is not None:
            size = [int(v) for v in sizes.tolist()[2:]]
        else:
            size = [int(x.shape[2 + i] * ins[2][2 + i].item()) for i in range(2)]
        if mode == "nearest":
            return F.interpolate(x, size=size, mode="nearest")
        align = a.get("coordinate_transformation_mode", b"half_pixel") == b"align_corners"
        return F.interpolate(x, size=size, mode="bilinear", align_corners=align)
    if op in ("Reshape", "Flatten"):
        if op == "Flatten":
            return torch.flatten(x, a.get("axis", 1))
        return x.reshape([int(v) if v != 0 else x.shape[i] for i, v in enumerate(ins[1].tolist())])
    if op == "Gemm":
        w = ins[1].t() if a.get("transB", 0) else ins[1]
        y = x @ w
        return y + ins[2] if len(ins) > 2 and ins[2] is not None else y
    if op == "BatchNormalization":
        return F.batch_norm(x, ins[3], ins[4], ins[1], ins[2], False, 0.0, a.get("epsilon", 1e-5))
    if op == "Softmax":
        return F.softmax(x, dim=a.get("axis", -1))
    raise NotImplementedError(f"op {op} (node {node.name})")


def run_graph(graph, weights, x):
    env = dict(weights)
    env[graph.input[0].name] = x
    for node in graph.node:
        out = run_node(node, env)
        env[node.output[0]] = out
    return env[graph.output[0].name]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("models", nargs="+")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    rng = np.random.default_rng(0)
    for path in args.models:
        model = onnx.load(path, load_external_data=False)
        graph = model.graph
        weights = {i.name: synthetic(i, rng) for i in graph.initializer}
        dims = [d.dim_value or 1 for d in graph.input[0].type.tensor_type.shape.dim]
        x = torch.from_numpy(rng.uniform(0, 1, dims).astype(np.float32))
        times = []
        with torch.inference_mode():
            for i in range(args.warmup + args.runs):
                start = time.perf_counter()
                run_graph(graph, weights, x)
                if i >= args.warmup:
                    times.append((time.perf_counter() - start) * 1e3)
        name = os.path.splitext(os.path.basename(path))[0]
        print(f"{name} {float(np.median(times)):.3f}", flush=True)


if __name__ == "__main__":
    main()
