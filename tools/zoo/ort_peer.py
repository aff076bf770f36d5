"""ONNX Runtime's side of run_zoo.py, run by a python that has onnxruntime (a venv: see
README.md beside this file). Reads one JSON request per line on stdin:
  {"file": M.onnx, "input": I.npy, "output": O.npy, "runs": N, "threads": T}
after one line {"version": onnxruntime's} on start, and answers each with one JSON line: {"ms": median of N runs, "rel_err": ||a-b||/||b||} or
{"error": "..."}. Never needed by the build or the tests.
"""

import json
import statistics
import sys
import time

import numpy as np
import onnxruntime as ort


def run(req):
    opts = ort.SessionOptions()
    if req.get("threads"):
        opts.intra_op_num_threads = int(req["threads"])
    session = ort.InferenceSession(req["file"], opts, providers=["CPUExecutionProvider"])
    x = np.load(req["input"]).astype(np.float32)
    feed = {session.get_inputs()[0].name: x}
    y = session.run(None, feed)[0]  # the first run also warms up
    times = []
    for _ in range(max(1, int(req.get("runs", 5)))):
        t = time.perf_counter()
        session.run(None, feed)
        times.append((time.perf_counter() - t) * 1e3)
    ref = np.load(req["output"]).astype(np.float32)
    answer = {"ms": statistics.median(times), "version": ort.__version__}
    if y.shape == ref.shape:
        answer["rel_err"] = float(np.linalg.norm(y - ref) / max(np.linalg.norm(ref), 1e-30))
    else:
        answer["rel_err_note"] = f"shape {list(y.shape)} != {list(ref.shape)}"
    return answer


def main():
    sys.stdout.write(json.dumps({"version": ort.__version__}) + "\n")
    sys.stdout.flush()
    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            answer = run(json.loads(line))
        except Exception as e:  # noqa: BLE001 - reported to the runner, which goes on
            answer = {"error": f"{type(e).__name__}: {e}".strip().splitlines()[0]}
        sys.stdout.write(json.dumps(answer) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
