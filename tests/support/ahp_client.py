"""A small but real AHP client for tests: WebSocket, JSON-RPC, and a locally reduced mirror.

It keeps every frame it receives, answers nothing on its own, and reduces `action` envelopes
into its own copy of each subscribed channel's state, so tests can assert that every client's
view equals the host's snapshot. It speaks the version it offers (default `["0.7.0"]`, as every
0.7 test always did) and reduces what it receives as a client of its line does (`Wire.reduce`):
a 0.6, 0.7 or 0.8 client with its line's path (`reduce_older`: the one the 0.7.0 fixtures pass
through, with the older reducers' clock and, for 0.6 and 0.7, their InputNeeded rule), a 0.9 or
1.0 client with the canonical reducers. With `check=True` every frame received is validated,
strictly, against its negotiated version's schema (see `wire_schema`), and a client of a line
before 1.0 fails on any action type its version does not define.
"""

from __future__ import annotations

import itertools
import math
import socket
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import orjson
import trio
from trio_websocket import (
    ConnectionClosed,
    WebSocketConnection,
    connect_websocket_url,
    wrap_client_stream,
)

from ahp_bridge.protocol.lens import Wire, wires
from ahp_bridge.protocol.uris import channel_kind
from ahp_bridge.protocol.versions import V09, V10, Line, negotiate_line
from ahp_bridge.state.reducers import reduce
from tests.support import corpus, wire_schema

MOCK_NOW = "1970-01-01T00:00:00.000Z"

#: Methods whose result has a schema def named after them (`<Method>Result`).
_RESULTS = frozenset(
    {
        "initialize",
        "subscribe",
        "listSessions",
        "fetchTurns",
        "completions",
        "resolveSessionConfig",
        "sessionConfigCompletions",
        "authenticate",
        "createResourceWatch",
        "invokeChangesetOperation",
        "resourceRead",
        "resourceWrite",
        "resourceList",
        "resourceCopy",
        "resourceDelete",
        "resourceMove",
        "resourceResolve",
        "resourceMkdir",
        "resourceRequest",
    }
)
#: One wire per line, for its peers' side of it (reducing, the action types it knows): a
#: client's reducer is pure, so these never see an envelope of the host's.
_LINES: dict[Line, Wire] = wires()

_NOTIFICATIONS = {
    "action": "ActionEnvelope",
    "root/sessionAdded": "SessionAddedParams",
    "root/sessionRemoved": "SessionRemovedParams",
    "root/sessionSummaryChanged": "SessionSummaryChangedParams",
    "root/progress": "ProgressParams",
    "auth/required": "AuthRequiredParams",
}


def kind_of_state(state: dict[str, Any]) -> str | None:
    """A channel's kind, read off its state (clients choose session URIs in any scheme)."""
    for key, kind in (
        ("agents", "root"),
        ("turns", "chat"),
        ("lifecycle", "session"),
        ("annotations", "annotations"),
        ("files", "changeset"),
        ("content", "terminal"),
    ):
        if key in state:
            return kind
    return None


class RpcFailure(Exception):
    def __init__(self, error: dict[str, Any]) -> None:
        super().__init__(f"{error.get('code')}: {error.get('message')}")
        self.code = error.get("code")
        self.message = error.get("message")
        self.data = error.get("data")


class AhpClient:
    def __init__(
        self,
        ws: WebSocketConnection,
        client_id: str,
        *,
        versions: tuple[str, ...] = ("0.7.0",),
        check: bool = False,
    ) -> None:
        self.ws = ws
        self.client_id = client_id
        self.versions = versions
        #: The line the client speaks: what it offers, until initialize says what was chosen.
        self.line: Line = negotiate_line(list(versions))[1]
        self.check = check
        self.kinds: dict[str, str] = {}
        self._methods: dict[int | str, str] = {}
        self._ids = itertools.count(1)
        self._seq = itertools.count(1)
        self._waiters: dict[int | str, trio.MemorySendChannel[dict[str, Any]]] = {}
        self.frames: list[dict[str, Any]] = []
        self.envelopes: list[dict[str, Any]] = []
        self.notifications: list[dict[str, Any]] = []
        self.errors: list[dict[str, Any]] = []
        self.states: dict[str, dict[str, Any]] = {}
        self.last_seq = 0
        #: The `initialize` result, once initialized.
        self.initialized: dict[str, Any] = {}
        self.closed: ConnectionClosed | None = None
        self._changed = trio.Condition()

    # -- plumbing ------------------------------------------------------------------------------

    async def reader(self) -> None:
        try:
            while True:
                text = await self.ws.get_message()
                frame = orjson.loads(text)
                self.frames.append(frame)
                if self.check:
                    self._validate(frame)
                if "id" in frame and ("result" in frame or "error" in frame):
                    waiter = (
                        self._waiters.pop(frame["id"], None) if frame["id"] is not None else None
                    )
                    if waiter is not None:
                        waiter.send_nowait(frame)
                    elif "error" in frame:
                        self.errors.append(frame["error"])
                elif frame.get("method") == "action":
                    self._on_envelope(frame["params"])
                else:
                    self.notifications.append(frame)
                async with self._changed:
                    self._changed.notify_all()
        except ConnectionClosed as exc:
            self.closed = exc
            async with self._changed:
                self._changed.notify_all()
            # The bridge closed it (a clean stop says goodbye with 1001): a client then waits
            # for the server's TCP close, which a test's end would cancel; close it here.
            await trio.aclose_forcefully(self.ws._stream)

    def _on_envelope(self, env: dict[str, Any]) -> None:
        self.envelopes.append(env)
        self.last_seq = max(self.last_seq, env["serverSeq"])
        if env.get("rejectionReason") is not None:
            return
        channel = env["channel"]
        if channel in self.states:
            self.states[channel] = self.reduce(channel, self.states[channel], env["action"])

    def reduce(self, channel: str, state: dict[str, Any], action: dict[str, Any]) -> dict[str, Any]:
        """Reduce one received action as a client of this version does."""
        kind = self.kinds.get(channel) or channel_kind(channel) or kind_of_state(state)
        assert kind is not None, channel
        wire = _LINES[self.line]
        return wire.reduce(kind, state, action, now=MOCK_NOW, canonical=reduce, channel=channel)

    def _keep(self, snapshot: dict[str, Any]) -> None:
        uri, state = snapshot["resource"], snapshot["state"]
        kind = kind_of_state(state)
        if kind is not None:
            self.kinds.setdefault(uri, kind)
        self.states[uri] = state

    def _schemas(self) -> list[wire_schema.WireSchema]:
        return wire_schema.for_line(self.line)

    def _validate(self, frame: dict[str, Any]) -> None:
        """Every frame the host sends validates against this connection's version, strictly."""
        assert frame.get("jsonrpc") == "2.0", frame
        checks: list[tuple[str, Any]] = []
        if "method" in frame and frame["params"].get("rejectionReason") is not None:
            # A refusal echoes the sender's own action as sent (valid or not): only its
            # envelope is the host's.
            env = frame["params"]
            assert isinstance(env["rejectionReason"], str) and isinstance(env["serverSeq"], int)
            assert env["origin"]["clientId"] == self.client_id
        elif "method" in frame:
            name = _NOTIFICATIONS.get(frame["method"])
            assert name is not None, f"a notification {self.line} does not define: {frame}"
            checks.append((name, frame["params"]))
            if frame["method"] == "action" and self.line != V10:
                kind = frame["params"]["action"]["type"]
                assert kind in _LINES[self.line].actions.types, f"{self.line} does not know {kind}"
        elif "error" in frame:
            error = frame["error"]
            assert isinstance(error.get("code"), int) and isinstance(error.get("message"), str)
            if self.line in (V10, V09):
                assert error["code"] != -32006, "1.0 removed ContentNotFound"
        else:
            method = self._methods.get(frame.get("id"), "")
            result = frame.get("result")
            if method == "initialize" and isinstance(result, dict):
                self.line = negotiate_line([result["protocolVersion"]])[1]
            if method == "reconnect":
                kind = "Replay" if result["type"] == "replay" else "Snapshot"
                checks.append((f"Reconnect{kind}Result", result))
            elif method in _RESULTS:
                checks.append((method[0].upper() + method[1:] + "Result", result))
            else:
                assert result is None or result == {}, (method, result)
        for schema in self._schemas():
            for name, value in checks:
                if name in schema.defs:
                    schema.check(name, value)

    async def close(self) -> None:
        """Close the socket (and its TCP stream) so no ResourceWarning outlives the test."""
        try:
            with trio.move_on_after(2):
                await self.ws.aclose()
        finally:
            await trio.aclose_forcefully(self.ws._stream)  # the close handshake may not finish

    async def send_raw(self, text: str | bytes) -> None:
        await self.ws.send_message(text)

    async def request(self, method: str, params: dict[str, Any] | None = None) -> Any:
        msg_id = next(self._ids)
        send, recv = trio.open_memory_channel[dict[str, Any]](1)
        self._waiters[msg_id] = send
        self._methods[msg_id] = method
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": msg_id, "method": method}
        if params is not None:
            message["params"] = params
        await self.ws.send_message(orjson.dumps(message).decode())
        with trio.fail_after(10):
            frame = await recv.receive()
        if "error" in frame:
            raise RpcFailure(frame["error"])
        return frame["result"]

    async def notify(self, method: str, params: dict[str, Any]) -> None:
        message = {"jsonrpc": "2.0", "method": method, "params": params}
        await self.ws.send_message(orjson.dumps(message).decode())

    async def wait_for(self, predicate: Callable[[], Any], timeout: float = 10) -> Any:
        with trio.fail_after(timeout):
            async with self._changed:
                while True:
                    value = predicate()
                    if value:
                        return value
                    if self.closed is not None:
                        raise AssertionError(f"connection closed: {self.closed}")
                    await self._changed.wait()

    # -- AHP -----------------------------------------------------------------------------------

    async def initialize(self, subscriptions: list[str] | None = None) -> dict[str, Any]:
        params: dict[str, Any] = {
            "channel": "ahp-root://",
            "protocolVersions": list(self.versions),
            "clientId": self.client_id,
        }
        if subscriptions:
            params["initialSubscriptions"] = subscriptions
        result = await self.request("initialize", params)
        self.initialized = result
        self.line = negotiate_line([result["protocolVersion"]])[1]
        for snap in result["snapshots"]:
            self._keep(snap)
        self.last_seq = max(self.last_seq, result["serverSeq"])
        return result  # type: ignore[no-any-return]

    async def subscribe(self, channel: str, **extra: Any) -> dict[str, Any]:
        result = await self.request("subscribe", {"channel": channel, **extra})
        snap = result["snapshot"]
        # Envelopes that raced ahead of the response are already covered by the snapshot.
        self._keep(snap)
        return snap  # type: ignore[no-any-return]

    async def dispatch(self, channel: str, action: dict[str, Any]) -> int:
        seq = next(self._seq)
        await self.notify(
            "dispatchAction", {"channel": channel, "clientSeq": seq, "action": action}
        )
        return seq

    async def echo_of(self, seq: int) -> dict[str, Any]:
        """The envelope that answers this client's dispatch `seq` (accepted or rejected)."""

        def find() -> dict[str, Any] | None:
            for env in self.envelopes:
                origin = env.get("origin") or {}
                if origin.get("clientId") == self.client_id and origin.get("clientSeq") == seq:
                    return env
            return None

        return await self.wait_for(find)  # type: ignore[no-any-return]

    async def start_turn(self, chat: str, text: str) -> str:
        """Start a turn with a user message on `chat`; its id, once the echo accepted it."""
        turn_id = str(uuid.uuid4())
        action = {
            "type": "chat/turnStarted",
            "turnId": turn_id,
            "startedAt": "2026-01-01T00:00:00.000Z",
            "message": {"text": text, "origin": {"kind": "user"}},
        }
        echo = await self.echo_of(await self.dispatch(chat, action))
        assert "rejectionReason" not in echo, echo
        return turn_id

    def actions(self, channel: str | None = None) -> list[dict[str, Any]]:
        return [
            e["action"]
            for e in self.envelopes
            if e.get("rejectionReason") is None and (channel is None or e["channel"] == channel)
        ]

    def action_types(self, channel: str | None = None) -> list[str]:
        return [a["type"] for a in self.actions(channel)]


async def connect(
    nursery: trio.Nursery,
    url: str,
    client_id: str | None = None,
    *,
    receive_buffer: int | None = None,
    **kwargs: Any,
) -> WebSocketConnection:
    """A client WebSocket to `url` (`kwargs` go to trio-websocket), recorded into the corpus when
    AHP_CORPUS_DIR is set (tests/support/corpus.py): every test client opens its socket here.

    `receive_buffer` fixes the socket's kernel receive buffer (SO_RCVBUF, set before it
    connects) for a client that stops reading: left to autotuning, a loopback socket buffers up
    to `net.ipv4.tcp_rmem`'s maximum (32 MiB here) before the host sees it fall behind, so a
    test would have to push that much through the whole bridge first."""
    if receive_buffer is None:
        ws = await connect_websocket_url(nursery, url, **kwargs)
    else:
        parts = urlsplit(url)
        assert parts.scheme == "ws" and parts.hostname and parts.port, url
        sock = trio.socket.socket()
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, receive_buffer)
        await sock.connect((parts.hostname, parts.port))
        resource = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        ws = await wrap_client_stream(
            nursery, trio.SocketStream(sock), f"{parts.hostname}:{parts.port}", resource, **kwargs
        )
    return corpus.record(ws, url, client_id)


async def open_client(
    nursery: trio.Nursery,
    url: str,
    client_id: str,
    *,
    versions: tuple[str, ...] = ("0.7.0",),
    check: bool = True,
    **kwargs: Any,
) -> AhpClient:
    ws = await connect(nursery, url, client_id, **kwargs)
    client = AhpClient(ws, client_id, versions=versions, check=check)
    nursery.start_soon(client.reader)
    return client


async def ready_chat(
    client: AhpClient, provider: str, timeout: float, session: str = ""
) -> tuple[str, str]:
    """Create a `provider` session (unless `session` names one already created), wait until it
    is ready (or its creation failed, which fails here), then subscribe its default chat."""
    if not session:
        session = f"ahp-session:/{uuid.uuid4()}"
        await client.request("createSession", {"channel": session, "provider": provider})
    await client.subscribe(session)
    state = await client.wait_for(
        lambda: (
            client.states[session].get("lifecycle") in ("ready", "creationFailed")
            and client.states[session]
        ),
        timeout,
    )
    assert state["lifecycle"] == "ready", state
    chat: str = state["defaultChat"]
    await client.subscribe(chat)
    return session, chat


async def create(client: AhpClient, workdir: Path, **config: Any) -> tuple[str, str]:
    """A ready session of the `fake` provider on `workdir` (with `config`, if any) and its
    subscribed default chat."""
    session = f"ahp-session:/{uuid.uuid4()}"
    params: dict[str, Any] = {
        "channel": session,
        "provider": "fake",
        "workingDirectories": [workdir.as_uri()],
    }
    if config:
        params["config"] = config
    await client.request("createSession", params)
    return await ready_chat(client, "fake", 10, session)


def strip_none(value: Any) -> Any:
    """The fixtures' rule (null means absent), for comparing states."""
    if isinstance(value, dict):
        return {k: strip_none(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [strip_none(v) for v in value]
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        return int(value)
    return value
