#!/usr/bin/python3
"""Exports a zoo of real model architectures to ONNX with seeded random weights.

For each model NAME and opset NN it writes, into --out:
  NAME.opsetNN.onnx   (torch.onnx.export, eval mode, do_constant_folding=True)
  NAME.input.npy      (a seeded random float32 input, shared by the opsets)
  NAME.output.npy     (PyTorch's float32 output on that input)
and keeps manifest.json (one entry per model and opset, merged with what the folder already
holds) and ops.txt (the ONNX op types of each file, and across files) up to date.

Each model is exported in a child process of its own (--jobs at a time), so a crash or an
out-of-memory kill is one failed model, not a failed run. Nothing is downloaded.

  export_zoo.py --out DIR [--models a,b,c] [--set fast|all|transformers] [--opsets 13,17]
                [--jobs N] [--dynamic-batch] [--skip-existing]
"""

import argparse
import collections
import datetime
import json
import os
import subprocess
import sys
import tempfile
import time
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

MANIFEST = "manifest.json"
OPS_TXT = "ops.txt"


def model_seed(name):
    """A stable per-model seed (the same for every run and every opset)."""
    return zlib.crc32(name.encode()) & 0x7FFFFFFF


def onnx_op_counts(path):
    """{op_type: count} over the graph and every subgraph (domain-qualified outside ai.onnx)."""
    import onnx

    model = onnx.load(path, load_external_data=False)
    counts = collections.Counter()

    def walk(graph):
        for node in graph.node:
            key = node.op_type if node.domain in ("", "ai.onnx") else f"{node.domain}.{node.op_type}"
            counts[key] += 1
            for attr in node.attribute:
                if attr.type == onnx.AttributeProto.GRAPH:
                    walk(attr.g)
                elif attr.type == onnx.AttributeProto.GRAPHS:
                    for g in attr.graphs:
                        walk(g)

    walk(model.graph)
    initializers = {i.name for i in model.graph.initializer}

    def dims(value_info):
        out = []
        for d in value_info.type.tensor_type.shape.dim:
            out.append(d.dim_value if d.HasField("dim_value") else (d.dim_param or "?"))
        return out

    inputs = [{"name": i.name, "shape": dims(i)} for i in model.graph.input
              if i.name not in initializers]
    outputs = [{"name": o.name, "shape": dims(o)} for o in model.graph.output]
    return dict(sorted(counts.items())), inputs, outputs


# ---------------------------------------------------------------------------------------------
# The child: exports one model at the given opsets and prints one JSON document.


def register_symbolics(opsets):
    """ONNX translations torch 1.13 lacks, for the ops torchvision's models use.

    aten::zero: swin_v2's attention zeroes the key third of a cloned qkv bias in place
    (`qkv_bias[length:2 * length].zero_()`); the exporter turns the in-place op on the slice
    into aten::zero plus a write-back, and has no translation for aten::zero. Zeros of the
    input's shape: constant folding then leaves the folded bias.
    """
    import torch
    from torch.onnx import register_custom_op_symbolic

    def zero(g, self):
        return g.op("ConstantOfShape", g.op("Shape", self),
                    value_t=torch.tensor([0.0], dtype=torch.float32))

    for opset in opsets:
        register_custom_op_symbolic("aten::zero", zero, opset)


def export_one(name, out_dir, opsets, dynamic_batch):
    import numpy as np
    import torch

    import zoo_models

    # One thread: a reduction's float sums then come out the same on every run, so the
    # calibrated weights, the files and the reference outputs are byte for byte reproducible.
    torch.set_num_threads(1)
    register_symbolics(opsets)
    seed = model_seed(name)
    shape = zoo_models.input_shape(name)
    results = []
    base = {"name": name, "seed": seed, "dynamic_batch": dynamic_batch,
            "family": "custom" if name in zoo_models.CUSTOM else "torchvision"}
    t0 = time.monotonic()
    torch.manual_seed(seed)
    model = zoo_models.build(name, calibrate=False)
    params = zoo_models.parameter_count(model)
    base["params"] = params
    if zoo_models.too_large(params):
        reason = (f"{params} parameters are {params * 4 / 2**30:.2f} GiB of float32, over "
                  "protobuf's 2 GiB limit for one ONNX file")
        for opset in opsets:
            results.append(dict(base, opset=opset, status="skipped", error=reason))
        return results
    zoo_models.calibrate_batch_norms(model, shape)
    base["build_seconds"] = round(time.monotonic() - t0, 3)

    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(*shape, generator=gen, dtype=torch.float32)
    t1 = time.monotonic()
    with torch.no_grad():
        y = model(x)
    if isinstance(y, (tuple, list)):
        y = y[0]
    if not torch.is_tensor(y):  # e.g. a namedtuple of logits and aux logits
        y = y.logits
    base["torch_ms"] = round((time.monotonic() - t1) * 1e3, 2)
    y = y.detach().float().numpy()
    base["output_finite"] = bool(np.isfinite(y).all())
    base["output_std"] = float(y.std())
    if not base["output_finite"] or base["output_std"] == 0.0:
        base["warning"] = "PyTorch's output is constant or not finite: comparisons mean little"
    input_file, output_file = f"{name}.input.npy", f"{name}.output.npy"
    np.save(os.path.join(out_dir, input_file), x.numpy())
    np.save(os.path.join(out_dir, output_file), y)
    base.update(input_file=input_file, output_file=output_file)

    for opset in opsets:
        entry = dict(base, opset=opset)
        file = f"{name}.opset{opset}.onnx"
        path = os.path.join(out_dir, file)
        tmp = path + ".part"
        kwargs = {}
        if dynamic_batch:
            kwargs["dynamic_axes"] = {"input": {0: "batch"}, "output": {0: "batch"}}
        t2 = time.monotonic()
        try:
            torch.manual_seed(seed)  # an export that draws random numbers does so the same way
            torch.onnx.export(model, (x,), tmp, opset_version=opset, do_constant_folding=True,
                              input_names=["input"], output_names=["output"], **kwargs)
            os.replace(tmp, path)
            entry["export_seconds"] = round(time.monotonic() - t2, 3)
            size = os.path.getsize(path)
            ops, inputs, outputs = onnx_op_counts(path)
            entry.update(status="ok", file=file, file_bytes=size, ops=ops,
                         op_count=sum(ops.values()), inputs=inputs, outputs=outputs,
                         input=inputs[0] if inputs else None,
                         output=outputs[0] if outputs else None)
            if list(y.shape) != [d for d in outputs[0]["shape"]] and not dynamic_batch:
                entry["warning"] = f"ONNX output shape {outputs[0]['shape']} != torch {list(y.shape)}"
        except Exception as e:  # noqa: BLE001 - every failure is reported, the run goes on
            if os.path.exists(tmp):
                os.unlink(tmp)
            entry["export_seconds"] = round(time.monotonic() - t2, 3)
            entry.update(status="failed", error=f"{type(e).__name__}: {e}".strip())
        results.append(entry)
    return results


def child_main(args):
    import warnings

    warnings.filterwarnings("ignore")
    opsets = [int(o) for o in args.opsets.split(",")]
    try:
        results = export_one(args.child, args.out, opsets, args.dynamic_batch)
    except Exception as e:  # noqa: BLE001
        results = [{"name": args.child, "opset": o, "status": "failed",
                    "error": f"{type(e).__name__}: {e}".strip()} for o in opsets]
    with open(args.result, "w") as f:
        json.dump(results, f)
    return 0


# ---------------------------------------------------------------------------------------------
# The parent: runs the children and keeps the manifest.


def load_manifest(out_dir):
    path = os.path.join(out_dir, MANIFEST)
    if os.path.exists(path):
        with open(path) as f:
            return json.load(f)
    return {"models": []}


def write_manifest(out_dir, manifest):
    import zoo_models

    manifest["models"].sort(key=lambda m: (m["name"], m.get("opset", 0)))
    manifest.update(zoo_models.versions())
    manifest["updated"] = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    tmp = os.path.join(out_dir, MANIFEST + ".part")
    with open(tmp, "w") as f:
        json.dump(manifest, f, indent=1)
        f.write("\n")
    os.replace(tmp, os.path.join(out_dir, MANIFEST))
    with open(os.path.join(out_dir, OPS_TXT), "w") as f:
        f.write(ops_report(manifest))


def ops_report(manifest):
    """Each exported file's op types with counts, then each op type with the models using it."""
    lines = []
    users = collections.defaultdict(set)
    by_opset = collections.defaultdict(collections.Counter)
    opsets = set()
    for m in manifest["models"]:
        if m.get("status") != "ok":
            continue
        ops = m.get("ops", {})
        lines.append(f"{m['file']}: {len(ops)} op types, {sum(ops.values())} nodes")
        lines.append("  " + ", ".join(f"{k} {v}" for k, v in sorted(ops.items())))
        opsets.add(m.get("opset"))
        for k in ops:
            users[k].add(m["name"])
            by_opset[k][m.get("opset")] += 1
    names = {m["name"] for m in manifest["models"] if m.get("status") == "ok"}
    opsets = sorted(opsets)
    lines.append("")
    lines.append(f"# Op types across {len(names)} models: the number of models using each, "
                 f"then of files at opset {', '.join(map(str, opsets))}")
    for k, v in sorted(users.items(), key=lambda kv: (-len(kv[1]), kv[0])):
        per = " ".join(f"{by_opset[k][o]:3d}" for o in opsets)
        lines.append(f"{k:28s} {len(v):3d}   {per}")
    failed = [m for m in manifest["models"] if m.get("status") != "ok"]
    if failed:
        lines.append("")
        lines.append("# Not exported")
        for m in failed:
            first = (m.get("error") or "").splitlines()[0] if m.get("error") else ""
            lines.append(f"{m['name']} opset {m.get('opset')}: {m.get('status')}: {first}")
    return "\n".join(lines) + "\n"


def already_done(manifest, out_dir, name, opsets, dynamic_batch):
    have = {(m["name"], m.get("opset")): m for m in manifest["models"]}
    for o in opsets:
        m = have.get((name, o))
        if m is None or bool(m.get("dynamic_batch")) != dynamic_batch:
            return False
        if m.get("status") == "ok" and not os.path.exists(os.path.join(out_dir, m["file"])):
            return False
        if m.get("status") == "failed":
            return False
    return True


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", required=True, help="output folder")
    p.add_argument("--models", help="comma-separated model names (added to --set's, if given)")
    p.add_argument("--set", choices=["fast", "all", "transformers", "bench"],
                   help="a named set of models (default: all, unless --models is given)")
    p.add_argument("--opsets", default="13,17", help="comma-separated opsets (default 13,17)")
    p.add_argument("--jobs", type=int, default=1, help="models exported at once (default 1)")
    p.add_argument("--dynamic-batch", action="store_true",
                   help="mark axis 0 of the input and output as a symbolic 'batch' dimension")
    p.add_argument("--skip-existing", action="store_true",
                   help="leave models the manifest already has (exported or skipped) alone")
    p.add_argument("--timeout", type=float, default=3600, help="seconds per model (default 3600)")
    p.add_argument("--list", action="store_true", help="print the chosen models and exit")
    p.add_argument("--child", help=argparse.SUPPRESS)
    p.add_argument("--result", help=argparse.SUPPRESS)
    args = p.parse_args(argv)

    if args.child:
        return child_main(args)

    import zoo_models

    names = []
    if args.set or not args.models:
        names += zoo_models.model_set(args.set or "all")
    if args.models:
        known = set(zoo_models.all_models())
        for n in args.models.split(","):
            n = n.strip()
            if not n:
                continue
            if n not in known:
                p.error(f"unknown model {n!r}; see --list --set all")
            names.append(n)
    names = list(dict.fromkeys(names))
    if args.list:
        for n in names:
            print(n, "x".join(map(str, zoo_models.input_shape(n))))
        return 0
    opsets = [int(o) for o in args.opsets.split(",")]
    os.makedirs(args.out, exist_ok=True)
    out_dir = os.path.abspath(args.out)
    manifest = load_manifest(out_dir)
    if args.skip_existing:
        todo = [n for n in names if not already_done(manifest, out_dir, n, opsets, args.dynamic_batch)]
        if len(todo) != len(names):
            print(f"skipping {len(names) - len(todo)} models the manifest already has", flush=True)
        names = todo

    print(f"exporting {len(names)} models at opsets {args.opsets} into {out_dir} "
          f"({args.jobs} at a time)", flush=True)
    start = time.monotonic()
    pending = list(names)
    running = {}  # name -> (Popen, result path, start time)
    tmpdir = tempfile.mkdtemp(prefix="export_zoo.")
    failures = 0
    done = 0
    while pending or running:
        while pending and len(running) < args.jobs:
            name = pending.pop(0)
            result = os.path.join(tmpdir, name + ".json")
            cmd = [sys.executable, os.path.abspath(__file__), "--out", out_dir, "--child", name,
                   "--result", result, "--opsets", args.opsets]
            if args.dynamic_batch:
                cmd.append("--dynamic-batch")
            proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                    text=True)
            running[name] = (proc, result, time.monotonic())
        time.sleep(0.05)
        for name in list(running):
            proc, result, t0 = running[name]
            if proc.poll() is None:
                if time.monotonic() - t0 > args.timeout:
                    proc.kill()
                else:
                    continue
            stderr = proc.communicate()[1] or ""
            del running[name]
            done += 1
            elapsed = time.monotonic() - t0
            if os.path.exists(result):
                with open(result) as f:
                    entries = json.load(f)
                os.unlink(result)
            else:
                tail = [l for l in stderr.strip().splitlines() if l.strip()][-1:] or [""]
                why = f"exporter process ended with status {proc.returncode}: {tail[0]}"
                if proc.returncode in (-9, 137):
                    why = f"exporter process killed (timeout or out of memory); {tail[0]}"
                entries = [{"name": name, "opset": o, "status": "failed", "error": why}
                           for o in opsets]
            manifest["models"] = [m for m in manifest["models"]
                                  if not (m["name"] == name and m.get("opset") in opsets)]
            manifest["models"].extend(entries)
            write_manifest(out_dir, manifest)
            parts = []
            for e in entries:
                if e["status"] == "ok":
                    parts.append(f"opset {e['opset']} ok {e['file_bytes'] / 1e6:.1f} MB "
                                 f"{e['op_count']} nodes {e['export_seconds']:.1f}s")
                else:
                    failures += e["status"] == "failed"
                    parts.append(f"opset {e['opset']} {e['status'].upper()}")
            params = entries[0].get("params")
            ptxt = f"{params / 1e6:.2f}M params, " if params is not None else ""
            print(f"[{done}/{len(names)}] {name}: {ptxt}{'; '.join(parts)} ({elapsed:.1f}s)",
                  flush=True)
            for e in entries:
                if e["status"] != "ok":
                    first = (e.get("error") or "").strip().splitlines()
                    print(f"  {e['status']}: {name} opset {e['opset']}: "
                          f"{first[0] if first else 'no message'}", flush=True)
    os.rmdir(tmpdir)
    total = time.monotonic() - start
    ok = sum(1 for m in manifest["models"] if m.get("status") == "ok")
    print(f"done in {total:.1f}s: manifest has {ok} exported files; {failures} failed exports "
          f"this run; {os.path.join(out_dir, MANIFEST)}", flush=True)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
