"""ActionEnvelope: one sequenced action, and its frames in each wire version in use."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

import orjson


class WireLine(Protocol):
    """What an envelope needs of a wire line to shape its frames (``protocol.lens.Wire`` is
    one; the state layer knows no line of its own)."""

    @property
    def line(self) -> str: ...
    def envelope_frames(self, env: Envelope) -> tuple[str, ...]: ...
    def envelope_wires(self, env: Envelope) -> list[dict[str, Any]]: ...


@dataclass(frozen=True, slots=True)
class Envelope:
    """A canonical action with its serverSeq, the dispatching client's origin and any rejection.

    `kind` is the channel's kind, `changed` whether the action changed the state, `post` the
    state it produced when an older wire's form of it depends on that state, and `at` the host's
    time when it was applied (None where the host gave none; the reducers never read it). The
    frames a wire sends for it are computed and serialised once per wire version, on first use,
    and cached, so broadcasting to N subscribers costs one encode per version in use.

    A rejection echo (`rejection_reason` set) carries the sender's own action as it sent it: it
    is sent only to its sender, in that sender's version, and never translated.
    """

    channel: str
    server_seq: int
    action: dict[str, Any]
    origin: dict[str, Any] | None = None
    rejection_reason: str | None = None
    kind: str = ""
    changed: bool = True
    post: dict[str, Any] | None = None
    at: str | None = None
    _frames: dict[str, tuple[str, ...]] = field(
        default_factory=dict, init=False, repr=False, compare=False
    )

    def wire(self) -> dict[str, Any]:
        """The canonical ActionEnvelope params; absent origin/rejectionReason are omitted."""
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
        """The canonical `{"jsonrpc":"2.0","method":"action","params":<wire>}` text."""
        cached = self._frames.get("")
        if cached is None:
            message = {"jsonrpc": "2.0", "method": "action", "params": self.wire()}
            cached = self._frames[""] = (orjson.dumps(message).decode(),)
        return cached[0]

    def frames(self, wire: WireLine) -> tuple[str, ...]:
        """The frames a peer of `wire`'s line receives for this envelope (none, one or more)."""
        if self.rejection_reason is not None:
            return (self.frame,)
        cached = self._frames.get(wire.line)
        if cached is None:
            cached = self._frames[wire.line] = wire.envelope_frames(self)
        return cached

    def wires(self, wire: WireLine) -> list[dict[str, Any]]:
        """The ActionEnvelope params `wire`'s line receives (a reconnect replay's entries)."""
        if self.rejection_reason is not None:
            return [self.wire()]
        return wire.envelope_wires(self)
