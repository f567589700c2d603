"""One canonical state, a shape per connection: the wire line a connection negotiated.

A connection holds one :class:`Wire` (its host's ``wires()[line]``) and asks it for every shape
it sends or accepts; nothing outside ``protocol/`` branches on the version. The shapes are pure:

* out: envelopes (``envelope_wires`` / ``envelope_frames``, computed once per line and cached on
  the envelope by the caller), snapshots and states, session summaries, notifications, results,
  error codes;
* in: params validation, client actions (validated against the line's models, then lifted to
  the canonical shape) and which action types a client of that line may dispatch.

A line that needs derived state of its own keeps it in its wire, fed by the envelopes: the host
calls ``observe`` for every envelope it applies, before any frame of it is made, on every wire,
and ``forget`` when a channel is disposed (the canonical state in ``state/`` holds nothing of
any line). Only 0.7 keeps any (``Wire07``). So the wires are the host's: each host makes its
own (``wires()``), and two hosts in one process never share a view.

The 1.0 line is the canonical state as it is, except that the provider's background tasks live
in ``chat/backgroundWork*`` and not in session ``_meta`` (the bridge keeps the ``_meta`` copy for
the lines that have no typed home for them). See ``wire07`` and ``wire09`` for the older lines.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final, Protocol

import orjson

from ahp_bridge.protocol import errors as E
from ahp_bridge.protocol import wire07, wire09
from ahp_bridge.protocol.actions import ACTIONS_07, ActionSet
from ahp_bridge.protocol.actions_v1 import ACTIONS_09, ACTIONS_10
from ahp_bridge.protocol.activity import ActivityTimes
from ahp_bridge.protocol.base import WireModel
from ahp_bridge.protocol.params import METHODS, METHODS_V1
from ahp_bridge.protocol.versions import V07, V09, V10, Line

__all__ = ["BACKGROUND_META_KEY", "DEFAULT_LINE", "EnvelopeLike", "Wire", "wires"]

JSON = dict[str, Any]

#: The session ``_meta`` key the translator keeps the provider's background tasks under.
BACKGROUND_META_KEY: Final = "ahpBridge.backgroundTasks"
#: The line of a peer until it negotiates one (the 0.7 this host always spoke).
DEFAULT_LINE: Final[Line] = V07


class EnvelopeLike(Protocol):
    """What a wire needs of a sequenced canonical action."""

    @property
    def channel(self) -> str: ...
    @property
    def server_seq(self) -> int: ...
    @property
    def action(self) -> JSON: ...
    @property
    def origin(self) -> JSON | None: ...
    @property
    def kind(self) -> str: ...
    @property
    def changed(self) -> bool: ...
    @property
    def post(self) -> JSON | None: ...
    @property
    def at(self) -> str | None: ...
    @property
    def frame(self) -> str: ...


def _envelope(env: EnvelopeLike, action: JSON) -> JSON:
    out: JSON = {"channel": env.channel, "action": action, "serverSeq": env.server_seq}
    if env.origin is not None:
        out["origin"] = env.origin
    return out


def _frame(params: JSON) -> str:
    return orjson.dumps({"jsonrpc": "2.0", "method": "action", "params": params}).decode()


class Wire:
    """The 1.0 line: canonical shapes, with the 1.0 home for background work."""

    line: Line = V10
    version: str = "1.0.0"
    actions: ActionSet = ACTIONS_10
    methods: Mapping[str, type[WireModel]] = METHODS_V1
    #: 1.0: `chat/turnStarted` naming a known turn is a no-op (so it is accepted, not refused).
    idempotent_turns: bool = True
    #: The canonical action types whose form in this line is computed from the state they
    #: produced (the host keeps that state on their envelopes: `EnvelopeLike.post`).
    post_state: frozenset[str] = frozenset()

    # ── derived views ────────────────────────────────────────────────────────────────────────

    def observe(self, env: EnvelopeLike, before: JSON, after: JSON) -> None:
        """One applied envelope (``env.kind``, ``env.action``, ``env.at``: the host's time of
        it), with the channel's state ``before`` and ``after`` it. Called by the host for every
        envelope it applies, on every line, before any frame of it is made; 1.0 keeps nothing."""

    def forget(self, channel: str) -> None:
        """``channel`` is disposed: forget what this line derived of it."""

    # ── out ──────────────────────────────────────────────────────────────────────────────────

    def actions_for(self, env: EnvelopeLike) -> list[JSON]:
        """The actions a peer of this line receives for one canonical envelope."""
        action = env.action
        if action.get("type") == "session/metaChanged":
            meta = action.get("_meta")
            if isinstance(meta, dict) and BACKGROUND_META_KEY in meta:
                return [{**action, "_meta": _without(meta, BACKGROUND_META_KEY)}]
        return [action]

    def envelope_wires(self, env: EnvelopeLike) -> list[JSON]:
        """The ActionEnvelope params a peer of this line receives for ``env`` (0, 1 or more)."""
        return [_envelope(env, a) for a in self.actions_for(env)]

    def envelope_frames(self, env: EnvelopeLike) -> tuple[str, ...]:
        """The frames for ``env``; an action every line sends unchanged shares one encode."""
        sent = self.actions_for(env)
        if len(sent) == 1 and sent[0] is env.action:
            return (env.frame,)
        return tuple(_frame(_envelope(env, a)) for a in sent)

    def state(self, kind: str, state: JSON, *, channel: str) -> JSON:
        """The canonical state of ``channel`` (of ``kind``) as this line shows it."""
        if kind == "session":
            meta = state.get("_meta")
            if isinstance(meta, dict) and BACKGROUND_META_KEY in meta:
                return {**state, "_meta": _without(meta, BACKGROUND_META_KEY)}
        return state

    def summary(self, summary: JSON) -> JSON:
        """A SessionSummary (or partial summary) as this line shows it."""
        return summary

    def notification(self, method: str, params: JSON) -> JSON | None:
        """A protocol notification's params for this line, or None when it is not sent."""
        if method == "root/sessionAdded":
            return {**params, "summary": self.summary(params["summary"])}
        if method == "root/sessionSummaryChanged":
            changes = self.summary(params["changes"])
            return {**params, "changes": changes} if changes else None
        return params

    def initialize_result(self, result: JSON, meta: JSON) -> JSON:
        """``InitializeResult``: 0.9 added an opaque ``_meta`` of extension capabilities."""
        return {**result, "_meta": meta}

    def error_code(self, code: int) -> int:
        """1.0 removed ``ContentNotFound`` (-32006 stays reserved): a missing thing is NotFound."""
        return E.NOT_FOUND if code == E.CONTENT_NOT_FOUND else code

    # ── in ───────────────────────────────────────────────────────────────────────────────────

    def action_in(self, kind: str, action: JSON, channel: str) -> JSON:
        """The canonical form of a (valid) client action of this line."""
        return action

    def params_in(self, method: str, params: JSON) -> JSON:
        """The canonical form of (valid) request params of this line."""
        return params

    def may_dispatch(self, action_type: str) -> bool:
        return action_type in self.actions.dispatchable


class Wire09(Wire):
    """0.9: the 1.0 wire contract minus 1.0-only action types (see ``wire09``)."""

    line: Line = V09
    version = "0.9.0"
    actions = ACTIONS_09
    post_state = frozenset({"session/chatsReordered"})

    def actions_for(self, env: EnvelopeLike) -> list[JSON]:
        return wire09.down_actions(env.kind, env.action, changed=env.changed, post=env.post)

    def state(self, kind: str, state: JSON, *, channel: str) -> JSON:
        return wire09.down_state(kind, state)


class Wire07(Wire):
    """0.7.0, exactly as this host always spoke it (see ``wire07``).

    A 0.7 peer reduces what it is sent with the 0.7.0 reducers, and those hold two things the
    canonical (1.0) state does not; its snapshots must show the values its reducer would have
    reached, so this wire keeps them, derived from the envelopes it observes (they are no
    canonical state, so the store holds neither):

    * each session's status as 0.7 counts it: a ``toolClientExecution`` input is InputNeeded
      in 0.7 and not in 1.0 (``wire07.session_status``, from the status before and the action);
    * each chat's ``modifiedAt`` as 0.7.0's reducer stamped it with its clock: the host's time
      of the last action that is the chat's activity (``activity.chat_activity``), where 1.0
      derives it from the actions.

    A view starts from the state the channel was created with (the state before its first
    envelope, or, before any, the canonical one), so a 0.7 peer that reduces what it is sent
    from any snapshot with the 0.7.0 reducers (``reduce07``) ends where the next snapshot is.
    """

    line: Line = V07
    version = "0.7.0"
    actions = ACTIONS_07
    methods = METHODS
    idempotent_turns = False
    post_state = wire07.NEEDS_POST_STATE

    def __init__(self) -> None:
        #: Each session's status as 0.7 counts it (present once the session had an envelope).
        self._status: dict[str, int] = {}
        #: Each chat's 0.7 `modifiedAt`.
        self._modified_at = ActivityTimes()

    def actions_for(self, env: EnvelopeLike) -> list[JSON]:
        return wire07.down_actions(env.kind, env.action, changed=env.changed, post=env.post)

    def observe(self, env: EnvelopeLike, before: JSON, after: JSON) -> None:
        if env.kind == "session":
            previous = self._status.get(env.channel)
            if previous is None:
                previous = before.get("status", 0)
            self._status[env.channel] = wire07.session_status(previous, env.action, after)
        elif env.kind == "chat":
            self._modified_at.observe(env.channel, before, env.action, env.changed, env.at)

    def forget(self, channel: str) -> None:
        self._status.pop(channel, None)
        self._modified_at.forget(channel)

    def state(self, kind: str, state: JSON, *, channel: str) -> JSON:
        if kind == "session":
            status = self._status.get(channel)
            if status is None:
                status = state.get("status", 0)
            return wire07.down_state(kind, state, session_status=status)
        shown = wire07.down_state(kind, state)
        if kind == "chat":
            modified_at = self._modified_at.at(channel, state)
            if modified_at is not None:
                shown = {**shown, "modifiedAt": modified_at}
        return shown

    def summary(self, summary: JSON) -> JSON:
        return wire07.down_summary(summary)

    def notification(self, method: str, params: JSON) -> JSON | None:
        if method == "auth/required":
            # Our 0.7.0 defines no such notification (the release's carries only the resource
            # id): a 0.7 peer learns of a lost sign-in from `root/agentsChanged`.
            return None
        return super().notification(method, params)

    def initialize_result(self, result: JSON, meta: JSON) -> JSON:
        return result

    def error_code(self, code: int) -> int:
        return code

    def action_in(self, kind: str, action: JSON, channel: str) -> JSON:
        return wire07.up_action(kind, action, channel=channel)

    def params_in(self, method: str, params: JSON) -> JSON:
        return wire07.up_params(method, params)


def _without(d: Mapping[str, Any], key: str) -> JSON:
    return {k: v for k, v in d.items() if k != key}


def wires() -> dict[Line, Wire]:
    """A host's wires, one per line, each shared by every connection of the host that
    negotiated it (a host makes its own: the 0.7 wire keeps that host's views)."""
    return {V10: Wire(), V09: Wire09(), V07: Wire07()}
