"""The door every frame goes through: JSON-RPC parsing, the initialize gate, request ids, routing.

A frame becomes a message (`protocol.jsonrpc.parse`, which never raises), then one of:

* an error for the sender (malformed JSON, a batch, a binary frame, a duplicate request id,
  a method its wire line does not have, params that do not fit that line's schema, a call
  before `initialize`);
* a request routed to its handler with params validated against the peer's line and lifted
  to the canonical shape (`Wire.params_in`), so no handler knows which line a client speaks;
* a notification (`dispatchAction`, `unsubscribe`) routed the same way, never answered unless
  it is malformed (then with a null id).

Handlers return the result, raise `RpcError`, or return `DEFERRED` when the shell answers later
(`effects.Serve`). Requests of one peer are handled in arrival order: the shell reads the next
frame only when the engine is done with this one (a deferred answer included), so responses,
snapshots and the envelopes that follow them reach the client in the order the host made them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Final

from ahp_bridge.engine.effects import ClosePeer, Log
from ahp_bridge.engine.fanout import Fanout
from ahp_bridge.engine.peers import Peer
from ahp_bridge.protocol import errors as E
from ahp_bridge.protocol import jsonrpc
from ahp_bridge.protocol.errors import RpcError
from ahp_bridge.protocol.params import ParamsError, parse_params
from ahp_bridge.protocol.uris import ROOT

__all__ = ["DEFERRED", "PRE_INIT", "Gate", "Handler", "NotificationHandler"]

#: Methods a client may call before `initialize` (reconnect replaces initialize on a new socket).
PRE_INIT: Final = frozenset({"ping", "initialize", "reconnect"})
#: The notifications a client may send (everything else it sends carries an id).
NOTIFICATIONS: Final = frozenset({"dispatchAction", "unsubscribe"})


class _Deferred:
    def __repr__(self) -> str:
        return "DEFERRED"


#: What a handler returns when the shell answers the request later (`effects.Serve`).
DEFERRED: Final = _Deferred()

Handler = Callable[[Peer, dict[str, Any]], Any]
NotificationHandler = Callable[[Peer, Any], None]


def checked_params(peer: Peer, method: str, params: Any) -> dict[str, Any]:
    """`params` validated against the peer's line (RpcError -32602 naming the field)."""
    try:
        parse_params(method, params, peer.wire.methods)
    except ParamsError as exc:
        raise RpcError(E.INVALID_PARAMS, f"Invalid params: {exc}") from None
    assert isinstance(params, dict)
    return params


class Gate:
    """Parses and routes the frames of every peer (see the module docstring)."""

    def __init__(
        self,
        fanout: Fanout,
        *,
        max_json_depth: int = jsonrpc.MAX_DEPTH,
        remembered_ids: int = 4096,
    ) -> None:
        self.fanout = fanout
        self.max_json_depth = max_json_depth
        self.remembered_ids = remembered_ids
        self.requests: dict[str, Handler] = {}
        self.notifications: dict[str, NotificationHandler] = {}
        #: The id of the request being handled (a handler that defers its answer names it).
        self.request_id: jsonrpc.RequestId = 0
        self.method = ""
        #: Which dormant sessions a request names (they are restored before it runs).
        self.dormant_named: Callable[[str, Any], tuple[str, ...]] = lambda method, params: ()

    def route(self, handlers: Mapping[str, Handler]) -> None:
        self.requests.update(handlers)

    # -- frames --------------------------------------------------------------------------------

    def binary(self, peer: Peer) -> None:
        self.send_error(
            peer,
            None,
            RpcError(E.INVALID_REQUEST, "Invalid request: binary frames are not accepted"),
        )

    def parse(self, peer: Peer, text: str) -> jsonrpc.Message | None:
        """The message of one frame, or None when it was answered already (an error)."""
        msg = jsonrpc.parse(text, max_depth=self.max_json_depth)
        if isinstance(msg, jsonrpc.Invalid):
            self.send_error(peer, msg.id, msg.error)
            return None
        if isinstance(msg, jsonrpc.Request):
            if msg.id in peer.seen_ids:
                self.send_error(
                    peer,
                    msg.id,
                    RpcError(
                        E.INVALID_REQUEST,
                        f"Invalid request: duplicate id {msg.id!r}; use a new id for each "
                        "request (the last server.remembered_request_ids are remembered)",
                    ),
                )
                return None
            peer.seen_ids[msg.id] = None
            if len(peer.seen_ids) > self.remembered_ids:
                peer.seen_ids.popitem(last=False)
        return msg

    def dormant(self, peer: Peer, msg: jsonrpc.Message) -> tuple[str, ...]:
        """The dormant sessions this message must wait for (restored before it runs)."""
        if not isinstance(msg, jsonrpc.Request):
            return ()
        if not peer.initialized and msg.method not in PRE_INIT:
            return ()
        return self.dormant_named(msg.method, msg.params)

    def handle(self, peer: Peer, msg: jsonrpc.Message) -> None:
        """Route a parsed message (a response from the peer is ignored: the host asks nothing)."""
        if isinstance(msg, jsonrpc.Request):
            self.request(peer, msg)
        elif isinstance(msg, jsonrpc.Notification):
            self.notification(peer, msg)

    # -- requests ------------------------------------------------------------------------------

    def request(self, peer: Peer, req: jsonrpc.Request) -> None:
        try:
            result = self._call(peer, req.method, req.params, req.id)
        except RpcError as err:
            self.answer_error(peer, req.id, err)
            return
        except Exception as exc:
            fields = {"method": req.method, "conn": peer.number}
            self.fanout.effects.append(Log("error", "request failed", fields, exc))
            self.send_error(peer, req.id, RpcError(E.INTERNAL_ERROR, "Internal error"))
            return
        if result is not DEFERRED:
            self.answer(peer, req.id, result)

    def answer(self, peer: Peer, request_id: jsonrpc.RequestId, result: Any) -> None:
        self.fanout.send(peer, jsonrpc.result_frame(request_id, result))

    def answer_error(self, peer: Peer, request_id: jsonrpc.RequestId, err: RpcError) -> None:
        """The error answer; an unsupported version closes the connection after it."""
        self.send_error(peer, request_id, err)
        if err.code == E.UNSUPPORTED_PROTOCOL_VERSION:
            self.fanout.effects.append(ClosePeer(peer, 1000, "unsupported protocol version"))

    def _call(self, peer: Peer, method: str, params: Any, request_id: jsonrpc.RequestId) -> Any:
        handler = self.requests.get(method)
        if handler is None or method not in peer.wire.methods:
            if method in NOTIFICATIONS:
                raise RpcError(E.INVALID_REQUEST, f"Invalid request: {method} is a notification")
            raise RpcError(E.METHOD_NOT_FOUND, f"Method not found: {method}")
        if not peer.initialized and method not in PRE_INIT:
            raise RpcError(E.INVALID_REQUEST, f"Invalid request: call initialize before {method}")
        if method == "reconnect" and isinstance(params, dict) and "channel" not in params:
            # VS Code 1.131 reconnects without `channel` (tests/fixtures/vscode/); it can only
            # be the root, so it is read as the root rather than refused.
            params = {**params, "channel": ROOT}
        checked = peer.wire.params_in(method, checked_params(peer, method, params))
        self.request_id, self.method = request_id, method
        return handler(peer, checked)

    # -- notifications -------------------------------------------------------------------------

    def notification(self, peer: Peer, note: jsonrpc.Notification) -> None:
        """Notifications get no response; malformed ones get an error with a null id."""
        handler = self.notifications.get(note.method)
        if handler is None:
            if note.method in self.requests:
                err = RpcError(E.INVALID_REQUEST, f"Invalid request: {note.method} needs an id")
            else:
                err = RpcError(E.METHOD_NOT_FOUND, f"Method not found: {note.method}")
            self.send_error(peer, None, err)
            return
        if not peer.initialized:
            self.send_error(
                peer,
                None,
                RpcError(
                    E.INVALID_REQUEST, f"Invalid request: call initialize before {note.method}"
                ),
            )
            return
        try:
            handler(peer, note.params)
        except RpcError as err:
            self.send_error(peer, None, err)
        except Exception as exc:
            fields = {"method": note.method, "conn": peer.number}
            self.fanout.effects.append(Log("error", "notification failed", fields, exc))

    # -- errors --------------------------------------------------------------------------------

    def send_error(self, peer: Peer, request_id: jsonrpc.RequestId | None, error: RpcError) -> None:
        """An error frame, its code as the peer's line knows it (1.0 has no ContentNotFound)."""
        code = peer.wire.error_code(error.code)
        if code != error.code:
            error = RpcError(code, error.message, error.data)
        self.fanout.send(peer, jsonrpc.error_frame(request_id, error))
