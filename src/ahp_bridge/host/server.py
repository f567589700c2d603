"""The WebSocket listener: transport security at the upgrade, then one `Connection` per client.

Authentication is the transport's job in AHP, so it happens here, before any JSON-RPC: the
connection token (`?tkn=`) and the browser Origin allow-list are checked on the HTTP upgrade and
a failure is a plain HTTP 403. Frame size is bounded by the WebSocket layer (close 1009).
"""

from __future__ import annotations

import fnmatch
import hmac
from dataclasses import dataclass, field
from urllib.parse import parse_qs, urlsplit

import structlog
import trio
from trio_websocket import WebSocketRequest, WebSocketServer, serve_websocket

from ahp_bridge.host.connection import Connection
from ahp_bridge.host.rpc import RpcHandler

log = structlog.get_logger(__name__)


@dataclass(frozen=True)
class ServerOptions:
    host: str = "127.0.0.1"
    port: int = 8765
    #: Required for any bind that is not loopback; checked on every upgrade when set.
    token: str | None = None
    #: Glob patterns of browser Origins allowed to connect (requests without Origin: not browsers).
    allowed_origins: tuple[str, ...] = field(default_factory=tuple)
    max_frame_bytes: int = 4 * 1024 * 1024
    outbound_queue: int = 4096
    max_subscriptions: int = 1024
    slow_client_grace: float = 10.0
    remembered_request_ids: int = 4096


def is_loopback(host: str) -> bool:
    return host in ("localhost", "::1") or host.startswith("127.")


def check_bind(options: ServerOptions) -> None:
    """Refuse an unsafe configuration before anything starts."""
    if options.token is None and not is_loopback(options.host):
        raise ValueError(
            f"refusing to listen on {options.host}: a connection token is required for any "
            "non-loopback bind (set server.token or AHP_BRIDGE__SERVER__TOKEN)"
        )


def _token_from(path: str) -> str | None:
    values = parse_qs(urlsplit(path).query).get("tkn")
    return values[0] if values else None


def check_upgrade(options: ServerOptions, path: str, headers: dict[str, str]) -> str | None:
    """Why this upgrade must be refused, or None to accept it."""
    if options.token is not None:
        offered = _token_from(path)
        if offered is None or not hmac.compare_digest(offered.encode(), options.token.encode()):
            return "missing or wrong connection token"
    origin = headers.get("origin")
    if origin is not None and not any(
        fnmatch.fnmatchcase(origin, pattern) for pattern in options.allowed_origins
    ):
        return "origin not allowed"
    return None


async def serve(
    rpc: RpcHandler,
    options: ServerOptions,
    *,
    task_status: trio.TaskStatus[WebSocketServer] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Serve AHP on `options.host:port` until cancelled."""
    check_bind(options)

    async def handler(request: WebSocketRequest) -> None:
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in request.headers}
        refusal = check_upgrade(options, request.path, headers)
        if refusal is not None:
            # Never log the offered token or the query string.
            log.warning("upgrade refused", reason=refusal, remote=str(request.remote))
            await request.reject(403, body=f"Forbidden: {refusal}\n".encode())
            return
        ws = await request.accept()
        conn = Connection(
            ws,
            rpc,
            queue_size=options.outbound_queue,
            max_subscriptions=options.max_subscriptions,
            remembered_ids=options.remembered_request_ids,
            abandon_grace=options.slow_client_grace,
        )
        log.info("client connected", conn=conn.number, remote=str(request.remote))
        await conn.run()
        log.info("client disconnected", conn=conn.number, client=conn.client_id)

    await serve_websocket(
        handler,
        options.host,
        options.port,
        None,
        max_message_size=options.max_frame_bytes,
        connect_timeout=10,
        disconnect_timeout=5,
        task_status=task_status,
    )
