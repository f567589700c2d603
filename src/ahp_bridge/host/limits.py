"""The host's count limits on sessions and chats, and the size of the texts their requests carry.

The session manager owns sessions and chats, so their counts are checked here, where it is
(the per-action rules, sans-IO, are `state.limits`). A request over a count limit is answered
`-32009 PermissionDenied`: its params are fine, the host's policy refuses to hold more for now
(`-32602 InvalidParams` would tell the client to change the request, which cannot help; 1.0's
PermissionDenied carries no data, so nothing suggests a `resourceRequest` could lift it). A
request whose params carry a text over a size limit is `-32602`: that request is what must change.
Every message names its config key.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ahp_bridge.protocol import errors as E
from ahp_bridge.protocol.errors import RpcError
from ahp_bridge.state.limits import Limits, size_of

if TYPE_CHECKING:
    from ahp_bridge.host.sessions import Session, SessionManager

__all__ = ["Limits", "check_new_chat", "check_new_session"]


def check_new_session(
    manager: SessionManager, client_id: str | None, params: dict[str, Any]
) -> None:
    """Raise the RpcError that refuses a `createSession` over a limit; nothing is kept then."""
    limits = manager.limits
    _check_size(params, limits)
    dormant = len(manager.durable.dormant) if manager.durable is not None else 0
    held = len(manager.sessions) + dormant + len(manager._creating)
    if held >= limits.max_sessions:
        raise RpcError(
            E.PERMISSION_DENIED,
            f"Permission denied: this host already keeps {held} sessions, its limit "
            f"(limits.max_sessions): dispose of sessions you no longer need",
        )
    mine = sum(1 for s in manager.sessions.values() if s.created_by == client_id)
    if client_id is not None and mine >= limits.max_sessions_per_client:
        raise RpcError(
            E.PERMISSION_DENIED,
            f"Permission denied: client {client_id!r} already created {mine} sessions, the most "
            "one client may (limits.max_sessions_per_client): dispose of sessions you no longer "
            "need",
        )


def check_new_chat(manager: SessionManager, session: Session, params: dict[str, Any]) -> None:
    """Raise the RpcError that refuses a `createChat` over a limit."""
    limits = manager.limits
    _check_size(params, limits)
    opening = sum(
        1
        for chat in manager.chats.values()
        if chat.session is session and chat.uri not in session.chats
    )
    count = len(session.chats) + opening
    if count >= limits.max_chats_per_session:
        raise RpcError(
            E.PERMISSION_DENIED,
            f"Permission denied: this session already has {count} chats, the most the host keeps "
            "for one session (limits.max_chats_per_session): dispose of a chat first",
        )


def _check_size(params: dict[str, Any], limits: Limits) -> None:
    """The texts a creation request makes the host keep: the same bound as a client action."""
    for key in ("initialMessage", "activeClient", "config", "workingDirectories"):
        value = params.get(key)
        if value is None:
            continue
        size = size_of(value)
        if size > limits.max_action_bytes:
            raise RpcError(
                E.INVALID_PARAMS,
                f"Invalid params: {key}: {size:,} bytes; the host keeps at most "
                f"{limits.max_action_bytes:,} (limits.max_action_bytes): send less",
            )
    dirs = params.get("workingDirectories")
    if isinstance(dirs, list) and len(dirs) > limits.max_working_directories:
        raise RpcError(
            E.INVALID_PARAMS,
            f"Invalid params: workingDirectories: {len(dirs)} directories; a session has at most "
            f"{limits.max_working_directories} (limits.max_working_directories)",
        )
