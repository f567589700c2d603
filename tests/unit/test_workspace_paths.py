"""The pure path decisions behind every workspace request: which URIs are local files, and
what counts as inside a root."""

from __future__ import annotations

import pytest

from ahp_bridge.host.workspace.paths import (
    UriRefused,
    content_type,
    is_within,
    looks_binary,
    path_of_uri,
    root_path,
    uri_of_path,
    within_any,
)


@pytest.mark.parametrize(
    ("uri", "path"),
    [
        ("file:///home/me/x.txt", "/home/me/x.txt"),
        ("file://localhost/home/me/x.txt", "/home/me/x.txt"),
        ("FILE:///a", "/a"),
        ("file:///a%20b/c%23d", "/a b/c#d"),
        ("file:///a/./b/../c", "/a/c"),
        ("file:///a/b/../../..", "/"),
        ("file:///", "/"),
        ("file:///a//b/", "/a/b"),
    ],
)
def test_file_uris_become_normalised_paths(uri: str, path: str) -> None:
    assert path_of_uri(uri) == path


@pytest.mark.parametrize(
    ("uri", "why"),
    [
        ("", "expected a file: URI"),
        ("http://x/y", "only file: URIs are served by this host (got http)"),
        ("virtual://client/a", "only file: URIs are served by this host (got virtual)"),
        ("/etc/passwd", "only file: URIs are served by this host (got no scheme)"),
        ("file://host/etc", "file URIs must name this host, not 'host'"),
        ("file:///etc?x=1", "file URIs take no query or fragment"),
        ("file:///etc#frag", "file URIs take no query or fragment"),
        ("file:///a%2fb", "file URIs may not encode '/' or NUL in a path segment"),
        ("file:///a%00b", "file URIs may not encode '/' or NUL in a path segment"),
        ("file:a/b", "file URIs must carry an absolute path"),
    ],
)
def test_everything_else_is_refused_with_a_reason(uri: str, why: str) -> None:
    with pytest.raises(UriRefused) as err:
        path_of_uri(uri)
    assert str(err.value) == why


def test_uri_of_path_round_trips() -> None:
    for path in ("/a b/c#d?e", "/ü/日本", "/x/%41"):
        assert path_of_uri(uri_of_path(path)) == path
    assert uri_of_path("/a b") == "file:///a%20b"


def test_root_path_takes_uris_and_plain_paths() -> None:
    assert root_path("file:///w/p") == "/w/p"
    assert root_path("/w/p/") == "/w/p"


def test_within_is_by_component_not_by_prefix() -> None:
    assert is_within("/w/p", "/w/p")
    assert is_within("/w/p/a/b", "/w/p")
    assert not is_within("/w/p2/a", "/w/p")  # a sibling sharing a prefix is outside
    assert not is_within("/w", "/w/p")
    assert is_within("/anything", "/")
    assert within_any("/w/p/a", ["/x", "/w", "/w/p"]) == "/w/p"  # the innermost
    assert within_any("/z", ["/x", "/w"]) is None


def test_binary_sniffing() -> None:
    assert not looks_binary(b"plain text\n")
    assert not looks_binary("ünïcödé ✓".encode())
    assert not looks_binary("✓".encode()[:2])  # a character cut at the end of a sample
    assert looks_binary(b"text\x00more")
    assert looks_binary("café".encode("latin-1") + b" and more")
    assert looks_binary(b"\x89PNG\r\n\x1a\n")


def test_content_types_agree_with_the_content() -> None:
    assert content_type("a.md", binary=False) == "text/markdown"
    assert content_type("a.py", binary=False) == "text/x-python"
    assert content_type("a.json", binary=False) == "application/json"
    assert content_type("a.ts", binary=False) == "text/x-typescript"
    assert content_type("a.rs", binary=False) == "text/x-rust"  # not a system table's XML
    assert content_type("a.weird", binary=False) == "text/plain"
    assert content_type("a.svg", binary=False) == "image/svg+xml"
    assert content_type("Makefile", binary=False) == "text/plain"
    assert content_type("a.png", binary=True) == "image/png"
    assert content_type("a.txt", binary=True) == "application/octet-stream"
    assert content_type("blob", binary=True) == "application/octet-stream"
    assert content_type("a.png", binary=None) == "image/png"
    assert content_type("noext", binary=None) == "application/octet-stream"
