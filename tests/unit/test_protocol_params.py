"""parse_params: every 0.7.0 client method, field-naming errors, notification models."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from ahp_bridge.protocol import _generated as g
from ahp_bridge.protocol.base import wire_dump
from ahp_bridge.protocol.notifications import (
    NOTIFICATION_PARAMS,
    AuthRequiredParams,
    ProgressParams,
    SessionAddedParams,
    SessionSummaryChangedParams,
)
from ahp_bridge.protocol.params import (
    CLIENT_NOTIFICATIONS,
    METHODS,
    DispatchActionParams,
    ParamsError,
    UnknownMethod,
    parse_params,
)
from tests.support.paths import AHP_NOTES

ROOT_URI = "ahp-root://"
SESSION = "ahp-session:/6f1c2a52-4a0e-4c31-9b59-0f4f6e0d8a11"
CHAT = "ahp-chat:/c1"

NOTES = AHP_NOTES

VALID: dict[str, dict[str, Any]] = {
    "initialize": {
        "channel": ROOT_URI,
        "protocolVersions": ["0.7.0"],
        "clientId": "c1",
        "clientInfo": {"name": "test", "version": "1"},
        "initialSubscriptions": [ROOT_URI],
    },
    "ping": {"channel": ROOT_URI},
    "reconnect": {
        "channel": ROOT_URI,
        "clientId": "c1",
        "lastSeenServerSeq": 41,
        "subscriptions": [SESSION],
    },
    "subscribe": {"channel": CHAT, "view": {"turns": 5}},
    "unsubscribe": {"channel": CHAT},
    "dispatchAction": {"channel": CHAT, "clientSeq": 1, "action": {"type": "chat/x"}},
    "createSession": {"channel": SESSION, "provider": "fake"},
    "disposeSession": {"channel": SESSION},
    "createChat": {"channel": SESSION, "chat": CHAT},
    "disposeChat": {"channel": CHAT},
    "createTerminal": {
        "channel": "ahp-terminal:/t1",
        "claim": {"kind": "client", "clientId": "c1"},
    },
    "disposeTerminal": {"channel": "ahp-terminal:/t1"},
    "createResourceWatch": {"channel": ROOT_URI, "uri": "file:///w"},
    "listSessions": {"channel": ROOT_URI, "limit": 20},
    "resolveSessionConfig": {"channel": ROOT_URI, "provider": "fake"},
    "sessionConfigCompletions": {
        "channel": ROOT_URI,
        "provider": "fake",
        "property": "model",
    },
    "fetchTurns": {"channel": CHAT, "cursor": "abc"},
    "completions": {"channel": CHAT, "kind": "userMessage", "text": "@fi", "offset": 3},
    "invokeChangesetOperation": {
        "channel": "ahp-changeset:/x",
        "operationId": "accept",
    },
    "authenticate": {"channel": ROOT_URI, "resource": "https://api", "token": "t"},
    "resourceRead": {"channel": ROOT_URI, "uri": "file:///a"},
    "resourceWrite": {
        "channel": ROOT_URI,
        "uri": "file:///a",
        "data": "aGk=",
        "encoding": "base64",
    },
    "resourceList": {"channel": ROOT_URI, "uri": "file:///"},
    "resourceCopy": {"channel": ROOT_URI, "source": "file:///a", "destination": "file:///b"},
    "resourceDelete": {"channel": ROOT_URI, "uri": "file:///a"},
    "resourceMove": {"channel": ROOT_URI, "source": "file:///a", "destination": "file:///b"},
    "resourceResolve": {"channel": ROOT_URI, "uri": "file:///a"},
    "resourceMkdir": {"channel": ROOT_URI, "uri": "file:///d"},
    "resourceRequest": {"channel": ROOT_URI, "uri": "file:///a", "access": "read"},
}


def _fill_required(method: str) -> dict[str, Any]:
    """VALID[method], or nothing if the test data is out of date (the test then says so)."""
    return VALID[method]


def test_methods_cover_the_notes_method_list() -> None:
    text = NOTES.read_text(encoding="utf-8")
    section = text.split("## 2. JSON-RPC methods", 1)[1].split("### Server → client", 1)[0]
    first_cells = re.findall(r"^\| (`.*?) \|", section, re.M)
    named = {m for cell in first_cells for m in re.findall(r"`(\w+)`", cell)}
    named |= {"dispatchAction", "unsubscribe"}
    assert named == set(METHODS)
    assert set(VALID) == set(METHODS)
    assert {"dispatchAction", "unsubscribe"} == CLIENT_NOTIFICATIONS


@pytest.mark.parametrize("method", sorted(METHODS))
def test_valid_params_parse_and_round_trip(method: str) -> None:
    params = _fill_required(method)
    try:
        model = parse_params(method, params)
    except ParamsError as exc:  # show the test-data mistake precisely
        pytest.fail(f"{method}: {exc}")
    assert isinstance(model, METHODS[method])
    assert wire_dump(model) == params


@pytest.mark.parametrize("method", sorted(METHODS))
def test_missing_channel_is_named(method: str) -> None:
    params = {k: v for k, v in VALID[method].items() if k != "channel"}
    with pytest.raises(ParamsError) as err:
        parse_params(method, params)
    assert "params.channel: Field required" in str(err.value)


@pytest.mark.parametrize(
    ("method", "params", "message"),
    [
        (
            "initialize",
            {"channel": ROOT_URI, "clientId": "c"},
            "params.protocolVersions: Field required",
        ),
        (
            "initialize",
            {**VALID["initialize"], "protocolVersions": "0.7.0"},
            "params.protocolVersions: Input should be a valid list",
        ),
        (
            "initialize",
            {**VALID["initialize"], "channel": SESSION},
            "params.channel: Input should be 'ahp-root://'",
        ),
        ("ping", None, "params: must be an object (got missing)"),
        ("ping", [ROOT_URI], "params: must be an object (got an array)"),
        (
            "subscribe",
            {"channel": CHAT, "view": {"turns": "all"}},
            "params.view.turns: Input should be a valid number",
        ),
        (
            "dispatchAction",
            {"channel": CHAT, "clientSeq": 1, "action": "chat/delta"},
            "params.action: Input should be a valid dictionary",
        ),
        ("dispatchAction", {"channel": CHAT, "action": {}}, "params.clientSeq: Field required"),
        (
            "reconnect",
            {**VALID["reconnect"], "subscriptions": [SESSION, 3]},
            "params.subscriptions[1]: Input should be a valid string",
        ),
    ],
)
def test_errors_name_the_field(method: str, params: object, message: str) -> None:
    with pytest.raises(ParamsError) as err:
        parse_params(method, params)
    assert str(err.value).startswith(message)
    assert err.value.message == str(err.value)


def test_unknown_method() -> None:
    with pytest.raises(UnknownMethod) as err:
        parse_params("session/steal", {"channel": ROOT_URI})
    assert err.value.method == "session/steal"
    assert not isinstance(err.value, ParamsError)


def test_dispatch_action_keeps_the_raw_action_for_parse_action() -> None:
    raw = {"type": "chat/delta", "turnId": "t", "partId": "p", "content": "x", "_meta": {}}
    model = parse_params("dispatchAction", {"channel": CHAT, "clientSeq": 2, "action": raw})
    assert isinstance(model, DispatchActionParams)
    assert model.action == raw
    assert model.action is not raw or model.action == raw


def test_unknown_param_keys_are_kept() -> None:
    model = parse_params("ping", {"channel": ROOT_URI, "futureFlag": True})
    assert wire_dump(model) == {"channel": ROOT_URI, "futureFlag": True}


# --- server notifications the schema lacks ---------------------------------------------------

SUMMARY = {
    "resource": SESSION,
    "provider": "fake",
    "title": "Hello",
    "status": 1,
    "createdAt": "2026-01-01T00:00:00.000Z",
    "modifiedAt": "2026-01-01T00:00:00.000Z",
}


@pytest.mark.parametrize(
    ("method", "params"),
    [
        ("root/sessionAdded", {"channel": ROOT_URI, "summary": SUMMARY}),
        ("root/sessionRemoved", {"channel": ROOT_URI, "session": SESSION}),
        (
            "root/sessionSummaryChanged",
            {"channel": ROOT_URI, "session": SESSION, "changes": {"title": "New", "status": 40}},
        ),
        (
            "root/progress",
            {
                "channel": ROOT_URI,
                "progressToken": "p1",
                "progress": 50,
                "total": 100,
                "message": "dl",
            },
        ),
        ("root/progress", {"channel": ROOT_URI, "progressToken": "p1", "progress": 0.5}),
        (
            "auth/required",
            {"channel": ROOT_URI, "resource": {"resource": "https://api"}, "reason": "expired"},
        ),
        (
            "action",
            {
                "channel": CHAT,
                "serverSeq": 9,
                "action": {"type": "chat/turnCancelled", "turnId": "t", "duration": 5},
            },
        ),
    ],
)
def test_notification_params_round_trip(method: str, params: dict[str, Any]) -> None:
    model = NOTIFICATION_PARAMS[method].model_validate(params)
    assert json.loads(model.model_dump_json(exclude_unset=True)) == params


def test_notifications_built_in_python_always_carry_channel() -> None:
    added = SessionAddedParams(channel=ROOT_URI, summary=g.SessionSummary.model_validate(SUMMARY))
    assert wire_dump(added) == {"channel": ROOT_URI, "summary": SUMMARY}
    progress = ProgressParams(channel=ROOT_URI, progressToken="p", progress=3, total=3)
    assert wire_dump(progress) == {
        "channel": ROOT_URI,
        "progressToken": "p",
        "progress": 3,
        "total": 3,
    }
    with pytest.raises(ValueError, match="channel"):
        ProgressParams.model_validate({"progressToken": "p", "progress": 1})


def test_partial_summary_carries_only_changes_and_meta_alias() -> None:
    changed = SessionSummaryChangedParams.model_validate(
        {"channel": ROOT_URI, "session": SESSION, "changes": {"_meta": {"k": 1}}}
    )
    assert changed.changes.field_meta == {"k": 1}
    assert wire_dump(changed)["changes"] == {"_meta": {"k": 1}}


def test_auth_required_reason_is_closed() -> None:
    with pytest.raises(ValueError, match="reason"):
        AuthRequiredParams.model_validate(
            {"channel": ROOT_URI, "resource": {"resource": "r"}, "reason": "bored"}
        )


def test_every_params_type_in_the_schema_is_routed() -> None:
    schema = json.loads(
        (Path(__file__).resolve().parents[2] / "proto/ahp/0.7.0/ahp.schema.json").read_text(
            encoding="utf-8"
        )
    )
    params_defs = {name for name in schema["$defs"] if name.endswith("Params")}
    routed = {model.__name__ for model in METHODS.values()}
    assert params_defs - routed == {"BaseParams", "PaginatedParams"}


def test_partial_summary_has_exactly_the_summary_fields() -> None:
    from ahp_bridge.protocol.notifications import PartialSessionSummary

    full = {f.alias or n for n, f in g.SessionSummary.model_fields.items()}
    partial = {f.alias or n for n, f in PartialSessionSummary.model_fields.items()}
    assert partial == full
    assert not any(f.is_required() for f in PartialSessionSummary.model_fields.values())


def test_schema_named_fields_round_trip_under_their_wire_name() -> None:
    raw = {"schema": {"type": "object", "properties": {}}, "values": {"model": "x"}}
    model = g.ResolveSessionConfigResult.model_validate(raw)
    assert wire_dump(model) == raw
