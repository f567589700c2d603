"""Listen addresses and the call token: who may drive a served provider.

A served provider runs agents with the user's rights, so anything that can reach its port can
act as the user. Loopback and Unix sockets are the default; any other address must carry a
token, which every call presents as ``authorization: Bearer <token>`` metadata.
"""

from __future__ import annotations

import hmac
import ipaddress
from collections.abc import Callable
from typing import Any

import grpc

TOKEN_METADATA_KEY = "authorization"


class AddressError(ValueError):
    """A listen or dial address that is malformed or unsafe without a token."""


def split_host_port(address: str) -> tuple[str, int]:
    """Split ``HOST:PORT`` or ``[V6]:PORT``; raise AddressError on anything else."""
    host, sep, port = address.rpartition(":")
    if not sep or not host or not port.isdigit():
        raise AddressError(f"expected unix:PATH or HOST:PORT, got {address!r}")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    return host, int(port)


def is_local(address: str) -> bool:
    """True for a Unix socket or a loopback host: reachable only from this machine."""
    if address.startswith(("unix:", "unix-abstract:")):
        return True
    host, _ = split_host_port(address)
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_listen(address: str, token: str | None) -> None:
    """Refuse a listen address that would expose the provider without a token."""
    if token is not None and not token:
        raise AddressError("token must not be empty")
    if not is_local(address) and token is None:
        raise AddressError(
            f"refusing to listen on non-loopback address {address!r} without a token"
        )


def bearer(token: str) -> tuple[tuple[str, str], ...]:
    """The call metadata carrying token."""
    return ((TOKEN_METADATA_KEY, f"Bearer {token}"),)


def _deny(_request: Any, context: grpc.ServicerContext) -> Any:
    context.abort(grpc.StatusCode.UNAUTHENTICATED, "missing or wrong token")


class TokenInterceptor(grpc.ServerInterceptor):
    """Rejects every call whose metadata lacks the server's token (constant-time compare)."""

    def __init__(self, token: str) -> None:
        self._expected = f"Bearer {token}".encode()

    def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], grpc.RpcMethodHandler | None],
        handler_call_details: grpc.HandlerCallDetails,
    ) -> grpc.RpcMethodHandler | None:
        presented = b""
        for key, value in handler_call_details.invocation_metadata or ():
            if key == TOKEN_METADATA_KEY:
                presented = value.encode() if isinstance(value, str) else value
                break
        if hmac.compare_digest(presented, self._expected):
            return continuation(handler_call_details)
        handler = continuation(handler_call_details)
        if handler is not None and handler.response_streaming:
            return grpc.unary_stream_rpc_method_handler(_deny_stream)
        return grpc.unary_unary_rpc_method_handler(_deny)


def _deny_stream(_request: Any, context: grpc.ServicerContext) -> Any:
    context.abort(grpc.StatusCode.UNAUTHENTICATED, "missing or wrong token")
    yield  # pragma: no cover - abort raises
