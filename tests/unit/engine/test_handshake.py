"""The handshake: version negotiation, initialize once, reconnect (replay or snapshots), the
line each client negotiated, and the subscription limit."""

from __future__ import annotations

from typing import Any

import pytest

from ahp_bridge import __version__
from ahp_bridge.engine.effects import ClosePeer, Flush, Run, SetTimer
from ahp_bridge.engine.inputs import PeerGone
from ahp_bridge.engine.jobs import Persist
from ahp_bridge.engine.peers import Peer
from ahp_bridge.state.store import Store
from tests.support.engine import NOW_MS, ROOT, Harness, config

SUPPORTED = [
    ">=1.0.0 <2.0.0",
    ">=0.10.0 <0.11.0",
    ">=0.9.0 <0.10.0",
    ">=0.8.0 <0.9.0",
    ">=0.7.0 <0.8.0",
    ">=0.6.0 <0.7.0",
]


def initialize(h: Harness, peer: Peer, offered: Any, client_id: str = "c1") -> dict[str, Any]:
    return h.request(peer, "initialize", {"protocolVersions": offered, "clientId": client_id})


def draft(text: str) -> dict[str, Any]:
    return {"type": "chat/draftChanged", "draft": {"text": text, "origin": {"kind": "user"}}}


@pytest.mark.parametrize(
    ("offered", "chosen", "line"),
    [
        (["0.7.3", "0.6.0"], "0.7.3", "0.7"),
        (["0.7.3", "1.0.0", "0.6.0"], "1.0.0", "1.0"),
        (["0.9.0", "1.1.0"], "1.1.0", "1.0"),  # a newer 1.x speaks 1.0 here, its string echoed
        (["1.1.0", "0.9.0"], "1.1.0", "1.0"),  # the order of the offer never matters
        (["0.9.2", "0.7.0"], "0.9.2", "0.9"),
        (["0.8.0"], "0.8.0", "0.8"),
        (["0.7.0", "0.8.0"], "0.8.0", "0.8"),
        (["0.6.0"], "0.6.0", "0.6"),
        (["0.10.0"], "0.10.0", "1.0"),  # VS Code's 0.10.0 shares the 1.0 wire
    ],
)
def test_initialize_answers_the_highest_offer_it_speaks_as_offered(
    offered: list[str], chosen: str, line: str
) -> None:
    h = Harness()
    peer = h.peer()
    result = initialize(h, peer, offered)["result"]
    assert result["protocolVersion"] == chosen
    assert result["serverInfo"] == {"name": "ahp-bridge", "version": __version__}
    assert result["serverSeq"] == h.store.server_seq
    assert result["snapshots"] == []
    assert (peer.client_id, peer.protocol_version, peer.wire.line) == ("c1", chosen, line)
    if line in ("0.8", "0.7", "0.6"):
        assert "_meta" not in result  # 0.9 added InitializeResult._meta
    else:
        assert result["_meta"]["ahpBridge.supportedVersions"] == SUPPORTED
        assert result["_meta"]["ahpBridge.capabilities"]["fake"]["cancel"] is True


def test_no_version_it_speaks_is_32005_with_the_supported_ranges_then_a_close() -> None:
    h = Harness()
    peer = h.peer()
    effects = h.send(
        peer,
        "initialize",
        {"channel": ROOT, "protocolVersions": ["0.5.2", "2.0.0"], "clientId": "c"},
    )
    [frame] = h.frames(peer)
    assert frame["error"] == {
        "code": -32005,
        "message": "Unsupported protocol version: offered ['0.5.2', '2.0.0']; this host speaks "
        ">=1.0.0 <2.0.0, >=0.10.0 <0.11.0, >=0.9.0 <0.10.0, >=0.8.0 <0.9.0, >=0.7.0 <0.8.0, "
        ">=0.6.0 <0.7.0",
        "data": {"supportedVersions": SUPPORTED},
    }
    # The error goes out first (its Flush follows the close: the writer sends what is queued).
    assert effects == [ClosePeer(peer, 1000, "unsupported protocol version"), Flush((peer,))]
    assert not peer.initialized


def test_a_malformed_version_is_invalid_params_and_the_connection_stays() -> None:
    h = Harness()
    peer = h.peer()
    error = initialize(h, peer, ["0.7"])["error"]
    assert error == {
        "code": -32602,
        "message": "Invalid params: protocolVersions: malformed protocol version '0.7': "
        "expected MAJOR.MINOR.PATCH",
    }
    assert h.closed == []
    assert initialize(h, peer, ["0.7.0"])["result"]["protocolVersion"] == "0.7.0"


def test_initialize_twice_is_refused_and_keeps_the_first_line() -> None:
    h = Harness()
    peer = h.connect(version="0.9.0")
    error = initialize(h, peer, ["1.0.0"], client_id="other")["error"]
    assert error == {"code": -32600, "message": "Invalid request: initialize was already called"}
    assert (peer.client_id, peer.wire.line) == ("c1", "0.9")
    error = h.error(
        peer, "reconnect", {"clientId": "c1", "lastSeenServerSeq": 0, "subscriptions": []}
    )
    assert error == {"code": -32600, "message": "Invalid request: reconnect replaces initialize"}


def test_initial_subscriptions_get_snapshots_of_the_channels_that_exist() -> None:
    h = Harness()
    peer = h.peer()
    result = h.result(
        peer,
        "initialize",
        {
            "protocolVersions": ["1.0.0"],
            "clientId": "c1",
            "initialSubscriptions": [ROOT, "ahp-chat:/does-not-exist"],
        },
    )
    [snapshot] = result["snapshots"]
    assert snapshot["resource"] == ROOT
    assert snapshot["fromSeq"] == result["serverSeq"]
    assert [a["provider"] for a in snapshot["state"]["agents"]] == ["fake"]
    assert peer.subscriptions == {ROOT}


def test_reconnect_replays_exactly_what_the_client_missed_in_its_line() -> None:
    h = Harness()
    writer = h.connect("writer")
    chat = h.create_session(writer)
    h.subscribe(writer, chat)
    gone = h.connect("b", "0.9.0", subscriptions=[chat])
    last_seen = h.store.server_seq
    h.feed(PeerGone(gone))
    h.dispatch(writer, chat, draft("m0"), 1)
    h.dispatch(writer, chat, {"type": "chat/isReadChanged", "isRead": True}, 2)  # 1.0-only
    h.dispatch(writer, chat, draft("m1"), 3)
    sent = h.envelopes(writer, chat)
    assert [e["action"]["type"] for e in sent] == [
        "chat/draftChanged",
        "chat/isReadChanged",
        "chat/draftChanged",
    ]

    back = h.peer()
    result = h.result(
        back,
        "reconnect",
        {"clientId": "b", "lastSeenServerSeq": last_seen, "subscriptions": [chat, "ahp-chat:/x"]},
    )
    # The line b negotiated before (0.9) is the one it is served in: no chat/isReadChanged.
    assert back.wire.line == "0.9"
    assert result == {"type": "replay", "actions": [sent[0], sent[2]], "missing": ["ahp-chat:/x"]}
    assert back.subscriptions == {chat}
    h.dispatch(writer, chat, draft("live"), 4)
    assert [a["draft"]["text"] for a in h.actions(back, chat)] == ["live"]


def test_reconnect_gets_snapshots_when_the_log_no_longer_reaches_back() -> None:
    h = Harness(store=Store(log_limit=3))
    writer = h.connect("writer")
    chat = h.create_session(writer)
    last_seen = h.store.server_seq
    for i in range(4):
        h.dispatch(writer, chat, draft(f"m{i}"), i + 1)
    back = h.peer()
    result = h.result(
        back,
        "reconnect",
        {"clientId": "new", "lastSeenServerSeq": last_seen, "subscriptions": [chat, "ahp-chat:/x"]},
    )
    assert result["type"] == "snapshot"
    [snapshot] = result["snapshots"]
    assert (snapshot["resource"], snapshot["fromSeq"]) == (chat, h.store.server_seq)
    assert snapshot["state"]["draft"]["text"] == "m3"
    assert back.subscriptions == {chat}


def test_reconnect_from_a_seq_this_host_never_issued_gets_snapshots() -> None:
    h = Harness()
    back = h.peer()
    params = {
        "clientId": "c",
        "lastSeenServerSeq": h.store.server_seq + 10,
        "subscriptions": [ROOT],
    }
    result = h.result(back, "reconnect", params)
    assert result["type"] == "snapshot"
    assert [s["resource"] for s in result["snapshots"]] == [ROOT]


def test_reconnect_without_a_channel_is_read_as_the_root() -> None:
    """VS Code 1.131 reconnects without `channel`."""
    h = Harness()
    back = h.peer()
    params = {"clientId": "c", "lastSeenServerSeq": h.store.server_seq, "subscriptions": []}
    h.send(back, "reconnect", params, id=1)
    [frame] = h.frames(back)
    assert frame["result"] == {"type": "replay", "actions": [], "missing": []}


def test_each_client_is_served_in_the_line_it_negotiated_and_a_stranger_in_0_7() -> None:
    h = Harness(config=config(durable=True))
    first = h.peer()
    initialize(h, first, ["0.9.1"], client_id="known")
    assert h.jobs == [Persist("remember_client", ("known", "0.9", NOW_MS))]
    params = {"lastSeenServerSeq": h.store.server_seq, "subscriptions": []}
    known, stranger = h.peer(), h.peer()
    h.result(known, "reconnect", {**params, "clientId": "known"})
    h.result(stranger, "reconnect", {**params, "clientId": "stranger"})
    assert (known.wire.line, known.protocol_version) == ("0.9", "0.9.0")
    assert (stranger.wire.line, stranger.protocol_version) == ("0.7", "0.7.0")


def test_a_client_that_leaves_gets_its_grace_timer_once_its_last_socket_is_gone() -> None:
    h = Harness()
    one, two = h.connect("c"), h.connect("c")
    assert h.feed(PeerGone(one)) == []  # c is still connected on the other socket
    assert h.feed(PeerGone(two)) == [SetTimer(("active-client", "c"), 30.0)]
    assert h.feed(PeerGone(two)) == []  # told twice: nothing more
    never = h.peer()
    assert h.feed(PeerGone(never)) == []  # never initialized: no client to wait for


def test_the_subscription_limit_refuses_one_more_channel_but_not_the_same_again() -> None:
    h = Harness(config=config(max_subscriptions=2))
    peer = h.connect()
    chat = h.create_session(peer)
    h.subscribe(peer, ROOT)
    h.subscribe(peer, "ahp-session:/s1")
    assert h.error(peer, "subscribe", {"channel": chat}) == {
        "code": -32602,
        "message": "Invalid params: channel: subscription limit 2 reached",
    }
    assert h.subscribe(peer, ROOT)["resource"] == ROOT
    assert peer.subscriptions == {ROOT, "ahp-session:/s1"}
    h.send(peer, "unsubscribe", {"channel": ROOT}, notify=True)
    assert h.subscribe(peer, chat)["resource"] == chat


@pytest.mark.parametrize(
    ("channel", "answer"),
    [
        ("ahp-session:/nope", {"code": -32001, "message": "No such session: ahp-session:/nope"}),
        ("vscode:/nope", {"code": -32001, "message": "No such session: vscode:/nope"}),
        ("ahp-chat:/nope", {"code": -32008, "message": "No such channel: ahp-chat:/nope"}),
        (
            "not a uri",
            {"code": -32602, "message": "Invalid params: channel: not a URI: 'not a uri'"},
        ),
    ],
)
def test_subscribing_to_a_channel_that_does_not_exist_says_which_kind_is_missing(
    channel: str, answer: dict[str, Any]
) -> None:
    h = Harness()
    peer = h.connect()
    assert h.error(peer, "subscribe", {"channel": channel}) == answer


def test_an_unsubscribed_peer_hears_no_more_of_the_channel() -> None:
    h = Harness()
    peer = h.connect()
    chat = h.create_session(peer)
    h.subscribe(peer, chat)
    assert h.send(peer, "unsubscribe", {"channel": chat}, notify=True) == []
    h.dispatch(peer, chat, draft("x"))
    assert h.frames(peer) == []
    assert h.engine.fanout.subscribers(chat) == ()


def test_a_persist_on_remember_is_only_for_a_durable_host() -> None:
    h = Harness()
    h.connect("c")
    assert not any(isinstance(e, Run) for e in h.effects)


def test_a_handshake_over_the_subscription_limit_is_refused_and_changes_nothing() -> None:
    """Refused before the peer is initialized: it subscribed to nothing and may try again."""
    h = Harness(config=config(max_subscriptions=1))
    h.create_session(h.connect("maker"))
    channels = [ROOT, "ahp-session:/s1"]
    peer = h.peer()
    params = {"protocolVersions": ["1.0.0"], "clientId": "x", "initialSubscriptions": channels}
    error = h.error(peer, "initialize", params)
    assert (peer.initialized, peer.subscriptions) == (False, set())
    assert error == {
        "code": -32602,
        "message": "Invalid params: initialSubscriptions: subscription limit 1 reached",
    }
    assert peer not in h.engine.peers
    again = h.result(peer, "initialize", {**params, "initialSubscriptions": [ROOT]})
    assert [s["resource"] for s in again["snapshots"]] == [ROOT]

    back = h.peer()
    missed: dict[str, Any] = {"clientId": "y", "lastSeenServerSeq": 0, "subscriptions": channels}
    error = h.error(back, "reconnect", missed)
    assert (back.initialized, back.subscriptions) == (False, set())
    assert error["message"] == "Invalid params: subscriptions: subscription limit 1 reached"
    h.result(back, "reconnect", {**missed, "subscriptions": [ROOT]})
    assert back.subscriptions == {ROOT}
