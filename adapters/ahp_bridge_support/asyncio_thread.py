"""Run an asyncio-based SDK on one dedicated thread and await it from trio.

The Copilot and ACP SDKs need a running asyncio loop (their JSON-RPC connections live on it), and
the bridge runs trio. Everything such an SDK owns (its client or agent process, sessions, event
handlers, the adapter's per-conversation event mapping) lives on this one loop thread, so none of
it needs locks. Trio code submits coroutines and waits for them without blocking the trio thread.

What differs between the SDKs is an option, not a copy: ``drop_late_answers`` (see
``_drop_late_answers``) for an SDK whose reader thread resolves a request's future without
checking that its waiter is still there.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import logging
import threading
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

import trio

log = logging.getLogger(__name__)
T = TypeVar("T")


class LoopStopped(RuntimeError):
    """The asyncio thread is not running (never started, or already stopped)."""


def _drop_late_answers(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
    """The loop's exception handler: an answer that comes after its waiter gave up is no error.

    The Copilot SDK's reader thread hands each answer to the loop as ``future.set_result`` (or
    ``set_exception`` when the connection ends), checking the future when it schedules the call,
    not when the call runs. A wait cancelled in between (a read the trio side gave up because
    its client left or the bridge is stopping) makes that call raise InvalidStateError on a
    cancelled future, which asyncio logs at error with a traceback and the answer's contents.
    Nobody waits for that answer: drop it. Everything else goes to asyncio's default handler.
    (The ACP SDK resolves its futures on the loop itself, after checking ``future.done()``, so
    it never causes this and its thread keeps asyncio's handler.)
    """
    exc = context.get("exception")
    callback = getattr(context.get("handle"), "_callback", None)
    future = getattr(callback, "__self__", None)
    if (
        isinstance(exc, asyncio.InvalidStateError)
        and isinstance(future, asyncio.Future)
        and future.cancelled()
        and getattr(callback, "__name__", "") in ("set_result", "set_exception")
    ):
        log.debug(
            "%s: dropped an answer that came after its request was cancelled",
            threading.current_thread().name,
        )
        return
    loop.default_exception_handler(context)


class AsyncioThread:
    """An asyncio event loop on its own daemon thread.

    ``name`` names the thread; ``sdk`` says in LoopStopped whose thread is not running ("the
    Copilot SDK"); ``drop_late_answers`` installs ``_drop_late_answers`` as the loop's exception
    handler (for the Copilot SDK; see there why the ACP SDK needs none).
    """

    def __init__(self, name: str, *, sdk: str, drop_late_answers: bool = False) -> None:
        self._name = name
        self._sdk = sdk
        self._drop_late_answers = drop_late_answers
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None

    @property
    def loop(self) -> asyncio.AbstractEventLoop:
        if self._loop is None or self._loop.is_closed():
            raise LoopStopped(f"the {self._sdk} thread is not running")
        return self._loop

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def in_loop_thread(self) -> bool:
        return self._thread is threading.current_thread()

    def start(self) -> None:
        if self.running:
            return
        ready = threading.Event()
        loop = asyncio.new_event_loop()
        if self._drop_late_answers:
            loop.set_exception_handler(_drop_late_answers)

        def main() -> None:
            asyncio.set_event_loop(loop)
            loop.call_soon(ready.set)
            try:
                loop.run_forever()
            finally:
                pending = [t for t in asyncio.all_tasks(loop) if not t.done()]
                for task in pending:
                    task.cancel()
                if pending:
                    loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
                loop.run_until_complete(loop.shutdown_asyncgens())
                loop.run_until_complete(loop.shutdown_default_executor())
                loop.close()

        self._loop = loop
        self._thread = threading.Thread(target=main, name=self._name, daemon=True)
        self._thread.start()
        ready.wait()

    def stop(self, timeout: float = 10.0) -> None:
        """Stop the loop (cancelling what still runs on it) and join the thread."""
        thread, loop = self._thread, self._loop
        if thread is None or loop is None:
            return
        if not loop.is_closed():
            loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout)
        self._thread = None

    def submit(self, coro: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]:
        """Schedule ``coro`` on the loop from any thread."""
        try:
            loop = self.loop
        except LoopStopped:
            coro.close()
            raise
        return asyncio.run_coroutine_threadsafe(coro, loop)

    def call_soon(self, fn: Callable[..., Any], *args: Any) -> None:
        """Run a plain callable on the loop thread (fire and forget)."""
        self.loop.call_soon_threadsafe(fn, *args)

    async def run(self, coro: Coroutine[Any, Any, T], *, cancel_on_abort: bool = False) -> T:
        """Await ``coro`` on the loop from trio.

        If the trio caller is cancelled, the coroutine keeps running by default: an RPC with side
        effects (send, respond) must not be torn in half. ``cancel_on_abort`` cancels it instead,
        for pure reads.
        """
        fut = self.submit(coro)
        token = trio.lowlevel.current_trio_token()
        done = trio.Event()

        def wake(_: object) -> None:
            with contextlib.suppress(trio.RunFinishedError):
                token.run_sync_soon(done.set)

        fut.add_done_callback(wake)
        try:
            await done.wait()
        except trio.Cancelled:
            if cancel_on_abort:
                fut.cancel()
            raise
        return fut.result()
