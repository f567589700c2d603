"""The tagged StateAction union, parse_action's errors, and the dispatch tables."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ahp_bridge.protocol import _generated as g
from ahp_bridge.protocol.action_types import TYPES_0_7, TYPES_1_0
from ahp_bridge.protocol.actions import (
    ACTION_CLASSES,
    ACTION_TYPES,
    ACTIONS_07,
    CLIENT_DISPATCHABLE,
    ActionError,
    UnknownAction,
    UnknownActionType,
    action_adapter,
    parse_action,
)
from ahp_bridge.protocol.actions_v1 import ACTIONS_09, ACTIONS_10, ONLY_1_0
from ahp_bridge.protocol.base import wire_dump
from tests.support.paths import CONFORMANCE

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = json.loads((ROOT / "proto/ahp/0.7.0/ahp.schema.json").read_text(encoding="utf-8"))
DEFS: dict[str, Any] = SCHEMA["$defs"]
FIXTURES = CONFORMANCE


def _schema_actions() -> dict[str, list[str]]:
    """type const -> schema names of the StateAction members carrying it."""
    out: dict[str, list[str]] = {}
    stack = [ref["$ref"].rsplit("/", 1)[1] for ref in DEFS["StateAction"]["oneOf"]]
    while stack:
        name = stack.pop()
        if "oneOf" in DEFS[name]:
            stack.extend(ref["$ref"].rsplit("/", 1)[1] for ref in DEFS[name]["oneOf"])
            continue
        out.setdefault(DEFS[name]["properties"]["type"]["const"], []).append(name)
    return out


def _fixture_actions() -> list[tuple[str, str, dict[str, Any]]]:
    cases = []
    for path in sorted((FIXTURES / "reducers").glob("*.json")):
        case = json.loads(path.read_text(encoding="utf-8"))
        for i, action in enumerate(case["actions"]):
            cases.append((f"{path.name}#{i}", case["reducer"], action))
    return cases


FIXTURE_ACTIONS = _fixture_actions()


def test_action_tables_match_the_schema_exactly() -> None:
    schema = _schema_actions()
    assert set(ACTION_TYPES) == set(schema)
    assert len(ACTION_TYPES) == 85
    for action_type, cls in ACTION_CLASSES.items():
        assert schema[action_type] == [cls.__name__]
    assert sorted(schema["chat/toolCallConfirmed"]) == [
        "ChatToolCallApprovedAction",
        "ChatToolCallDeniedAction",
    ]


def test_each_action_set_knows_exactly_its_schemas_action_types() -> None:
    """The generated ActionType sets agree with the tables each wire version is parsed by."""
    assert set(ACTIONS_07.types) == TYPES_0_7
    assert set(ACTIONS_10.types) == TYPES_1_0
    assert set(ACTIONS_09.types) == TYPES_1_0 - ONLY_1_0
    assert ONLY_1_0 <= TYPES_1_0 - TYPES_0_7
    assert CLIENT_DISPATCHABLE <= TYPES_0_7
    assert ACTIONS_10.dispatchable <= TYPES_1_0


def test_action_types_map_to_channel_kinds() -> None:
    assert ACTION_TYPES["chat/delta"] == "chat"
    assert ACTION_TYPES["chat/toolCallConfirmed"] == "chat"
    assert ACTION_TYPES["root/agentsChanged"] == "root"
    assert ACTION_TYPES["resourceWatch/changed"] == "resourceWatch"
    assert ACTION_TYPES["annotations/entrySet"] == "annotations"
    assert set(ACTION_TYPES.values()) == {
        "root",
        "session",
        "chat",
        "terminal",
        "changeset",
        "annotations",
        "resourceWatch",
    }


def test_client_dispatchable_set() -> None:
    assert set(ACTION_TYPES) >= CLIENT_DISPATCHABLE
    assert len(CLIENT_DISPATCHABLE) == 39
    for allowed in ("chat/turnStarted", "session/defaultChatChanged", "terminal/input"):
        assert allowed in CLIENT_DISPATCHABLE
    for host_only in (
        "chat/delta",
        "chat/responsePart",
        "chat/toolCallReady",
        "chat/turnComplete",
        "chat/error",
        "session/ready",
        "session/chatAdded",
        "session/inputNeededSet",
        "root/agentsChanged",
        "terminal/data",
    ):
        assert host_only not in CLIENT_DISPATCHABLE
    assert {t for t in ACTION_TYPES if t.startswith("annotations/")} <= CLIENT_DISPATCHABLE


@pytest.mark.parametrize(
    ("case", "reducer", "action"), FIXTURE_ACTIONS, ids=[c[0] for c in FIXTURE_ACTIONS]
)
def test_every_reducer_fixture_action_parses_and_round_trips(
    case: str, reducer: str, action: dict[str, Any]
) -> None:
    model = parse_action(action)
    assert type(model).__name__ in _schema_actions()[action["type"]]
    assert ACTION_TYPES[action["type"]] == reducer
    assert wire_dump(model) == action
    assert wire_dump(action_adapter.validate_python(action)) == action


def test_fixture_actions_cover_most_action_types() -> None:
    seen = {action["type"] for _, _, action in FIXTURE_ACTIONS}
    assert len(seen) >= 70


def test_tool_call_confirmed_variants_resolve_by_approved() -> None:
    approved = {
        "type": "chat/toolCallConfirmed",
        "turnId": "t",
        "toolCallId": "c",
        "approved": True,
        "confirmed": "user-action",
        "selectedOptionId": "allow-once",
    }
    denied = {
        "type": "chat/toolCallConfirmed",
        "turnId": "t",
        "toolCallId": "c",
        "approved": False,
        "reason": "denied",
    }
    assert isinstance(parse_action(approved), g.ChatToolCallApprovedAction)
    assert isinstance(parse_action(denied), g.ChatToolCallDeniedAction)
    assert wire_dump(parse_action(denied)) == denied
    with pytest.raises(ActionError, match=r"^action\.confirmed: Field required$"):
        parse_action(_without(approved, "confirmed"))
    with pytest.raises(ActionError, match=r"action\.reason: Field required"):
        parse_action(_without(denied, "reason"))
    with pytest.raises(ActionError, match=r"action\.approved"):
        parse_action({**denied, "approved": "no"})


def _without(data: dict[str, Any], key: str) -> dict[str, Any]:
    return {k: v for k, v in data.items() if k != key}


def test_unknown_type_is_distinguished_from_bad_fields() -> None:
    with pytest.raises(UnknownActionType) as unknown:
        parse_action({"type": "chat/futureThing", "turnId": "t"})
    assert unknown.value.action_type == "chat/futureThing"
    assert isinstance(unknown.value, ActionError)
    with pytest.raises(ActionError) as bad:
        parse_action({"type": "chat/delta", "partId": "p", "content": "x"})
    assert not isinstance(bad.value, UnknownActionType)
    assert str(bad.value) == "action.turnId: Field required"


@pytest.mark.parametrize(
    ("action", "message"),
    [
        ({}, "action.type: Field required"),
        ({"type": 7}, "action.type: must be a string"),
        ({"type": None}, "action.type: Field required"),
        (
            {"type": "chat/delta", "turnId": 1, "partId": "p", "content": "x"},
            "action.turnId: Input should be a valid string",
        ),
        (
            {
                "type": "chat/turnStarted",
                "turnId": "t",
                "startedAt": "2026-01-01T00:00:00Z",
                "message": {"text": "hi", "origin": {"kind": "robot"}},
            },
            "action.message.origin.kind: Input should be",
        ),
        (
            {
                "type": "chat/turnStarted",
                "turnId": "t",
                "startedAt": "2026-01-01T00:00:00Z",
                "message": {
                    "text": "hi",
                    "origin": {"kind": "user"},
                    "attachments": [{"type": "simple", "label": "a"}, {"label": "b"}],
                },
            },
            "action.message.attachments[1]",
        ),
        (
            {"type": "chat/responsePart", "turnId": "t", "part": {"kind": "markdown", "id": "p"}},
            "action.part.content: Field required",
        ),
        (
            {"type": "chat/responsePart", "turnId": "t", "part": {"kind": "nope", "id": "p"}},
            "action.part: Input tag 'nope' found using 'kind' does not match",
        ),
        (
            {"type": "chat/turnCancelled", "turnId": "t", "duration": "soon"},
            "action.duration: Input should be a valid number",
        ),
    ],
)
def test_errors_name_the_field_path(action: dict[str, Any], message: str) -> None:
    with pytest.raises(ActionError) as err:
        parse_action(action)
    assert str(err.value).startswith(message)


def test_error_messages_never_echo_the_value() -> None:
    secret = "my secret prompt text"
    with pytest.raises(ActionError) as err:
        parse_action({"type": "chat/delta", "turnId": "t", "partId": 5, "content": secret})
    assert secret not in str(err.value)


def test_unknown_type_message_is_bounded() -> None:
    with pytest.raises(UnknownActionType) as err:
        parse_action({"type": "x/" + "y" * 5000})
    assert len(str(err.value)) < 140
    assert err.value.action_type == "x/" + "y" * 5000


def test_non_mapping_action_is_rejected() -> None:
    with pytest.raises(ActionError, match="action: must be an object"):
        parse_action(["chat/delta"])  # type: ignore[arg-type]


def test_union_relays_unknown_types_but_reports_missing_type() -> None:
    assert isinstance(action_adapter.validate_python({"type": "x/y", "a": 1}), UnknownAction)
    with pytest.raises(ValueError, match="`type` must be a string"):
        action_adapter.validate_python({"turnId": "t"})


def test_union_reports_one_error_for_a_bad_known_action() -> None:
    with pytest.raises(ValueError) as err:
        action_adapter.validate_python({"type": "chat/delta", "turnId": "t"})
    assert err.value.error_count() == 2  # type: ignore[attr-defined]  # partId, content


def _through_the_union(actions: Any, data: dict[str, Any]) -> str:
    from pydantic import ValidationError

    from ahp_bridge.protocol.actions import describe

    try:
        actions.adapter.validate_python(data)
    except ValidationError as exc:
        return describe(exc, "action", data, skip=actions._tags)
    return "valid"


def _parsed(actions: Any, data: dict[str, Any]) -> str:
    try:
        actions.parse(data)
    except ActionError as exc:
        return str(exc)
    return "valid"


def test_an_action_parsed_by_its_own_model_is_accepted_and_refused_as_through_the_union() -> None:
    """`ActionSet.parse` validates a known type with its model alone (the hot path); the union
    it skips must say the same of every model's fields, right or wrong, on every line."""
    from ahp_bridge.protocol.actions_v06 import ACTIONS_06
    from ahp_bridge.protocol.actions_v08 import ACTIONS_08

    compared = 0
    for actions in (ACTIONS_06, ACTIONS_07, ACTIONS_08, ACTIONS_09, ACTIONS_10):
        for kind, cls in actions.classes.items():
            payloads: list[dict[str, Any]] = [{"type": kind}]
            for name, info in cls.model_fields.items():
                key = info.alias or name
                if key != "type":
                    payloads += [{"type": kind, key: bad} for bad in ([], 1, "x", {"a": 1}, True)]
            for data in payloads:
                assert _parsed(actions, data) == _through_the_union(actions, data), (kind, data)
                compared += 1
    assert compared > 4000
