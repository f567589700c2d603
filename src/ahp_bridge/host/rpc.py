"""Routing of JSON-RPC requests and notifications to the host's handlers.

Every 0.7.0 method is known here; params are validated against the wire models before any
handler runs, so handlers read plain dicts that already have the right shape. Requests are
handled one at a time per connection, which keeps its replies in order, so nothing a client
asks for waits on a provider turn: session creation finishes in the background and reports
through `session/ready`. Only two waits exist: `createSession` records the session in the
catalog before it answers, and a request naming a session from an earlier run restores it first.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import structlog

from ahp_bridge import __version__
from ahp_bridge.host.auth import SignIn
from ahp_bridge.host.hub import Hub
from ahp_bridge.protocol import errors as E
from ahp_bridge.protocol import jsonrpc
from ahp_bridge.protocol.actions import CLIENT_DISPATCHABLE, ActionError, parse_action
from ahp_bridge.protocol.errors import RpcError
from ahp_bridge.protocol.params import ParamsError, parse_params
from ahp_bridge.protocol.uris import ROOT, channel_kind
from ahp_bridge.protocol.versions import MalformedVersion, UnsupportedVersion, negotiate
from ahp_bridge.state.validate import reject_reason

if TYPE_CHECKING:
    from ahp_bridge.host.connection import Connection
    from ahp_bridge.host.sessions import SessionManager

log = structlog.get_logger(__name__)

#: Methods a client may call before `initialize` (reconnect replaces initialize on a new socket).
_PRE_INIT = frozenset({"ping", "initialize", "reconnect"})

#: Methods that belong to features this host does not offer (no filesystem, no terminals).
_NO_FILESYSTEM = frozenset(
    {
        "resourceRead",
        "resourceWrite",
        "resourceList",
        "resourceCopy",
        "resourceDelete",
        "resourceMove",
        "resourceResolve",
        "resourceMkdir",
        "resourceRequest",
        "createResourceWatch",
    }
)


class RpcHandler:
    """Dispatches parsed messages for all connections of one host."""

    def __init__(self, hub: Hub, sessions: SessionManager, *, default_directory: str | None = None):
        self.hub = hub
        self.sessions = sessions
        self.default_directory = default_directory
        self.connections: set[Connection] = set()
        self._sign_in = SignIn(sessions)
        self._requests: dict[str, Callable[[Connection, dict[str, Any]], Any]] = {
            "initialize": self.initialize,
            "ping": self.ping,
            "reconnect": self.reconnect,
            "subscribe": self.subscribe,
            "createSession": self.sessions.create_session,
            "disposeSession": self.sessions.dispose_session,
            "createChat": self.sessions.create_chat,
            "disposeChat": self.sessions.dispose_chat,
            "listSessions": self.sessions.list_sessions,
            "fetchTurns": self.sessions.fetch_turns,
            "completions": self.completions,
            "resolveSessionConfig": self.resolve_session_config,
            "sessionConfigCompletions": self.completions,
            "authenticate": self.authenticate,
            "createTerminal": self.no_terminals,
            "disposeTerminal": self.no_terminals,
            "invokeChangesetOperation": self.invoke_changeset_operation,
        }
        for name in _NO_FILESYSTEM:
            self._requests[name] = self.no_filesystem

    # -- connection bookkeeping ----------------------------------------------------------------

    def connection_made(self, conn: Connection) -> None:
        self.connections.add(conn)

    def connection_lost(self, conn: Connection) -> None:
        self.connections.discard(conn)
        self.hub.drop(conn, conn.subscriptions)
        conn.subscriptions.clear()
        if conn.client_id is not None and not self.is_connected(conn.client_id):
            self.sessions.client_gone(conn.client_id, self.is_connected)

    def is_connected(self, client_id: str) -> bool:
        return any(c.client_id == client_id for c in self.connections)

    # -- entry points --------------------------------------------------------------------------

    async def handle_request(self, conn: Connection, req: jsonrpc.Request) -> None:
        try:
            durable = self.sessions.durable  # sessions from an earlier run
            if durable is not None and (conn.initialized or req.method in _PRE_INIT):
                await durable.restore_named(req.method, req.params)
            result = self._call(conn, req.method, req.params)
            if inspect.isawaitable(result):  # a handler that must record before it answers
                result = await result
        except RpcError as err:
            conn.send_error(req.id, err)
            if err.code == E.UNSUPPORTED_PROTOCOL_VERSION:
                conn.close(1000, "unsupported protocol version")
            return
        except Exception:
            log.exception("request failed", method=req.method, conn=conn.number)
            conn.send_error(req.id, RpcError(E.INTERNAL_ERROR, "Internal error"))
            return
        conn.send_result(req.id, result)

    def _call(self, conn: Connection, method: str, params: Any) -> Any:
        handler = self._requests.get(method)
        if handler is None:
            if method in ("dispatchAction", "unsubscribe"):
                raise RpcError(E.INVALID_REQUEST, f"Invalid request: {method} is a notification")
            raise RpcError(E.METHOD_NOT_FOUND, f"Method not found: {method}")
        if not conn.initialized and method not in _PRE_INIT:
            raise RpcError(E.INVALID_REQUEST, f"Invalid request: call initialize before {method}")
        checked = self._params(method, params)
        return handler(conn, checked)

    @staticmethod
    def _params(method: str, params: Any) -> dict[str, Any]:
        try:
            parse_params(method, params)
        except ParamsError as exc:
            raise RpcError(E.INVALID_PARAMS, f"Invalid params: {exc}") from None
        assert isinstance(params, dict)
        return params

    async def handle_notification(self, conn: Connection, note: jsonrpc.Notification) -> None:
        """Notifications get no response; malformed ones get an error with a null id."""
        if note.method == "dispatchAction":
            handler = self.dispatch_action
        elif note.method == "unsubscribe":
            handler = self.unsubscribe
        elif note.method in self._requests:
            conn.send_error(
                None, RpcError(E.INVALID_REQUEST, f"Invalid request: {note.method} needs an id")
            )
            return
        else:
            conn.send_error(None, RpcError(E.METHOD_NOT_FOUND, f"Method not found: {note.method}"))
            return
        if not conn.initialized:
            conn.send_error(
                None,
                RpcError(
                    E.INVALID_REQUEST, f"Invalid request: call initialize before {note.method}"
                ),
            )
            return
        try:
            handler(conn, note.params)
        except RpcError as err:
            conn.send_error(None, err)
        except Exception:
            log.exception("notification failed", method=note.method, conn=conn.number)

    # -- handshake -----------------------------------------------------------------------------

    def initialize(self, conn: Connection, params: dict[str, Any]) -> dict[str, Any]:
        if conn.initialized:
            raise RpcError(E.INVALID_REQUEST, "Invalid request: initialize was already called")
        try:
            version = negotiate(params["protocolVersions"])
        except UnsupportedVersion as exc:
            raise RpcError(
                E.UNSUPPORTED_PROTOCOL_VERSION,
                f"Unsupported protocol version: offered {params['protocolVersions']!r}",
                {"supportedVersions": list(exc.supported)},
            ) from None
        except MalformedVersion as exc:
            raise RpcError(E.INVALID_PARAMS, f"Invalid params: protocolVersions: {exc}") from None
        conn.client_id = params["clientId"]
        conn.protocol_version = version
        self.connection_made(conn)
        snapshots = [
            self._subscribe(conn, uri, None)
            for uri in params.get("initialSubscriptions") or ()
            if self.hub.store.has(uri)
        ]
        result: dict[str, Any] = {
            "protocolVersion": version,
            "serverSeq": self.hub.store.server_seq,
            "serverInfo": {"name": "ahp-bridge", "version": __version__},
            "snapshots": snapshots,
        }
        if self.default_directory:
            result["defaultDirectory"] = self.default_directory
        return result

    def ping(self, conn: Connection, params: dict[str, Any]) -> None:
        return None

    def reconnect(self, conn: Connection, params: dict[str, Any]) -> dict[str, Any]:
        if conn.initialized:
            raise RpcError(E.INVALID_REQUEST, "Invalid request: reconnect replaces initialize")
        conn.client_id = params["clientId"]
        conn.protocol_version = "0.7.0"
        self.connection_made(conn)
        store = self.hub.store
        wanted = list(dict.fromkeys(params["subscriptions"]))
        present = [uri for uri in wanted if store.has(uri)]
        missing = [uri for uri in wanted if not store.has(uri)]
        last_seen = params["lastSeenServerSeq"]
        replay = store.replay(last_seen, present) if last_seen <= store.server_seq else None
        if replay is None:
            return {
                "type": "snapshot",
                "snapshots": [self._subscribe(conn, uri, None) for uri in present],
            }
        for uri in present:
            self._add_subscription(conn, uri)
        return {"type": "replay", "actions": [env.wire() for env in replay], "missing": missing}

    # -- subscriptions -------------------------------------------------------------------------

    def _add_subscription(self, conn: Connection, uri: str) -> None:
        if uri not in conn.subscriptions and len(conn.subscriptions) >= conn.max_subscriptions:
            raise RpcError(
                E.INVALID_PARAMS,
                f"Invalid params: channel: subscription limit {conn.max_subscriptions} reached",
            )
        conn.subscriptions.add(uri)
        self.hub.subscribe(conn, uri)

    def _subscribe(self, conn: Connection, uri: str, last_turns: int | None) -> dict[str, Any]:
        self._add_subscription(conn, uri)
        return self.hub.store.snapshot(uri, last_turns=last_turns)

    def subscribe(self, conn: Connection, params: dict[str, Any]) -> dict[str, Any]:
        uri = params["channel"]
        if not self.hub.store.has(uri):
            kind = channel_kind(uri)
            if kind is None:
                raise RpcError(
                    E.INVALID_PARAMS, f"Invalid params: channel: not an AHP URI: {uri!r}"
                )
            code = E.SESSION_NOT_FOUND if kind == "session" else E.NOT_FOUND
            raise RpcError(code, f"No such channel: {uri}")
        view = params.get("view") or {}
        turns = view.get("turns")
        last_turns = int(turns) if isinstance(turns, int | float) and turns >= 0 else None
        return {"snapshot": self._subscribe(conn, uri, last_turns)}

    def unsubscribe(self, conn: Connection, params: Any) -> None:
        self._params("unsubscribe", params)
        uri = params["channel"]
        conn.subscriptions.discard(uri)
        self.hub.unsubscribe(conn, uri)

    # -- actions -------------------------------------------------------------------------------

    def dispatch_action(self, conn: Connection, params: Any) -> None:
        """Validate a client action; apply and echo it to all, or echo a rejection to the sender."""
        if not isinstance(params, dict):
            raise RpcError(E.INVALID_PARAMS, "Invalid params: expected an object")
        channel = params.get("channel")
        client_seq = params.get("clientSeq")
        action = params.get("action")
        if not isinstance(channel, str):
            raise RpcError(E.INVALID_PARAMS, "Invalid params: channel: expected a string")
        if not isinstance(client_seq, int | float) or isinstance(client_seq, bool):
            raise RpcError(E.INVALID_PARAMS, "Invalid params: clientSeq: expected a number")
        if not isinstance(action, dict):
            raise RpcError(E.INVALID_PARAMS, "Invalid params: action: expected an object")
        store = self.hub.store
        if not store.has(channel):
            return  # the spec: actions for unknown channels are silently ignored
        assert conn.client_id is not None
        origin = {"clientId": conn.client_id, "clientSeq": client_seq}
        reason = self._action_rejection(conn, channel, action)
        if reason is not None:
            self.hub.reject(conn, channel, action, origin, reason)
            return
        self.sessions.apply_client_action(conn, channel, action, origin)

    def _action_rejection(
        self, conn: Connection, channel: str, action: dict[str, Any]
    ) -> str | None:
        action_type = action.get("type")
        if not isinstance(action_type, str):
            return "action.type: expected a string"
        if action_type not in CLIENT_DISPATCHABLE:
            return f"{action_type} is not client-dispatchable"
        try:
            parse_action(action)
        except ActionError as exc:
            return str(exc)
        kind = self.hub.store.kind(channel)
        assert kind is not None
        assert conn.client_id is not None
        return reject_reason(kind, self.hub.store.state(channel), action, client_id=conn.client_id)

    # -- features this host answers without a backend ------------------------------------------

    def completions(self, conn: Connection, params: dict[str, Any]) -> dict[str, Any]:
        return {"items": []}

    def resolve_session_config(self, conn: Connection, params: dict[str, Any]) -> Any:
        result: dict[str, Any] = {"schema": {"type": "object", "properties": {}}, "values": {}}
        durable = self.sessions.durable  # offers importable conversations
        return durable.offer_imports(params, result) if durable is not None else result

    def authenticate(self, conn: Connection, params: dict[str, Any]) -> Any:
        return self._sign_in.authenticate(conn, params)  # host/auth.py

    def no_terminals(self, conn: Connection, params: dict[str, Any]) -> None:
        raise RpcError(E.PERMISSION_DENIED, "This host does not offer terminals")

    def no_filesystem(self, conn: Connection, params: dict[str, Any]) -> None:
        raise RpcError(E.PERMISSION_DENIED, "This host does not expose a filesystem")

    def invoke_changeset_operation(self, conn: Connection, params: dict[str, Any]) -> None:
        raise RpcError(E.NOT_FOUND, f"No such changeset: {params['channel']}")


__all__ = ["ROOT", "RpcHandler"]
