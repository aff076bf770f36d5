#!/usr/bin/python3
"""Runs each model of a zoo manifest (export_zoo.py) through pschedd and prints one table:
ONNX nodes, whether pschedd imported it (or the first line of its refusal), the relative L2
error of pschedd's output against PyTorch's (||a-b||/||b||), planning ms, the devices the
plan uses, the median inference latency, and ONNX Runtime's when one is available.

Starts a private pschedd (BUILD/daemon/pschedd on a temporary socket and state dir, with
cpu.0 and a GPU on PoCL's OpenCL device as in scripts/demo.sh, cpu.0 + cpu.1 when OpenCL is
missing) unless --socket names a running one. A refusal is one row of the table; a daemon that
dies on a model is reported on that row and started again.

  run_zoo.py ZOO_DIR|MANIFEST [--socket S] [--build DIR] [--models a,b] [--opsets 13]
             [--runs N] [--scheduler NAME] [--ort-python PY | --ort-venv DIR] [--json OUT]
"""

import argparse
import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def first_line(text):
    lines = [l for l in str(text).strip().splitlines() if l.strip()]
    return lines[0] if lines else "(no message)"


# ---------------------------------------------------------------------------------------------
# A private pschedd.


class Daemon:
    """pschedd on a socket in a temporary folder; start() waits until it answers."""

    def __init__(self, binary, config, log_level="warn", auto_calibrate=False):
        self.binary = binary
        self.auto_calibrate = auto_calibrate
        self.work = tempfile.mkdtemp(prefix="psched-zoo.")
        self.socket = os.path.join(self.work, "pschedd.sock")
        self.config_text = config
        self.log_level = log_level
        self.proc = None
        self.log_path = os.path.join(self.work, "pschedd.log")

    def start(self, client_factory, wait_s=60):
        config = os.path.join(self.work, "pschedd.toml")
        with open(config, "w") as f:
            f.write(self.config_text)
        log = open(self.log_path, "ab")
        self.proc = subprocess.Popen(
            # run_zoo's table is about import and numerics: no background calibration
            # competing (bench_zoo.py measures the daemon as it ships, calibration included).
            [self.binary, "--config", config, "--socket", self.socket, "--state-dir",
             os.path.join(self.work, "state"), "--log-level", self.log_level]
            + ([] if self.auto_calibrate else ["--no-auto-calibrate"]),
            stdout=log, stderr=subprocess.STDOUT)
        log.close()
        deadline = time.monotonic() + wait_s
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"pschedd exited during start-up ({self.exit_reason()}): "
                                   f"{self.log_since(0)}")
            try:
                with client_factory(self.socket, timeout=2) as c:
                    return c.status()
            except Exception:  # noqa: BLE001 - not serving yet
                time.sleep(0.1)
        raise RuntimeError(f"pschedd did not answer on {self.socket} in {wait_s}s")

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def log_size(self):
        try:
            return os.path.getsize(self.log_path)
        except OSError:
            return 0

    def log_since(self, offset, n=2):
        """The last n lines the daemon logged after offset."""
        try:
            with open(self.log_path, "rb") as f:
                f.seek(offset)
                lines = f.read().decode(errors="replace").strip().splitlines()
        except OSError:
            return ""
        return " | ".join(l.strip() for l in lines[-n:])

    def exit_reason(self):
        code = self.proc.returncode
        if code is not None and code < 0:
            try:
                return f"killed by {signal.Signals(-code).name}"
            except ValueError:
                return f"killed by signal {-code}"
        return f"exited with status {code}"

    def stop(self):
        if self.alive():
            self.proc.terminate()
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None

    def cleanup(self, keep=False):
        self.stop()
        if keep:
            print(f"kept {self.work}", file=sys.stderr)
        else:
            shutil.rmtree(self.work, ignore_errors=True)


def devices_config(second):
    """cpu.0 on core 0 and a second device (pschedd.toml), uploads up to 2 GiB - 1."""
    text = "max_model_bytes = 2147483647\nlog_level = \"warn\"\n\n"
    text += '[[devices]]\nname = "cpu.0"\nkind = "cpu"\ncores = [0]\n\n'
    if second == "gpu":
        text += '[[devices]]\nname = "gpu"\nkind = "gpu"\nopencl_device = "pthread"\ncores = [1]\n'
    else:
        text += '[[devices]]\nname = "cpu.1"\nkind = "cpu"\ncores = [1]\n'
    return text


# ---------------------------------------------------------------------------------------------
# ONNX Runtime, optional: in this python when it has onnxruntime, else in a peer process.


class OrtRunner:
    def __init__(self, python, threads):
        self.threads = threads
        self.local = None
        self.proc = None
        self.version = None
        if python is None:
            sys.path.insert(0, HERE)
            import ort_peer  # noqa: E402 - only when onnxruntime imports here

            self.local = ort_peer
            self.version = ort_peer.ort.__version__
        else:
            self.proc = subprocess.Popen([python, os.path.join(HERE, "ort_peer.py")],
                                         stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                         text=True)
            hello = self.proc.stdout.readline()
            if not hello:
                raise RuntimeError(f"{python} could not start ort_peer.py "
                                   f"(status {self.proc.wait()})")
            self.version = json.loads(hello)["version"]

    def run(self, file, inp, out, runs):
        req = {"file": file, "input": inp, "output": out, "runs": runs, "threads": self.threads}
        if self.local is not None:
            try:
                return self.local.run(req)
            except Exception as e:  # noqa: BLE001
                return {"error": first_line(f"{type(e).__name__}: {e}")}
        if self.proc.poll() is not None:
            return {"error": f"ONNX Runtime peer exited ({self.proc.returncode})"}
        self.proc.stdin.write(json.dumps(req) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            return {"error": f"ONNX Runtime peer exited ({self.proc.wait()})"}
        answer = json.loads(line)
        self.version = answer.get("version", self.version)
        return answer

    def close(self):
        if self.proc is not None:
            self.proc.stdin.close()
            self.proc.wait()


def find_ort(args):
    """(python to run ort_peer.py in, or None for this one) or False when there is none."""
    if args.no_ort:
        return False
    if args.ort_python:
        return args.ort_python
    if args.ort_venv:
        venv_py = os.path.join(args.ort_venv, "bin", "python")
        try:
            subprocess.run(["sh", os.path.join(ROOT, "bench", "coexec", "ort_venv.sh"),
                            args.ort_venv], check=True, stdout=subprocess.DEVNULL)
        except (OSError, subprocess.CalledProcessError) as e:
            print(f"run_zoo: no ONNX Runtime venv at {args.ort_venv}: {e}", file=sys.stderr)
            return False
        return venv_py
    try:
        import onnxruntime  # noqa: F401
        return None
    except ImportError:
        return False


# ---------------------------------------------------------------------------------------------


def load_entries(path, models, opsets):
    manifest_path = os.path.join(path, "manifest.json") if os.path.isdir(path) else path
    with open(manifest_path) as f:
        manifest = json.load(f)
    folder = os.path.dirname(os.path.abspath(manifest_path))
    entries = manifest["models"]
    if models:
        entries = [e for e in entries if e["name"] in models]
    if opsets:
        entries = [e for e in entries if e.get("opset") in opsets]
    return folder, entries


def rel_l2(a, b):
    import numpy as np

    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    return float(np.linalg.norm(a - b) / max(float(np.linalg.norm(b)), 1e-30))


def run_one(client_factory, socket, entry, folder, args, ort, preexisting):
    """One row: a dict of what happened to this manifest entry."""
    row = {"name": entry["name"], "opset": entry.get("opset"), "nodes": entry.get("op_count"),
           "file": entry.get("file")}
    if entry.get("status") != "ok":
        row["imported"] = f"not exported: {first_line(entry.get('error', entry.get('status')))}"
        row["status"] = "not_exported"
        return row
    import psched

    try:
        run_psched(client_factory, socket, entry, folder, args, preexisting, row)
    except psched.UnavailableError as e:  # the daemon died on this model (main restarts it)
        row.update(status="daemon_died", imported=first_line(str(e)))
    finally:
        # ONNX Runtime runs every exported file, refused or not: a reference for both the
        # export and the latency.
        if ort is not None and args.ort_runs > 0:
            answer = ort.run(os.path.join(folder, entry["file"]),
                             os.path.join(folder, entry["input_file"]),
                             os.path.join(folder, entry["output_file"]), args.ort_runs)
            if "error" in answer:
                row["ort_error"] = answer["error"]
            else:
                row["ort_ms"] = round(answer["ms"], 3)
                if "rel_err" in answer:
                    row["ort_rel_err"] = answer["rel_err"]
    return row


def run_psched(client_factory, socket, entry, folder, args, preexisting, row):
    """Registers, plans and runs one file; fills row."""
    import numpy as np
    import psched

    path = os.path.join(folder, entry["file"])
    x = np.load(os.path.join(folder, entry["input_file"])).astype(np.float32)
    ref = np.load(os.path.join(folder, entry["output_file"]))
    with client_factory(socket, timeout=args.timeout) as client:
        kwargs = {"name": f"{entry['name']}.opset{entry.get('opset')}"}
        if entry.get("dynamic_batch"):
            kwargs["input_shapes"] = {entry["input"]["name"]: list(x.shape)}
        t = time.monotonic()
        try:
            try:
                model = client.add_model(path, **kwargs)
            except TypeError:  # an older client without input_shapes
                kwargs.pop("input_shapes", None)
                model = client.add_model(path, **kwargs)
        except psched.PschedError as e:
            if isinstance(e, psched.UnavailableError):
                raise
            row.update(status="refused", imported=first_line(str(e)))
            return
        row["import_s"] = round(time.monotonic() - t, 3)
        row.update(status="imported", imported="yes", ops=int(model.ops))
        added = model.id not in preexisting
        try:
            plan = client.plan(model, args.scheduler, refresh=args.refresh_plans)
            row["plan_ms"] = round(plan.planning_ms, 3)
            row["plan_cached"] = bool(plan.cached)
            row["predicted_ms"] = round(plan.makespan_us / 1e3, 3)
            row["devices"] = "+".join(sorted({s.device for s in plan.subtasks})) or "-"
            row["subtasks"] = len(plan.subtasks)
            feed = {model.inputs[0].name: x} if len(model.inputs) == 1 else x
            outputs = client.infer(model, feed, scheduler=args.scheduler)  # first run: compiles
            row["first_ms"] = round(outputs.response.latency_us / 1e3, 3)
            y = next(iter(outputs.values()))
            if list(y.shape) != list(ref.shape):
                row["rel_err_note"] = f"output shape {list(y.shape)} != {list(ref.shape)}"
                if y.size == ref.size:
                    row["rel_err"] = rel_l2(y.reshape(ref.shape), ref)
            else:
                row["rel_err"] = rel_l2(y, ref)
            latencies = []
            for _ in range(args.runs):
                outputs = client.infer(model, feed, scheduler=args.scheduler)
                latencies.append(outputs.response.latency_us / 1e3)
            if latencies:
                row["infer_ms"] = round(statistics.median(latencies), 3)
            row["status"] = "ran"
        except psched.PschedError as e:
            if isinstance(e, psched.UnavailableError):
                raise
            row["run_error"] = first_line(str(e))
            row["status"] = "run_failed"
        finally:
            if added and not args.keep_models:
                try:
                    client.remove_model(model)
                except psched.PschedError:
                    pass


def fmt_err(v):
    return "-" if v is None else f"{v:.1e}"


def fmt_ms(v):
    if v is None:
        return "-"
    return f"{v:.1f}" if v >= 10 else f"{v:.2f}"


def print_table(rows, with_ort, out=sys.stdout):
    cols = ["model", "nodes", "ops", "imported", "rel err", "plan ms", "devices", "infer ms"]
    if with_ort:
        cols += ["ORT ms", "ORT err"]
    table = []
    for r in rows:
        imported = r.get("imported", "-")
        if r.get("run_error"):
            imported = "yes; run: " + r["run_error"]
        if len(imported) > 70:
            imported = imported[:67] + "..."
        line = [f"{r['name']}.opset{r['opset']}", str(r.get("nodes") or "-"),
                str(r.get("ops", "-")), imported, fmt_err(r.get("rel_err")),
                fmt_ms(r.get("plan_ms")), r.get("devices", "-"), fmt_ms(r.get("infer_ms"))]
        if with_ort:
            ort_ms = fmt_ms(r.get("ort_ms")) if "ort_error" not in r else "error"
            line += [ort_ms, fmt_err(r.get("ort_rel_err"))]
        table.append(line)
    widths = [max(len(c), *(len(t[i]) for t in table)) if table else len(c)
              for i, c in enumerate(cols)]
    numeric = {1, 2, 4, 5, 7, 8, 9}
    def render(cells):
        return "  ".join(c.rjust(w) if i in numeric else c.ljust(w)
                         for i, (c, w) in enumerate(zip(cells, widths))).rstrip()
    print(render(cols), file=out)
    print("  ".join("-" * w for w in widths), file=out)
    for t in table:
        print(render(t), file=out)


def summary(rows, tolerance):
    total = len(rows)
    exported = [r for r in rows if r["status"] != "not_exported"]
    imported = [r for r in exported if r["status"] in ("imported", "ran", "run_failed")]
    ran = [r for r in rows if r["status"] == "ran"]
    close = [r for r in ran if r.get("rel_err") is not None and r["rel_err"] <= tolerance]
    lines = [f"{total} files: {len(exported)} exported, {len(imported)} imported, {len(ran)} ran, "
             f"{len(close)} within rel err {tolerance:g} of PyTorch"]
    bad = [r for r in ran if r.get("rel_err") is None or r["rel_err"] > tolerance]
    if bad:
        lines.append("over the tolerance: " + ", ".join(
            f"{r['name']}.opset{r['opset']} ({fmt_err(r.get('rel_err'))})" for r in bad))
    refused = [r for r in exported if r["status"] == "refused"]
    if refused:
        by_op = {}
        for r in refused:
            m = re.search(r"unsupported operator '([^']+)'", r["imported"])
            key = f"unsupported operator {m.group(1)}" if m else r["imported"]
            by_op.setdefault(key, []).append(f"{r['name']}.opset{r['opset']}")
        lines.append(f"refused at import ({len(refused)}):")
        for key, names in sorted(by_op.items(), key=lambda kv: (-len(kv[1]), kv[0])):
            lines.append(f"  {len(names):3d}  {key}: {', '.join(names)}")
    failed = [r for r in rows if r["status"] in ("run_failed", "daemon_died")]
    if failed:
        lines.append(f"failed after the upload ({len(failed)}):")
    for r in failed:
        lines.append(f"  {r['name']}.opset{r['opset']}: {r.get('run_error') or r.get('imported')}")
    return "\n".join(lines)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("zoo", help="the folder export_zoo.py wrote, or its manifest.json")
    p.add_argument("--socket", help="a running pschedd's socket (default: start one)")
    p.add_argument("--build", default=os.path.join(ROOT, "build"),
                   help="build tree with daemon/pschedd and client/python (default: build)")
    p.add_argument("--config", help="pschedd.toml for the private daemon (default: cpu.0 + gpu "
                   "on PoCL, or cpu.0 + cpu.1 without OpenCL)")
    p.add_argument("--models", help="comma-separated model names (default: all)")
    p.add_argument("--set", choices=["fast", "transformers", "bench", "all"],
                   help="only the manifest's models of this set (export_zoo.py --set)")
    p.add_argument("--opsets", help="comma-separated opsets (default: all)")
    p.add_argument("--runs", type=int, default=5, help="timed inferences per model (default 5)")
    p.add_argument("--scheduler", default="", help="scheduler (default: the daemon's)")
    p.add_argument("--refresh-plans", action="store_true", help="replan even when cached")
    p.add_argument("--timeout", type=float, default=900, help="seconds per call (default 900)")
    p.add_argument("--tolerance", type=float, default=1e-3,
                   help="rel err counted as matching PyTorch in the summary (default 1e-3)")
    p.add_argument("--ort-python", help="a python with onnxruntime to time ONNX Runtime in")
    p.add_argument("--ort-venv", help="a venv with onnxruntime (made from PyPI when missing)")
    p.add_argument("--ort-threads", type=int, default=0,
                   help="ONNX Runtime intra-op threads (default: its own choice)")
    p.add_argument("--ort-runs", type=int, default=None, help="timed ORT runs (default --runs)")
    p.add_argument("--no-ort", action="store_true", help="do not time ONNX Runtime")
    p.add_argument("--keep-models", action="store_true",
                   help="leave the models registered (default: remove those this run added)")
    p.add_argument("--keep-daemon-dir", action="store_true",
                   help="keep the private daemon's folder (log, state)")
    p.add_argument("--json", help="write the rows as JSON here")
    p.add_argument("--check", action="store_true",
                   help="exit 1 unless every exported file imports, runs and is within "
                        "--tolerance of PyTorch (make test's zoo_fast_test)")
    args = p.parse_args(argv)
    if args.ort_runs is None:
        args.ort_runs = max(1, args.runs)

    pkg = os.path.join(args.build, "client", "python")
    if os.path.isdir(os.path.join(pkg, "psched")):
        sys.path.insert(0, pkg)
    try:
        import numpy  # noqa: F401
        import psched
    except ImportError as e:
        print(f"run_zoo: cannot import the psched client ({e}); build it (make build) or set "
              f"PYTHONPATH=build/client/python", file=sys.stderr)
        return 2

    models = set(args.models.split(",")) if args.models else None
    if args.set and args.set != "all":
        sys.path.insert(0, HERE)
        from zoo_sets import SETS

        models = (models or set()) | set(SETS[args.set])
    opsets = {int(o) for o in args.opsets.split(",")} if args.opsets else None
    folder, entries = load_entries(args.zoo, models, opsets)
    if not entries:
        print("run_zoo: no models selected", file=sys.stderr)
        return 2

    ort_python = find_ort(args)
    ort = None
    if ort_python is not False:
        try:
            ort = OrtRunner(ort_python, args.ort_threads)
        except Exception as e:  # noqa: BLE001
            print(f"run_zoo: ONNX Runtime unavailable: {first_line(e)}", file=sys.stderr)

    client_factory = psched.Client
    daemon = None
    socket = args.socket
    rows = []
    try:
        if socket is None:
            binary = os.path.join(args.build, "daemon", "pschedd")
            if not os.access(binary, os.X_OK):
                print(f"run_zoo: {binary} is missing; build first (make build)", file=sys.stderr)
                return 2
            if args.config:
                with open(args.config) as f:
                    daemon = Daemon(binary, f.read())
                status = daemon.start(client_factory)
            else:
                daemon = Daemon(binary, devices_config("gpu"))
                status = daemon.start(client_factory)
                if "gpu" not in [d.name for d in status.devices]:
                    daemon.stop()
                    daemon.config_text = devices_config("cpu.1")
                    status = daemon.start(client_factory)
            socket = daemon.socket
        else:
            with client_factory(socket, timeout=10) as c:
                status = c.status()
        with client_factory(socket, timeout=60) as c:
            preexisting = {m.id for m in c.models()}
        print(f"pschedd {status.version} on {socket}: devices "
              f"{', '.join(d.name for d in status.devices)}; {len(entries)} files from {folder}"
              + (f"; ONNX Runtime {ort.version} via "
                 f"{'this python' if ort.local else ort_python}" if ort else "; no ONNX Runtime"),
              file=sys.stderr, flush=True)
        for i, entry in enumerate(entries, 1):
            t = time.monotonic()
            log_offset = daemon.log_size() if daemon is not None else 0
            row = run_one(client_factory, socket, entry, folder, args, ort, preexisting)
            if row["status"] == "daemon_died" and daemon is not None and not daemon.alive():
                logged = daemon.log_since(log_offset)
                row["imported"] = (f"pschedd {daemon.exit_reason()} on this model"
                                   + (f"; its log: {logged}" if logged else ""))
                daemon.stop()
                daemon.start(client_factory)
            rows.append(row)
            what = row.get("imported", "")
            if row["status"] == "ran":
                what = (f"rel err {fmt_err(row.get('rel_err'))}, plan {fmt_ms(row.get('plan_ms'))}"
                        f" ms on {row.get('devices')}, infer {fmt_ms(row.get('infer_ms'))} ms")
                if "ort_ms" in row:
                    what += f", ORT {fmt_ms(row['ort_ms'])} ms"
            elif row.get("run_error"):
                what = "imported; run failed: " + row["run_error"]
            print(f"[{i}/{len(entries)}] {entry['name']}.opset{entry.get('opset')}: {what} "
                  f"({time.monotonic() - t:.1f}s)", file=sys.stderr, flush=True)
    except KeyboardInterrupt:
        print("run_zoo: interrupted; the table has the models done so far", file=sys.stderr)
    finally:
        if ort is not None:
            ort.close()
        if daemon is not None:
            daemon.cleanup(keep=args.keep_daemon_dir)

    print()
    print_table(rows, ort is not None)
    print()
    print(summary(rows, args.tolerance))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"socket": args.socket, "rows": rows}, f, indent=1)
            f.write("\n")
    if args.check:
        exported = [r for r in rows if r["status"] != "not_exported"]
        good = [r for r in exported if r["status"] == "ran" and r.get("rel_err") is not None
                and r["rel_err"] <= args.tolerance]
        if not exported or len(good) != len(exported):
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
