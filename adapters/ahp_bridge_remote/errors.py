"""Sentinel errors across the wire: agentapi exception <-> gRPC status + ErrorInfo trailer.

The server puts the sentinel's stable ``reason`` into an ErrorInfo message in the trailing
metadata ``agentapi-error-bin``; the client turns it back into the same exception class with
``agentapi.error_for_reason``. Transport failures have no sentinel: they become RemoteError
subclasses (or the sentinel a caller must act on, such as SubmissionUncertain for a prompt
whose delivery the dropped connection left unknown).
"""

from __future__ import annotations

import grpc

from ahp_bridge import agentapi

from ._gen.agentapi.v1 import agentapi_pb2 as pb

ERROR_METADATA_KEY = "agentapi-error-bin"


class RemoteError(Exception):
    """A served provider's failure that is not an agentapi sentinel; the text is for users."""

    def __init__(
        self,
        message: str,
        code: grpc.StatusCode = grpc.StatusCode.UNKNOWN,
        *,
        from_provider: bool = False,
    ) -> None:
        super().__init__(message)
        self.code = code
        # True when the served provider itself raised (the call reached it and failed).
        self.from_provider = from_provider


class RemoteUnavailable(RemoteError, ConnectionError):
    """The served provider cannot be reached (not started, dead, or the connection dropped)."""


class RemoteNotConnected(RemoteUnavailable):
    """No connection to the served provider: the call was never sent."""


class RemoteAuthError(RemoteError, PermissionError):
    """The served provider refused the call's token."""


_NOT_FOUND = (
    agentapi.ConversationNotFound,
    agentapi.ItemNotFound,
    agentapi.BackgroundTaskNotFound,
)
_UNCERTAIN = (agentapi.SubmissionUncertain, agentapi.ForkUncertain, agentapi.RewindUncertain)


def status_for(error: agentapi.AgentAPIError) -> grpc.StatusCode:
    """The gRPC status a sentinel travels with (the reason in ErrorInfo is what counts)."""
    if isinstance(error, _NOT_FOUND):
        return grpc.StatusCode.NOT_FOUND
    if isinstance(error, agentapi.Unsupported):
        return grpc.StatusCode.UNIMPLEMENTED
    if isinstance(error, _UNCERTAIN):
        return grpc.StatusCode.UNKNOWN
    return grpc.StatusCode.FAILED_PRECONDITION


def error_trailer(
    reason: str, message: str, host_tools: tuple[str, ...] = ()
) -> tuple[tuple[str, bytes], ...]:
    """Trailing metadata carrying ErrorInfo (with the clashing tools of a HostToolClash)."""
    info = pb.ErrorInfo(reason=reason, message=message, host_tools=list(host_tools))
    return ((ERROR_METADATA_KEY, info.SerializeToString()),)


def error_info(error: grpc.RpcError) -> pb.ErrorInfo | None:
    """The ErrorInfo a failed call carried, if any."""
    trailing = getattr(error, "trailing_metadata", None)
    for key, value in (trailing() if callable(trailing) else None) or ():
        if key == ERROR_METADATA_KEY and isinstance(value, bytes):
            info = pb.ErrorInfo()
            info.ParseFromString(value)
            return info
    return None


def from_rpc_error(error: grpc.RpcError, *, where: str) -> Exception:
    """The exception a caller sees for a failed call; where names the call for messages."""
    info = error_info(error)
    code = error.code() if callable(getattr(error, "code", None)) else grpc.StatusCode.UNKNOWN
    details = error.details() if callable(getattr(error, "details", None)) else ""
    if info is not None and info.reason == agentapi.HostToolClash.reason:
        return agentapi.HostToolClash(info.message, list(info.host_tools))
    if info is not None and info.reason:
        return agentapi.error_for_reason(info.reason, info.message)
    if info is not None:
        return RemoteError(info.message, code, from_provider=True)
    if code == grpc.StatusCode.UNAUTHENTICATED:
        return RemoteAuthError(f"{where}: the provider refused the token", code)
    if code in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED):
        return RemoteUnavailable(f"{where}: provider unreachable ({details})", code)
    return RemoteError(f"{where}: {code.name}: {details}", code)
