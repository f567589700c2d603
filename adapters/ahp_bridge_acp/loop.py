"""Run the asyncio-based ACP SDK on one dedicated thread and await it from trio.

The SDK's JSON-RPC connection lives on an asyncio loop, and the bridge runs trio. Everything the
SDK owns (the agent process, its connection, the client-side handlers for files, terminals and
permissions, the per-conversation event mapping) lives on this one loop thread, so none of it needs
locks. Trio code submits coroutines and waits for them without blocking the trio thread.

A copy of ``ahp_bridge_copilot.bridge`` (adapters import only agentapi and their own SDK, never
each other).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import threading
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

import trio

T = TypeVar("T")


class LoopStopped(RuntimeError):
    """The asyncio thread is not running (never started, or already stopped)."""


class AsyncioThread:
    """An asyncio event loop on its own daemon thread."""

    def __init__(self, name: str = "acp-asyncio") -> None:
        self._name = name
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None

    @property
    def loop(self) -> asyncio.AbstractEventLoop:
        if self._loop is None or self._loop.is_closed():
            raise LoopStopped("the ACP SDK thread is not running")
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
