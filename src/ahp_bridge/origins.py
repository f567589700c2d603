"""Browser origins, parsed: the allow-list the WebSocket upgrade checks `Origin` against.

An origin is compared as (scheme, host, port), never as a glob over the raw header, so
`http://localhost:*` cannot admit `http://localhost:1@evil.example` (whose host is
evil.example). A pattern is `scheme://host[:port]`, with `:*` as its only wildcard.
Pure functions (config validation and the server both use them).
"""

from __future__ import annotations

import re
from urllib.parse import urlsplit

_HOST_CHARS = re.compile(r"[A-Za-z0-9.\-]+|[0-9A-Fa-f:.]+")
_DEFAULT_PORTS = {"http": 80, "https": 443, "ws": 80, "wss": 443}

Origin = tuple[str, str, int | None]


def parse_origin(value: str) -> Origin | None:
    """An Origin header as (scheme, host, port), or None when it is not a plain origin.

    A serialized origin is `scheme://host[:port]` and nothing else (RFC 6454): anything with
    user info, a path, a query or a fragment is refused, as is the opaque origin `null`.
    """
    try:
        parts = urlsplit(value.strip())
        port = parts.port
    except ValueError:
        return None
    if (
        parts.scheme not in _DEFAULT_PORTS
        or not parts.hostname
        or not _HOST_CHARS.fullmatch(parts.hostname)
        or "@" in parts.netloc
        or parts.path not in ("", "/")
        or parts.query
        or parts.fragment
    ):
        return None
    return parts.scheme, parts.hostname.lower(), port or _DEFAULT_PORTS[parts.scheme]


def parse_origin_pattern(pattern: str) -> Origin:
    """An allowed-origin setting as (scheme, host, port); port None is the `:*` wildcard.

    Raises ValueError with the rule when the pattern is anything else (a host wildcard, a path).
    """
    text = pattern.strip()
    wildcard = text.endswith(":*")
    base = text[:-2] if wildcard else text
    parsed = parse_origin(base)
    if parsed is None or (wildcard and urlsplit(base).netloc.rpartition("]")[2].count(":")):
        raise ValueError(
            f"allowed origin {pattern!r} is not scheme://host[:port], with `:*` for any port"
        )
    scheme, host, port = parsed
    return scheme, host, None if wildcard else port


def origin_allowed(origin: str, patterns: tuple[str, ...]) -> bool:
    parsed = parse_origin(origin)
    if parsed is None:
        return False
    scheme, host, port = parsed
    for pattern in patterns:
        p_scheme, p_host, p_port = parse_origin_pattern(pattern)
        if p_scheme == scheme and p_host == host and p_port in (None, port):
            return True
    return False
