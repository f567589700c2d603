"""agentapi Events -> AHP actions, as a small sans-IO state machine per chat.

The mapping needs memory (agentapi turns carry no id, deltas name items not parts, tool calls
and interactions are upserts), so ``EventTranslator`` keeps a mirror of exactly what it emitted:
the active turn, the open text part, every tool call's AHP status and the pending interactions.
It never reads a clock and never invents ids itself: the caller injects ``new_id`` and
``now_ms``. The host applies the returned ``(channel, action)`` pairs in order through the store,
and feeds every accepted client action to ``observe_client_action`` so the mirror stays true.

Every Event kind of the contract, and where it goes:

================  ==========================================================================
Event kind        AHP
================  ==========================================================================
turn working      ``chat/turnStarted`` (host-originated, ``_meta`` marks it) unless the host
                  already started the turn for a client (``turn_started_by_client``). Its
                  message is the main agent's user item, whether it came just before or after
                  ``working``; the start waits for it until the turn's first action in the chat
                  (content, a request, its end), else goes out with an empty message of origin
                  ``agent``. ``active_turn_id`` is set meanwhile: the host should treat the
                  chat as busy from ``working`` on
turn completed    ``chat/turnComplete`` ; cancelled: ``chat/turnCancelled`` ; failed:
                  ``chat/error`` with an error part ``{errorType:"turnFailed"}``; duration =
                  now - start in ms; the
                  reason, model and completion receipt in ``_meta``. Then
                  ``session/inputNeededRemoved`` for every interaction still pending and a
                  cleared ``chat/activityChanged`` when an activity was shown
item assistant    ``chat/responsePart`` markdown (first text), then ``chat/delta``
item reasoning    ``chat/responsePart`` reasoning, then ``chat/reasoning``
delta             as the item of its kind; only assistant and reasoning stream (tool, notice
                  and user deltas have no streaming form in AHP 0.7.0 and are dropped)
item tool         ``chat/toolCallStart`` once; ``chat/toolCallReady{confirmed:"not-needed"}``
                  when it runs; ``chat/toolCallComplete{result}`` when completed/failed (output
                  as text content, images as embedded content up to 1 MiB per result, exit code
                  as ``error.code``, file edits as ``fileEdit`` contents from the host's
                  ``file_edits`` hook, and also listed with omitted images in ``_meta``).
                  Progress and output tail updates of a running call are dropped (live only).
                  A call of a client's tool (``set_client_tools``) starts with ``contributor
                  {kind:"client"}`` and is ready only once the host waits for that client
                  (``client_call``: ready + ``session/inputNeededSet{kind:
                  "toolClientExecution"}``); the client's ``chat/toolCallComplete`` ends it
item notice       ``chat/responsePart`` systemNotification (once per item id)
item user         not a part: AHP carries the user's text as the turn's message (client turns)
                  and steering as pending messages the host manages. A main-agent user item
                  seen while no turn runs seeds the message of the next provider-started turn
interaction       permission pending: ``chat/toolCallStart`` when its tool call is unknown,
                  ``chat/toolCallReady`` without ``confirmed`` with the provider's options (an
                  assisted review as ``riskAssessment``: approve = safety 1, requireApproval =
                  0), then ``session/inputNeededSet{kind:"toolConfirmation"}``. question/plan review
                  pending: ``chat/inputRequested`` + ``session/inputNeededSet{kind:"chatInput"}``.
                  answered/rejected/expired: the resolution a client did not give here, then
                  ``session/inputNeededRemoved``. Questions: ``chat/inputCompleted`` accept /
                  decline / cancel. Permissions: ``chat/toolCallConfirmed`` approved (or denied
                  when rejected or the resolution names a reject option); expired says nothing
                  about the decision, so ``chat/toolCallReady{confirmed:"setting"}`` only
                  leaves pending-confirmation and the tool's own end settles it
subagent          ``subagent`` tool result content on its parent tool call:
                  ``chat/toolCallContentChanged`` while the call runs, else kept for its
                  ``chat/toolCallComplete``; once per subagent
exit              ``chat/error`` part ``{errorType:"providerExit"}``, ``resumable`` (the next
                  prompt or ``chat/turnResume`` reopens it), for a running turn (detached:
                  ``chat/turnCancelled``, the provider already ended it as cancelled)
title             ``session/titleChanged`` + ``session/chatUpdated{title}`` (cleaned, deduped)
usage             ``chat/usage`` with ``_meta["ahpBridge.aiUnits"]`` (the conversation's total)
                  while a turn runs, and always session ``_meta["ahpBridge.usage"]``
tokens            ``chat/usage``: the turn's token counts summed over its model calls
activity          ``chat/activityChanged`` + ``session/chatUpdated{activity}`` (intent, else a
                  retry note), only when the text changes
compaction        the same activity text, "Compacting conversation", while it holds the turn
background_tasks  session ``_meta`` ``ahpBridge.backgroundTasks`` (what 0.7 and 0.9 peers see),
                  and each running shell as ``chat/backgroundWorkSet{kind:"shell"}`` until it
                  stops (``chat/backgroundWorkRemoved``): its typed 1.0 home (the 1.0 wire drops
                  the ``_meta`` copy). Background subagents likewise, ``kind:"subagent"``
context, todos,   session ``_meta`` under ``ahpBridge.<name>`` via ``session/metaChanged``
background_tasks, (AHP 0.7.0 has no typed home for them; the translator owns the session's
schedules,        ``_meta`` and sends the whole object, since the reducer replaces it)
execution,
model_selection
mcp_status        dropped here: the host makes the servers typed session customizations
                  (``mcpServer``, ``session/mcpServerStateChanged``; host/customizations.py)
plan_path         dropped: a provider-private scratch path used for project-change exclusion,
                  never shown to a user and no read permission
skill             dropped: skill loads are not transcript items in agentapi, and AHP 0.7.0's
                  customizations belong to the session's configuration, not to a turn
================  ==========================================================================

Subagents: items, deltas and interactions whose ``agent_id`` is not empty never enter the main
transcript. The one exception is a permission a subagent asks for: it must be answerable, so it
becomes a tool call (id ``<agent_id>/<tool_call_id>``, ``_meta["ahpBridge.agentId"]``) that the
subagent's own tool item then completes. A subagent is visible in the main chat only as the
``subagent`` content of the tool call that spawned it, pointing at its read-only chat
``subagent_chat_uri(agent_id)``; that chat's live turns come from a translator in subagent mode
(below) and its recorded ones from ``history.turns_from_history(..., agent_id=...)``.

Subagent chats: ``EventTranslator(..., agent_id=X)`` builds the read-only chat of subagent X
from the same event stream (the host creates that chat at ``subagent_chat_uri(X)``, with origin
``{kind:"tool", toolCallId}`` of its parent tool call). It takes only X's items and deltas (the
same table as above), X's nested subagents (as content of X's tool calls) and ``exit``. X's runs
are its turns: subagent ``running`` starts one (its message is X's own user item, the prompt the
spawning agent gave it, origin ``agent``; ``user`` for a follow-up the user sent), ``completed``
or ``idle`` completes it, ``failed`` is ``chat/error`` part ``{errorType:"subagentFailed"}``,
``cancelled`` is ``chat/turnCancelled``. Main-agent turns, interactions (they are answered in
the main chat) and conversation-level events are not its business.

Content that arrives while no turn is active is dropped (AHP 0.7.0 has no place for response
parts outside a turn); providers report ``working`` first (see the Go contract). After a client
cancelled a turn, the provider's late end of that turn and its late content are recognised and
dropped until the provider reports ``working`` again, even when the client has started the next
turn meanwhile; when the client cancelled before the provider reported ``working``, that late
``working`` is the cancelled turn's own and is dropped too (the host calls ``turn_not_sent``
when it never sent it). After ``fail_turn`` (a send that failed), a provider that did start the turn
after all shows it as a provider-started turn.
"""

from __future__ import annotations

import base64
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ahp_bridge.agentapi import (
    DELIVERY_AUTOPILOT,
    DELIVERY_STEER,
    SUBAGENT_TRIGGER_SPAWN,
    SUBAGENT_TRIGGER_USER,
    Activity,
    Event,
    EventKind,
    FileEdit,
    Interaction,
    InteractionKind,
    InteractionState,
    Item,
    ItemKind,
    Option,
    Subagent,
    SubagentStatus,
    ToolStatus,
    TurnState,
)

from .._parts import MAX_RESULT_IMAGE_BYTES, default_subagent_uri, subagent_ref, tool_result
from .._wire import META_PREFIX, Action, Emitted, clean_line, drop_none, error_part, iso_from_ms
from ..host_tools import execution_input_id
from ..questions import input_request

__all__ = ["MAX_RESULT_IMAGE_BYTES", "EventTranslator", "confirmation_options"]

_META_EVENTS: dict[EventKind, tuple[str, str]] = {
    EventKind.CONTEXT: ("context", "context"),
    EventKind.TODOS: ("todos", "todos"),
    EventKind.BACKGROUND_TASKS: ("background_tasks", "backgroundTasks"),
    EventKind.SCHEDULES: ("schedules", "schedules"),
    EventKind.EXECUTION: ("execution", "execution"),
    EventKind.MODEL_SELECTION: ("model_selection", "modelSelection"),
    EventKind.USAGE: ("usage", "usage"),
}
"""Event kinds carried in session ``_meta``: payload attribute and ``_meta`` key suffix."""

_TERMINAL_TOOL = frozenset({"completed", "cancelled"})


def confirmation_options(options: list[Option]) -> list[dict[str, Any]]:
    """AHP ``ConfirmationOption``s for the provider's permission options, in its order.

    Each provider option stays its own AHP option (so allow-once and allow-for-session remain
    distinct choices); approvals are group 0 and denials group 1, so clients may separate them.
    """
    return [
        {
            "id": option.id,
            "label": option.label,
            "kind": "deny" if option.reject else "approve",
            "group": 1 if option.reject else 0,
        }
        for option in options
    ]


@dataclass
class _Tool:
    """What the translator emitted for one tool call (mirrors the reducer's status)."""

    call_id: str
    base: dict[str, Any]
    status: str = "streaming"
    invocation: str = ""
    tool_input: str | None = None
    content: list[dict[str, Any]] = field(default_factory=list)
    interaction: str | None = None


@dataclass
class _Turn:
    id: str
    started_ms: int
    confirmed: bool
    announced: bool = True
    open_key: tuple[str, str] | None = None
    open_part: str = ""
    text: dict[tuple[str, str], list[str]] = field(default_factory=dict)
    """The text emitted per (kind, item id), as chunks: joined only when a whole item comes."""
    tools: dict[tuple[str, str], _Tool] = field(default_factory=dict)
    by_call: dict[str, _Tool] = field(default_factory=dict)
    notices: set[str] = field(default_factory=set)
    usage: dict[str, Any] = field(default_factory=dict)


@dataclass
class _Pending:
    interaction: Interaction
    input_id: str
    tool_key: tuple[str, str] | None = None


class EventTranslator:
    """Translate one conversation's agentapi Events into actions for one AHP chat.

    ``new_id`` makes ids for provider-started turns and response parts; ``now_ms`` is the
    producer's clock in epoch milliseconds (turn start stamps and durations). Both are injected
    so the translation is deterministic and testable.

    With ``agent_id`` set, the translator builds the read-only chat of that one subagent from
    the same event stream instead (see "Subagent chats" in the module docstring).
    """

    def __init__(
        self,
        chat_uri: str,
        session_uri: str,
        new_id: Callable[[], str],
        now_ms: Callable[[], int],
        *,
        subagent_chat_uri: Callable[[str], str] | None = None,
        agent_id: str = "",
        file_edits: Callable[[str, list[FileEdit]], list[dict[str, Any]]] | None = None,
    ) -> None:
        self.chat_uri = chat_uri
        self._file_edits = file_edits
        """(turn id, a completed call's edits) -> its ``fileEdit`` contents (the host's)."""
        self.user_items: dict[str, str] = {}
        """AHP turn id -> the provider's id of the user item that started it (for rewinds)."""
        self.agent_id = agent_id
        self.session_uri = session_uri
        self._new_id = new_id
        self._now_ms = now_ms
        self._subagent_chat_uri = subagent_chat_uri or self._default_subagent_uri
        self._turn: _Turn | None = None
        self._stale_ends = 0
        self._ghost = False
        """A client cancelled a turn before its ``working``: that ``working`` starts nothing."""
        self._seed: Item | None = None
        self._pending: dict[str, _Pending] = {}
        self._subagents: set[str] = set()
        self._orphans: dict[str, list[dict[str, Any]]] = {}
        self._title = ""
        self._activity: Activity | None = None
        self._compacting = False
        self._activity_text = ""
        self._meta: dict[str, Any] = {}
        self._background: dict[str, dict[str, Any]] = {}
        """The chat's background work (AHP 1.0 ``ChatState.backgroundWork``) as emitted."""
        self._run_by_user: bool | None = None  # subagent chats: who started the current run
        self._client_tools: dict[str, tuple[str, str]] = {}
        """Client tools registered in the conversation: name -> (client id, display name)."""
        self._executions: dict[str, str] = {}
        """Client tool calls waiting for their client: AHP toolCallId -> session input id."""
        self._handlers: dict[EventKind, Callable[[Event], list[Emitted]]] = {
            EventKind.TURN: self._on_turn,
            EventKind.ITEM: self._on_item,
            EventKind.DELTA: self._on_delta,
            EventKind.INTERACTION: self._on_interaction,
            EventKind.SUBAGENT: self._on_subagent,
            EventKind.EXIT: self._on_exit,
            EventKind.TITLE: self._on_title,
            EventKind.USAGE: self._on_usage,
            EventKind.TOKENS: self._on_tokens,
            EventKind.ACTIVITY: self._on_activity,
            EventKind.COMPACTION: self._on_compaction,
            EventKind.PLAN_PATH: self._dropped,
            EventKind.SKILL: self._dropped,
            EventKind.MCP_STATUS: self._dropped,
        }
        self._handlers[EventKind.BACKGROUND_TASKS] = self._on_background_tasks
        for kind in _META_EVENTS:
            self._handlers.setdefault(kind, self._on_meta)

    # ----------------------------------------------------------------- queries for the host

    @property
    def active_turn_id(self) -> str | None:
        """The AHP id of the turn the translator considers running, if any."""
        return self._turn.id if self._turn is not None else None

    def pending_permissions(self) -> dict[str, Interaction]:
        """Pending permission interactions keyed by the AHP ``toolCallId`` they confirm."""
        out: dict[str, Interaction] = {}
        turn = self._turn
        for pending in self._pending.values():
            if turn is not None and pending.tool_key is not None:
                tool = turn.tools.get(pending.tool_key)
                if tool is not None:
                    out[tool.call_id] = pending.interaction
        return out

    def client_executions(self) -> frozenset[str]:
        """AHP ``toolCallId``s of the client tool calls waiting for their client's result."""
        return frozenset(self._executions)

    def pending_inputs(self) -> dict[str, Interaction]:
        """Pending question and plan-review interactions keyed by AHP input ``requestId``."""
        return {
            key: pending.interaction
            for key, pending in self._pending.items()
            if pending.tool_key is None
        }

    # ----------------------------------------------------------------- host-side turn changes

    def turn_started_by_client(self, turn_id: str, started_at_ms: int) -> None:
        """Record that the host applied a ``chat/turnStarted`` (client's or from the queue).

        The provider's next ``working`` confirms this turn instead of starting another one.
        """
        self._turn = _Turn(id=turn_id, started_ms=started_at_ms, confirmed=False)
        self._seed = None

    def turn_not_sent(self) -> None:
        """The host never sent a turn a client cancelled first: expect nothing of it."""
        self._ghost = False
        self._stale_ends = max(0, self._stale_ends - 1)

    def fail_turn(self, error_type: str, message: str) -> list[Emitted]:
        """End the active turn with ``chat/error``, e.g. when ``send`` failed after acceptance."""
        if self._turn is None:
            return []
        return self._end_turn("chat/error", {"part": error_part(error_type, message)})

    def observe_client_action(self, action: Mapping[str, Any]) -> list[Emitted]:
        """Keep the mirror true after the host applied a client's action; returns follow-ups.

        The follow-ups are host actions the client's action implies, such as
        ``session/inputNeededRemoved`` once a tool call is confirmed or an input completed.
        """
        kind = action.get("type")
        if kind == "chat/turnStarted":
            self.turn_started_by_client(str(action["turnId"]), self._now_ms())
            return []
        if kind == "chat/turnCancelled":
            turn = self._turn
            if turn is None or turn.id != action.get("turnId"):
                return []
            self._stale_ends += 1
            self._ghost = self._ghost or not turn.confirmed
            self._turn = None
            return self._clear_pending() + self._clear_activity()
        if kind == "chat/toolCallConfirmed":
            return self._client_confirmed(action)
        if kind in ("chat/toolCallComplete", "chat/toolCallResultConfirmed"):
            return self._client_finished(action)
        if kind == "chat/inputCompleted":
            pending = self._pending.pop(str(action.get("requestId")), None)
            return [] if pending is None else [self._removed(pending)]
        if kind == "session/titleChanged":
            title = str(action.get("title", ""))
            if not clean_line(title):
                return []
            self._title = clean_line(title)
            # the catalog entry follows a rename as it follows the provider, word for word
            changes = {"chat": self.chat_uri, "changes": {"title": title}}
            return [self._session({"type": "session/chatUpdated", **changes})]
        return []

    def _client_confirmed(self, action: Mapping[str, Any]) -> list[Emitted]:
        turn = self._turn
        if turn is None or turn.id != action.get("turnId"):
            return []
        tool = turn.by_call.get(str(action.get("toolCallId")))
        if tool is None or tool.status != "pending-confirmation":
            return []
        tool.status = "running" if action.get("approved") is True else "cancelled"
        pending = self._pending.pop(tool.interaction or "", None)
        tool.interaction = None
        return [] if pending is None else [self._removed(pending)]

    # ----------------------------------------------------------------- client tools

    def set_client_tools(self, owners: Mapping[str, tuple[str, str]]) -> None:
        """The client tools the conversation registers: name -> (client id, display name)."""
        self._client_tools = dict(owners)

    def client_call(
        self, call_id: str, name: str, agent_id: str, tool_input: str
    ) -> tuple[list[Emitted], str]:
        """A provider's host tool call: the running tool call its client is asked to run.

        Returns the actions and "" when the client is now waited for, or a reason the call
        cannot reach its client (no turn, an unknown tool, a call that already ended).
        """
        turn = self._content_turn()
        owner = self._client_tools.get(name)
        if turn is None:
            return [], "no turn is running in the chat"
        if owner is None:
            return [], f"no client tool named {name!r} is registered"
        client_id, display = owner
        key = (agent_id, call_id)
        tool = turn.tools.get(key)
        out: list[Emitted] = []
        if tool is None:
            tool = self._new_tool(turn, key, name, display, invocation=display)
            tool.base["contributor"] = {"kind": "client", "clientId": client_id}
            out += self._start_tool(turn, tool)
        if tool.base.get("contributor") != {"kind": "client", "clientId": client_id}:
            return out, "the tool call was shown before its client tool was registered"
        if tool_input:
            tool.tool_input = tool_input
        if tool.status == "streaming":
            out.append(self._ready(turn, tool, confirmed="not-needed"))
            tool.status = "running"
        if tool.status != "running":
            return out, f"the tool call is already {tool.status}"
        if tool.call_id in self._executions:
            return out, ""
        input_id = execution_input_id(self.chat_uri, tool.call_id)
        self._executions[tool.call_id] = input_id
        state = drop_none(
            {
                **tool.base,
                "status": "running",
                "invocationMessage": tool.invocation,
                "toolInput": tool.tool_input,
                "confirmed": "not-needed",
            }
        )
        request = {
            "kind": "toolClientExecution",
            "id": input_id,
            "chat": self.chat_uri,
            "turnId": turn.id,
            "clientId": client_id,
            "toolCall": state,
        }
        out.append(self._session({"type": "session/inputNeededSet", "request": request}))
        return out, ""

    def client_call_failed(self, tool_call_id: str, result: Mapping[str, Any]) -> list[Emitted]:
        """End a client tool call on the host's side (timeout, the client left, a cancel)."""
        out: list[Emitted] = []
        turn = self._turn
        tool = turn.by_call.get(tool_call_id) if turn is not None else None
        if turn is not None and tool is not None and tool.status == "running":
            tool.status = "completed"
            complete = {"type": "chat/toolCallComplete", "turnId": turn.id}
            out.append(self._chat({**complete, "toolCallId": tool_call_id, "result": result}))
        input_id = self._executions.pop(tool_call_id, None)
        if input_id is not None:
            out.append(self._input_removed(input_id))
        return out

    def _client_finished(self, action: Mapping[str, Any]) -> list[Emitted]:
        """The client completed its tool call (or a person confirmed its result)."""
        turn = self._turn
        call_id = str(action.get("toolCallId"))
        tool = turn.by_call.get(call_id) if turn is not None else None
        if tool is not None and action.get("type") == "chat/toolCallResultConfirmed":
            if tool.status == "pending-result-confirmation":
                tool.status = "completed" if action.get("approved") is True else "cancelled"
            return []
        if tool is not None and tool.status == "running":
            confirm = action.get("requiresResultConfirmation") is True
            tool.status = "pending-result-confirmation" if confirm else "completed"
        input_id = self._executions.pop(call_id, None)
        if input_id is None:
            return []
        return [self._input_removed(input_id)]

    def set_session_meta(self, key: str, value: Any) -> list[Emitted]:
        """Put one host-owned key into session ``_meta`` (sent whole: the reducer replaces it)."""
        if self._meta.get(key) == value:
            return []
        if value is None:
            self._meta.pop(key, None)
        else:
            self._meta[key] = value
        return [self._session({"type": "session/metaChanged", "_meta": dict(self._meta)})]

    # ----------------------------------------------------------------- the table

    def translate(self, event: Event) -> list[Emitted]:
        """The actions, in order, that one provider event becomes (often none)."""
        if self.agent_id and not self._concerns_subagent(event):
            return []
        turn = self._turn
        unannounced = turn if turn is not None and not turn.announced else None
        if unannounced is not None:
            item = event.item if event.kind == EventKind.ITEM else None
            if item is not None and item.kind == ItemKind.USER and item.agent_id == self.agent_id:
                return self._announce(unannounced, item)
        handler = self._handlers.get(event.kind)
        out = handler(event) if handler is not None else []
        if unannounced is not None and any(channel == self.chat_uri for channel, _ in out):
            out = self._announce(unannounced, None) + out
        return out

    def _dropped(self, event: Event) -> list[Emitted]:
        return []

    def _concerns_subagent(self, event: Event) -> bool:
        """In a subagent chat: its own items and lifecycle, its children, and the runtime's exit."""
        if event.kind == EventKind.ITEM and event.item is not None:
            return event.item.agent_id == self.agent_id
        if event.kind == EventKind.DELTA and event.delta is not None:
            return event.delta.agent_id == self.agent_id
        if event.kind == EventKind.SUBAGENT and event.subagent is not None:
            sub = event.subagent
            return self.agent_id in (sub.id, sub.parent_agent_id)
        return event.kind == EventKind.EXIT

    # turns

    def _on_turn(self, event: Event) -> list[Emitted]:
        turn_event = event.turn
        if turn_event is None:
            return []
        if turn_event.state == TurnState.WORKING:
            if self._ghost:  # the late start of the cancelled turn: its end is stale too
                self._ghost = False
                self._seed = None
                return []
            self._stale_ends = 0
            if self._turn is not None:
                self._turn.confirmed = True
                return []
            return self._start_provider_turn()
        if self._stale_ends and (self._turn is None or not self._turn.confirmed):
            self._stale_ends -= 1
            self._ghost = False  # it ended without ever reporting working
            return []
        if self._turn is None:
            return []
        meta = drop_none(
            {
                f"{META_PREFIX}reason": turn_event.reason or None,
                f"{META_PREFIX}model": turn_event.model or None,
                f"{META_PREFIX}completion": _json(turn_event.completion),
            }
        )
        extra: dict[str, Any] = {"_meta": meta} if meta else {}
        if turn_event.state == TurnState.COMPLETED:
            return self._end_turn("chat/turnComplete", extra)
        if turn_event.state == TurnState.CANCELLED:
            return self._end_turn("chat/turnCancelled", extra)
        message = turn_event.error or "The turn failed."
        return self._end_turn("chat/error", {"part": error_part("turnFailed", message), **extra})

    def _start_provider_turn(self) -> list[Emitted]:
        """A turn the provider started: announced with its user item, maybe a little later.

        Providers report ``working`` before or after the user message that started the turn;
        ``chat/turnStarted`` cannot be amended, so it waits for that item (when it came first
        it is already here) and goes out, at the latest, right before the turn's first action
        in the chat (content, a request, or its end).
        """
        seed, self._seed = self._seed, None
        turn = _Turn(id=self._new_id(), started_ms=self._now_ms(), confirmed=True)
        turn.announced = False
        self._turn = turn
        return self._announce(turn, seed) if seed is not None else []

    def _announce(self, turn: _Turn, seed: Item | None) -> list[Emitted]:
        turn.announced = True
        if seed is not None:
            self.user_items.setdefault(turn.id, seed.id)
        own = seed is not None and seed.delivery != DELIVERY_AUTOPILOT
        origin = "user" if own and self._run_by_user is not False else "agent"
        message: dict[str, Any] = {"text": seed.text if seed else "", "origin": {"kind": origin}}
        return [
            self._chat(
                {
                    "type": "chat/turnStarted",
                    "turnId": turn.id,
                    "startedAt": iso_from_ms(turn.started_ms),
                    "message": message,
                    "_meta": {f"{META_PREFIX}origin": "provider"},
                }
            )
        ]

    def _end_turn(self, action_type: str, extra: Mapping[str, Any]) -> list[Emitted]:
        turn = self._turn
        assert turn is not None
        self._turn = None
        self._seed = None
        duration = max(0, self._now_ms() - turn.started_ms)
        end = {"type": action_type, "turnId": turn.id, "duration": duration, **extra}
        return [self._chat(end), *self._clear_pending(), *self._clear_activity()]

    def _clear_pending(self) -> list[Emitted]:
        pending, self._pending = list(self._pending.values()), {}
        executions, self._executions = list(self._executions.values()), {}
        removed = [self._input_removed(i) for i in executions]
        return [self._removed(p) for p in pending] + removed

    def _content_turn(self) -> _Turn | None:
        """The turn content belongs to, or None when it must be dropped (see module doc)."""
        turn = self._turn
        if turn is None or (self._stale_ends and not turn.confirmed):
            return None
        return turn

    # items and deltas

    def _on_item(self, event: Event) -> list[Emitted]:
        item = event.item
        if item is None:
            return []
        if item.kind == ItemKind.TOOL:
            return self._on_tool(item)
        if item.agent_id != self.agent_id:
            return []
        if item.kind == ItemKind.USER:
            if self._turn is None:
                self._seed = item
            elif item.delivery != DELIVERY_STEER:
                self.user_items.setdefault(self._turn.id, item.id)
            return []
        if item.kind in (ItemKind.ASSISTANT, ItemKind.REASONING):
            return self._text(item.kind, item.id, full=item.text)
        if item.kind == ItemKind.NOTICE:
            return self._notice(item)
        return []

    def _on_delta(self, event: Event) -> list[Emitted]:
        delta = event.delta
        if delta is None or delta.agent_id != self.agent_id:
            return []
        if delta.kind not in (ItemKind.ASSISTANT, ItemKind.REASONING):
            return []
        return self._text(delta.kind, delta.item_id, append=delta.text)

    def _text(
        self, kind: ItemKind, item_id: str, *, full: str | None = None, append: str = ""
    ) -> list[Emitted]:
        turn = self._content_turn()
        if turn is None:
            return []
        key = (str(kind), item_id)
        chunks = turn.text.setdefault(key, [])
        if full is not None:
            # An item replaces earlier versions; AHP can only append, so only a longer
            # version of what was streamed adds anything (a rewrite keeps the streamed text).
            seen = "".join(chunks)
            chunks[:] = [seen]
            if not full.startswith(seen):
                return []
            append = full[len(seen) :]
        if not append:
            return []
        chunks.append(append)
        markdown = kind == ItemKind.ASSISTANT
        if turn.open_key == key:
            return [
                self._chat(
                    {
                        "type": "chat/delta" if markdown else "chat/reasoning",
                        "turnId": turn.id,
                        "partId": turn.open_part,
                        "content": append,
                    }
                )
            ]
        part_id = self._new_id()
        turn.open_key, turn.open_part = key, part_id
        part = {"kind": "markdown" if markdown else "reasoning", "id": part_id, "content": append}
        return [self._chat({"type": "chat/responsePart", "turnId": turn.id, "part": part})]

    def _notice(self, item: Item) -> list[Emitted]:
        turn = self._content_turn()
        if turn is None or item.id in turn.notices or not item.text:
            return []
        turn.notices.add(item.id)
        part: dict[str, Any] = {"kind": "systemNotification", "content": item.text}
        meta: dict[str, Any] = {f"{META_PREFIX}itemId": item.id}
        if item.completion is not None:
            meta[f"{META_PREFIX}completion"] = item.completion.to_json()
        part["_meta"] = meta
        return self._append_part(turn, part)

    def _append_part(self, turn: _Turn, part: dict[str, Any]) -> list[Emitted]:
        turn.open_key = None
        return [self._chat({"type": "chat/responsePart", "turnId": turn.id, "part": part})]

    # tool calls

    def _on_tool(self, item: Item) -> list[Emitted]:
        call = item.tool
        turn = self._content_turn()
        if call is None or turn is None:
            return []
        key = (item.agent_id, item.id)
        tool = turn.tools.get(key)
        out: list[Emitted] = []
        if tool is None:
            if item.agent_id != self.agent_id:
                return []  # other agents' tool calls stay out of this transcript
            owner = None if self.agent_id else self._client_tools.get(call.name)
            display = owner[1] if owner is not None else call.title or call.name
            tool = self._new_tool(turn, key, call.name, display, invocation=display)
            if owner is not None:
                tool.base["contributor"] = {"kind": "client", "clientId": owner[0]}
            out += self._start_tool(turn, tool)
        if call.input:
            tool.tool_input = call.input
        if call.status == ToolStatus.PENDING:
            return out
        if call.status == ToolStatus.RUNNING and _client_contributed(tool):
            return out  # a client's tool runs once the host waits for it (client_call)
        if tool.status == "streaming":
            out.append(self._ready(turn, tool, confirmed="not-needed"))
            tool.status = "running"
        if call.status == ToolStatus.RUNNING or tool.status in _TERMINAL_TOOL:
            return out
        content = tool.content
        if call.file_edits and self._file_edits is not None:
            content = [*content, *self._file_edits(turn.id, list(call.file_edits))]
        result, facts = tool_result(item, call, tool.base["displayName"], content)
        complete: dict[str, Any] = {
            "type": "chat/toolCallComplete",
            "turnId": turn.id,
            "toolCallId": tool.call_id,
            "result": result,
        }
        meta = {**tool.base.get("_meta", {}), **facts}
        if meta:
            complete["_meta"] = meta
        tool.status = "completed"
        out.append(self._chat(complete))
        pending = self._pending.pop(tool.interaction or "", None)
        tool.interaction = None
        if pending is not None:
            out.append(self._removed(pending))
        execution = self._executions.pop(tool.call_id, None)
        if execution is not None:  # the provider ended a call its client was running
            out.append(self._input_removed(execution))
        return out

    def _new_tool(
        self,
        turn: _Turn,
        key: tuple[str, str],
        name: str,
        display: str,
        *,
        invocation: str,
        intention: str = "",
    ) -> _Tool:
        agent_id, item_id = key
        own = agent_id == self.agent_id
        call_id = item_id if own else f"{agent_id}/{item_id}"
        base = drop_none(
            {
                "toolCallId": call_id,
                "toolName": name or display or "tool",
                "displayName": display or name or "Tool",
                "intention": intention or None,
                "_meta": None if own else {f"{META_PREFIX}agentId": agent_id},
            }
        )
        tool = _Tool(call_id=call_id, base=base, invocation=invocation or base["displayName"])
        tool.content = self._orphans.pop(item_id, []) if own else []
        turn.tools[key] = tool
        turn.by_call[call_id] = tool
        return tool

    def _start_tool(self, turn: _Turn, tool: _Tool) -> list[Emitted]:
        turn.open_key = None
        return [self._chat({"type": "chat/toolCallStart", "turnId": turn.id, **tool.base})]

    def _ready(self, turn: _Turn, tool: _Tool, *, confirmed: str) -> Emitted:
        ready = drop_none(
            {
                "type": "chat/toolCallReady",
                "turnId": turn.id,
                "toolCallId": tool.call_id,
                "invocationMessage": tool.invocation,
                "toolInput": tool.tool_input,
                "confirmed": confirmed,
            }
        )
        return self._chat(ready)

    # interactions

    def _on_interaction(self, event: Event) -> list[Emitted]:
        interaction = event.interaction
        if interaction is None:
            return []
        if interaction.state != InteractionState.PENDING:
            return self._resolved(interaction)
        turn = self._content_turn()
        if turn is None:
            return []
        if interaction.kind == InteractionKind.PERMISSION:
            return self._permission(turn, interaction)
        return self._question(turn, interaction)

    def _input_id(self, interaction: Interaction) -> str:
        return f"{self.chat_uri}#{interaction.id}"

    def _permission(self, turn: _Turn, interaction: Interaction) -> list[Emitted]:
        if interaction.id in self._pending:
            self._pending[interaction.id].interaction = interaction
            return []  # AHP 0.7.0 cannot re-ask a pending confirmation; the first one stands
        key = (interaction.agent_id, interaction.tool_call_id or f"#{interaction.id}")
        tool = turn.tools.get(key)
        out: list[Emitted] = []
        if tool is not None and tool.status in _TERMINAL_TOOL:
            key = (interaction.agent_id, f"#{interaction.id}")
            tool = None
        if tool is None:
            title = interaction.title or "Permission request"
            tool = self._new_tool(
                turn, key, title, title, invocation=title, intention=interaction.intention
            )
            out += self._start_tool(turn, tool)
        invocation = interaction.detail or interaction.title or tool.invocation
        options = confirmation_options(list(interaction.options))
        ready = drop_none(
            {
                "type": "chat/toolCallReady",
                "turnId": turn.id,
                "toolCallId": tool.call_id,
                "invocationMessage": invocation,
                "toolInput": tool.tool_input,
                "confirmationTitle": interaction.title or None,
                "riskAssessment": _risk(interaction),
                "options": options or None,
            }
        )
        out.append(self._chat(ready))
        tool.status = "pending-confirmation"
        tool.interaction = interaction.id
        state = {
            **tool.base,
            "status": "pending-confirmation",
            **{k: v for k, v in ready.items() if k not in ("type", "turnId", "toolCallId")},
        }
        pending = _Pending(interaction, self._input_id(interaction), tool_key=key)
        self._pending[interaction.id] = pending
        request = {
            "kind": "toolConfirmation",
            "id": pending.input_id,
            "chat": self.chat_uri,
            "turnId": turn.id,
            "toolCall": state,
        }
        out.append(self._session({"type": "session/inputNeededSet", "request": request}))
        return out

    def _question(self, turn: _Turn, interaction: Interaction) -> list[Emitted]:
        request = input_request(interaction)
        pending = _Pending(interaction, self._input_id(interaction))
        self._pending[interaction.id] = pending
        turn.open_key = None
        mirror = {"kind": "chatInput", "id": pending.input_id, "chat": self.chat_uri}
        return [
            self._chat({"type": "chat/inputRequested", "request": request}),
            self._session(
                {"type": "session/inputNeededSet", "request": {**mirror, "request": request}}
            ),
        ]

    def _resolved(self, interaction: Interaction) -> list[Emitted]:
        pending = self._pending.pop(interaction.id, None)
        turn = self._turn
        if pending is None or turn is None:
            return []
        out: list[Emitted] = []
        if pending.tool_key is None:
            response = {
                InteractionState.ANSWERED: "accept",
                InteractionState.REJECTED: "decline",
            }.get(interaction.state, "cancel")
            out.append(
                self._chat(
                    {
                        "type": "chat/inputCompleted",
                        "requestId": interaction.id,
                        "response": response,
                    }
                )
            )
        else:
            tool = turn.tools.get(pending.tool_key)
            if tool is not None and tool.status == "pending-confirmation":
                out.append(self._chat(self._confirmation(turn, tool, interaction)))
                tool.interaction = None
        out.append(self._removed(pending))
        return out

    def _confirmation(self, turn: _Turn, tool: _Tool, interaction: Interaction) -> Action:
        """Settle a permission the provider resolved without a client's answer here.

        An answer or refusal is recorded as the host's ``chat/toolCallConfirmed``. An expired
        request says nothing about the decision (the provider may have asked elsewhere and run
        the tool anyway), so the call only leaves pending-confirmation: it is marked running
        as decided by the provider's setting, and its own completion, failure or the turn's
        end settles it.
        """
        chosen = next((o for o in interaction.options if o.id == interaction.resolution), None)
        if interaction.state == InteractionState.EXPIRED:
            tool.status = "running"
            meta = {**tool.base.get("_meta", {}), f"{META_PREFIX}resolution": "expired"}
            tool.base["_meta"] = meta  # kept by the later toolCallComplete, which replaces _meta
            ready = self._ready(turn, tool, confirmed="setting")[1]
            return {**ready, "_meta": meta}
        base: Action = {"type": "chat/toolCallConfirmed", "turnId": turn.id}
        base["toolCallId"] = tool.call_id
        if chosen is not None:
            base["selectedOptionId"] = chosen.id
        denied = interaction.state == InteractionState.REJECTED or (
            chosen is not None and chosen.reject
        )
        if not denied:
            tool.status = "running"
            how = "setting" if interaction.auto else "user-action"
            return {**base, "approved": True, "confirmed": how}
        tool.status = "cancelled"
        return {**base, "approved": False, "reason": "denied"}

    def _removed(self, pending: _Pending) -> Emitted:
        return self._input_removed(pending.input_id)

    def _input_removed(self, input_id: str) -> Emitted:
        return self._session({"type": "session/inputNeededRemoved", "id": input_id})

    # subagents

    _default_subagent_uri = staticmethod(default_subagent_uri)

    def _on_subagent(self, event: Event) -> list[Emitted]:
        subagent = event.subagent
        if subagent is None:
            return []
        background = self._background_subagent(subagent) if subagent.background else []
        return background + self._on_subagent_item(subagent)

    def _on_subagent_item(self, subagent: Subagent) -> list[Emitted]:
        if self.agent_id and subagent.id == self.agent_id:
            return self._subagent_lifecycle(subagent)
        if subagent.parent_agent_id != self.agent_id or not subagent.parent_tool_call_id:
            return []
        if subagent.id in self._subagents:
            return []
        turn = self._content_turn()
        if turn is None:
            return []
        ref = self._subagent_ref(subagent)
        tool = turn.tools.get((self.agent_id, subagent.parent_tool_call_id))
        self._subagents.add(subagent.id)
        if tool is None:
            self._orphans.setdefault(subagent.parent_tool_call_id, []).append(ref)
            return []
        if tool.status in _TERMINAL_TOOL:
            return []  # AHP cannot change a finished tool call's result
        tool.content.append(ref)
        if tool.status != "running":
            return []  # it goes out with the tool call's result
        changed = {
            "type": "chat/toolCallContentChanged",
            "turnId": turn.id,
            "toolCallId": tool.call_id,
            "content": list(tool.content),
        }
        return [self._chat(changed)]

    def _subagent_lifecycle(self, subagent: Subagent) -> list[Emitted]:
        """A subagent chat's turns are the subagent's runs: running starts one, an end ends it."""
        status = subagent.status
        if status == SubagentStatus.RUNNING:
            if self._turn is not None:
                return []
            trigger = subagent.runs[-1].trigger if subagent.runs else SUBAGENT_TRIGGER_SPAWN
            self._run_by_user = trigger == SUBAGENT_TRIGGER_USER
            return self._start_provider_turn()
        if self._turn is None:
            return []
        if status == SubagentStatus.FAILED:
            part = error_part("subagentFailed", subagent.error or "It failed.")
            return self._end_turn("chat/error", {"part": part})
        if status == SubagentStatus.CANCELLED:
            return self._end_turn("chat/turnCancelled", {})
        return self._end_turn("chat/turnComplete", {})  # completed, or idle for a follow-up

    def _subagent_ref(self, subagent: Subagent) -> dict[str, Any]:
        return subagent_ref(subagent, self._subagent_chat_uri)

    # conversation-level events

    def _on_exit(self, event: Event) -> list[Emitted]:
        self._stale_ends = 0
        self._ghost = False
        self._seed = None
        if self._turn is None:
            return self._clear_pending()
        if event.detached:
            return self._end_turn("chat/turnCancelled", {})
        message = event.error or "The provider runtime exited."
        # The runtime can be reopened and the turn continued: `chat/turnResume` resumes it.
        part = error_part("providerExit", message, resumable=True)
        return self._end_turn("chat/error", {"part": part})

    def _on_title(self, event: Event) -> list[Emitted]:
        title = clean_line(event.title)
        if not title or title == self._title:
            return []
        self._title = title
        return [
            self._session({"type": "session/titleChanged", "title": title}),
            self._session(
                {"type": "session/chatUpdated", "chat": self.chat_uri, "changes": {"title": title}}
            ),
        ]

    def _on_usage(self, event: Event) -> list[Emitted]:
        if event.usage is None:
            return []
        out = self._on_meta(event)
        turn = self._content_turn()
        if turn is not None:
            turn.usage["_meta"] = {f"{META_PREFIX}aiUnits": event.usage.ai_units}
            out.append(self._usage(turn))
        return out

    def _on_tokens(self, event: Event) -> list[Emitted]:
        tokens = event.tokens
        turn = self._content_turn()
        if tokens is None or turn is None:
            return []
        usage = turn.usage
        usage["inputTokens"] = usage.get("inputTokens", 0) + tokens.input
        usage["outputTokens"] = usage.get("outputTokens", 0) + tokens.output
        usage["cacheReadTokens"] = usage.get("cacheReadTokens", 0) + tokens.cache_read
        if tokens.model:
            usage["model"] = tokens.model
        return [self._usage(turn)]

    def _usage(self, turn: _Turn) -> Emitted:
        usage = {k: (dict(v) if isinstance(v, dict) else v) for k, v in turn.usage.items()}
        return self._chat({"type": "chat/usage", "turnId": turn.id, "usage": usage})

    def _on_activity(self, event: Event) -> list[Emitted]:
        self._activity = event.activity
        return self._activity_changed()

    def _on_compaction(self, event: Event) -> list[Emitted]:
        self._compacting = event.compacting
        return self._activity_changed()

    def _activity_changed(self) -> list[Emitted]:
        activity = self._activity
        text = ""
        if self._compacting:
            text = "Compacting conversation"
        elif activity is not None and activity.intent:
            text = clean_line(activity.intent)
        elif activity is not None and activity.retry is not None:
            text = "Retrying the model call"
        return self._set_activity(text)

    def _clear_activity(self) -> list[Emitted]:
        self._activity = None
        return self._set_activity("Compacting conversation" if self._compacting else "")

    def _set_activity(self, text: str) -> list[Emitted]:
        if text == self._activity_text:
            return []
        self._activity_text = text
        changed: Action = {"type": "chat/activityChanged"}
        if text:
            changed["activity"] = text
        updated = {"type": "session/chatUpdated", "chat": self.chat_uri}
        return [self._chat(changed), self._session({**updated, "changes": {"activity": text}})]

    def _on_background_tasks(self, event: Event) -> list[Emitted]:
        """Shell tasks: session ``_meta`` (for 0.7/0.9) and ``chat/backgroundWork*`` (1.0)."""
        out = self._on_meta(event)
        tasks = event.background_tasks
        if self.agent_id or tasks is None or not tasks.known:
            return out
        running = {t.id: t for t in tasks.tasks if t.status == "running"}
        for task_id, task in running.items():
            started = task.started_at
            work = {
                "id": f"shell:{task_id}",
                "label": clean_line(task.description or task.command) or "Background shell",
                "startedAt": iso_from_ms(int(started.timestamp() * 1000))
                if started is not None
                else iso_from_ms(self._now_ms()),
                "kind": "shell",
                "command": task.command,
            }
            out.extend(self._background_set(work))
        for work_id in [w for w in self._background if w.startswith("shell:")]:
            if work_id.removeprefix("shell:") not in running:
                out.extend(self._background_removed(work_id))
        return out

    def _background_subagent(self, subagent: Subagent) -> list[Emitted]:
        """A subagent launched in the background is chat background work while it runs."""
        if self.agent_id:
            return []
        work_id = f"subagent:{subagent.id}"
        if subagent.status not in (SubagentStatus.RUNNING, SubagentStatus.IDLE):
            return self._background_removed(work_id)
        started = subagent.started_at
        work = {
            "id": work_id,
            "label": clean_line(subagent.name) or "Subagent",
            "startedAt": iso_from_ms(int(started.timestamp() * 1000))
            if started is not None
            else iso_from_ms(self._now_ms()),
            "kind": "subagent",
            "chat": self._subagent_chat_uri(subagent.id),
        }
        return self._background_set(work)

    def _background_set(self, work: dict[str, Any]) -> list[Emitted]:
        if self._background.get(work["id"]) == work:
            return []
        self._background[work["id"]] = work
        return [self._chat({"type": "chat/backgroundWorkSet", "work": work})]

    def _background_removed(self, work_id: str) -> list[Emitted]:
        if self._background.pop(work_id, None) is None:
            return []
        return [self._chat({"type": "chat/backgroundWorkRemoved", "id": work_id})]

    def _on_meta(self, event: Event) -> list[Emitted]:
        attribute, suffix = _META_EVENTS[event.kind]
        payload = getattr(event, attribute)
        return self.set_session_meta(META_PREFIX + suffix, _json(payload))

    # channels

    def _chat(self, action: Action) -> Emitted:
        return (self.chat_uri, action)

    def _session(self, action: Action) -> Emitted:
        return (self.session_uri, action)


def _client_contributed(tool: _Tool) -> bool:
    contributor = tool.base.get("contributor")
    return isinstance(contributor, dict) and contributor.get("kind") == "client"


_SAFETY = {"approve": 1.0, "requireApproval": 0.0}


def _risk(interaction: Interaction) -> dict[str, Any] | None:
    """The provider's assisted review as AHP's judge risk assessment (approve: safe, 1)."""
    review = interaction.assisted
    safety = _SAFETY.get(review.recommendation)
    if safety is None:  # not reviewed, excluded from review, or the review failed
        return None
    reason = review.reason or f"The reviewer recommends {review.recommendation}."
    return {"kind": "judge", "status": "complete", "reason": reason, "safety": safety}


def _json(payload: Any) -> Any:
    """A payload as JSON data: agentapi models by their Go JSON form."""
    if payload is None:
        return None
    to_json = getattr(payload, "to_json", None)
    if callable(to_json):
        return to_json()
    if isinstance(payload, bytes):
        return base64.b64encode(payload).decode("ascii")
    return payload
