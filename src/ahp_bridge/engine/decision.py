"""What the one decision on a client action returns (`accept.decide`)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ahp_bridge.translate.commands import Call

if TYPE_CHECKING:
    from ahp_bridge.engine.chats import Chat

__all__ = ["Accepted", "Refused"]


@dataclass(frozen=True)
class Refused:
    reason: str


@dataclass
class Accepted:
    """Apply `action` (canonical) on `channel`, then `then` (what it implies)."""

    channel: str
    action: dict[str, Any]
    #: The chat whose calls follow (the action's own, or the default chat's for a session).
    chat: Chat | None = None
    calls: tuple[Call, ...] = ()
    #: Done after the action is applied (a feature's own follow-up).
    then: list[Callable[[], None]] = field(default_factory=list)
    #: A 1.0 turn id the chat already knows: echoed, nothing else happens.
    no_op: bool = False
