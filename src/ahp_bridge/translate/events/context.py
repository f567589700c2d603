"""What every part of the event translator shares: the chat it writes, its ids, its clock."""

from __future__ import annotations

import base64
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .._wire import Action, Emitted


@dataclass(frozen=True)
class ChatContext:
    """One translator's chat and session, its injected ids and clock, and its subagent URIs.

    ``agent_id`` is empty for a main chat, else the subagent whose read-only chat this is.
    """

    chat_uri: str
    session_uri: str
    agent_id: str
    new_id: Callable[[], str]
    now_ms: Callable[[], int]
    subagent_chat_uri: Callable[[str], str]

    def chat(self, action: Action) -> Emitted:
        return (self.chat_uri, action)

    def session(self, action: Action) -> Emitted:
        return (self.session_uri, action)


def as_json(payload: Any) -> Any:
    """A payload as JSON data: agentapi models by their Go JSON form."""
    if payload is None:
        return None
    to_json = getattr(payload, "to_json", None)
    if callable(to_json):
        return to_json()
    if isinstance(payload, bytes):
        return base64.b64encode(payload).decode("ascii")
    return payload
