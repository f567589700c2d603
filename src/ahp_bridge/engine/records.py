"""The durable catalog's records as plain data (the catalog itself is the shell's, on a thread).

The engine reads them to list and name sessions from an earlier run (*dormant* until a request
names them) and to decide what to write; `host.durable.catalog` stores them in SQLite.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Final

#: A session's lifecycle as the catalog records it.
CREATING: Final = "creating"
READY: Final = "ready"
FAILED: Final = "failed"


@dataclass
class ChatRecord:
    """One chat: an AHP chat URI and the provider conversation behind it."""

    uri: str
    conversation_id: str
    created_at: str
    modified_at: str
    title: str = ""
    #: JSON of the AHP turn running when last written ({id, startedAt, text}); "" when idle.
    active_turn: str = ""

    def running_turn(self) -> dict[str, Any] | None:
        if not self.active_turn:
            return None
        try:
            value = json.loads(self.active_turn)
        except ValueError:
            return None
        return value if isinstance(value, dict) else None


@dataclass
class SessionRecord:
    """One session as the catalog keeps it (times are ISO 8601 strings, as on the wire)."""

    uri: str
    provider: str
    workdir: str
    created_at: str
    modified_at: str
    working_directories: list[str] = field(default_factory=list)
    title: str = ""
    status: str = CREATING
    error: str = ""
    default_chat: str = ""
    #: A provider conversation this session was imported from (opened instead of a new one).
    import_conversation: str = ""
    #: Its settings values (`SessionState.config.values`); None when none were recorded.
    settings: dict[str, Any] | None = None
    chats: list[ChatRecord] = field(default_factory=list)
