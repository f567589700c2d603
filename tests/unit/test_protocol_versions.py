"""Protocol version negotiation (strict SemVer, 0.x caret = same minor)."""

from __future__ import annotations

import pytest

from ahp_bridge.protocol.versions import (
    SUPPORTED_VERSIONS,
    MalformedVersion,
    UnsupportedVersion,
    negotiate,
    parse_version,
)


def test_supported_versions() -> None:
    assert SUPPORTED_VERSIONS == ("0.7.0",)


@pytest.mark.parametrize(
    ("offered", "chosen"),
    [
        (["0.7.0"], "0.7.0"),
        (["0.7.3"], "0.7.3"),
        (["1.0.0", "0.9.0", "0.7.1"], "0.7.1"),
        (["0.7.0", "0.7.2", "0.7.1"], "0.7.2"),
        (["0.6.0", "0.7.0", "0.5.2"], "0.7.0"),
        (["0.7.10", "0.7.9"], "0.7.10"),
    ],
)
def test_picks_the_highest_compatible_offer(offered: list[str], chosen: str) -> None:
    assert negotiate(offered) == chosen


@pytest.mark.parametrize(
    "offered", [["1.0.0", "0.9.0"], ["0.6.0", "0.5.2", "0.5.1"], ["0.8.0"], ["7.0.0"], []]
)
def test_no_compatible_offer(offered: list[str]) -> None:
    with pytest.raises(UnsupportedVersion) as err:
        negotiate(offered)
    assert err.value.supported == ["0.7.0"]
    assert err.value.offered == offered


@pytest.mark.parametrize(
    "bad",
    ["0.7", "0.7.0-beta.1", "0.7.0+build", "v0.7.0", "07.0.0", "0.07.0", " 0.7.0", "", 7, None],
)
def test_malformed_versions_are_an_explicit_error(bad: object) -> None:
    with pytest.raises(MalformedVersion):
        negotiate(["0.7.0", bad])
    with pytest.raises(MalformedVersion):
        parse_version(bad)


def test_offered_must_be_a_list_not_a_string() -> None:
    with pytest.raises(MalformedVersion):
        negotiate("0.7.0")


def test_major_caret_for_1x_supported_versions() -> None:
    assert negotiate(["1.4.2", "1.0.0", "2.0.0"], supported=("1.1.0",)) == "1.4.2"
    with pytest.raises(UnsupportedVersion):
        negotiate(["2.0.0"], supported=("1.1.0",))


def test_parse_version() -> None:
    assert parse_version("10.20.30") == (10, 20, 30)
