"""Plan bundles between real pschedds: one board plans, another imports the bundle and serves
it without planning; another platform's, an altered and an unknown model's bundle are refused."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import unittest
from typing import Any, Callable

import psched
from daemon import SOURCE, Daemon

TINY = os.path.join(SOURCE, "tests", "daemon", "data", "tiny_cnn")
PSCHEDCTL = os.environ.get("PSCHEDCTL", "")

ONE_CPU_DEVICE = """
[[devices]]
name = "cpu.0"
kind = "cpu"
cores = [0]
"""


def resealed(bundle: bytes, edit: Callable[[dict[str, Any]], None]) -> bytes:
    """`bundle` with `edit` applied to its first plan and the checksum recomputed."""
    parsed = json.loads(bundle)
    edit(parsed["plans"][0])
    covered = {"calibration": parsed["calibration"], "plans": parsed["plans"]}
    canonical = json.dumps(covered, separators=(",", ":"), sort_keys=True, ensure_ascii=False)
    parsed["sha256"] = hashlib.sha256(canonical.encode()).hexdigest()
    return json.dumps(parsed).encode()


class PlanBundleTest(unittest.TestCase):
    def start(self, config: str) -> Daemon:
        daemon = Daemon(config)
        self.addCleanup(daemon.close)
        return daemon

    def planned_bundle(self) -> tuple[Daemon, str, bytes]:
        """A daemon that planned the tiny model with heft, its model id and bundle."""
        first = self.start("")
        client = first.client()
        model = client.add_model(TINY + ".onnx")
        client.infer(model, scheduler="heft")
        return first, model.id, client.export_plans(model, "heft")

    def test_second_board_serves_the_imported_plan_without_planning(self) -> None:
        first, model_id, bundle = self.planned_bundle()
        parsed = json.loads(bundle)
        self.assertEqual((parsed["format"], parsed["version"]), ("psched-plan-bundle", 2))
        self.assertIsNone(parsed["calibration"], "the first board plans uncalibrated")
        self.assertEqual(parsed["model_id"], model_id)
        self.assertEqual([p["key"]["scheduler_config"] for p in parsed["plans"]], ["heft"])
        planned = first.client().plan(model_id, "heft")

        second = self.start("")
        client = second.client()
        client.add_model(TINY + ".onnx")
        before = client.cache_stats()
        imported = client.import_plans(bundle)
        self.assertEqual(imported.model_id, model_id)
        self.assertEqual([(p.scheduler_config, p.served) for p in imported.plans],
                         [("heft", True)])
        self.assertEqual(imported.calibration, "")
        self.assertEqual(client.cache_stats().plans, before.plans + 1)

        client.infer(model_id, scheduler="heft")
        log = second.log()
        self.assertIn("serving the imported heft plan for " + model_id, log)
        self.assertNotIn("planned " + model_id, log)
        stats = client.cache_stats()
        self.assertEqual(stats.plans, before.plans + 1)
        self.assertEqual(stats.misses, before.misses)
        plan = client.plan(model_id, "heft")
        self.assertTrue(plan.cached)
        self.assertTrue(plan.imported)
        self.assertEqual(plan.makespan_us, planned.makespan_us)
        self.assertEqual(json.loads(plan.schedule_json)["subtasks"],
                         json.loads(planned.schedule_json)["subtasks"])
        self.assertTrue(json.loads(plan.schedule_json)["imported"])
        self.assertFalse(first.client().plan(model_id, "heft").imported)

        # The cache remembers where the plan came from across a restart.
        self.assertEqual(second.stop(), 0)
        second.start()
        self.assertTrue(second.client().plan(model_id, "heft").imported)

    def test_calibration_travels_with_its_plans_to_an_uncalibrated_board(self) -> None:
        first = self.start("")
        client = first.client()
        model = client.add_model(TINY + ".onnx")
        calibrated = client.calibrate(0.2).predictor_version
        self.assertIn("+calibrated", calibrated)
        planned = client.plan(model, "heft")
        self.assertEqual(planned.predictor_version, calibrated)
        bundle = client.export_plans(model, "heft")
        carried = json.loads(bundle)["calibration"]
        self.assertEqual(carried["predictor_version"], calibrated)
        self.assertIn("params", carried)

        second = self.start("")
        fresh = second.client()
        fresh.add_model(TINY + ".onnx")
        self.assertNotEqual(fresh.devices().predictor_version, calibrated)
        imported = fresh.import_plans(bundle)
        self.assertEqual(imported.calibration, "adopted")
        self.assertEqual([(p.predictor_version, p.served) for p in imported.plans],
                         [(calibrated, True)])
        self.assertEqual(fresh.devices().predictor_version, calibrated)
        fresh.infer(model.id, scheduler="heft")
        log = second.log()
        self.assertIn("adopted the bundle's calibration: planning with " + calibrated, log)
        self.assertIn("serving the imported heft plan for " + model.id, log)
        self.assertNotIn("planned " + model.id, log)
        # Stored like a calibration made here: it is still used after a restart.
        self.assertEqual(second.stop(), 0)
        second.start()
        self.assertEqual(second.client().devices().predictor_version, calibrated)
        self.assertTrue(second.client().plan(model.id, "heft").imported)

        # A board with its own calibration keeps it; the bundle's plans are stored, not served.
        third = self.start("")
        own = third.client()
        own.add_model(TINY + ".onnx")
        own_version = own.calibrate(0.2).predictor_version
        imported = own.import_plans(bundle)
        if own_version == calibrated:
            self.assertEqual(imported.calibration, "already in use")
        else:
            self.assertEqual(imported.calibration,
                             f"not adopted: this board has its own calibration ({own_version})")
            self.assertEqual([p.served for p in imported.plans], [False])
        self.assertEqual(own.devices().predictor_version, own_version)

    def test_calibration_for_other_devices_is_refused_and_nothing_is_stored(self) -> None:
        first = self.start("")
        client = first.client()
        model = client.add_model(TINY + ".onnx")
        client.calibrate(0.2)
        client.plan(model, "heft")
        bundle = json.loads(client.export_plans(model, "heft"))
        bundle["calibration"]["platform_key"] = "npu.0:npu"
        covered = {"calibration": bundle["calibration"], "plans": bundle["plans"]}
        bundle["sha256"] = hashlib.sha256(json.dumps(
            covered, separators=(",", ":"), sort_keys=True, ensure_ascii=False).encode()).hexdigest()

        second = self.start("")
        fresh = second.client()
        fresh.add_model(TINY + ".onnx")
        with self.assertRaises(psched.FailedPreconditionError) as caught:
            fresh.import_plans(json.dumps(bundle).encode())
        self.assertIn("calibration is for devices 'npu.0:npu'", caught.exception.message)
        self.assertEqual(fresh.cache_stats().plans, 0)

    @unittest.skipUnless(PSCHEDCTL, "PSCHEDCTL not set")
    def test_pschedctl_export_and_import(self) -> None:
        first, model_id, _ = self.planned_bundle()
        second = self.start("")
        second.client().add_model(TINY + ".onnx")
        path = os.path.join(second.dir, "tiny.bundle.json")
        exported = subprocess.run(
            [PSCHEDCTL, "--socket", first.socket, "plan", "export", model_id[:12], "--out", path],
            capture_output=True, text=True, check=True)
        self.assertIn("wrote 1 plan to " + path, exported.stdout)
        imported = subprocess.run([PSCHEDCTL, "--socket", second.socket, "plan", "import", path],
                                  capture_output=True, text=True, check=True)
        self.assertIn(f"model {model_id}: imported 1 plan", imported.stdout)
        shown = subprocess.run(
            [PSCHEDCTL, "--socket", second.socket, "plan", "show", model_id[:12], "--scheduler",
             "heft"], capture_output=True, text=True, check=True)
        self.assertIn("(imported)", shown.stdout)

    def test_another_platform_refuses_naming_both_fingerprints(self) -> None:
        _, _, bundle = self.planned_bundle()
        ours = json.loads(bundle)["platform"]["fingerprint"]
        other = self.start(ONE_CPU_DEVICE)
        client = other.client()
        client.add_model(TINY + ".onnx")
        theirs = client.devices().fingerprint
        self.assertNotEqual(ours, theirs)
        with self.assertRaises(psched.FailedPreconditionError) as caught:
            client.import_plans(bundle)
        self.assertIn(ours, caught.exception.message)
        self.assertIn(theirs, caught.exception.message)
        self.assertEqual(client.cache_stats().plans, 0)

    def test_altered_bundle_is_refused(self) -> None:
        _, _, bundle = self.planned_bundle()
        second = self.start("")
        client = second.client()
        client.add_model(TINY + ".onnx")
        # One byte of a plan: a subtask's start time.
        at = bundle.index(b'"start_us": ') + len(b'"start_us": ')
        digit = bundle[at:at + 1]
        altered = bundle[:at] + (b"7" if digit != b"7" else b"8") + bundle[at + 1:]
        with self.assertRaises(psched.InvalidArgumentError) as caught:
            client.import_plans(altered)
        self.assertRegex(caught.exception.message, r"sha256: the plans and calibration hash to [0-9a-f]{64}")
        with self.assertRaises(psched.InvalidArgumentError) as caught:
            client.import_plans(bundle[:len(bundle) // 2])
        self.assertIn("not valid JSON (truncated or not a bundle)", caught.exception.message)
        self.assertEqual(client.cache_stats().plans, 0)

    def test_plan_that_does_not_fit_the_graph_is_refused_even_when_resealed(self) -> None:
        _, model_id, bundle = self.planned_bundle()
        client = self.start("").client()
        client.add_model(TINY + ".onnx")
        # Resealing as such keeps a bundle valid: what follows is refused for its plan alone.
        client.import_plans(resealed(bundle, lambda plan: None))

        def unknown_device(plan: dict[str, Any]) -> None:
            plan["schedule"]["subtasks"][0]["device"] = "npu.7"

        def missing_op(plan: dict[str, Any]) -> None:
            plan["schedule"]["subtasks"].pop()

        for edit in (unknown_device, missing_op):
            with self.assertRaises(psched.InvalidArgumentError) as caught:
                client.import_plans(resealed(bundle, edit))
            self.assertIn(f"plans[0] (heft) does not fit model {model_id}",
                          caught.exception.message)

    def test_plan_of_another_predictor_is_stored_but_not_served(self) -> None:
        _, model_id, bundle = self.planned_bundle()
        second = self.start("")
        client = second.client()
        client.add_model(TINY + ".onnx")

        def other_predictor(plan: dict[str, Any]) -> None:
            plan["key"]["predictor_version"] = "analytic-v0/elsewhere"

        imported = client.import_plans(resealed(bundle, other_predictor))
        self.assertEqual([(p.predictor_version, p.served) for p in imported.plans],
                         [("analytic-v0/elsewhere", False)])
        client.infer(model_id, scheduler="heft")
        self.assertIn("planned " + model_id, second.log())
        self.assertFalse(client.plan(model_id, "heft").imported)

    def test_bundle_of_an_unregistered_model_is_refused(self) -> None:
        _, model_id, bundle = self.planned_bundle()
        client = self.start("").client()
        with self.assertRaises(psched.NotFoundError) as caught:
            client.import_plans(bundle)
        self.assertIn(f"model {model_id}, which is not registered", caught.exception.message)

    def test_nothing_to_export(self) -> None:
        client = self.start("").client()
        model = client.add_model(TINY + ".onnx")
        with self.assertRaises(psched.NotFoundError) as caught:
            client.export_plans(model)
        self.assertIn("no cached plan of model " + model.id, caught.exception.message)


if __name__ == "__main__":
    unittest.main()
