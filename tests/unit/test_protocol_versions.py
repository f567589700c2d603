"""Protocol version negotiation, case by case against docs/specification/versioning.md (1.0.0).

The rules under test (upstream microsoft/agent-host-protocol, versioning.md, "Negotiation"): the
server selects the highest SemVer entry within a supported caret-compatible range and returns
that exact offered string; hosts accept ``>=1.0.0 <2.0.0`` or ``>=0.9.0 <0.10.0`` regardless of
offer order (this host also serves ``0.8.x``, ``0.7.x`` and ``0.6.x``, each a line of its own
since a pre-1.0 minor is compatible only with itself, and VS Code's ``0.10.x`` on the 1.0
line, whose wire it shares); no fit is ``-32005`` with ``supportedVersions``;
malformed versions (not three non-negative integers without leading zeros, or with pre-release
or build metadata) are an explicit error. Upstream's ``types/test-cases/version-negotiation.json``
was not readable from here, so the cases are written from that text.
"""

from __future__ import annotations

import pytest

from ahp_bridge.protocol.versions import (
    LINES,
    SUPPORTED_VERSIONS,
    MalformedVersion,
    UnsupportedVersion,
    line_of,
    negotiate,
    negotiate_line,
    parse_version,
)


def test_supported_versions_name_every_line() -> None:
    assert SUPPORTED_VERSIONS == (
        ">=1.0.0 <2.0.0",
        ">=0.10.0 <0.11.0",
        ">=0.9.0 <0.10.0",
        ">=0.8.0 <0.9.0",
        ">=0.7.0 <0.8.0",
        ">=0.6.0 <0.7.0",
    )
    assert LINES == ("1.0", "0.9", "0.8", "0.7", "0.6")


@pytest.mark.parametrize(
    ("offered", "chosen", "line"),
    [
        # What today's clients send (ahp-versions.md §3).
        (["1.0.0", "0.9.0"], "1.0.0", "1.0"),  # VS Code, npm 1.0.0, agent-host-protocol-ui
        (["0.9.0", "1.0.0"], "1.0.0", "1.0"),  # offer order does not matter
        (["0.7.0"], "0.7.0", "0.7"),  # VS Code 1.131
        (["1.1.0"], "1.1.0", "1.0"),  # a newer 1.x client (TS MultiHostClient at HEAD)
        (["1.0.0", "1.1.0"], "1.1.0", "1.0"),  # highest in range, echoed exactly
        (["0.9.0", "0.7.0", "0.6.0", "0.5.2", "0.5.1"], "0.9.0", "0.9"),  # 0.9-synced VS Code
        (["1.0.0", "0.8.0", "0.7.0", "0.6.0"], "1.0.0", "1.0"),  # a VS Code dev build
        (["0.9.3"], "0.9.3", "0.9"),
        (["0.7.3", "0.7.10"], "0.7.10", "0.7"),  # numeric, not lexical, comparison
        (["0.6.0", "0.7.0", "0.5.2"], "0.7.0", "0.7"),
        (["2.0.0", "1.9.9"], "1.9.9", "1.0"),  # 2.x is outside the caret range
        (["0.8.0", "0.9.0"], "0.9.0", "0.9"),
        (["10.0.0", "0.7.1"], "0.7.1", "0.7"),
        # The lines every shipped client needs (ahp-0.6-0.8-diff.md §9).
        (["0.8.0"], "0.8.0", "0.8"),  # TS MultiHostClient of npm 0.8.0, VS Code synced to 0.8
        (["0.8.0", "0.7.0"], "0.8.0", "0.8"),
        (["0.7.0", "0.8.0"], "0.8.0", "0.8"),  # whatever the order
        (["0.8.0", "0.7.0", "0.6.0", "0.5.2", "0.5.1"], "0.8.0", "0.8"),  # upstream 0.8.0's list
        (["0.8.3"], "0.8.3", "0.8"),  # the whole minor
        (["0.6.0"], "0.6.0", "0.6"),  # late-July clients, Qusic's Swift client
        (["0.6.0", "0.5.2", "0.5.1"], "0.6.0", "0.6"),  # upstream 0.6.0's list
        (["0.5.2", "0.6.1"], "0.6.1", "0.6"),
        (["0.10.0"], "0.10.0", "1.0"),  # VS Code's 0.10.0: the 0.9/1.0 wire contract
        (["0.10.0", "0.9.0"], "0.10.0", "1.0"),  # echoed exactly, not folded to 0.9.0
        (["0.9.0", "0.10.0", "0.8.0"], "0.10.0", "1.0"),
        (["1.0.0", "0.10.0", "0.9.0"], "1.0.0", "1.0"),  # VS Code's own advertised list
        (["0.10.0", "0.7.0", "0.6.0"], "0.10.0", "1.0"),
    ],
)
def test_picks_the_highest_supported_offer(offered: list[str], chosen: str, line: str) -> None:
    assert negotiate_line(offered) == (chosen, line)
    assert negotiate(offered) == chosen


@pytest.mark.parametrize(
    "offered", [["0.5.2", "0.5.1"], ["0.11.0"], ["2.0.0"], ["0.1.0"], ["0.4.0", "3.0.0"], []]
)
def test_no_supported_offer(offered: list[str]) -> None:
    with pytest.raises(UnsupportedVersion) as err:
        negotiate(offered)
    assert err.value.supported == list(SUPPORTED_VERSIONS)
    assert err.value.offered == offered


@pytest.mark.parametrize(
    "bad",
    [
        "0.7",
        "1",
        "1.0.0-beta.1",
        "1.0.0+build",
        "v1.0.0",
        "01.0.0",
        "1.00.0",
        "1.0.00",
        " 1.0.0",
        "1.0.0 ",
        "-1.0.0",
        "",
        7,
        None,
        1.0,
    ],
)
def test_malformed_versions_are_an_explicit_error(bad: object) -> None:
    with pytest.raises(MalformedVersion):
        negotiate(["1.0.0", bad])
    with pytest.raises(MalformedVersion):
        parse_version(bad)


def test_offered_must_be_a_list_not_a_string() -> None:
    with pytest.raises(MalformedVersion):
        negotiate("1.0.0")


@pytest.mark.parametrize(
    ("version", "line"),
    [
        ((1, 0, 0), "1.0"),
        ((1, 42, 7), "1.0"),
        ((0, 10, 0), "1.0"),
        ((0, 10, 4), "1.0"),
        ((0, 9, 0), "0.9"),
        ((0, 8, 0), "0.8"),
        ((0, 7, 5), "0.7"),
        ((0, 6, 0), "0.6"),
    ],
)
def test_line_of(version: tuple[int, int, int], line: str) -> None:
    assert line_of(version) == line


@pytest.mark.parametrize("version", [(0, 5, 2), (2, 0, 0), (0, 11, 0), (0, 0, 1)])
def test_line_of_unsupported(version: tuple[int, int, int]) -> None:
    assert line_of(version) is None


def test_parse_version() -> None:
    assert parse_version("10.20.30") == (10, 20, 30)
