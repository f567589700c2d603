"""A peer as the engine sees it: a small record, never a socket.

The shell opens one `Peer` per WebSocket connection and feeds the engine its frames; the engine
keeps what the protocol needs of it (who it is once initialized, the wire line it negotiated,
its subscriptions, the request ids it has used) and the frames waiting for its writer. The
outbox is bounded: a peer that lets it fill up is cut off (`server.outbound_queue`), so no
client can make the host hold more for it than that, nor slow anyone else down.
"""

from __future__ import annotations

from collections import OrderedDict, deque
from dataclasses import dataclass, field

from ahp_bridge.protocol.jsonrpc import RequestId
from ahp_bridge.protocol.lens import Wire


@dataclass(eq=False, slots=True)
class Peer:
    """One client connection (identity is the object: two peers may share a client id)."""

    #: The shell's connection number (for logs).
    number: int
    #: The wire line (one of the host's) fixed at `initialize` (or `reconnect`): every shape
    #: sent and accepted; until then `protocol.lens.DEFAULT_LINE`.
    wire: Wire
    client_id: str | None = None
    protocol_version: str | None = None
    subscriptions: set[str] = field(default_factory=set)
    #: Frames waiting for the writer, oldest first (the shell drains it after a `Flush`).
    outbox: deque[str] = field(default_factory=deque)
    #: Request ids seen, oldest first (`server.remembered_request_ids` of them).
    seen_ids: OrderedDict[RequestId, None] = field(default_factory=OrderedDict)
    #: No more frames go out or come in: closed by either side.
    closed: bool = False

    @property
    def initialized(self) -> bool:
        return self.client_id is not None

    def __repr__(self) -> str:
        return f"Peer(#{self.number}, {self.client_id!r}, {self.wire.line})"
