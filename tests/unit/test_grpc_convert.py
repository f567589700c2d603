"""agentapi model -> protobuf -> agentapi model is the identity, for every type that crosses.

Samples are built from the models' own field annotations with every field set to a
non-default value, so a field that the .proto lacks, or that a conversion drops or mangles,
fails here; a new contract field is covered without editing this file.
"""

from __future__ import annotations

import enum
import types
import typing
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest
from ahp_bridge_remote._gen.agentapi.v1 import agentapi_pb2 as pb
from ahp_bridge_remote.convert import (
    CALLBACK_FIELDS,
    ConversionError,
    InvalidMessage,
    from_proto,
    to_proto,
)
from pydantic import BaseModel

from ahp_bridge import agentapi
from ahp_bridge.agentapi import events as agentapi_events
from ahp_bridge.agentapi._base import _parse_raw

# Every agentapi type that has a message of the same name in agentapi.v1.
CROSSING = [
    name
    for name in sorted(pb.DESCRIPTOR.message_types_by_name)
    if isinstance(getattr(agentapi, name, None), type)
    and issubclass(getattr(agentapi, name), BaseModel)
]
PLUS_TWO = timezone(timedelta(hours=2))


def _sample(annotation: Any, seed: int) -> Any:
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        return _sample(args[0], seed)
    if origin is typing.Annotated:
        return _sample(typing.get_args(annotation)[0], seed)
    if origin is list:
        (inner,) = typing.get_args(annotation)
        return [_sample(inner, seed), _sample(inner, seed + 1)]
    if origin is dict:  # a free-form JSON object
        return {"type": "object", "seed": seed, "nested": {"list": [1, "two ✓", None]}}
    if isinstance(annotation, type):
        if issubclass(annotation, BaseModel):
            return sample(annotation, seed)
        if issubclass(annotation, enum.Enum):
            members = list(annotation)
            return members[seed % len(members)]
        if annotation is bool:
            return True
        if annotation is int:
            return 1000 + seed
        if annotation is float:
            return 0.25 + seed
        if annotation is str:
            return f"text {seed} ✓"
        if annotation is bytes:
            return bytes([0, 255, seed % 256]) + b"\n"
        if annotation is timedelta:  # Go time.Duration: whole nanoseconds cross
            return timedelta(seconds=seed, microseconds=250)
        if annotation is datetime:
            return datetime(2026, 11, 29, 19, 0, seed % 60, 123456, tzinfo=PLUS_TWO)
    raise TypeError(f"no sample for {annotation!r}")


def sample(model: type[BaseModel], seed: int = 1) -> BaseModel:
    """A valid model with every field set to a non-default value."""
    if model is agentapi.Event:
        return _event(agentapi.EventKind.INTERACTION, seed)
    data: dict[str, Any] = {}
    for name, info in model.model_fields.items():
        if name in CALLBACK_FIELDS.get(model.__name__, ()):
            continue  # no wire form (callbacks)
        if any(getattr(m, "func", None) is _parse_raw for m in info.metadata):
            data[name] = b'{"raw": %d, "text": "\xe2\x9c\x93"}' % (seed + len(data))  # RawJSON
            continue
        data[name] = _sample(info.annotation, seed + len(data))
    return model.model_validate(data, by_name=True)


def _event(kind: agentapi.EventKind, seed: int) -> agentapi.Event:
    fields = agentapi.Event.model_fields
    data: dict[str, Any] = {"kind": kind}
    for name in agentapi_events._PAYLOADS[kind]:
        data[name] = _sample(fields[name].annotation, seed)
    return agentapi.Event.model_validate(data, by_name=True)


def test_every_contract_message_is_covered() -> None:
    assert len(CROSSING) >= 50, CROSSING
    for name in ("Event", "Item", "Interaction", "OpenRequest", "Prompt", "Answer", "History"):
        assert name in CROSSING


@pytest.mark.parametrize("name", CROSSING)
def test_round_trip(name: str) -> None:
    model = getattr(agentapi, name)
    original = sample(model)
    message = to_proto(original)
    assert type(message).__name__ == name
    wire = message.SerializeToString()
    again = from_proto(type(message).FromString(wire), model)
    assert again == original
    assert again.model_dump() == original.model_dump()


@pytest.mark.parametrize("kind", list(agentapi.EventKind))
def test_every_event_kind_round_trips(kind: agentapi.EventKind) -> None:
    event = _event(kind, 3)
    again = from_proto(pb.Event.FromString(to_proto(event).SerializeToString()), agentapi.Event)
    assert again == event


def test_defaults_round_trip_to_defaults() -> None:
    """Unset optionals stay None (not zero values): Go's nil pointers survive."""
    prices = agentapi.Prices(batch_size=1000)
    again = from_proto(to_proto(prices), agentapi.Prices)
    assert again.input is None and again.long_context is None
    assert again == prices
    item = agentapi.Item(id="i1", kind=agentapi.ItemKind.ASSISTANT)
    again_item = from_proto(to_proto(item), agentapi.Item)
    assert again_item.time is None and again_item.tool is None
    assert again_item == item


def test_times_keep_the_instant_and_come_back_aware() -> None:
    at = datetime(2026, 1, 2, 3, 4, 5, 678901, tzinfo=PLUS_TWO)
    item = agentapi.Item(id="i", kind=agentapi.ItemKind.USER, time=at)
    again = from_proto(to_proto(item), agentapi.Item)
    assert again.time == at
    assert again.time is not None and again.time.utcoffset() == timedelta(0)
    assert again.time.tzinfo is UTC


def test_a_message_the_model_refuses_is_an_error_not_a_guess() -> None:
    bad = pb.Event(kind="item")  # an item event without its item
    with pytest.raises(ValueError, match="item"):
        from_proto(bad, agentapi.Event)


def test_mismatched_types_are_refused() -> None:
    with pytest.raises(ConversionError):
        to_proto(agentapi.Usage(ai_units=1.0), pb.Context)


def test_host_tool_parameters_travel_as_json_text_and_must_be_json() -> None:
    tool = agentapi.HostTool(name="usages", parameters={"type": "object", "required": ["a"]})
    message = to_proto(tool)
    assert message.parameters == b'{"type":"object","required":["a"]}'
    broken = pb.HostTool(name="usages", parameters=b"{not json")
    with pytest.raises(InvalidMessage, match="parameters: not JSON text"):
        from_proto(broken, agentapi.HostTool)
    assert from_proto(pb.HostTool(name="bare"), agentapi.HostTool).parameters == {}
