"""What the engine asks of the shell: typed effects, collected per input.

The engine never waits and never touches a socket, a thread, a file or a clock; everything it
decides that needs one of those comes out as an effect, in order, and the shell carries it out.
Frames are the exception that keeps the hot path cheap: the engine appends them straight to each
peer's `outbox` (a plain deque it owns) and names the peers that got something in one `Flush`
at the end of the input, so a burst of envelopes wakes each socket's writer once.

Provider calls are data too (`translate.commands.Call` and the plans in `engine.calls`): the shell's
chat worker runs them one at a time, in the order the engine hands them out, and reports each
outcome back (`inputs.CallDone`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ahp_bridge import agentapi

if TYPE_CHECKING:
    from ahp_bridge.engine.jobs import Job
    from ahp_bridge.engine.peers import Peer


@dataclass(frozen=True, slots=True)
class Flush:
    """These peers have new frames in their outbox: wake their writers."""

    peers: tuple[Peer, ...]


@dataclass(frozen=True, slots=True)
class ClosePeer:
    """Close this peer's socket with `code` and `reason`.

    `drop_queued`: a client that fell behind gets only the frame in flight, not what is queued.
    `peer_gone`: the socket is gone already; there is no close frame to send.
    """

    peer: Peer
    code: int
    reason: str
    drop_queued: bool = False
    peer_gone: bool = False


@dataclass(frozen=True, slots=True)
class Serve:
    """Answer this request in the shell (it needs I/O: files, the provider, the catalog); the
    shell feeds the answer back with `inputs.Answered`, before it reads the peer's next frame,
    so replies keep their order."""

    peer: Peer
    request_id: int | str
    method: str
    params: dict[str, Any]


@dataclass(frozen=True, slots=True)
class Restore:
    """Bring these dormant sessions back from the catalog, then feed `inputs.Restored` with the
    same frame: the request names them, so it may only run once they are live."""

    peer: Peer
    uris: tuple[str, ...]
    message: Any


@dataclass(frozen=True, slots=True)
class Run:
    """Run this job in the shell (a provider call on a chat's worker, a read, a catalog write);
    `ticket` names it in the outcome the shell feeds back (None: nothing is fed back)."""

    job: Job
    ticket: int | None = None


@dataclass(frozen=True, slots=True)
class SetTimer:
    """Feed `inputs.TimerFired(key)` after `seconds` (a timer set again replaces the old one)."""

    key: tuple[Any, ...]
    seconds: float


@dataclass(frozen=True, slots=True)
class CancelTimer:
    key: tuple[Any, ...]


@dataclass(frozen=True, slots=True)
class ResolveHostTool:
    """The provider's host tool call waiting as `waiter` (`inputs.HostToolCalled`) gets `result`."""

    waiter: int
    result: agentapi.HostToolResult


@dataclass(frozen=True, slots=True)
class Log:
    """A line for the operator's log (never a prompt, a token or a file's text)."""

    level: str
    event: str
    fields: dict[str, Any] = field(default_factory=dict)
    #: Logged with its traceback (a bug the engine caught so one frame cannot stop the host).
    exc: BaseException | None = None


Effect = Flush | ClosePeer | Serve | Restore | Run | SetTimer | CancelTimer | ResolveHostTool | Log
