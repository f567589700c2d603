"""The fan-out: each envelope shaped and encoded once per wire line, each peer's outbox bounded,
one Flush per input, and observers' reactions applied once every observer has spoken."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import orjson

from ahp_bridge.engine.effects import ClosePeer, Effect, Flush, Log
from ahp_bridge.engine.fanout import TOO_SLOW, HostAction, Reaction
from ahp_bridge.engine.inputs import HostActions
from ahp_bridge.state.envelope import Envelope
from tests.support.engine import ROOT, Harness, config

SESSION = "ahp-session:/s1"
TOGGLED = {
    "type": "session/customizationToggled",
    "id": "skill:x",
    "enablement": [{"kind": "global", "enabled": False}],
}


def draft(text: str) -> dict[str, Any]:
    return {"type": "chat/draftChanged", "draft": {"text": text, "origin": {"kind": "user"}}}


def test_an_envelope_is_encoded_once_per_line_and_shared_by_its_peers() -> None:
    h = Harness()
    h.create_session(h.connect("maker"))
    lines = {
        v: [h.connect(f"{v}-{i}", v, subscriptions=[SESSION]) for i in range(3)]
        for v in ("1.0.0", "0.9.0", "0.7.0")
    }
    h.feed(HostActions([(SESSION, TOGGLED)]))
    sent = {v: [p.outbox[0] for p in peers] for v, peers in lines.items()}
    for frames in sent.values():
        assert all(f is frames[0] for f in frames)  # one str object per line
    assert orjson.loads(sent["1.0.0"][0])["params"]["action"] == TOGGLED
    assert sent["0.9.0"][0] is sent["1.0.0"][0]  # 0.9 gets the action unchanged: one encode
    assert orjson.loads(sent["0.7.0"][0])["params"]["action"] == {
        "type": "session/customizationToggled",
        "id": "skill:x",
        "enabled": False,
    }


def test_a_notification_is_shaped_and_encoded_once_per_line_in_use() -> None:
    h = Harness()
    versions = ["1.0.0", "1.0.0", "0.7.0", "0.7.0"]
    watchers = [h.connect(f"w{i}", v, subscriptions=[ROOT]) for i, v in enumerate(versions)]
    h.create_session(h.connect("maker"))
    added = [next(f for f in p.outbox if "root/sessionAdded" in f) for p in watchers]
    assert added[0] is added[1] and added[2] is added[3]
    assert added[0] != added[2]  # 0.7 has no SessionSummary.chats
    assert "chats" in orjson.loads(added[0])["params"]["summary"]
    assert "chats" not in orjson.loads(added[2])["params"]["summary"]


def test_a_0_9_peer_is_not_sent_a_1_0_only_action_type() -> None:
    h = Harness()
    writer = h.connect("writer")
    chat = h.create_session(writer)
    new, old = (
        h.connect("new", "1.0.0", subscriptions=[chat]),
        h.connect("old", "0.9.0", subscriptions=[chat]),
    )
    effects = h.dispatch(writer, chat, {"type": "chat/isReadChanged", "isRead": True})
    assert h.actions(new, chat) == [{"type": "chat/isReadChanged", "isRead": True}]
    assert h.frames(old) == []
    assert not any(old in e.peers for e in effects if isinstance(e, Flush))
    # ... while an action both lines know reaches both.
    h.dispatch(writer, chat, draft("x"), 2)
    assert h.actions(old, chat) == h.actions(new, chat) == [draft("x")]


def test_a_peer_whose_outbox_fills_is_cut_off_alone() -> None:
    h = Harness(config=config(outbound_queue=3))
    fast = h.connect("fast")
    chat = h.create_session(fast)
    h.subscribe(fast, chat)
    slow = h.connect("slow", subscriptions=[chat])
    for i in range(3):
        effects = h.dispatch(fast, chat, draft(f"m{i}"), i + 1)
        assert not any(isinstance(e, ClosePeer) for e in effects)
        assert len(slow.outbox) == i + 1
        h.frames(fast)  # the fast peer keeps up
    effects = h.dispatch(fast, chat, draft("m3"), 4)
    assert [e for e in effects if isinstance(e, ClosePeer)] == [
        ClosePeer(slow, 1008, TOO_SLOW, drop_queued=True)
    ]
    assert TOO_SLOW.startswith("outbound queue full (server.outbound_queue)")
    assert slow.closed
    assert len(slow.outbox) == 4  # what it had; the shell drops the queued part
    assert [a["draft"]["text"] for a in h.actions(fast, chat)] == ["m3"]
    # Cut off: nothing more is queued for it, and it is not closed twice.
    effects = h.dispatch(fast, chat, draft("m4"), 5)
    assert len(slow.outbox) == 4
    assert not any(isinstance(e, ClosePeer) for e in effects)
    assert effects == [Flush((fast,))]


def test_a_frame_from_a_cut_off_peer_is_not_read() -> None:
    h = Harness(config=config(outbound_queue=1))
    peer = h.connect()
    h.send(peer, "ping", {"channel": ROOT})
    h.send(peer, "ping", {"channel": ROOT})  # the second answer overfills its outbox
    assert peer.closed and len(h.closed) == 1
    assert h.send(peer, "ping", {"channel": ROOT}) == []
    assert len(peer.outbox) == 2


def test_flush_names_each_peer_once_per_input_in_the_order_they_got_frames() -> None:
    h = Harness()
    a = h.connect("a")
    chat = h.create_session(a)
    for channel in (ROOT, SESSION, chat):
        h.subscribe(a, channel)
    b = h.connect("b", subscriptions=[SESSION])
    effects = h.start_turn(a, chat)
    flushes = [e for e in effects if isinstance(e, Flush)]
    assert flushes == [Flush((a, b))]
    assert effects[-1] == flushes[0]  # after everything else the input decided
    # a got the turn, the chat entry's update and the summary's news; b the entry's update.
    assert [f.get("method") for f in h.frames(a)] == [
        "action",
        "action",
        "root/sessionSummaryChanged",
    ]
    assert h.actions(b) == [{"type": "session/chatUpdated", "chat": chat, "changes": {"status": 8}}]


def test_observers_of_an_envelope_all_speak_before_their_reactions_are_applied() -> None:
    h = Harness()
    peer = h.connect()
    chat = h.create_session(peer)
    h.subscribe(peer, chat)
    fanout = h.engine.fanout
    seen: list[tuple[str, str, int]] = []

    def first(envelope: Envelope) -> Iterable[Reaction]:
        seen.append(("first", envelope.action["draft"]["text"], h.store.server_seq))
        if envelope.action["draft"]["text"] == "client":
            return (HostAction(chat, draft("host")), Log("info", "first reacted"))
        return ()

    def second(envelope: Envelope) -> Iterable[Reaction]:
        text = h.store.state(chat)["draft"]["text"]
        seen.append(("second", text, h.store.server_seq))
        return ()

    fanout.observe(first, ["chat/draftChanged"])
    fanout.observe(second, ["chat/draftChanged"])
    effects: list[Effect] = h.dispatch(peer, chat, draft("client"))
    seq = h.store.server_seq
    # The second observer saw the client's draft, not the first one's reaction to it.
    assert seen == [
        ("first", "client", seq - 1),
        ("second", "client", seq - 1),
        ("first", "host", seq),
        ("second", "host", seq),
    ]
    assert [a["draft"]["text"] for a in h.actions(peer, chat)] == ["client", "host"]
    assert Log("info", "first reacted") in effects
