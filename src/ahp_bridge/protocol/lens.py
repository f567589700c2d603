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
any line). Only 0.8 (``Wire08``: chats' clock-stamped ``modifiedAt``) and 0.7 (``Wire07``:
sessions' status as 0.7 counts it) keep any. So the wires are the host's: each host makes its
own (``wires()``), and two hosts in one process never share a view.

The 1.0 line is the canonical state as it is, except that the provider's background tasks live
in ``chat/backgroundWork*`` and not in session ``_meta`` (the bridge keeps the ``_meta`` copy for
the lines that have no typed home for them). The older lines are a chain, each a step from the
next newer one: 0.9 (``wire09``) from 1.0, then 0.8 (``wire08``), 0.7 (``wire07``), 0.6
(``wire06``). A VS Code "0.10.0" peer is on the 1.0 line (``versions``).
"""

from __future__ import annotations

import operator
from collections.abc import Mapping
from types import ModuleType
from typing import Any, Final, Generic, Protocol, TypeVar

import orjson

from ahp_bridge.protocol import actions_v06, actions_v08, wire06, wire07, wire08, wire09
from ahp_bridge.protocol import errors as E
from ahp_bridge.protocol import params as params_module
from ahp_bridge.protocol.actions import ACTIONS_07, ActionSet
from ahp_bridge.protocol.actions_v1 import ACTIONS_09, ACTIONS_10
from ahp_bridge.protocol.activity import ActivityTimes
from ahp_bridge.protocol.base import WireModel
from ahp_bridge.protocol.params import METHODS, METHODS_V1
from ahp_bridge.protocol.reduce_older import (
    LINE_06,
    LINE_07,
    LINE_08,
    CanonicalReducer,
    OlderLine,
    reduce_older,
)
from ahp_bridge.protocol.versions import V06, V07, V08, V09, V10, Line

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
    def frames(self, wire: Wire) -> tuple[str, ...]:
        """The frames ``wire``'s line receives for it (computed once per line, then cached)."""
        ...


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

    # ── a peer's side ────────────────────────────────────────────────────────────────────────

    def reduce(
        self,
        kind: str,
        state: JSON,
        action: JSON,
        *,
        now: str,
        canonical: CanonicalReducer,
        channel: str = "",
    ) -> JSON:
        """What a peer of this line holds after reducing ``action`` (as this line sends it) on
        ``state`` (of this line) with its version's reducers; ``canonical`` is the 1.0 reducer
        (``state/``'s), ``now`` the peer's clock, which the lines before 0.9 read."""
        return canonical(kind, state, action)


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


T = TypeVar("T")


class _BuiltLater(Generic[T]):
    """A line's actions or params that its module builds when first asked for (PEP 562
    ``__getattr__``: the 0.6 and 0.8 lines, whose models are built for their first peer, not as
    every bridge starts), so the wire class reads them at each use, not when it is made."""

    def __init__(self, module: ModuleType, name: str) -> None:
        self._module = module
        self._name = name

    def __get__(self, wire: object, owner: type | None = None) -> T:
        built: T = getattr(self._module, self._name)
        return built


class _Older(Wire):
    """A line before 0.9: one step down from ``parent``, the host's wire of the next newer line
    (0.8 from 0.9, 0.7 from 0.8, 0.6 from 0.7), so each line holds only what its own step
    needs and shares its parent's views (the parent is in the host's ``wires()``, fed by the
    fan-out). An envelope a step leaves alone shares the parent line's frames: one encode for
    every line it reaches unchanged.

    These lines' reducers read a clock and restart a known turn, and their peers reduce what
    they are sent with ``reduce_older``'s path for the line (:attr:`reducer`).
    """

    idempotent_turns = False
    reducer: OlderLine
    #: The action types this line's step passes as they are (its module's ``PASSED``).
    passes: frozenset[str] = frozenset()

    def __init__(self, parent: Wire) -> None:
        self.parent = parent
        #: The last envelope shaped, and its actions in this line: the fan-out shapes one
        #: envelope for every line in use before the next, and each older line asks its
        #: parent's, so each step runs once per envelope, not once per line below it.
        self._last: tuple[EnvelopeLike | None, list[JSON]] = (None, [])

    def step(self, env: EnvelopeLike, action: JSON) -> list[JSON]:
        """The actions of this line for one action ``parent`` sends for ``env``."""
        return [action]

    def actions_for(self, env: EnvelopeLike) -> list[JSON]:
        last, sent = self._last
        if last is not env:
            above = self.parent.actions_for(env)
            if len(above) == 1 and above[0].get("type") in self.passes:
                sent = above
            else:
                sent = wire08.chain(above, lambda a: self.step(env, a))
            self._last = (env, sent)
        return sent

    def envelope_frames(self, env: EnvelopeLike) -> tuple[str, ...]:
        sent = self.actions_for(env)
        if len(sent) == 1 and sent[0] is env.action:  # as canonical: every such line's encode
            return (env.frame,)
        above = self.parent.actions_for(env)
        if len(sent) == len(above) and all(map(operator.is_, sent, above)):
            return env.frames(self.parent)  # this step changed nothing: the parent's encode
        return tuple(_frame(_envelope(env, a)) for a in sent)

    def state(self, kind: str, state: JSON, *, channel: str) -> JSON:
        return self.parent.state(kind, state, channel=channel)

    def summary(self, summary: JSON) -> JSON:
        return self.parent.summary(summary)

    def initialize_result(self, result: JSON, meta: JSON) -> JSON:
        return result  # `_meta` is 0.9's

    def error_code(self, code: int) -> int:
        return code  # ContentNotFound is gone only from 1.0

    def action_in(self, kind: str, action: JSON, channel: str) -> JSON:
        return self.parent.action_in(kind, action, channel)

    def params_in(self, method: str, params: JSON) -> JSON:
        return self.parent.params_in(method, params)

    def reduce(
        self,
        kind: str,
        state: JSON,
        action: JSON,
        *,
        now: str,
        canonical: CanonicalReducer,
        channel: str = "",
    ) -> JSON:
        return reduce_older(
            self.reducer, kind, state, action, now=now, canonical=canonical, channel=channel
        )


class Wire08(_Older):
    """0.8.0, the spec/v0.8.0 release (see ``wire08``), one step from 0.9.

    A 0.8 peer's reducer (0.8.0's, like 0.7.0's and 0.6.0's) stamps a chat's ``modifiedAt``
    with its clock on the actions that are the chat's activity (``activity.chat_activity``),
    where 0.9 derives it from the actions; its snapshots must show the value its reducer
    would have reached, so this wire keeps the host's time of each chat's last activity, fed
    by the envelopes it observes (it is no canonical state, so the store holds none). A view
    starts from the state the channel was created with (the state before its first envelope,
    or, before any, the canonical one). 0.7 and 0.6 show it too, through their parents.
    """

    line: Line = V08
    version = "0.8.0"
    post_state = wire08.NEEDS_POST_STATE
    reducer = LINE_08
    passes = wire08.PASSED

    actions = _BuiltLater[ActionSet](actions_v08, "ACTIONS_08")
    methods = _BuiltLater[Mapping[str, type[WireModel]]](params_module, "METHODS_V08")

    def __init__(self, parent: Wire) -> None:
        super().__init__(parent)
        #: Each chat's `modifiedAt` as 0.8.0's reducer stamped it.
        self._modified_at = ActivityTimes()

    def step(self, env: EnvelopeLike, action: JSON) -> list[JSON]:
        return wire08.step_actions(action, changed=env.changed, post=env.post)

    def observe(self, env: EnvelopeLike, before: JSON, after: JSON) -> None:
        if env.kind == "chat":
            self._modified_at.observe(env.channel, before, env.action, env.changed, env.at)

    def forget(self, channel: str) -> None:
        self._modified_at.forget(channel)

    def state(self, kind: str, state: JSON, *, channel: str) -> JSON:
        shown = wire08.step_state(kind, self.parent.state(kind, state, channel=channel))
        if kind == "chat":
            modified_at = self._modified_at.at(channel, state)
            if modified_at is not None:
                shown = {**shown, "modifiedAt": modified_at}
        return shown

    def summary(self, summary: JSON) -> JSON:
        return wire08.step_summary(self.parent.summary(summary))

    def action_in(self, kind: str, action: JSON, channel: str) -> JSON:
        return self.parent.action_in(kind, wire08.up_action(kind, action, channel=channel), channel)

    def params_in(self, method: str, params: JSON) -> JSON:
        return self.parent.params_in(method, wire08.up_params(method, params))


class Wire07(_Older):
    """0.7.0, exactly as this host always spoke it (see ``wire07``), one step from 0.8.

    A 0.7 peer reduces what it is sent with the 0.7.0 reducers, which count a
    ``toolClientExecution`` input as InputNeeded where 0.8 and 1.0 do not; its snapshots must
    show the status its reducer would have reached, so this wire keeps each session's status
    as 0.7 counts it (``wire07.session_status``, from the status before and the action),
    derived from the envelopes it observes (no canonical state: the store holds none). A view
    starts from the state the channel was created with, so a 0.7 peer that reduces what it is
    sent from any snapshot with the 0.7.0 reducers (``reduce_07``) ends where the next
    snapshot is. Its chats' clock-stamped ``modifiedAt`` is 0.8's view (``Wire08``).
    """

    line: Line = V07
    version = "0.7.0"
    actions = ACTIONS_07
    methods = METHODS
    post_state = wire07.NEEDS_POST_STATE
    reducer = LINE_07
    passes = wire07.PASSED

    def __init__(self, parent: Wire) -> None:
        super().__init__(parent)
        #: Each session's status as 0.7 counts it (present once the session had an envelope).
        self._status: dict[str, int] = {}

    def step(self, env: EnvelopeLike, action: JSON) -> list[JSON]:
        return wire07.step_actions(action, changed=env.changed, post=env.post)

    def observe(self, env: EnvelopeLike, before: JSON, after: JSON) -> None:
        if env.kind == "session":
            previous = self._status.get(env.channel)
            if previous is None:
                previous = before.get("status", 0)
            self._status[env.channel] = wire07.session_status(previous, env.action, after)

    def forget(self, channel: str) -> None:
        self._status.pop(channel, None)

    def session_status(self, channel: str, state: JSON) -> int | None:
        """The status a 0.7.0 reducer holds for the session ``channel`` (in ``state``)."""
        status = self._status.get(channel)
        return status if status is not None else state.get("status")

    def state(self, kind: str, state: JSON, *, channel: str) -> JSON:
        shown = self.parent.state(kind, state, channel=channel)
        if kind == "session":
            status = self.session_status(channel, state)
            return wire07.step_state(kind, shown, session_status=status)
        return wire07.step_state(kind, shown)

    def notification(self, method: str, params: JSON) -> JSON | None:
        if method == "auth/required":
            # Our 0.7.0 defines no such notification (the release's carries only the resource
            # id): a 0.7 peer learns of a lost sign-in from `root/agentsChanged`.
            return None
        return super().notification(method, params)

    def action_in(self, kind: str, action: JSON, channel: str) -> JSON:
        return self.parent.action_in(kind, wire07.lift_action(kind, action), channel)

    def params_in(self, method: str, params: JSON) -> JSON:
        return self.parent.params_in(method, wire07.lift_params(method, params))


class Wire06(_Older):
    """0.6.0, the release (see ``wire06``), one step from 0.7: 0.7's views are its own (a 0.6
    reducer counts client executions and stamps its clock as 0.7's does), so it keeps none."""

    line: Line = V06
    version = "0.6.0"
    post_state = wire07.NEEDS_POST_STATE
    reducer = LINE_06
    passes = wire06.PASSED

    actions = _BuiltLater[ActionSet](actions_v06, "ACTIONS_06")
    methods = _BuiltLater[Mapping[str, type[WireModel]]](params_module, "METHODS_V06")

    def step(self, env: EnvelopeLike, action: JSON) -> list[JSON]:
        return wire06.step_actions(action)

    def state(self, kind: str, state: JSON, *, channel: str) -> JSON:
        return wire06.step_state(kind, self.parent.state(kind, state, channel=channel))

    def summary(self, summary: JSON) -> JSON:
        return wire06.step_summary(self.parent.summary(summary))

    def notification(self, method: str, params: JSON) -> JSON | None:
        if method == "auth/required":  # 0.6.0 has it (0.7's snapshot does not), with a string
            return wire06.notification(method, params)
        return super().notification(method, params)

    def action_in(self, kind: str, action: JSON, channel: str) -> JSON:
        return self.parent.action_in(kind, wire06.lift_action(kind, action), channel)

    def params_in(self, method: str, params: JSON) -> JSON:
        return self.parent.params_in(method, wire06.lift_params(method, params))


def _without(d: Mapping[str, Any], key: str) -> JSON:
    return {k: v for k, v in d.items() if k != key}


def wires() -> dict[Line, Wire]:
    """A host's wires, one per line, newest first, each shared by every connection of the host
    that negotiated it (a host makes its own: the 0.8 and 0.7 wires keep that host's views),
    each older one a step from the next newer one."""
    v09 = Wire09()
    v08 = Wire08(v09)
    v07 = Wire07(v08)
    return {V10: Wire(), V09: v09, V08: v08, V07: v07, V06: Wire06(v07)}
