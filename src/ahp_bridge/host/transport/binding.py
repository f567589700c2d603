"""What a bind address and a token are, before anything serves: no engine, no wire models.

`ahp-bridge` answers a wrong provider name, a missing token or `--print-vscode-settings`
from here and `connect`, in a tenth of the time the serving host takes to import.
"""

from __future__ import annotations

import ipaddress
import socket


def _loopback_address(text: str) -> bool:
    addr = ipaddress.ip_address(text.split("%", 1)[0])
    if isinstance(addr, ipaddress.IPv6Address) and addr.ipv4_mapped is not None:
        addr = addr.ipv4_mapped
    return addr.is_loopback


def is_loopback(host: str) -> bool:
    """True only when every address `host` names or resolves to is a loopback address.

    A literal is read with `ipaddress`; a name is resolved. A name that does not resolve, and
    the wildcard "" (every interface), are not loopback.
    """
    host = host.strip().strip("[]")
    if not host:
        return False
    try:
        return _loopback_address(host)
    except ValueError:
        pass
    try:
        infos = socket.getaddrinfo(host, None, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError):
        return False
    addresses = {str(info[4][0]) for info in infos}
    return bool(addresses) and all(_loopback_address(a) for a in addresses)


def has_token(token: str | None) -> bool:
    """An empty or whitespace-only token is no token."""
    return token is not None and bool(token.strip())
