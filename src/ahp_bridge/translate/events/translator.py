"""``EventTranslator``: one chat's parts composed, and every event kind dispatched to its part."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from ahp_bridge.agentapi import Event, EventKind, FileEdit, Interaction, ItemKind

from .._parts import default_subagent_uri
from .._wire import Emitted
from .background import BackgroundWork
from .context import ChatContext
from .inputs import InputRequests
from .interactions import Interactions
from .session_meta import META_EVENTS, ChatActivity, SessionMeta, Usage
from .subagents import Subagents, concerns_subagent
from .text import TextParts
from .tools import ToolCalls
from .turns import TurnEvents, TurnLifecycle


class EventTranslator:
    """Translate one conversation's agentapi Events into actions for one AHP chat.

    ``new_id`` makes ids for provider-started turns and response parts; ``now_ms`` is the
    producer's clock in epoch milliseconds (turn start stamps and durations). Both are injected
    so the translation is deterministic and testable.

    With ``agent_id`` set, the translator builds the read-only chat of that one subagent from
    the same event stream instead (see "Subagent chats" in the package docstring).
    """

    _default_subagent_uri = staticmethod(default_subagent_uri)

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
        ctx = ChatContext(
            chat_uri=chat_uri,
            session_uri=session_uri,
            agent_id=agent_id,
            new_id=new_id,
            now_ms=now_ms,
            subagent_chat_uri=subagent_chat_uri or self._default_subagent_uri,
        )
        self._ctx = ctx
        self.turns = TurnLifecycle()
        """The chat's turn lifecycle, which every part asks whether a turn runs.

        The host will own it: the next step of the rewrite makes the host's engine the single
        owner of each chat's turn lifecycle, and the engine hands this object to the translator.
        """
        self._inputs = InputRequests(ctx)
        self._meta = SessionMeta(ctx)
        self._usage = Usage(ctx, self.turns, self._meta)
        self._activity = ChatActivity(ctx)
        self._background = BackgroundWork(ctx)
        self._text = TextParts(ctx, self.turns)
        self._turn_events = TurnEvents(
            ctx,
            self.turns,
            clear_inputs=self._inputs.clear,
            clear_activity=self._activity.clear,
        )
        self._tools = ToolCalls(ctx, self.turns, self._text, self._inputs, file_edits=file_edits)
        self._interactions = Interactions(ctx, self.turns, self._text, self._inputs, self._tools)
        self._subagents = Subagents(ctx, self.turns, self._turn_events, self._tools)
        self._handlers = self._handler_table()

    def _handler_table(self) -> dict[EventKind, Callable[[Event], list[Emitted]]]:
        """Every event kind's handler (a test checks that none is missing)."""
        handlers: dict[EventKind, Callable[[Event], list[Emitted]]] = {
            EventKind.TURN: self._turn_events.on_turn,
            EventKind.ITEM: self._on_item,
            EventKind.DELTA: self._text.on_delta,
            EventKind.INTERACTION: self._interactions.on_interaction,
            EventKind.SUBAGENT: self._on_subagent,
            EventKind.EXIT: self._turn_events.on_exit,
            EventKind.TITLE: self._meta.on_title,
            EventKind.USAGE: self._usage.on_usage,
            EventKind.TOKENS: self._usage.on_tokens,
            EventKind.ACTIVITY: self._activity.on_activity,
            EventKind.COMPACTION: self._activity.on_compaction,
            EventKind.BACKGROUND_TASKS: self._on_background_tasks,
            EventKind.PLAN_PATH: self._dropped,
            EventKind.SKILL: self._dropped,
            EventKind.MCP_STATUS: self._dropped,
        }
        for kind in META_EVENTS:
            handlers.setdefault(kind, self._meta.on_meta)
        return handlers

    @property
    def chat_uri(self) -> str:
        return self._ctx.chat_uri

    @property
    def session_uri(self) -> str:
        return self._ctx.session_uri

    @property
    def agent_id(self) -> str:
        """The subagent whose read-only chat this translator builds; "" for a main chat."""
        return self._ctx.agent_id

    @property
    def user_items(self) -> dict[str, str]:
        """AHP turn id -> the provider's id of the user item that started it (for rewinds)."""
        return self.turns.user_items

    # ----------------------------------------------------------------- queries for the host

    @property
    def active_turn_id(self) -> str | None:
        """The AHP id of the turn the translator considers running, if any."""
        return self.turns.active_id

    def pending_permissions(self) -> dict[str, Interaction]:
        """Pending permission interactions keyed by the AHP ``toolCallId`` they confirm."""
        return self._interactions.pending_permissions()

    def client_executions(self) -> frozenset[str]:
        """AHP ``toolCallId``s of the client tool calls waiting for their client's result."""
        return self._inputs.executions()

    def pending_inputs(self) -> dict[str, Interaction]:
        """Pending question and plan-review interactions keyed by AHP input ``requestId``."""
        return self._interactions.pending_inputs()

    # ----------------------------------------------------------------- host-side turn changes

    def turn_started_by_client(self, turn_id: str, started_at_ms: int) -> None:
        """Record that the host applied a ``chat/turnStarted`` (client's or from the queue).

        The provider's next ``working`` confirms this turn instead of starting another one.
        """
        self.turns.client_started(turn_id, started_at_ms)

    def turn_not_sent(self) -> None:
        """The host never sent a turn a client cancelled first: expect nothing of it."""
        self.turns.not_sent()

    def fail_turn(self, error_type: str, message: str) -> list[Emitted]:
        """End the active turn with ``chat/error``, e.g. when ``send`` failed after acceptance."""
        return self._turn_events.fail(error_type, message)

    def observe_client_action(self, action: Mapping[str, Any]) -> list[Emitted]:
        """Keep the mirror true after the host applied a client's action; returns follow-ups.

        The follow-ups are host actions the client's action implies, such as
        ``session/inputNeededRemoved`` once a tool call is confirmed or an input completed.
        """
        kind = action.get("type")
        if kind == "chat/turnStarted":
            self.turn_started_by_client(str(action["turnId"]), self._ctx.now_ms())
            return []
        if kind == "chat/turnCancelled":
            return self._turn_events.client_cancelled(action.get("turnId"))
        if kind == "chat/toolCallConfirmed":
            return self._interactions.client_confirmed(action)
        if kind in ("chat/toolCallComplete", "chat/toolCallResultConfirmed"):
            return self._tools.client_finished(action)
        if kind == "chat/inputCompleted":
            return self._interactions.client_answered(action)
        if kind == "session/titleChanged":
            return self._meta.client_renamed(str(action.get("title", "")))
        return []

    # ----------------------------------------------------------------- client tools

    def set_client_tools(self, owners: Mapping[str, tuple[str, str]]) -> None:
        """The client tools the conversation registers: name -> (client id, display name)."""
        self._tools.set_client_tools(owners)

    def client_call(
        self, call_id: str, name: str, agent_id: str, tool_input: str
    ) -> tuple[list[Emitted], str]:
        """A provider's host tool call: the running tool call its client is asked to run.

        Returns the actions and "" when the client is now waited for, or a reason the call
        cannot reach its client (no turn, an unknown tool, a call that already ended).
        """
        return self._tools.client_call(call_id, name, agent_id, tool_input)

    def client_call_failed(self, tool_call_id: str, result: Mapping[str, Any]) -> list[Emitted]:
        """End a client tool call on the host's side (timeout, the client left, a cancel)."""
        return self._tools.client_call_failed(tool_call_id, result)

    def set_session_meta(self, key: str, value: Any) -> list[Emitted]:
        """Put one host-owned key into session ``_meta`` (sent whole: the reducer replaces it)."""
        return self._meta.set(key, value)

    # ----------------------------------------------------------------- the table

    def translate(self, event: Event) -> list[Emitted]:
        """The actions, in order, that one provider event becomes (often none)."""
        if self.agent_id and not concerns_subagent(self.agent_id, event):
            return []
        return self._turn_events.announcing(event, self._dispatch)

    def _dispatch(self, event: Event) -> list[Emitted]:
        handler = self._handlers.get(event.kind)
        return handler(event) if handler is not None else []

    def _dropped(self, event: Event) -> list[Emitted]:
        return []

    def _on_item(self, event: Event) -> list[Emitted]:
        item = event.item
        if item is None:
            return []
        if item.kind == ItemKind.TOOL:
            return self._tools.on_tool(item)
        if item.agent_id != self.agent_id:
            return []
        if item.kind == ItemKind.USER:
            self.turns.user_item(item)
            return []
        return self._text.on_item(item)

    def _on_subagent(self, event: Event) -> list[Emitted]:
        subagent = event.subagent
        if subagent is None:
            return []
        return self._background.on_subagent(subagent) + self._subagents.on_subagent(subagent)

    def _on_background_tasks(self, event: Event) -> list[Emitted]:
        """Shell tasks: session ``_meta`` (for 0.7/0.9) and ``chat/backgroundWork*`` (1.0)."""
        return self._meta.on_meta(event) + self._background.on_tasks(event.background_tasks)
