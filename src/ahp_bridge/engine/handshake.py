"""The handshake and subscriptions: `initialize`, `reconnect`, `subscribe`, `unsubscribe`.

`initialize` fixes the peer's wire line (the highest it offers that this host speaks) and its
client id; `reconnect` replaces it on a new socket, in the line that client negotiated before,
and replays what the peer missed from the log (or tells it to take snapshots). Every snapshot,
replay and result leaves through the peer's line (`protocol.lens.Wire`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol

from ahp_bridge import __version__
from ahp_bridge.engine.clients import KnownClients
from ahp_bridge.engine.fanout import Fanout
from ahp_bridge.engine.peers import Peer
from ahp_bridge.protocol import errors as E
from ahp_bridge.protocol.errors import RpcError
from ahp_bridge.protocol.uris import ANNOTATIONS_SUFFIX, channel_kind
from ahp_bridge.protocol.versions import (
    SUPPORTED_VERSIONS,
    MalformedVersion,
    UnsupportedVersion,
    negotiate_line,
)
from ahp_bridge.state.store import Store

__all__ = ["initialize", "reconnect", "subscribe", "unsubscribe"]


class HandshakeHost(Protocol):
    fanout: Fanout
    store: Store
    clients: KnownClients
    #: Channels made only once asked for (a turn's changeset): True when one was made.
    materializers: list[Callable[[str], bool]]

    @property
    def max_subscriptions(self) -> int: ...
    @property
    def default_directory(self) -> str | None: ...
    @property
    def completion_triggers(self) -> Sequence[str]: ...

    def capabilities(self) -> dict[str, Any]: ...
    def connected(self, peer: Peer) -> None: ...


def initialize(host: HandshakeHost, peer: Peer, params: dict[str, Any]) -> dict[str, Any]:
    if peer.initialized:
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
    store = host.store
    initial = params.get("initialSubscriptions") or ()
    _check_room(host, [uri for uri in initial if store.has(uri)], "initialSubscriptions")
    peer.client_id = params["clientId"]
    peer.protocol_version = version
    peer.wire = host.fanout.wires[line]
    host.clients.remember(peer.client_id, line)
    host.connected(peer)
    snapshots = [_subscribed(host, peer, uri, None) for uri in initial if store.has(uri)]
    result: dict[str, Any] = {
        "protocolVersion": version,
        "serverSeq": store.server_seq,
        "serverInfo": {"name": "ahp-bridge", "version": __version__},
        "snapshots": snapshots,
    }
    if host.default_directory:
        result["defaultDirectory"] = host.default_directory
    if host.completion_triggers:
        result["completionTriggerCharacters"] = list(host.completion_triggers)
    meta = {
        "ahpBridge.supportedVersions": list(SUPPORTED_VERSIONS),
        "ahpBridge.capabilities": host.capabilities(),
    }
    return peer.wire.initialize_result(result, meta)


def reconnect(host: HandshakeHost, peer: Peer, params: dict[str, Any]) -> dict[str, Any]:
    if peer.initialized:
        raise RpcError(E.INVALID_REQUEST, "Invalid request: reconnect replaces initialize")
    store = host.store
    wanted = list(dict.fromkeys(params["subscriptions"]))
    present = [uri for uri in wanted if store.has(uri)]
    missing = [uri for uri in wanted if not store.has(uri)]
    _check_room(host, present, "subscriptions")
    peer.client_id = params["clientId"]
    peer.wire = host.fanout.wires[host.clients.line(peer.client_id)]
    peer.protocol_version = peer.wire.version
    host.connected(peer)
    last_seen = params["lastSeenServerSeq"]
    replay = store.replay(last_seen, present) if last_seen <= store.server_seq else None
    if replay is None:
        return {
            "type": "snapshot",
            "snapshots": [_subscribed(host, peer, uri, None) for uri in present],
        }
    for uri in present:
        _add(host, peer, uri)
    actions = [wire for env in replay for wire in env.wires(peer.wire)]
    return {"type": "replay", "actions": actions, "missing": missing}


def subscribe(host: HandshakeHost, peer: Peer, params: dict[str, Any]) -> dict[str, Any]:
    uri = params["channel"]
    store = host.store
    if not store.has(uri) and not any(make(uri) for make in host.materializers):
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
    return {"snapshot": _subscribed(host, peer, uri, last_turns)}


def unsubscribe(host: HandshakeHost, peer: Peer, params: Any) -> None:
    from ahp_bridge.engine.gate import checked_params

    checked_params(peer, "unsubscribe", params)
    host.fanout.unsubscribe(peer, params["channel"])


def _check_room(host: HandshakeHost, uris: Sequence[str], key: str) -> None:
    """Refuse a handshake naming more channels than the limit before it changes anything: a
    refused handshake leaves the peer as it was, free to try again."""
    if len(set(uris)) > host.max_subscriptions:
        raise RpcError(
            E.INVALID_PARAMS,
            f"Invalid params: {key}: subscription limit {host.max_subscriptions} reached",
        )


def _add(host: HandshakeHost, peer: Peer, uri: str) -> None:
    if uri not in peer.subscriptions and len(peer.subscriptions) >= host.max_subscriptions:
        raise RpcError(
            E.INVALID_PARAMS,
            f"Invalid params: channel: subscription limit {host.max_subscriptions} reached",
        )
    host.fanout.subscribe(peer, uri)


def _subscribed(
    host: HandshakeHost, peer: Peer, uri: str, last_turns: int | None
) -> dict[str, Any]:
    _add(host, peer, uri)
    store = host.store
    snapshot = store.snapshot(uri, last_turns=last_turns)
    kind = store.kind(uri) or ""
    return {**snapshot, "state": peer.wire.state(kind, snapshot["state"], channel=uri)}
