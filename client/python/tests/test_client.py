"""psched.Client against a real pschedd: reference outputs, every error path, threads, and the
examples in README.md and docs/python.md run as written."""

from __future__ import annotations

import hashlib
import os
import re
import sqlite3
import subprocess
import sys
import tempfile
import threading
import unittest
from typing import Any, Callable, List

import grpc
import numpy as np

import psched
from daemon import SOURCE, Daemon, reference

SQUEEZENET = reference("squeezenet_v1_1", ".onnx")
# Planning it exactly takes about a second: long enough for the daemon's 20 ms progress poll
# (squeezenet_v1_1's stages prove optimal within 20 ms).
PELEENET = reference("peleenet", ".onnx")
GRAPH_ONLY = os.path.join(os.path.dirname(SQUEEZENET), "..", "graph-only", "squeezenet_v1_1.onnx")
HAVE_MODELS = all(os.path.exists(p) for p in (SQUEEZENET, GRAPH_ONLY, PELEENET))
# A small CNN with PyTorch's output (tests/daemon/make_tiny_model.py): milliseconds a run.
TINY = os.path.join(SOURCE, "tests", "daemon", "data", "tiny_cnn")


def assert_refused(test: unittest.TestCase, error: type[psched.PschedError], pattern: str,
                   call: Callable[[], Any]) -> None:
    """`call` raises `error`, carrying its gRPC code and a message matching `pattern`."""
    with test.assertRaises(error) as caught:
        call()
    test.assertEqual(caught.exception.code, error.CODE)
    test.assertRegex(caught.exception.message, pattern)


def load(stem: str) -> tuple[np.ndarray, np.ndarray]:
    return np.load(reference(stem, ".input.npy")), np.load(reference(stem, ".output.npy"))


TWO_CPU_DEVICES = """
[[devices]]
name = "cpu.0"
kind = "cpu"
cores = [0]

[[devices]]
name = "cpu.1"
kind = "cpu"
cores = [1]
"""


@unittest.skipUnless(HAVE_MODELS, "no ../shared reference models")
class ClientTest(unittest.TestCase):
    """One daemon for every test of the class, on the host platform split into one CPU device
    per core (the default on this 2-core VM is a single 2-core device, on which planning has
    nothing to search and streams no progress for the cancellation tests)."""

    daemon: Daemon
    client: psched.Client

    @classmethod
    def setUpClass(cls) -> None:
        cls.daemon = Daemon(TWO_CPU_DEVICES)
        cls.client = cls.daemon.client()

    @classmethod
    def tearDownClass(cls) -> None:
        cls.client.close()
        cls.daemon.close()

    # -- what works ----------------------------------------------------------------------

    def test_reference_models_match_pytorch_to_1e4(self) -> None:
        for stem in ("squeezenet_v1_1", "peleenet"):
            with self.subTest(stem):
                model = self.client.add_model(reference(stem, ".onnx"))
                self.assertEqual(model.name, stem)
                self.assertEqual([i.name for i in model.inputs], ["input"])
                x, want = load(stem)
                for scheduler in ("heft", ""):
                    outputs = self.client.infer(model, {"input": x}, scheduler=scheduler)
                    self.assertEqual(list(outputs), [o.name for o in model.outputs])
                    got = outputs["logits"]
                    self.assertEqual(got.dtype, np.float32)
                    self.assertEqual(got.shape, want.shape)
                    self.assertLess(float(np.abs(got - want).max()), 1e-4)
                    self.assertEqual(outputs.response.executor, "coexec")
                    self.assertGreater(outputs.response.execute_us, 0)
                    self.assertEqual(len(outputs.response.outputs), 0)

    def test_model_id_is_the_sha256_of_the_bytes_whichever_way_it_is_sent(self) -> None:
        with open(SQUEEZENET, "rb") as f:
            data = f.read()
        want = hashlib.sha256(data).hexdigest()
        by_path = self.client.add_model(SQUEEZENET)
        # Small chunks: the upload really is a stream of many messages.
        small = psched.Client(self.daemon.socket, chunk_bytes=64 << 10)
        by_bytes = small.add_model(bytearray(data), name="sq-bytes")
        self.assertEqual(by_path.id, want)
        self.assertEqual(by_bytes.id, want)
        self.assertEqual(by_path.size_bytes, len(data))
        self.assertTrue(by_path.has_weights)
        self.assertIn(want, [m.id for m in self.client.models()])
        self.assertEqual(self.client.get_model(want[:12]).id, want)
        self.assertIn('"ops"', self.client.get_model(by_path).inspect_json)

    def test_one_array_feeds_a_single_input_model_and_none_runs_zeros(self) -> None:
        model = self.client.add_model(SQUEEZENET)
        x, want = load("squeezenet_v1_1")
        single = self.client.infer(model, x.astype(np.float64), scheduler="heft")
        self.assertLess(float(np.abs(single["logits"] - want).max()), 1e-4)
        zeros = self.client.infer(model, scheduler="heft")
        explicit = self.client.infer(model, {"input": np.zeros_like(x)}, scheduler="heft")
        np.testing.assert_allclose(zeros["logits"], explicit["logits"], atol=1e-5)

    def test_plan_reports_progress_caches_and_refreshes(self) -> None:
        model = self.client.add_model(PELEENET)
        events: List[psched.v1.plan_pb2.PlanProgress] = []
        options = {"stage_time_limit_s": 0.05, "seed": 3}
        plan = self.client.plan(model, "exact", options=options, refresh=True,
                                progress=events.append)
        self.assertGreater(len(events), 0)
        self.assertTrue(all(e.stage for e in events))
        self.assertFalse(plan.cached)
        self.assertEqual(plan.model_id, model.id)
        self.assertEqual(plan.scheduler, "exact")
        self.assertGreater(plan.makespan_us, 0)
        # makespan_us is the run as predicted (scheduler::RetimeByWaits): the planner's schedule
        # plus what it leaves out, such as adding a cin split's partial sums, never less.
        self.assertGreaterEqual(plan.makespan_us + 1e-3, max(s.end_us for s in plan.subtasks))
        again = self.client.plan(model.id, "exact", options=options)
        self.assertTrue(again.cached)
        self.assertEqual(again.makespan_us, plan.makespan_us)
        self.assertIn("exact", [p.scheduler for p in self.client.cached_plans(model)])
        self.assertFalse(self.client.plan(model, "exact", options=options, refresh=True).cached)

    def test_status_devices_and_cache(self) -> None:
        model = self.client.add_model(SQUEEZENET)
        self.client.plan(model, "heft")
        status = self.client.status()
        self.assertEqual(status.version, psched.__version__)
        self.assertGreaterEqual(status.models, 1)
        self.assertEqual(status.executor, "coexec")
        devices = self.client.devices()
        self.assertEqual([d.name for d in devices.devices], [d.name for d in status.devices])
        self.assertEqual(devices.platform, "host")
        stats = self.client.cache_stats()
        self.assertGreaterEqual(stats.plans, 1)
        self.assertTrue(stats.path.endswith("psched.db"))

    def test_progress_callback_that_raises_cancels_the_call(self) -> None:
        model = self.client.add_model(PELEENET)

        def stop(event: Any) -> None:
            raise KeyboardInterrupt("stop planning")

        with self.assertRaisesRegex(KeyboardInterrupt, "stop planning"):
            self.client.plan(model, "exact", options={"stage_time_limit_s": 0.05, "seed": 4},
                             refresh=True, progress=stop)
        self.assertEqual(self.client.status().version, psched.__version__)

    # -- every refusal -------------------------------------------------------------------

    def test_closing_the_client_during_a_call_is_cancelled(self) -> None:
        client = self.daemon.client()
        model = client.add_model(PELEENET)
        # The first progress event closes the client: the plan stream is cut, not finished.
        assert_refused(self, psched.CancelledError, "Channel closed",
                       lambda: client.plan(model, "exact",
                                           options={"stage_time_limit_s": 0.05, "seed": 5},
                                           refresh=True, progress=lambda event: client.close()))


    def test_unknown_model_is_not_found(self) -> None:
        missing = "0" * 64
        for call in (lambda: self.client.infer(missing), lambda: self.client.plan(missing),
                     lambda: self.client.get_model(missing),
                     lambda: self.client.remove_model(missing)):
            assert_refused(self, psched.NotFoundError, f"no model with id {missing}", call)

    def test_bad_requests_are_invalid_arguments_with_the_daemons_reason(self) -> None:
        model = self.client.add_model(SQUEEZENET)
        x, _ = load("squeezenet_v1_1")
        cases: list[tuple[str, Callable[[], Any]]] = [
            ("not a valid ONNX model", lambda: self.client.add_model(b"not an onnx file")),
            ("unknown scheduler 'no-such'", lambda: self.client.plan(model, "no-such")),
            ("option seed='x'", lambda: self.client.plan(model, "heft", options={"seed": "x"})),
            ("shorter than 8 characters", lambda: self.client.infer("27c5")),
            ("no input named 'image'", lambda: self.client.infer(model, {"image": x})),
            (r"has dims \[1, 3, 224, 112\]; the model declares \[1, 3, 224, 224\]",
             lambda: self.client.infer(model, {"input": x[..., :112]})),
            ("holds nan at flat index 5",
             lambda: self.client.infer(model, {"input": np.where(
                 np.arange(x.size).reshape(x.shape) == 5, np.nan, x)})),
            ("holds inf", lambda: self.client.infer(model, np.full(x.shape, np.inf))),
            (r"budget_s must be in \(0, 15\]", lambda: self.client.calibrate(100)),
        ]
        for pattern, call in cases:
            with self.subTest(pattern):
                assert_refused(self, psched.InvalidArgumentError, pattern, call)

    def test_bad_arguments_are_refused_before_a_request_is_sent(self) -> None:
        model = self.client.add_model(SQUEEZENET)
        with self.assertRaisesRegex(TypeError, "input 'input' has dtype complex64"):
            self.client.infer(model, {"input": np.zeros((1, 3, 224, 224), np.complex64)})
        with self.assertRaisesRegex(TypeError, "a model is an id"):
            self.client.infer(42)  # type: ignore[arg-type]
        with self.assertRaises(FileNotFoundError):
            self.client.add_model("/nonexistent/model.onnx")
        with self.assertRaisesRegex(ValueError, "timeout must be positive"):
            psched.Client(self.daemon.socket, timeout=0)

    def test_graph_only_model_cannot_run_without_synthetic_weights(self) -> None:
        # Its weights file is not there: it is sent as a graph, to plan, on purpose only.
        with self.assertRaisesRegex(FileNotFoundError, "graph_only=True"):
            self.client.add_model(GRAPH_ONLY)
        model = self.client.add_model(GRAPH_ONLY, graph_only=True)
        self.assertFalse(model.has_weights)
        assert_refused(self, psched.FailedPreconditionError, "has no weights",
                           lambda: self.client.infer(model))
        assert_refused(self, psched.FailedPreconditionError, "remove it first",
                           lambda: self.client.add_model(GRAPH_ONLY, synthesize_weights=True))
        removed = self.client.remove_model(model)
        self.assertEqual(removed.id, model.id)
        synthetic = self.client.add_model(GRAPH_ONLY, synthesize_weights=True)
        self.assertTrue(synthetic.has_weights)
        outputs = self.client.infer(synthetic, scheduler="heft")
        self.assertTrue(np.isfinite(outputs["logits"]).all())

    def test_a_passed_deadline_is_deadline_exceeded(self) -> None:
        model = self.client.add_model(SQUEEZENET)
        assert_refused(self, psched.DeadlineExceededError, "Deadline Exceeded",
                           lambda: self.client.infer(model, timeout=1e-6))

    # -- threads -------------------------------------------------------------------------

    def test_threads_share_one_client(self) -> None:
        with open(SQUEEZENET, "rb") as f:
            data = f.read()
        x, want = load("squeezenet_v1_1")
        ids: list[str] = []
        diffs: list[float] = []
        failures: list[BaseException] = []
        lock = threading.Lock()
        start = threading.Barrier(10)

        def register_then_infer() -> None:
            try:
                start.wait()
                model = self.client.add_model(data)
                with lock:
                    ids.append(model.id)
                for _ in range(4):
                    y = self.client.infer(model, {"input": x}, scheduler="heft")["logits"]
                    with lock:
                        diffs.append(float(np.abs(y - want).max()))
            except BaseException as error:  # reported below, on the test's thread
                with lock:
                    failures.append(error)

        def poll() -> None:
            try:
                start.wait()
                for _ in range(20):
                    self.client.status()
                    self.client.plan(hashlib.sha256(data).hexdigest(), "heft")
            except BaseException as error:
                with lock:
                    failures.append(error)

        threads = [threading.Thread(target=register_then_infer) for _ in range(8)]
        threads += [threading.Thread(target=poll) for _ in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        # The pollers may ask for the plan before any upload lands: NOT_FOUND is their only
        # allowed refusal.
        unexpected = [f for f in failures if not isinstance(f, psched.NotFoundError)]
        self.assertEqual(unexpected, [])
        self.assertEqual(set(ids), {hashlib.sha256(data).hexdigest()})
        self.assertEqual(len(diffs), 32)
        self.assertLess(max(diffs), 1e-4)

    # -- the documented examples ---------------------------------------------------------

    def run_block(self, markdown: str, heading: str, *args: str) -> str:
        """Runs the first ```python block after `heading` in `markdown` and returns its
        stdout (PSCHED_SOCKET points at this test's daemon)."""
        with open(os.path.join(SOURCE, markdown)) as f:
            text = f.read()
        section = text[text.index(heading):]
        code = re.search(r"```python\n(.*?)```", section, re.S)
        assert code is not None, f"no python block after {heading!r} in {markdown}"
        with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as script:
            script.write(code.group(1))
        try:
            env = dict(os.environ, PSCHED_SOCKET=self.daemon.socket)
            done = subprocess.run([sys.executable, script.name, *args], cwd=SOURCE, env=env,
                                  capture_output=True, text=True, timeout=300)
        finally:
            os.unlink(script.name)
        self.assertEqual(done.returncode, 0, done.stderr)
        return done.stdout

    def test_docs_example_runs(self) -> None:
        x, want = load("squeezenet_v1_1")
        out = self.run_block("docs/python.md", "## Example", SQUEEZENET,
                             reference("squeezenet_v1_1", ".input.npy"))
        top5 = [int(i) for i in np.argsort(want.ravel())[::-1][:5]]
        self.assertIn(f"top-5 classes {top5}", out)
        self.assertIn("refused (INVALID_ARGUMENT): input 'input' has dims [1, 3, 224, 100]", out)

    def test_readme_python_section_runs(self) -> None:
        _, want = load("squeezenet_v1_1")
        out = self.run_block("README.md", "## Call it from Python")
        self.assertIn(f"class {int(want.argmax())}", out)


@unittest.skipUnless(HAVE_MODELS, "no ../shared reference models")
class LimitsTest(unittest.TestCase):
    """Daemons configured so the remaining refusals are reachable."""

    def start(self, config: str) -> Daemon:
        daemon = Daemon(config)
        self.addCleanup(daemon.close)
        return daemon

    def test_oversize_upload_and_full_queue_are_resource_exhausted(self) -> None:
        daemon = self.start("max_model_bytes = 8000000\nqueue_capacity = 1\n")
        client = daemon.client()
        with self.assertRaises(psched.ResourceExhaustedError) as caught:
            client.add_model(reference("peleenet", ".onnx"))  # 11.4 MB
        self.assertEqual(caught.exception.code, grpc.StatusCode.RESOURCE_EXHAUSTED)
        self.assertRegex(caught.exception.message, "8000000")
        model = client.add_model(SQUEEZENET)  # 5 MB
        # Eight requests at once against a queue of one: one runs (tens of milliseconds), the
        # others find the queue full.
        outcomes: list[object] = []
        lock = threading.Lock()
        start = threading.Barrier(8)
        x, want = load("squeezenet_v1_1")

        def infer() -> None:
            start.wait()
            for _ in range(5):
                try:
                    y = next(iter(client.infer(model, x, scheduler="heft").values()))
                    result: object = float(np.abs(y - want).max())
                except psched.PschedError as error:
                    result = error
                with lock:
                    outcomes.append(result)

        threads = [threading.Thread(target=infer) for _ in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        refused = [o for o in outcomes if isinstance(o, psched.PschedError)]
        answered = [o for o in outcomes if isinstance(o, float)]
        self.assertEqual(len(refused) + len(answered), 40)
        self.assertGreater(len(refused), 0)
        self.assertGreater(len(answered), 0)
        for error in refused:
            self.assertIsInstance(error, psched.ResourceExhaustedError)
            self.assertIn("queue is full", error.message)
        self.assertLess(max(answered), 1e-4)

    def test_trace_cached_plans_and_purge(self) -> None:
        client = self.start("").client()
        model = client.add_model(TINY + ".onnx")
        outputs = client.infer(model, np.load(TINY + ".input.npy"), scheduler="heft",
                               trace=True)
        trace = outputs.response.trace
        self.assertGreater(len(trace), 0)
        devices = {d.name for d in client.status().devices}
        self.assertTrue({t.device for t in trace} <= devices)
        self.assertTrue(all(t.end_us >= t.start_us >= 0 for t in trace))
        self.assertEqual(len(client.infer(model, scheduler="heft").response.trace), 0)
        plans = client.cached_plans(model)
        self.assertEqual([(p.model_id, p.scheduler) for p in plans], [(model.id, "heft")])
        assert_refused(self, psched.NotFoundError, "no model with id",
                       lambda: client.cached_plans("0" * 64))
        purged = client.purge_cache()
        self.assertEqual((purged.plans_removed, purged.models_removed), (1, 0))
        self.assertEqual(client.cached_plans(), [])
        self.assertEqual([m.id for m in client.models()], [model.id])
        purged = client.purge_cache(include_models=True)
        self.assertEqual(purged.models_removed, 1)
        self.assertEqual(client.models(), [])

    def test_calibration_needs_a_model_and_a_real_platform(self) -> None:
        client = self.start("").client()
        with self.assertRaises(psched.FailedPreconditionError) as caught:
            client.calibrate(0.2)
        self.assertIn("no model is registered", caught.exception.message)
        client.add_model(TINY + ".onnx")
        events: list[psched.v1.admin_pb2.CalibrationProgress] = []
        result = client.calibrate(0.2, progress=events.append)
        self.assertIn("+calibrated", result.predictor_version)
        self.assertEqual(client.devices().predictor_version, result.predictor_version)
        self.assertGreater(result.samples, 0)
        devices = [d.name for d in client.status().devices]
        self.assertEqual({e.device for e in events if e.finished}, set(devices))

        simulated = self.start('platform = "oneplus11"\n').client()
        simulated.add_model(TINY + ".onnx")
        with self.assertRaises(psched.UnimplementedError) as caught_sim:
            simulated.calibrate(0.2)
        self.assertEqual(caught_sim.exception.code, grpc.StatusCode.UNIMPLEMENTED)

    def test_tampered_stored_model_is_data_loss(self) -> None:
        daemon = self.start("")
        model = daemon.client().add_model(TINY + ".onnx")
        self.assertEqual(daemon.stop(), 0)
        with sqlite3.connect(os.path.join(daemon.state, "psched.db")) as db:
            db.execute("UPDATE model_chunks SET bytes = CAST(bytes || x'00' AS BLOB) "
                       "WHERE model_id = ?1 AND seq = "
                       "(SELECT max(seq) FROM model_chunks WHERE model_id = ?1)",
                       (model.id,))
        db.close()
        daemon.start()
        assert_refused(self, psched.DataLossError, "quarantined",
                            lambda: daemon.client().infer(model))

    def test_a_daemon_that_is_gone_is_unavailable_naming_the_socket(self) -> None:
        daemon = self.start("")
        client = daemon.client()
        self.assertEqual(client.status().version, psched.__version__)
        self.assertEqual(daemon.stop(), 0)
        for call in (client.status, lambda: client.add_model(b"x"),
                     lambda: client.plan("0" * 64), lambda: client.calibrate()):
            with self.assertRaises(psched.UnavailableError) as caught:
                call()
            self.assertEqual(caught.exception.code, grpc.StatusCode.UNAVAILABLE)
            self.assertIn(f"no pschedd answers on {daemon.socket}", caught.exception.message)


if __name__ == "__main__":
    unittest.main()
