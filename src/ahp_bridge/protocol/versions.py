"""AHP protocol version negotiation (``initialize.protocolVersions``).

Versions are strict ``MAJOR.MINOR.PATCH`` (no pre-release or build part, no leading zeros).
The host answers with the exact offered string of the highest offer that is caret-compatible
with a version it supports: for 0.x that means the same minor (0.7.z), for 1.x+ the same
major. No fit is JSON-RPC ``-32005`` with ``data.supportedVersions``; a malformed string is an
explicit error.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Final

__all__ = [
    "SUPPORTED_VERSIONS",
    "MalformedVersion",
    "UnsupportedVersion",
    "negotiate",
    "parse_version",
]

SUPPORTED_VERSIONS: Final[tuple[str, ...]] = ("0.7.0",)

_VERSION: Final = re.compile(r"(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\Z")


class MalformedVersion(ValueError):
    """An offered version is not a strict ``MAJOR.MINOR.PATCH`` string."""

    def __init__(self, version: object) -> None:
        super().__init__(f"malformed protocol version {version!r}: expected MAJOR.MINOR.PATCH")
        self.version = version


class UnsupportedVersion(ValueError):
    """No offered version is compatible; ``supported`` goes into ``data.supportedVersions``."""

    def __init__(self, supported: Sequence[str], offered: Sequence[object] = ()) -> None:
        super().__init__(
            f"unsupported protocol version(s) {list(offered)!r}; supported: {list(supported)!r}"
        )
        self.supported = list(supported)
        self.offered = list(offered)


def parse_version(version: object) -> tuple[int, int, int]:
    """Parse a strict ``MAJOR.MINOR.PATCH`` string, raising :class:`MalformedVersion`."""
    if not isinstance(version, str):
        raise MalformedVersion(version)
    match = _VERSION.match(version)
    if match is None:
        raise MalformedVersion(version)
    major, minor, patch = (int(part) for part in match.groups())
    return major, minor, patch


def _compatible(offer: tuple[int, int, int], supported: tuple[int, int, int]) -> bool:
    if offer[0] != supported[0]:
        return False
    return offer[1] == supported[1] if offer[0] == 0 else True


def negotiate(offered: Sequence[object], supported: Sequence[str] = SUPPORTED_VERSIONS) -> str:
    """Return the exact offered string to use for the connection.

    Every offer is validated first (one malformed entry fails the handshake, as the spec asks
    for an explicit error). Among compatible offers the highest version wins; ties keep the
    client's order.
    """
    if isinstance(offered, str | bytes) or not isinstance(offered, Sequence):
        raise MalformedVersion(offered)
    parsed = [(parse_version(v), v) for v in offered]
    ours = [parse_version(v) for v in supported]
    best: tuple[tuple[int, int, int], str] | None = None
    for version, text in parsed:
        if any(_compatible(version, s) for s in ours) and (best is None or version > best[0]):
            best = (version, str(text))
    if best is None:
        raise UnsupportedVersion(supported, offered)
    return best[1]
