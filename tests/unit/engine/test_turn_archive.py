"""Turns evicted from a chat's live state: archived by an effect, paged back by fetchTurns
through a read whose completion applies `chat/turnsLoaded` and then answers."""

from __future__ import annotations

from typing import Any

from ahp_bridge import agentapi
from ahp_bridge.engine.effects import Run
from ahp_bridge.engine.jobs import ArchiveTurns, ReadTurns
from ahp_bridge.engine.peers import Peer
from ahp_bridge.state.store import Store
from tests.support.engine import Harness, turn_event

COMPLETED = turn_event(agentapi.TurnState.COMPLETED)


def harness(live: int = 3, page: int = 2) -> Harness:
    return Harness(store=Store(live_turns=live, turns_page_size=page))


def chat_with_turns(h: Harness, n: int) -> tuple[Peer, str]:
    peer = h.connect()
    chat = h.create_session(peer)
    h.subscribe(peer, chat)
    for i in range(n):
        h.start_turn(peer, chat, f"t{i}", f"q{i}", seq=i + 1)
        h.provider(chat, COMPLETED)
    peer.outbox.clear()
    return peer, chat


def ids(turns: list[dict[str, Any]]) -> list[str]:
    return [t["id"] for t in turns]


def loaded(h: Harness, peer: Peer, chat: str) -> list[list[str]]:
    return [ids(a["turns"]) for a in h.actions(peer, chat) if a["type"] == "chat/turnsLoaded"]


def test_a_turn_ending_past_the_bound_hands_the_oldest_to_the_archive() -> None:
    h = harness(live=3)
    peer, chat = chat_with_turns(h, 3)
    assert not any(isinstance(j, ArchiveTurns) for j in h.jobs)
    h.start_turn(peer, chat, "t3", "q3", seq=4)
    effects = h.provider(chat, COMPLETED)
    [archive] = [e.job for e in effects if isinstance(e, Run) and isinstance(e.job, ArchiveTurns)]
    assert (archive.chat, archive.start, ids(list(archive.turns))) == (chat, 0, ["t0"])
    assert ids(h.store.state(chat)["turns"]) == ["t1", "t2", "t3"]


def test_fetch_turns_past_the_live_window_waits_for_the_read_then_loads_and_answers() -> None:
    h = harness(live=3, page=2)
    peer, chat = chat_with_turns(h, 7)  # live t4..t6; t0..t3 archived
    snap = h.subscribe(h.connect("c2"), chat)
    cursor = snap["state"]["turnsNextCursor"]
    h.hold(ReadTurns)
    h.send(peer, "fetchTurns", {"channel": chat, "cursor": cursor}, id="f1")
    [pending] = h.held
    assert pending.job == ReadTurns(chat, 2, 4)
    assert not [f for f in h.frames(peer, keep=True) if f.get("id") == "f1"]  # not answered yet
    h.finish(pending, h.read_archive(pending.job))
    frames = h.frames(peer)
    kinds = [(f.get("method"), f.get("id")) for f in frames]
    assert kinds == [("action", None), (None, "f1")]  # turnsLoaded first, then the answer
    action = frames[0]["params"]["action"]
    assert ids(action["turns"]) == ["t2", "t3"] and action["turnsNextCursor"]
    assert frames[1]["result"] == {}
    assert len(h.store.state(chat)["turns"]) == 3  # loaded back and evicted again


def test_a_client_pages_back_through_every_evicted_turn_in_order_exactly_once() -> None:
    h = harness(live=3, page=2)
    _, chat = chat_with_turns(h, 9)
    peer = h.connect("pager")
    state = h.subscribe(peer, chat)["state"]
    assert ids(state["turns"]) == ["t6", "t7", "t8"]
    received: list[str] = []
    cursor = state.get("turnsNextCursor")
    while cursor:
        assert h.result(peer, "fetchTurns", {"channel": chat, "cursor": cursor}) == {}
        [action] = [a for a in h.actions(peer, chat) if a["type"] == "chat/turnsLoaded"]
        received[:0] = ids(action["turns"])
        cursor = action.get("turnsNextCursor")
        assert len(h.store.state(chat)["turns"]) <= 3
    assert received == [f"t{i}" for i in range(6)]
    archived = [j for j in h.jobs if isinstance(j, ArchiveTurns)]
    assert sorted(j.start for j in archived) == list(range(6))  # each turn archived once


def test_a_fetch_while_a_page_is_read_waits_for_that_page() -> None:
    h = harness(live=3, page=2)
    peer, chat = chat_with_turns(h, 7)
    other = h.connect("c2")
    cursor = h.subscribe(other, chat)["state"]["turnsNextCursor"]
    other.outbox.clear()
    h.hold(ReadTurns)
    h.send(peer, "fetchTurns", {"channel": chat, "cursor": cursor}, id="a")
    h.send(other, "fetchTurns", {"channel": chat, "cursor": cursor}, id="b")
    [pending] = h.held  # one read for both
    h.finish(pending, h.read_archive(pending.job))
    for client, request_id in ((peer, "a"), (other, "b")):
        frames = h.frames(client)
        assert [f.get("id") for f in frames if "method" not in f] == [request_id]
        [action] = [f["params"]["action"] for f in frames if f.get("method") == "action"]
        assert ids(action["turns"]) == ["t2", "t3"]


def test_a_read_that_fails_or_comes_back_short_is_an_internal_error() -> None:
    h = harness(live=3, page=2)
    peer, chat = chat_with_turns(h, 7)
    cursor = h.subscribe(peer, chat)["state"]["turnsNextCursor"]
    h.fail(ReadTurns, OSError("disk gone"))
    error = h.error(peer, "fetchTurns", {"channel": chat, "cursor": cursor})
    assert error == {
        "code": -32603,
        "message": "Internal error: the older turns could not be read: disk gone",
    }
    h.archive.pop((chat, 2))
    error = h.error(peer, "fetchTurns", {"channel": chat, "cursor": cursor})
    assert error["code"] == -32603
    assert "holds 1 of the 2 older turns" in error["message"]
    assert not loaded(h, peer, chat)


def test_stale_and_foreign_cursors_are_invalid_params() -> None:
    h = harness(live=3, page=2)
    peer, chat = chat_with_turns(h, 7)
    cursor = h.subscribe(peer, chat)["state"]["turnsNextCursor"]
    generation, _, _ = cursor.partition("~")
    for bad in (f"{int(generation) + 1}~4", f"{generation}~99", "nonsense"):
        error = h.error(peer, "fetchTurns", {"channel": chat, "cursor": bad})
        assert error["code"] == -32602
        assert error["message"] == f"Invalid params: cursor: unrecognised turns cursor for {chat}"
