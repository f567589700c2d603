"""The one decision on `dispatchAction`: each refusal, with its reason, echoed to the sender
only with the action as it was sent; an accepted action applied, echoed to all, then its calls."""

from __future__ import annotations

from typing import Any

import pytest

from ahp_bridge import agentapi
from ahp_bridge.engine.accept import READ_ONLY
from ahp_bridge.engine.jobs import CallChat, Persist, ReloadCustomizations, SetSkillDisabled
from ahp_bridge.engine.peers import Peer
from ahp_bridge.state.limits import Limits
from ahp_bridge.translate.commands import Cancel, Send, Steer
from tests.support.engine import ROOT, Harness, config, fake_provider, turn_event

SESSION = "ahp-session:/s1"


def draft(text: str, **extra: Any) -> dict[str, Any]:
    return {
        "type": "chat/draftChanged",
        "draft": {"text": text, "origin": {"kind": "user"}},
        **extra,
    }


def steering(message_id: str) -> dict[str, Any]:
    return {
        "type": "chat/pendingMessageSet",
        "kind": "steering",
        "id": message_id,
        "message": {"text": "go on", "origin": {"kind": "user"}},
    }


def ready(h: Harness, *versions: str) -> tuple[str, list[Peer]]:
    """A session's default chat and a peer per version subscribed to it (the first made it)."""
    maker = h.connect("maker", versions[0] if versions else "1.0.0")
    chat = h.create_session(maker)
    h.subscribe(maker, chat)
    others = [h.connect(f"p{i}", v, subscriptions=[chat]) for i, v in enumerate(versions[1:])]
    return chat, [maker, *others]


def refusal(h: Harness, peer: Peer) -> tuple[dict[str, Any], str]:
    """The one echo the peer got: its action and rejectionReason."""
    [envelope] = h.envelopes(peer)
    return envelope["action"], envelope["rejectionReason"]


# -- shape -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ([1, 2], "Invalid params: expected an object"),
        ({"clientSeq": 1, "action": {}}, "Invalid params: channel: expected a string"),
        ({"channel": ROOT, "action": {}}, "Invalid params: clientSeq: expected a number"),
        (
            {"channel": ROOT, "clientSeq": True, "action": {}},
            "Invalid params: clientSeq: expected a number",
        ),
        (
            {"channel": ROOT, "clientSeq": 1, "action": "x"},
            "Invalid params: action: expected an object",
        ),
    ],
    ids=["not-an-object", "no-channel", "no-client-seq", "bool-client-seq", "scalar-action"],
)
def test_a_malformed_dispatch_is_an_error_not_an_echo(params: Any, message: str) -> None:
    h = Harness()
    peer = h.connect()
    seq = h.store.server_seq
    h.send(peer, "dispatchAction", params, notify=True)
    assert h.frames(peer) == [
        {"jsonrpc": "2.0", "id": None, "error": {"code": -32602, "message": message}}
    ]
    assert h.store.server_seq == seq


def test_an_action_for_a_channel_the_host_does_not_have_is_ignored() -> None:
    h = Harness()
    peer = h.connect()
    seq = h.store.server_seq
    assert h.dispatch(peer, "ahp-chat:/nobody", draft("x")) == []
    assert h.frames(peer) == []
    assert h.store.server_seq == seq


@pytest.mark.parametrize(
    ("action", "reason"),
    [
        ({"type": "automation/set"}, "automations are not offered by this host"),
        ({"type": "canvas/stateChanged"}, "canvases are not offered by this host"),
    ],
)
def test_automations_and_canvases_are_refused_as_not_offered_even_for_unknown_channels(
    action: dict[str, Any], reason: str
) -> None:
    h = Harness()
    peer = h.connect()
    h.dispatch(peer, "ahp-chat:/nobody", action, 7)
    assert h.envelopes(peer) == [
        {
            "channel": "ahp-chat:/nobody",
            "action": action,
            "serverSeq": h.store.server_seq,
            "origin": {"clientId": "c1", "clientSeq": 7},
            "rejectionReason": reason,
        }
    ]


# -- the peer's line ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("action", "reason"),
    [
        ({"type": 5}, "action.type: expected a string"),
        (
            {"type": "chat/teleported"},
            "action.type: unknown action type 'chat/teleported' in AHP 1.0.0",
        ),
        (
            {"type": "chat/draftChanged", "draft": {"text": "x"}},
            "action.draft.origin: Field required",
        ),
        (
            {"type": "chat/delta", "turnId": "t", "partId": "p", "content": "x"},
            "chat/delta is not client-dispatchable",
        ),
    ],
    ids=["type-not-a-string", "unknown-type", "missing-field", "host-only"],
)
def test_an_action_that_is_not_a_clients_in_its_line_is_refused(
    action: dict[str, Any], reason: str
) -> None:
    h = Harness()
    chat, [peer, other] = ready(h, "1.0.0", "1.0.0")
    seq = h.store.server_seq
    h.dispatch(peer, chat, action)
    assert refusal(h, peer) == (action, reason)
    assert h.frames(other) == []  # the sender only
    assert h.store.server_seq == seq


def test_a_1_0_only_action_is_unknown_to_a_0_9_and_a_0_7_peer() -> None:
    h = Harness()
    chat, [new, mid, old] = ready(h, "1.0.0", "0.9.0", "0.7.0")
    action = {"type": "chat/isReadChanged", "isRead": True}
    for peer, version in ((mid, "0.9.0"), (old, "0.7.0")):
        h.dispatch(peer, chat, action)
        assert refusal(h, peer) == (
            action,
            f"action.type: unknown action type 'chat/isReadChanged' in AHP {version}",
        )
    h.dispatch(new, chat, action)
    assert [e.get("rejectionReason") for e in h.envelopes(new, chat)] == [None]


def test_a_0_7_action_is_lifted_to_the_canonical_form_and_each_line_sees_its_own() -> None:
    provider = fake_provider()
    provider.skill_setter = True
    h = Harness(providers=[provider])
    old, new = h.connect("old", "0.7.0"), h.connect("new", "1.0.0")
    chat = h.create_session(old)
    for peer in (old, new):
        h.subscribe(peer, SESSION)
    sent = {"type": "session/customizationToggled", "id": "skill:x", "enabled": False}
    h.dispatch(old, SESSION, sent)
    assert h.actions(old) == [sent]
    assert h.actions(new) == [
        {
            "type": "session/customizationToggled",
            "id": "skill:x",
            "enablement": [{"kind": "session", "enabled": False}],
        }
    ]
    assert h.calls(chat) == [SetSkillDisabled("x", True), ReloadCustomizations(SESSION)]


def test_fields_the_line_does_not_define_are_dropped_but_a_refusal_echoes_them() -> None:
    h = Harness()
    chat, [peer] = ready(h, "1.0.0")
    h.dispatch(peer, chat, draft("kept", futureField=1))
    assert h.actions(peer) == [draft("kept")]
    big = draft("x" * 200_000, futureField=1)
    h.dispatch(peer, chat, big, 2)
    action, reason = refusal(h, peer)
    assert action == big  # the action as the client sent it
    assert reason.startswith("chat/draftChanged is 200,073 bytes; the host keeps at most 131,072")


# -- the state rules ---------------------------------------------------------------------------


def test_the_state_rules_refuse_with_their_reason() -> None:
    h = Harness()
    chat, [peer] = ready(h, "1.0.0")
    cancel = {"type": "chat/turnCancelled", "turnId": "nope", "duration": 1}
    h.dispatch(peer, chat, cancel)
    assert refusal(h, peer) == (cancel, "no turn is active")
    h.start_turn(peer, chat, "t1", seq=2)
    h.envelopes(peer)
    seq = h.store.server_seq
    h.start_turn(peer, chat, "t2", seq=3)
    action, reason = refusal(h, peer)
    assert action["turnId"] == "t2"
    assert reason == "turn t1 is still running: cancel it or wait until it ends"
    assert h.store.server_seq == seq
    assert h.calls(chat) == [Send(agentapi.Prompt(text="hello"))]


def test_a_subagents_chat_is_read_only() -> None:
    h = Harness()
    chat, [peer] = ready(h, "1.0.0")
    h.start_turn(peer, chat)
    subagent = agentapi.Subagent(
        id="sa 1", name="Helper", status="running", parent_tool_call_id="tc"
    )
    h.provider(chat, turn_event(agentapi.TurnState.WORKING))
    h.provider(chat, agentapi.Event(kind=agentapi.EventKind.SUBAGENT, subagent=subagent))
    sub = f"{chat}/subagent/sa%201"
    assert sub in h.engine.sessions.subagent_chats
    h.subscribe(peer, sub)
    h.frames(peer)
    seq = h.store.server_seq
    h.dispatch(peer, sub, draft("hi"), 2)
    assert refusal(h, peer) == (draft("hi"), READ_ONLY)
    assert READ_ONLY == "a subagent's chat is read-only: talk to the agent in its parent chat"
    assert h.store.server_seq == seq


def test_a_call_is_refused_while_the_chats_queue_is_full() -> None:
    h = Harness(config=config(limits=Limits(max_pending_calls=1)))
    chat, [peer] = ready(h, "1.0.0")
    h.start_turn(peer, chat)
    h.provider(chat, turn_event(agentapi.TurnState.WORKING))
    h.frames(peer)
    h.hold(Steer, Cancel)
    h.dispatch(peer, chat, steering("s1"), 2)  # in flight: the queue is empty again
    h.dispatch(peer, chat, steering("s2"), 3)  # waits: the queue is full
    assert [e.get("rejectionReason") for e in h.envelopes(peer, chat)] == [None, None]
    seq = h.store.server_seq
    cancel = {"type": "chat/turnCancelled", "turnId": "t1", "duration": 1}
    h.dispatch(peer, chat, cancel, 4)
    assert refusal(h, peer) == (
        cancel,
        "1 operations already wait for this chat's provider, the most it holds "
        "(limits.max_pending_calls): try again when they are done",
    )
    assert h.store.server_seq == seq
    assert [type(j.job) for j in h.held] == [CallChat]
    h.finish(h.held[0])  # s1's steer done: s2's goes out, and there is room again
    assert [j.job.call for j in h.held if isinstance(j.job, CallChat)] == [
        Steer(agentapi.Prompt(text="go on"))
    ]
    h.dispatch(peer, chat, cancel, 5)
    assert [e.get("rejectionReason") for e in h.envelopes(peer, chat)] == [None]


def test_a_1_0_turn_id_the_chat_knows_is_echoed_as_a_no_op_and_nothing_else_happens() -> None:
    h = Harness(config=config(durable=True))
    chat, [new, old] = ready(h, "1.0.0", "0.7.0")
    h.start_turn(new, chat, "t1")
    h.provider(
        chat, turn_event(agentapi.TurnState.WORKING), turn_event(agentapi.TurnState.COMPLETED)
    )
    h.frames(new), h.frames(old)
    jobs = len(h.jobs)
    turns = h.store.state(chat)["turns"]
    h.start_turn(new, chat, "t1", seq=2)  # a retry
    [echo] = h.envelopes(new, chat)
    assert "rejectionReason" not in echo and echo["origin"] == {"clientId": "maker", "clientSeq": 2}
    assert h.store.state(chat)["turns"] == turns
    assert h.store.state(chat).get("activeTurn") is None
    # No Send, and the catalog is not told the finished turn runs again.
    assert h.jobs[jobs:] == []
    # A 0.7 peer has no such rule: the same turn id is refused.
    h.start_turn(old, chat, "t1", seq=3)
    action, reason = refusal(h, old)
    assert (action["turnId"], reason) == (
        "t1",
        "turn t1 already exists: start a turn with a new id",
    )
    # The chat is idle as before: the next turn is taken and sent.
    h.start_turn(new, chat, "t2", "next", seq=4)
    assert [e.get("rejectionReason") for e in h.envelopes(new, chat)] == [None]
    assert h.calls(chat)[-1] == Send(agentapi.Prompt(text="next"))


def test_an_accepted_action_is_echoed_to_every_subscriber_with_its_origin() -> None:
    h = Harness()
    chat, [a, b] = ready(h, "1.0.0", "0.7.0")
    h.dispatch(a, chat, draft("hello"), 42)
    sent = {
        "channel": chat,
        "action": draft("hello"),
        "serverSeq": h.store.server_seq,
        "origin": {"clientId": "maker", "clientSeq": 42},
    }
    assert h.envelopes(a) == h.envelopes(b) == [sent]
    assert h.store.state(chat)["draft"]["text"] == "hello"
    assert not any(isinstance(j, Persist) for j in h.jobs)  # not a durable host
