"""The AHP host core over real WebSockets on 127.0.0.1: handshake, errors, limits, sync, replay."""

from __future__ import annotations

import uuid
from typing import Any

import orjson
import pytest
import structlog
import structlog.testing
import trio
from trio_websocket import ConnectionClosed, WebSocketConnection

from tests.e2e.conftest import Bridge, StartBridge
from tests.support.ahp_client import AhpClient, RpcFailure, connect, open_client, strip_none

ROOT = "ahp-root://"


def new_session_uri() -> str:
    return f"ahp-session:/{uuid.uuid4()}"


async def ready_session(client: AhpClient, provider: str = "fake") -> tuple[str, str]:
    """Create a session, wait until it is ready, subscribe to its default chat."""
    uri = new_session_uri()
    await client.request("createSession", {"channel": uri, "provider": provider})
    await client.subscribe(uri)
    await client.wait_for(lambda: client.states[uri].get("lifecycle") == "ready")
    chat = client.states[uri]["defaultChat"]
    await client.subscribe(chat)
    return uri, chat


def draft(text: str) -> dict[str, Any]:
    return {"type": "chat/draftChanged", "draft": {"text": text, "origin": {"kind": "user"}}}


def comparable(state: dict[str, Any]) -> Any:
    """States compare equal modulo `modifiedAt`, the only field a client cannot reproduce."""
    state = strip_none(state)
    state.pop("modifiedAt", None)
    return state


# -- handshake ---------------------------------------------------------------------------------


async def test_ping_is_answered_before_initialize(bridge: Bridge) -> None:
    client = await bridge.client(initialize=False)
    assert await client.request("ping", {"channel": ROOT}) is None


async def test_requests_before_initialize_are_refused(bridge: Bridge) -> None:
    client = await bridge.client(initialize=False)
    with pytest.raises(RpcFailure) as err:
        await client.request("listSessions", {"channel": ROOT})
    assert err.value.code == -32600
    assert "initialize" in str(err.value.message)


@pytest.mark.parametrize(
    ("offered", "chosen"),
    [
        (["0.7.3", "0.6.0"], "0.7.3"),
        (["0.7.3", "1.0.0", "0.6.0"], "1.0.0"),
        (["0.9.0", "1.1.0"], "1.1.0"),
        (["0.9.2", "0.7.0"], "0.9.2"),
    ],
)
async def test_initialize_negotiates_the_exact_offered_version(
    bridge: Bridge, offered: list[str], chosen: str
) -> None:
    client = await bridge.client(initialize=False)
    result = await client.request(
        "initialize", {"channel": ROOT, "protocolVersions": offered, "clientId": "c"}
    )
    assert result["protocolVersion"] == chosen
    assert result["serverInfo"]["name"] == "ahp-bridge"
    assert isinstance(result["serverSeq"], int)
    assert result["snapshots"] == []
    # 0.9 added InitializeResult._meta (extension capabilities); 0.7 has none.
    assert ("_meta" in result) is (not chosen.startswith("0.7"))


async def test_second_initialize_is_refused(bridge: Bridge) -> None:
    client = await bridge.client()
    with pytest.raises(RpcFailure) as err:
        await client.initialize()
    assert err.value.code == -32600


async def test_unsupported_version_gets_32005_and_the_connection_closes(bridge: Bridge) -> None:
    client = await bridge.client(initialize=False)
    with pytest.raises(RpcFailure) as err:
        await client.request(
            "initialize", {"channel": ROOT, "protocolVersions": ["0.5.2", "2.0.0"], "clientId": "c"}
        )
    assert err.value.code == -32005
    assert err.value.data == {
        "supportedVersions": [
            ">=1.0.0 <2.0.0",
            ">=0.10.0 <0.11.0",
            ">=0.9.0 <0.10.0",
            ">=0.8.0 <0.9.0",
            ">=0.7.0 <0.8.0",
            ">=0.6.0 <0.7.0",
        ]
    }
    await client.wait_for(lambda: client.closed is not None)


async def test_malformed_version_is_invalid_params(bridge: Bridge) -> None:
    client = await bridge.client(initialize=False)
    with pytest.raises(RpcFailure) as err:
        await client.request(
            "initialize", {"channel": ROOT, "protocolVersions": ["0.7"], "clientId": "c"}
        )
    assert err.value.code == -32602


async def test_initial_subscriptions_return_snapshots(bridge: Bridge) -> None:
    client = await bridge.client(initialize=False)
    result = await client.initialize([ROOT, "ahp-chat:/does-not-exist"])
    assert [s["resource"] for s in result["snapshots"]] == [ROOT]
    agents = result["snapshots"][0]["state"]["agents"]
    assert [a["provider"] for a in agents] == ["fake"]
    assert result["snapshots"][0]["fromSeq"] == result["serverSeq"]


# -- malformed input ---------------------------------------------------------------------------


async def _raw_error(client: AhpClient, payload: str | bytes) -> dict[str, Any]:
    before = len(client.errors)
    await client.send_raw(payload)
    await client.wait_for(lambda: len(client.errors) > before)
    return client.errors[-1]


@pytest.mark.parametrize(
    ("payload", "code"),
    [
        ("{not json", -32700),
        ('[{"jsonrpc":"2.0","id":1,"method":"ping"}]', -32600),
        ('"just a string"', -32600),
        ('{"jsonrpc":"1.0","id":1,"method":"ping"}', -32600),
        ('{"jsonrpc":"2.0","id":1}', -32600),
        ('{"jsonrpc":"2.0","id":{"x":1},"method":"ping"}', -32600),
        ('{"jsonrpc":"2.0","id":1,"method":"ping","params":7}', -32600),
        ("[" * 200 + "]" * 200, -32600),
    ],
    ids=[
        "not-json",
        "batch",
        "scalar",
        "wrong-version",
        "no-method",
        "object-id",
        "scalar-params",
        "deep",
    ],
)
async def test_malformed_frames_get_the_right_error_and_the_host_keeps_serving(
    bridge: Bridge, payload: str, code: int
) -> None:
    client = await bridge.client()
    error = await _raw_error(client, payload)
    assert error["code"] == code
    assert await client.request("ping", {"channel": ROOT}) is None


async def test_deeply_nested_params_are_refused(bridge: Bridge) -> None:
    client = await bridge.client()
    nested: Any = 1
    for _ in range(100):
        nested = {"a": nested}
    frame = orjson.dumps(
        {"jsonrpc": "2.0", "id": 99, "method": "ping", "params": {"channel": ROOT, "x": nested}}
    ).decode()
    await client.send_raw(frame)
    await client.wait_for(lambda: any(f.get("id") == 99 for f in client.frames))
    answer = next(f for f in client.frames if f.get("id") == 99)
    assert answer["error"]["code"] == -32600


async def test_binary_frames_are_refused(bridge: Bridge) -> None:
    client = await bridge.client()
    error = await _raw_error(client, b'{"jsonrpc":"2.0","id":5,"method":"ping"}')
    assert error["code"] == -32600
    assert "binary" in error["message"]
    assert await client.request("ping", {"channel": ROOT}) is None


async def test_unknown_method(bridge: Bridge) -> None:
    client = await bridge.client()
    with pytest.raises(RpcFailure) as err:
        await client.request("session/teleport", {"channel": ROOT})
    assert err.value.code == -32601


async def test_wrong_params_name_the_offending_field(bridge: Bridge) -> None:
    client = await bridge.client()
    with pytest.raises(RpcFailure) as err:
        await client.request("listSessions", {"channel": ROOT, "limit": "ten"})
    assert err.value.code == -32602
    assert "limit" in str(err.value.message)
    with pytest.raises(RpcFailure) as err:
        await client.request("subscribe", {})
    assert err.value.code == -32602
    assert "channel" in str(err.value.message)


async def test_unknown_fields_in_params_are_tolerated(bridge: Bridge) -> None:
    client = await bridge.client()
    assert await client.request("ping", {"channel": ROOT, "futureField": {"x": 1}}) is None


async def test_duplicate_request_ids_are_refused(bridge: Bridge) -> None:
    client = await bridge.client()
    frame = orjson.dumps(
        {"jsonrpc": "2.0", "id": "dup", "method": "ping", "params": {"channel": ROOT}}
    )
    await client.send_raw(frame.decode())
    await client.send_raw(frame.decode())
    await client.wait_for(lambda: sum(1 for f in client.frames if f.get("id") == "dup") == 2)
    answers = [f for f in client.frames if f.get("id") == "dup"]
    assert answers[0]["result"] is None
    assert answers[1]["error"]["code"] == -32600


async def test_json_nested_past_the_limit_is_refused_naming_it_and_the_connection_goes_on(
    start_bridge: StartBridge,
) -> None:
    bridge = await start_bridge(max_json_depth=8)
    client = await bridge.client()

    def ping(request_id: str, levels: int) -> str:
        """A ping whose whole frame nests `levels` deep (frame and params are two of them)."""
        value: Any = {}
        for _ in range(levels - 3):
            value = {"x": value}
        params = {"channel": ROOT, "futureField": value}
        return orjson.dumps(
            {"jsonrpc": "2.0", "id": request_id, "method": "ping", "params": params}
        ).decode()

    await client.send_raw(ping("at", 8))
    await client.send_raw(ping("over", 9))
    await client.wait_for(lambda: {f.get("id") for f in client.frames} >= {"at", "over"})
    answers = {f["id"]: f for f in client.frames if f.get("id") in ("at", "over")}
    assert answers["at"]["result"] is None
    assert answers["over"]["error"] == {
        "code": -32600,
        "message": "Invalid request: JSON nested deeper than 8 levels (server.max_json_depth)",
    }
    assert await client.request("ping", {"channel": ROOT}) is None


async def test_oversized_frames_close_with_1009_and_others_keep_going(
    start_bridge: StartBridge,
) -> None:
    bridge = await start_bridge(max_frame_bytes=64 * 1024)
    victim = await bridge.client("victim")
    other = await bridge.client("other")
    with structlog.testing.capture_logs() as logged:
        await victim.send_raw("x" * (128 * 1024))
        await victim.wait_for(lambda: victim.closed is not None)
        assert victim.closed is not None and victim.closed.reason.code == 1009
        # the client is told which key bounds it, and what to do
        assert victim.closed.reason.reason == (
            "a message over server.max_frame_bytes (65,536 bytes): send less in one message"
        )
        assert await other.request("ping", {"channel": ROOT}) is None
    # the operator's log names the key to raise
    assert [e["client"] for e in logged if "server.max_frame_bytes" in e["event"]] == ["victim"]


# -- transport security ------------------------------------------------------------------------


async def upgrade_status(port: int, path: str, headers: dict[str, str] | None = None) -> int:
    """Send a raw WebSocket upgrade and return the HTTP status the host answers with."""
    lines = [
        f"GET {path} HTTP/1.1",
        f"Host: 127.0.0.1:{port}",
        "Upgrade: websocket",
        "Connection: Upgrade",
        "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==",
        "Sec-WebSocket-Version: 13",
        *(f"{k}: {v}" for k, v in (headers or {}).items()),
        "",
        "",
    ]
    async with await trio.open_tcp_stream("127.0.0.1", port) as stream:
        await stream.send_all("\r\n".join(lines).encode())
        data = b""
        with trio.fail_after(10):
            while b"\r\n" not in data:
                chunk = await stream.receive_some(4096)
                if not chunk:
                    break
                data += chunk
    return int(data.split(b" ", 2)[1])


async def test_token_is_required_when_configured(start_bridge: StartBridge) -> None:
    bridge = await start_bridge(token="s3cret-token")
    assert await upgrade_status(bridge.port, "/") == 403
    assert await upgrade_status(bridge.port, "/?tkn=wrong") == 403
    assert await upgrade_status(bridge.port, "/?tkn=s3cret-token") == 101
    assert bridge.url.endswith("/?tkn=s3cret-token")
    client = await open_client(bridge.nursery, bridge.url, "ok")
    await client.initialize()
    await client.close()


async def test_browser_origins_must_be_allowed(start_bridge: StartBridge) -> None:
    bridge = await start_bridge(allowed_origins=["http://localhost:*"])
    path = f"/?tkn={bridge.settings.server.token}"
    assert await upgrade_status(bridge.port, path, {"Origin": "https://evil.example"}) == 403
    assert await upgrade_status(bridge.port, path, {"Origin": "http://localhost:3000"}) == 101
    assert await upgrade_status(bridge.port, path) == 101  # not a browser


def test_the_server_refuses_a_non_loopback_bind_without_a_token(make_settings: Any) -> None:
    """The last line of defence under `run_bridge` (which always gets a token first)."""
    from ahp_bridge.host.app import server_options
    from ahp_bridge.host.transport.server import check_bind

    settings = make_settings(token=" ")
    settings.server.host = "0.0.0.0"
    with pytest.raises(ValueError, match="token"):
        check_bind(server_options(settings))
    settings.server.host = "127.0.0.1"
    check_bind(server_options(settings))  # loopback may go without (require_token = false)


# -- sessions as resources ---------------------------------------------------------------------


async def test_create_session_announces_and_becomes_ready(bridge: Bridge) -> None:
    watcher = await bridge.client("watcher")
    client = await bridge.client()
    uri, chat = await ready_session(client)
    added = await watcher.wait_for(
        lambda: [n for n in watcher.notifications if n["method"] == "root/sessionAdded"]
    )
    assert added[0]["params"]["summary"]["resource"] == uri
    assert added[0]["params"]["summary"]["provider"] == "fake"
    session = client.states[uri]
    assert session["lifecycle"] == "ready"
    assert [c["resource"] for c in session["chats"]] == [chat]
    assert session["defaultChat"] == chat
    assert client.states[ROOT]["activeSessions"] == 1


async def test_create_session_errors(bridge: Bridge) -> None:
    client = await bridge.client()
    uri, _ = await ready_session(client)
    with pytest.raises(RpcFailure) as err:
        await client.request("createSession", {"channel": uri, "provider": "fake"})
    assert err.value.code == -32003
    with pytest.raises(RpcFailure) as err:
        await client.request("createSession", {"channel": new_session_uri(), "provider": "nope"})
    assert err.value.code == -32002
    # Any absolute URI the client chooses names a session (VS Code mints <provider>:/<uuid>),
    # but not junk, the host's own channel schemes, or an annotations channel's URI.
    for bad, why in [
        ("not a uri", "no spaces"),
        ("no-scheme", "absolute URI"),
        ("ahp-chat:/c1", "host's own channels"),
        (f"{new_session_uri()}/annotations", "cannot end with /annotations"),
        ("x:/" + "a" * 3000, "1 to 2048 characters"),
    ]:
        with pytest.raises(RpcFailure) as err:
            await client.request("createSession", {"channel": bad, "provider": "fake"})
        assert err.value.code == -32602
        assert why in str(err.value.message)


async def test_list_sessions_pages_newest_first(bridge: Bridge) -> None:
    client = await bridge.client()
    created = [(await ready_session(client))[0] for _ in range(5)]
    seen: list[str] = []
    cursor = None
    while True:
        params: dict[str, Any] = {"channel": ROOT, "limit": 2}
        if cursor:
            params["cursor"] = cursor
        page = await client.request("listSessions", params)
        assert len(page["items"]) <= 2
        seen += [s["resource"] for s in page["items"]]
        cursor = page.get("nextCursor")
        if not cursor:
            break
    assert sorted(seen) == sorted(created)
    assert len(seen) == len(set(seen))
    with pytest.raises(RpcFailure) as err:
        await client.request("listSessions", {"channel": ROOT, "cursor": "garbage!"})
    assert err.value.code == -32602


async def test_list_sessions_with_a_limit_below_one_pages_one_at_a_time(bridge: Bridge) -> None:
    """`limit` is a JSON number (PaginatedParams): a fraction is valid, and the page is the
    largest whole number of items within it, but never empty, so paging always progresses
    (a page of none could carry no cursor to go on from)."""
    client = await bridge.client()
    created = [(await ready_session(client))[0] for _ in range(3)]
    with structlog.testing.capture_logs() as logged:
        first = await client.request("listSessions", {"channel": ROOT, "limit": 0.5})
        rest = await client.request(
            "listSessions", {"channel": ROOT, "limit": 2.7, "cursor": first["nextCursor"]}
        )
        tiny = await client.request("listSessions", {"channel": ROOT, "limit": 1e-9})
    assert (len(first["items"]), len(rest["items"])) == (1, 2)
    assert sorted(s["resource"] for s in first["items"] + rest["items"]) == sorted(created)
    assert "nextCursor" not in rest
    assert len(tiny["items"]) == 1 and "nextCursor" in tiny
    assert [e for e in logged if e["event"] == "request failed"] == []


async def test_dispose_session_removes_it_everywhere(bridge: Bridge) -> None:
    watcher = await bridge.client("watcher")
    client = await bridge.client()
    uri, chat = await ready_session(client)
    assert await client.request("disposeSession", {"channel": uri}) is None
    await watcher.wait_for(
        lambda: any(n["method"] == "root/sessionRemoved" for n in watcher.notifications)
    )
    listed = await client.request("listSessions", {"channel": ROOT})
    assert uri not in [s["resource"] for s in listed["items"]]
    with pytest.raises(RpcFailure) as err:
        await client.request("subscribe", {"channel": chat})
    assert err.value.code == -32008
    with pytest.raises(RpcFailure) as err:
        await client.request("disposeSession", {"channel": uri})
    assert err.value.code == -32001


async def test_create_and_dispose_chat(bridge: Bridge) -> None:
    client = await bridge.client()
    uri, default_chat = await ready_session(client)
    extra = f"ahp-chat:/{uuid.uuid4()}"
    assert await client.request("createChat", {"channel": uri, "chat": extra}) is None
    await client.wait_for(lambda: any(c["resource"] == extra for c in client.states[uri]["chats"]))
    snap = await client.subscribe(extra)
    assert snap["state"]["turns"] == []
    with pytest.raises(RpcFailure) as err:
        await client.request("createChat", {"channel": uri, "chat": extra})
    assert err.value.code == -32010
    with pytest.raises(RpcFailure) as err:
        await client.request("disposeChat", {"channel": default_chat})
    assert err.value.code == -32602
    assert await client.request("disposeChat", {"channel": extra}) is None
    await client.wait_for(lambda: all(c["resource"] != extra for c in client.states[uri]["chats"]))


# -- dispatch, echo, rejection -----------------------------------------------------------------


async def test_accepted_actions_are_echoed_to_every_subscriber_with_origin(bridge: Bridge) -> None:
    a = await bridge.client("a")
    _uri, chat = await ready_session(a)
    b = await bridge.client("b")
    await b.subscribe(chat)
    seq = await a.dispatch(chat, draft("hello"))
    echo = await a.echo_of(seq)
    assert echo["origin"] == {"clientId": "a", "clientSeq": seq}
    assert "rejectionReason" not in echo
    await b.wait_for(lambda: any(e.get("origin", {}).get("clientSeq") == seq for e in b.envelopes))
    snapshot = (await b.request("subscribe", {"channel": chat}))["snapshot"]
    assert snapshot["state"]["draft"]["text"] == "hello"


async def test_invalid_actions_are_rejected_to_the_sender_only(bridge: Bridge) -> None:
    a = await bridge.client("a")
    _uri, chat = await ready_session(a)
    b = await bridge.client("b")
    await b.subscribe(chat)
    before = (await a.request("subscribe", {"channel": chat}))["snapshot"]
    cases = [
        {"type": "chat/delta", "turnId": "t", "partId": "p", "content": "x"},  # host-only
        {"type": "chat/turnCancelled", "turnId": "nope", "duration": 1},  # no active turn
        {"type": "chat/draftChanged", "draft": {"text": "no origin"}},  # missing field
        {"type": "chat/teleported"},  # unknown type
    ]
    for action in cases:
        seq = await a.dispatch(chat, action)
        echo = await a.echo_of(seq)
        assert echo["rejectionReason"], action
    after = (await a.request("subscribe", {"channel": chat}))["snapshot"]
    assert after["state"] == before["state"]
    assert after["fromSeq"] == before["fromSeq"]
    assert not any(e.get("rejectionReason") for e in b.envelopes)


async def test_actions_for_unknown_channels_are_silently_ignored(bridge: Bridge) -> None:
    client = await bridge.client()
    seq_before = client.last_seq
    await client.dispatch("ahp-chat:/nobody", draft("x"))
    assert await client.request("ping", {"channel": ROOT}) is None
    assert not [e for e in client.envelopes if e["channel"] == "ahp-chat:/nobody"]
    assert not client.errors
    assert client.last_seq == seq_before


async def test_malformed_dispatch_params_get_an_error(bridge: Bridge) -> None:
    client = await bridge.client()
    await client.notify(
        "dispatchAction", {"channel": ROOT, "action": {"type": "root/configChanged"}}
    )
    await client.wait_for(lambda: client.errors)
    assert client.errors[-1]["code"] == -32602
    assert "clientSeq" in client.errors[-1]["message"]


async def test_two_clients_see_the_same_envelopes_and_the_same_state(bridge: Bridge) -> None:
    a = await bridge.client("a")
    uri, chat = await ready_session(a)
    b = await bridge.client("b")
    await b.subscribe(uri)
    await b.subscribe(chat)
    start = len(a.envelopes), len(b.envelopes)
    for i in range(30):
        client = a if i % 2 else b
        await client.dispatch(chat, draft(f"d{i}"))
        await client.dispatch(uri, {"type": "session/isReadChanged", "isRead": bool(i % 3)})
    await a.wait_for(lambda: len(a.envelopes) - start[0] >= 60)
    await b.wait_for(lambda: len(b.envelopes) - start[1] >= 60)
    tail_a = [e for e in a.envelopes[start[0] :] if e["channel"] in (uri, chat)]
    tail_b = [e for e in b.envelopes[start[1] :] if e["channel"] in (uri, chat)]
    assert tail_a == tail_b
    seqs = [e["serverSeq"] for e in tail_a]
    assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs)
    for channel in (uri, chat):
        host = (await a.request("subscribe", {"channel": channel}))["snapshot"]["state"]
        assert comparable(a.states[channel]) == comparable(host)
        assert comparable(b.states[channel]) == comparable(host)


# -- reconnect ---------------------------------------------------------------------------------


async def test_reconnect_replays_exactly_the_missed_envelopes(bridge: Bridge) -> None:
    a = await bridge.client("a")
    _uri, chat = await ready_session(a)
    b = await bridge.client("b")
    await b.subscribe(chat)
    last_seen = b.last_seq
    await b.ws.aclose()
    sent = []
    for i in range(5):
        sent.append(await a.dispatch(chat, draft(f"m{i}")))
    await a.echo_of(sent[-1])
    expected = [e for e in a.envelopes if e["serverSeq"] > last_seen and e["channel"] == chat]
    b2 = await bridge.client("b", initialize=False)
    gone = "ahp-chat:/gone"
    result = await b2.request(
        "reconnect",
        {
            "channel": ROOT,
            "clientId": "b",
            "lastSeenServerSeq": last_seen,
            "subscriptions": [chat, gone],
        },
    )
    assert result["type"] == "replay"
    assert result["actions"] == expected
    assert result["missing"] == [gone]
    # and the new socket is live again for that channel
    seq = await a.dispatch(chat, draft("live"))
    await b2.wait_for(
        lambda: any(e.get("origin", {}).get("clientSeq") == seq for e in b2.envelopes)
    )


async def test_reconnect_falls_back_to_snapshots_when_the_log_no_longer_covers(
    start_bridge: StartBridge,
) -> None:
    bridge = await start_bridge(replay_log=100)
    a = await bridge.client("a")
    _uri, chat = await ready_session(a)
    last_seen = a.last_seq
    for i in range(150):
        seq = await a.dispatch(chat, draft(f"m{i}"))
    await a.echo_of(seq)
    b = await bridge.client("b", initialize=False)
    result = await b.request(
        "reconnect",
        {"channel": ROOT, "clientId": "b", "lastSeenServerSeq": last_seen, "subscriptions": [chat]},
    )
    assert result["type"] == "snapshot"
    [snap] = result["snapshots"]
    assert snap["resource"] == chat
    assert snap["state"]["draft"]["text"] == "m149"


# -- slow clients ------------------------------------------------------------------------------


async def raw_initialize(ws: Any, chat: str) -> None:
    """A 0.7 client's initialize, sent by hand on a bare socket that will not read."""
    params = {
        "channel": ROOT,
        "protocolVersions": ["0.7.0"],
        "clientId": "slow",
        "initialSubscriptions": [chat],
    }
    frame = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": params}
    await ws.send_message(orjson.dumps(frame).decode())


#: A client that stops reading keeps this much in its kernel receive buffer (SO_RCVBUF; left to
#: autotuning a loopback socket may take many megabytes before the host sees it fall behind).
SLOW_RECEIVE_BUFFER = 64 * 1024


async def connect_slow(nursery: trio.Nursery, url: str) -> WebSocketConnection:
    """A client "slow" that will stop reading: one message queued, a SLOW_RECEIVE_BUFFER."""
    return await connect(
        nursery, url, "slow", message_queue_size=1, receive_buffer=SLOW_RECEIVE_BUFFER
    )


async def flood(client: AhpClient, chat: str, count: int = 100) -> int:
    """Dispatch `count` 60 kB drafts on `chat`; the clientSeq of the last. 100 (6 MB) is twice
    what fills a slow client's queue, its SLOW_RECEIVE_BUFFER and the host's send buffer
    (measured: after 40 the host had not cut it off yet, after 50 it had)."""
    big = "y" * 60_000
    last = 0
    for i in range(count):
        last = await client.dispatch(chat, draft(f"{i}{big}"))
    return last


async def close_reason(ws: Any) -> Any:
    """Read a socket until it closes (10 s at most); the close reason it saw."""
    with trio.fail_after(10):
        try:
            while True:
                await ws.get_message()
        except ConnectionClosed as closed:
            return closed.reason


async def test_a_client_that_stops_reading_is_cut_off_without_delaying_another(
    start_bridge: StartBridge,
) -> None:
    """Through the whole bridge; that none of what was queued for it follows the cut-off is
    pinned exactly in test_host_connection.py."""
    # The grace is long so that a loaded machine still delivers the close frame: the slow
    # client only starts reading once all the drafts have gone through.
    bridge = await start_bridge(outbound_queue=32, slow_client_grace=120.0)
    fast = await bridge.client("fast")
    _uri, chat = await ready_session(fast)
    async with trio.open_nursery() as nursery:
        ws = await connect_slow(nursery, bridge.url)
        slow = AhpClient(ws, "slow")
        # Handshake by hand, then never read again.
        await raw_initialize(ws, chat)
        last = await flood(fast, chat)
        echo = await fast.echo_of(last)
        assert "rejectionReason" not in echo
        # The slow client was disconnected with a clear reason; reading now shows the close.
        reason = await close_reason(ws)
        assert reason is not None and reason.code == 1008
        assert "too slow" in (reason.reason or "")
        assert "server.outbound_queue" in (reason.reason or "")
        del slow
        await ws._stream.aclose()
        nursery.cancel_scope.cancel()


async def test_a_client_that_fell_behind_and_takes_nothing_within_the_grace_is_dropped(
    start_bridge: StartBridge,
) -> None:
    """When a client that was cut off does not take the frame in flight within
    server.slow_client_grace its socket is dropped: no close frame can follow a half-written
    one, so it sees an abnormal closure (1006), and the host serves the others on."""
    bridge = await start_bridge(outbound_queue=16, slow_client_grace=0.3)
    fast = await bridge.client("fast")
    _uri, chat = await ready_session(fast)
    async with trio.open_nursery() as nursery:
        ws = await connect_slow(nursery, bridge.url)
        await raw_initialize(ws, chat)
        last = await flood(fast, chat)
        assert "rejectionReason" not in await fast.echo_of(last)
        await trio.sleep(1.0)  # well past the grace
        reason = await close_reason(ws)
        assert reason is not None and reason.code == 1006
        assert await fast.request("ping", {"channel": ROOT}) is None
        await ws._stream.aclose()
        nursery.cancel_scope.cancel()


async def test_a_client_that_does_not_come_back_stops_being_active(
    start_bridge: StartBridge, make_settings: Any
) -> None:
    settings = make_settings()
    settings.bridge.active_client_grace = 0.2
    bridge = await start_bridge(settings)
    watcher = await bridge.client("watcher")
    leaver = await bridge.client("leaver")
    uri = new_session_uri()
    await leaver.request(
        "createSession",
        {"channel": uri, "provider": "fake", "activeClient": {"clientId": "leaver", "tools": []}},
    )
    await watcher.subscribe(uri)
    assert [c["clientId"] for c in watcher.states[uri]["activeClients"]] == ["leaver"]
    await leaver.close()
    await watcher.wait_for(lambda: watcher.states[uri]["activeClients"] == [])
    assert "session/activeClientRemoved" in watcher.action_types(uri)
    # someone else's clientId cannot be claimed at creation
    with pytest.raises(RpcFailure) as err:
        await watcher.request(
            "createSession",
            {
                "channel": new_session_uri(),
                "provider": "fake",
                "activeClient": {"clientId": "x", "tools": []},
            },
        )
    assert err.value.code == -32602
