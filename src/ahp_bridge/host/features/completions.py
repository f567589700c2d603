"""`completions`: what the input box offers for the word at the cursor, from several sources.

The request names a chat; each *source* looks at the text and the cursor and returns its items
(or none). Sources are tried in order and their items concatenated, in the order the client
should show them. Today there is one: workspace files for an `@` or `#` mention
(`MentionSource`). The provider's `/` commands (agentapi `Conversation.Commands`) are meant to
be a second source beside it: a class with `triggers` and `complete`, appended to
`Completions.sources`; nothing else here needs to change.

`InitializeResult.completionTriggerCharacters` is the union of the sources' triggers, so
clients know when to ask.
"""

from __future__ import annotations

from typing import Any, Protocol

from ahp_bridge.engine.chats import Chat
from ahp_bridge.engine.peers import Peer
from ahp_bridge.engine.sessions import Sessions
from ahp_bridge.host.shell import Handler
from ahp_bridge.host.workspace.mention_rank import SIGILS, mention_at
from ahp_bridge.host.workspace.service import Workspace
from ahp_bridge.protocol import errors as E
from ahp_bridge.protocol.errors import RpcError

__all__ = ["CompletionSource", "Completions", "MentionSource"]


class CompletionSource(Protocol):
    """One kind of completion (mentions, commands, …)."""

    #: Characters that should make a client ask (`completionTriggerCharacters`).
    triggers: tuple[str, ...]

    async def complete(self, chat: Chat, text: str, offset: int) -> list[dict[str, Any]]:
        """Items for the cursor at UTF-16 `offset` in `text`, or [] when not this source's."""
        ...


class MentionSource:
    """Files and folders of the chat's session working directories, for `@path` / `#path`."""

    triggers: tuple[str, ...] = SIGILS

    def __init__(self, workspace: Workspace) -> None:
        self.workspace = workspace

    async def complete(self, chat: Chat, text: str, offset: int) -> list[dict[str, Any]]:
        mention = mention_at(text, offset)
        if mention is None:
            return []
        return list(await self.workspace.mention_items(chat.session, mention))


class Completions:
    def __init__(self, sessions: Sessions, sources: list[CompletionSource]) -> None:
        self.sessions = sessions
        self.sources = sources

    @property
    def triggers(self) -> list[str]:
        return list(dict.fromkeys(t for source in self.sources for t in source.triggers))

    def handlers(self) -> dict[str, Handler]:
        return {"completions": self.completions}

    async def completions(self, peer: Peer, params: dict[str, Any]) -> dict[str, Any]:
        uri = params["channel"]
        chat = self.sessions.chats.get(uri) or self.sessions.subagent_chats.get(uri)
        if chat is None:
            raise RpcError(E.NOT_FOUND, f"Chat not found: {uri}")
        text: str = params["text"]
        offset = params["offset"]
        length = len(text.encode("utf-16-le")) // 2
        if not float(offset).is_integer() or not 0 <= offset <= length:
            raise RpcError(
                E.INVALID_PARAMS,
                f"Invalid params: offset: must be a whole number from 0 to {length} "
                "(UTF-16 code units of text)",
            )
        items: list[dict[str, Any]] = []
        for source in self.sources:
            items.extend(await source.complete(chat, text, int(offset)))
        return {"items": items}
