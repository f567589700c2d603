"""Routing of JSON-RPC requests and notifications to the host's handlers.

Every method of the connection's wire version is known here; params are validated against that
version's models before any handler runs, so handlers read plain dicts that already have the
right shape. Client actions are validated the same way and lifted to the canonical (1.0) shape
by the connection's `Wire`; everything sent back (snapshots, results, envelopes) is shown in
that version by it too, so nothing below this module knows which version a client speaks.

Requests are handled one at a time per connection, which keeps its replies in order, so
nothing a client asks for waits on a provider turn: session creation finishes in the background
and reports through `session/ready`. Only two waits exist: `createSession` records the session
in the catalog before it answers, and a request naming a session from an earlier run restores it
first.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import structlog

from ahp_bridge import __version__
from ahp_bridge.host.auth import SignIn
from ahp_bridge.host.clients import KnownClients
from ahp_bridge.host.hub import Hub
from ahp_bridge.protocol import errors as E
from ahp_bridge.protocol import jsonrpc
from ahp_bridge.protocol.actions import ActionError
from ahp_bridge.protocol.actions_v1 import AUTOMATION_TYPES, CANVAS_TYPES
from ahp_bridge.protocol.errors import RpcError
from ahp_bridge.protocol.known import known_fields
from ahp_bridge.protocol.lens import WIRES
from ahp_bridge.protocol.params import AUTOMATION_METHODS, ParamsError, parse_params
from ahp_bridge.protocol.uris import ANNOTATIONS_SUFFIX, ROOT, channel_kind
from ahp_bridge.protocol.versions import (
    SUPPORTED_VERSIONS,
    MalformedVersion,
    UnsupportedVersion,
    negotiate_line,
)
from ahp_bridge.state.validate import reject_reason

if TYPE_CHECKING:
    from ahp_bridge.host.connection import Connection
    from ahp_bridge.host.sessions import SessionManager

log = structlog.get_logger(__name__)

#: Methods a client may call before `initialize` (reconnect replaces initialize on a new socket).
_PRE_INIT = frozenset({"ping", "initialize", "reconnect"})

#: Filesystem methods, refused when the host is built without a workspace (host/app.py adds one).
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


#: Features of 1.0 this host does not offer: the answer to their commands and actions.
_NO_AUTOMATIONS = "automations are not offered by this host"
_NO_CANVASES = "canvases are not offered by this host"
_NO_MOVE = "moving chats between sessions is not offered by this host"


class RpcHandler:
    """Dispatches parsed messages for all connections of one host."""

    def __init__(
        self,
        hub: Hub,
        sessions: SessionManager,
        *,
        default_directory: str | None = None,
        clients: KnownClients | None = None,
        handlers: Mapping[str, Callable[[Connection, dict[str, Any]], Any]] | None = None,
        completion_triggers: Sequence[str] = (),
        materializers: Sequence[Callable[[str], bool]] = (),
    ):
        self.hub = hub
        self.sessions = sessions
        self.default_directory = default_directory
        self.clients = clients if clients is not None else KnownClients()
        self.connections: set[Connection] = set()
        self._sign_in = SignIn(sessions)
        sessions.sign_in_watch.peers = self.connections  # who hears `auth/required`
        self._requests: dict[str, Callable[[Connection, dict[str, Any]], Any]] = {
            "initialize": self.initialize,
            "ping": self.ping,
            "reconnect": self.reconnect,
            "subscribe": self.subscribe,
            "createSession": self.sessions.create_session,
            "disposeSession": self.sessions.dispose_session,
            "createChat": self.sessions.create_chat,
            "disposeChat": self.sessions.dispose_chat,
            "listSessions": self.list_sessions,
            "fetchTurns": self.sessions.fetch_turns,
            "completions": self.completions,
            "resolveSessionConfig": self.resolve_session_config,
            "sessionConfigCompletions": self.completions,
            "authenticate": self.authenticate,
            "createTerminal": self.no_terminals,
            "disposeTerminal": self.no_terminals,
            "invokeChangesetOperation": self.invoke_changeset_operation,
            "moveChat": self.no_move,
        }
        for name in _NO_FILESYSTEM:
            self._requests[name] = self.no_filesystem
        for name in AUTOMATION_METHODS:
            self._requests[name] = self.no_automations
        self._requests.update(handlers or {})  # files, watches, completions (see host/app.py)
        self.completion_triggers = list(completion_triggers)
        #: Make a channel that exists only once asked for (a turn's changeset); True if made.
        self.materializers = list(materializers)

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
        if handler is None or method not in conn.wire.methods:
            if method in ("dispatchAction", "unsubscribe"):
                raise RpcError(E.INVALID_REQUEST, f"Invalid request: {method} is a notification")
            raise RpcError(E.METHOD_NOT_FOUND, f"Method not found: {method}")
        if not conn.initialized and method not in _PRE_INIT:
            raise RpcError(E.INVALID_REQUEST, f"Invalid request: call initialize before {method}")
        if method == "reconnect" and isinstance(params, dict) and "channel" not in params:
            # VS Code 1.131 reconnects without `channel` (tests/fixtures/vscode/); it can only
            # be the root, so it is read as the root rather than refused.
            params = {**params, "channel": ROOT}
        checked = conn.wire.params_in(method, self._params(conn, method, params))
        return handler(conn, checked)

    @staticmethod
    def _params(conn: Connection, method: str, params: Any) -> dict[str, Any]:
        try:
            parse_params(method, params, conn.wire.methods)
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
            version, line = negotiate_line(params["protocolVersions"])
        except UnsupportedVersion as exc:
            raise RpcError(
                E.UNSUPPORTED_PROTOCOL_VERSION,
                f"Unsupported protocol version: offered {params['protocolVersions']!r}; this "
                f"host speaks {', '.join(SUPPORTED_VERSIONS)}",
                {"supportedVersions": list(exc.supported)},
            ) from None
        except MalformedVersion as exc:
            raise RpcError(E.INVALID_PARAMS, f"Invalid params: protocolVersions: {exc}") from None
        conn.client_id = params["clientId"]
        conn.protocol_version = version
        conn.wire = WIRES[line]
        self.clients.remember(conn.client_id, line)
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
        if self.completion_triggers:
            result["completionTriggerCharacters"] = self.completion_triggers
        meta = {
            "ahpBridge.supportedVersions": list(SUPPORTED_VERSIONS),
            "ahpBridge.capabilities": self.sessions.capabilities(),
        }
        return conn.wire.initialize_result(result, meta)

    def ping(self, conn: Connection, params: dict[str, Any]) -> None:
        return None

    def reconnect(self, conn: Connection, params: dict[str, Any]) -> dict[str, Any]:
        if conn.initialized:
            raise RpcError(E.INVALID_REQUEST, "Invalid request: reconnect replaces initialize")
        conn.client_id = params["clientId"]
        conn.wire = WIRES[self.clients.line(conn.client_id)]
        conn.protocol_version = conn.wire.version
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
        actions = [wire for env in replay for wire in env.wires(conn.wire)]
        return {"type": "replay", "actions": actions, "missing": missing}

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
        return self.hub.store.snapshot(uri, last_turns=last_turns, wire=conn.wire)

    def subscribe(self, conn: Connection, params: dict[str, Any]) -> dict[str, Any]:
        uri = params["channel"]
        if not self.hub.store.has(uri) and not any(make(uri) for make in self.materializers):
            # Kinds are bound when a channel is created; an unknown URI is named by its shape only
            # to pick the error: any scheme may name a session (clients choose session URIs).
            kind = channel_kind(uri)
            if kind is None and ":" not in uri:
                raise RpcError(E.INVALID_PARAMS, f"Invalid params: channel: not a URI: {uri!r}")
            if kind == "session" or (kind is None and not uri.endswith(ANNOTATIONS_SUFFIX)):
                raise RpcError(E.SESSION_NOT_FOUND, f"No such session: {uri}")
            raise RpcError(E.NOT_FOUND, f"No such channel: {uri}")
        view = params.get("view") or {}
        turns = view.get("turns")
        last_turns = int(turns) if isinstance(turns, int | float) and turns >= 0 else None
        return {"snapshot": self._subscribe(conn, uri, last_turns)}

    def unsubscribe(self, conn: Connection, params: Any) -> None:
        self._params(conn, "unsubscribe", params)
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
        assert conn.client_id is not None
        origin = {"clientId": conn.client_id, "clientSeq": client_seq}
        store = self.hub.store
        action_type = action.get("type")
        not_offered = _not_offered(action_type)
        if not_offered is not None:  # their channels never exist: still say why
            self.hub.reject(conn, channel, action, origin, not_offered)
            return
        if not store.has(channel):
            return  # the spec: actions for unknown channels are silently ignored
        kind = store.kind(channel)
        assert kind is not None
        reason, canonical = self._checked_action(conn, kind, channel, action)
        if reason is not None or canonical is None:
            self.hub.reject(conn, channel, action, origin, reason or "invalid action")
            return
        self.sessions.apply_client_action(conn, channel, canonical, origin, sent=action)

    def _checked_action(
        self, conn: Connection, kind: str, channel: str, action: dict[str, Any]
    ) -> tuple[str | None, dict[str, Any] | None]:
        """(rejection reason, None) or (None, the canonical action) for one client action."""
        action_type = action.get("type")
        if not isinstance(action_type, str):
            return "action.type: expected a string", None
        wire = conn.wire
        try:
            parsed = wire.actions.parse(action)
        except ActionError as exc:
            return str(exc), None
        if not wire.may_dispatch(action_type):
            return f"{action_type} is not client-dispatchable", None
        # Fields the version does not define are not kept or relayed (protocol/known.py).
        canonical = wire.action_in(kind, known_fields(parsed, action), channel)
        assert conn.client_id is not None
        state = self.hub.store.state(channel)
        reason = reject_reason(
            kind,
            state,
            canonical,
            client_id=conn.client_id,
            idempotent_turns=wire.idempotent_turns,
            limits=self.sessions.limits,
        )
        return (reason, None) if reason is not None else (None, canonical)

    # -- features this host answers without a backend ------------------------------------------

    def list_sessions(self, conn: Connection, params: dict[str, Any]) -> dict[str, Any]:
        result = self.sessions.list_sessions(conn, params)
        return {**result, "items": [conn.wire.summary(item) for item in result["items"]]}

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

    def no_automations(self, conn: Connection, params: dict[str, Any]) -> None:
        raise RpcError(E.METHOD_NOT_FOUND, f"Method not found: {_NO_AUTOMATIONS}")

    def no_move(self, conn: Connection, params: dict[str, Any]) -> None:
        raise RpcError(E.METHOD_NOT_FOUND, f"Method not found: {_NO_MOVE}")


def _not_offered(action_type: object) -> str | None:
    """Why an automation or canvas action is refused (they are not offered), else None."""
    if not isinstance(action_type, str):  # an unhashable `type` is refused later, with a reason
        return None
    if action_type in AUTOMATION_TYPES:
        return _NO_AUTOMATIONS
    if action_type in CANVAS_TYPES:
        return _NO_CANVASES
    return None


__all__ = ["ROOT", "RpcHandler"]
