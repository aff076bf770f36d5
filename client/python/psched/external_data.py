"""ONNX external data inlined from files beside a model, so that an upload is self-contained.

An exporter may keep initializers outside the model file (``torch.onnx.export`` beyond 2 GB,
``onnx.save(..., save_as_external_data=True)``): such a TensorProto has ``data_location``
EXTERNAL and ``external_data`` entries ``location`` (a path relative to the model's folder),
``offset`` and ``length`` (length absent: to the end of the file). pschedd receives only the
model's bytes, so :func:`inline_external_data` reads that data into ``raw_data`` and drops the
references, as ``pschedctl model add`` does.

It works on the protobuf wire format of the few fields involved (ModelProto.graph,
GraphProto.initializer, TensorProto.raw_data / external_data / data_location), copying every
other field byte for byte, so it needs no ONNX package and never decodes the weights.

Only files inside the model's folder are read: a location that is absolute, contains a
``..`` component or leads out of the folder through a symlink raises
:class:`ExternalDataError` naming it and the tensor.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Dict, Iterator, List, Optional, Tuple

# What one protobuf, and so one ONNX model, can hold: 2 GiB - 1.
MAX_MODEL_BYTES = (1 << 31) - 1

# Field numbers of onnx.proto.
_MODEL_GRAPH = 7
_GRAPH_INITIALIZER = 5
_TENSOR_NAME = 8
_TENSOR_RAW_DATA = 9
_TENSOR_EXTERNAL_DATA = 13
_TENSOR_DATA_LOCATION = 14
_ENTRY_KEY = 1
_ENTRY_VALUE = 2
_EXTERNAL = 1  # TensorProto.DataLocation.EXTERNAL

_VARINT, _FIXED64, _LENGTH_DELIMITED, _FIXED32 = 0, 1, 2, 5


class ExternalDataError(ValueError):
    """The model's external data cannot be inlined; the message says which tensor and why."""


@dataclass
class InlinedModel:
    """What :func:`inline_external_data` made of a model file."""

    #: The bytes to send: the file's own when nothing was external.
    data: bytes
    #: Initializers whose data was read from external files, and how many bytes that was.
    tensors_inlined: int = 0
    external_bytes: int = 0
    #: Names of initializers left external because their file is absent (allow_missing_files).
    tensors_missing: List[str] = field(default_factory=list)


@dataclass
class _Field:
    number: int
    wire_type: int
    start: int  # of the tag
    value_start: int  # of the payload (after the length for length-delimited fields)
    end: int


def _varint(data: memoryview, pos: int, end: int) -> Tuple[int, int]:
    value, shift = 0, 0
    while True:
        if pos >= end or shift > 63:
            raise ExternalDataError("not a valid ONNX model: truncated or overlong varint")
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, pos
        shift += 7


def _fields(data: memoryview, start: int, end: int) -> Iterator[_Field]:
    pos = start
    while pos < end:
        tag, value_start = _varint(data, pos, end)
        number, wire_type = tag >> 3, tag & 7
        if wire_type == _VARINT:
            _, field_end = _varint(data, value_start, end)
        elif wire_type == _FIXED64:
            field_end = value_start + 8
        elif wire_type == _FIXED32:
            field_end = value_start + 4
        elif wire_type == _LENGTH_DELIMITED:
            length, value_start = _varint(data, value_start, end)
            field_end = value_start + length
        else:
            raise ExternalDataError(f"not a valid ONNX model: wire type {wire_type} at byte {pos}")
        if number == 0 or field_end > end:
            raise ExternalDataError(f"not a valid ONNX model: bad field at byte {pos}")
        yield _Field(number, wire_type, pos, value_start, field_end)
        pos = field_end


def _encode_varint(value: int) -> bytes:
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _length_delimited(number: int, payload_size: int) -> bytes:
    """The tag and length of a length-delimited field; the payload follows."""
    return _encode_varint(number << 3 | _LENGTH_DELIMITED) + _encode_varint(payload_size)


@dataclass
class _ExternalTensor:
    name: str
    location: str
    offset: int
    length: Optional[int]


def _text(data: memoryview, f: _Field) -> str:
    return bytes(data[f.value_start:f.end]).decode("utf-8", errors="replace")


def _external_tensor(data: memoryview, tensor: _Field) -> Optional[_ExternalTensor]:
    """The tensor's external reference, or None for a tensor stored inline."""
    name, location, offset, length, external = "", "", 0, None, False
    for f in _fields(data, tensor.value_start, tensor.end):
        if f.number == _TENSOR_NAME and f.wire_type == _LENGTH_DELIMITED:
            name = _text(data, f)
        elif f.number == _TENSOR_DATA_LOCATION and f.wire_type == _VARINT:
            external = _varint(data, f.value_start, f.end)[0] == _EXTERNAL
        elif f.number == _TENSOR_EXTERNAL_DATA and f.wire_type == _LENGTH_DELIMITED:
            key = value = ""
            for entry in _fields(data, f.value_start, f.end):
                if entry.number == _ENTRY_KEY and entry.wire_type == _LENGTH_DELIMITED:
                    key = _text(data, entry)
                elif entry.number == _ENTRY_VALUE and entry.wire_type == _LENGTH_DELIMITED:
                    value = _text(data, entry)
            if key == "location":
                location = value
            elif key in ("offset", "length"):
                if not value.isdigit() or not value.isascii():
                    raise ExternalDataError(
                        f"tensor '{name}': external_data {key} '{value}' is not a byte count")
                if key == "offset":
                    offset = int(value)
                else:
                    length = int(value)
    if not external:
        return None
    if not location:
        raise ExternalDataError(
            f"tensor '{name}' is stored externally but its external_data names no location")
    return _ExternalTensor(name, location, offset, length)


def _resolve_inside(tensor: _ExternalTensor, folder: str) -> Optional[str]:
    """The file the tensor's location names, checked to lie inside `folder` (a real path);
    None when it does not exist."""

    def outside(why: str) -> ExternalDataError:
        return ExternalDataError(
            f"external data location '{tensor.location}' of tensor '{tensor.name}' {why}; "
            f"psched reads external data only from files inside the model's folder {folder}")

    if os.path.isabs(tensor.location):
        raise outside("is an absolute path")
    if ".." in tensor.location.replace("\\", "/").split("/"):
        raise outside("climbs out with '..'")
    real = os.path.realpath(os.path.join(folder, tensor.location))
    if not os.path.exists(real):
        return None  # missing, or a dangling symlink: nothing is read either way
    if os.path.commonpath([real, folder]) != folder:
        raise outside(f"leads out of the folder through a symlink, to {real}")
    if not os.path.isfile(real):
        raise ExternalDataError(
            f"external data location '{tensor.location}' of tensor '{tensor.name}' "
            "is not a regular file")
    return real


def _read_range(tensor: _ExternalTensor, path: str, budget: int) -> bytes:
    size = os.path.getsize(path)
    length = tensor.length if tensor.length is not None else size - tensor.offset
    if tensor.offset > size or length < 0 or length > size - tensor.offset:
        end = tensor.offset + tensor.length if tensor.length is not None else "end"
        raise ExternalDataError(
            f"tensor '{tensor.name}' reads bytes [{tensor.offset}, {end}) of "
            f"'{tensor.location}', which has {size} bytes")
    if length > budget:
        raise _too_large(f"at tensor '{tensor.name}'")
    with open(path, "rb") as file:
        file.seek(tensor.offset)
        data = file.read(length)
    if len(data) != length:
        raise ExternalDataError(f"'{path}' ended while reading tensor '{tensor.name}'")
    return data


def _too_large(where: str) -> ExternalDataError:
    return ExternalDataError(
        f"with its external data inlined the model would be more than {MAX_MODEL_BYTES} bytes "
        f"(2 GiB - 1), the most one ONNX protobuf holds; psched cannot take it ({where})")


def _inlined_tensor(data: memoryview, tensor: _Field, raw: bytes) -> bytes:
    """The TensorProto without its external reference and with `raw` as raw_data."""
    kept = [bytes(data[f.start:f.end]) for f in _fields(data, tensor.value_start, tensor.end)
            if f.number not in (_TENSOR_EXTERNAL_DATA, _TENSOR_DATA_LOCATION, _TENSOR_RAW_DATA)]
    return b"".join(kept) + _length_delimited(_TENSOR_RAW_DATA, len(raw)) + raw


def inline_external_data(path: str, *, allow_missing_files: bool = False) -> InlinedModel:
    """Reads the ONNX model at `path` with its initializers' external data inlined.

    ``allow_missing_files`` leaves a tensor whose file is absent as it is (a model whose
    missing weights the daemon synthesizes); otherwise that is :class:`FileNotFoundError`
    naming the file. Raises :class:`ExternalDataError` for a model that is not ONNX, a bad
    external_data entry, a location outside the folder, a range beyond a file's end, or an
    inlined model of more than 2 GiB - 1.
    """
    with open(path, "rb") as file:
        original = file.read()
    if len(original) > MAX_MODEL_BYTES:
        raise _too_large(f"the file alone is {len(original)} bytes")
    data = memoryview(original)
    folder = os.path.realpath(os.path.dirname(os.path.abspath(path)))
    result = InlinedModel(original)
    budget = MAX_MODEL_BYTES - len(original)

    # First the data each external initializer needs, by the initializer's position: a model
    # with none is sent as it is, without a copy.
    raw_by_tensor: Dict[int, bytes] = {}
    graphs = [f for f in _fields(data, 0, len(data))
              if f.number == _MODEL_GRAPH and f.wire_type == _LENGTH_DELIMITED]
    for graph in graphs:
        for tensor_field in _initializers(data, graph):
            tensor = _external_tensor(data, tensor_field)
            if tensor is None:
                continue
            real = _resolve_inside(tensor, folder)
            if real is None:
                if not allow_missing_files:
                    raise FileNotFoundError(
                        f"external data file '{tensor.location}' of tensor '{tensor.name}' is "
                        f"not in {folder}; copy it beside the model, or register the graph "
                        "alone for planning (graph_only=True) or with synthetic weights "
                        "(synthesize_weights=True)")
                result.tensors_missing.append(tensor.name)
                continue
            raw = _read_range(tensor, real, budget)
            budget -= len(raw)
            raw_by_tensor[tensor_field.start] = raw
            result.tensors_inlined += 1
            result.external_bytes += len(raw)
    if not raw_by_tensor:
        return result

    model_parts: List[bytes] = []
    for model_field in _fields(data, 0, len(data)):
        if model_field not in graphs:
            model_parts.append(bytes(data[model_field.start:model_field.end]))
            continue
        graph_parts: List[bytes] = []
        for graph_field in _fields(data, model_field.value_start, model_field.end):
            raw = raw_by_tensor.get(graph_field.start)
            if raw is None:
                graph_parts.append(bytes(data[graph_field.start:graph_field.end]))
            else:
                payload = _inlined_tensor(data, graph_field, raw)
                graph_parts.append(_length_delimited(_GRAPH_INITIALIZER, len(payload)) + payload)
        graph_bytes = b"".join(graph_parts)
        model_parts.append(_length_delimited(_MODEL_GRAPH, len(graph_bytes)) + graph_bytes)
    result.data = b"".join(model_parts)
    if len(result.data) > MAX_MODEL_BYTES:
        raise _too_large(f"{len(result.data)} bytes")
    return result


def _initializers(data: memoryview, graph: _Field) -> Iterator[_Field]:
    for f in _fields(data, graph.value_start, graph.end):
        if f.number == _GRAPH_INITIALIZER and f.wire_type == _LENGTH_DELIMITED:
            yield f
