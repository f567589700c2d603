"""Classify and word SDK failures for agentapi callers.

A JSON-RPC error reply means the runtime answered and refused: the request had no effect. Any
other failure (the process exited, the connection dropped, a timeout) leaves the outcome unknown,
which matters for prompts: those must surface as SubmissionUncertain and never be resent.
"""

from __future__ import annotations

import re

_RPC_PREFIX = re.compile(r"^JSON-RPC Error -?\d+:\s*(Request \S+ failed with message:\s*)?")


def is_definite_rejection(exc: BaseException) -> bool:
    """True when the runtime replied with an error (so nothing happened)."""
    from copilot._jsonrpc import JsonRpcError

    return isinstance(exc, JsonRpcError)


def is_not_found(exc: BaseException) -> bool:
    """The runtime's answer for an unknown session id."""
    return is_definite_rejection(exc) and "not found" in str(exc).lower()


#: How the CLI words a turn that failed because nothing signs it in (observed with 1.0.102).
_SIGNED_OUT_MARKERS = ("no github oauth token", "copilot hmac key", "not authenticated")


def is_signed_out_message(text: str) -> bool:
    """True when a runtime message says nothing signs the CLI in."""
    lowered = text.lower()
    return any(marker in lowered for marker in _SIGNED_OUT_MARKERS)


def is_signed_out(exc: BaseException) -> bool:
    return is_signed_out_message(str(exc))


def rpc_message(exc: BaseException) -> str:
    """The runtime's own message without the JSON-RPC framing."""
    text = str(exc).strip() or type(exc).__name__
    return _RPC_PREFIX.sub("", text).strip()


def plain_error(action: str, exc: BaseException) -> str:
    """``could not <action>: <reason>`` in plain words, for people."""
    from copilot._jsonrpc import ProcessExitedError

    if isinstance(exc, ProcessExitedError):
        return f"could not {action}: the Copilot CLI exited"
    if isinstance(exc, TimeoutError):
        return f"could not {action}: the Copilot CLI did not answer in time"
    if isinstance(exc, ConnectionError | BrokenPipeError | EOFError):
        return f"could not {action}: the connection to the Copilot CLI was lost"
    return f"could not {action}: {rpc_message(exc)}"
