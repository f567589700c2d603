"""The hand-written tagged unions agree with the schema's oneOf definitions."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import TypeAdapter, ValidationError

from ahp_bridge.protocol import models
from ahp_bridge.protocol.base import wire_dump
from ahp_bridge.protocol.models import UNION_SPECS, WIRE_TYPES, UnknownVariant, wire_adapter

ROOT = Path(__file__).resolve().parents[2]
DEFS: dict[str, Any] = json.loads(
    (ROOT / "proto/ahp/0.7.0/ahp.schema.json").read_text(encoding="utf-8")
)["$defs"]


def _consts(prop: dict[str, Any]) -> list[Any]:
    if "const" in prop:
        return [prop["const"]]
    if "enum" in prop:
        return list(prop["enum"])
    return [c for option in prop.get("oneOf", []) for c in _consts(option)]


def _schema_tags(name: str, key: str) -> dict[str, str]:
    """tag value -> member name ('inline#i' for inline members) from the schema."""
    out: dict[str, str] = {}
    for i, member in enumerate(DEFS[name]["oneOf"]):
        ref = member.get("$ref")
        body = DEFS[ref.rsplit("/", 1)[1]] if ref else member
        for tag in _consts(body["properties"][key]):
            out[tag] = ref.rsplit("/", 1)[1] if ref else f"inline#{i}"
    return out


@pytest.mark.parametrize("name", sorted(UNION_SPECS))
def test_union_tags_match_the_schema(name: str) -> None:
    key, members, _ = UNION_SPECS[name]
    schema = _schema_tags(name, key)
    assert set(members) == set(schema)
    for tag, cls in members.items():
        if not schema[tag].startswith("inline#"):
            assert cls.__name__ == schema[tag]
        # The member's own discriminator field accepts exactly this tag.
        annotation: Any = cls.model_fields[key].annotation
        assert TypeAdapter(annotation).validate_python(tag) == tag


@pytest.mark.parametrize("name", sorted(UNION_SPECS))
def test_every_tag_selects_its_member(name: str) -> None:
    key, members, _ = UNION_SPECS[name]
    adapter = wire_adapter(name)
    for tag, cls in members.items():
        try:
            decoded = adapter.validate_python({key: tag})
        except ValidationError as err:
            # Validation went to the tagged member only: every error is located under the tag.
            assert {e["loc"][0] for e in err.errors()} == {tag}, (tag, cls.__name__)
        else:
            assert type(decoded) is cls


def test_every_oneof_in_the_schema_has_a_python_type() -> None:
    oneofs = {name for name, body in DEFS.items() if "oneOf" in body}
    assert oneofs - set(WIRE_TYPES) == {
        "JsonPrimitive",
        "ChildCustomizationType",
        "ChatToolCallConfirmedAction",
    }


def test_open_union_keeps_unknown_response_part() -> None:
    part = {"kind": "unknownFuturePart", "data": {"x": 1}}
    decoded = wire_adapter("ResponsePart").validate_python(part)
    assert isinstance(decoded, UnknownVariant)
    assert wire_dump(decoded) == part


def test_closed_union_rejects_unknown_tag_with_one_error() -> None:
    with pytest.raises(ValueError) as err:
        wire_adapter("ToolCallState").validate_python({"status": "exploded"})
    assert err.value.error_count() == 1  # type: ignore[attr-defined]
    assert "`status` must be one of" in str(err.value)


def test_session_status_is_a_bitset() -> None:
    adapter = wire_adapter("SessionStatus")
    assert adapter.validate_python(8 | 32 | 64) == 104
    with pytest.raises(ValueError):
        adapter.validate_python(-1)


def test_reconnect_result_dispatches_on_type() -> None:
    replay = {
        "type": "replay",
        "actions": [
            {"channel": "ahp-root://", "serverSeq": 4, "action": {"type": "future/x", "y": 1}}
        ],
        "missing": ["ahp-session:/gone"],
    }
    decoded = wire_adapter("ReconnectResult").validate_python(replay)
    assert isinstance(decoded, models.ReconnectReplayResult)
    assert wire_dump(decoded) == replay
    snap = {"type": "snapshot", "snapshots": []}
    assert isinstance(
        wire_adapter("ReconnectResult").validate_python(snap), models.ReconnectSnapshotResult
    )


def test_wire_adapter_unknown_name() -> None:
    with pytest.raises(KeyError):
        wire_adapter("NoSuchType")
