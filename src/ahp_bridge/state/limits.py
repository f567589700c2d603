"""How much a client may make the host keep: the limits, and the rules that apply them.

Memory must follow the host's configuration, not the client: every client-provided text the
host keeps (titles, drafts, turn, steering and queued messages, input answers, client tools'
input and results, annotations) is bounded in bytes, and every collection a client can grow
by dispatching (queued messages, annotations, working directories) in count. Sessions and chats
are counted by the host shell (host/limits.py), which owns them; the replay log is bounded in
bytes by the store.

Sans-IO and version-agnostic: the rules see canonical (1.0) actions, after each wire lifted
its client's action, so one rule serves every line. A refusal names the config key
(`limits.<name>`) so an operator knows what to raise and a user what not to send. Sizes are of
the action's canonical JSON (orjson, UTF-8), the form the host keeps and logs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import orjson

__all__ = ["Limits", "limit_problem"]

JSON = dict[str, Any]

KIB = 1024
MIB = 1024 * KIB


@dataclass(frozen=True, slots=True)
class Limits:
    """The defaults are config.example.toml's `[limits]`; each is explained there."""

    #: A session's title (shown in every client's session list and every summary it sends).
    max_title_bytes: int = 1 * KIB
    #: One client action the host keeps (a message with its attachments, a draft, an answer,
    #: a client tool's result, an annotation), as canonical JSON.
    max_action_bytes: int = 128 * KIB
    #: Queued messages one chat holds.
    max_queued_messages: int = 8
    #: Annotations, with their entries, one session's annotations channel holds.
    max_annotations: int = 64
    #: Working directories of one session.
    max_working_directories: int = 16
    #: Sessions the host keeps (live and in the catalog).
    max_sessions: int = 500
    #: Sessions one client id may create (in this run of the host).
    max_sessions_per_client: int = 20
    #: Chats of one session (the default chat included; subagents' read-only chats not).
    max_chats_per_session: int = 8
    #: Provider calls one chat holds waiting for its worker (a flood of actions is refused).
    max_pending_calls: int = 64
    #: Bytes one client id's accepted actions make the host keep, all sessions and chats
    #: together (engine/budget.py: the product of the other limits is bounded here).
    max_client_bytes: int = 32 * MIB
    #: Bytes every client's accepted actions make the host keep together.
    max_host_bytes: int = 512 * MIB
    #: Completed turns one chat keeps in the live state; older ones go to the catalog.
    max_live_turns: int = 50
    #: Bytes (canonical JSON) of completed turns one chat keeps live; the newest always stays.
    max_live_turn_bytes: int = 256 * KIB


def size_of(value: Any) -> int:
    """Bytes of `value` as canonical JSON (what the host keeps and logs)."""
    return len(orjson.dumps(value))


def limit_problem(kind: str, state: JSON, action: JSON, limits: Limits) -> str | None:
    """Why canonical client `action` on a `kind` channel in `state` is over a limit, or None."""
    action_type = str(action.get("type"))
    size = size_of(action)
    if size > limits.max_action_bytes:
        return (
            f"{action_type} is {size:,} bytes; the host keeps at most {limits.max_action_bytes:,} "
            "of one client action (limits.max_action_bytes): send less"
        )
    rule = _COUNTS.get(action_type)
    return rule(state, action, limits) if rule is not None else None


def title_problem(title: object, limits: Limits) -> str | None:
    size = len(title.encode()) if isinstance(title, str) else 0
    if size > limits.max_title_bytes:
        return (
            f"the title is {size:,} bytes; the host keeps at most {limits.max_title_bytes:,} "
            "(limits.max_title_bytes): use a shorter title"
        )
    return None


def _title(state: JSON, action: JSON, limits: Limits) -> str | None:
    return title_problem(action.get("title"), limits)


def _queued(state: JSON, action: JSON, limits: Limits) -> str | None:
    if action.get("kind") != "queued":
        return None
    queued = state.get("queuedMessages") or []
    if any(isinstance(m, dict) and m.get("id") == action.get("id") for m in queued):
        return None  # replacing a queued message keeps the count
    if len(queued) >= limits.max_queued_messages:
        return (
            f"this chat already holds {len(queued)} queued messages, the most the host keeps "
            f"(limits.max_queued_messages): wait for them to run or remove one"
        )
    return None


def _annotation_count(state: JSON) -> int:
    items = [a for a in state.get("annotations") or [] if isinstance(a, dict)]
    return len(items) + sum(len(a.get("entries") or []) for a in items)


def _annotations_full(state: JSON, limits: Limits) -> str | None:
    count = _annotation_count(state)
    if count >= limits.max_annotations:
        return (
            f"this session already holds {count} annotations and entries, the most the host "
            "keeps (limits.max_annotations): remove some first"
        )
    return None


def _annotation_set(state: JSON, action: JSON, limits: Limits) -> str | None:
    annotation = action.get("annotation")
    if not isinstance(annotation, dict):
        return None
    items = state.get("annotations") or []
    old = next(
        (a for a in items if isinstance(a, dict) and a.get("id") == annotation.get("id")), None
    )
    grows = (
        len(annotation.get("entries") or [])
        + 1
        - (0 if old is None else len(old.get("entries") or []) + 1)
    )
    if grows <= 0:
        return None
    if _annotation_count(state) + grows > limits.max_annotations:
        return _annotations_full(state, limits) or (
            f"this annotation would take the session past {limits.max_annotations} annotations "
            "and entries, the most the host keeps (limits.max_annotations): remove some first"
        )
    return None


def _entry_set(state: JSON, action: JSON, limits: Limits) -> str | None:
    entry = action.get("entry")
    items = state.get("annotations") or []
    target = next(
        (a for a in items if isinstance(a, dict) and a.get("id") == action.get("annotationId")),
        None,
    )
    if target is None or not isinstance(entry, dict):
        return None  # an unknown annotation is a no-op
    if any(e.get("id") == entry.get("id") for e in target.get("entries") or []):
        return None
    return _annotations_full(state, limits)


def _directory_set(state: JSON, action: JSON, limits: Limits) -> str | None:
    dirs = state.get("workingDirectories") or []
    if action.get("directory") in dirs or len(dirs) < limits.max_working_directories:
        return None
    return (
        f"this session already has {len(dirs)} working directories, the most the host keeps "
        "(limits.max_working_directories): remove one first"
    )


_COUNTS = {
    "session/titleChanged": _title,
    "chat/pendingMessageSet": _queued,
    "annotations/set": _annotation_set,
    "annotations/entrySet": _entry_set,
    "session/workingDirectorySet": _directory_set,
}
