"""The provider bridge end to end: real WebSockets, the real host, the fake provider.

One test per flow. Each drives a scripted prompt (`scripts/bridge.toml`) through a client's
`chat/turnStarted` and asserts the exact action types every client receives on the chat and
session channels, that every client's locally reduced state equals the host's snapshot
(modulo `modifiedAt`), that the session catalog and the session list agree with the chat,
and, through a recording wrapper around the provider, which calls reached the provider.
"""

from __future__ import annotations

import copy
import json
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import trio
from ahp_bridge_fake.record import RecordingProvider

from ahp_bridge import providers
from ahp_bridge.config import Settings
from ahp_bridge.state import status as st
from tests.e2e.conftest import Bridge, StartBridge
from tests.e2e.test_host_core import comparable, new_session_uri
from tests.support.ahp_client import AhpClient, RpcFailure

ROOT = "ahp-root://"
SCRIPT = Path(__file__).parent / "scripts" / "bridge.toml"

# -- fixtures ----------------------------------------------------------------------------------


class Calls:
    """The provider calls the bridge made, read back from the recording wrapper's JSONL."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def lines(self) -> list[dict[str, Any]]:
        if not self.path.exists():
            return []
        return [json.loads(line) for line in self.path.read_text().splitlines() if line]

    def calls(self, name: str | None = None) -> list[dict[str, Any]]:
        return [
            line
            for line in self.lines()
            if "call" in line and (name is None or line["call"] == name)
        ]

    def returns(self, name: str) -> list[dict[str, Any]]:
        return [line for line in self.lines() if line.get("return") == name]

    def names(self) -> list[str]:
        return [line["call"] for line in self.calls()]

    async def wait(self, predicate: Callable[[], Any]) -> Any:
        """Poll the recording until `predicate` holds (the provider writes it, not a socket)."""
        with trio.fail_after(10):
            while not (value := predicate()):
                await trio.sleep(0.005)
        return value


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Calls:
    """Wrap every provider the bridge creates in the fake's RecordingProvider."""
    path = tmp_path / "provider-calls.jsonl"
    real = providers.create

    def create(name: str, options: Any = None) -> Any:
        return RecordingProvider(real(name, options), path)

    monkeypatch.setattr(providers, "create", create)
    return Calls(path)


@pytest.fixture
async def bridge(
    start_bridge: StartBridge, make_settings: Callable[..., Settings], calls: Calls
) -> Bridge:
    settings = make_settings()
    # time_scale 1: the script has no pacing except the waits a test ends by cancelling.
    settings.providers = {"fake": {"script": str(SCRIPT), "time_scale": 1.0}}
    return await start_bridge(settings)


# -- helpers -----------------------------------------------------------------------------------


class Watcher:
    """The session list as a root subscriber sees it: sessionAdded + sessionSummaryChanged."""

    def __init__(self, client: AhpClient) -> None:
        self.client = client

    def summary(self, session: str) -> dict[str, Any]:
        current: dict[str, Any] = {}
        for note in self.client.notifications:
            params = note["params"]
            if note["method"] == "root/sessionAdded" and params["summary"]["resource"] == session:
                current = dict(params["summary"])
            elif note["method"] == "root/sessionSummaryChanged" and params["session"] == session:
                assert {"resource", "provider", "createdAt"}.isdisjoint(params["changes"])
                current.update(params["changes"])
        return current

    def changes(self, session: str) -> list[dict[str, Any]]:
        return [
            n["params"]["changes"]
            for n in self.client.notifications
            if n["method"] == "root/sessionSummaryChanged" and n["params"]["session"] == session
        ]


class Flow:
    """One session with its default chat, seen by a main client and a root watcher."""

    def __init__(self, bridge: Bridge, client: AhpClient, watcher: Watcher) -> None:
        self.bridge = bridge
        self.client = client
        self.watcher = watcher
        self.session = ""
        self.chat = ""
        self.clients = [client]

    async def open(self) -> None:
        self.session = new_session_uri()
        await self.client.request("createSession", {"channel": self.session, "provider": "fake"})
        await self.client.subscribe(self.session)
        await self.client.wait_for(
            lambda: self.client.states[self.session].get("lifecycle") == "ready"
        )
        self.chat = self.client.states[self.session]["defaultChat"]
        await self.client.subscribe(self.chat)

    async def join(self, client_id: str) -> AhpClient:
        other = await self.bridge.client(client_id)
        await other.subscribe(self.session)
        await other.subscribe(self.chat)
        self.clients.append(other)
        return other

    async def sync(self) -> None:
        """A ping round-trip on every client: the host answers in order, so everything it sent
        before is reduced by then."""
        for client in self.clients:
            assert await client.request("ping", {"channel": ROOT}) is None

    def mark(self) -> dict[str, int]:
        """Where each client's envelope list ends now (to read what comes after)."""
        return {c.client_id: len(c.envelopes) for c in self.clients}

    async def start(self, text: str, client: AhpClient | None = None) -> str:
        return await (client or self.client).start_turn(self.chat, text)

    async def ended(self, turn_id: str, client: AhpClient | None = None) -> dict[str, Any]:
        """Wait until `turn_id` is in the chat's finished turns; returns it."""
        client = client or self.client

        def done() -> dict[str, Any] | None:
            state = client.states[self.chat]
            if state.get("activeTurn"):
                return None
            return next((t for t in state["turns"] if t["id"] == turn_id), None)

        turn: dict[str, Any] = await client.wait_for(done)
        # what the host sent along with the end (session updates) is in by the ping's answer
        assert await client.request("ping", {"channel": ROOT}) is None
        return turn

    async def dispatch(
        self, action: dict[str, Any], *, channel: str | None = None, client: AhpClient | None = None
    ) -> dict[str, Any]:
        client = client or self.client
        return await client.echo_of(await client.dispatch(channel or self.chat, action))

    def actions(
        self, since: dict[str, int], channel: str, client: AhpClient | None = None
    ) -> list[dict[str, Any]]:
        client = client or self.client
        return [
            e["action"]
            for e in client.envelopes[since[client.client_id] :]
            if e["channel"] == channel and e.get("rejectionReason") is None
        ]

    def types(
        self, since: dict[str, int], channel: str, client: AhpClient | None = None
    ) -> list[str]:
        """Action types, with each run of streamed text shown once: the bridge may merge a
        burst of deltas into one action (see translate/coalesce.py), so how many there are
        depends on timing, never what they add up to (the tests check the text)."""
        return collapse_streams([a["type"] for a in self.actions(since, channel, client)])

    def chat_types(self, since: dict[str, int]) -> list[str]:
        return self.types(since, self.chat)

    def session_types(self, since: dict[str, int]) -> list[str]:
        return self.types(since, self.session)

    async def settled(self) -> None:
        """Every client's state equals the host's, and the catalog and list agree with it."""
        await self.sync()
        host: dict[str, Any] = {}
        for channel in (self.session, self.chat):
            snap = await self.client.request("subscribe", {"channel": channel})
            host[channel] = snap["snapshot"]["state"]
        for client in self.clients:
            for channel in (self.session, self.chat):
                assert comparable(held(client.states[channel], host[channel])) == comparable(
                    host[channel]
                ), (client.client_id, channel)
        session, chat = host[self.session], host[self.chat]
        [entry] = [c for c in session["chats"] if c["resource"] == self.chat]
        # session/chatUpdated keeps the catalog entry equal to the chat's own summary fields
        for key in ("status", "modifiedAt"):
            assert entry.get(key) == chat.get(key), key
        assert entry.get("activity") in (None, "", chat.get("activity")), "activity"
        # root/sessionSummaryChanged keeps the watcher's list equal to listSessions
        watcher = self.watcher.client
        root = await watcher.request("subscribe", {"channel": ROOT})
        assert comparable(watcher.states[ROOT]) == comparable(root["snapshot"]["state"])
        listed = await self.client.request("listSessions", {"channel": ROOT})
        [item] = [s for s in listed["items"] if s["resource"] == self.session]
        assert self.watcher.summary(self.session) == item
        # one chat: the summary's activity bits are the chat's; flags stay the session's
        assert item["status"] & st.ACTIVITY_MASK == chat["status"] & st.ACTIVITY_MASK
        assert item["status"] & ~st.ACTIVITY_MASK == session["status"] & ~st.ACTIVITY_MASK
        waiting = chat["status"] & st.ACTIVITY_MASK == st.INPUT_NEEDED
        assert bool(session.get("inputNeeded")) == waiting
        assert (session["status"] & st.ACTIVITY_MASK == st.INPUT_NEEDED) == waiting
        assert item["title"] == session["title"] == entry["title"]


def held(mine: dict[str, Any], host: dict[str, Any]) -> dict[str, Any]:
    """A client's state as the host's snapshot shows it: a client keeps every turn it was sent,
    the host only its newest (limits.max_live_turns), and the cursor to the rest."""
    if "turns" not in host or "turns" not in mine:
        return mine
    kept = len(host["turns"])
    out = {**mine, "turns": mine["turns"][len(mine["turns"]) - kept :] if kept else []}
    out.pop("turnsNextCursor", None)
    if "turnsNextCursor" in host:
        out["turnsNextCursor"] = host["turnsNextCursor"]
    return out


@pytest.fixture
async def flow(bridge: Bridge) -> Flow:
    watcher = await bridge.client("watcher")
    await watcher.subscribe(ROOT)
    client = await bridge.client("client-1")
    flow = Flow(bridge, client, Watcher(watcher))
    await flow.open()
    return flow


def collapse_streams(types: list[str]) -> list[str]:
    """Each run of `chat/delta` or `chat/reasoning` as one entry."""
    out: list[str] = []
    for kind in types:
        if not (out and kind == out[-1] and kind in ("chat/delta", "chat/reasoning")):
            out.append(kind)
    return out


def streamed(text: str, chunk: int = 8) -> list[str]:
    """The chat actions of one streamed text step: its first chunk opens the part."""
    chunks = max(1, -(-len(text) // chunk))
    return ["chat/responsePart", *(["chat/delta"] if chunks > 1 else [])]


def parts(turn: dict[str, Any]) -> list[dict[str, Any]]:
    return turn["responseParts"]


def updated(actions: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The `changes` of the session/chatUpdated actions among `actions`."""
    return [a["changes"] for a in actions if a["type"] == "session/chatUpdated"]


TURN_SESSION = ["session/chatUpdated", "session/chatUpdated"]
"""A turn without requests on the session channel: the chat goes InProgress, then Idle."""


# -- streaming ---------------------------------------------------------------------------------


async def test_streaming_text(flow: Flow, calls: Calls) -> None:
    other = await flow.join("client-2")
    mark = flow.mark()
    turn_id = await flow.start("stream")
    turn = await flow.ended(turn_id)
    await flow.ended(turn_id, other)
    text = "Hello from the fake, streamed in chunks."
    chunks = [text[i : i + 8] for i in range(0, len(text), 8)]
    expected = [
        "chat/turnStarted",
        "chat/responsePart",
        *(["chat/delta"] if len(chunks) > 1 else []),
        "chat/turnComplete",
    ]
    for client in flow.clients:
        assert flow.types(mark, flow.chat, client) == expected
    actions = flow.actions(mark, flow.chat)
    assert actions[0]["turnId"] == turn_id
    assert actions[1]["part"]["kind"] == "markdown"
    assert actions[1]["part"]["content"] == chunks[0]
    assert "".join(a["content"] for a in actions[2:-1]) == "".join(chunks[1:])
    assert {a["partId"] for a in actions[2:-1]} == {actions[1]["part"]["id"]}
    assert turn["state"] == "complete"
    assert [(p["kind"], p["content"]) for p in parts(turn)] == [("markdown", text)]
    sends = calls.calls("send")
    assert [c["args"]["prompt"]["Text"] for c in sends] == ["stream"]
    for client in flow.clients:
        assert flow.types(mark, flow.session, client) == TURN_SESSION
    assert [c["status"] for c in updated(flow.actions(mark, flow.session))] == [
        st.IN_PROGRESS,
        st.IDLE,
    ]
    await flow.settled()


async def test_reasoning_then_text(flow: Flow) -> None:
    mark = flow.mark()
    turn = await flow.ended(await flow.start("reason"))
    assert flow.chat_types(mark) == [
        "chat/turnStarted",
        "chat/responsePart",
        "chat/reasoning",
        "chat/responsePart",
        "chat/turnComplete",
    ]
    actions = flow.actions(mark, flow.chat)
    reasoning_id = actions[1]["part"]["id"]
    assert actions[1]["part"]["kind"] == "reasoning"
    streamed_reasoning = [a for a in actions if a["type"] == "chat/reasoning"]
    assert {a["partId"] for a in streamed_reasoning} == {reasoning_id}
    assert actions[-2]["part"]["kind"] == "markdown"
    assert [(p["kind"], p["content"]) for p in parts(turn)] == [
        ("reasoning", "Thinking it over carefully."),
        ("markdown", "Decided."),
    ]
    assert flow.session_types(mark) == TURN_SESSION
    assert [c["status"] for c in updated(flow.actions(mark, flow.session))] == [
        st.IN_PROGRESS,
        st.IDLE,
    ]
    await flow.settled()


async def test_auto_approved_tool(flow: Flow) -> None:
    mark = flow.mark()
    turn = await flow.ended(await flow.start("tool"))
    assert flow.chat_types(mark) == [
        "chat/turnStarted",
        "chat/toolCallStart",
        "chat/toolCallReady",
        "chat/toolCallComplete",
        "chat/responsePart",
        "chat/turnComplete",
    ]
    start, ready, complete = flow.actions(mark, flow.chat)[1:4]
    assert (start["toolName"], start["displayName"]) == ("shell", "Run ls")
    assert ready["confirmed"] == "not-needed"
    assert ready["toolInput"] == '{"command": "ls"}'
    assert complete["result"]["success"] is True
    assert complete["result"]["content"] == [{"type": "text", "text": "a.txt\nb.txt\n"}]
    [tool_part] = [p for p in parts(turn) if p["kind"] == "toolCall"]
    assert tool_part["toolCall"]["status"] == "completed"
    assert flow.session_types(mark) == TURN_SESSION  # no input was ever needed
    await flow.settled()


# -- permissions -------------------------------------------------------------------------------


async def pending_request(flow: Flow, client: AhpClient | None = None) -> dict[str, Any]:
    """The session's one open input request, once the host announced it."""
    client = client or flow.client
    queue = await client.wait_for(lambda: client.states[flow.session].get("inputNeeded"))
    assert len(queue) == 1
    return queue[0]


PERMISSION_SESSION = [
    "session/chatUpdated",  # InProgress
    "session/chatUpdated",  # InputNeeded
    "session/inputNeededSet",
    "session/chatUpdated",  # InProgress again once answered
    "session/inputNeededRemoved",
    "session/chatUpdated",  # Idle
]


@pytest.mark.parametrize(
    ("approved", "decision", "reply", "status"),
    [(True, "allow-once", "allowed", "completed"), (False, "reject", "denied", "cancelled")],
    ids=["approved", "denied"],
)
async def test_permission(
    flow: Flow, calls: Calls, approved: bool, decision: str, reply: str, status: str
) -> None:
    mark = flow.mark()
    turn_id = await flow.start("permission")
    request = await pending_request(flow)
    assert request["kind"] == "toolConfirmation"
    assert request["turnId"] == turn_id
    tool = request["toolCall"]
    assert tool["status"] == "pending-confirmation"
    assert [o["id"] for o in tool["options"]] == ["allow-once", "allow-session", "reject"]
    assert flow.client.states[flow.chat]["status"] == st.INPUT_NEEDED
    assert calls.calls("respond") == []  # nothing is decided before a client answers
    answer: dict[str, Any] = {
        "type": "chat/toolCallConfirmed",
        "turnId": turn_id,
        "toolCallId": tool["toolCallId"],
        "approved": approved,
    }
    answer.update({"confirmed": "user-action"} if approved else {"reason": "denied"})
    echo = await flow.dispatch(answer)
    assert "rejectionReason" not in echo
    turn = await flow.ended(turn_id)
    assert flow.chat_types(mark) == [
        "chat/turnStarted",
        "chat/toolCallStart",
        "chat/toolCallReady",
        "chat/toolCallConfirmed",
        *(["chat/toolCallComplete"] if approved else []),
        "chat/responsePart",
        "chat/turnComplete",
    ]
    ready = flow.actions(mark, flow.chat)[2]
    assert "confirmed" not in ready
    assert ready["confirmationTitle"] == "Run rm"
    assert flow.session_types(mark) == PERMISSION_SESSION
    assert [c["status"] for c in updated(flow.actions(mark, flow.session))] == [
        st.IN_PROGRESS,
        st.INPUT_NEEDED,
        st.IN_PROGRESS,
        st.IDLE,
    ]
    removed = flow.actions(mark, flow.session)[4]
    assert removed["id"] == request["id"]
    [responded] = calls.calls("respond")
    assert responded["args"]["answer"] == {"decision": decision}
    [tool_part] = [p for p in parts(turn) if p["kind"] == "toolCall"]
    assert tool_part["toolCall"]["status"] == status
    assert parts(turn)[-1]["content"] == reply
    await flow.settled()


async def test_two_clients_race_to_answer_one_permission(flow: Flow, calls: Calls) -> None:
    other = await flow.join("client-2")
    turn_id = await flow.start("permission")
    request = await pending_request(flow)
    await pending_request(flow, other)
    call_id = request["toolCall"]["toolCallId"]
    base = {"type": "chat/toolCallConfirmed", "turnId": turn_id, "toolCallId": call_id}
    approve = {**base, "approved": True, "confirmed": "user-action"}
    deny = {**base, "approved": False, "reason": "denied"}
    # Both answers leave before either echo comes back.
    seq_a = await flow.client.dispatch(flow.chat, approve)
    seq_b = await other.dispatch(flow.chat, deny)
    echo_a = await flow.client.echo_of(seq_a)
    echo_b = await other.echo_of(seq_b)
    accepted = [e for e in (echo_a, echo_b) if "rejectionReason" not in e]
    rejected = [e for e in (echo_a, echo_b) if "rejectionReason" in e]
    assert len(accepted) == 1 and len(rejected) == 1
    winner, loser = accepted[0], rejected[0]
    assert "not awaiting confirmation" in loser["rejectionReason"]
    # every client saw the winner's echo; only the loser saw its own rejection
    for client in flow.clients:
        assert winner in client.envelopes
        mine = loser["origin"]["clientId"] == client.client_id
        assert (loser in client.envelopes) == mine
    turn = await flow.ended(turn_id)
    await flow.ended(turn_id, other)
    won_by_approval = winner["action"]["approved"] is True
    [responded] = calls.calls("respond")
    assert responded["args"]["answer"] == {
        "decision": "allow-once" if won_by_approval else "reject"
    }
    assert parts(turn)[-1]["content"] == ("allowed" if won_by_approval else "denied")
    await flow.settled()


# -- questions ---------------------------------------------------------------------------------


def selected(option: str) -> dict[str, Any]:
    return {"state": "submitted", "value": {"kind": "selected", "value": option}}


QUESTION_SESSION = [
    "session/chatUpdated",  # InProgress
    "session/chatUpdated",  # InputNeeded
    "session/inputNeededSet",
    "session/chatUpdated",  # InProgress again once completed
    "session/inputNeededRemoved",
    "session/chatUpdated",  # Idle
]


@pytest.mark.parametrize(
    ("response", "answers", "provider_answer", "reply"),
    [
        ("accept", {"q0": selected("green")}, {"answers": [["green"]]}, "answer: green"),
        ("decline", None, {"reject": True}, "declined"),
        # a plain question has no cancel of its own: the provider hears a refusal
        ("cancel", None, {"reject": True}, "declined"),
    ],
    ids=["accepted", "declined", "cancelled"],
)
async def test_question(
    flow: Flow,
    calls: Calls,
    response: str,
    answers: dict[str, Any] | None,
    provider_answer: dict[str, Any],
    reply: str,
) -> None:
    mark = flow.mark()
    turn_id = await flow.start("question")
    request = await pending_request(flow)
    assert request["kind"] == "chatInput"
    questions = request["request"]["questions"]
    assert [(q["kind"], q["id"]) for q in questions] == [("single-select", "q0")]
    assert [o["id"] for o in questions[0]["options"]] == ["red", "green", "blue"]
    completed: dict[str, Any] = {
        "type": "chat/inputCompleted",
        "requestId": request["request"]["id"],
        "response": response,
    }
    if answers is not None:
        completed["answers"] = answers
    echo = await flow.dispatch(completed)
    assert "rejectionReason" not in echo
    turn = await flow.ended(turn_id)
    assert flow.chat_types(mark) == [
        "chat/turnStarted",
        "chat/inputRequested",
        "chat/inputCompleted",
        *streamed(reply),
        "chat/turnComplete",
    ]
    assert flow.actions(mark, flow.chat)[2] == echo["action"]
    assert flow.session_types(mark) == QUESTION_SESSION
    [responded] = calls.calls("respond")
    assert responded["args"]["answer"] == provider_answer
    [input_part] = [p for p in parts(turn) if p["kind"] == "inputRequest"]
    assert input_part["response"] == response
    assert "".join(p["content"] for p in parts(turn) if p["kind"] == "markdown") == reply
    await flow.settled()


def number(value: Any) -> dict[str, Any]:
    return {"state": "submitted", "value": {"kind": "number", "value": value}}


def boolean(value: bool) -> dict[str, Any]:
    return {"state": "submitted", "value": {"kind": "boolean", "value": value}}


async def test_elicitation_form(flow: Flow, calls: Calls) -> None:
    mark = flow.mark()
    turn_id = await flow.start("form")
    request = await pending_request(flow)
    questions = request["request"]["questions"]
    assert [(q["kind"], q["id"], q.get("required")) for q in questions] == [
        ("integer", "q0", True),
        ("boolean", "q1", None),
    ]
    assert (questions[0]["min"], questions[0]["max"]) == (1, 10)
    # a draft synced by another dispatch is merged into the final answers
    echo = await flow.dispatch(
        {
            "type": "chat/inputAnswerChanged",
            "requestId": request["request"]["id"],
            "questionId": "q1",
            "answer": boolean(True),
        }
    )
    assert "rejectionReason" not in echo
    echo = await flow.dispatch(
        {
            "type": "chat/inputCompleted",
            "requestId": request["request"]["id"],
            "response": "accept",
            "answers": {"q0": number(3)},
        }
    )
    assert "rejectionReason" not in echo
    turn = await flow.ended(turn_id)
    assert flow.chat_types(mark) == [
        "chat/turnStarted",
        "chat/inputRequested",
        "chat/inputAnswerChanged",
        "chat/inputCompleted",
        "chat/responsePart",
        "chat/delta",
        "chat/turnComplete",
    ]
    assert flow.session_types(mark) == [
        "session/chatUpdated",  # InProgress
        "session/chatUpdated",  # InputNeeded
        "session/inputNeededSet",
        "session/chatUpdated",  # the draft moved modifiedAt
        "session/chatUpdated",  # InProgress again once completed
        "session/inputNeededRemoved",
        "session/chatUpdated",  # Idle
    ]
    assert updated(flow.actions(mark, flow.session))[2].keys() == {"modifiedAt"}
    [responded] = calls.calls("respond")
    assert responded["args"]["answer"] == {"answers": [["3"], ["Yes"]]}
    assert "".join(p["content"] for p in parts(turn) if p["kind"] == "markdown") == (
        "settings saved"
    )
    await flow.settled()


async def test_elicitation_form_cancelled(flow: Flow, calls: Calls) -> None:
    turn_id = await flow.start("form")
    request = await pending_request(flow)
    completed = {
        "type": "chat/inputCompleted",
        "requestId": request["request"]["id"],
        "response": "cancel",
    }
    assert "rejectionReason" not in await flow.dispatch(completed)
    turn = await flow.ended(turn_id)
    [responded] = calls.calls("respond")
    assert responded["args"]["answer"] == {"cancel": True}
    assert "".join(p["content"] for p in parts(turn) if p["kind"] == "markdown") == (
        "form cancelled"
    )
    await flow.settled()


@pytest.mark.parametrize(
    ("answers", "reason"),
    [
        ({"q0": number(11)}, "q0"),  # above the field's maximum
        ({"q0": number(0)}, "q0"),  # below its minimum
        ({"q0": number(2.5)}, "q0"),  # not an integer
        ({"q0": {"state": "submitted", "value": {"kind": "text", "value": "3"}}}, "q0"),
        ({"q1": boolean(True)}, "q0"),  # the required question has no answer
        ({"q0": number(3), "q7": boolean(True)}, "q7"),  # no such question
    ],
    ids=["too-big", "too-small", "fraction", "wrong-kind", "missing-required", "unknown"],
)
async def test_answers_that_do_not_fit_are_rejected_and_never_reach_the_provider(
    flow: Flow, calls: Calls, answers: dict[str, Any], reason: str
) -> None:
    turn_id = await flow.start("form")
    request = await pending_request(flow)
    request_id = request["request"]["id"]
    before = (await flow.client.request("subscribe", {"channel": flow.chat}))["snapshot"]
    bad = {
        "type": "chat/inputCompleted",
        "requestId": request_id,
        "response": "accept",
        "answers": answers,
    }
    echo = await flow.dispatch(bad)
    assert echo["rejectionReason"], echo
    assert reason in echo["rejectionReason"]
    after = (await flow.client.request("subscribe", {"channel": flow.chat}))["snapshot"]
    assert after == before  # state and serverSeq untouched
    assert calls.calls("respond") == []
    assert flow.client.states[flow.session]["inputNeeded"] == [request]  # still open
    # the request is still answerable
    good = {**bad, "answers": {"q0": number(10), "q1": boolean(False)}}
    assert "rejectionReason" not in await flow.dispatch(good)
    await flow.ended(turn_id)
    [responded] = calls.calls("respond")
    assert responded["args"]["answer"] == {"answers": [["10"], ["No"]]}
    await flow.settled()


async def test_a_choice_that_was_not_offered_is_rejected(flow: Flow, calls: Calls) -> None:
    turn_id = await flow.start("question")
    request = await pending_request(flow)
    bad = {
        "type": "chat/inputCompleted",
        "requestId": request["request"]["id"],
        "response": "accept",
        "answers": {"q0": selected("purple")},
    }
    echo = await flow.dispatch(bad)
    assert "purple" in echo["rejectionReason"]
    assert calls.calls("respond") == []
    assert "rejectionReason" not in await flow.dispatch({**bad, "answers": {"q0": selected("red")}})
    await flow.ended(turn_id)
    [responded] = calls.calls("respond")
    assert responded["args"]["answer"] == {"answers": [["red"]]}
    await flow.settled()


# -- cancel, steer, queue ----------------------------------------------------------------------


async def test_cancel_while_streaming(flow: Flow, calls: Calls) -> None:
    other = await flow.join("client-2")
    mark = flow.mark()
    turn_id = await flow.start("stream: slow")
    # the first chunk is out; the next one is an hour away
    await flow.client.wait_for(
        lambda: (flow.client.states[flow.chat].get("activeTurn") or {}).get("responseParts")
    )
    echo = await flow.dispatch({"type": "chat/turnCancelled", "turnId": turn_id, "duration": 7})
    assert "rejectionReason" not in echo
    turn = await flow.ended(turn_id)
    await flow.ended(turn_id, other)
    await calls.wait(lambda: calls.returns("cancel"))
    for client in flow.clients:
        assert flow.types(mark, flow.chat, client) == [
            "chat/turnStarted",
            "chat/responsePart",
            "chat/turnCancelled",
        ]
    assert flow.actions(mark, flow.chat)[-1] == echo["action"]
    assert turn["state"] == "cancelled"
    assert parts(turn) == [
        {
            "kind": "markdown",
            "id": flow.actions(mark, flow.chat)[1]["part"]["id"],
            "content": "first chunk ",
        }
    ]
    assert flow.session_types(mark) == TURN_SESSION
    # the provider's own late "cancelled" end is not a second end for clients
    assert [r["error"] for r in calls.returns("cancel")] == [None]
    next_turn = await flow.ended(await flow.start("stream"))
    assert next_turn["state"] == "complete"
    await flow.settled()
    ends = [t for t in flow.chat_types(mark) if t in ("chat/turnComplete", "chat/turnCancelled")]
    assert ends == ["chat/turnCancelled", "chat/turnComplete"]


async def test_a_turn_cancelled_before_the_provider_saw_it_never_shows_up_again(
    flow: Flow, calls: Calls
) -> None:
    """Start and cancel back to back, so the cancel lands before, during or after the send."""
    for _ in range(5):
        mark = flow.mark()
        turn_id = str(uuid.uuid4())
        started = {
            "type": "chat/turnStarted",
            "turnId": turn_id,
            "startedAt": "2026-01-01T00:00:00.000Z",
            "message": {"text": "stream: slow", "origin": {"kind": "user"}},
        }
        cancelled = {"type": "chat/turnCancelled", "turnId": turn_id, "duration": 0}
        first = await flow.client.dispatch(flow.chat, started)
        second = await flow.client.dispatch(flow.chat, cancelled)
        for seq in (first, second):
            assert "rejectionReason" not in await flow.client.echo_of(seq)
        # the next turn is the only thing that follows
        turn = await flow.ended(await flow.start("stream"))
        assert turn["state"] == "complete"
        types = flow.chat_types(mark)
        cut = types.index("chat/turnCancelled")
        # When the cancel lands after the send, the slow turn's first chunk may come before it
        # (one part, no more: the pause is an hour); nothing of that turn comes after it.
        assert types[:cut] in (["chat/turnStarted"], ["chat/turnStarted", "chat/responsePart"])
        assert types[cut:] == [
            "chat/turnCancelled",
            "chat/turnStarted",
            *streamed("Hello from the fake, streamed in chunks."),
            "chat/turnComplete",
        ]
    states = [t["state"] for t in flow.client.states[flow.chat]["turns"]]
    assert states == ["cancelled", "complete"] * 5
    await flow.settled()


async def test_cancel_while_a_permission_waits_removes_the_request(
    flow: Flow, calls: Calls
) -> None:
    mark = flow.mark()
    turn_id = await flow.start("permission")
    request = await pending_request(flow)
    echo = await flow.dispatch({"type": "chat/turnCancelled", "turnId": turn_id, "duration": 1})
    assert "rejectionReason" not in echo
    turn = await flow.ended(turn_id)
    assert flow.chat_types(mark) == [
        "chat/turnStarted",
        "chat/toolCallStart",
        "chat/toolCallReady",
        "chat/turnCancelled",
    ]
    session = flow.actions(mark, flow.session)
    assert [a["type"] for a in session] == [
        "session/chatUpdated",  # InProgress
        "session/chatUpdated",  # InputNeeded
        "session/inputNeededSet",
        "session/chatUpdated",  # Idle: the cancelled turn ended
        "session/inputNeededRemoved",
    ]
    assert session[3]["changes"]["status"] == st.IDLE
    assert session[4]["id"] == request["id"]
    [tool_part] = [p for p in parts(turn) if p["kind"] == "toolCall"]
    assert tool_part["toolCall"]["status"] == "cancelled"
    await calls.wait(lambda: calls.returns("cancel"))
    assert calls.calls("respond") == []
    await flow.settled()


def pending_message(kind: str, message_id: str, text: str) -> dict[str, Any]:
    return {
        "type": "chat/pendingMessageSet",
        "kind": kind,
        "id": message_id,
        "message": {"text": text, "origin": {"kind": "user"}},
    }


def yes(request: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "chat/inputCompleted",
        "requestId": request["request"]["id"],
        "response": "accept",
        "answers": {"q0": selected("yes")},
    }


async def test_steering_reaches_the_running_turn(flow: Flow, calls: Calls) -> None:
    mark = flow.mark()
    turn_id = await flow.start("gate")
    request = await pending_request(flow)
    echo = await flow.dispatch(pending_message("steering", "s1", "also check the tests"))
    assert "rejectionReason" not in echo
    # the host hands it to the provider, then takes it off the chat
    await flow.client.wait_for(lambda: "steeringMessage" not in flow.client.states[flow.chat])
    [steer] = calls.calls("steer")
    assert steer["args"]["prompt"]["Text"] == "also check the tests"
    assert "rejectionReason" not in await flow.dispatch(yes(request))
    turn = await flow.ended(turn_id)
    assert flow.chat_types(mark) == [
        "chat/turnStarted",
        "chat/inputRequested",
        "chat/pendingMessageSet",
        "chat/pendingMessageRemoved",
        "chat/inputCompleted",
        "chat/responsePart",
        "chat/delta",
        "chat/turnComplete",
    ]
    removed = flow.actions(mark, flow.chat)[3]
    assert (removed["kind"], removed["id"]) == ("steering", "s1")
    assert flow.session_types(mark) == QUESTION_SESSION  # steering needs no session action
    # the provider used it at its next step (a user item delivered as a steer)
    steer_items = [
        line["event"]["Item"]
        for line in calls.lines()
        if "event" in line and (line["event"].get("Item") or {}).get("delivery") == "steer"
    ]
    assert [i["text"] for i in steer_items] == ["also check the tests"]
    assert parts(turn)[-1]["content"] == "continued"
    await flow.settled()


async def test_a_steer_the_turn_never_used_gets_a_notice(flow: Flow, calls: Calls) -> None:
    mark = flow.mark()
    turn_id = await flow.start("gate: nosteer")
    request = await pending_request(flow)
    assert "rejectionReason" not in await flow.dispatch(pending_message("steering", "s2", "hm"))
    await flow.client.wait_for(lambda: "steeringMessage" not in flow.client.states[flow.chat])
    assert "rejectionReason" not in await flow.dispatch(yes(request))
    turn = await flow.ended(turn_id)
    assert flow.chat_types(mark)[-2:] == ["chat/responsePart", "chat/turnComplete"]
    notice = parts(turn)[-1]
    assert notice["kind"] == "systemNotification"
    assert "not used" in notice["content"]
    await flow.settled()


async def test_steering_without_a_running_turn_is_rejected(flow: Flow, calls: Calls) -> None:
    echo = await flow.dispatch(pending_message("steering", "s3", "too late"))
    assert "no turn" in echo["rejectionReason"]
    assert calls.calls("steer") == []


async def test_queued_messages_start_when_the_turn_ends(flow: Flow, calls: Calls) -> None:
    other = await flow.join("client-2")
    mark = flow.mark()
    turn_id = await flow.start("gate")
    request = await pending_request(flow)
    for message_id, text in (("m1", "stream"), ("m2", "tool")):
        echo = await flow.dispatch(pending_message("queued", message_id, text), client=other)
        assert "rejectionReason" not in echo
    await flow.client.wait_for(lambda: len(flow.client.states[flow.chat]["queuedMessages"]) == 2)
    assert [c["args"]["prompt"]["Text"] for c in calls.calls("send")] == ["gate"]  # not yet
    assert "rejectionReason" not in await flow.dispatch(yes(request))
    # the gate turn, then m1, then m2, each started by the host once the chat is idle

    def three_turns() -> bool:
        state = flow.client.states[flow.chat]
        return not state.get("activeTurn") and len(state["turns"]) == 3

    await flow.client.wait_for(three_turns)
    state = flow.client.states[flow.chat]
    assert "queuedMessages" not in state
    assert [t["message"]["text"] for t in state["turns"]] == ["gate", "stream", "tool"]
    assert state["turns"][0]["id"] == turn_id
    assert [t["state"] for t in state["turns"]] == ["complete"] * 3
    assert [c["args"]["prompt"]["Text"] for c in calls.calls("send")] == ["gate", "stream", "tool"]
    starts = [a for a in flow.actions(mark, flow.chat) if a["type"] == "chat/turnStarted"]
    assert [a.get("queuedMessageId") for a in starts] == [None, "m1", "m2"]
    started_envelopes = [
        e
        for e in flow.client.envelopes[mark["client-1"] :]
        if e["action"]["type"] == "chat/turnStarted"
    ]
    assert [e.get("origin") is None for e in started_envelopes] == [False, True, True]
    # a host-started turn comes right after the previous turn's end
    types = flow.chat_types(mark)
    for index, kind in enumerate(types):
        if kind == "chat/turnStarted" and index > 0:
            assert types[index - 1] == "chat/turnComplete"
    assert types.count("chat/pendingMessageSet") == 2
    await flow.settled()


# -- failures ----------------------------------------------------------------------------------


async def test_provider_error_fails_the_turn(flow: Flow) -> None:
    mark = flow.mark()
    turn_id = await flow.start("fail")
    turn = await flow.ended(turn_id)
    assert flow.chat_types(mark) == [
        "chat/turnStarted",
        "chat/responsePart",
        "chat/delta",
        "chat/error",
    ]
    error = flow.actions(mark, flow.chat)[-1]["error"]
    assert error == {"errorType": "turnFailed", "message": "scripted failure"}
    assert turn["state"] == "error"
    assert turn["error"]["message"] == "scripted failure"
    assert flow.client.states[flow.chat]["status"] == st.ERROR
    assert [c["status"] for c in updated(flow.actions(mark, flow.session))] == [
        st.IN_PROGRESS,
        st.ERROR,
    ]
    await flow.settled()
    listed = await flow.client.request("listSessions", {"channel": ROOT})
    [item] = [s for s in listed["items"] if s["resource"] == flow.session]
    assert item["status"] & st.ACTIVITY_MASK == st.ERROR
    # the chat recovers with the next turn
    await flow.ended(await flow.start("stream"))
    assert flow.client.states[flow.chat]["status"] == st.IDLE
    await flow.settled()


async def test_runtime_exit_then_the_next_prompt_reopens_the_conversation(
    flow: Flow, calls: Calls
) -> None:
    mark = flow.mark()
    turn = await flow.ended(await flow.start("exit"))
    assert flow.chat_types(mark) == ["chat/turnStarted", "chat/responsePart", "chat/error"]
    assert flow.session_types(mark) == TURN_SESSION
    assert updated(flow.actions(mark, flow.session))[-1]["status"] == st.ERROR
    assert flow.actions(mark, flow.chat)[-1]["error"] == {
        "errorType": "providerExit",
        "message": "scripted exit",
    }
    assert turn["state"] == "error"
    await flow.settled()
    [opened] = calls.returns("open")
    conversation_id = opened["result"]
    mark = flow.mark()
    turn = await flow.ended(await flow.start("stream"))
    assert turn["state"] == "complete"
    assert flow.chat_types(mark)[0] == "chat/turnStarted"
    assert flow.chat_types(mark)[-1] == "chat/turnComplete"
    opens = calls.calls("open")
    assert [o["args"]["request"]["ConversationID"] for o in opens] == ["", conversation_id]
    assert [r["result"] for r in calls.returns("open")] == [conversation_id, conversation_id]
    # the reopened conversation took the prompt
    [send] = [s for s in calls.calls("send") if s["conv"] == opens[1]["conv"]]
    assert send["args"]["prompt"]["Text"] == "stream"
    await flow.settled()


# -- titles and usage --------------------------------------------------------------------------


async def test_provider_title_reaches_the_session_and_the_list(flow: Flow) -> None:
    mark = flow.mark()
    await flow.ended(await flow.start("title"))
    session = flow.actions(mark, flow.session)
    assert [a["type"] for a in session] == [
        "session/chatUpdated",  # InProgress
        "session/titleChanged",
        "session/chatUpdated",  # the chat's catalog title
        "session/chatUpdated",  # Idle
    ]
    assert session[1]["title"] == "Scripted title"
    assert session[2]["changes"] == {"title": "Scripted title"}
    assert flow.client.states[flow.session]["title"] == "Scripted title"
    await flow.settled()
    assert {"title": "Scripted title"} in flow.watcher.changes(flow.session)


async def test_client_title_reaches_the_provider(flow: Flow, calls: Calls, bridge: Bridge) -> None:
    other = await flow.join("client-2")
    mark = flow.mark()
    echo = await flow.dispatch(
        {"type": "session/titleChanged", "title": "My renamed session"}, channel=flow.session
    )
    assert "rejectionReason" not in echo
    assert echo["origin"]["clientId"] == "client-1"
    await calls.wait(lambda: calls.returns("set_title"))
    [call] = calls.calls("set_title")
    assert call["args"] == {"title": "My renamed session"}
    assert calls.returns("set_title")[0]["error"] is None
    await other.wait_for(lambda: other.states[flow.session]["title"] == "My renamed session")
    await flow.sync()
    assert flow.session_types(mark) == ["session/titleChanged", "session/chatUpdated"]
    await flow.settled()
    assert {"title": "My renamed session"} in flow.watcher.changes(flow.session)
    # the provider remembers the user's title, so its own title step no longer renames
    await flow.ended(await flow.start("title"))
    assert flow.client.states[flow.session]["title"] == "My renamed session"
    # an empty title is refused, and nothing reaches the provider
    echo = await flow.dispatch(
        {"type": "session/titleChanged", "title": "  "}, channel=flow.session
    )
    assert echo["rejectionReason"]
    assert len(calls.calls("set_title")) == 1
    await flow.settled()
    # a title with stray whitespace: the provider gets it cleaned, the catalog and the
    # list show what the session shows
    echo = await flow.dispatch(
        {"type": "session/titleChanged", "title": " Second\tname "}, channel=flow.session
    )
    assert "rejectionReason" not in echo
    await calls.wait(lambda: len(calls.returns("set_title")) == 2)
    assert calls.calls("set_title")[1]["args"] == {"title": "Second name"}
    await flow.settled()


async def test_usage_is_reported_on_the_turn(flow: Flow) -> None:
    mark = flow.mark()
    turn = await flow.ended(await flow.start("usage"))
    assert flow.chat_types(mark) == [
        "chat/turnStarted",
        "chat/responsePart",
        "chat/usage",
        "chat/usage",
        "chat/usage",
        "chat/turnComplete",
    ]
    usages = [a["usage"] for a in flow.actions(mark, flow.chat) if a["type"] == "chat/usage"]
    assert [(u["inputTokens"], u["outputTokens"]) for u in usages] == [
        (120, 30),
        (200, 50),
        (200, 50),
    ]
    assert turn["usage"] == {
        "inputTokens": 200,
        "outputTokens": 50,
        "cacheReadTokens": 10,
        "model": "fake-fast",
        "_meta": {"ahpBridge.aiUnits": 1.5},
    }
    assert flow.session_types(mark) == [
        "session/chatUpdated",
        "session/metaChanged",
        "session/chatUpdated",
    ]
    assert flow.client.states[flow.session]["_meta"]["ahpBridge.usage"] == {"ai_units": 1.5}
    await flow.settled()


# -- history paging and creation progress ------------------------------------------------------


async def test_fetch_turns_pages_older_turns_in(flow: Flow) -> None:
    page = 50  # the store's page size
    total = page + 3
    for i in range(total):
        await flow.ended(await flow.start(f"hello {i}"))
    all_ids = [t["id"] for t in flow.client.states[flow.chat]["turns"]]
    assert len(all_ids) == total
    late = await flow.bridge.client("late")
    await late.subscribe(flow.session)
    snap = await late.subscribe(flow.chat, view={"turns": 1})
    assert [t["id"] for t in snap["state"]["turns"]] == all_ids[-1:]
    cursor = snap["state"]["turnsNextCursor"]
    flow.clients.append(late)
    pages = []
    while cursor:
        frames_before = len(late.frames)
        assert await late.request("fetchTurns", {"channel": flow.chat, "cursor": cursor}) == {}
        # chat/turnsLoaded arrives before the answer to fetchTurns
        tail = late.frames[frames_before:]
        [loaded] = [f["params"]["action"] for f in tail if f.get("method") == "action"]
        answer_at = next(i for i, f in enumerate(tail) if "result" in f)
        assert tail[answer_at - 1]["params"]["action"] is loaded
        assert loaded["type"] == "chat/turnsLoaded"
        pages.append(len(loaded["turns"]))
        cursor = late.states[flow.chat].get("turnsNextCursor")
        assert cursor == loaded.get("turnsNextCursor")
    assert pages == [page, total - 1 - page]
    assert [t["id"] for t in late.states[flow.chat]["turns"]] == all_ids
    # turns keep coming to the windowed client too
    last = await flow.start("tool")
    await flow.ended(last)
    await flow.ended(last, late)
    await flow.settled()
    # a cursor the host never issued is refused
    with pytest.raises(RpcFailure) as err:
        await late.request("fetchTurns", {"channel": flow.chat, "cursor": "9~1"})
    assert err.value.code == -32602


async def test_create_session_reports_progress(bridge: Bridge) -> None:
    client = await bridge.client("creator")
    uri = new_session_uri()
    await client.request(
        "createSession", {"channel": uri, "provider": "fake", "progressToken": "tok-1"}
    )
    await client.subscribe(uri)

    def progress() -> list[dict[str, Any]]:
        return [n["params"] for n in client.notifications if n["method"] == "root/progress"]

    await client.wait_for(lambda: progress() and progress()[-1]["progress"] == 2)
    await client.wait_for(lambda: client.states[uri].get("lifecycle") == "ready")
    frames = progress()
    assert [f["progressToken"] for f in frames] == ["tok-1", "tok-1"]
    assert [f["progress"] for f in frames] == [0, 2]
    assert all(f["total"] == 2 and f["channel"] == ROOT for f in frames)
    # no progress without a token
    other = new_session_uri()
    await client.request("createSession", {"channel": other, "provider": "fake"})
    await client.subscribe(other)
    await client.wait_for(lambda: client.states[other].get("lifecycle") == "ready")
    assert len(progress()) == 2


# -- more of the same flows, from other angles --------------------------------------------------


async def test_allow_for_the_session_answers_the_same_request_again(
    flow: Flow, calls: Calls
) -> None:
    mark = flow.mark()
    turn_id = await flow.start("permission twice")
    request = await pending_request(flow)
    echo = await flow.dispatch(
        {
            "type": "chat/toolCallConfirmed",
            "turnId": turn_id,
            "toolCallId": request["toolCall"]["toolCallId"],
            "approved": True,
            "confirmed": "user-action",
            "selectedOptionId": "allow-session",
        }
    )
    assert "rejectionReason" not in echo
    turn = await flow.ended(turn_id)
    [responded] = calls.calls("respond")
    assert responded["args"]["answer"] == {"decision": "allow-session"}
    # the second request was covered by the first answer: it ran without asking
    assert flow.chat_types(mark) == [
        "chat/turnStarted",
        "chat/toolCallStart",
        "chat/toolCallReady",
        "chat/toolCallConfirmed",
        "chat/toolCallComplete",
        "chat/toolCallStart",
        "chat/toolCallReady",
        "chat/toolCallComplete",
        "chat/responsePart",
        "chat/delta",
        "chat/turnComplete",
    ]
    ready_again = flow.actions(mark, flow.chat)[6]
    assert ready_again["confirmed"] == "not-needed"
    tools = [p["toolCall"] for p in parts(turn) if p["kind"] == "toolCall"]
    assert [t["status"] for t in tools] == ["completed", "completed"]
    assert tools[0]["selectedOption"]["id"] == "allow-session"
    assert flow.session_types(mark).count("session/inputNeededSet") == 1
    await flow.settled()


async def test_a_denial_with_a_suggestion_steers_the_turn(flow: Flow, calls: Calls) -> None:
    turn_id = await flow.start("permission")
    request = await pending_request(flow)
    echo = await flow.dispatch(
        {
            "type": "chat/toolCallConfirmed",
            "turnId": turn_id,
            "toolCallId": request["toolCall"]["toolCallId"],
            "approved": False,
            "reason": "denied",
            "userSuggestion": {"text": "use make clean instead", "origin": {"kind": "user"}},
        }
    )
    assert "rejectionReason" not in echo
    turn = await flow.ended(turn_id)
    assert [c["call"] for c in calls.calls() if c["call"] in ("respond", "steer")] == [
        "respond",
        "steer",
    ]
    assert calls.calls("steer")[0]["args"]["prompt"]["Text"] == "use make clean instead"
    steer_items = [
        line["event"]["Item"]["text"]
        for line in calls.lines()
        if "event" in line and (line["event"].get("Item") or {}).get("delivery") == "steer"
    ]
    assert steer_items == ["use make clean instead"]
    assert parts(turn)[-1]["content"] == "denied"
    await flow.settled()


async def test_two_clients_race_to_answer_one_question(flow: Flow, calls: Calls) -> None:
    other = await flow.join("client-2")
    turn_id = await flow.start("question")
    request = await pending_request(flow)
    await pending_request(flow, other)
    base = {"type": "chat/inputCompleted", "requestId": request["request"]["id"]}
    accept = {**base, "response": "accept", "answers": {"q0": selected("green")}}
    decline = {**base, "response": "decline"}
    seq_a = await flow.client.dispatch(flow.chat, accept)
    seq_b = await other.dispatch(flow.chat, decline)
    echoes = [await flow.client.echo_of(seq_a), await other.echo_of(seq_b)]
    accepted = [e for e in echoes if "rejectionReason" not in e]
    assert len(accepted) == 1
    [winner] = accepted
    [loser] = [e for e in echoes if "rejectionReason" in e]
    assert "no open input request" in loser["rejectionReason"]
    turn = await flow.ended(turn_id)
    await flow.ended(turn_id, other)
    [responded] = calls.calls("respond")
    accepted_answer = winner["action"]["response"] == "accept"
    assert responded["args"]["answer"] == (
        {"answers": [["green"]]} if accepted_answer else {"reject": True}
    )
    [input_part] = [p for p in parts(turn) if p["kind"] == "inputRequest"]
    assert input_part["response"] == winner["action"]["response"]
    await flow.settled()


async def test_a_second_turn_while_one_runs_is_rejected(flow: Flow, calls: Calls) -> None:
    turn_id = await flow.start("gate")
    request = await pending_request(flow)
    intruder = {
        "type": "chat/turnStarted",
        "turnId": str(uuid.uuid4()),
        "startedAt": "2026-01-01T00:00:00.000Z",
        "message": {"text": "stream", "origin": {"kind": "user"}},
    }
    echo = await flow.dispatch(intruder)
    assert turn_id in echo["rejectionReason"] or "active" in echo["rejectionReason"]
    assert "rejectionReason" not in await flow.dispatch(yes(request))
    turn = await flow.ended(turn_id)
    assert turn["message"]["text"] == "gate"
    assert [c["args"]["prompt"]["Text"] for c in calls.calls("send")] == ["gate"]
    assert len(flow.client.states[flow.chat]["turns"]) == 1
    await flow.settled()


async def test_a_message_queued_while_idle_starts_at_once(flow: Flow, calls: Calls) -> None:
    mark = flow.mark()
    echo = await flow.dispatch(pending_message("queued", "q-idle", "stream"))
    assert "rejectionReason" not in echo
    await flow.client.wait_for(lambda: len(flow.client.states[flow.chat]["turns"]) == 1)
    turn = flow.client.states[flow.chat]["turns"][0]
    await flow.ended(turn["id"])
    types = flow.chat_types(mark)
    assert types[:2] == ["chat/pendingMessageSet", "chat/turnStarted"]
    assert flow.actions(mark, flow.chat)[1]["queuedMessageId"] == "q-idle"
    assert types[-1] == "chat/turnComplete"
    assert "queuedMessages" not in flow.client.states[flow.chat]
    assert [c["args"]["prompt"]["Text"] for c in calls.calls("send")] == ["stream"]
    await flow.settled()


async def test_a_queued_message_removed_in_time_never_starts(flow: Flow, calls: Calls) -> None:
    turn_id = await flow.start("gate")
    request = await pending_request(flow)
    assert "rejectionReason" not in await flow.dispatch(pending_message("queued", "q1", "tool"))
    removed = {"type": "chat/pendingMessageRemoved", "kind": "queued", "id": "q1"}
    assert "rejectionReason" not in await flow.dispatch(removed)
    assert "rejectionReason" not in await flow.dispatch(yes(request))
    await flow.ended(turn_id)
    await flow.settled()
    assert len(flow.client.states[flow.chat]["turns"]) == 1
    assert [c["args"]["prompt"]["Text"] for c in calls.calls("send")] == ["gate"]


async def test_a_turn_that_names_a_model_switches_it_first(flow: Flow, calls: Calls) -> None:
    mark = flow.mark()
    turn_id = str(uuid.uuid4())
    message: dict[str, Any] = {
        "text": "stream",
        "origin": {"kind": "user"},
        "model": {"id": "fake-deep", "config": {"effort": "high"}},
    }
    action = {
        "type": "chat/turnStarted",
        "turnId": turn_id,
        "startedAt": "2026-01-01T00:00:00.000Z",
        "message": message,
    }
    assert "rejectionReason" not in await flow.dispatch(action)
    await flow.ended(turn_id)
    assert [c["call"] for c in calls.calls() if c["call"] in ("set_model", "send")] == [
        "set_model",
        "send",
    ]
    assert calls.calls("set_model")[0]["args"] == {
        "model": "fake-deep",
        "effort": "high",
        "context_size": "",
    }
    assert flow.actions(mark, flow.chat)[-1]["_meta"]["ahpBridge.model"] == "fake-deep"
    selection = flow.client.states[flow.session]["_meta"]["ahpBridge.modelSelection"]
    assert (selection["Model"], selection["Effort"]) == ("fake-deep", "high")
    # a model or effort the provider does not offer is refused before anything is called
    for model in ({"id": "no-such-model"}, {"id": "fake-deep", "config": {"effort": "low"}}):
        echo = await flow.dispatch(
            {
                **action,
                "turnId": str(uuid.uuid4()),
                "message": {**message, "model": model},
            }
        )
        assert echo["rejectionReason"]
    assert len(calls.calls("set_model")) == 1 and len(calls.calls("send")) == 1
    await flow.settled()


async def test_disposing_a_session_mid_turn_closes_the_conversation(
    flow: Flow, calls: Calls
) -> None:
    turn_id = await flow.start("gate")
    await pending_request(flow)
    assert turn_id
    assert await flow.client.request("disposeSession", {"channel": flow.session}) is None
    await calls.wait(lambda: calls.returns("close"))
    assert calls.returns("close")[0]["error"] is None
    await flow.watcher.client.wait_for(
        lambda: any(n["method"] == "root/sessionRemoved" for n in flow.watcher.client.notifications)
    )
    listed = await flow.client.request("listSessions", {"channel": ROOT})
    assert flow.session not in [s["resource"] for s in listed["items"]]
    # nothing the closing turn emitted reached a client after the channels went away
    seq = flow.client.last_seq
    assert await flow.client.request("ping", {"channel": ROOT}) is None
    assert all(
        e["serverSeq"] <= seq
        for e in flow.client.envelopes
        if e["channel"] in (flow.session, flow.chat)
    )


async def test_a_client_that_reconnects_mid_permission_answers_it(flow: Flow, calls: Calls) -> None:
    other = await flow.join("client-2")
    turn_id = await flow.start("permission")
    request = await pending_request(flow, other)
    last_seen = other.last_seq
    kept = copy.deepcopy(other.states)
    await other.ws.aclose()
    flow.clients.remove(other)
    # the turn moves on without it: client-1 writes a draft meanwhile
    draft = {"type": "chat/draftChanged", "draft": {"text": "x", "origin": {"kind": "user"}}}
    assert "rejectionReason" not in await flow.dispatch(draft)
    back = await flow.bridge.client("client-2", initialize=False)
    result = await back.request(
        "reconnect",
        {
            "channel": ROOT,
            "clientId": "client-2",
            "lastSeenServerSeq": last_seen,
            "subscriptions": [flow.session, flow.chat],
        },
    )
    assert result["type"] == "replay"
    assert [e["action"]["type"] for e in result["actions"]] == ["chat/draftChanged"]
    # the returning client rebuilds its view from what it kept plus the replay
    back.states.update({ch: kept[ch] for ch in (flow.session, flow.chat)})
    for envelope in result["actions"]:
        back._on_envelope(envelope)
    flow.clients.append(back)
    echo = await flow.dispatch(
        {
            "type": "chat/toolCallConfirmed",
            "turnId": turn_id,
            "toolCallId": request["toolCall"]["toolCallId"],
            "approved": True,
            "confirmed": "user-action",
        },
        client=back,
    )
    assert "rejectionReason" not in echo
    await flow.ended(turn_id)
    [responded] = calls.calls("respond")
    assert responded["args"]["answer"] == {"decision": "allow-once"}
    await flow.settled()


async def test_a_queued_message_after_a_runtime_exit_reopens_the_conversation(
    flow: Flow, calls: Calls
) -> None:
    mark = flow.mark()
    turn_id = await flow.start("gate: exit")
    request = await pending_request(flow)
    assert "rejectionReason" not in await flow.dispatch(pending_message("queued", "after", "tool"))
    assert "rejectionReason" not in await flow.dispatch(yes(request))

    def two_turns() -> bool:
        state = flow.client.states[flow.chat]
        return not state.get("activeTurn") and len(state["turns"]) == 2

    await flow.client.wait_for(two_turns)
    first, second = flow.client.states[flow.chat]["turns"]
    assert first["id"] == turn_id
    assert (first["state"], first["error"]["errorType"]) == ("error", "providerExit")
    assert (second["state"], second["message"]["text"]) == ("complete", "tool")
    types = flow.chat_types(mark)
    assert types[types.index("chat/error") + 1] == "chat/turnStarted"
    opens = calls.calls("open")
    assert len(opens) == 2
    assert opens[1]["args"]["request"]["ConversationID"] == calls.returns("open")[0]["result"]
    await flow.settled()


# -- two chats in one session: the summary aggregates them ---------------------------------------


async def test_a_second_chat_needing_input_raises_the_session_summary(
    flow: Flow, calls: Calls
) -> None:
    second = f"ahp-chat:/{uuid.uuid4()}"
    assert (
        await flow.client.request("createChat", {"channel": flow.session, "chat": second}) is None
    )
    await flow.client.wait_for(
        lambda: any(c["resource"] == second for c in flow.client.states[flow.session]["chats"])
    )
    await flow.client.subscribe(second)
    main_chat, flow.chat = flow.chat, second
    turn_id = await flow.start("permission")
    request = await pending_request(flow)
    assert request["chat"] == second
    await flow.sync()
    session = flow.client.states[flow.session]
    assert session["defaultChat"] == main_chat
    entries = {c["resource"]: c for c in session["chats"]}
    assert entries[second]["status"] == st.INPUT_NEEDED
    assert entries[main_chat]["status"] == st.IDLE
    listed = await flow.client.request("listSessions", {"channel": ROOT})
    [item] = [s for s in listed["items"] if s["resource"] == flow.session]
    assert item["status"] & st.ACTIVITY_MASK == st.INPUT_NEEDED  # raised over the idle default
    assert flow.watcher.summary(flow.session) == item
    echo = await flow.dispatch(
        {
            "type": "chat/toolCallConfirmed",
            "turnId": turn_id,
            "toolCallId": request["toolCall"]["toolCallId"],
            "approved": True,
            "confirmed": "user-action",
        }
    )
    assert "rejectionReason" not in echo
    await flow.ended(turn_id)
    await flow.sync()
    listed = await flow.client.request("listSessions", {"channel": ROOT})
    [item] = [s for s in listed["items"] if s["resource"] == flow.session]
    assert item["status"] & st.ACTIVITY_MASK == st.IDLE
    assert flow.watcher.summary(flow.session) == item
    newest = max(c["modifiedAt"] for c in flow.client.states[flow.session]["chats"])
    assert item["modifiedAt"] == newest
    # both chats talk to their own conversations
    assert len({r["result"] for r in calls.returns("open")}) == 2
    # the second chat's provider title names that chat, not the whole session
    title_turn = await flow.start("title")
    await flow.ended(title_turn)
    await flow.sync()
    session = flow.client.states[flow.session]
    entries = {c["resource"]: c for c in session["chats"]}
    assert entries[second]["title"] == "Scripted title"
    assert session["title"] == entries[main_chat]["title"] == ""
    assert all("title" not in c for c in flow.watcher.changes(flow.session))
    flow.chat = main_chat
    await flow.settled()


async def test_a_queued_message_the_provider_cannot_take_is_refused_up_front(
    flow: Flow, calls: Calls
) -> None:
    turn_id = await flow.start("gate")
    request = await pending_request(flow)
    bad = pending_message("queued", "bad", "stream")
    bad["message"]["model"] = {"id": "no-such-model"}
    echo = await flow.dispatch(bad)
    assert "no-such-model" in echo.get("rejectionReason", ""), echo
    assert "rejectionReason" not in await flow.dispatch(pending_message("queued", "ok", "tool"))
    assert "rejectionReason" not in await flow.dispatch(yes(request))

    def two_turns() -> bool:
        state = flow.client.states[flow.chat]
        return not state.get("activeTurn") and len(state["turns"]) == 2

    await flow.client.wait_for(two_turns)
    assert flow.client.states[flow.chat]["turns"][0]["id"] == turn_id
    assert "queuedMessages" not in flow.client.states[flow.chat]
    assert [c["args"]["prompt"]["Text"] for c in calls.calls("send")] == ["gate", "tool"]
    await flow.settled()


async def test_cancelling_a_turn_starts_the_next_queued_message(flow: Flow, calls: Calls) -> None:
    mark = flow.mark()
    turn_id = await flow.start("gate")
    await pending_request(flow)
    assert "rejectionReason" not in await flow.dispatch(pending_message("queued", "n", "stream"))
    cancel = {"type": "chat/turnCancelled", "turnId": turn_id, "duration": 3}
    assert "rejectionReason" not in await flow.dispatch(cancel)

    def two_turns() -> bool:
        state = flow.client.states[flow.chat]
        return not state.get("activeTurn") and len(state["turns"]) == 2

    await flow.client.wait_for(two_turns)
    await flow.sync()
    assert flow.chat_types(mark) == [
        "chat/turnStarted",
        "chat/inputRequested",
        "chat/pendingMessageSet",
        "chat/turnCancelled",
        "chat/turnStarted",
        *streamed("Hello from the fake, streamed in chunks."),
        "chat/turnComplete",
    ]
    first, second = flow.client.states[flow.chat]["turns"]
    assert (first["state"], second["state"]) == ("cancelled", "complete")
    assert calls.names().count("respond") == 0
    assert [c["call"] for c in calls.calls() if c["call"] in ("send", "cancel")] == [
        "send",
        "cancel",
        "send",
    ]
    await flow.settled()


async def test_a_subagent_shows_as_its_tool_call_and_stays_out_of_the_transcript(
    flow: Flow,
) -> None:
    mark = flow.mark()
    turn = await flow.ended(await flow.start("subagent"))
    assert flow.chat_types(mark) == [
        "chat/turnStarted",
        "chat/toolCallStart",
        "chat/toolCallReady",
        "chat/toolCallContentChanged",
        "chat/toolCallComplete",
        "chat/responsePart",
        "chat/turnComplete",
    ]
    sub_chat = f"{flow.chat}/subagent/sa-1"
    ref = {
        "type": "subagent",
        "resource": sub_chat,
        "title": "researcher",
        "agentName": "researcher",
        "description": "Looks things up",
    }
    assert flow.actions(mark, flow.chat)[3]["content"] == [ref]
    [tool] = [p["toolCall"] for p in parts(turn) if p["kind"] == "toolCall"]
    assert tool["status"] == "completed"
    assert tool["content"] == [ref, {"type": "text", "text": "found it"}]
    # the subagent's own text is not part of the main transcript
    assert [p["content"] for p in parts(turn) if p["kind"] == "markdown"] == ["Done."]
    # ... it is in the subagent's own read-only chat, listed in the session
    entry = next(c for c in flow.client.states[flow.session]["chats"] if c["resource"] == sub_chat)
    assert entry["interactivity"] == "read-only"
    assert entry["origin"] == {"kind": "tool", "chat": flow.chat, "toolCallId": tool["toolCallId"]}
    snapshot = await flow.client.subscribe(sub_chat)
    [sub_turn] = snapshot["state"]["turns"]
    assert sub_turn["state"] == "complete"
    assert [p["content"] for p in sub_turn["responseParts"] if p["kind"] == "markdown"] == [
        "found it"
    ]
    # nobody can post into it
    seq = await flow.client.dispatch(
        sub_chat,
        {
            "type": "chat/turnStarted",
            "turnId": "t-sub",
            "startedAt": "2026-01-01T00:00:00.000Z",
            "message": {"text": "hi", "origin": {"kind": "user"}},
        },
    )
    echo = await flow.client.echo_of(seq)
    assert "read-only" in echo["rejectionReason"]
    await flow.settled()


async def test_a_session_only_client_answers_from_the_input_needed_entry(
    flow: Flow, calls: Calls
) -> None:
    watcher = await flow.bridge.client("session-only")
    await watcher.subscribe(flow.session)
    turn_id = await flow.start("permission")
    request = await pending_request(flow, watcher)
    # everything needed to answer is in the session's entry; the chat is never subscribed
    await watcher.dispatch(
        request["chat"],
        {
            "type": "chat/toolCallConfirmed",
            "turnId": request["turnId"],
            "toolCallId": request["toolCall"]["toolCallId"],
            "approved": True,
            "confirmed": "user-action",
            "selectedOptionId": request["toolCall"]["options"][0]["id"],
        },
    )
    await watcher.wait_for(lambda: not watcher.states[flow.session].get("inputNeeded"))
    turn = await flow.ended(turn_id)
    assert parts(turn)[-1]["content"] == "allowed"
    [responded] = calls.calls("respond")
    assert responded["args"]["answer"] == {"decision": "allow-once"}
    assert all(e["channel"] == flow.session for e in watcher.envelopes)
    await flow.settled()


@pytest.mark.parametrize(
    ("fields", "reason"),
    [
        ({"approved": True, "confirmed": "user-action", "selectedOptionId": "nope"}, "nope"),
        ({"approved": True, "confirmed": "user-action", "selectedOptionId": "reject"}, "reject"),
        ({"approved": False, "reason": "denied", "selectedOptionId": "allow-once"}, "allow-once"),
        ({"approved": True, "confirmed": "user-action", "editedToolInput": "rm -rf /"}, "edited"),
    ],
    ids=["unknown-option", "deny-option-approves", "allow-option-denies", "edited-input"],
)
async def test_permission_answers_that_do_not_fit_never_reach_the_provider(
    flow: Flow, calls: Calls, fields: dict[str, Any], reason: str
) -> None:
    turn_id = await flow.start("permission")
    request = await pending_request(flow)
    base = {
        "type": "chat/toolCallConfirmed",
        "turnId": turn_id,
        "toolCallId": request["toolCall"]["toolCallId"],
    }
    echo = await flow.dispatch({**base, **fields})
    assert reason in echo["rejectionReason"], echo
    assert calls.calls("respond") == []
    assert flow.client.states[flow.session]["inputNeeded"] == [request]
    good = {**base, "approved": True, "confirmed": "user-action"}
    assert "rejectionReason" not in await flow.dispatch(good)
    turn = await flow.ended(turn_id)
    assert parts(turn)[-1]["content"] == "allowed"
    await flow.settled()
