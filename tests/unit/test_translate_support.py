"""Shared harness for the translation tests, and tests of the harness's own strictness.

The harness runs every action the translator emits (and every client action a test makes up)
through the AHP 0.7.0 wire models *strictly* (no field the schema does not define) and through
the real reducers, so each scenario ends with a chat and a session state to assert on.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import pytest
from pydantic import BaseModel

from ahp_bridge.agentapi import (
    Delta,
    Event,
    EventKind,
    Interaction,
    InteractionKind,
    InteractionState,
    Item,
    ItemKind,
    Option,
    Question,
    ToolCall,
    ToolStatus,
    Turn,
    TurnState,
)
from ahp_bridge.protocol import wire07
from ahp_bridge.protocol.actions import parse_action
from ahp_bridge.protocol.actions_v1 import ACTIONS_10
from ahp_bridge.state import status as st
from ahp_bridge.state.reducers import reduce
from ahp_bridge.translate import EventTranslator
from ahp_bridge.translate._wire import Action, Emitted, iso_from_ms
from tests.support.wire_schema import ours_0_7, v1_0

CHAT = "ahp-chat:/chat-1"
SESSION = "ahp-session:/session-1"
T0 = 1_700_000_000_000


class Clock:
    """The producer clock handed to the translator: moves only when a test says so."""

    def __init__(self, ms: int = T0) -> None:
        self.ms = ms

    def __call__(self) -> int:
        return self.ms

    def advance(self, ms: int) -> None:
        self.ms += ms


class Ids:
    """Deterministic id factory: id-1, id-2, ..."""

    def __init__(self) -> None:
        self.n = 0

    def __call__(self) -> str:
        self.n += 1
        return f"id-{self.n}"


def _extras(value: Any, path: str) -> list[str]:
    if isinstance(value, BaseModel):
        found = [f"{path}.{key}" for key in (value.model_extra or {})]
        for name in type(value).model_fields:
            if name in ("field_meta", "meta"):
                continue  # _meta is free-form by definition
            found += _extras(getattr(value, name), f"{path}.{name}")
        root = getattr(value, "root", None)
        if root is not None and not type(value).model_fields.get("root"):
            found += _extras(root, path)
        return found
    if isinstance(value, list | tuple):
        return [e for i, v in enumerate(value) for e in _extras(v, f"{path}[{i}]")]
    if isinstance(value, dict):
        return [e for k, v in value.items() for e in _extras(v, f"{path}.{k}")]
    return []


def strict(action: Action) -> None:
    """Fail unless ``action`` is a valid canonical (AHP 1.0) action using only schema-defined
    fields, and what a 0.7 peer receives for it is valid 0.7.0 the same way."""
    model = ACTIONS_10.parse(action)
    extras = _extras(model, "action")
    assert not extras, f"fields the schema does not define: {extras} in {action}"
    kind = ACTIONS_10.types[action["type"]]
    for down in wire07.down_actions(kind, action):
        extras = _extras(parse_action(down), "action")
        assert not extras, f"fields 0.7.0 does not define: {extras} in {down}"


def strict_type(name: str, value: Any) -> None:
    """Fail unless ``value`` is a valid 1.0 ``name`` (and, shown as 0.7.0, a valid 0.7.0 one)
    using only schema-defined fields."""
    v1_0().check(name, value)
    ours_0_7().check(name, wire07.down_turn(value) if name == "Turn" else value)


def new_chat() -> dict[str, Any]:
    return {"resource": CHAT, "title": "", "status": st.IDLE, "modifiedAt": "x", "turns": []}


def new_session() -> dict[str, Any]:
    return {
        "provider": "fake",
        "title": "",
        "status": st.IDLE,
        "lifecycle": "ready",
        "activeClients": [],
        "chats": [{"resource": CHAT, "title": "", "status": st.IDLE, "modifiedAt": "x"}],
    }


class Harness:
    """A translator wired to real reducers, with a fake clock and id factory."""

    def __init__(self) -> None:
        self.clock = Clock()
        self.ids = Ids()
        self.tr = EventTranslator(CHAT, SESSION, self.ids, self.clock)
        self.chat = new_chat()
        self.session = new_session()
        self.log: list[Emitted] = []

    def apply(self, emitted: Iterable[Emitted]) -> None:
        for channel, action in emitted:
            strict(action)
            if channel == CHAT:
                self.chat = reduce("chat", self.chat, action)
            else:
                assert channel == SESSION, channel
                self.session = reduce("session", self.session, action)
            self.log.append((channel, action))

    def feed(self, *events: Event) -> list[Emitted]:
        out: list[Emitted] = []
        for event in events:
            emitted = self.tr.translate(event)
            self.apply(emitted)
            out += emitted
        return out

    def client(self, action: Action, channel: str = CHAT) -> list[Emitted]:
        """Apply a client's action as the host would, then the translator's follow-ups."""
        strict(action)
        self.apply([(channel, action)])
        follow = self.tr.observe_client_action(action)
        self.apply(follow)
        return follow

    def start_turn(self, turn_id: str = "turn-1", text: str = "hello") -> None:
        self.client(user_turn(turn_id, text))

    @property
    def active(self) -> dict[str, Any]:
        turn = self.chat.get("activeTurn")
        assert isinstance(turn, dict), "no active turn"
        return turn

    @property
    def parts(self) -> list[dict[str, Any]]:
        return list(self.active["responseParts"])

    def tool_state(self, call_id: str) -> dict[str, Any]:
        turn = self.chat.get("activeTurn") or self.chat["turns"][-1]
        for part in turn["responseParts"]:
            if part["kind"] == "toolCall" and part["toolCall"]["toolCallId"] == call_id:
                return dict(part["toolCall"])
        raise AssertionError(f"no tool call {call_id}")


def types(emitted: Iterable[Emitted]) -> list[str]:
    return [action["type"] for _, action in emitted]


def user_turn(turn_id: str, text: str, **message: Any) -> Action:
    return {
        "type": "chat/turnStarted",
        "turnId": turn_id,
        "startedAt": iso_from_ms(T0),
        "message": {"text": text, "origin": {"kind": "user"}, **message},
    }


# ------------------------------------------------------------------ event constructors


def ev_turn(state: TurnState, **fields: Any) -> Event:
    return Event(kind=EventKind.TURN, turn=Turn(state=state, **fields))


def ev_item(kind: ItemKind, item_id: str, text: str = "", **fields: Any) -> Event:
    return Event(kind=EventKind.ITEM, item=Item(id=item_id, kind=kind, text=text, **fields))


def ev_delta(kind: ItemKind, item_id: str, text: str, agent_id: str = "") -> Event:
    delta = Delta(item_id=item_id, kind=kind, text=text, agent_id=agent_id)
    return Event(kind=EventKind.DELTA, delta=delta)


def ev_tool(item_id: str, status: ToolStatus, *, agent_id: str = "", **tool: Any) -> Event:
    tool.setdefault("name", "bash")
    call = ToolCall(status=status, **tool)
    item = Item(id=item_id, kind=ItemKind.TOOL, tool=call, agent_id=agent_id)
    return Event(kind=EventKind.ITEM, item=item)


PERMISSION_OPTIONS = [
    Option(id="once", label="Allow once", allow_once=True),
    Option(id="session", label="Allow for this session"),
    Option(id="deny", label="Deny", reject=True),
]


def permission(
    interaction_id: str = "perm-1",
    state: InteractionState = InteractionState.PENDING,
    **fields: Any,
) -> Interaction:
    fields.setdefault("title", "Run shell command")
    fields.setdefault("detail", "ls -la")
    fields.setdefault("options", PERMISSION_OPTIONS)
    return Interaction(id=interaction_id, kind=InteractionKind.PERMISSION, state=state, **fields)


def question(
    interaction_id: str = "ask-1",
    questions: list[Question] | None = None,
    state: InteractionState = InteractionState.PENDING,
    **fields: Any,
) -> Interaction:
    fields.setdefault("title", "Which colour?")
    return Interaction(
        id=interaction_id,
        kind=fields.pop("kind", InteractionKind.QUESTION),
        state=state,
        questions=questions if questions is not None else [Question(text="Pick one")],
        **fields,
    )


def ev_interaction(interaction: Interaction) -> Event:
    return Event(kind=EventKind.INTERACTION, interaction=interaction)


# ------------------------------------------------------------------ the harness's own checks


def test_strict_accepts_a_valid_action() -> None:
    strict({"type": "chat/delta", "turnId": "t", "partId": "p", "content": "x"})


def test_strict_rejects_a_field_the_schema_does_not_define() -> None:
    with pytest.raises(AssertionError, match="contnet"):
        strict({"type": "chat/delta", "turnId": "t", "partId": "p", "content": "", "contnet": 1})


def test_strict_rejects_a_nested_unknown_field() -> None:
    part = {"kind": "markdown", "id": "p", "content": "", "bogus": True}
    with pytest.raises(AssertionError, match="bogus"):
        strict({"type": "chat/responsePart", "turnId": "t", "part": part})


def test_strict_rejects_a_missing_required_field() -> None:
    with pytest.raises(ValueError, match="duration"):
        strict({"type": "chat/turnComplete", "turnId": "t"})


def test_iso_from_ms_matches_javascript_to_iso_string() -> None:
    assert iso_from_ms(0) == "1970-01-01T00:00:00.000Z"
    assert iso_from_ms(T0 + 42) == "2023-11-14T22:13:20.042Z"
