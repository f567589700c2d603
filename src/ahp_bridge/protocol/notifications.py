"""Params of the host-to-client notifications that the 0.7.0 schema does not define.

The schema only mentions these in prose; the shapes follow the public repository's
``ServerNotificationMap`` (notes/ahp-protocol.md §2). Each is its own top-level JSON-RPC
method; none is replayed on reconnect. ``channel`` is required (always ``"ahp-root://"``) so
that a dump with ``exclude_unset`` can never drop it.
"""

from __future__ import annotations

from typing import Any, Final, Literal

from pydantic import Field

from ahp_bridge.protocol import _generated as _g
from ahp_bridge.protocol.base import WireModel
from ahp_bridge.protocol.models import ActionEnvelope

__all__ = [
    "AUTH_REQUIRED",
    "NOTIFICATION_PARAMS",
    "PROGRESS",
    "SESSION_ADDED",
    "SESSION_REMOVED",
    "SESSION_SUMMARY_CHANGED",
    "AuthRequiredParams",
    "PartialSessionSummary",
    "ProgressParams",
    "SessionAddedParams",
    "SessionRemovedParams",
    "SessionSummaryChangedParams",
]

SESSION_ADDED: Final = "root/sessionAdded"
SESSION_REMOVED: Final = "root/sessionRemoved"
SESSION_SUMMARY_CHANGED: Final = "root/sessionSummaryChanged"
PROGRESS: Final = "root/progress"
AUTH_REQUIRED: Final = "auth/required"


class SessionAddedParams(WireModel):
    """``root/sessionAdded``: a session appeared (sent to root subscribers)."""

    channel: Literal["ahp-root://"]
    summary: _g.SessionSummary


class SessionRemovedParams(WireModel):
    """``root/sessionRemoved``: a session was disposed."""

    channel: Literal["ahp-root://"]
    session: str


class PartialSessionSummary(WireModel):
    """``Partial<SessionSummary>``: only the fields that changed are present.

    Hosts never send ``resource``, ``provider`` or ``createdAt`` here (they do not change), but
    a relayed value is kept rather than rejected.
    """

    provider: str | None = None
    title: str | None = None
    status: int | None = Field(default=None, ge=0)
    activity: str | None = None
    project: _g.ProjectInfo | None = None
    workingDirectories: list[str] | None = None
    annotations: _g.AnnotationsSummary | None = None
    resource: str | None = None
    createdAt: str | None = None
    modifiedAt: str | None = None
    changes: _g.ChangesSummary | None = None
    field_meta: dict[str, Any] | None = Field(default=None, alias="_meta")


class SessionSummaryChangedParams(WireModel):
    """``root/sessionSummaryChanged``: some summary fields of ``session`` changed."""

    channel: Literal["ahp-root://"]
    session: str
    changes: PartialSessionSummary


class ProgressParams(WireModel):
    """``root/progress``: progress of work started by ``createSession{progressToken}``.

    The final frame has ``progress == total``.
    """

    channel: Literal["ahp-root://"]
    progressToken: str
    progress: int | float
    total: int | float | None = None
    message: str | None = None


class AuthRequiredParams(WireModel):
    """``auth/required``: the client must (re-)``authenticate`` for ``resource``."""

    channel: Literal["ahp-root://"]
    resource: _g.ProtectedResourceMetadata
    reason: Literal["required", "expired"] | None = None


#: Method name -> params model of every host-to-client notification the bridge sends.
NOTIFICATION_PARAMS: Final[dict[str, type[WireModel]]] = {
    "action": ActionEnvelope,
    SESSION_ADDED: SessionAddedParams,
    SESSION_REMOVED: SessionRemovedParams,
    SESSION_SUMMARY_CHANGED: SessionSummaryChangedParams,
    PROGRESS: ProgressParams,
    AUTH_REQUIRED: AuthRequiredParams,
}
