"""Every agentapi type survives Go JSON: fully populated instance -> JSON text -> instance."""

from __future__ import annotations

import inspect
import json
import types
import typing
from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from enum import StrEnum
from typing import Any

import pytest
from pydantic import BaseModel

import ahp_bridge.agentapi as api
from ahp_bridge.agentapi import Event, EventKind, GoModel, GoStruct, from_json, to_json

WHEN = datetime(2026, 3, 4, 5, 6, 7, 891000, tzinfo=timezone(timedelta(hours=2)))


class _Sink:
    def emit(self, event: Event) -> None:
        raise AssertionError("not called")


async def _async_fn(*args: object) -> Any:
    raise AssertionError("not called")


def _sample(annotation: Any, name: str) -> Any:
    """A non-empty value for a field of this annotation."""
    origin = typing.get_origin(annotation)
    if origin is typing.Annotated:
        return _sample(typing.get_args(annotation)[0], name)
    if origin in (typing.Union, types.UnionType):
        choices = [a for a in typing.get_args(annotation) if a is not type(None)]
        return _sample(choices[0], name)
    if origin is list:
        return [_sample(typing.get_args(annotation)[0], name)]
    if origin is dict:
        value_type = typing.get_args(annotation)[1]
        return {"k": "v"} if value_type is str else {"type": "object", "n": [1, "x"]}
    if origin is not None and origin.__module__ == "collections.abc":
        return _sink_or_fn(annotation)
    if annotation is str:
        return f"{name}-v"
    if annotation is bool:
        return True
    if annotation is int:
        return 7
    if annotation is float:
        return 2.5
    if annotation is datetime:
        return WHEN
    if annotation is bytes:
        return b'{"k":[1,"\\u0000 bytes"]}'
    if annotation is timedelta:
        return timedelta(seconds=90, microseconds=5)
    if inspect.isclass(annotation) and issubclass(annotation, StrEnum):
        return list(annotation)[-1]
    if inspect.isclass(annotation) and issubclass(annotation, GoModel):
        return populated(annotation)
    if annotation is api.EventSink:
        return _Sink()
    raise AssertionError(f"no sample for {annotation!r} ({name})")


def _sink_or_fn(annotation: Any) -> Callable[..., Any]:
    return _async_fn


def _kind_fields() -> dict[EventKind, tuple[str, ...]]:
    from ahp_bridge.agentapi.events import _PAYLOADS

    return _PAYLOADS


def populated(cls: type[GoModel], kind: EventKind | None = None) -> Any:
    """An instance with every field set to a non-empty value (Event: one kind's payload)."""
    if cls is Event:
        kind = kind or EventKind.ITEM
        names = _kind_fields()[kind]
        return Event(kind=kind, **{n: _sample(Event.model_fields[n].annotation, n) for n in names})
    values = {n: _sample(info.annotation, n) for n, info in cls.model_fields.items()}
    return cls.model_validate(values)


def _internal(cls: type[BaseModel]) -> set[str]:
    return {n for n, info in cls.model_fields.items() if info.exclude is True}


def _without_internal(obj: Any) -> Any:
    """obj with every internal (json:"-") field, at any depth, back at its default."""
    if isinstance(obj, list):
        return [_without_internal(v) for v in obj]
    if not isinstance(obj, BaseModel):
        return obj
    cls = type(obj)
    update: dict[str, Any] = {}
    for n, info in cls.model_fields.items():
        if info.exclude is True:
            update[n] = info.get_default(call_default_factory=True)
        else:
            update[n] = _without_internal(getattr(obj, n))
    return obj.model_copy(update=update)


MODEL_CLASSES = sorted(
    (
        obj
        for name in api.__all__
        if inspect.isclass(obj := getattr(api, name))
        and issubclass(obj, GoModel)
        and obj not in (GoModel, GoStruct, Event)
    ),
    key=lambda c: c.__name__,
)


def test_every_contract_type_is_covered() -> None:
    assert len(MODEL_CLASSES) + 1 > 100


def _check_round_trip(obj: GoModel) -> None:
    cls = type(obj)
    data = to_json(obj)
    # Fully populated: nothing is omitted and nothing internal leaks.
    keys = {info.alias or n for n, info in cls.model_fields.items() if info.exclude is not True}
    if cls is not Event:
        assert set(data) == keys
    assert not (set(data) & (_internal(cls) - keys))
    text = json.dumps(data)
    again = from_json(cls, text)
    assert again == _without_internal(obj)
    assert to_json(again) == data
    # pydantic's own JSON path writes the same Go JSON.
    assert json.loads(obj.model_dump_json()) == data
    assert cls.from_json(data) == again


@pytest.mark.parametrize("cls", MODEL_CLASSES, ids=lambda c: c.__name__)
def test_fully_populated_instance_round_trips(cls: type[GoModel]) -> None:
    obj = populated(cls)
    for n in cls.model_fields:
        assert getattr(obj, n) not in (None, "", 0, False, [], {}, b""), f"{cls.__name__}.{n}"
    _check_round_trip(obj)


@pytest.mark.parametrize("kind", list(EventKind), ids=str)
def test_event_of_every_kind_round_trips(kind: EventKind) -> None:
    event = populated(Event, kind)
    data = to_json(event)
    # Event has no tags: Go writes every field under its Go name, payloads or not.
    assert set(data) == {info.alias for info in Event.model_fields.values()}
    assert data["Kind"] == kind.value
    _check_round_trip(event)


def test_internal_fields_are_reset_by_the_round_trip_helper_at_depth() -> None:
    item = populated(api.Item)
    assert item.clipped and item.images[0].data and item.attachments[0].sha256
    plain = _without_internal(item)
    assert not plain.clipped and plain.images[0].data == b"" and plain.attachments[0].sha256 == ""
