"""What the shell feeds the engine: typed inputs, one at a time, on one thread.

Every input is something that *happened*: a frame arrived, a socket went away, a provider
emitted events, a job the engine asked for finished, a timer fired. The engine answers each with
the effects it decided (`Engine.handle`). Inputs carry only data (agentapi models, JSON, ids):
never a socket, a trio object or a provider.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ahp_bridge import agentapi

if TYPE_CHECKING:
    from ahp_bridge.engine.peers import Peer
    from ahp_bridge.protocol.errors import RpcError
    from ahp_bridge.protocol.jsonrpc import Message, RequestId


@dataclass(frozen=True, slots=True)
class Received:
    """A text frame from a peer (`text`), or a binary one (`text` None: always refused)."""

    peer: Peer
    text: str | None


@dataclass(frozen=True, slots=True)
class Restored:
    """The dormant sessions a message named are live now (after `effects.Restore`)."""

    peer: Peer
    message: Message


@dataclass(frozen=True, slots=True)
class PeerGone:
    """The peer's socket is closed (by the peer, or after the engine's `ClosePeer`)."""

    peer: Peer


@dataclass(frozen=True, slots=True)
class Answered:
    """The shell's answer to a request the engine deferred to it (`effects.Serve`)."""

    peer: Peer
    request_id: RequestId
    result: Any = None
    error: RpcError | None = None


@dataclass(frozen=True, slots=True)
class ProviderEvents:
    """A batch of one conversation's events, in emit order (the chat's sink drained)."""

    chat: str
    events: list[agentapi.Event]


@dataclass(frozen=True, slots=True)
class JobDone:
    """A job the engine asked for (`effects.Run` with a ticket) finished.

    `error` is the exception it raised (None: it succeeded, with `result`).
    """

    ticket: int
    result: Any = None
    error: BaseException | None = None


@dataclass(frozen=True, slots=True)
class HostToolCalled:
    """The provider called a client's tool (`OpenRequest.call_tool`); the shell waits as
    `waiter` until the engine resolves it (`effects.ResolveHostTool`). The chat's events before
    the call are delivered first."""

    chat: str
    waiter: int
    call: agentapi.HostToolCall


@dataclass(frozen=True, slots=True)
class HostToolCancelled:
    """The provider stopped waiting for the host tool call `waiter` (its context ended)."""

    chat: str
    waiter: int


@dataclass(frozen=True, slots=True)
class TimerFired:
    key: tuple[Any, ...]


@dataclass(frozen=True, slots=True)
class HostActions:
    """Actions the shell applies on the host's behalf (a watch saw files change, a read of
    the provider's customizations finished), in order; a channel gone meanwhile is skipped."""

    actions: list[tuple[str, dict[str, Any]]] = field(default_factory=list)


Input = (
    Received
    | Restored
    | PeerGone
    | Answered
    | ProviderEvents
    | JobDone
    | HostToolCalled
    | HostToolCancelled
    | TimerFired
    | HostActions
)
