"""The byte ledger: each client id's kept bytes, by slot, charged on accept, replaced, released
when the state lets them go or the channel is disposed, and refused past either bound."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from ahp_bridge import agentapi
from ahp_bridge.engine.budget import CHAT, Budget
from ahp_bridge.engine.inputs import HostToolCalled
from ahp_bridge.engine.jobs import OpenConversation
from ahp_bridge.engine.peers import Peer
from ahp_bridge.state.limits import KIB, Limits
from tests.support.engine import NOW_ISO, Harness, config, fake_provider, turn_event
from tests.unit.engine.test_client_tools import call, complete, running

WORKING = turn_event(agentapi.TurnState.WORKING)
COMPLETED = turn_event(agentapi.TurnState.COMPLETED)
S1, S2 = "ahp-session:/s1", "ahp-session:/s2"
#: A chat's turn-history charge (limits.max_live_turn_bytes' default).
HISTORY = 256 * KIB


def size(action: dict[str, Any]) -> int:
    return len(orjson.dumps(action))


def user(text: str) -> dict[str, Any]:
    return {"text": text, "origin": {"kind": "user"}}


def draft(text: str) -> dict[str, Any]:
    return {"type": "chat/draftChanged", "draft": user(text)}


def queued(message_id: str, text: str = "later") -> dict[str, Any]:
    return {
        "type": "chat/pendingMessageSet",
        "kind": "queued",
        "id": message_id,
        "message": user(text),
    }


def turn(turn_id: str, text: str = "hello") -> dict[str, Any]:
    return {
        "type": "chat/turnStarted",
        "turnId": turn_id,
        "startedAt": NOW_ISO,
        "message": user(text),
    }


def harness(**limits: int) -> Harness:
    return Harness(config=config(limits=Limits(**limits)))


def ready(h: Harness, client_id: str = "c1", uri: str = S1) -> tuple[Peer, str]:
    peer = h.connect(client_id)
    chat = h.create_session(peer, uri)
    h.subscribe(peer, chat)
    h.frames(peer)
    return peer, chat


def refusal(h: Harness, peer: Peer) -> str:
    [envelope] = h.envelopes(peer)
    reason: str = envelope["rejectionReason"]
    return reason


# -- the ledger alone --------------------------------------------------------------------------


def test_a_slot_is_charged_replaced_moved_and_released() -> None:
    b = Budget(Limits())
    b.charge("a", "ch", ("draft",), 100)
    b.charge("a", "ch", ("draft",), 30)  # a new draft replaces the old one's size
    b.charge("b", "ch", ("queued", "q1"), 50)
    assert (b.of("a"), b.of("b"), b.total) == (30, 50, 80)
    assert b.move("ch", ("queued", "q1"), "ch", ("turn", "t1"))
    assert (b.charged("ch", ("queued", "q1")), b.charged("ch", ("turn", "t1"))) == (None, 50)
    assert b.of("b") == 50
    b.release("ch", ("draft",))
    assert (b.of("a"), b.total) == (0, 50)
    b.release_channel("ch")
    assert (b.of("b"), b.total) == (0, 0)


def test_a_charge_past_either_bound_is_refused_naming_its_key_and_charges_nothing() -> None:
    b = Budget(Limits(max_client_bytes=100, max_host_bytes=150))
    assert b.take("a", "ch", ("draft",), 100, "chat/draftChanged") is None
    assert b.take("a", "ch", ("draft",), 90, "chat/draftChanged") is None  # replacing: fits
    assert b.take("a", "ch", ("queued", "q"), 11, "chat/pendingMessageSet") == (
        "chat/pendingMessageSet needs 11 bytes and client 'a' already has the host keep 90 of "
        "the 100 one client may (limits.max_client_bytes): remove drafts, queued messages, "
        "chats or sessions you no longer need"
    )
    assert b.take("b", "ch", ("title",), 61, "session/titleChanged") == (
        "session/titleChanged needs 61 bytes and the host already keeps 90 of the 150 it keeps "
        "for all clients (limits.max_host_bytes): dispose of sessions you no longer need or "
        "ask the operator to raise it"
    )
    assert (b.of("a"), b.of("b"), b.total) == (90, 0, 90)


# -- through the engine ------------------------------------------------------------------------


def test_a_session_and_its_default_chat_are_charged_to_their_creator_until_disposed() -> None:
    h = harness()
    peer, chat = ready(h)
    budget = h.engine.budget
    params = {"channel": S1, "provider": "fake"}
    assert budget.of("c1") == HISTORY + size(params)
    assert budget.charged(chat, CHAT) == HISTORY  # the reservation went to the published chat
    h.result(peer, "disposeSession", {"channel": S1})
    assert (budget.of("c1"), budget.total) == (0, 0)


def test_a_draft_replaces_the_previous_one() -> None:
    h = harness()
    peer, chat = ready(h)
    budget = h.engine.budget
    base = budget.of("c1")
    h.dispatch(peer, chat, draft("x" * 1000), 1)
    h.dispatch(peer, chat, draft("y" * 10), 2)
    assert budget.of("c1") == base + size(draft("y" * 10))


def test_a_queued_message_is_charged_until_it_ran_and_its_turn_is_history() -> None:
    h = harness()
    peer, chat = ready(h)
    budget = h.engine.budget
    base = budget.of("c1")
    h.dispatch(peer, chat, turn("t1"), 1)
    h.provider(chat, WORKING)
    h.dispatch(peer, chat, queued("q1", "q" * 500), 2)
    running, waiting = size(turn("t1")), size(queued("q1", "q" * 500))
    assert budget.of("c1") == base + running + waiting
    h.provider(chat, COMPLETED)  # t1 ends (the newest turn: kept); q1 runs as the host's turn
    assert budget.charged(chat, ("queued", "q1")) is None
    [t2] = [t for t in [h.store.state(chat).get("activeTurn")] if t]
    assert budget.charged(chat, ("turn", t2["id"])) == waiting
    assert budget.of("c1") == base + running + waiting
    h.provider(chat, WORKING, COMPLETED)  # t2 is the newest: t1 lies within the history charge
    assert budget.charged(chat, ("turn", "t1")) is None
    assert budget.of("c1") == base + waiting


def test_a_removed_queued_message_and_a_removed_annotation_are_released() -> None:
    h = harness()
    peer, chat = ready(h)
    budget = h.engine.budget
    base = budget.of("c1")
    h.dispatch(peer, chat, turn("t1"), 1)
    h.provider(chat, WORKING)
    h.dispatch(peer, chat, queued("q1"), 2)
    h.dispatch(peer, chat, {"type": "chat/pendingMessageRemoved", "kind": "queued", "id": "q1"}, 3)
    assert budget.of("c1") == base + size(turn("t1"))
    notes = S1 + "/annotations"
    annotation = {
        "type": "annotations/set",
        "annotation": {
            "id": "a1",
            "origin": {"session": S1},
            "resource": "file:///x",
            "resolved": False,
            "entries": [{"id": "e1", "text": "n" * 300}],
        },
    }
    h.dispatch(peer, notes, annotation, 4)
    assert budget.of("c1") == base + size(turn("t1")) + size(annotation)
    h.dispatch(peer, notes, {"type": "annotations/removed", "annotationId": "a1"}, 5)
    assert budget.of("c1") == base + size(turn("t1"))


def test_an_action_past_max_client_bytes_is_refused_and_nothing_kept_is_lost() -> None:
    h = harness(max_client_bytes=HISTORY + 2 * KIB)
    peer, chat = ready(h)
    other, other_chat = ready(h, "c2", S2)
    h.dispatch(peer, chat, draft("kept"), 1)
    h.frames(peer)
    big = queued("q1", "x" * 2 * KIB)
    h.dispatch(peer, chat, big, 2)
    used = h.engine.budget.of("c1")
    assert refusal(h, peer) == (
        f"chat/pendingMessageSet needs {size(big):,} bytes and client 'c1' already has the host "
        f"keep {used:,} of the {HISTORY + 2 * KIB:,} one client may (limits.max_client_bytes): "
        "remove drafts, queued messages, chats or sessions you no longer need"
    )
    state = h.store.state(chat)
    assert state["draft"] == user("kept") and "queuedMessages" not in state
    assert h.engine.budget.of("c1") == used
    h.dispatch(other, other_chat, draft("mine"), 1)  # another client is unaffected
    assert h.store.state(other_chat)["draft"] == user("mine")


def test_a_request_past_max_client_bytes_is_refused_until_the_client_disposes() -> None:
    h = harness(max_client_bytes=HISTORY + 1 * KIB)
    peer, _ = ready(h)
    error = h.error(peer, "createChat", {"channel": S1, "chat": "ahp-chat:/c2"})
    assert error["code"] == -32009
    assert error["message"].startswith(
        "Permission denied: this chat (with its turn history) needs 262,"
    )
    assert error["message"].endswith(
        "(limits.max_client_bytes): remove drafts, queued messages, chats or sessions you no "
        "longer need"
    )
    error = h.error(peer, "createSession", {"channel": S2, "provider": "fake"})
    assert error["code"] == -32009 and "(limits.max_client_bytes)" in error["message"]
    assert not h.store.has(S2)
    h.result(peer, "disposeSession", {"channel": S1})
    h.result(peer, "createSession", {"channel": S2, "provider": "fake"})
    assert h.store.state(S2)["lifecycle"] == "ready"


def test_the_host_bound_counts_every_client_together() -> None:
    h = harness(max_host_bytes=2 * HISTORY + 1 * KIB)
    ready(h, "c1", S1)
    peer = h.connect("c2")
    h.result(peer, "createSession", {"channel": S2, "provider": "fake"})
    error = h.error(peer, "createSession", {"channel": "ahp-session:/s3", "provider": "fake"})
    assert error["code"] == -32009
    assert "(limits.max_host_bytes): dispose of sessions you no longer need" in error["message"]


@pytest.mark.parametrize("kind", ["queued", "steering"])
def test_a_pending_message_that_was_a_no_op_is_not_left_charged(kind: str) -> None:
    h = harness()
    peer, chat = ready(h)
    base = h.engine.budget.of("c1")
    h.dispatch(peer, chat, turn("t1"), 1)
    h.provider(chat, WORKING)
    message = {**queued("m1"), "kind": kind}
    h.dispatch(peer, chat, message, 2)
    h.dispatch(peer, chat, {"type": "chat/pendingMessageRemoved", "kind": kind, "id": "m1"}, 3)
    assert h.engine.budget.of("c1") == base + size(turn("t1"))


def test_an_entry_for_an_unknown_annotation_keeps_nothing_and_is_not_charged() -> None:
    h = harness()
    peer, _ = ready(h)
    base = h.engine.budget.of("c1")
    entry = {
        "type": "annotations/entrySet",
        "annotationId": "nowhere",
        "entry": {"id": "e1", "text": "n" * 300},
    }
    h.dispatch(peer, S1 + "/annotations", entry, 1)
    assert h.engine.budget.of("c1") == base


def test_a_chat_is_charged_its_history_until_disposed_or_its_opening_fails() -> None:
    h = harness()
    peer, _ = ready(h)
    budget = h.engine.budget
    base = budget.of("c1")
    params = {"channel": S1, "chat": "ahp-chat:/c2"}
    h.result(peer, "createChat", params)
    assert budget.charged("ahp-chat:/c2", CHAT) == HISTORY + size(params)
    assert budget.of("c1") == base + HISTORY + size(params)
    h.result(peer, "disposeChat", {"channel": "ahp-chat:/c2"})
    assert budget.of("c1") == base
    h.fail(OpenConversation, RuntimeError("the agent would not start"))
    h.result(peer, "createChat", {"channel": S1, "chat": "ahp-chat:/c3"})
    assert not h.store.has("ahp-chat:/c3")
    assert budget.of("c1") == base


def test_a_client_tools_result_is_charged_to_its_turn_until_the_turn_is_history() -> None:
    h = Harness(providers=[fake_provider()])
    vs, _, chat = running(h)
    budget = h.engine.budget
    before = budget.of("vs")
    h.feed(HostToolCalled(chat, 7, call()))
    result = complete("call-1", "u" * 2000)
    h.dispatch(vs, chat, result, 2)
    slot = ("turn", "t1", "chat/toolCallComplete", "call-1", "")
    assert budget.charged(chat, slot) == size(result)
    assert budget.of("vs") == before + size(result)
    h.provider(chat, COMPLETED)  # t1 is the newest completed turn: still charged
    assert budget.charged(chat, slot) == size(result)
    h.dispatch(vs, chat, turn("t2"), 3)
    h.provider(chat, WORKING, COMPLETED)  # t1 lies within the chat's history charge now
    assert budget.charged(chat, slot) is None
    assert budget.of("vs") == before - size(turn("t1")) + size(turn("t2"))


def test_a_cleared_draft_gives_its_bytes_back() -> None:
    h = harness()
    peer, chat = ready(h)
    budget = h.engine.budget
    base = budget.of("c1")
    h.dispatch(peer, chat, draft("x" * 1000), 1)
    assert budget.of("c1") == base + size(draft("x" * 1000))
    h.dispatch(peer, chat, {"type": "chat/draftChanged"}, 2)
    assert budget.of("c1") == base


def test_an_action_that_starts_nothing_mints_no_id_and_reads_no_clock() -> None:
    # Per-action work off the hot path (issue 25): the queued-turn check only makes a turn id
    # and a time when something is queued.
    h = harness()
    peer, chat = ready(h)
    before = h.engine.new_id()
    reads = h.clock_reads
    for seq in range(1, 4):
        h.dispatch(peer, chat, draft(f"d{seq}"), seq)
    assert int(h.engine.new_id().split("-")[1]) == int(before.split("-")[1]) + 1
    assert h.clock_reads - reads == 3  # one per applied envelope (its date), none for a turn
