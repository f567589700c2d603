"""The WebSocket listener: transport security at the upgrade, then one `Connection` per client.

Authentication is the transport's job in AHP, so it happens here, before any JSON-RPC: the
connection token (`?tkn=`) and the browser Origin allow-list are checked on the HTTP upgrade and
a failure is a plain HTTP 403. Frame size is bounded by the WebSocket layer (close 1009).

Loopback is decided on addresses, never on spelling: a host is loopback only when every address
it resolves to is (`ipaddress`), so a name such as `127.example` is not. Origins are compared as
parsed (scheme, host, port) triples, with at most a port wildcard, never as a glob over the raw
header (which would let `http://localhost:1@evil.example` match `http://localhost:*`).
"""

from __future__ import annotations

import errno
import hmac
from dataclasses import dataclass, field
from urllib.parse import parse_qs, urlsplit

import structlog
import trio

from ahp_bridge.host.shell import Shell
from ahp_bridge.host.transport.binding import has_token, is_loopback
from ahp_bridge.host.transport.connection import Connection
from ahp_bridge.host.transport.websocket import Closed, handshake
from ahp_bridge.host.transport.wirelog import WireLog
from ahp_bridge.origins import origin_allowed, parse_origin_pattern

log = structlog.get_logger(__name__)


@dataclass(frozen=True)
class ServerOptions:
    host: str = "127.0.0.1"
    port: int = 8765
    #: Required for any bind that is not loopback; checked on every upgrade when set.
    token: str | None = None
    #: Browser Origins allowed to connect, `scheme://host[:port|:*]` (see `parse_origin_pattern`);
    #: requests without an Origin header are not from browsers and are not checked.
    allowed_origins: tuple[str, ...] = field(default_factory=tuple)
    max_frame_bytes: int = 4 * 1024 * 1024
    outbound_queue: int = 4096
    max_subscriptions: int = 1024
    slow_client_grace: float = 10.0
    shutdown_grace: float = 2.0
    remembered_request_ids: int = 4096
    max_json_depth: int = 64
    #: Where every frame is recorded (see host/wirelog.py); None: not recorded.
    wire_log: WireLog | None = None


def check_bind(options: ServerOptions) -> None:
    """Refuse an unsafe configuration before anything starts."""
    if not has_token(options.token) and not is_loopback(options.host):
        raise ValueError(
            f"refusing to listen on {options.host or '(every interface)'}: a connection token "
            "is required for any non-loopback bind (set server.token or AHP_BRIDGE__SERVER__TOKEN)"
        )
    for pattern in options.allowed_origins:
        parse_origin_pattern(pattern)


def _token_from(path: str) -> str | None:
    values = parse_qs(urlsplit(path).query).get("tkn")
    return values[0] if values else None


def check_upgrade(options: ServerOptions, path: str, headers: dict[str, str]) -> str | None:
    """Why this upgrade must be refused, or None to accept it."""
    if has_token(options.token):
        assert options.token is not None
        offered = _token_from(path)
        if offered is None or not hmac.compare_digest(offered.encode(), options.token.encode()):
            return "missing or wrong connection token"
    origin = headers.get("origin")
    if origin is not None and not origin_allowed(origin, options.allowed_origins):
        return "origin not allowed"
    return None


class ListenError(Exception):
    """The listening socket could not be opened; the message says what to do."""


def _listen_error(host: str, port: int, exc: OSError) -> ListenError:
    where = f"{host}:{port}" if ":" not in host else f"[{host}]:{port}"
    if exc.errno == errno.EADDRINUSE:
        reason = (
            "the address is already in use (another ahp-bridge?); pick a free port with "
            "--listen 127.0.0.1:0 or another HOST:PORT"
        )
    elif exc.errno == errno.EACCES:
        reason = "permission denied (ports below 1024 need privileges); use a port above 1024"
    elif exc.errno == errno.EADDRNOTAVAIL:
        reason = "that address is not on this machine; use 127.0.0.1, 0.0.0.0 or a local address"
    else:
        reason = exc.strerror or str(exc)
    return ListenError(f"cannot listen on {where}: {reason}")


#: How long a client has to send its upgrade request once connected.
CONNECT_TIMEOUT = 10.0


@dataclass(frozen=True)
class Listening:
    """What `serve` reports once it listens: the port (the first listener's, for port 0)."""

    port: int
    listeners: list[trio.SocketListener]


def _remote(stream: trio.SocketStream) -> str:
    try:
        address = stream.socket.getpeername()
    except OSError:
        return "?"
    return f"{address[0]}:{address[1]}" if isinstance(address, tuple) else str(address)


async def serve(
    shell: Shell,
    options: ServerOptions,
    *,
    task_status: trio.TaskStatus[Listening] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Serve AHP on `options.host:port` until cancelled."""
    check_bind(options)
    try:
        listeners = await trio.open_tcp_listeners(options.port, host=options.host or None)
    except OSError as exc:
        if exc.errno is None:
            raise
        raise _listen_error(options.host, options.port, exc) from None

    async def handler(stream: trio.SocketStream) -> None:
        try:
            await _connection(shell, options, stream)
        except (trio.BrokenResourceError, trio.ClosedResourceError, Closed):
            await trio.aclose_forcefully(stream)
        except Exception:
            log.exception("connection failed", remote=_remote(stream))
            await trio.aclose_forcefully(stream)

    port = listeners[0].socket.getsockname()[1]
    async with trio.open_nursery() as nursery:
        task_status.started(Listening(port, listeners))
        await trio.serve_listeners(handler, listeners, handler_nursery=nursery)


async def _connection(shell: Shell, options: ServerOptions, stream: trio.SocketStream) -> None:
    remote = _remote(stream)
    upgrade = await handshake(stream, max_size=options.max_frame_bytes, timeout=CONNECT_TIMEOUT)
    if upgrade is None:
        return
    refusal = check_upgrade(options, upgrade.path, upgrade.headers)
    if refusal is not None:
        # Never log the offered token or the query string.
        log.warning("upgrade refused", reason=refusal, remote=remote)
        await upgrade.reject(403, f"Forbidden: {refusal}\n")
        return
    ws = await upgrade.accept()
    if ws is None:
        return
    conn = Connection(
        ws,
        shell,
        abandon_grace=options.slow_client_grace,
        shutdown_grace=options.shutdown_grace,
        wire_log=options.wire_log,
    )
    log.info("client connected", conn=conn.number, remote=remote)
    await conn.run()
    log.info("client disconnected", conn=conn.number, client=conn.client_id)
