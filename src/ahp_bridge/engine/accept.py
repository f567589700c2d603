"""The one decision on a client action: accepted (with what it implies) or refused, and why.

`decide` is the only place that says whether a client's `dispatchAction` is taken. In order:

1. its shape (`channel`, `clientSeq`, `action`: a malformed notification is an error, not an
   echo); automation and canvas actions are refused as not offered; an action for a channel
   the host does not have is ignored (the spec);
2. the peer's wire line: the action must parse as that line's action and be one its clients
   may dispatch; fields the line does not define are dropped; it is lifted to canonical;
3. the state rules and the host's limits (`state.validate.reject_reason`), with the chat's turn
   lifecycle as the one answer to "is a turn running";
4. what the provider can honour, by target: the chat's plan (`translate.commands.plan_command`,
   a provider call plan), a session setting (`translate.session_config.change_settings`), a
   customization (`engine.customizations`), a subagent's chat (read-only), room in the chat's
   call queue (`limits.max_pending_calls`).

Each rule has one wording. A refusal echoes the action as the client sent it, with its
`rejectionReason`, to the sender only; an accepted one is applied and echoed to every
subscriber with its `origin`, then what it implies happens (`apply_decision`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from ahp_bridge.engine.budget import RELEASES, Budget
from ahp_bridge.engine.customizations import Customizations
from ahp_bridge.engine.decision import Accepted, Refused
from ahp_bridge.engine.fanout import Fanout
from ahp_bridge.engine.peers import Peer
from ahp_bridge.engine.sessions import Sessions
from ahp_bridge.engine.settings import SessionSettings
from ahp_bridge.protocol import errors as E
from ahp_bridge.protocol.action_types import ActionType as A
from ahp_bridge.protocol.actions import ActionError
from ahp_bridge.protocol.errors import RpcError
from ahp_bridge.protocol.known import known_fields
from ahp_bridge.state.limits import Limits
from ahp_bridge.state.reducers.chat import known_turn
from ahp_bridge.state.store import Store
from ahp_bridge.state.validate import reject_reason
from ahp_bridge.translate.commands import NO_CALL_ACTIONS, Rejection, plan_command

if TYPE_CHECKING:
    from ahp_bridge.engine.chats import Chat
    from ahp_bridge.engine.sessions import Dormant

__all__ = ["Accepted", "Refused", "decide", "dispatch", "dormant_named"]

#: Session actions the default chat's runtime plans (a provider call, or a reasoned refusal).
PLANNED_SESSION_ACTIONS = frozenset(
    {
        A.SESSION_TITLE_CHANGED,
        A.SESSION_WORKING_DIRECTORY_SET,
        A.SESSION_WORKING_DIRECTORY_REMOVED,
        A.SESSION_WORKING_DIRECTORY_REPLACED,
        A.SESSION_CUSTOMIZATION_TOGGLED,
        A.SESSION_MCP_SERVER_START_REQUESTED,
        A.SESSION_MCP_SERVER_STOP_REQUESTED,
        A.SESSION_MCP_SERVER_BACKGROUND_REQUESTED,
        A.SESSION_CONFIG_CHANGED,
    }
)
READ_ONLY = "a subagent's chat is read-only: talk to the agent in its parent chat"

#: Lifecycle channels a request may name, by method: params keys holding one URI or a list.
NAMED_CHANNELS: dict[str, tuple[str, ...]] = {
    "subscribe": ("channel",),
    "fetchTurns": ("channel",),
    "completions": ("channel",),
    "createChat": ("channel",),
    "disposeChat": ("channel",),
    "initialize": ("initialSubscriptions",),
    "reconnect": ("subscriptions",),
}


class AcceptHost(Protocol):
    """What the decision reads of the engine."""

    store: Store
    fanout: Fanout
    limits: Limits
    budget: Budget
    sessions: Sessions
    settings: SessionSettings
    customizations: Customizations

    def not_offered(self, action_type: object) -> str | None: ...


def dispatch(engine: AcceptHost, peer: Peer, params: Any) -> None:
    """`dispatchAction`: decide, then apply and echo to all, or echo the refusal to the sender."""
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
    assert peer.client_id is not None
    origin = {"clientId": peer.client_id, "clientSeq": client_seq}
    decision = decide(engine, peer, channel, action)
    if decision is None:
        return  # the spec: actions for unknown channels are silently ignored
    if isinstance(decision, Refused):
        engine.fanout.reject(peer, channel, action, origin, decision.reason)
        return
    store, budget = engine.store, engine.budget
    if not decision.no_op:
        over = budget.admit(peer.client_id, store, decision.channel, decision.action)
        if over is not None:
            engine.fanout.reject(peer, channel, action, origin, over)
            return
    engine.fanout.apply(decision.channel, decision.action, origin)
    if decision.no_op:
        return
    if decision.action.get("type") not in RELEASES:  # else its fan-out observer just did
        budget.follow(store, decision.channel, decision.action, settle=True)
    for then in decision.then:
        then()
    if decision.chat is not None:
        decision.chat.accepted(decision.action, decision.calls)


def decide(
    engine: AcceptHost, peer: Peer, channel: str, action: dict[str, Any]
) -> Accepted | Refused | None:
    """Whether the host takes this client action (see the module docstring); None: ignored."""
    store = engine.store
    action_type = action.get("type")
    not_offered = engine.not_offered(action_type)
    if not_offered is not None:  # their channels never exist: still say why
        return Refused(not_offered)
    if not store.has(channel):
        return None
    if not isinstance(action_type, str):
        return Refused("action.type: expected a string")
    wire = peer.wire
    try:
        parsed = wire.actions.parse(action)
    except ActionError as exc:
        return Refused(str(exc))
    if not wire.may_dispatch(action_type):
        return Refused(f"{action_type} is not client-dispatchable")
    kind = store.kind(channel)
    assert kind is not None and peer.client_id is not None
    # Fields the version does not define are not kept or relayed (protocol/known.py).
    canonical = wire.action_in(kind, known_fields(parsed, action), channel)
    sessions = engine.sessions
    chat = sessions.chats.get(channel)
    reason = reject_reason(
        kind,
        store.state(channel),
        canonical,
        client_id=peer.client_id,
        idempotent_turns=wire.idempotent_turns,
        limits=engine.limits,
        running_turn=chat.translator.active_turn_id if chat is not None else None,
    )
    if reason is not None:
        return Refused(reason)
    if chat is not None:
        return _chat_action(engine, chat, channel, canonical)
    if channel in sessions.subagent_chats:
        return Refused(READ_ONLY)
    session = sessions.sessions.get(channel)
    canonical_type = canonical.get("type")
    if session is not None and canonical_type == A.SESSION_CONFIG_CHANGED:
        return engine.settings.decide(session, canonical)
    if session is not None and canonical_type in engine.customizations.actions:
        return engine.customizations.decide(session, canonical)
    if session is not None and canonical_type in PLANNED_SESSION_ACTIONS:
        default = sessions.default_chat(session)
        if default is not None:
            return _chat_action(engine, default, channel, canonical)
    return Accepted(channel, canonical)


def _chat_action(
    engine: AcceptHost, chat: Chat, channel: str, action: dict[str, Any]
) -> Accepted | Refused:
    """The provider's side of an action on a chat (or on its session, planned by that chat)."""
    if action.get("type") == A.CHAT_TURN_STARTED and known_turn(
        engine.store.state(chat.uri), action.get("turnId")
    ):
        # 1.0: a turn id the chat already knows is a no-op (a client's retry); the echo
        # tells it so, and nothing reaches the provider again.
        return Accepted(channel, action, no_op=True)
    if action.get("type") in NO_CALL_ACTIONS:
        # The reducer's alone (drafts, read flags, ...): planned without the chat's context,
        # which is built from its state and translator for every other action.
        return Accepted(channel, action, chat=chat)
    ready = engine.store.state(chat.session.uri).get("lifecycle") == "ready"
    plan = plan_command(action, chat.context(session_ready=ready))
    if isinstance(plan, Rejection):
        return Refused(plan.reason)
    if plan.calls and not chat.has_room():
        return Refused(chat.queue_full())
    return Accepted(channel, action, chat=chat, calls=plan.calls)


def dormant_named(dormant: Dormant, method: str, params: Any) -> tuple[str, ...]:
    """The dormant sessions a request names (by session or chat URI), in order."""
    if not len(dormant) or not isinstance(params, dict):
        return ()
    named: list[str] = []
    for key in NAMED_CHANNELS.get(method, ()):
        value = params.get(key)
        for uri in value if isinstance(value, list) else [value]:
            if isinstance(uri, str) and dormant.known(uri):
                owner = dormant.owner(uri)
                if owner not in named:
                    named.append(owner)
    return tuple(named)
