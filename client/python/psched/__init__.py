"""psched: the Python client of pschedd, the partition-aware inference daemon.

    import numpy as np, psched
    client = psched.Client()                     # /run/pschedd/pschedd.sock or $PSCHED_SOCKET
    model = client.add_model("squeezenet_v1_1.onnx")
    outputs = client.infer(model, {"input": np.zeros((1, 3, 224, 224), np.float32)})

or, for code written against ONNX Runtime, ``psched.InferenceSession(path)`` with
``get_inputs()`` and ``run(None, {name: array})``.

See docs/python.md. The psched.v1 protobuf modules (``psched.v1.model_pb2``, ...) are
generated from proto/psched/v1 when the package is built.
"""

from psched._version import __version__
from psched.client import DEFAULT_SOCKET, Client, ModelRef, ModelSource, Outputs
from psched.errors import (
    CancelledError,
    DataLossError,
    DeadlineExceededError,
    FailedPreconditionError,
    InternalError,
    InvalidArgumentError,
    NotFoundError,
    PermissionDeniedError,
    PschedError,
    ResourceExhaustedError,
    UnauthenticatedError,
    UnavailableError,
    UnimplementedError,
)
from psched.external_data import ExternalDataError
from psched.session import InferenceSession, ModelMetadata, NodeArg

__all__ = [
    "__version__",
    "DEFAULT_SOCKET",
    "Client",
    "ModelRef",
    "ModelSource",
    "Outputs",
    "ExternalDataError",
    "InferenceSession",
    "ModelMetadata",
    "NodeArg",
    "CancelledError",
    "DataLossError",
    "DeadlineExceededError",
    "FailedPreconditionError",
    "InternalError",
    "InvalidArgumentError",
    "NotFoundError",
    "PermissionDeniedError",
    "PschedError",
    "ResourceExhaustedError",
    "UnauthenticatedError",
    "UnavailableError",
    "UnimplementedError",
]
