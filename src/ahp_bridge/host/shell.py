"""The shell: feeds the engine what happens and carries out what it decides.

Everything here waits or does I/O; nothing here decides. `Shell.feed` hands one input to the
engine (`ahp_bridge.engine`) and executes the effects it returns, in order: frames are already
in the peers' outboxes (their writers are woken), closes go to the connections, jobs to the chat
workers, the catalog or the services that registered them, timers to a timer task, host tool
results to the provider calls waiting for them. A request the shell must answer (`Serve`) or a
restore it must do first (`Restore`) is handed back to the connection that read the frame: it
awaits it before reading the next one, so replies keep their order.
"""

from __future__ import annotations

import itertools
from collections.abc import Awaitable, Callable, Iterable
from typing import Any, Protocol

import structlog
import trio

from ahp_bridge import agentapi
from ahp_bridge.engine import effects as fx
from ahp_bridge.engine import inputs
from ahp_bridge.engine.core import Engine
from ahp_bridge.engine.fanout import Observer
from ahp_bridge.engine.jobs import (
    ArchiveTurns,
    CallChat,
    CloseConversation,
    Job,
    OpenConversation,
    Persist,
    ReadTurns,
    ShellJob,
)
from ahp_bridge.engine.peers import Peer
from ahp_bridge.protocol import errors as E
from ahp_bridge.protocol.errors import RpcError

__all__ = ["ANSWERED", "Answer", "Handler", "JobRunner", "Shell", "Socket"]

log = structlog.get_logger(__name__)

#: What serves a deferred request: the request in, the result (or RpcError raised) out.
Answer = Callable[[fx.Serve], Awaitable[Any]]
#: A handler that needs only the peer and the params.
Handler = Callable[[Peer, dict[str, Any]], Awaitable[Any]]
#: What runs a named shell job (`ShellJob`).
JobRunner = Callable[[ShellJob], Awaitable[Any]]


class Socket(Protocol):
    """What the shell needs of a connection: wake its writer, close its socket."""

    def wake(self) -> None: ...

    def close(self, effect: fx.ClosePeer) -> None: ...


class Shell:
    """The trio side of one host (see the module docstring)."""

    def __init__(self, engine: Engine, nursery: trio.Nursery) -> None:
        self.engine = engine
        self.nursery = nursery
        #: The open connections, by peer (the transport adds and removes them).
        self.connections_by_peer: dict[Peer, Socket] = {}
        self._no_connections = trio.Event()
        #: Deferred requests by method, and named shell jobs, as the services register them.
        self.answers: dict[str, Answer] = {}
        self.jobs: dict[str, JobRunner] = {}
        #: Chat jobs (open, call, close) go to the runtime's workers.
        self.chat_jobs: Callable[[Job, int | None], None] = self._no_workers
        #: Catalog writes go to the durable room.
        self.persist: Callable[[Persist], None] = lambda job: None
        #: Turns chats evicted from their live state go to the archive (the durable room), and
        #: are read back from it, in the order the engine handed the jobs out.
        self.archive: Callable[[ArchiveTurns], None] = self._no_archive
        self.read_turns: Callable[[ReadTurns], Awaitable[list[dict[str, Any]]]] | None = None
        #: Restores dormant sessions (the durable room), before the request that named them.
        self.restore: Callable[[tuple[str, ...]], Awaitable[None]] | None = None
        self._timers: dict[tuple[Any, ...], trio.CancelScope] = {}
        #: While held (`hold`), the peers to wake once released.
        self._held: dict[Peer, None] | None = None
        self._waiters: dict[int, tuple[trio.Event, list[agentapi.HostToolResult]]] = {}
        self._waiter_ids = itertools.count(1)

    # -- feeding -------------------------------------------------------------------------------

    def feed(self, event: inputs.Input) -> list[fx.Serve | fx.Restore]:
        """Hand one input to the engine and carry out its effects; the deferred requests and
        restores are returned for the connection to await in order."""
        return self.execute(self.engine.handle(event))

    def apply(self, channel: str, action: dict[str, Any]) -> None:
        """A host action from a service (a watch saw files change, a reading finished)."""
        self.execute(self.engine.apply(channel, action))

    def apply_all(self, actions: Iterable[tuple[str, dict[str, Any]]]) -> None:
        self.feed(inputs.HostActions(list(actions)))

    def settle(self) -> None:
        """Carry out what a service decided by calling the engine directly."""
        self.execute(self.engine.take_effects())

    def settle_with(self, change: Callable[[Engine], object]) -> None:
        """Call the engine (a service's news: a sign-in, a reading), then carry out its effects."""
        change(self.engine)
        self.settle()

    def serve_with(self, handlers: dict[str, Handler]) -> None:
        """Answer these methods with handlers of (peer, params)."""
        for method, handler in handlers.items():
            self.answers[method] = _by_params(handler)

    def observe(self, observer: Observer, types: Iterable[str] | None = None) -> None:
        self.engine.fanout.observe(observer, types)

    def execute(self, effects: Iterable[fx.Effect]) -> list[fx.Serve | fx.Restore]:
        later: list[fx.Serve | fx.Restore] = []
        for effect in effects:
            match effect:
                case fx.Flush(peers=peers):
                    if self._held is not None:
                        self._held.update(dict.fromkeys(peers))
                        continue
                    for peer in peers:
                        socket = self.connections_by_peer.get(peer)
                        if socket is not None:
                            socket.wake()
                case fx.ClosePeer(peer=peer):
                    socket = self.connections_by_peer.get(peer)
                    if socket is not None:
                        socket.close(effect)
                case fx.Serve() | fx.Restore():
                    later.append(effect)
                case fx.Run(job=job, ticket=ticket):
                    self._run(job, ticket)
                case fx.SetTimer(key=key, seconds=seconds):
                    self._set_timer(key, seconds)
                case fx.CancelTimer(key=key):
                    scope = self._timers.pop(key, None)
                    if scope is not None:
                        scope.cancel()
                case fx.ResolveHostTool(waiter=waiter, result=result):
                    held = self._waiters.pop(waiter, None)
                    if held is not None:
                        held[1].append(result)
                        held[0].set()
                case fx.Log(level=level, event=event, fields=fields, exc=exc):
                    if exc is not None:
                        log.error(event, exc_info=exc, **fields)
                    else:
                        getattr(log, level)(event, **fields)
        return later

    def hold(self) -> None:
        """Hold the writes the next inputs decide until `release`: a connection feeding every
        message of one read gets one write per peer for all of them. Only ever held across
        synchronous code (released before anything awaits), so no other task waits on it."""
        if self._held is None:
            self._held = {}

    def release(self) -> None:
        """Wake the connections that got frames while held."""
        held, self._held = self._held, None
        for peer in held or ():
            socket = self.connections_by_peer.get(peer)
            if socket is not None:
                socket.wake()

    async def serve(self, effect: fx.Serve | fx.Restore) -> None:
        """Await what a connection must before it reads its next frame."""
        if isinstance(effect, fx.Restore):
            if self.restore is not None:
                await self.restore(effect.uris)
            for more in self.feed(inputs.Restored(effect.peer, effect.message)):
                await self.serve(more)
            return
        answer = self.answers.get(effect.method)
        try:
            if answer is None:
                raise RpcError(E.METHOD_NOT_FOUND, f"Method not found: {effect.method}")
            result = await answer(effect)
        except RpcError as err:
            self.feed(inputs.Answered(effect.peer, effect.request_id, error=err))
            return
        except Exception:
            log.exception("request failed", method=effect.method, conn=effect.peer.number)
            error = RpcError(E.INTERNAL_ERROR, "Internal error")
            self.feed(inputs.Answered(effect.peer, effect.request_id, error=error))
            return
        if result is not ANSWERED:
            self.feed(inputs.Answered(effect.peer, effect.request_id, result=result))

    # -- connections ---------------------------------------------------------------------------

    def connection_opened(self, peer: Peer, socket: Socket) -> None:
        self.connections_by_peer[peer] = socket
        self._no_connections = trio.Event()

    def connection_closed(self, peer: Peer) -> None:
        self.connections_by_peer.pop(peer, None)
        if not self.connections_by_peer:
            self._no_connections.set()

    async def goodbye(self, code: int, reason: str, grace: float) -> None:
        """Close every connection with `code` and `reason` after what was queued for it, and
        wait for them to be done, `grace` seconds at most (a clean stop of the bridge)."""
        for peer, socket in list(self.connections_by_peer.items()):
            socket.close(fx.ClosePeer(peer, code, reason))
        if self.connections_by_peer:
            with trio.move_on_after(grace):
                await self._no_connections.wait()

    # -- jobs ----------------------------------------------------------------------------------

    def _run(self, job: Job, ticket: int | None) -> None:
        if isinstance(job, CallChat | OpenConversation | CloseConversation):
            self.chat_jobs(job, ticket)
        elif isinstance(job, Persist):
            self.persist(job)
        elif isinstance(job, ArchiveTurns):
            self.archive(job)
        elif isinstance(job, ReadTurns):
            self.nursery.start_soon(self._read_turns, job, ticket)
        elif isinstance(job, ShellJob):
            runner = self.jobs.get(job.name)
            if runner is None:
                log.warning("no service runs this job", job=job.name)
                return
            self.nursery.start_soon(self._shell_job, runner, job, ticket)

    async def _shell_job(self, runner: JobRunner, job: ShellJob, ticket: int | None) -> None:
        try:
            result = await runner(job)
        except Exception as exc:
            if ticket is not None:
                self.feed(inputs.JobDone(ticket, error=exc))
            else:
                log.exception("shell job failed", job=job.name)
            return
        if ticket is not None:
            self.feed(inputs.JobDone(ticket, result=result))

    async def _read_turns(self, job: ReadTurns, ticket: int | None) -> None:
        try:
            if self.read_turns is None:
                raise RuntimeError("this host keeps no archive of turns")
            turns = await self.read_turns(job)
        except Exception as exc:
            log.warning("archived turns not read", chat=job.chat, error=str(exc))
            self.done(ticket, error=exc)
            return
        self.done(ticket, result=turns)

    @staticmethod
    def _no_archive(job: ArchiveTurns) -> None:
        log.warning("evicted turns not archived: no archive", chat=job.chat, count=len(job.turns))

    def done(
        self, ticket: int | None, result: Any = None, error: BaseException | None = None
    ) -> None:
        """A job with `ticket` finished (the workers report here)."""
        if ticket is not None:
            self.feed(inputs.JobDone(ticket, result=result, error=error))

    @staticmethod
    def _no_workers(job: Job, ticket: int | None) -> None:
        raise RuntimeError("the shell has no chat workers")

    # -- timers --------------------------------------------------------------------------------

    def _set_timer(self, key: tuple[Any, ...], seconds: float) -> None:
        old = self._timers.pop(key, None)
        if old is not None:
            old.cancel()
        scope = trio.CancelScope()
        self._timers[key] = scope
        self.nursery.start_soon(self._timer, key, seconds, scope)

    async def _timer(self, key: tuple[Any, ...], seconds: float, scope: trio.CancelScope) -> None:
        with scope:
            await trio.sleep(seconds)
            if self._timers.get(key) is scope:
                del self._timers[key]
                self.feed(inputs.TimerFired(key))

    # -- host tool calls -----------------------------------------------------------------------

    async def call_tool(self, chat: str, call: agentapi.HostToolCall) -> agentapi.HostToolResult:
        """`OpenRequest.call_tool` of every conversation: the engine decides, this waits."""
        waiter = next(self._waiter_ids)
        done = trio.Event()
        results: list[agentapi.HostToolResult] = []
        self._waiters[waiter] = (done, results)
        try:
            self.feed(inputs.HostToolCalled(chat, waiter, call))
            await done.wait()
        except BaseException:
            if not results:  # the provider cancelled it (or the host is stopping)
                self._waiters.pop(waiter, None)
                with trio.CancelScope(shield=True):
                    self.feed(inputs.HostToolCancelled(chat, waiter))
            raise
        return results[0]


def _by_params(handler: Handler) -> Answer:
    async def answer(effect: fx.Serve) -> Any:
        return await handler(effect.peer, effect.params)

    return answer


class _Answered:
    """A service that answered its request itself (it fed the engine already)."""

    def __repr__(self) -> str:
        return "ANSWERED"


#: What a service returns when it fed the engine its answer itself.
ANSWERED = _Answered()
