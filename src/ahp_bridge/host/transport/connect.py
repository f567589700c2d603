"""How a client reaches this bridge: the connection token, the URLs to print, VS Code's settings.

Every bind needs a token (a loopback one may opt out with `server.require_token = false`: any
local user's process can connect to loopback). When none is configured, one is generated on the
first run and kept in the data directory (`connection-token`, mode 0600), so the URL a client
saved keeps working across restarts. A wildcard bind (`0.0.0.0`, `::`) is printed as the real
addresses of this machine, since `ws://0.0.0.0:…` is not a place a client can connect to.

VS Code's entry shape (`chat.remoteAgentHosts`: `{name, address, connectionToken}`, the address
as `host:port` for plain ws) is from microsoft/vscode
`src/vs/platform/agentHost/common/remoteAgentHostService.ts` (`IRawRemoteAgentHostEntry`,
`parseRemoteAgentHostInput`) at commit 03310cc5432ffc9f48401ad17e8d10ee614e8ade.
"""

from __future__ import annotations

import contextlib
import ipaddress
import os
import secrets
import socket
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

from ahp_bridge_support.private import private_dir

from ahp_bridge.config import Settings
from ahp_bridge.host.transport.binding import has_token, is_loopback

TOKEN_FILE = "connection-token"

_WILDCARDS_V4 = ("0.0.0.0",)
_WILDCARDS_V6 = ("::", "[::]")


@dataclass(frozen=True)
class TokenSource:
    """Where the token in effect came from: `configured`, `generated` or `reused` (a file), or
    `missing` (none kept yet, and none made)."""

    kind: str
    path: Path | None = None


def ensure_token(settings: Settings, *, create: bool = True) -> TokenSource | None:
    """Give a bind without a token the one kept in the data directory (made on the first run).

    Every bind needs one unless `server.require_token` is false for a loopback bind: then
    this returns None. A configured token is `TokenSource("configured")`.
    Sets `settings.server.token`. Without `create`, a token not kept yet is not made (nothing
    is written): `TokenSource("missing", path)`. Raises OSError when the file cannot be read
    or written.
    """
    server = settings.server
    if has_token(server.token):
        return TokenSource("configured")
    if is_loopback(server.host) and not server.require_token:
        return None
    path = Path(settings.data_dir()) / TOKEN_FILE
    kept = _read_token(path)
    if kept is not None:
        server.token = kept
        return TokenSource("reused", path)
    if not create:
        return TokenSource("missing", path)
    token = secrets.token_urlsafe(24)
    private_dir(path.parent)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        os.fchmod(f.fileno(), 0o600)
        f.write(token + "\n")
    server.token = token
    return TokenSource("generated", path)


def _read_token(path: Path) -> str | None:
    try:
        text = path.read_text().strip()
    except FileNotFoundError:
        return None
    if not text:
        return None
    if path.stat().st_mode & 0o077:
        os.chmod(path, 0o600)  # someone widened it: a token is a credential
    return text


def _host_addresses() -> tuple[list[str], list[str]]:
    """This machine's IPv4 and IPv6 unicast addresses (loopback included, link-local not)."""
    v4: list[str] = []
    v6: list[str] = []
    if sys.platform.startswith("linux"):
        v4 = _linux_ipv4()
        with contextlib.suppress(OSError):
            for line in Path("/proc/net/if_inet6").read_text().splitlines():
                raw = line.split()[0]
                addr = ipaddress.IPv6Address(int(raw, 16))
                if not addr.is_link_local:
                    v6.append(str(addr))
    with contextlib.suppress(OSError):
        for info in socket.getaddrinfo(socket.gethostname(), None, type=socket.SOCK_STREAM):
            (v4 if info[0] == socket.AF_INET else v6).append(str(info[4][0]).split("%")[0])
    primary = _primary_ipv4()
    if primary:
        v4.insert(0, primary)
    v4.append("127.0.0.1")
    return _ordered(v4), _ordered([a for a in v6 if not ipaddress.ip_address(a).is_link_local])


def _linux_ipv4() -> list[str]:
    import fcntl
    import struct

    out = []
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        for _, name in socket.if_nameindex():
            try:
                packed = fcntl.ioctl(s.fileno(), 0x8915, struct.pack("256s", name.encode()[:15]))
            except OSError:
                continue  # no IPv4 address on this interface
            out.append(socket.inet_ntoa(packed[20:24]))
    return out


def _primary_ipv4() -> str | None:
    """The address of the default route (a UDP connect sends nothing)."""
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.connect(("192.0.2.1", 9))
            return str(s.getsockname()[0])
    except OSError:
        return None


def _ordered(addresses: list[str]) -> list[str]:
    """Unique, first-seen order, loopback last (a wildcard bind is meant for other machines)."""
    unique = list(dict.fromkeys(addresses))
    return sorted(unique, key=lambda a: ipaddress.ip_address(a).is_loopback)


def reachable_hosts(host: str) -> list[str]:
    """The hosts a client can use for a bind to `host` (a wildcard becomes real addresses)."""
    host = host.strip()
    if host in _WILDCARDS_V4 or host in _WILDCARDS_V6 or not host:
        v4, v6 = _host_addresses()
        if host in _WILDCARDS_V4:
            return v4
        if host in _WILDCARDS_V6:
            return v6 or ["::1"]
        return v4 + v6
    return [host.strip("[]")]


def _authority(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def connect_url(host: str, port: int, token: str | None) -> str:
    """A WebSocket URL a client can use as it is."""
    url = f"ws://{_authority(host, port)}"
    if has_token(token):
        assert token is not None
        url += "/?tkn=" + quote(token, safe="")
    return url


def vscode_settings(host: str, port: int, token: str | None, *, name: str = "") -> dict[str, Any]:
    """The VS Code user settings that add this bridge as a remote agent host."""
    entry: dict[str, Any] = {
        "name": name or f"ahp-bridge on {socket.gethostname()}",
        "address": _authority(reachable_hosts(host)[0], port),
    }
    if has_token(token):
        entry["connectionToken"] = token
    return {"chat.remoteAgentHostsEnabled": True, "chat.remoteAgentHosts": [entry]}
