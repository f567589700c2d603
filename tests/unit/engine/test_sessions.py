"""Sessions: createSession's checks and its reservation while the shell records it, dispose,
the session list's pages, and the news of each session in every line's shape."""

from __future__ import annotations

from typing import Any

import pytest

from ahp_bridge.engine.effects import Run
from ahp_bridge.engine.inputs import PeerGone
from ahp_bridge.engine.jobs import CloseConversation, OpenConversation
from ahp_bridge.engine.providers import GITHUB_RESOURCE
from ahp_bridge.protocol.errors import RpcError
from ahp_bridge.state.limits import Limits
from tests.support.engine import NOW_ISO, ROOT, Harness, config, fake_provider

S1, S2, S3 = "ahp-session:/s1", "ahp-session:/s2", "ahp-session:/s3"


def create(h: Harness, peer: Any, uri: str, **params: Any) -> dict[str, Any]:
    return h.request(peer, "createSession", {"channel": uri, "provider": "fake", **params})


@pytest.mark.parametrize(
    ("uri", "why"),
    [
        ("not a uri", "no spaces"),
        ("no-scheme", "absolute URI"),
        ("ahp-chat:/c1", "host's own channels"),
        (f"{S1}/annotations", "cannot end with /annotations"),
        ("x:/" + "a" * 3000, "1 to 2048 characters"),
    ],
)
def test_a_session_uri_that_cannot_name_a_session_is_invalid_params(uri: str, why: str) -> None:
    h = Harness()
    peer = h.connect()
    error = create(h, peer, uri)["error"]
    assert error["code"] == -32602
    assert error["message"].startswith("Invalid params: channel: ")
    assert why in error["message"]


def test_create_session_refuses_what_it_cannot_make() -> None:
    h = Harness()
    peer = h.connect()
    h.create_session(peer, S1)
    assert create(h, peer, S1)["error"] == {
        "code": -32003,
        "message": f"Session already exists: {S1}",
    }
    assert create(h, peer, S2, provider="nope")["error"] == {
        "code": -32002,
        "message": "Provider not found: 'nope' (served: fake)",
    }
    assert create(h, peer, S2, provider="fak")["error"] == {
        "code": -32002,
        "message": "Provider not found: 'fak'; did you mean 'fake'? (served: fake)",
    }
    assert create(h, peer, S2, fork={"session": S1, "turnId": "t"})["error"] == {
        "code": -32602,
        "message": "Invalid params: fork: forking is not supported",
    }
    someone_else = {"clientId": "x", "tools": []}
    assert create(h, peer, S2, activeClient=someone_else)["error"] == {
        "code": -32602,
        "message": "Invalid params: activeClient.clientId: must be this connection's clientId",
    }
    assert create(h, peer, S2, config={"ahpBridge.importConversation": ""})["error"] == {
        "code": -32602,
        "message": "Invalid params: config.ahpBridge.importConversation: expected a "
        "conversation id",
    }
    assert not h.store.has(S2) and h.engine.sessions.creating == {}


def test_a_provider_that_needs_a_sign_in_refuses_with_auth_required() -> None:
    provider = fake_provider()
    provider.signed_out = "not signed in"
    h = Harness(providers=[provider])
    error = create(h, h.connect(), S1)["error"]
    assert error["code"] == -32007
    assert error["message"] == "Authentication required for Fake: not signed in"
    assert [r["resource"] for r in error["data"]["resources"]] == [GITHUB_RESOURCE]


def test_a_creation_being_recorded_holds_its_uri_and_counts_against_max_sessions() -> None:
    h = Harness(config=config(limits=Limits(max_sessions=1)), defer_creations=True)
    a, b = h.connect("a"), h.connect("b")
    h.send(a, "createSession", {"channel": S1, "provider": "fake"}, id="first")
    [pending] = h.served
    assert h.frames(a) == []  # not answered until the shell has recorded it
    assert create(h, b, S1)["error"] == {"code": -32003, "message": f"Session already exists: {S1}"}
    assert create(h, b, S2)["error"] == {
        "code": -32009,
        "message": "Permission denied: this host already keeps 1 sessions, its limit "
        "(limits.max_sessions): dispose of sessions you no longer need",
    }
    # The shell refuses the first: its reservation goes, and another may take the place.
    h.prepare(pending, RpcError(-32602, "Invalid params: workingDirectories: outside"))
    assert h.frames(a) == [
        {
            "jsonrpc": "2.0",
            "id": "first",
            "error": {"code": -32602, "message": "Invalid params: workingDirectories: outside"},
        }
    ]
    assert not h.store.has(S1)
    h.send(b, "createSession", {"channel": S2, "provider": "fake"}, id="second")
    h.prepare(h.served[0])
    assert h.frames(b) == [{"jsonrpc": "2.0", "id": "second", "result": None}]
    assert h.store.state(S2)["lifecycle"] == "ready"


def test_sessions_being_recorded_count_against_the_clients_own_limit() -> None:
    h = Harness(config=config(limits=Limits(max_sessions_per_client=1)), defer_creations=True)
    a = h.connect("a")
    h.send(a, "createSession", {"channel": S1, "provider": "fake"})
    error = create(h, a, S2)["error"]
    assert error["code"] == -32009
    assert error["message"].startswith("Permission denied: client 'a' already created 1 sessions")
    h.send(h.connect("b"), "createSession", {"channel": S2, "provider": "fake"})
    assert [r.params["channel"] for r in h.served] == [S1, S2]  # another client may


def test_a_new_session_is_announced_opens_its_default_chat_and_becomes_ready() -> None:
    h = Harness(defer_creations=True)
    watcher = h.connect("w", subscriptions=[ROOT])
    peer = h.connect()
    h.send(peer, "createSession", {"channel": S1, "provider": "fake"}, id=1)
    h.hold(OpenConversation)
    h.prepare(h.served[0])
    assert h.frames(peer) == [{"jsonrpc": "2.0", "id": 1, "result": None}]
    assert h.store.state(S1)["lifecycle"] == "creating"
    [opening] = h.held
    assert isinstance(opening.job, OpenConversation) and opening.job.default
    assert opening.job.request.model == "m1"  # the settings the shell resolved
    h.finish(opening)
    state = h.store.state(S1)
    assert (state["lifecycle"], state["defaultChat"]) == ("ready", "ahp-chat:/id-1")
    assert [c["resource"] for c in state["chats"]] == ["ahp-chat:/id-1"]
    [added, active, *_] = h.frames(watcher)
    assert added["method"] == "root/sessionAdded"
    assert added["params"]["summary"] == {
        "resource": S1,
        "provider": "fake",
        "title": "",
        "status": 1,
        "createdAt": NOW_ISO,
        "modifiedAt": NOW_ISO,
        "chats": [],
    }
    assert active["params"]["action"] == {"type": "root/activeSessionsChanged", "activeSessions": 1}


def test_a_default_chat_that_cannot_open_fails_the_creation() -> None:
    h = Harness()
    peer = h.connect()
    h.fail(OpenConversation, RuntimeError("the agent would not start"))
    h.subscribe(peer, ROOT)
    h.result(peer, "createSession", {"channel": S1, "provider": "fake"})
    state = h.store.state(S1)
    assert state["lifecycle"] == "failed"
    assert state["creationError"] == {
        "errorType": "RuntimeError",
        "message": "the agent would not start",
    }
    assert h.jobs[-1] == CloseConversation("ahp-chat:/id-1", "close", stop=True)


def test_dispose_removes_the_session_and_lets_its_conversation_go() -> None:
    h = Harness()
    watcher = h.connect("w", subscriptions=[ROOT])
    peer = h.connect()
    chat = h.create_session(peer, S1)
    h.frames(watcher)
    effects = h.send(peer, "disposeSession", {"channel": S1}, id="d")
    assert Run(CloseConversation(chat, "close", stop=True)) in effects
    assert h.frames(peer) == [{"jsonrpc": "2.0", "id": "d", "result": None}]
    assert h.frames(watcher) == [
        {
            "jsonrpc": "2.0",
            "method": "root/sessionRemoved",
            "params": {"channel": ROOT, "session": S1},
        },
        {
            "jsonrpc": "2.0",
            "method": "action",
            "params": {
                "channel": ROOT,
                "action": {"type": "root/activeSessionsChanged", "activeSessions": 0},
                "serverSeq": h.store.server_seq,
            },
        },
    ]
    assert not h.store.has(S1) and not h.store.has(chat) and not h.store.has(f"{S1}/annotations")
    assert h.error(peer, "subscribe", {"channel": chat})["code"] == -32008
    assert h.error(peer, "disposeSession", {"channel": S1}) == {
        "code": -32001,
        "message": f"Session not found: {S1}",
    }
    assert h.result(peer, "listSessions")["items"] == []


def test_a_session_disposed_while_its_default_chat_opens_lets_the_conversation_go() -> None:
    h = Harness()
    peer = h.connect()
    h.hold(OpenConversation)
    h.result(peer, "createSession", {"channel": S1, "provider": "fake"})
    [opening] = h.held
    h.result(peer, "disposeSession", {"channel": S1})
    before = len(h.jobs)
    h.finish(opening)  # the provider opened it meanwhile
    assert h.jobs[before:] == [CloseConversation("ahp-chat:/id-1", "close", stop=True)]
    assert not h.store.has("ahp-chat:/id-1")
    assert h.engine.sessions.chats == {} and h.engine.sessions.opening == {}


def test_a_session_disposed_while_another_chat_opens_lets_that_conversation_go() -> None:
    h = Harness()
    peer = h.connect()
    h.create_session(peer, S1)
    h.hold(OpenConversation)
    assert h.result(peer, "createChat", {"channel": S1, "chat": "ahp-chat:/extra"}) is None
    [opening] = h.held
    h.result(peer, "disposeSession", {"channel": S1})
    before = len(h.jobs)
    h.finish(opening)
    assert h.jobs[before:] == [CloseConversation("ahp-chat:/extra", "close", stop=True)]
    assert not h.store.has("ahp-chat:/extra")
    assert h.engine.sessions.opening == {}


def test_list_sessions_pages_newest_first_and_a_fractional_limit_still_progresses() -> None:
    h = Harness()
    peer = h.connect()
    for uri in (S1, S2, S3):
        h.create_session(peer, uri)
    first = h.result(peer, "listSessions", {"limit": 0.5})
    assert [s["resource"] for s in first["items"]] == [S3]  # same time: by URI, newest first
    rest = h.result(peer, "listSessions", {"limit": 2.7, "cursor": first["nextCursor"]})
    assert [s["resource"] for s in rest["items"]] == [S2, S1]
    assert "nextCursor" not in rest
    tiny = h.result(peer, "listSessions", {"limit": 1e-9})
    assert len(tiny["items"]) == 1 and "nextCursor" in tiny
    assert len(h.result(peer, "listSessions")["items"]) == 3
    assert h.error(peer, "listSessions", {"cursor": "garbage!"}) == {
        "code": -32602,
        "message": "Invalid params: cursor: not a cursor this host issued",
    }


def test_list_sessions_shows_each_line_its_summary() -> None:
    h = Harness()
    new, old = h.connect("new"), h.connect("old", "0.7.0")
    chat = h.create_session(new, S1)
    summary = {
        "resource": S1,
        "provider": "fake",
        "title": "",
        "status": 1,
        "createdAt": NOW_ISO,
        "modifiedAt": NOW_ISO,
    }
    assert h.result(new, "listSessions")["items"] == [
        {**summary, "chats": [{"resource": chat, "title": "", "status": 1}], "defaultChat": chat}
    ]
    assert h.result(old, "listSessions")["items"] == [summary]


def test_summary_changes_are_announced_in_each_lines_shape() -> None:
    h = Harness()
    maker = h.connect("maker")
    chat = h.create_session(maker, S1)
    new, old = (
        h.connect("new", subscriptions=[ROOT]),
        h.connect("old", "0.7.0", subscriptions=[ROOT]),
    )
    h.start_turn(maker, chat)
    entry = {"resource": chat, "title": "", "status": 8}
    assert h.frames(new) == [
        {
            "jsonrpc": "2.0",
            "method": "root/sessionSummaryChanged",
            "params": {
                "channel": ROOT,
                "session": S1,
                "changes": {"status": 8, "chats": [entry]},
            },
        }
    ]
    assert h.frames(old) == [
        {
            "jsonrpc": "2.0",
            "method": "root/sessionSummaryChanged",
            "params": {"channel": ROOT, "session": S1, "changes": {"status": 8}},
        }
    ]
    # A change 0.7's summary has no field for is not sent to it at all.
    h.dispatch(maker, chat, {"type": "chat/isReadChanged", "isRead": True}, 2)
    assert [f["params"]["changes"] for f in h.frames(new)] == [
        {"chats": [{**entry, "status": 8 | 32}]}
    ]
    assert h.frames(old) == []


def test_create_session_reports_its_progress_to_the_creator_when_asked() -> None:
    h = Harness()
    peer = h.connect()
    h.send(peer, "createSession", {"channel": S1, "provider": "fake", "progressToken": "tok"})
    progress = [f["params"] for f in h.frames(peer) if f.get("method") == "root/progress"]
    assert progress == [
        {
            "channel": ROOT,
            "progressToken": "tok",
            "progress": step,
            "total": 2,
            "message": message,
        }
        for step, message in ((0, "opening the provider conversation"), (2, "ready"))
    ]
    h.send(peer, "createSession", {"channel": S2, "provider": "fake"})
    assert not any(f.get("method") == "root/progress" for f in h.frames(peer))


def test_create_and_dispose_chat_refuse_what_they_cannot_do() -> None:
    h = Harness()
    peer = h.connect()
    default = h.create_session(peer, S1)
    extra = "ahp-chat:/extra"
    assert h.result(peer, "createChat", {"channel": S1, "chat": extra}) is None
    assert [c["resource"] for c in h.store.state(S1)["chats"]] == [default, extra]
    assert h.error(peer, "createChat", {"channel": S1, "chat": extra}) == {
        "code": -32010,
        "message": f"Chat already exists: {extra}",
    }
    assert h.error(peer, "createChat", {"channel": S1, "chat": "x:/y"}) == {
        "code": -32602,
        "message": "Invalid params: chat: expected ahp-chat:/<id>, got 'x:/y'",
    }
    assert h.error(peer, "disposeChat", {"channel": default}) == {
        "code": -32602,
        "message": "Invalid params: channel: the default chat cannot be disposed",
    }
    effects = h.send(peer, "disposeChat", {"channel": extra})
    assert Run(CloseConversation(extra, "close", stop=True)) in effects
    assert [c["resource"] for c in h.store.state(S1)["chats"]] == [default]
    assert h.error(peer, "disposeChat", {"channel": extra})["code"] == -32008


def test_a_client_that_does_not_come_back_in_time_stops_being_active() -> None:
    h = Harness()
    leaver = h.connect("leaver")
    h.create_session(leaver, S1, activeClient={"clientId": "leaver", "tools": []})
    watcher = h.connect("watcher", subscriptions=[S1])
    h.feed(PeerGone(leaver))
    assert h.timers == {("active-client", "leaver"): 30.0}
    h.fire(("active-client", "leaver"))
    assert h.actions(watcher, S1) == [{"type": "session/activeClientRemoved", "clientId": "leaver"}]
    assert h.store.state(S1)["activeClients"] == []


def test_a_client_back_within_its_grace_stays_active() -> None:
    h = Harness()
    leaver = h.connect("leaver")
    h.create_session(leaver, S1, activeClient={"clientId": "leaver", "tools": []})
    h.feed(PeerGone(leaver))
    h.connect("leaver")  # back on a new socket
    h.fire(("active-client", "leaver"))
    assert [c["clientId"] for c in h.store.state(S1)["activeClients"]] == ["leaver"]
