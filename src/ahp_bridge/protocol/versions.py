"""AHP protocol version negotiation (``initialize.protocolVersions``) and the wire lines.

Versions are strict ``MAJOR.MINOR.PATCH`` (no pre-release or build part, no leading zeros).
The host speaks five *wire lines*. 1.0 and 0.9 are upstream's caret-compatible ranges
(docs/specification/versioning.md, 1.0.0: "hosts accept ``>=1.0.0 <2.0.0`` or ``>=0.9.0
<0.10.0``, regardless of offer order"); each older minor that shipped is a line of its own,
since a pre-1.0 minor is compatible only with itself (versioning.md, SemVer caret); and VS
Code's "0.10.0" release is served as the wire it shares:

======  ==================  =====================================================================
line    accepted offers     wire
======  ==================  =====================================================================
1.0     >=1.0.0 <2.0.0      the canonical state as it is (a newer 1.x client speaks 1.0 to us)
1.0     >=0.10.0 <0.11.0    VS Code's 0.10.0: "shares the wire contract of the upstream baselines"
                            (1.0.0 and 0.9.0: microsoft/vscode agentHostProtocolCompatibility.ts
                            @14577b9c); upstream's development number between 0.9.0 and 1.0.0,
                            whose 1.0 additions had landed (ahp-0.6-0.8-diff.md §10)
0.9     >=0.9.0 <0.10.0     1.0's wire contract minus the action types 0.9 does not know
0.8     >=0.8.0 <0.9.0      the spec/v0.8.0 release, through a pure down-translation (``wire08``)
0.7     >=0.7.0 <0.8.0      today's 0.7.0 wire, through a pure down-translation (``wire07``)
0.6     >=0.6.0 <0.7.0      the 0.6.0 release, through a pure down-translation (``wire06``)
======  ==================  =====================================================================

The host answers with the exact offered string of the highest offer it supports, whatever the
order of the offer (``["0.8.0", "0.7.0"]`` gets ``0.8.0``; ``["0.10.0", "0.9.0"]`` gets
``0.10.0``). No fit is JSON-RPC ``-32005`` with ``data.supportedVersions`` (every range above);
a malformed string is an explicit error (``-32602``), as the spec asks.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Final, Literal

__all__ = [
    "LINES",
    "SUPPORTED_VERSIONS",
    "V06",
    "V07",
    "V08",
    "V09",
    "V10",
    "Line",
    "MalformedVersion",
    "UnsupportedVersion",
    "line_of",
    "negotiate",
    "negotiate_line",
    "parse_version",
]

Line = Literal["0.6", "0.7", "0.8", "0.9", "1.0"]
V06: Final[Line] = "0.6"
V07: Final[Line] = "0.7"
V08: Final[Line] = "0.8"
V09: Final[Line] = "0.9"
V10: Final[Line] = "1.0"
#: Every wire line, newest first.
LINES: Final[tuple[Line, ...]] = (V10, V09, V08, V07, V06)

#: Each accepted pre-1.0 minor and its line (1.x is the 1.0 line).
_MINORS: Final[dict[int, Line]] = {10: V10, 9: V09, 8: V08, 7: V07, 6: V06}

#: What ``data.supportedVersions`` lists: every accepted SemVer range, newest first.
SUPPORTED_VERSIONS: Final[tuple[str, ...]] = (
    ">=1.0.0 <2.0.0",
    ">=0.10.0 <0.11.0",
    ">=0.9.0 <0.10.0",
    ">=0.8.0 <0.9.0",
    ">=0.7.0 <0.8.0",
    ">=0.6.0 <0.7.0",
)

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


def line_of(version: tuple[int, int, int]) -> Line | None:
    """The wire line a parsed version belongs to, or None when the host does not speak it."""
    major, minor, _ = version
    if major == 1:
        return V10
    if major == 0:
        return _MINORS.get(minor)
    return None


def negotiate_line(offered: Sequence[object]) -> tuple[str, Line]:
    """The exact offered string to answer with, and the wire line it fixes for the connection.

    Every offer is validated first (one malformed entry fails the handshake, as the spec asks
    for an explicit error). Among offers the host speaks, the highest version wins; equal
    versions cannot differ as strings, so the offer order never matters.
    """
    if isinstance(offered, str | bytes) or not isinstance(offered, Sequence):
        raise MalformedVersion(offered)
    parsed = [(parse_version(v), v) for v in offered]
    best: tuple[tuple[int, int, int], str, Line] | None = None
    for version, text in parsed:
        line = line_of(version)
        if line is not None and (best is None or version > best[0]):
            best = (version, str(text), line)
    if best is None:
        raise UnsupportedVersion(SUPPORTED_VERSIONS, offered)
    return best[1], best[2]


def negotiate(offered: Sequence[object]) -> str:
    """The exact offered string to use for the connection (see :func:`negotiate_line`)."""
    return negotiate_line(offered)[0]
