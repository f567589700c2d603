"""The provider's `/` commands (agentapi `Conversation.commands`: skills and prompt commands).

`completions` offers them for a `/word` that starts the message (`CommandSource`, a source of
`host/completions.py`): each item inserts `/name ` and carries a `simple` attachment whose
`_meta["ahpBridge.command"]` names the command (clients keep a completion's `_meta` when they
send the message). A message that invokes one, by that attachment or by its text `/name args`,
starts its turn with `RunCommand` instead of `Send` (`translate/commands.py`).

Each chat's commands are read when the chat is added, when the session's customizations change
(a skill turned on or off) and when a completion finds them older than `MAX_AGE` seconds;
`Chat.command_names` keeps the names (and aliases) the planner matches a message against.
A provider without commands (`Unsupported`) offers none.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from typing import Any

import structlog
import trio

from ahp_bridge import agentapi
from ahp_bridge.engine.chats import Chat
from ahp_bridge.engine.effects import Run
from ahp_bridge.engine.fanout import Reaction
from ahp_bridge.engine.jobs import ShellJob
from ahp_bridge.engine.sessions import Session
from ahp_bridge.host.runtime.timeouts import gave_up
from ahp_bridge.host.runtime.workers import Workers
from ahp_bridge.host.shell import Shell
from ahp_bridge.host.workspace.mention_rank import index_to_utf16, utf16_to_index
from ahp_bridge.protocol.action_types import ActionType
from ahp_bridge.state.store import Envelope
from ahp_bridge.translate.commands import COMMAND_META

__all__ = ["CommandSource"]

log = structlog.get_logger(__name__)

#: Seconds a chat's command list is used before a completion reads it again.
MAX_AGE = 10.0
#: Most commands offered for one `/word`.
RESULTS = 50
#: The shell job that reads a chat's commands again.
READ = "commands.read"


class CommandSource:
    triggers: tuple[str, ...] = ("/",)

    def __init__(self, shell: Shell, workers: Workers) -> None:
        self.shell = shell
        self.sessions = shell.engine.sessions
        self.workers = workers
        self.timeouts = shell.engine.timeouts
        self._lists: dict[str, tuple[float, list[agentapi.Command]]] = {}
        shell.observe(
            self._observe,
            [
                ActionType.SESSION_CHAT_ADDED,
                ActionType.SESSION_CHAT_REMOVED,
                ActionType.SESSION_CUSTOMIZATIONS_CHANGED,
            ],
        )
        shell.jobs[READ] = self._read_job

    def _observe(self, envelope: Envelope) -> Iterable[Reaction]:
        kind = envelope.action.get("type")
        if kind == ActionType.SESSION_CHAT_ADDED:
            uri = envelope.action.get("summary", {}).get("resource")
            if uri in self.sessions.chats:
                return (Run(ShellJob(READ, uri)),)
        elif kind == ActionType.SESSION_CHAT_REMOVED:
            self._lists.pop(str(envelope.action.get("chat")), None)
        elif kind == ActionType.SESSION_CUSTOMIZATIONS_CHANGED:
            session = self.sessions.sessions.get(envelope.channel)
            if session is not None:
                return self._session_changed(session)
        return ()

    def _session_changed(self, session: Session) -> list[Reaction]:
        """Skills come and go with the session's customizations: read the commands again."""
        reactions: list[Reaction] = []
        for chat in session.chats.values():
            self._lists.pop(chat.uri, None)
            reactions.append(Run(ShellJob(READ, chat.uri)))
        return reactions

    def session_changed(self, session: Session) -> None:
        """A client's change reached the provider: its commands may have changed with it."""
        for chat in session.chats.values():
            self._lists.pop(chat.uri, None)
            self.shell.nursery.start_soon(self.commands, chat, True)

    async def _read_job(self, job: ShellJob) -> None:
        chat = self.sessions.chats.get(job.channel)
        if chat is not None:
            await self.commands(chat, True)

    async def commands(self, chat: Chat, fresh: bool = False) -> list[agentapi.Command]:
        """The chat's commands, read again when older than MAX_AGE (or when `fresh`)."""
        cached = self._lists.get(chat.uri)
        if cached is not None and not fresh and time.monotonic() - cached[0] < MAX_AGE:
            return cached[1]
        conversation = self.workers.conversation(chat.uri)
        if conversation is None:
            return cached[1] if cached is not None else []
        try:
            with trio.fail_after(self.timeouts.provider_read):
                listed = list(await conversation.commands())
        except agentapi.Unsupported:
            listed = []
        except Exception as exc:
            error = gave_up(exc, self.timeouts, "provider_read")
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
        chat.command_names = names  # the planner matches messages against them
        return listed

    async def complete(self, chat: Chat, text: str, offset: int) -> list[dict[str, Any]]:
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
