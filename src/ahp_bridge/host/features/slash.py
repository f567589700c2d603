"""The provider's `/` commands (agentapi `Conversation.commands`: skills and prompt commands).

`completions` offers them for a `/word` that starts the message (`CommandSource`, a source of
`host/completions.py`): each item inserts `/name ` and carries a `simple` attachment whose
`_meta["ahpBridge.command"]` names the command (clients keep a completion's `_meta` when they
send the message). A message that invokes one, by that attachment or by its text `/name args`,
starts its turn with `RunCommand` instead of `Send` (`translate/commands.py`).

Each chat's commands are read when the chat is added, when the session's customizations change
(a skill turned on or off) and when a completion finds them older than `MAX_AGE` seconds;
`ChatRuntime.command_names` keeps the names (and aliases) the planner matches a message against.
A provider without commands (`Unsupported`) offers none.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

import structlog
import trio

from ahp_bridge import agentapi
from ahp_bridge.host.mention_rank import index_to_utf16, utf16_to_index
from ahp_bridge.host.timeouts import gave_up
from ahp_bridge.protocol.action_types import ActionType
from ahp_bridge.state.store import Envelope
from ahp_bridge.translate.commands import COMMAND_META

if TYPE_CHECKING:
    from ahp_bridge.host.chat import ChatRuntime
    from ahp_bridge.host.hub import Hub
    from ahp_bridge.host.sessions import Session, SessionManager

__all__ = ["CommandSource"]

log = structlog.get_logger(__name__)

#: Seconds a chat's command list is used before a completion reads it again.
MAX_AGE = 10.0
#: Most commands offered for one `/word`.
RESULTS = 50


class CommandSource:
    triggers: tuple[str, ...] = ("/",)

    def __init__(self, hub: Hub, sessions: SessionManager) -> None:
        self.sessions = sessions
        self._lists: dict[str, tuple[float, list[agentapi.Command]]] = {}
        hub.observers.append(self._observe)

    def _observe(self, envelope: Envelope) -> None:
        kind = envelope.action.get("type")
        if kind == ActionType.SESSION_CHAT_ADDED:
            chat = self.sessions.chats.get(envelope.action.get("summary", {}).get("resource"))
            if chat is not None:
                self.sessions.nursery.start_soon(self.commands, chat, True)
        elif kind == ActionType.SESSION_CHAT_REMOVED:
            self._lists.pop(str(envelope.action.get("chat")), None)
        elif kind == ActionType.SESSION_CUSTOMIZATIONS_CHANGED:
            session = self.sessions.sessions.get(envelope.channel)
            if session is not None:
                self.session_changed(session)

    def session_changed(self, session: Session) -> None:
        """Skills come and go with the session's customizations: read the commands again."""
        for chat in session.chats.values():
            self._lists.pop(chat.uri, None)
            self.sessions.nursery.start_soon(self.commands, chat, True)

    async def commands(self, chat: ChatRuntime, fresh: bool = False) -> list[agentapi.Command]:
        """The chat's commands, read again when older than MAX_AGE (or when `fresh`)."""
        cached = self._lists.get(chat.uri)
        if cached is not None and not fresh and time.monotonic() - cached[0] < MAX_AGE:
            return cached[1]
        conversation = chat.conversation
        if conversation is None:
            return cached[1] if cached is not None else []
        try:
            with trio.fail_after(self.sessions.timeouts.provider_read):
                listed = list(await conversation.commands())
        except agentapi.Unsupported:
            listed = []
        except Exception as exc:
            error = gave_up(exc, self.sessions.timeouts, "provider_read")
            log.info("commands failed", chat=chat.uri, error=error)
            return cached[1] if cached is not None else []
        self._lists[chat.uri] = (time.monotonic(), listed)
        names: dict[str, str] = {}
        for command in listed:
            if command.disabled_reason:
                continue
            for alias in command.aliases:
                names.setdefault(alias, command.name)
            names[command.name] = command.name
        chat.command_names = names
        return listed

    async def complete(self, chat: ChatRuntime, text: str, offset: int) -> list[dict[str, Any]]:
        cursor = utf16_to_index(text, offset)
        start = cursor
        while start > 0 and not text[start - 1].isspace():
            start -= 1
        if text[:start].strip() or start >= len(text) or text[start] != "/":
            return []  # a command only starts the message
        end = cursor
        while end < len(text) and not text[end].isspace():
            end += 1
        query = text[start + 1 : cursor].lower()
        ranked: list[tuple[int, str, agentapi.Command]] = []
        for command in await self.commands(chat):
            if command.disabled_reason:
                continue
            names = [command.name, *command.aliases]
            lowered = [n.lower() for n in names]
            if any(n.startswith(query) for n in lowered):
                rank = 0 if lowered[0].startswith(query) else 1
            elif any(query in n for n in lowered):
                rank = 2
            else:
                continue
            ranked.append((rank, command.name.lower(), command))
        ranked.sort(key=lambda r: (r[0], r[1]))
        span = {"rangeStart": index_to_utf16(text, start), "rangeEnd": index_to_utf16(text, end)}
        return [_item(command, span) for _, _, command in ranked[:RESULTS]]


def _item(command: agentapi.Command, span: dict[str, int]) -> dict[str, Any]:
    meta: dict[str, Any] = {COMMAND_META: command.name, "ahpBridge.commandKind": command.kind}
    if command.description:
        meta["ahpBridge.description"] = command.description
    if command.input_hint:
        meta["ahpBridge.inputHint"] = command.input_hint
    attachment = {
        "type": "simple",
        "label": f"/{command.name}",
        "displayKind": "command" if command.kind == agentapi.COMMAND_PROMPT else "skill",
        "_meta": meta,
    }
    return {"insertText": f"/{command.name} ", **span, "attachment": attachment}
