"""psched.Client.add_model against a real pschedd: models exported with dynamic axes bound by
``input_shapes``, and models whose weights live in external data files inlined from beside
them (and only from there)."""

from __future__ import annotations

import os
import shutil
import tempfile
import unittest

import numpy as np

import psched
from psched import external_data
from daemon import SOURCE, Daemon

try:
    import onnx
except ImportError:  # python3-onnx makes the test models; scripts/install-deps installs it
    onnx = None

DATA = os.path.join(SOURCE, "tests", "daemon", "data")
# A small CNN with PyTorch's output (tests/daemon/make_tiny_model.py), and the same network
# exported with dynamic batch, height and width.
TINY = os.path.join(DATA, "tiny_cnn.onnx")
TINY_DYNAMIC = os.path.join(DATA, "tiny_cnn_dynamic.onnx")
TINY_INPUT = np.load(os.path.join(DATA, "tiny_cnn.input.npy"))
TINY_OUTPUT = np.load(os.path.join(DATA, "tiny_cnn.output.npy"))


class UploadTest(unittest.TestCase):
    daemon: Daemon
    client: psched.Client

    @classmethod
    def setUpClass(cls) -> None:
        cls.daemon = Daemon()
        cls.client = cls.daemon.client()

    @classmethod
    def tearDownClass(cls) -> None:
        cls.client.close()
        cls.daemon.close()

    def setUp(self) -> None:
        self.dir = tempfile.mkdtemp(prefix="psched_upload_")
        self.addCleanup(shutil.rmtree, self.dir)

    def assert_runs_like_pytorch(self, model: object) -> None:
        outputs = self.client.infer(model, TINY_INPUT)  # type: ignore[arg-type]
        np.testing.assert_allclose(outputs["logits"], TINY_OUTPUT, atol=1e-4)


class InputShapesTest(UploadTest):
    def test_unbound_symbolic_dims_are_refused_naming_input_dim_and_binding(self) -> None:
        with self.assertRaises(psched.InvalidArgumentError) as caught:
            self.client.add_model(TINY_DYNAMIC)
        self.assertIn("graph input 'input' dimension 2 'height'", caught.exception.message)
        self.assertIn('input_shapes={"input": (1, 3, <height>, <width>)}',
                      caught.exception.message)

    def test_each_bound_shape_is_a_model_with_its_own_plans(self) -> None:
        small = self.client.add_model(TINY_DYNAMIC, input_shapes={"input": (1, 3, 16, 16)})
        self.assertEqual(list(small.inputs[0].dims), [1, 3, 16, 16])
        self.assertEqual(list(small.outputs[0].dims), [1, 10])
        self.assertEqual([(s.name, list(s.dims)) for s in small.input_shapes],
                         [("input", [1, 3, 16, 16])])
        self.assert_runs_like_pytorch(small)

        large = self.client.add_model(TINY_DYNAMIC, input_shapes={"input": [1, 3, 48, 48]})
        self.assertNotEqual(large.id, small.id)
        self.assertEqual(self.client.add_model(
            TINY_DYNAMIC, input_shapes={"input": np.array([1, 3, 16, 16])}).id, small.id)
        small_plan = self.client.plan(small, "heft")
        large_plan = self.client.plan(large, "heft")
        self.assertFalse(large_plan.cached)
        self.assertEqual(large_plan.model_id, large.id)
        self.assertGreater(large_plan.makespan_us, small_plan.makespan_us)
        outputs = self.client.infer(large, np.zeros((1, 3, 48, 48), np.float32))
        self.assertEqual(outputs["logits"].shape, (1, 10))

    def test_wrong_shapes_are_refused_by_the_daemon(self) -> None:
        cases = {
            "input shape given for 'input' \\[1,3,16\\] has rank 3": {"input": (1, 3, 16)},
            "fixes it at 3": {"input": (1, 4, 16, 16)},
            "no graph input of that name \\(its inputs: input\\)": {"images": (1, 3, 16, 16)},
        }
        for message, shapes in cases.items():
            with self.subTest(shapes=shapes):
                with self.assertRaisesRegex(psched.InvalidArgumentError, message):
                    self.client.add_model(TINY_DYNAMIC, input_shapes=shapes)

    def test_malformed_shapes_are_refused_before_sending(self) -> None:
        with self.assertRaisesRegex(ValueError, r"input_shapes\['input'\] dim 2 is 0"):
            self.client.add_model(TINY_DYNAMIC, input_shapes={"input": (1, 3, 0, 16)})
        with self.assertRaisesRegex(TypeError, "non-empty sequence of ints"):
            self.client.add_model(TINY_DYNAMIC, input_shapes={"input": "1x3x16x16"})
        with self.assertRaisesRegex(TypeError, r"dim 1 is 3.0, not an int"):
            self.client.add_model(TINY_DYNAMIC, input_shapes={"input": (1, 3.0, 16, 16)})


@unittest.skipIf(onnx is None, "python3-onnx is not installed")
class ExternalDataTest(UploadTest):
    def save_external(self, folder: str, location: str = "tiny.onnx.data") -> str:
        """tiny_cnn saved as onnx.save does with external data: every tensor in `location`."""
        os.makedirs(folder, exist_ok=True)
        path = os.path.join(folder, "tiny.onnx")
        onnx.save(onnx.load(TINY), path, save_as_external_data=True,
                  all_tensors_to_one_file=True, location=location, size_threshold=0)
        return path

    def test_external_data_is_inlined_as_onnx_itself_reads_it(self) -> None:
        path = self.save_external(self.dir)
        inlined = external_data.inline_external_data(path)
        self.assertGreater(inlined.tensors_inlined, 0)
        ours = onnx.load_from_string(inlined.data)
        theirs = onnx.load(path)  # onnx's own loader reads the external data
        self.assertEqual(len(ours.graph.initializer), len(theirs.graph.initializer))
        for mine, reference in zip(ours.graph.initializer, theirs.graph.initializer):
            self.assertEqual(mine.name, reference.name)
            self.assertEqual(mine.raw_data, reference.raw_data)
            self.assertEqual(len(mine.external_data), 0)
            self.assertEqual(mine.data_location, onnx.TensorProto.DEFAULT)
        # The inlined model is the model saved self-contained, byte for byte (so it has the
        # same id), and a self-contained model goes as its own bytes.
        with open(TINY, "rb") as f:
            tiny = f.read()
        self.assertEqual(inlined.data, tiny)
        self.assertEqual(external_data.inline_external_data(TINY).data, tiny)

    def test_model_with_external_data_registers_and_runs(self) -> None:
        model = self.client.add_model(self.save_external(self.dir))
        self.assertTrue(model.has_weights)
        self.assert_runs_like_pytorch(model)

    def test_bytes_that_reference_external_data_are_refused_saying_how_to_send_them(self) -> None:
        with open(self.save_external(self.dir), "rb") as f:
            data = f.read()
        with self.assertRaises(psched.InvalidArgumentError) as caught:
            self.client.add_model(data)
        self.assertIn("inline the external data (pschedctl model add / "
                      "psched.Client.add_model do it)", caught.exception.message)

    def test_graph_only_sends_the_graph_without_its_weights(self) -> None:
        model = self.client.add_model(self.save_external(self.dir), graph_only=True)
        self.assertFalse(model.has_weights)

    def test_missing_data_file_says_how_to_register_anyway(self) -> None:
        # Its own location: bytes of their own, not another test's registered model.
        path = self.save_external(self.dir, "missing.data")
        os.remove(os.path.join(self.dir, "missing.data"))
        with self.assertRaisesRegex(FileNotFoundError,
                                    "external data file 'missing.data' of tensor .* is not in"):
            self.client.add_model(path)
        # Synthesized weights need no file.
        self.assertTrue(self.client.add_model(path, synthesize_weights=True).has_weights)

    def test_locations_outside_the_models_folder_are_refused_naming_them(self) -> None:
        secret = os.path.join(self.dir, "secret.bin")
        with open(secret, "wb") as f:
            f.write(b"\0" * 4096)
        cases = {
            "../secret.bin": "climbs out with '..'",
            secret: "is an absolute path",
            "link.bin": "leads out of the folder through a symlink",
        }
        for i, (location, why) in enumerate(cases.items()):
            with self.subTest(location=location):
                folder = os.path.join(self.dir, f"model{i}")
                path = self.save_external(folder, "weights.bin")
                os.symlink(secret, os.path.join(folder, "link.bin"))
                model = onnx.load(path, load_external_data=False)
                for tensor in model.graph.initializer:
                    for entry in tensor.external_data:
                        if entry.key == "location":
                            entry.value = location
                onnx.save(model, path)
                with self.assertRaises(psched.ExternalDataError) as caught:
                    self.client.add_model(path)
                message = str(caught.exception)
                self.assertIn(f"external data location '{location}' of tensor", message)
                self.assertIn(why, message)
                self.assertIn("only from files inside the model's folder", message)

    def test_a_range_beyond_the_file_is_refused(self) -> None:
        path = self.save_external(self.dir)
        with open(os.path.join(self.dir, "tiny.onnx.data"), "r+b") as f:
            f.truncate(100)
        with self.assertRaisesRegex(psched.ExternalDataError, r"reads bytes \[\d+, \d+\) of "
                                    r"'tiny.onnx.data', which has 100 bytes"):
            self.client.add_model(path)

    def test_truncated_model_is_refused_as_not_onnx(self) -> None:
        path = self.save_external(self.dir)
        with open(path, "r+b") as f:
            f.truncate(os.path.getsize(path) // 2)
        with self.assertRaisesRegex(psched.ExternalDataError, "not a valid ONNX model"):
            external_data.inline_external_data(path)


if __name__ == "__main__":
    unittest.main()
