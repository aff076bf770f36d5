"""psched.InferenceSession: ONNX Runtime's session interface over pschedd.

Code written for ``onnxruntime.InferenceSession`` runs against pschedd after changing the
import and the class::

    import psched as ort                 # was: import onnxruntime as ort
    sess = ort.InferenceSession("resnet18.onnx")
    name = sess.get_inputs()[0].name
    (logits,) = sess.run(None, {name: image})

The session registers the model with pschedd (registering the same bytes again is free:
the id is their SHA-256) and runs each ``run`` as one Infer on the daemon's default plan
(or ``scheduler``'s). Only the basics are offered: no OrtValue, IO binding or run options.
Inputs are checked as ONNX Runtime checks them, before anything is sent: an unknown name,
a missing input, a wrong rank, dimension or element type raises
:class:`psched.InvalidArgumentError` (missing inputs: ``ValueError``, as ONNX Runtime does)
with ONNX Runtime's wording.

Thread-safety: ``run`` may be called from several threads at once (one Client underneath).
"""

from __future__ import annotations

import logging
from typing import Any, List, Mapping, Optional, Sequence, Union

import numpy as np
import numpy.typing as npt

from psched.client import Client, ModelSource
from psched.errors import InvalidArgumentError
from psched.v1 import model_pb2, tensor_pb2

_log = logging.getLogger("psched")
_providers_noted = False

#: The one element type pschedd runs, named as ONNX Runtime names it.
FLOAT_TYPE = "tensor(float)"


class NodeArg:
    """An input or output as ``get_inputs()``/``get_outputs()`` describe it."""

    def __init__(self, info: tensor_pb2.TensorInfo) -> None:
        self.name: str = info.name
        self.shape: List[Union[int, str, None]] = list(info.dims)
        self.type: str = FLOAT_TYPE

    def __repr__(self) -> str:
        return f"NodeArg(name='{self.name}', type='{self.type}', shape={self.shape})"


class ModelMetadata:
    """What ``get_modelmeta()`` returns; pschedd keeps the graph name and nothing else."""

    def __init__(self, model: model_pb2.Model) -> None:
        self.graph_name: str = model.name
        self.producer_name: str = ""
        self.domain: str = ""
        self.description: str = ""
        self.graph_description: str = ""
        self.version: int = 0
        self.custom_metadata_map: dict[str, str] = {}


class InferenceSession:
    """A registered model run through pschedd, with ONNX Runtime's session methods."""

    def __init__(
        self,
        path_or_bytes: ModelSource,
        sess_options: Any = None,
        providers: Optional[Sequence[Any]] = None,
        provider_options: Optional[Sequence[Any]] = None,
        *,
        socket: Optional[str] = None,
        scheduler: str = "",
        input_shapes: Optional[Mapping[str, Sequence[int]]] = None,
        timeout: Optional[float] = None,
    ) -> None:
        """Registers the model (a path or its bytes) with the pschedd on ``socket``.

        ``sess_options``, ``providers`` and ``provider_options`` are accepted for
        compatibility and not used: pschedd places the work on its devices (a notice is
        logged once). ``scheduler`` picks whose plan runs (empty: the daemon's default);
        ``input_shapes`` binds symbolic dimensions as :meth:`Client.add_model` does.
        """
        global _providers_noted
        if (providers or provider_options) and not _providers_noted:
            _providers_noted = True
            _log.warning("psched.InferenceSession ignores providers: pschedd places the work "
                         "on its own devices")
        kwargs: dict[str, Any] = {}
        if timeout is not None:
            kwargs["timeout"] = timeout
        self._client = Client(socket, **kwargs)
        self._scheduler = scheduler
        self._model = self._client.add_model(path_or_bytes, input_shapes=input_shapes)
        self._inputs = [NodeArg(i) for i in self._model.inputs]
        self._outputs = [NodeArg(o) for o in self._model.outputs]

    @property
    def model_id(self) -> str:
        """pschedd's id of the model (hex SHA-256)."""
        return self._model.id

    def get_inputs(self) -> List[NodeArg]:
        return list(self._inputs)

    def get_outputs(self) -> List[NodeArg]:
        return list(self._outputs)

    def get_overridable_initializers(self) -> List[NodeArg]:
        return []

    def get_modelmeta(self) -> ModelMetadata:
        return ModelMetadata(self._model)

    def get_providers(self) -> List[str]:
        return ["PschedExecutionProvider"]

    def run(
        self,
        output_names: Optional[Sequence[str]],
        input_feed: Mapping[str, Any],
        run_options: Any = None,
    ) -> List[npt.NDArray[np.float32]]:
        """Runs once; the outputs named (all, in model order, for None) as float32 arrays."""
        wanted = [o.name for o in self._outputs] if not output_names else list(output_names)
        known_outputs = {o.name for o in self._outputs}
        for name in wanted:
            if name not in known_outputs:
                raise InvalidArgumentError(f"Invalid Output Name:{name}")
        feed = self._checked_feed(input_feed)
        outputs = self._client.infer(self._model, feed, scheduler=self._scheduler)
        return [outputs[name] for name in wanted]

    def close(self) -> None:
        self._client.close()

    def __enter__(self) -> "InferenceSession":
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def _checked_feed(self, input_feed: Mapping[str, Any]) -> dict[str, npt.NDArray[np.float32]]:
        declared = {i.name: i for i in self._inputs}
        missing = [name for name in declared if name not in input_feed]
        if missing:
            raise ValueError(f"Required inputs ({missing}) are missing from input feed "
                             f"({list(input_feed)}).")
        feed: dict[str, npt.NDArray[np.float32]] = {}
        for name, value in input_feed.items():
            arg = declared.get(name)
            if arg is None:
                raise InvalidArgumentError(f"Invalid input name: {name}")
            array = np.asarray(value)
            if array.dtype != np.float32:
                raise InvalidArgumentError(
                    f"Unexpected input data type. Actual: ({_onnx_type(array.dtype)}) , "
                    f"expected: ({FLOAT_TYPE})")
            if array.ndim != len(arg.shape):
                raise InvalidArgumentError(
                    f"Invalid rank for input: {name} Got: {array.ndim} Expected: "
                    f"{len(arg.shape)} Please fix either the inputs or the model.")
            wrong = [(i, got, int(want))
                     for i, (got, want) in enumerate(zip(array.shape, arg.shape))
                     if isinstance(want, int) and want > 0 and got != want]
            if wrong:
                lines = "".join(f" index: {i} Got: {got} Expected: {want}\n"
                                for i, got, want in wrong)
                raise InvalidArgumentError(
                    f"Got invalid dimensions for input: {name} for the following indices\n"
                    f"{lines} Please fix either the inputs/outputs or the model.")
            feed[name] = array
        return feed


_ONNX_TYPES = {
    "float32": "float", "float64": "double", "float16": "float16", "int8": "int8",
    "int16": "int16", "int32": "int32", "int64": "int64", "uint8": "uint8", "uint16": "uint16",
    "uint32": "uint32", "uint64": "uint64", "bool": "bool",
}


def _onnx_type(dtype: np.dtype[Any]) -> str:
    return f"tensor({_ONNX_TYPES.get(dtype.name, dtype.name)})"

