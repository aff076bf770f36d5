"""Exceptions of the psched client: one class per gRPC status code pschedd answers with.

Every call of :class:`psched.Client` that pschedd (or gRPC on its behalf) refuses raises a
:class:`PschedError` subclass carrying the status ``code`` and the daemon's ``message``
(what, where, why: the same text ``pschedctl`` prints). Catch ``PschedError`` for all of
them, or one subclass (``NotFoundError``, ``InvalidArgumentError``, ...) for one case.
"""

from __future__ import annotations

from typing import Any, Dict, Optional, Type

import grpc


class PschedError(Exception):
    """A call pschedd refused, could not complete, or that never reached it."""

    #: The gRPC status code this class stands for (the base class: any code).
    CODE: grpc.StatusCode = grpc.StatusCode.UNKNOWN

    def __init__(self, message: str, code: Optional[grpc.StatusCode] = None) -> None:
        if code is None:
            code = self.CODE
        super().__init__(f"{code.name}: {message}")
        #: The gRPC status code, e.g. ``grpc.StatusCode.NOT_FOUND``.
        self.code = code
        #: The daemon's message (for UNAVAILABLE, which socket did not answer and why).
        self.message = message


class CancelledError(PschedError):
    """The call was cancelled (by this client, or the daemon abandoned it)."""

    CODE = grpc.StatusCode.CANCELLED


class InvalidArgumentError(PschedError):
    """Bad input: not an ONNX model, unknown scheduler or option, wrong tensors, bad id."""

    CODE = grpc.StatusCode.INVALID_ARGUMENT


class DeadlineExceededError(PschedError):
    """The call's timeout passed while it was planned, queued or run."""

    CODE = grpc.StatusCode.DEADLINE_EXCEEDED


class NotFoundError(PschedError):
    """No registered model has that id."""

    CODE = grpc.StatusCode.NOT_FOUND


class PermissionDeniedError(PschedError):
    """The daemon does not let this caller make the call."""

    CODE = grpc.StatusCode.PERMISSION_DENIED


class ResourceExhaustedError(PschedError):
    """Upload over ``max_model_bytes``, inference queue full, or the cache's disk full."""

    CODE = grpc.StatusCode.RESOURCE_EXHAUSTED


class FailedPreconditionError(PschedError):
    """The model has no weights to run, or calibration has no registered model."""

    CODE = grpc.StatusCode.FAILED_PRECONDITION


class UnimplementedError(PschedError):
    """The daemon cannot do this on its platform (calibrating a simulated one)."""

    CODE = grpc.StatusCode.UNIMPLEMENTED


class InternalError(PschedError):
    """An unexpected failure inside the daemon, or an answer this client cannot read."""

    CODE = grpc.StatusCode.INTERNAL


class UnavailableError(PschedError):
    """No pschedd answers on the socket, or it is shutting down."""

    CODE = grpc.StatusCode.UNAVAILABLE


class DataLossError(PschedError):
    """A stored model no longer hashes to its id, or the cache database is damaged."""

    CODE = grpc.StatusCode.DATA_LOSS


class UnauthenticatedError(PschedError):
    """The daemon could not tell who is calling."""

    CODE = grpc.StatusCode.UNAUTHENTICATED


_BY_CODE: Dict[grpc.StatusCode, Type[PschedError]] = {
    cls.CODE: cls
    for cls in (
        CancelledError,
        InvalidArgumentError,
        DeadlineExceededError,
        NotFoundError,
        PermissionDeniedError,
        ResourceExhaustedError,
        FailedPreconditionError,
        UnimplementedError,
        InternalError,
        UnavailableError,
        DataLossError,
        UnauthenticatedError,
    )
}


def error_for(code: grpc.StatusCode, message: str) -> PschedError:
    """The exception for ``code``: its subclass, or ``PschedError`` for other codes."""
    return _BY_CODE.get(code, PschedError)(message, code)


def from_rpc_error(error: Any, socket: str) -> PschedError:
    """Converts a ``grpc.RpcError`` of a call on ``socket`` into its ``PschedError``."""
    code = error.code()
    details = error.details() or ""
    if code == grpc.StatusCode.UNAVAILABLE:
        # As the C++ client and pschedctl say it: the usual cause is no daemon on the socket.
        details = f"no pschedd answers on {socket} (is it running? {details})"
    return error_for(code, details)
