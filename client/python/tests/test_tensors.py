"""psched.tensors: numpy arrays to and from the wire tensor, without a daemon."""

import struct
import unittest

import numpy as np

import psched
from psched import tensors
from psched.v1 import tensor_pb2


class EncodeTest(unittest.TestCase):
    def test_float32_is_sent_little_endian_row_major_with_its_shape(self) -> None:
        x = np.arange(6, dtype=np.float32).reshape(2, 3)
        t = tensors.encode("x", x)
        self.assertEqual(t.name, "x")
        self.assertEqual(list(t.dims), [2, 3])
        self.assertEqual(t.data, struct.pack("<6f", 0, 1, 2, 3, 4, 5))

    def test_other_numeric_dtypes_and_layouts_convert_by_value(self) -> None:
        # Big-endian float64, Fortran order, a strided view and ints all arrive as values.
        base = np.arange(12, dtype=">f8").reshape(3, 4)
        for value in (base, np.asfortranarray(base), base[:, ::2], base.astype(np.int16),
                      base.astype(np.uint8), base.tolist()):
            want = np.asarray(value, dtype=np.float32)
            t = tensors.encode("in", value)
            self.assertEqual(list(t.dims), list(want.shape))
            np.testing.assert_array_equal(np.frombuffer(t.data, "<f4").reshape(want.shape), want)

    def test_non_numeric_dtypes_are_refused_naming_the_input(self) -> None:
        for bad in (np.zeros(3, np.complex64), np.array([True]), np.array(["a"]),
                    np.array([object()]), np.zeros(2, "datetime64[s]")):
            with self.assertRaisesRegex(TypeError, r"input 'img' has dtype .*float32"):
                tensors.encode("img", bad)

    def test_a_mapping_gives_named_tensors_and_an_array_one_unnamed(self) -> None:
        a, b = np.ones((1, 2), np.float32), np.zeros((3,), np.float32)
        named = tensors.encode_inputs({"a": a, "b": b})
        self.assertEqual([(t.name, list(t.dims)) for t in named], [("a", [1, 2]), ("b", [3])])
        single = tensors.encode_inputs(a)
        self.assertEqual([(t.name, list(t.dims)) for t in single], [("", [1, 2])])
        with self.assertRaisesRegex(TypeError, "input names must be str"):
            tensors.encode_inputs({1: a})


class DecodeTest(unittest.TestCase):
    def test_round_trip_gives_a_writable_native_float32_array(self) -> None:
        x = np.random.default_rng(3).standard_normal((1, 4, 5)).astype(np.float32)
        y = tensors.decode(tensors.encode("y", x))
        np.testing.assert_array_equal(y, x)
        self.assertEqual(y.dtype, np.float32)
        self.assertTrue(y.flags.writeable)
        y[0, 0, 0] = 7  # must not raise

    def test_data_of_the_wrong_size_is_an_internal_error_naming_the_output(self) -> None:
        t = tensor_pb2.Tensor(name="logits", dims=[1, 10], data=b"\0" * 36)
        with self.assertRaises(psched.InternalError) as caught:
            tensors.decode(t)
        self.assertIn("output 'logits' has 36 bytes of data for dims [1, 10] (40 expected)",
                      caught.exception.message)
        with self.assertRaisesRegex(psched.InternalError, "negative dims"):
            tensors.decode(tensor_pb2.Tensor(name="z", dims=[-1, 2], data=b""))


class ErrorTest(unittest.TestCase):
    def test_every_class_carries_its_code_and_the_message(self) -> None:
        import grpc
        from psched.errors import error_for

        for code in grpc.StatusCode:
            if code == grpc.StatusCode.OK:
                continue
            error = error_for(code, "what, where, why")
            self.assertIsInstance(error, psched.PschedError)
            self.assertEqual(error.code, code)
            self.assertEqual(error.message, "what, where, why")
            self.assertEqual(str(error), f"{code.name}: what, where, why")
        self.assertIs(type(error_for(grpc.StatusCode.NOT_FOUND, "")), psched.NotFoundError)
        self.assertIs(type(error_for(grpc.StatusCode.ABORTED, "")), psched.PschedError)


if __name__ == "__main__":
    unittest.main()
