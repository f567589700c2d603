"""AHP channel URIs: which kind of channel a URI names, and the fixed derivations.

The reducer for an action is chosen by the scheme of its envelope's ``channel``
(``ahp-chat:/...`` -> chat). :func:`channel_kind` answers that question by scheme (ids are
opaque); :func:`is_session_uri` is the strict check for a client-chosen ``createSession``
channel, which must be ``ahp-session:/<uuid>``. Ids are always passed in: nothing here
invents one.
"""

from __future__ import annotations

import re
from typing import Final

__all__ = [
    "ANNOTATIONS_SUFFIX",
    "ROOT",
    "annotations_uri",
    "channel_kind",
    "is_session_uri",
    "session_of",
]

ROOT: Final = "ahp-root://"
ANNOTATIONS_SUFFIX: Final = "/annotations"

_SESSION: Final = "ahp-session:/"
_PREFIXES: Final = (
    ("ahp-chat:/", "chat"),
    ("ahp-terminal:/", "terminal"),
    ("ahp-changeset:/", "changeset"),
    ("ahp-resource-watch:/", "resourceWatch"),
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


def annotations_uri(session: str) -> str:
    """The annotations channel of ``session``: ``ahp-session:/<id>/annotations``."""
    if channel_kind(session) != "session":
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
