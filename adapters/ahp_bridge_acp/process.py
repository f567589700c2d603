"""One ACP agent process: spawned, connected through the SDK's Connection, watched, stopped.

Runs on the adapter's asyncio thread. The process gets its own process group (so stopping it
also stops what it spawned); its stderr is read continuously into a bounded tail (for doctor and
exit messages, never logged); its exit wakes ``exited``. Requests go through the SDK's
``acp.connection.Connection`` over the hardened ``AgentTransport``; what the agent asks of the
client goes to ``handler`` (the provider's router).
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import logging
import os
import signal
from collections.abc import Awaitable, Callable
from typing import Any

from acp.connection import Connection
from acp.exceptions import RequestError
from pydantic import BaseModel

from .options import AcpOptions
from .transport import AgentTransport

log = logging.getLogger(__name__)

Handler = Callable[[str, Any, bool], Awaitable[Any]]

EOF_GRACE = 2.0
"""Seconds an agent that closed its stdout has to exit before it is killed."""


class AgentGone(ConnectionError):
    """The agent process exited or closed its stdio while a request was waiting."""


class StderrTail:
    """The newest ``limit`` bytes of a stream."""

    def __init__(self, limit: int) -> None:
        self._limit = limit
        self._chunks: collections.deque[bytes] = collections.deque()
        self._size = 0
        self.total = 0

    def feed(self, data: bytes) -> None:
        self.total += len(data)
        self._chunks.append(data)
        self._size += len(data)
        while self._size > self._limit and self._chunks:
            head = self._chunks.popleft()
            self._size -= len(head)
            if self._size < self._limit:
                keep = self._limit - self._size
                self._chunks.appendleft(head[-keep:])
                self._size += keep
                break

    def text(self) -> str:
        return b"".join(self._chunks).decode("utf-8", "replace")


def dump(params: BaseModel | dict[str, Any] | None) -> Any:
    if isinstance(params, BaseModel):
        return params.model_dump(mode="json", by_alias=True, exclude_none=True)
    return params


class AgentProcess:
    """A started agent; ``await AgentProcess.spawn(opts, handler)``."""

    def __init__(self, opts: AcpOptions) -> None:
        self.opts = opts
        self.stderr = StderrTail(opts.stderr_bytes)
        self.exited = asyncio.Event()
        self.returncode: int | None = None
        self._proc: asyncio.subprocess.Process | None = None
        self._conn: Connection | None = None
        self._transport: AgentTransport | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self._stopping = False

    @classmethod
    async def spawn(cls, opts: AcpOptions, handler: Handler) -> AgentProcess:
        self = cls(opts)
        exe = opts.executable()
        if exe is None:
            raise FileNotFoundError(
                f"the ACP agent command {opts.command[0]!r} was not found: install it or set "
                "`command` in the provider's config to its full path"
            )
        self._proc = await asyncio.create_subprocess_exec(
            exe,
            *opts.command[1:],
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=opts.environment(),
            cwd=opts.workdir or None,
            limit=opts.max_message_bytes,
            start_new_session=True,
        )
        assert self._proc.stdout is not None and self._proc.stdin is not None
        self._transport = AgentTransport(
            self._proc.stdout, self._proc.stdin, max_bytes=opts.max_message_bytes
        )
        self._transport.on_eof = self._stdout_ended
        self._conn = Connection(handler, self._transport)
        self._spawn(self._read_stderr())
        self._spawn(self._wait())
        return self

    @property
    def pid(self) -> int:
        return self._proc.pid if self._proc is not None else 0

    @property
    def faults(self) -> collections.Counter[str]:
        return self._transport.faults if self._transport else collections.Counter()

    def _spawn(self, coro: Any) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _read_stderr(self) -> None:
        assert self._proc is not None and self._proc.stderr is not None
        with contextlib.suppress(Exception):
            while chunk := await self._proc.stderr.read(4096):
                self.stderr.feed(chunk)

    async def _wait(self) -> None:
        assert self._proc is not None
        self.returncode = await self._proc.wait()
        self.exited.set()

    def _stdout_ended(self) -> None:
        """An agent whose stdout ended is unusable; if it does not exit by itself, end it."""
        if not self._stopping and self.returncode is None:
            asyncio.get_running_loop().call_later(EOF_GRACE, self.kill)

    def describe_exit(self) -> str:
        code = self.returncode
        if code is None:
            how = "closed its connection"
        elif code < 0:
            try:
                how = f"was killed by {signal.Signals(-code).name}"
            except ValueError:
                how = f"was killed by signal {-code}"
        else:
            how = f"exited with code {code}"
        return f"the ACP agent {self.opts.label()!r} {how}"

    async def request(
        self, method: str, params: BaseModel | dict[str, Any] | None, *, timeout: float | None
    ) -> Any:
        """Send a request and wait for its raw result; AgentGone when the agent went away."""
        conn = self._conn
        if conn is None or self.exited.is_set():
            raise AgentGone(self.describe_exit())
        call = asyncio.ensure_future(conn.send_request(method, dump(params)))
        gone = asyncio.ensure_future(self.exited.wait())
        try:
            done, _ = await asyncio.wait(
                {call, gone}, timeout=timeout, return_when=asyncio.FIRST_COMPLETED
            )
        finally:
            gone.cancel()
        if call in done:
            try:
                return call.result()
            except RequestError:
                raise
            except ConnectionError:
                await self._settle_exit()
                raise AgentGone(self.describe_exit()) from None
        call.cancel()
        if gone in done:
            raise AgentGone(self.describe_exit())
        raise TimeoutError(f"the ACP agent did not answer {method} within {timeout:g}s")

    async def _settle_exit(self) -> None:
        """After the connection closed, give the exit a moment so its code can be named."""
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self.exited.wait(), 2.0)

    async def notify(self, method: str, params: BaseModel | dict[str, Any] | None) -> None:
        conn = self._conn
        if conn is None or self.exited.is_set():
            raise AgentGone(self.describe_exit())
        try:
            await conn.send_notification(method, dump(params))
        except ConnectionError:
            raise AgentGone(self.describe_exit()) from None

    def kill(self) -> None:
        """SIGKILL the agent's process group (tests and benchmarks use this for faults)."""
        if self._proc is not None and self._proc.returncode is None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self._proc.pid, signal.SIGKILL)

    async def stop(self, grace: float = 3.0, eof_grace: float | None = None) -> None:
        """Close stdin, wait ``eof_grace`` (default ``grace``) seconds, then SIGTERM and, after
        ``grace`` more, SIGKILL the process group."""
        self._stopping = True
        proc = self._proc
        if self._conn is not None:
            with contextlib.suppress(Exception):
                await self._conn.close()
        if proc is None:
            return
        if proc.returncode is None:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(
                    self.exited.wait(), grace if eof_grace is None else eof_grace
                )
        for sig in (signal.SIGTERM, signal.SIGKILL):
            if self.exited.is_set():
                break
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, sig)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.exited.wait(), grace)
        # Whatever the agent started in its group goes with it.
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
        for task in list(self._tasks):
            task.cancel()
