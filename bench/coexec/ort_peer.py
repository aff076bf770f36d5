"""ONNX Runtime peer of psched_coexec_bench, run as a co-process in the venv ort_venv.sh makes.

The bench drives it line by line on stdin, so ONNX Runtime's runs interleave round by round
with psched's configurations; every reply is one line on stdout.

  load NAME SRC DST  fill SRC's weightless initializers with seeded random weights, write the
                     complete model to DST (psched imports that very file, so both sides run
                     the same weights), open a CPU session per thread count (1 and 2), run
                     each once on an input of 0.5 and write its output to DST.<threads>.npy
                     (NCHW, float32).  Reply: "ok".
  run NAME THREADS   one timed run; reply: the latency in milliseconds.
Any failure replies "error <message>". One thread runs pinned to core 0, two on cores 0-1, as
psched's executor does. Sessions use ONNX Runtime's defaults otherwise (all graph
optimisations, spinning pool threads): what a user of ONNX Runtime gets.
"""
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


def pin(threads):
    os.sched_setaffinity(0, set(range(threads)))


class Peer:
    def __init__(self):
        self.models = {}

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
            elif words[0] == "run" and len(words) == 3:
                reply = peer.run(*words[1:])
            else:
                reply = f"error unknown command: {line.strip()}"
        except Exception as e:  # reported to the bench, which says which model failed
            reply = "error " + " ".join(f"{type(e).__name__}: {e}".split())
        print(reply, flush=True)


if __name__ == "__main__":
    main()
