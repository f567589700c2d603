"""Wire-exact round trips: decode with the typed models, dump by alias with exclude_unset.

One test per fixture in conformance/ahp-0.7.0/round-trips/ and forward-compat/round-trips/
(README conventions: compare to ``acceptableOutputs[0]``, key presence matters, order does not).
The bridge relays, so it keeps unknown keys: for the group-B fixture (017) it asserts
``preservedOutput``, as the README prescribes for pass-through implementations.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ahp_bridge.protocol.actions import UnknownAction
from ahp_bridge.protocol.base import wire_dump
from ahp_bridge.protocol.models import (
    ActionEnvelope,
    ChatDeltaAction,
    SessionSummary,
    UnknownVariant,
    wire_adapter,
)
from tests.support.paths import CONFORMANCE

FIXTURES = CONFORMANCE
ROUND_TRIPS = sorted((FIXTURES / "round-trips").glob("*.json"))
FORWARD = sorted((FIXTURES / "forward-compat" / "round-trips").glob("*.json"))


def _load(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return data


def _round_trip(type_name: str, value: Any) -> Any:
    adapter = wire_adapter(type_name)
    decoded = adapter.validate_python(value)
    return adapter.dump_python(decoded, mode="json", by_alias=True, exclude_unset=True)


def _same(a: Any, b: Any) -> bool:
    """Equal values with equal JSON types (so 1234 != 1234.0, True != 1)."""
    return json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)


def test_the_fixture_folders_are_all_there() -> None:
    assert len(ROUND_TRIPS) == 29
    assert len(FORWARD) == 3


@pytest.mark.parametrize("path", ROUND_TRIPS, ids=[p.name for p in ROUND_TRIPS])
def test_round_trip_fixture(path: Path) -> None:
    case = _load(path)
    assert len(case["acceptableOutputs"]) == 1
    out = _round_trip(case["type"], case["input"])
    assert _same(out, case["acceptableOutputs"][0])


@pytest.mark.parametrize("path", FORWARD, ids=[p.name for p in FORWARD])
def test_forward_compat_round_trip_fixture(path: Path) -> None:
    case = _load(path)
    expected = case.get("preservedOutput", case["acceptableOutputs"][0])
    out = _round_trip(case["type"], case["input"])
    assert _same(out, expected)


def test_unknown_action_decodes_as_unknown_and_keeps_every_field() -> None:
    raw = {"type": "future/newAction", "foo": 42, "nested": {"a": [1, 2.5, None]}}
    decoded = wire_adapter("StateAction").validate_python(raw)
    assert isinstance(decoded, UnknownAction)
    assert wire_dump(decoded) == raw


def test_unknown_customization_type_is_kept_but_known_type_is_still_checked() -> None:
    adapter = wire_adapter("Customization")
    assert isinstance(adapter.validate_python({"type": "future/x", "p": 1}), UnknownVariant)
    with pytest.raises(ValueError, match="name"):
        adapter.validate_python({"type": "plugin", "id": "p", "uri": "u", "enabled": True})


def test_unknown_keys_in_a_known_type_survive() -> None:
    raw = {
        "resource": "ahp-session:/s1",
        "provider": "demo",
        "title": "t",
        "status": 1,
        "createdAt": "2024-01-01T00:00:00.001Z",
        "modifiedAt": "2024-01-01T00:00:00.002Z",
        "futureField": {"deep": [1, {"x": None}]},
    }
    summary = SessionSummary.model_validate(raw)
    assert summary.model_extra == {"futureField": {"deep": [1, {"x": None}]}}
    assert wire_dump(summary) == raw


@pytest.mark.parametrize("number", [0, 1234, 2**53 + 1, 1.5, 0.1, -7])
def test_numbers_keep_their_json_type(number: int | float) -> None:
    raw = {"type": "chat/turnComplete", "turnId": "t1", "duration": number}
    out = _round_trip("StateAction", raw)
    assert _same(out, raw)
    assert type(out["duration"]) is type(number)


def test_integer_stays_integer_in_json_text() -> None:
    env = ActionEnvelope.model_validate(
        {
            "channel": "ahp-chat:/c",
            "serverSeq": 2148131814,
            "action": {"type": "chat/turnComplete", "turnId": "t", "duration": 1234},
        }
    )
    text = env.model_dump_json(exclude_unset=True)
    assert '"duration":1234}' in text
    assert '"serverSeq":2148131814' in text
    assert "1234.0" not in text


def test_meta_round_trips_including_nulls_inside() -> None:
    raw = {
        "type": "chat/delta",
        "turnId": "t1",
        "partId": "p1",
        "content": "hi",
        "_meta": {"trace": None, "n": 1},
    }
    model = wire_adapter("StateAction").validate_python(raw)
    assert isinstance(model, ChatDeltaAction)
    assert model.field_meta == {"trace": None, "n": 1}
    assert wire_dump(model) == raw


def test_meta_set_by_python_name_goes_out_as_underscore_meta() -> None:
    model = ChatDeltaAction(
        type="chat/delta", turnId="t", partId="p", content="x", field_meta={"k": 1}
    )
    assert wire_dump(model)["_meta"] == {"k": 1}
    assert "field_meta" not in model.model_dump()


def test_explicit_null_is_kept_and_absent_stays_absent() -> None:
    with_null = {
        "channel": "ahp-session:/s",
        "serverSeq": 1,
        "action": {"type": "session/activityChanged", "activity": None},
    }
    without = {
        "channel": "ahp-session:/s",
        "serverSeq": 1,
        "action": {"type": "session/activityChanged"},
    }
    assert _round_trip("ActionEnvelope", with_null) == with_null
    assert _round_trip("ActionEnvelope", without) == without


def test_envelope_origin_is_optional_and_kept_when_present() -> None:
    server = {
        "channel": "ahp-root://",
        "serverSeq": 3,
        "action": {"type": "root/activeSessionsChanged", "activeSessions": 2},
    }
    client = {**server, "origin": {"clientId": "c", "clientSeq": 9}, "rejectionReason": "no"}
    assert "origin" not in wire_dump(ActionEnvelope.model_validate(server))
    assert wire_dump(ActionEnvelope.model_validate(client)) == client
