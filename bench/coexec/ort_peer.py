"""ONNX Runtime peer of psched_coexec_bench, run as a co-process in the venv ort_venv.sh makes.

The bench drives it line by line on stdin, so ONNX Runtime's runs interleave round by round
with psched's configurations; every reply is one line on stdout.

  load NAME SRC DST  fill SRC's weightless initializers with seeded random weights, write the
                     complete model to DST (psched imports that very file, so both sides run
                     the same weights), open a CPU session per thread count (1 and 2), run
                     each once on an input of 0.5 and write its output to DST.<threads>.npy
                     (NCHW, float32).  Reply: "ok".
  run NAME THREADS   one timed run; reply: the latency in milliseconds.
  prun NAME          one timed run of a profiling one-thread session (made on first use; its
                     first run is a warm-up left out of the profile); reply as for run. The
                     bench issues it in the same rounds as psched's runs, so the profile sees
                     the same machine.
  pdump NAME CSV     ends that profile and writes per node configuration (the key of
                     per_op_key below, which the bench computes the same way for psched's
                     ops) the count of nodes and the summed median kernel time in
                     microseconds to CSV.  Reply: "ok".
Any failure replies "error <message>". One thread runs pinned to core 0, two on cores 0-1, as
psched's executor does. Sessions use ONNX Runtime's defaults otherwise (all graph
optimisations, spinning pool threads): what a user of ONNX Runtime gets.
"""
import json
import os
import sys
import time

import numpy as np
import onnx
import onnxruntime as ort
from onnx import numpy_helper

THREADS = (1, 2)


def fill_weights(model, seed):
    """Initializers without data get uniform weights: +-sqrt(6 / fan_in) for filters and
    matrices (He-uniform; every conv here feeds a ReLU), +-0.05 for vectors."""
    rng = np.random.default_rng(seed)
    for init in model.graph.initializer:
        external = init.data_location == onnx.TensorProto.EXTERNAL
        if not external and (init.raw_data or init.float_data or init.int64_data):
            continue
        if init.data_type != onnx.TensorProto.FLOAT:
            raise ValueError(f"initializer {init.name}: no data and not float")
        shape = tuple(init.dims)
        if len(shape) >= 2:
            bound = np.sqrt(6.0 / max(int(np.prod(shape[1:])), 1))
        else:
            bound = 0.05
        values = rng.uniform(-bound, bound, shape).astype(np.float32)
        init.CopyFrom(numpy_helper.from_array(values, init.name))


def per_op_key(op, x, w, y):
    """The configuration an op is compared by: convs by kernel, stride (input/output rows),
    groups ("dw" for depthwise), channels and output size; other ops by kind and output."""
    if op in ("Conv", "FusedConv") and w is not None and len(w) == 4:
        cin, cout, oh, ow = x[1], y[1], y[2], y[3]
        groups = cin // w[1]
        g = "dw" if groups == cin and groups > 1 else str(groups)
        return f"conv{w[2]}x{w[3]}/s{round(x[2] / oh)} g{g} {cin}>{cout} @{oh}x{ow}"
    if op in ("Gemm", "MatMul", "FusedGemm") and w is not None:
        return f"fc {x[-1]}>{y[-1]}"
    shape = "x".join(str(d) for d in y[1:])
    return f"{op.lower()} {shape}"


def pin(threads):
    os.sched_setaffinity(0, set(range(threads)))


class Peer:
    def __init__(self):
        self.models = {}
        self.paths = {}
        self.profiled = {}  # name -> profiling session

    def load(self, name, src, dst):
        model = onnx.load(src, load_external_data=False)
        fill_weights(model, seed=1)
        onnx.save(model, dst)
        inp = model.graph.input[0]
        shape = [d.dim_value for d in inp.type.tensor_type.shape.dim]
        feed = {inp.name: np.full(shape, 0.5, dtype=np.float32)}
        sessions = {}
        for threads in THREADS:
            pin(threads)
            options = ort.SessionOptions()
            options.intra_op_num_threads = threads
            options.inter_op_num_threads = 1
            session = ort.InferenceSession(dst, options, providers=["CPUExecutionProvider"])
            out = session.run(None, feed)[0]
            np.save(f"{dst}.{threads}.npy", np.ascontiguousarray(out, dtype=np.float32))
            sessions[threads] = session
        self.models[name] = (sessions, feed)
        self.paths[name] = dst
        return "ok"

    def prun(self, name):
        _, feed = self.models[name]
        pin(1)
        if name not in self.profiled:
            options = ort.SessionOptions()
            options.intra_op_num_threads = 1
            options.inter_op_num_threads = 1
            options.enable_profiling = True
            options.profile_file_prefix = self.paths[name] + ".profile"
            session = ort.InferenceSession(self.paths[name], options,
                                           providers=["CPUExecutionProvider"])
            session.run(None, feed)  # warm-up, left out of the profile
            self.profiled[name] = session
        start = time.perf_counter()
        self.profiled[name].run(None, feed)
        return f"{(time.perf_counter() - start) * 1e3:.4f}"

    def pdump(self, name, csv_path):
        trace = self.profiled.pop(name).end_profiling()
        with open(trace) as f:
            events = json.load(f)
        os.remove(trace)
        by_node = {}  # node -> (key, [us per run])
        for e in events:
            if e.get("cat") != "Node" or not e["name"].endswith("_kernel_time"):
                continue
            a = e["args"]
            shapes = [next(iter(s.values())) for s in a.get("input_type_shape", [])]
            out = [next(iter(s.values())) for s in a.get("output_type_shape", [])]
            key = per_op_key(a["op_name"], shapes[0] if shapes else None,
                             shapes[1] if len(shapes) > 1 else None, out[0] if out else [])
            by_node.setdefault(e["name"], (key, []))[1].append(float(e["dur"]))
        rows = {}
        for key, durations in by_node.values():
            durations = sorted(durations[1:])  # the first is the warm-up
            if not durations:
                continue
            count, us = rows.get(key, (0, 0.0))
            rows[key] = (count + 1, us + durations[len(durations) // 2])
        with open(csv_path, "w") as f:
            f.write("key,count,us\n")
            for key, (count, us) in sorted(rows.items()):
                f.write(f"{key},{count},{us:.2f}\n")
        return "ok"

    def run(self, name, threads):
        sessions, feed = self.models[name]
        threads = int(threads)
        pin(threads)
        start = time.perf_counter()
        sessions[threads].run(None, feed)
        return f"{(time.perf_counter() - start) * 1e3:.4f}"


def main():
    peer = Peer()
    for line in sys.stdin:
        words = line.split()
        if not words:
            continue
        try:
            if words[0] == "load" and len(words) == 4:
                reply = peer.load(*words[1:])
            elif words[0] == "prun" and len(words) == 2:
                reply = peer.prun(words[1])
            elif words[0] == "pdump" and len(words) == 3:
                reply = peer.pdump(*words[1:])
            elif words[0] == "run" and len(words) == 3:
                reply = peer.run(*words[1:])
            else:
                reply = f"error unknown command: {line.strip()}"
        except Exception as e:  # reported to the bench, which says which model failed
            reply = "error " + " ".join(f"{type(e).__name__}: {e}".split())
        print(reply, flush=True)


if __name__ == "__main__":
    main()
