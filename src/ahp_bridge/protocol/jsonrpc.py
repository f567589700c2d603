"""JSON-RPC 2.0 framing for AHP, sans-IO: one text frame in, one parsed message out.

AHP puts exactly one JSON-RPC message in each WebSocket text frame; batches are not used by
any AHP implementation, so an array is an invalid request here. Parsing never raises: it
returns either a message or the error response that the peer must receive, so a connection
loop can stay a straight line.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import orjson

from ahp_bridge.protocol.errors import INVALID_REQUEST, PARSE_ERROR, RpcError

RequestId = int | str

#: Deeper JSON than this is refused before it reaches any model: AHP payloads are shallow
#: (a chat snapshot nests about a dozen levels), and deep nesting is a cheap way to burn CPU.
MAX_DEPTH = 64


@dataclass(frozen=True, slots=True)
class Request:
    id: RequestId
    method: str
    params: Any


@dataclass(frozen=True, slots=True)
class Notification:
    method: str
    params: Any


@dataclass(frozen=True, slots=True)
class Response:
    """A response from the peer (the host sends no requests today, so these are ignored)."""

    id: RequestId | None
    result: Any
    error: Any


@dataclass(frozen=True, slots=True)
class Invalid:
    """A frame that must be answered with `error`; `id` is echoed when it could be read."""

    id: RequestId | None
    error: RpcError


Message = Request | Notification | Response | Invalid


def _too_deep(value: Any, limit: int) -> bool:
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > limit:
            return True
        if isinstance(node, dict):
            stack.extend((v, depth + 1) for v in node.values() if isinstance(v, dict | list))
        elif isinstance(node, list):
            stack.extend((v, depth + 1) for v in node if isinstance(v, dict | list))
    return False


def _may_be_too_deep(text: str | bytes, limit: int) -> bool:
    """False when the frame cannot nest deeper than `limit`: it opens no more objects and
    arrays than that in all (brackets inside strings count too, so this only ever says "maybe").
    Most frames are a few levels deep: the walk over the parsed value is then skipped."""
    if isinstance(text, str):
        return text.count("{") + text.count("[") > limit
    return text.count(b"{") + text.count(b"[") > limit


def _valid_id(value: Any) -> bool:
    # bool is an int subclass in Python but not a JSON-RPC id.
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


def parse(text: str | bytes, *, max_depth: int = MAX_DEPTH) -> Message:
    """Parse one frame into a message, or into the error the sender must get back."""
    try:
        data = orjson.loads(text)
    except orjson.JSONDecodeError as exc:
        return Invalid(None, RpcError(PARSE_ERROR, f"Parse error: {exc}"))
    if isinstance(data, list):
        return Invalid(
            None, RpcError(INVALID_REQUEST, "Invalid request: batches are not supported")
        )
    if not isinstance(data, dict):
        return Invalid(None, RpcError(INVALID_REQUEST, "Invalid request: expected a JSON object"))
    raw_id = data.get("id")
    msg_id: RequestId | None = raw_id if _valid_id(raw_id) else None
    if _may_be_too_deep(text, max_depth) and _too_deep(data, max_depth):
        return Invalid(
            msg_id,
            RpcError(
                INVALID_REQUEST,
                f"Invalid request: JSON nested deeper than {max_depth} levels "
                "(server.max_json_depth)",
            ),
        )
    if data.get("jsonrpc") != "2.0":
        return Invalid(
            msg_id, RpcError(INVALID_REQUEST, 'Invalid request: "jsonrpc" must be "2.0"')
        )
    if "id" in data and raw_id is not None and not _valid_id(raw_id):
        return Invalid(
            None, RpcError(INVALID_REQUEST, 'Invalid request: "id" must be a string or an integer')
        )
    if "method" not in data:
        if ("result" in data) != ("error" in data) and "id" in data:
            return Response(msg_id, data.get("result"), data.get("error"))
        return Invalid(msg_id, RpcError(INVALID_REQUEST, 'Invalid request: "method" is missing'))
    method = data["method"]
    if not isinstance(method, str) or not method:
        return Invalid(
            msg_id, RpcError(INVALID_REQUEST, 'Invalid request: "method" must be a string')
        )
    params = data.get("params")
    if "params" in data and not isinstance(params, dict | list):
        return Invalid(
            msg_id, RpcError(INVALID_REQUEST, 'Invalid request: "params" must be an object')
        )
    if "id" not in data:
        return Notification(method, params)
    if raw_id is None:
        return Invalid(None, RpcError(INVALID_REQUEST, 'Invalid request: "id" must not be null'))
    return Request(raw_id, method, params)


def _dumps(obj: Any) -> str:
    return orjson.dumps(obj).decode()


def result_frame(msg_id: RequestId, result: Any) -> str:
    return _dumps({"jsonrpc": "2.0", "id": msg_id, "result": result})


def error_frame(msg_id: RequestId | None, error: RpcError) -> str:
    return _dumps({"jsonrpc": "2.0", "id": msg_id, "error": error.to_wire()})


def notification_frame(method: str, params: Any) -> str:
    return _dumps({"jsonrpc": "2.0", "method": method, "params": params})
