"""psched.InferenceSession against a real pschedd: one ONNX Runtime script run unchanged but
for its import line, on the paper's and PyTorch-exported models, and ONNX Runtime's errors.

With $PSCHED_ORT_PYTHON naming a python that has onnxruntime (bench/coexec/ort_venv.sh makes
one), the same script also runs under ONNX Runtime and the two outputs are compared.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import unittest

import numpy as np

import psched
from daemon import SOURCE, Daemon, reference

# The script a user has: only its first line changes between ONNX Runtime and psched.
SCRIPT = """\
{import_line}
import sys
import numpy as np

sess = ort.InferenceSession(sys.argv[1])
first = sess.get_inputs()[0]
x = np.load(sys.argv[2])
outputs = sess.run(None, {{first.name: x}})
print(first.name, first.type, len(first.shape), outputs[0].shape, int(np.argmax(outputs[0])))
np.save(sys.argv[3], outputs[0])
"""
PSCHED_IMPORT = "import psched as ort"
ORT_IMPORT = "import onnxruntime as ort"

ONNX_DATA = os.path.join(SOURCE, "tests", "data", "onnx")
# (model, input, PyTorch's output): the paper's squeezenet and models exported by torch.onnx
# (tests/data/onnx/make_models.py): a transformer encoder, a channel shuffle, a small UNet.
MODELS = [(reference("squeezenet_v1_1", ".onnx"), reference("squeezenet_v1_1", ".input.npy"),
           reference("squeezenet_v1_1", ".output.npy"))] + [
    (os.path.join(ONNX_DATA, stem + ".onnx"), os.path.join(ONNX_DATA, stem + ".input.npy"),
     os.path.join(ONNX_DATA, stem + ".output.npy"))
    for stem in ("encoder", "shuffle", "unet_tiny")]


def rel_l2(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.linalg.norm(a.ravel() - b.ravel()) / max(np.linalg.norm(b.ravel()), 1e-30))


class SessionTest(unittest.TestCase):
    daemon: Daemon

    @classmethod
    def setUpClass(cls) -> None:
        cls.daemon = Daemon()

    @classmethod
    def tearDownClass(cls) -> None:
        cls.daemon.close()

    def run_script(self, python: str, import_line: str, model: str, x: str,
                   env: dict[str, str]) -> tuple[str, np.ndarray]:
        with tempfile.TemporaryDirectory() as work:
            script = os.path.join(work, "classify.py")
            with open(script, "w") as f:
                f.write(SCRIPT.format(import_line=import_line))
            out = os.path.join(work, "out.npy")
            done = subprocess.run([python, script, model, x, out], env=env, capture_output=True,
                                  text=True, timeout=300)
            self.assertEqual(done.returncode, 0, done.stderr)
            return done.stdout.strip(), np.load(out)

    def psched_env(self) -> dict[str, str]:
        return dict(os.environ, PSCHED_SOCKET=self.daemon.socket)

    def test_the_script_matches_pytorch(self) -> None:
        for model, x, expected in MODELS:
            with self.subTest(model=os.path.basename(model)):
                printed, got = self.run_script(sys.executable, PSCHED_IMPORT, model, x,
                                               self.psched_env())
                want = np.load(expected)
                self.assertEqual(got.shape, want.shape)
                self.assertLess(rel_l2(got, want), 1e-4)
                self.assertIn("tensor(float)", printed)
                self.assertTrue(printed.endswith(str(int(np.argmax(want)))), printed)

    @unittest.skipUnless(os.environ.get("PSCHED_ORT_PYTHON"), "PSCHED_ORT_PYTHON not set")
    def test_the_script_matches_onnx_runtime(self) -> None:
        ort_python = os.environ["PSCHED_ORT_PYTHON"]
        for model, x, _ in MODELS:
            with self.subTest(model=os.path.basename(model)):
                ort_printed, ort_out = self.run_script(ort_python, ORT_IMPORT, model, x,
                                                       dict(os.environ))
                printed, got = self.run_script(sys.executable, PSCHED_IMPORT, model, x,
                                               self.psched_env())
                error = rel_l2(got, ort_out)
                print(f"{os.path.basename(model)}: rel L2 vs ONNX Runtime {error:.2e}; "
                      f"ORT '{ort_printed}', psched '{printed}'", file=sys.stderr)
                self.assertLess(error, 1e-4)
                self.assertEqual(printed, ort_printed)

    def test_inputs_outputs_and_metadata_read_as_onnx_runtime_reports_them(self) -> None:
        model, _, _ = MODELS[0]
        with psched.InferenceSession(model, socket=self.daemon.socket) as sess:
            (first,) = sess.get_inputs()
            self.assertEqual(first.type, "tensor(float)")
            self.assertEqual(first.shape, [1, 3, 224, 224])
            (out,) = sess.get_outputs()
            self.assertEqual(out.shape, [1, 1000])
            self.assertEqual(sess.get_modelmeta().graph_name, "squeezenet_v1_1")
            # Registering the same bytes again is the same model.
            with psched.InferenceSession(model, socket=self.daemon.socket) as again:
                self.assertEqual(again.model_id, sess.model_id)

    def test_outputs_come_in_the_order_asked(self) -> None:
        model = os.path.join(SOURCE, "tests", "daemon", "data", "tiny_cnn.onnx")
        x = np.load(os.path.join(SOURCE, "tests", "daemon", "data", "tiny_cnn.input.npy"))
        with psched.InferenceSession(model, socket=self.daemon.socket) as sess:
            names = [o.name for o in sess.get_outputs()]
            every = sess.run(None, {sess.get_inputs()[0].name: x})
            self.assertEqual(len(every), len(names))
            picked = sess.run(names[::-1], {sess.get_inputs()[0].name: x})
            for a, b in zip(picked, every[::-1]):
                np.testing.assert_array_equal(a, b)

    def test_bad_feeds_raise_as_onnx_runtime_does(self) -> None:
        model, x_path, _ = MODELS[0]
        x = np.load(x_path)
        with psched.InferenceSession(model, socket=self.daemon.socket,
                                     providers=["CPUExecutionProvider"]) as sess:
            name = sess.get_inputs()[0].name
            with self.assertRaisesRegex(psched.InvalidArgumentError, "Invalid input name: nope"):
                sess.run(None, {name: x, "nope": x})
            with self.assertRaisesRegex(ValueError,
                                        rf"Required inputs \(\['{name}'\]\) are missing"):
                sess.run(None, {})
            with self.assertRaisesRegex(psched.InvalidArgumentError,
                                        rf"Got invalid dimensions for input: {name} for the "
                                        r"following indices\n index: 2 Got: 200 Expected: 224"):
                sess.run(None, {name: np.zeros((1, 3, 200, 224), np.float32)})
            with self.assertRaisesRegex(psched.InvalidArgumentError,
                                        f"Invalid rank for input: {name} Got: 3 Expected: 4"):
                sess.run(None, {name: x[0]})
            with self.assertRaisesRegex(psched.InvalidArgumentError,
                                        r"Unexpected input data type. Actual: \(tensor\(double\)\)"
                                        r" , expected: \(tensor\(float\)\)"):
                sess.run(None, {name: x.astype(np.float64)})
            with self.assertRaisesRegex(psched.InvalidArgumentError,
                                        "Invalid Output Name:no_such_output"):
                sess.run(["no_such_output"], {name: x})
            # After the refusals the session still runs.
            self.assertEqual(sess.run(None, {name: x})[0].shape, (1, 1000))

    def test_a_missing_file_raises_before_any_call(self) -> None:
        with self.assertRaises(FileNotFoundError):
            psched.InferenceSession("/nonexistent/model.onnx", socket=self.daemon.socket)


if __name__ == "__main__":
    unittest.main()
