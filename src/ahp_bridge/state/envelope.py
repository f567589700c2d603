"""ActionEnvelope: one sequenced action as it goes on the wire."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import orjson


@dataclass(frozen=True, slots=True)
class Envelope:
    """An action with its serverSeq, the dispatching client's origin and any rejection.

    `frame` is the complete JSON-RPC `action` notification, serialised once and
    cached, so broadcasting to N subscribers costs one encode.
    """

    channel: str
    server_seq: int
    action: dict[str, Any]
    origin: dict[str, Any] | None = None
    rejection_reason: str | None = None
    _frame: str | None = field(default=None, init=False, repr=False, compare=False)

    def wire(self) -> dict[str, Any]:
        """The ActionEnvelope params; absent origin/rejectionReason are omitted."""
        out: dict[str, Any] = {
            "channel": self.channel,
            "action": self.action,
            "serverSeq": self.server_seq,
        }
        if self.origin is not None:
            out["origin"] = self.origin
        if self.rejection_reason is not None:
            out["rejectionReason"] = self.rejection_reason
        return out

    @property
    def frame(self) -> str:
        """`{"jsonrpc":"2.0","method":"action","params":<wire>}` as text, built on first use."""
        cached = self._frame
        if cached is None:
            message = {"jsonrpc": "2.0", "method": "action", "params": self.wire()}
            cached = orjson.dumps(message).decode()
            object.__setattr__(self, "_frame", cached)
        return cached
