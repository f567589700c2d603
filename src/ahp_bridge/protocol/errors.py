"""JSON-RPC and AHP error codes, and the exception that carries one to the wire.

Handlers raise `RpcError`; the connection turns it into the error response. Keeping the codes
here (sans-IO) lets every layer name the same numbers the spec does.
"""

from __future__ import annotations

from typing import Any

# JSON-RPC 2.0
PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603

# AHP (AhpErrorCode): 0.7.0's codes, and 1.0's Conflict. 1.0 removed ContentNotFound (-32006
# stays reserved); the 1.0 and 0.9 wires send NotFound instead (protocol.lens).
SESSION_NOT_FOUND = -32001
PROVIDER_NOT_FOUND = -32002
SESSION_ALREADY_EXISTS = -32003
TURN_IN_PROGRESS = -32004
UNSUPPORTED_PROTOCOL_VERSION = -32005
CONTENT_NOT_FOUND = -32006
AUTH_REQUIRED = -32007
NOT_FOUND = -32008
PERMISSION_DENIED = -32009
ALREADY_EXISTS = -32010
#: 1.0: a stale precondition, e.g. `resourceWrite` with an `ifMatch` that no longer matches.
CONFLICT = -32011


class RpcError(Exception):
    """An error answer for one request: code, human-readable message, optional data."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data

    def to_wire(self) -> dict[str, Any]:
        error: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.data is not None:
            error["data"] = self.data
        return error

    def __repr__(self) -> str:
        return f"RpcError({self.code}, {self.message!r})"
