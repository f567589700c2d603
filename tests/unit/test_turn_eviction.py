"""Store: a chat keeps its newest completed turns live; older ones are evicted and paged back."""

from __future__ import annotations

from typing import Any

import pytest

from ahp_bridge.state.reducers import reduce
from ahp_bridge.state.store import Store, TurnsPage

NOW = "2026-03-01T12:00:00.000Z"
CHAT = "ahp-chat:/c1"
OTHER = "ahp-chat:/c2"


def turn(i: int, text: str = "") -> dict[str, Any]:
    return {
        "id": f"t{i}",
        "message": {"text": text or f"m{i}", "origin": {"kind": "user"}},
        "responseParts": [],
        "state": "complete",
    }


def chat_state(n: int = 0) -> dict[str, Any]:
    return {
        "resource": CHAT,
        "title": "chat",
        "status": 1,
        "modifiedAt": NOW,
        "turns": [turn(i) for i in range(n)],
    }


def ids(turns: list[dict[str, Any]]) -> list[str]:
    return [t["id"] for t in turns]


def run_turn(store: Store, i: int, text: str = "", chat: str = CHAT) -> None:
    message = {"text": text or f"m{i}", "origin": {"kind": "user"}}
    store.apply(
        chat, {"type": "chat/turnStarted", "turnId": f"t{i}", "startedAt": NOW, "message": message}
    )
    store.apply(chat, {"type": "chat/turnComplete", "turnId": f"t{i}", "duration": 1})


class Archive:
    """What the host's archive (the catalog) does with the store's evictions."""

    def __init__(self) -> None:
        self.turns: dict[tuple[str, int], dict[str, Any]] = {}
        self.writes = 0

    def keep(self, store: Store) -> None:
        for evicted in store.take_evicted():
            for offset, t in enumerate(evicted.turns):
                self.turns[(evicted.chat, evicted.start + offset)] = t
                self.writes += 1

    def read(self, page: TurnsPage) -> list[dict[str, Any]]:
        return [self.turns[(page.chat, i)] for i in range(page.start, page.split)]


class Mirror:
    """A client: a snapshot plus every broadcast envelope reduced on top."""

    def __init__(self, store: Store, last_turns: int | None) -> None:
        snap = store.snapshot(CHAT, last_turns=last_turns)
        self.state, self.seq = snap["state"], snap["fromSeq"]
        self.loaded: list[str] = []

    def catch_up(self, store: Store) -> None:
        for env in store.replay(self.seq, [CHAT]) or []:
            if env.action["type"] == "chat/turnsLoaded":
                self.loaded[:0] = ids(env.action["turns"])
            self.state = reduce("chat", self.state, env.action)
            self.seq = env.server_seq


def fetch(store: Store, archive: Archive, cursor: str | None) -> None:
    """fetchTurns as the engine does it: cut the page, read its evicted part, apply it."""
    archive.keep(store)
    page = store.older_page(CHAT, cursor)
    action = store.page_action(page, archive.read(page))
    assert action is not None
    store.apply(CHAT, action)
    archive.keep(store)


# -- the eviction rule ---------------------------------------------------------------------------


def test_a_chat_keeps_at_most_live_turns_completed_turns() -> None:
    store = Store(live_turns=3)
    store.create(CHAT, "chat", chat_state())
    archive = Archive()
    for i in range(3):
        run_turn(store, i)
    assert ids(store.state(CHAT)["turns"]) == ["t0", "t1", "t2"]
    assert not store.has_evicted
    run_turn(store, 3)
    assert ids(store.state(CHAT)["turns"]) == ["t1", "t2", "t3"]
    evicted = store.take_evicted()
    assert [(e.chat, e.start, ids(list(e.turns))) for e in evicted] == [(CHAT, 0, ["t0"])]
    for i in range(4, 10):
        run_turn(store, i)
        archive.keep(store)
        assert len(store.state(CHAT)["turns"]) == 3
    assert sorted(i for _, i in archive.turns) == list(range(1, 7))  # t0 was taken above
    assert store.live_base(CHAT) == 7


def test_a_running_turn_is_not_counted_and_never_evicted() -> None:
    store = Store(live_turns=2)
    store.create(CHAT, "chat", chat_state(2))
    message = {"text": "running", "origin": {"kind": "user"}}
    store.apply(
        CHAT, {"type": "chat/turnStarted", "turnId": "r", "startedAt": NOW, "message": message}
    )
    state = store.state(CHAT)
    assert ids(state["turns"]) == ["t0", "t1"] and state["activeTurn"]["id"] == "r"
    assert not store.has_evicted


def test_the_byte_bound_evicts_the_oldest_but_never_the_newest() -> None:
    store = Store(live_turns=50, live_turn_bytes=600)
    store.create(CHAT, "chat", chat_state())
    for i in range(4):
        run_turn(store, i, "x" * 150)  # each turn is some 250 bytes of JSON: two fit in 600
    assert ids(store.state(CHAT)["turns"]) == ["t2", "t3"]
    run_turn(store, 4, "y" * 5000)  # larger than the whole bound: it stays, alone
    assert ids(store.state(CHAT)["turns"]) == ["t4"]
    run_turn(store, 5, "z")
    assert ids(store.state(CHAT)["turns"]) == ["t5"]  # t4 alone is over the bound
    assert [(e.start, len(e.turns)) for e in store.take_evicted()] == [
        (0, 1),
        (1, 1),
        (2, 2),
        (4, 1),
    ]


def test_a_chat_created_with_more_turns_than_it_keeps_is_evicted_at_once() -> None:
    store = Store(live_turns=4)
    store.create(CHAT, "chat", chat_state(10))
    assert ids(store.state(CHAT)["turns"]) == ["t6", "t7", "t8", "t9"]
    (evicted,) = store.take_evicted()
    assert evicted.start == 0 and ids(list(evicted.turns)) == [f"t{i}" for i in range(6)]


# -- snapshots and the cursor --------------------------------------------------------------------


def test_every_snapshot_of_a_chat_with_evicted_turns_has_a_cursor() -> None:
    store = Store(live_turns=4, turns_page_size=3)
    store.create(CHAT, "chat", chat_state(10))
    full = store.snapshot(CHAT)["state"]
    assert ids(full["turns"]) == ["t6", "t7", "t8", "t9"] and full["turnsNextCursor"]
    windowed = store.snapshot(CHAT, last_turns=2)["state"]
    assert ids(windowed["turns"]) == ["t8", "t9"] and windowed["turnsNextCursor"]
    # a view larger than what is live gets what is live, and the cursor
    store2 = Store(live_turns=4)
    store2.create(CHAT, "chat", chat_state(10))
    wide = store2.snapshot(CHAT, last_turns=20)["state"]
    assert ids(wide["turns"]) == ["t6", "t7", "t8", "t9"] and wide["turnsNextCursor"]
    assert "turnsNextCursor" not in store.state(CHAT)


def test_a_windowed_client_pages_back_through_every_evicted_turn_exactly_once() -> None:
    store = Store(live_turns=5, turns_page_size=4)
    store.create(CHAT, "chat", chat_state())
    archive = Archive()
    for i in range(23):
        run_turn(store, i)
        archive.keep(store)
    client = Mirror(store, 3)
    assert ids(client.state["turns"]) == ["t20", "t21", "t22"]
    writes = archive.writes
    while cursor := client.state.get("turnsNextCursor"):
        fetch(store, archive, cursor)
        client.catch_up(store)
        assert len(store.state(CHAT)["turns"]) <= 5  # what was loaded back leaves again
    assert ids(client.state["turns"]) == [f"t{i}" for i in range(23)]
    assert client.loaded == [f"t{i}" for i in range(20)]  # each turn once, in order
    assert archive.writes == writes  # turns loaded back and evicted again are not rewritten
    with pytest.raises(ValueError, match="evicted"):  # the sync shortcut refuses archived pages
        store.load_older_turns(CHAT, store.snapshot(CHAT)["state"]["turnsNextCursor"])


def test_a_full_client_pages_back_from_the_live_state() -> None:
    store = Store(live_turns=4, turns_page_size=3)
    store.create(CHAT, "chat", chat_state(11))
    archive = Archive()
    client = Mirror(store, None)
    while cursor := client.state.get("turnsNextCursor"):
        fetch(store, archive, cursor)
        client.catch_up(store)
    assert ids(client.state["turns"]) == [f"t{i}" for i in range(11)]
    assert client.loaded == [f"t{i}" for i in range(7)]


def test_a_page_next_to_the_live_state_is_read_partly_from_the_archive() -> None:
    store = Store(live_turns=6, turns_page_size=4)
    store.create(CHAT, "chat", chat_state(10))
    archive = Archive()
    client = Mirror(store, 2)  # window t8..; live t4..t9
    page = store.older_page(CHAT, client.state["turnsNextCursor"])
    assert (page.start, page.split, page.stop) == (4, 4, 8)
    assert ids(list(page.live)) == ["t4", "t5", "t6", "t7"] and page.archived == 0
    fetch(store, archive, client.state["turnsNextCursor"])
    page = store.older_page(CHAT, None)
    assert (page.start, page.split, page.stop, page.archived) == (0, 4, 4, 4)


def test_a_cursor_stays_valid_while_more_turns_are_evicted() -> None:
    store = Store(live_turns=3, turns_page_size=2)
    store.create(CHAT, "chat", chat_state())
    archive = Archive()
    for i in range(6):
        run_turn(store, i)
    client = Mirror(store, None)  # holds t3..t5, cursor at 3
    cursor = client.state["turnsNextCursor"]
    for i in range(6, 12):  # t3..t8 are evicted meanwhile: the cursor names the same boundary
        run_turn(store, i)
        client.catch_up(store)
    archive.keep(store)
    fetch(store, archive, cursor)
    client.catch_up(store)
    assert client.loaded == ["t1", "t2"]
    assert ids(client.state["turns"]) == [f"t{i}" for i in range(1, 12)]


def test_a_cursor_names_one_boundary_however_often_turns_are_evicted_and_loaded() -> None:
    store = Store(live_turns=4, turns_page_size=2)
    store.create(CHAT, "chat", chat_state())
    archive = Archive()
    named: dict[str, str] = {}  # cursor -> the oldest turn a snapshot with it holds
    for i in range(30):
        run_turn(store, i)
        archive.keep(store)
        for last in (1, 3, None):
            snap = store.snapshot(CHAT, last_turns=last)["state"]
            if "turnsNextCursor" in snap:
                oldest = snap["turns"][0]["id"]
                assert named.setdefault(snap["turnsNextCursor"], oldest) == oldest
        if i % 7 == 6:  # a client pages back a little: turns come back and leave again
            fetch(store, archive, None)
    assert len(named) > 20


def test_stale_and_foreign_cursors_are_not_recognised() -> None:
    store = Store(live_turns=3)
    store.create(CHAT, "chat", chat_state(8))
    store.create(OTHER, "chat", {**chat_state(8), "resource": OTHER})
    cursor = store.snapshot(CHAT)["state"]["turnsNextCursor"]
    foreign = store.snapshot(OTHER)["state"]["turnsNextCursor"]
    for bad in (foreign, "garbage", cursor.split("~")[0] + "~9", cursor.split("~")[0] + "~0"):
        with pytest.raises(ValueError, match="unrecognised"):
            store.older_page(CHAT, bad)
    store.apply(CHAT, {"type": "chat/truncated"})  # every turn gone: old cursors are void
    assert "turnsNextCursor" not in store.snapshot(CHAT)["state"]
    for i in range(20, 28):  # as many turns again: the old cursor's index exists once more
        run_turn(store, i)
    assert store.snapshot(CHAT)["state"]["turnsNextCursor"] != cursor
    with pytest.raises(ValueError, match="unrecognised"):
        store.older_page(CHAT, cursor)


def test_a_page_cut_before_the_window_moved_is_not_applied() -> None:
    store = Store(live_turns=3, turns_page_size=2)
    store.create(CHAT, "chat", chat_state(9))
    archive = Archive()
    archive.keep(store)
    first = store.older_page(CHAT, store.snapshot(CHAT)["state"]["turnsNextCursor"])
    fetch(store, archive, None)  # another fetch moved the window meanwhile
    assert store.page_action(first, archive.read(first)) is None
    with pytest.raises(ValueError, match="holds 1 of the 2"):
        store.page_action(store.older_page(CHAT, None), [turn(0)])


def test_a_new_subscriber_while_another_pages_back_leaves_no_gap() -> None:
    store = Store(live_turns=4, turns_page_size=3)
    store.create(CHAT, "chat", chat_state(14))
    archive = Archive()
    early = Mirror(store, 2)
    fetch(store, archive, early.state["turnsNextCursor"])
    early.catch_up(store)
    late = Mirror(store, 2)  # served from the live state: the window moves up to it
    for client in (early, late):
        while cursor := client.state.get("turnsNextCursor"):
            fetch(store, archive, cursor)
            early.catch_up(store)
            late.catch_up(store)
    everything = [f"t{i}" for i in range(14)]
    assert ids(early.state["turns"]) == everything and ids(late.state["turns"]) == everything


# -- truncation ----------------------------------------------------------------------------------


def test_truncating_to_an_evicted_turn_is_refused_and_changes_nothing() -> None:
    store = Store(live_turns=3)
    store.create(CHAT, "chat", chat_state(6))
    before, seq = store.state(CHAT), store.server_seq
    with pytest.raises(ValueError, match=r"'t1' .*\(limits\.max_live_turns"):
        store.apply(CHAT, {"type": "chat/truncated", "turnId": "t1"})
    assert store.state(CHAT) is before and store.server_seq == seq
    store.apply(CHAT, {"type": "chat/truncated", "turnId": "t4"})  # a live turn: fine
    assert ids(store.state(CHAT)["turns"]) == ["t3", "t4"]


def test_after_truncation_new_turns_are_archived_again_at_their_indices() -> None:
    store = Store(live_turns=3, turns_page_size=10)
    store.create(CHAT, "chat", chat_state(6))  # t0..t2 archived; live t3..t5
    archive = Archive()
    archive.keep(store)
    client = Mirror(store, None)
    fetch(store, archive, client.state["turnsNextCursor"])  # t0..t2 loaded back, evicted again
    store.apply(CHAT, {"type": "chat/truncated", "turnId": "t4"})
    for i in (10, 11, 12):
        run_turn(store, i)
    archive.keep(store)
    assert [archive.turns[(CHAT, i)]["id"] for i in range(5)] == ["t0", "t1", "t2", "t3", "t4"]
    everyone = Mirror(store, None)
    while cursor := everyone.state.get("turnsNextCursor"):
        fetch(store, archive, cursor)
        everyone.catch_up(store)
    assert ids(everyone.state["turns"]) == ["t0", "t1", "t2", "t3", "t4", "t10", "t11", "t12"]
