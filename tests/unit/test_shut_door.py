"""Who may connect: loopback decided on addresses, blank tokens, origins compared as parsed."""

from __future__ import annotations

import socket
from typing import Any

import pytest

from ahp_bridge.config import ConfigError, load_settings
from ahp_bridge.host.transport.binding import is_loopback
from ahp_bridge.host.transport.server import ServerOptions, check_bind, check_upgrade
from ahp_bridge.origins import origin_allowed, parse_origin_pattern


@pytest.mark.parametrize(
    "host", ["127.0.0.1", "127.8.9.10", "::1", "[::1]", "::ffff:127.0.0.1", "localhost"]
)
def test_loopback_literals_and_localhost(host: str) -> None:
    assert is_loopback(host)


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "", "192.0.2.2", "10.0.0.1", "::ffff:10.0.0.1"])
def test_other_addresses_are_not_loopback(host: str) -> None:
    assert not is_loopback(host)


def test_a_name_that_starts_with_127_is_not_loopback_unless_it_resolves_so(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Unresolvable (the .invalid TLD never resolves): not loopback, so no bind without a token.
    assert not is_loopback("127.0.0.1.invalid")
    with pytest.raises(ValueError, match="token is required"):
        check_bind(ServerOptions(host="127.0.0.1.invalid"))
    # A name that resolves to a public address, as DNS can make any name do (faked here: the
    # tests have no DNS of their own).
    real = socket.getaddrinfo

    def fake(host: str, *args: Any, **kwargs: Any) -> Any:
        if host == "127.evil.example":
            return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", ("203.0.113.7", 0))]
        if host == "mixed.example":
            return [
                (socket.AF_INET, socket.SOCK_STREAM, 6, "", ("127.0.0.1", 0)),
                (socket.AF_INET, socket.SOCK_STREAM, 6, "", ("203.0.113.7", 0)),
            ]
        return real(host, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", fake)
    assert not is_loopback("127.evil.example")
    assert not is_loopback("mixed.example")  # every address must be loopback
    with pytest.raises(ValueError, match=r"refusing to listen on 127\.evil\.example"):
        check_bind(ServerOptions(host="127.evil.example"))


@pytest.mark.parametrize("token", [None, "", " ", "\t\n"])
def test_an_empty_or_blank_token_is_no_token(token: str | None) -> None:
    with pytest.raises(ValueError, match="a connection token is required"):
        check_bind(ServerOptions(host="0.0.0.0", token=token))
    # On loopback a blank token does not lock everyone out either: it is simply not checked.
    assert check_upgrade(ServerOptions(token=token), "/", {}) is None


def test_a_blank_token_from_the_environment_is_no_token(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AHP_BRIDGE__SERVER__TOKEN", "   ")
    assert load_settings().server.token is None
    monkeypatch.setenv("AHP_BRIDGE__SERVER__TOKEN", " s3cret ")
    assert load_settings().server.token == "s3cret"


def test_token_is_compared_exactly() -> None:
    options = ServerOptions(host="0.0.0.0", token="s3cret")
    assert check_upgrade(options, "/?tkn=s3cret", {}) is None
    assert check_upgrade(options, "/?tkn=s3cre", {}) == "missing or wrong connection token"
    assert check_upgrade(options, "/", {}) == "missing or wrong connection token"


@pytest.mark.parametrize(
    ("origin", "allowed"),
    [
        ("http://localhost:3000", True),
        ("http://LOCALHOST:3000", True),
        ("http://localhost", True),  # default port 80: any port
        ("http://localhost:1@evil.example", False),  # user info: the host is evil.example
        ("http://localhost:1@localhost", False),  # no user info at all in an origin
        ("http://evil.example#@localhost:1", False),
        ("http://localhost.evil.example:3000", False),
        ("https://localhost:3000", False),  # another scheme
        ("http://localhost:3000/x", False),  # an origin has no path
        ("null", False),
        ("", False),
        ("http://127.0.0.1:8080", True),
        ("http://127.0.0.1.evil.example:8080", False),
        ("http://[::1]:5173", True),
    ],
)
def test_origins_are_compared_as_scheme_host_and_port(origin: str, allowed: bool) -> None:
    patterns = ("http://localhost:*", "http://127.0.0.1:*", "http://[::1]:5173")
    assert origin_allowed(origin, patterns) is allowed
    reason = check_upgrade(ServerOptions(allowed_origins=patterns), "/", {"origin": origin})
    assert (reason is None) is allowed


def test_a_fixed_port_pattern_admits_that_port_only() -> None:
    patterns = ("https://app.example:8443",)
    assert origin_allowed("https://app.example:8443", patterns)
    assert not origin_allowed("https://app.example", patterns)
    assert origin_allowed("https://app.example", ("https://app.example",))  # 443 both


@pytest.mark.parametrize(
    "pattern", ["http://*.example", "http://localhost:*/x", "localhost:*", "*", "http://a:1:*"]
)
def test_patterns_other_than_a_port_wildcard_are_refused(pattern: str) -> None:
    with pytest.raises(ValueError, match="is not scheme://host"):
        parse_origin_pattern(pattern)
    with pytest.raises(ValueError, match="is not scheme://host"):
        check_bind(ServerOptions(allowed_origins=(pattern,)))


def test_a_bad_origin_pattern_is_a_config_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AHP_BRIDGE__SERVER__ALLOWED_ORIGINS", '["http://*.example"]')
    with pytest.raises(ConfigError) as err:
        load_settings()
    assert str(err.value) == (
        "environment variable AHP_BRIDGE__SERVER__ALLOWED_ORIGINS: server.allowed_origins: "
        "allowed origin 'http://*.example' is not scheme://host[:port], with `:*` for any port"
    )
