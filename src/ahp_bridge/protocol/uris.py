"""AHP channel URIs: the fixed derivations, and what a client may choose as a session URI.

A channel's kind is bound when the host creates the channel and looked up from then on (the
store keeps it), never read from the URI: clients choose session URIs in their own schemes
(VS Code mints ``<provider>:/<uuid>``). :func:`channel_kind` only names the kind of the URIs
this host mints (``ahp-chat:/...``) and of the canonical forms, for messages about channels
that do not exist; :func:`session_uri_problem` says why a client-chosen session URI cannot be
used. Ids are always passed in: nothing here invents one.
"""

from __future__ import annotations

import re
from typing import Final

__all__ = [
    "ANNOTATIONS_SUFFIX",
    "MAX_SESSION_URI",
    "ROOT",
    "annotations_uri",
    "channel_kind",
    "is_session_uri",
    "session_id",
    "session_of",
    "session_uri_problem",
]

#: Longest client-chosen session URI accepted (its annotations channel adds 12 characters).
MAX_SESSION_URI: Final = 2048

ROOT: Final = "ahp-root://"
ANNOTATIONS_SUFFIX: Final = "/annotations"

_SESSION: Final = "ahp-session:/"
_PREFIXES: Final = (
    ("ahp-chat:/", "chat"),
    ("ahp-terminal:/", "terminal"),
    ("ahp-changeset:/", "changeset"),
    ("ahp-resource-watch:/", "resourceWatch"),
)
_SCHEME: Final = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*:")
#: Schemes of channels the host itself names: a session URI in them would be mistaken for one.
_HOST_SCHEMES: Final = frozenset(
    {"ahp-root", "ahp-chat", "ahp-terminal", "ahp-changeset", "ahp-resource-watch", "ahp-content"}
)
_UUID: Final = re.compile(
    r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\Z"
)


def channel_kind(uri: str) -> str | None:
    """Return the channel kind of ``uri`` or ``None`` when it is not an AHP channel URI.

    Kinds: ``root``, ``session``, ``annotations``, ``chat``, ``terminal``, ``changeset``,
    ``resourceWatch`` (the reducer names of the conformance fixtures).
    """
    if uri == ROOT:
        return "root"
    if uri.startswith(_SESSION):
        rest = uri[len(_SESSION) :]
        if rest.endswith(ANNOTATIONS_SUFFIX):
            rest = rest[: -len(ANNOTATIONS_SUFFIX)]
            return "annotations" if _is_segment(rest) else None
        return "session" if _is_segment(rest) else None
    for prefix, kind in _PREFIXES:
        if uri.startswith(prefix) and len(uri) > len(prefix) and uri[len(prefix)] != "/":
            return kind
    return None


def _is_segment(text: str) -> bool:
    return bool(text) and "/" not in text


def is_session_uri(uri: str) -> bool:
    """True only for ``ahp-session:/<uuid>`` with a real, hyphenated UUID and nothing else."""
    return uri.startswith(_SESSION) and _UUID.match(uri, len(_SESSION)) is not None


def session_uri_problem(uri: str) -> str | None:
    """Why ``uri`` cannot name a new session, or None: any absolute URI a client chooses works
    (``ahp-session:/<uuid>``, VS Code's ``<provider>:/<uuid>``), except the host's own channel
    schemes, a URI that would collide with a session's annotations channel, or junk."""
    if not uri or len(uri) > MAX_SESSION_URI:
        return f"a session URI has 1 to {MAX_SESSION_URI} characters"
    if any(ch.isspace() or ord(ch) < 32 or ord(ch) == 127 for ch in uri):
        return "a session URI has no spaces or control characters"
    match = _SCHEME.match(uri)
    if match is None or match.end() == len(uri):
        return "expected an absolute URI such as ahp-session:/<uuid>"
    if match.group()[:-1].lower() in _HOST_SCHEMES:
        return f"{match.group()} URIs name the host's own channels, not sessions"
    if uri.endswith(ANNOTATIONS_SUFFIX):
        return f"a session URI cannot end with {ANNOTATIONS_SUFFIX}"
    return None


def session_id(uri: str) -> str:
    """The id part of a session URI (``<scheme>:/<id>`` -> ``<id>``), for providers and logs."""
    match = _SCHEME.match(uri)
    rest = uri[match.end() :] if match else uri
    return rest.lstrip("/") or uri


def annotations_uri(session: str) -> str:
    """The annotations channel of ``session``: ``<session>/annotations``."""
    if session_uri_problem(session) is not None and channel_kind(session) != "session":
        raise ValueError(f"not a session URI: {session!r}")
    return session + ANNOTATIONS_SUFFIX


def session_of(uri: str) -> str | None:
    """The session URI that a session or annotations channel belongs to (else ``None``)."""
    kind = channel_kind(uri)
    if kind == "session":
        return uri
    if kind == "annotations":
        return uri[: -len(ANNOTATIONS_SUFFIX)]
    return None
