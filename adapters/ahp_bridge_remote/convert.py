"""Conversion between ahp_bridge.agentapi models and their agentapi.v1 protobuf messages.

The .proto names every field after the Python attribute, so one table-driven walker converts
every type both ways instead of some fifty hand-written pairs that would drift. The plan for
each (model, message) pair is built once from the pydantic fields and the proto descriptor,
and it fails loudly when the two disagree: a contract field the .proto lacks is a bug, never
silently dropped data. Go's callbacks (OpenRequest.events, ...) are the only fields skipped.
A free-form JSON object (``HostTool.parameters``, a ``dict``) travels as JSON text in bytes.
"""

from __future__ import annotations

import json
import types
import typing
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from enum import Enum
from functools import cache
from typing import Any, TypeVar

from google.protobuf.descriptor import Descriptor
from google.protobuf.message import Message
from google.protobuf.timestamp_pb2 import Timestamp
from pydantic import BaseModel, ValidationError

from ._gen.agentapi.v1 import agentapi_pb2 as pb

M = TypeVar("M", bound=BaseModel)

# Python attribute -> proto field, where Python had to rename (keywords).
_RENAMES: dict[str, str] = {"import_": "import"}
# Contract fields that cannot cross a process boundary (callables), per model name.
CALLBACK_FIELDS: dict[str, frozenset[str]] = {
    "OpenRequest": frozenset({"events", "validate_file", "hooks", "call_tool"}),
    "TitleRequest": frozenset({"on_usage"}),
    "UtilityRequest": frozenset({"call_tool", "on_usage"}),
}

_SCALAR, _ENUMSTR, _TIME, _MESSAGE, _LISTS, _JSON, _DURATION = range(7)


class ConversionError(TypeError):
    """The Python model and the proto message do not describe the same type."""


class InvalidMessage(ValueError):
    """A message holding values the contract refuses. The text names fields and rules,
    never the values (they may be prompt text), so it is safe to log and to send back."""


@dataclass(frozen=True, slots=True)
class _Step:
    attr: str
    field: str
    kind: int
    repeated: bool
    presence: bool
    sub: type[BaseModel] | None


def _model_in(annotation: Any) -> type[BaseModel] | None:
    """The BaseModel class inside an annotation such as ``Item | None`` or ``list[Item]``."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in typing.get_args(annotation):
        found = _model_in(arg)
        if found is not None:
            return found
    return None


def _is_dict(annotation: Any) -> bool:
    """``dict[...]``, also ``dict[...] | None``."""
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType):
        return any(_is_dict(a) for a in typing.get_args(annotation))
    return annotation is dict or origin is dict


def _is_nested_list(annotation: Any) -> bool:
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType):
        return any(_is_nested_list(a) for a in typing.get_args(annotation))
    if origin is list:
        (inner,) = typing.get_args(annotation) or (Any,)
        return typing.get_origin(inner) is list
    return False


@cache
def _plan(model: type[BaseModel], descriptor: Descriptor) -> tuple[_Step, ...]:
    skipped = CALLBACK_FIELDS.get(model.__name__, frozenset())
    steps: list[_Step] = []
    seen: set[str] = set()
    for attr, info in model.model_fields.items():
        if attr in skipped:
            continue
        name = _RENAMES.get(attr, attr)
        fd = descriptor.fields_by_name.get(name)
        if fd is None:
            raise ConversionError(f"{model.__name__}.{attr} has no field in {descriptor.full_name}")
        seen.add(name)
        repeated = fd.is_repeated
        sub: type[BaseModel] | None = None
        if fd.message_type is not None and fd.message_type.full_name == "google.protobuf.Timestamp":
            kind = _TIME
        elif fd.message_type is not None and fd.message_type.name == "StringList":
            if not _is_nested_list(info.annotation):
                raise ConversionError(f"{model.__name__}.{attr} is not a list of lists")
            kind = _LISTS
        elif fd.type == fd.TYPE_BYTES and _is_dict(info.annotation):
            kind = _JSON
        elif fd.type == fd.TYPE_INT64 and info.annotation is timedelta:
            kind = _DURATION
        elif fd.message_type is not None:
            kind = _MESSAGE
            sub = _model_in(info.annotation)
            if sub is None:
                raise ConversionError(f"{model.__name__}.{attr} is not a model")
            _plan(sub, fd.message_type)  # validate the whole tree eagerly
        else:
            kind = _SCALAR
        steps.append(_Step(attr, name, kind, repeated, fd.has_presence, sub))
    extra = set(descriptor.fields_by_name) - seen
    if extra:
        raise ConversionError(f"{descriptor.full_name} fields {sorted(extra)} missing in {model}")
    return tuple(steps)


def _scalar_out(value: Any) -> Any:
    return value.value if isinstance(value, Enum) else value


def _fill(message: Message, obj: BaseModel) -> Message:
    for step in _plan(type(obj), message.DESCRIPTOR):
        value = getattr(obj, step.attr)
        if value is None:
            continue
        if step.kind == _SCALAR:
            if step.repeated:
                getattr(message, step.field).extend(_scalar_out(v) for v in value)
            else:
                setattr(message, step.field, _scalar_out(value))
        elif step.kind == _MESSAGE:
            if step.repeated:
                target = getattr(message, step.field)
                for v in value:
                    _fill(target.add(), v)
            else:
                _fill(getattr(message, step.field), value)
                getattr(message, step.field).SetInParent()
        elif step.kind == _TIME:
            getattr(message, step.field).FromDatetime(value)
        elif step.kind == _JSON:
            setattr(message, step.field, json.dumps(value, separators=(",", ":")).encode())
        elif step.kind == _DURATION:
            setattr(message, step.field, value // timedelta(microseconds=1) * 1000)
        else:  # _LISTS
            target = getattr(message, step.field)
            for values in value:
                target.add().values.extend(values)
    return message


def to_proto(obj: BaseModel, message_type: type[Message] | None = None) -> Any:
    """The protobuf message for obj; its type defaults to the message named like the model."""
    cls = message_type or getattr(pb, type(obj).__name__)
    return _fill(cls(), obj)


def _timestamp_out(ts: Timestamp) -> datetime:
    return ts.ToDatetime(tzinfo=UTC)


@cache
def _reader(
    model: type[BaseModel], descriptor: Descriptor
) -> tuple[dict[str, _Step], tuple[_Step, ...]]:
    """Steps by proto field name, and the steps to read even when the field is unset.

    Reading walks only the fields a message holds (ListFields): an unset field leaves the
    model's default, which is Go's zero value like the proto default, except where a field
    is required or its default differs; those are always read.
    """
    steps = _plan(model, descriptor)
    always = []
    for step in steps:
        info = model.model_fields[step.attr]
        fd = descriptor.fields_by_name[step.field]
        if info.is_required() or (
            step.kind == _SCALAR
            and not step.repeated
            and not step.presence
            and info.default != fd.default_value
        ):
            always.append(step)
    return {step.field: step for step in steps}, tuple(always)


def _read_step(message: Message, step: _Step, data: dict[str, Any]) -> None:
    if step.kind == _SCALAR:
        if step.presence and not step.repeated and not message.HasField(step.field):
            return
        value = getattr(message, step.field)
        data[step.attr] = list(value) if step.repeated else value
    elif step.kind == _MESSAGE:
        assert step.sub is not None
        if step.repeated:
            data[step.attr] = [_build(m, step.sub) for m in getattr(message, step.field)]
        elif message.HasField(step.field):
            data[step.attr] = _build(getattr(message, step.field), step.sub)
    elif step.kind == _TIME:
        if message.HasField(step.field):
            data[step.attr] = _timestamp_out(getattr(message, step.field))
    elif step.kind == _JSON:
        raw = getattr(message, step.field)
        if not raw:
            return  # none: the model's default
        try:
            data[step.attr] = json.loads(raw)
        except ValueError:
            raise InvalidMessage(f"{step.attr}: not JSON text") from None
    elif step.kind == _DURATION:
        data[step.attr] = timedelta(microseconds=getattr(message, step.field) / 1000)
    else:  # _LISTS
        data[step.attr] = [list(v.values) for v in getattr(message, step.field)]


def _read(message: Message, model: type[M]) -> dict[str, Any]:
    by_name, always = _reader(model, message.DESCRIPTOR)
    data: dict[str, Any] = {}
    for step in always:
        _read_step(message, step, data)
    for fd, _value in message.ListFields():
        listed = by_name.get(fd.name)
        if listed is not None and listed.attr not in data:
            _read_step(message, listed, data)
    return data


def _build(message: Message, model: type[M], **extra: Any) -> M:
    data = _read(message, model)
    data.update(extra)
    return model.model_validate(data, by_name=True)


def from_proto(message: Message, model: type[M], **extra: Any) -> M:
    """The agentapi model for message, with extra fields (such as callbacks) added.

    Raises ConversionError when the types do not match and InvalidMessage when the message
    holds values the model refuses.
    """
    try:
        return _build(message, model, **extra)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(part) for part in error['loc']) or model.__name__}: {error['msg']}"
            for error in exc.errors(include_input=False, include_url=False)
        )
        raise InvalidMessage(f"invalid {model.__name__}: {problems}") from None
