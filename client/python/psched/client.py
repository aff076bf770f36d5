"""psched.Client: pschedd's psched.v1 API over its unix socket, for numpy users.

Each method is one RPC with the client's timeout (60 s unless given); answers are the
psched.v1 protobuf messages (fields documented in proto/psched/v1/*.proto), except
:meth:`Client.infer`, which returns ``{output name: numpy.ndarray}``. Every refusal raises a
:class:`psched.PschedError` subclass carrying the gRPC code and the daemon's message; a
daemon that does not answer raises :class:`psched.UnavailableError` naming the socket.

Thread-safety: a Client may be shared by threads (the gRPC channel and stubs are
thread-safe, and the Client keeps no other state). ``close()`` (or ``with``) releases the
channel; calls after it fail.
"""

from __future__ import annotations

import os
from types import TracebackType
from typing import (
    Any,
    BinaryIO,
    Callable,
    Dict,
    Iterator,
    Mapping,
    Optional,
    Sequence,
    Type,
    TypeVar,
    Union,
)

import grpc
import numpy as np
import numpy.typing as npt

from psched import external_data, tensors
from psched.errors import InternalError, from_rpc_error
from psched.v1 import (
    admin_pb2,
    admin_pb2_grpc,
    inference_pb2,
    inference_pb2_grpc,
    model_pb2,
    model_pb2_grpc,
    plan_pb2,
    plan_pb2_grpc,
)

#: Where pschedd listens when installed (pschedd.socket); ``$PSCHED_SOCKET`` overrides it.
DEFAULT_SOCKET = "/run/pschedd/pschedd.sock"

#: A model: its id (or a unique prefix of at least 8 characters), or a ``Model`` message.
ModelRef = Union[str, model_pb2.Model]
#: An ONNX file's path, or its bytes.
ModelSource = Union[str, "os.PathLike[str]", bytes, bytearray, memoryview]

_Answer = TypeVar("_Answer")

class Outputs(Dict[str, npt.NDArray[np.float32]]):
    """``{output name: float32 array}`` in model order, plus the daemon's timings.

    ``response`` is the InferResponse without its tensors: ``queue_us``, ``execute_us``,
    ``latency_us``, ``executor``, ``scheduler``, ``predicted_makespan_us`` and, when asked
    for, the per-subtask ``trace``.
    """

    def __init__(self, response: inference_pb2.InferResponse) -> None:
        super().__init__((t.name, tensors.decode(t)) for t in response.outputs)
        del response.outputs[:]
        self.response = response


class Client:
    """A connection to one pschedd (see the module docstring)."""

    def __init__(
        self,
        socket: Optional[Union[str, "os.PathLike[str]"]] = None,
        *,
        timeout: float = 60.0,
        chunk_bytes: int = 1 << 20,
    ) -> None:
        """Connects lazily to ``socket`` (default ``$PSCHED_SOCKET``, else DEFAULT_SOCKET).

        ``timeout`` is every call's deadline in seconds (planning a large model with a
        search method may need more); ``chunk_bytes`` the upload chunk size of add_model.
        """
        if socket is None:
            socket = os.environ.get("PSCHED_SOCKET") or DEFAULT_SOCKET
        if timeout <= 0:
            raise ValueError(f"timeout must be positive, got {timeout}")
        if chunk_bytes <= 0:
            raise ValueError(f"chunk_bytes must be positive, got {chunk_bytes}")
        self.socket = os.path.abspath(os.fspath(socket))
        self.timeout = timeout
        self.chunk_bytes = chunk_bytes
        # Outputs and upload chunks are far below this; the limit only bounds a bad answer.
        limit = 64 << 20
        self._channel = grpc.insecure_channel(
            f"unix:{self.socket}",
            options=[
                ("grpc.max_receive_message_length", limit),
                ("grpc.max_send_message_length", limit),
            ],
        )
        self._models = model_pb2_grpc.ModelServiceStub(self._channel)
        self._plans = plan_pb2_grpc.PlanServiceStub(self._channel)
        self._inference = inference_pb2_grpc.InferenceServiceStub(self._channel)
        self._admin = admin_pb2_grpc.AdminServiceStub(self._channel)

    # -- lifetime ---------------------------------------------------------------------

    def close(self) -> None:
        """Closes the channel; calls in flight are cancelled."""
        self._channel.close()

    def __enter__(self) -> "Client":
        return self

    def __exit__(
        self,
        exc_type: Optional[Type[BaseException]],
        exc: Optional[BaseException],
        traceback: Optional[TracebackType],
    ) -> None:
        self.close()

    # -- models -----------------------------------------------------------------------

    def add_model(
        self,
        source: ModelSource,
        *,
        name: Optional[str] = None,
        synthesize_weights: bool = False,
        input_shapes: Optional[Mapping[str, Union[Sequence[int], npt.NDArray[np.integer[Any]]]]] = None,
        graph_only: bool = False,
        timeout: Optional[float] = None,
    ) -> model_pb2.Model:
        """Uploads an ONNX model (a path or its bytes) and returns it as registered.

        The upload streams in ``chunk_bytes`` pieces. A file's external data (initializers
        kept in files beside it) is inlined first, so the daemon gets a self-contained model
        (:mod:`psched.external_data`; a location outside the model's folder raises
        :class:`psched.external_data.ExternalDataError`). The id is the SHA-256 of the bytes
        sent (and of ``input_shapes``, when given), so adding the same model again returns
        the same id and changes nothing. ``name`` defaults to the file's stem (for bytes: the
        ONNX graph name).

        ``input_shapes`` binds the symbolic dimensions of a model exported with dynamic axes,
        e.g. ``{"x": (1, 3, 224, 224)}``; an input given none has a symbolic batch bound to 1.
        ``synthesize_weights`` fills absent weights of a graph-only model with seeded random
        values so it can run; ``graph_only`` sends the file as it is, without its external
        data, to be planned but not run.
        """
        shapes = _input_shapes(input_shapes)
        if isinstance(source, (bytes, bytearray, memoryview)):
            data = memoryview(source).cast("B")
            requests = self._upload(
                self._header(name or "", synthesize_weights, graph_only, shapes, data.nbytes),
                self._chunks_of(data),
            )
            return self._register(requests, timeout)
        path = os.fspath(source)
        if not isinstance(path, str):
            raise TypeError(f"add_model takes a path or bytes, got {type(source).__name__}")
        if name is None:
            name = os.path.splitext(os.path.basename(path))[0]
        if graph_only:
            with open(path, "rb") as file:
                size = os.fstat(file.fileno()).st_size
                header = self._header(name, synthesize_weights, True, shapes, size)
                return self._register(self._upload(header, self._chunks_from(file)), timeout)
        # Weights the daemon synthesizes need no file; those that are there are kept.
        inlined = external_data.inline_external_data(path, allow_missing_files=synthesize_weights)
        model = memoryview(inlined.data)
        header = self._header(name, synthesize_weights, False, shapes, model.nbytes)
        return self._register(self._upload(header, self._chunks_of(model)), timeout)

    def models(self) -> list[model_pb2.Model]:
        """Every registered model, oldest first (without ``inspect_json``)."""
        return list(self._call(
            self._models.ListModels, model_pb2.ListModelsRequest(), model_pb2.ListModelsResponse
        ).models)

    def get_model(self, model: ModelRef) -> model_pb2.Model:
        """One model with its graph summary (``inspect_json``)."""
        request = model_pb2.GetModelRequest(id=_model_id(model))
        return self._call(self._models.GetModel, request, model_pb2.GetModelResponse).model

    def remove_model(self, model: ModelRef) -> model_pb2.RemoveModelResponse:
        """Forgets a model and its cached plans."""
        request = model_pb2.RemoveModelRequest(id=_model_id(model))
        return self._call(self._models.RemoveModel, request, model_pb2.RemoveModelResponse)

    # -- plans and inference -------------------------------------------------------------

    def plan(
        self,
        model: ModelRef,
        scheduler: str = "",
        *,
        options: Optional[Mapping[str, object]] = None,
        refresh: bool = False,
        progress: Optional[Callable[[plan_pb2.PlanProgress], None]] = None,
        timeout: Optional[float] = None,
    ) -> plan_pb2.Plan:
        """The cached plan of ``model`` for ``scheduler``, or a freshly computed one.

        ``scheduler`` is a name as in docs/scheduling.md ("heft", "iterative", ...; empty:
        the daemon's default); ``options`` are scheduler options (values are sent as
        strings, e.g. ``{"seed": 1, "timeout_ms": 500}``) and part of the cache key;
        ``refresh`` recomputes even when cached. ``progress`` is called with every
        PlanProgress while the plan computes; if it raises, the call is cancelled and the
        exception propagates.
        """
        request = plan_pb2.GetPlanRequest(
            model_id=_model_id(model),
            scheduler=scheduler,
            options={str(k): str(v) for k, v in (options or {}).items()},
            refresh=refresh,
        )
        stream = self._plans.GetPlan(request, timeout=self._deadline(timeout))
        return self._last_of(stream, "plan", plan_pb2.Plan, progress, "GetPlan")

    def infer(
        self,
        model: ModelRef,
        inputs: Optional[tensors.Inputs] = None,
        *,
        scheduler: str = "",
        trace: bool = False,
        timeout: Optional[float] = None,
    ) -> Outputs:
        """Runs one inference and returns ``{output name: float32 array}``.

        ``inputs`` maps input names to arrays in the shape the model declares (NCHW for the
        vision models); one array alone feeds a single-input model; None runs on zeros.
        Arrays of any real numeric dtype are sent as float32. ``scheduler`` picks whose
        plan runs (empty: the daemon's default); ``trace`` asks for per-subtask timings in
        ``outputs.response.trace``.
        """
        request = inference_pb2.InferRequest(
            model_id=_model_id(model),
            inputs=[] if inputs is None else tensors.encode_inputs(inputs),
            scheduler=scheduler,
            want_trace=trace,
        )
        response = self._call(self._inference.Infer, request, inference_pb2.InferResponse, timeout)
        return Outputs(response)

    def export_plans(self, model: ModelRef, scheduler: str = "") -> bytes:
        """A plan bundle of ``model``'s cached plans for the daemon's platform (docs/api.md).

        ``scheduler`` keeps only that scheduler's plans (empty: all). NotFoundError when no
        plan is cached.
        """
        request = plan_pb2.ExportPlansRequest(model_id=_model_id(model), scheduler=scheduler)
        return bytes(
            self._call(self._plans.ExportPlans, request, plan_pb2.ExportPlansResponse).bundle
        )

    def import_plans(self, bundle: bytes) -> plan_pb2.ImportPlansResponse:
        """Stores a bundle's plans in the daemon's cache, served from then on (admin role).

        The bundle's calibration is adopted when this board has none of its own (the
        response's `calibration` says what became of it). FailedPreconditionError for another
        platform's bundle, NotFoundError when its model is not registered,
        InvalidArgumentError for a damaged or altered bundle.
        """
        request = plan_pb2.ImportPlansRequest(bundle=bundle)
        return self._call(self._plans.ImportPlans, request, plan_pb2.ImportPlansResponse)

    # -- administration ------------------------------------------------------------------

    def status(self) -> admin_pb2.StatusResponse:
        """Version, uptime, devices, models, queue and cache figures."""
        request = admin_pb2.StatusRequest()
        return self._call(self._admin.Status, request, admin_pb2.StatusResponse)

    def devices(self) -> admin_pb2.DevicesResponse:
        """The platform the daemon plans for: name, fingerprint, predictor, devices."""
        request = admin_pb2.DevicesRequest()
        return self._call(self._admin.Devices, request, admin_pb2.DevicesResponse)

    def cache_stats(self) -> admin_pb2.CacheStatsResponse:
        """Models, plans, database size, hits and misses of the plan cache."""
        return self._call(
            self._admin.CacheStats, admin_pb2.CacheStatsRequest(), admin_pb2.CacheStatsResponse
        )

    def cached_plans(self, model: Optional[ModelRef] = None) -> list[admin_pb2.CachedPlan]:
        """The cached plans (of one model, or all), newest first."""
        request = admin_pb2.ListCachedPlansRequest(
            model_id="" if model is None else _model_id(model)
        )
        return list(self._call(
            self._admin.ListCachedPlans, request, admin_pb2.ListCachedPlansResponse
        ).plans)

    def purge_cache(self, *, include_models: bool = False) -> admin_pb2.PurgeCacheResponse:
        """Deletes every cached plan, and with ``include_models`` every model too."""
        request = admin_pb2.PurgeCacheRequest(include_models=include_models)
        return self._call(self._admin.PurgeCache, request, admin_pb2.PurgeCacheResponse)

    def calibrate(
        self,
        budget_s: float = 0.0,
        *,
        progress: Optional[Callable[[admin_pb2.CalibrationProgress], None]] = None,
    ) -> admin_pb2.CalibrationResult:
        """Times the registered models' ops on every device and plans with the fit.

        ``budget_s`` is the timing budget per device in (0, 15] seconds (0: 3 s);
        ``progress`` is called with each device's CalibrationProgress. The deadline is the
        client timeout plus three devices' budgets. No inference runs meanwhile.
        """
        request = admin_pb2.CalibrateRequest(budget_s=budget_s)
        stream = self._admin.Calibrate(
            request, timeout=self.timeout + 3 * max(budget_s, 3.0)
        )
        return self._last_of(stream, "result", admin_pb2.CalibrationResult, progress, "Calibrate")

    # -- plumbing ---------------------------------------------------------------------

    def _deadline(self, timeout: Optional[float]) -> float:
        return self.timeout if timeout is None else timeout

    def _call(
        self, method: Any, request: Any, returns: Type[_Answer], timeout: Optional[float] = None
    ) -> _Answer:
        """One unary call; ``returns`` is the answer's type (the stubs are untyped)."""
        try:
            answer = method(request, timeout=self._deadline(timeout))
        except grpc.RpcError as error:
            raise from_rpc_error(error, self.socket) from None
        return _checked(answer, returns)

    def _last_of(
        self,
        stream: Any,
        final: str,
        returns: Type[_Answer],
        progress: Optional[Callable[[Any], None]],
        rpc: str,
    ) -> _Answer:
        """Reads a progress-then-result stream: calls ``progress`` per progress event and
        returns the ``final`` field of the last message carrying it."""
        result = None
        try:
            for message in stream:
                if message.HasField("progress"):
                    if progress is not None:
                        progress(message.progress)
                elif message.HasField(final):
                    result = getattr(message, final)
        except grpc.RpcError as error:
            raise from_rpc_error(error, self.socket) from None
        except BaseException:
            stream.cancel()
            raise
        if result is None:
            raise InternalError(f"the {rpc} stream ended without a {final}")
        return _checked(result, returns)

    def _register(
        self, requests: Iterator[model_pb2.RegisterModelRequest], timeout: Optional[float]
    ) -> model_pb2.Model:
        response = self._call(
            self._models.RegisterModel, requests, model_pb2.RegisterModelResponse, timeout
        )
        return response.model

    @staticmethod
    def _header(
        name: str,
        synthesize_weights: bool,
        graph_only: bool,
        input_shapes: list[model_pb2.InputShape],
        total_bytes: int,
    ) -> model_pb2.ModelHeader:
        return model_pb2.ModelHeader(
            name=name,
            synthesize_weights=synthesize_weights,
            graph_only=graph_only,
            input_shapes=input_shapes,
            total_bytes=total_bytes,
        )

    @staticmethod
    def _upload(
        header: model_pb2.ModelHeader, chunks: Iterator[bytes]
    ) -> Iterator[model_pb2.RegisterModelRequest]:
        yield model_pb2.RegisterModelRequest(header=header)
        for chunk in chunks:
            yield model_pb2.RegisterModelRequest(chunk=chunk)

    def _chunks_of(self, data: memoryview) -> Iterator[bytes]:
        for offset in range(0, data.nbytes, self.chunk_bytes):
            yield data[offset : offset + self.chunk_bytes].tobytes()

    def _chunks_from(self, file: BinaryIO) -> Iterator[bytes]:
        while chunk := file.read(self.chunk_bytes):
            yield chunk


def _checked(answer: object, returns: Type[_Answer]) -> _Answer:
    if not isinstance(answer, returns):
        raise InternalError(f"expected a {returns.__name__} answer, got {type(answer).__name__}")
    return answer


def _input_shapes(
    shapes: Optional[Mapping[str, Union[Sequence[int], npt.NDArray[np.integer[Any]]]]]
) -> list[model_pb2.InputShape]:
    """``{"x": (1, 3, 224, 224)}`` as InputShape messages; ValueError / TypeError naming the
    input for anything but a non-empty sequence (or 1-D integer array) of ints >= 1 per name."""
    out = []
    for input_name, dims in (shapes or {}).items():
        if not isinstance(input_name, str) or not input_name:
            raise TypeError(f"input_shapes keys are input names (non-empty str), got {input_name!r}")
        if isinstance(dims, np.ndarray):
            dims = dims.tolist()
        if isinstance(dims, (str, bytes)) or not isinstance(dims, Sequence) or not dims:
            raise TypeError(
                f"input_shapes[{input_name!r}] must be a non-empty sequence of ints, got {dims!r}")
        for i, d in enumerate(dims):
            if isinstance(d, bool) or not isinstance(d, (int, np.integer)):
                raise TypeError(f"input_shapes[{input_name!r}] dim {i} is {d!r}, not an int")
            if d < 1:
                raise ValueError(f"input_shapes[{input_name!r}] dim {i} is {d}; dims are sizes >= 1")
        out.append(model_pb2.InputShape(name=input_name, dims=[int(d) for d in dims]))
    return out


def _model_id(model: ModelRef) -> str:
    if isinstance(model, model_pb2.Model):
        return model.id
    if isinstance(model, str):
        return model
    raise TypeError(f"a model is an id (str) or a psched.v1.Model, got {type(model).__name__}")
