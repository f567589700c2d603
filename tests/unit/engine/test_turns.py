"""A chat's turns: the Send after the echo, the hold after a cancel, a cancel before the Send,
a failed Send, healing a lost conversation, queued messages, and what the catalog is told."""

from __future__ import annotations

from typing import Any

from ahp_bridge import agentapi
from ahp_bridge.engine.chats import META_KEY, NOTICE
from ahp_bridge.engine.effects import CancelTimer, Flush, Log, Run
from ahp_bridge.engine.jobs import CallChat, CloseConversation, OpenConversation, Persist
from ahp_bridge.engine.peers import Peer
from ahp_bridge.engine.timeouts import Timeouts
from ahp_bridge.translate.commands import Cancel, Send
from tests.support.engine import NOW_ISO, Harness, config, event, turn_event

SESSION = "ahp-session:/s1"
WORKING = turn_event(agentapi.TurnState.WORKING)
COMPLETED = turn_event(agentapi.TurnState.COMPLETED)
CANCELLED = turn_event(agentapi.TurnState.CANCELLED)


def send(text: str = "hello") -> Send:
    return Send(agentapi.Prompt(text=text))


def cancel(turn_id: str) -> dict[str, Any]:
    return {"type": "chat/turnCancelled", "turnId": turn_id, "duration": 1}


def ready(h: Harness) -> tuple[Peer, str]:
    peer = h.connect()
    chat = h.create_session(peer)
    h.subscribe(peer, chat)
    return peer, chat


def run_of(h: Harness, effects: list[Any]) -> list[Any]:
    """The chat jobs among `effects` (catalog writes and shell jobs aside)."""
    return [e.job for e in effects if isinstance(e, Run) and not isinstance(e.job, Persist)]


def test_a_client_turn_is_echoed_then_its_send_is_handed_out() -> None:
    h = Harness()
    peer, chat = ready(h)
    effects = h.start_turn(peer, chat, "t1", "hello")
    [run] = [e for e in effects if isinstance(e, Run)]
    assert effects == [run, Flush((peer,))]
    assert run.job == CallChat(chat, send("hello")) and run.ticket is not None
    assert h.actions(peer, chat) == [
        {
            "type": "chat/turnStarted",
            "turnId": "t1",
            "startedAt": NOW_ISO,
            "message": {"text": "hello", "origin": {"kind": "user"}},
        }
    ]
    delta = agentapi.Delta(item_id="i1", kind=agentapi.ItemKind.ASSISTANT, text="hi there")
    h.provider(chat, WORKING, event(agentapi.EventKind.DELTA, delta=delta), COMPLETED)
    state = h.store.state(chat)
    assert state.get("activeTurn") is None
    [turn] = state["turns"]
    assert (turn["id"], turn["state"]) == ("t1", "complete")
    assert [a["type"] for a in h.actions(peer, chat)] == [
        "chat/responsePart",
        "chat/turnComplete",
    ]


def test_a_host_without_a_catalog_hands_out_no_catalog_writes() -> None:
    h = Harness()
    peer, chat = ready(h)
    h.start_turn(peer, chat)
    h.provider(chat, WORKING, COMPLETED)
    assert [j for j in h.jobs if isinstance(j, Persist)] == []


def test_a_durable_host_records_the_running_turn_and_its_end() -> None:
    h = Harness(config=config(durable=True))
    peer, chat = ready(h)
    before = len(h.jobs)
    h.start_turn(peer, chat)
    h.provider(chat, WORKING, COMPLETED)
    running = '{"id": "t1", "startedAt": "' + NOW_ISO + '", "text": "hello"}'
    assert [j for j in h.jobs[before:] if isinstance(j, Persist)] == [
        Persist("update_chat", (chat,), {"modified_at": NOW_ISO, "active_turn": running}),
        Persist("update_session", (SESSION,), {"modified_at": NOW_ISO}),
        Persist("update_chat", (chat,), {"modified_at": NOW_ISO, "active_turn": ""}),
        Persist("update_session", (SESSION,), {"modified_at": NOW_ISO}),
    ]


def test_a_turn_started_right_after_a_cancel_waits_for_the_cancelled_turns_end() -> None:
    h = Harness()
    peer, chat = ready(h)
    h.start_turn(peer, chat, "t1", "first")
    h.provider(chat, WORKING)
    h.frames(peer)
    effects = h.dispatch(peer, chat, cancel("t1"), 2)
    assert run_of(h, effects) == [CallChat(chat, Cancel())]
    effects = h.start_turn(peer, chat, "t2", "second", seq=3)
    # Echoed, but its Send is held: the provider has not said the cancelled turn ended.
    assert [a["type"] for a in h.actions(peer, chat)] == ["chat/turnCancelled", "chat/turnStarted"]
    assert run_of(h, effects) == []
    assert h.timers == {("hold", chat): 15.0}
    effects = h.provider(
        chat,
        event(
            agentapi.EventKind.ITEM,
            item=agentapi.Item(id="late", kind=agentapi.ItemKind.ASSISTANT, text="late"),
        ),
    )
    assert run_of(h, effects) == []  # still the cancelled turn's
    effects = h.provider(chat, CANCELLED)
    assert effects[0] == CancelTimer(("hold", chat))
    assert run_of(h, effects) == [CallChat(chat, send("second"))]
    assert h.timers == {}
    assert h.calls(chat) == [send("first"), Cancel(), send("second")]
    # The late end ended nothing of t2's.
    assert h.store.state(chat)["activeTurn"]["id"] == "t2"


def test_a_held_send_goes_out_after_timeouts_turn_end_without_the_end() -> None:
    h = Harness(config=config(timeouts=Timeouts(turn_end=2.5)))
    peer, chat = ready(h)
    h.start_turn(peer, chat, "t1", "first")
    h.provider(chat, WORKING)
    h.dispatch(peer, chat, cancel("t1"), 2)
    h.start_turn(peer, chat, "t2", "second", seq=3)
    assert h.timers == {("hold", chat): 2.5}
    effects = h.fire(("hold", chat))
    assert effects[0] == Log(
        "warning",
        "the provider did not end the cancelled turn within 2.5 s (timeouts.turn_end); "
        "sending the next prompt anyway",
        {"chat": chat},
    )
    assert effects[1] == CancelTimer(("hold", chat))
    assert run_of(h, effects) == [CallChat(chat, send("second"))]
    assert h.store.state(chat)["activeTurn"]["id"] == "t2"


def test_no_hold_when_the_cancelled_turn_ended_before_the_next_one() -> None:
    h = Harness()
    peer, chat = ready(h)
    h.start_turn(peer, chat, "t1")
    h.provider(chat, WORKING)
    h.dispatch(peer, chat, cancel("t1"), 2)
    h.provider(chat, CANCELLED)
    effects = h.start_turn(peer, chat, "t2", "again", seq=3)
    assert run_of(h, effects) == [CallChat(chat, send("again"))]
    assert h.timers == {}


def test_a_turn_cancelled_before_its_send_was_handed_out_is_never_sent() -> None:
    h = Harness()
    peer, chat = ready(h)
    h.start_turn(peer, chat, "t1", "first")
    h.provider(chat, WORKING)
    h.hold(Cancel)
    h.dispatch(peer, chat, cancel("t1"), 2)
    h.start_turn(peer, chat, "t2", "second", seq=3)  # queued behind the Cancel
    h.dispatch(peer, chat, cancel("t2"), 4)
    h.release(Cancel)
    h.finish(h.held[0])
    assert h.calls(chat) == [send("first"), Cancel(), Cancel()]
    assert h.timers == {}
    h.provider(chat, CANCELLED)  # t1's end
    assert h.engine.sessions.chats[chat].translator.turns.owes_end() is False


def test_a_turn_cancelled_while_its_conversation_reopens_is_never_sent() -> None:
    h = Harness()
    peer, chat = ready(h)
    h.start_turn(peer, chat, "t1", "first")
    h.provider(chat, WORKING, COMPLETED)
    h.provider(chat, event(agentapi.EventKind.EXIT, error="the runtime went away"))
    h.hold(OpenConversation)
    h.start_turn(peer, chat, "t2", "second", seq=2)
    [reopen] = h.held
    assert isinstance(reopen.job, OpenConversation)
    assert reopen.job.request.conversation_id == "conv-1"
    h.dispatch(peer, chat, cancel("t2"), 3)
    h.release(OpenConversation)
    h.finish(reopen)
    assert h.calls(chat) == [send("first"), Cancel()]


def test_a_failed_send_ends_the_turn_with_chat_error() -> None:
    h = Harness()
    peer, chat = ready(h)
    h.fail(Send, agentapi.Busy("turn t0 is still running"))
    h.start_turn(peer, chat, "t1")
    assert h.actions(peer, chat)[1:] == [
        {
            "type": "chat/error",
            "turnId": "t1",
            "duration": 0,
            "part": {
                "kind": "error",
                "error": {"errorType": "busy", "message": "turn t0 is still running"},
            },
        }
    ]
    [turn] = h.store.state(chat)["turns"]
    assert (turn["id"], turn["state"]) == ("t1", "error")
    assert h.store.state(chat).get("activeTurn") is None
    # The chat goes on: the next turn is sent.
    h.start_turn(peer, chat, "t2", "again", seq=2)
    assert h.calls(chat)[-1] == send("again")


def test_a_lost_conversation_is_replaced_and_the_carried_send_goes_again() -> None:
    h = Harness()
    peer, chat = ready(h)
    h.fail(Send, agentapi.ConversationNotFound("no conversation conv-1"))
    before = len(h.jobs)
    h.start_turn(peer, chat, "t1", "hello")
    jobs = [j for j in h.jobs[before:] if not isinstance(j, Persist)]
    assert jobs[0] == CallChat(chat, send("hello"))
    assert jobs[1] == CloseConversation(chat, "closing a lost conversation")
    assert isinstance(jobs[2], OpenConversation) and jobs[2].request.conversation_id == ""
    assert jobs[3:] == [CallChat(chat, send("hello"))]
    assert h.engine.sessions.chats[chat].conversation_id == "conv-2"
    # The turn that found out carries the notice, then goes on.
    notice = [a for a in h.actions(peer, chat) if a["type"] == "chat/responsePart"]
    assert notice == [
        {
            "type": "chat/responsePart",
            "turnId": "t1",
            "part": {
                "kind": "systemNotification",
                "content": NOTICE,
                "_meta": {META_KEY: {"lost": "conv-1", "conversation": "conv-2"}},
            },
        }
    ]
    assert h.store.state(chat)["activeTurn"]["id"] == "t1"


def test_a_message_queued_while_idle_starts_at_once_as_a_host_turn() -> None:
    h = Harness()
    peer, chat = ready(h)
    queued = {
        "type": "chat/pendingMessageSet",
        "kind": "queued",
        "id": "q1",
        "message": {"text": "later", "origin": {"kind": "user"}},
    }
    h.dispatch(peer, chat, queued)
    set_, started = h.envelopes(peer, chat)
    assert set_["action"] == queued and set_["origin"]["clientId"] == "c1"
    assert "origin" not in started  # the host started it
    assert started["action"]["queuedMessageId"] == "q1"
    assert started["action"]["message"]["text"] == "later"
    assert h.calls(chat) == [send("later")]
    assert "queuedMessages" not in h.store.state(chat)


def test_messages_queued_during_a_turn_start_one_by_one_when_it_ends() -> None:
    h = Harness()
    peer, chat = ready(h)
    h.start_turn(peer, chat, "t1", "first")
    h.provider(chat, WORKING)
    for seq, (message_id, text) in enumerate((("q1", "second"), ("q2", "third")), start=2):
        message = {"text": text, "origin": {"kind": "user"}}
        h.dispatch(
            peer,
            chat,
            {
                "type": "chat/pendingMessageSet",
                "kind": "queued",
                "id": message_id,
                "message": message,
            },
            seq,
        )
    assert h.calls(chat) == [send("first")]
    h.provider(chat, COMPLETED)
    assert h.calls(chat) == [send("first"), send("second")]
    h.provider(chat, WORKING, COMPLETED)
    assert h.calls(chat) == [send("first"), send("second"), send("third")]
    h.provider(chat, WORKING, COMPLETED)
    turns = h.store.state(chat)["turns"]
    assert [t["message"]["text"] for t in turns] == ["first", "second", "third"]
    assert [t["state"] for t in turns] == ["complete"] * 3
    assert "queuedMessages" not in h.store.state(chat)


def test_cancelling_a_turn_starts_the_next_queued_message_once_the_provider_ended_it() -> None:
    h = Harness()
    peer, chat = ready(h)
    h.start_turn(peer, chat, "t1", "first")
    h.provider(chat, WORKING)
    message = {"text": "queued", "origin": {"kind": "user"}}
    h.dispatch(
        peer,
        chat,
        {"type": "chat/pendingMessageSet", "kind": "queued", "id": "q1", "message": message},
        2,
    )
    h.frames(peer)
    h.dispatch(peer, chat, cancel("t1"), 3)
    cancelled, started = h.actions(peer, chat)
    assert cancelled == cancel("t1")
    assert (started["type"], started["queuedMessageId"]) == ("chat/turnStarted", "q1")
    assert h.calls(chat) == [send("first"), Cancel()]  # its Send waits for t1's end
    h.provider(chat, CANCELLED)
    assert h.calls(chat) == [send("first"), Cancel(), send("queued")]


def test_steering_without_a_running_turn_is_refused() -> None:
    h = Harness()
    peer, chat = ready(h)
    steer = {
        "type": "chat/pendingMessageSet",
        "kind": "steering",
        "id": "s1",
        "message": {"text": "too late", "origin": {"kind": "user"}},
    }
    h.dispatch(peer, chat, steer)
    [echo] = h.envelopes(peer, chat)
    assert echo["rejectionReason"] == "no turn is running to steer"
    assert h.calls(chat) == []
