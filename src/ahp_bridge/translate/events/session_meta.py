"""Conversation-level facts: the title, usage and tokens, the activity line, session ``_meta``.

AHP 0.7.0 has no typed home for most of what a provider reports about the conversation
(context, todos, schedules, ...), so the translator owns the session's ``_meta`` and sends the
whole object each time, since the reducer replaces it.
"""

from __future__ import annotations

from typing import Any

from ahp_bridge.agentapi import Activity, Event, EventKind

from .._wire import META_PREFIX, Action, Emitted, clean_line
from .context import ChatContext, as_json
from .turns import PerTurn, Turn, TurnLifecycle

META_EVENTS: dict[EventKind, tuple[str, str]] = {
    EventKind.CONTEXT: ("context", "context"),
    EventKind.TODOS: ("todos", "todos"),
    EventKind.BACKGROUND_TASKS: ("background_tasks", "backgroundTasks"),
    EventKind.SCHEDULES: ("schedules", "schedules"),
    EventKind.EXECUTION: ("execution", "execution"),
    EventKind.MODEL_SELECTION: ("model_selection", "modelSelection"),
    EventKind.USAGE: ("usage", "usage"),
}
"""Event kinds carried in session ``_meta``: payload attribute and ``_meta`` key suffix."""

_COMPACTING = "Compacting conversation"


class SessionMeta:
    """The session's title and ``_meta`` object as the translator last sent them."""

    def __init__(self, ctx: ChatContext) -> None:
        self._ctx = ctx
        self._title = ""
        self._meta: dict[str, Any] = {}

    def on_title(self, event: Event) -> list[Emitted]:
        title = clean_line(event.title)
        if not title or title == self._title:
            return []
        self._title = title
        return [
            self._ctx.session({"type": "session/titleChanged", "title": title}),
            self._chat_updated(title),
        ]

    def client_renamed(self, title: str) -> list[Emitted]:
        """A client's ``session/titleChanged``: the chat's catalog entry follows it."""
        if not clean_line(title):
            return []
        self._title = clean_line(title)
        # the catalog entry follows a rename as it follows the provider, word for word
        return [self._chat_updated(title)]

    def _chat_updated(self, title: str) -> Emitted:
        changes = {"chat": self._ctx.chat_uri, "changes": {"title": title}}
        return self._ctx.session({"type": "session/chatUpdated", **changes})

    def on_meta(self, event: Event) -> list[Emitted]:
        """An event kind of ``META_EVENTS``: its payload under ``ahpBridge.<name>``."""
        attribute, suffix = META_EVENTS[event.kind]
        payload = getattr(event, attribute)
        return self.set(META_PREFIX + suffix, as_json(payload))

    def set(self, key: str, value: Any) -> list[Emitted]:
        """Put one key into session ``_meta`` (None removes it); sent only when it changed."""
        if self._meta.get(key) == value:
            return []
        if value is None:
            self._meta.pop(key, None)
        else:
            self._meta[key] = value
        return [self._ctx.session({"type": "session/metaChanged", "_meta": dict(self._meta)})]


class Usage:
    """``chat/usage`` of the running turn: AI units and token counts over its model calls."""

    def __init__(self, ctx: ChatContext, turns: TurnLifecycle, meta: SessionMeta) -> None:
        self._ctx = ctx
        self._turns = turns
        self._meta = meta
        self._usage: PerTurn[dict[str, Any]] = PerTurn(dict)

    def on_usage(self, event: Event) -> list[Emitted]:
        """The conversation's usage: always session ``_meta``, and the turn's AI units."""
        if event.usage is None:
            return []
        out = self._meta.on_meta(event)
        turn = self._turns.content_turn()
        if turn is not None:
            self._usage.of(turn)["_meta"] = {f"{META_PREFIX}aiUnits": event.usage.ai_units}
            out.append(self._emit(turn))
        return out

    def on_tokens(self, event: Event) -> list[Emitted]:
        """One model call's tokens, added to the turn's."""
        tokens = event.tokens
        turn = self._turns.content_turn()
        if tokens is None or turn is None:
            return []
        usage = self._usage.of(turn)
        usage["inputTokens"] = usage.get("inputTokens", 0) + tokens.input
        usage["outputTokens"] = usage.get("outputTokens", 0) + tokens.output
        usage["cacheReadTokens"] = usage.get("cacheReadTokens", 0) + tokens.cache_read
        if tokens.model:
            usage["model"] = tokens.model
        return [self._emit(turn)]

    def _emit(self, turn: Turn) -> Emitted:
        usage = self._usage.of(turn)
        copy = {k: (dict(v) if isinstance(v, dict) else v) for k, v in usage.items()}
        return self._ctx.chat({"type": "chat/usage", "turnId": turn.id, "usage": copy})


class ChatActivity:
    """The chat's one-line activity: compaction, else the provider's intent or a retry note.

    ``chat/activityChanged`` and ``session/chatUpdated{activity}`` go out only when the text
    changes.
    """

    def __init__(self, ctx: ChatContext) -> None:
        self._ctx = ctx
        self._activity: Activity | None = None
        self._compacting = False
        self._text = ""

    def on_activity(self, event: Event) -> list[Emitted]:
        self._activity = event.activity
        return self._changed()

    def on_compaction(self, event: Event) -> list[Emitted]:
        self._compacting = event.compacting
        return self._changed()

    def clear(self) -> list[Emitted]:
        """The turn is over: its activity goes; a compaction still running stays shown."""
        self._activity = None
        return self._show(_COMPACTING if self._compacting else "")

    def _changed(self) -> list[Emitted]:
        activity = self._activity
        text = ""
        if self._compacting:
            text = _COMPACTING
        elif activity is not None and activity.intent:
            text = clean_line(activity.intent)
        elif activity is not None and activity.retry is not None:
            text = "Retrying the model call"
        return self._show(text)

    def _show(self, text: str) -> list[Emitted]:
        if text == self._text:
            return []
        self._text = text
        changed: Action = {"type": "chat/activityChanged"}
        if text:
            changed["activity"] = text
        updated = {"type": "session/chatUpdated", "chat": self._ctx.chat_uri}
        return [
            self._ctx.chat(changed),
            self._ctx.session({**updated, "changes": {"activity": text}}),
        ]
