"""numpy arrays to and from ``psched.v1.Tensor`` (docs/api.md, "Tensors").

pschedd exchanges named float32 tensors: row-major little-endian bytes in the shape the model
declares (NCHW for the vision models). Inputs of any real numeric dtype are converted to
float32; anything else (complex, bool, strings, objects) is refused here with a TypeError
naming the input, before a request is sent. Shapes are sent as given and checked by the
daemon, whose INVALID_ARGUMENT names the input and the declared shape.
"""

from __future__ import annotations

import math
from typing import List, Mapping, Union

import numpy as np
import numpy.typing as npt

from psched.errors import InternalError
from psched.v1 import tensor_pb2

#: One array, or anything ``numpy.asarray`` turns into one.
ArrayLike = npt.ArrayLike
#: ``{input name: array}``, or a single array for a model with a single input.
Inputs = Union[Mapping[str, ArrayLike], ArrayLike]

_WIRE_DTYPE = np.dtype("<f4")
# Kinds that convert to float32 by value: floats, signed and unsigned integers.
_NUMERIC_KINDS = "fiu"


def encode(name: str, value: ArrayLike) -> tensor_pb2.Tensor:
    """The wire tensor for input ``name`` (``""``: the model's only input)."""
    array = np.asarray(value)
    if array.dtype.kind not in _NUMERIC_KINDS:
        label = f"input '{name}'" if name else "the input"
        raise TypeError(
            f"{label} has dtype {array.dtype}; pschedd takes float32 tensors "
            "(floating or integer arrays are converted)"
        )
    data = np.ascontiguousarray(array, dtype=_WIRE_DTYPE).tobytes()
    return tensor_pb2.Tensor(name=name, dims=list(array.shape), data=data)


def encode_inputs(inputs: Inputs) -> List[tensor_pb2.Tensor]:
    """Wire tensors for ``inputs``: a mapping by input name, or one unnamed array."""
    if isinstance(inputs, Mapping):
        tensors = []
        for name, value in inputs.items():
            if not isinstance(name, str):
                raise TypeError(f"input names must be str, got {type(name).__name__} {name!r}")
            tensors.append(encode(name, value))
        return tensors
    return [encode("", inputs)]


def decode(tensor: tensor_pb2.Tensor) -> npt.NDArray[np.float32]:
    """The writable float32 array (native byte order) of a tensor pschedd sent."""
    dims = [int(d) for d in tensor.dims]
    if any(d < 0 for d in dims):
        raise InternalError(f"output '{tensor.name}' has negative dims {dims}")
    expected = 4 * math.prod(dims)
    if len(tensor.data) != expected:
        raise InternalError(
            f"output '{tensor.name}' has {len(tensor.data)} bytes of data for dims {dims} "
            f"({expected} expected)"
        )
    return np.frombuffer(tensor.data, dtype=_WIRE_DTYPE).astype(np.float32).reshape(dims)
