"""The bridge's terminal methods for the agent: real subprocesses in the working directory.

``terminal/create`` starts the command (a command without arguments is a shell command line,
as editors run it) in its own process group, with stdout and stderr merged, in ``cwd`` (which
must lie inside the session's working directories; default the first of them). Output is kept
up to the smaller of the agent's ``outputByteLimit`` and ``terminal_output_bytes``, dropping
the oldest bytes at a character boundary; a command still running after ``terminal_timeout``
is killed. ``output``, ``wait_for_exit``, ``kill`` and ``release`` act on the ids create gave;
the owner is told of new output so the tool call that shows the terminal can follow it.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import os
import signal
from collections.abc import Callable
from dataclasses import dataclass, field

from acp.exceptions import RequestError

from .workspace import Workspace, refused

_ids = itertools.count(1)
RELEASED_KEPT = 32


@dataclass
class ExitStatus:
    exit_code: int | None = None
    signal: str | None = None


@dataclass
class Terminal:
    id: str
    command: str
    limit: int
    proc: asyncio.subprocess.Process | None = None
    buffer: bytearray = field(default_factory=bytearray)
    truncated: bool = False
    status: ExitStatus | None = None
    done: asyncio.Event = field(default_factory=asyncio.Event)
    timed_out: bool = False
    tasks: list[asyncio.Task[None]] = field(default_factory=list)

    def append(self, data: bytes) -> None:
        self.buffer += data
        excess = len(self.buffer) - self.limit
        if excess > 0:
            del self.buffer[:excess]
            # Drop UTF-8 continuation bytes left at the front by the cut.
            cut = 0
            while cut < len(self.buffer) and (self.buffer[cut] & 0xC0) == 0x80:
                cut += 1
            del self.buffer[:cut]
            self.truncated = True

    def text(self) -> str:
        return self.buffer.decode("utf-8", "replace")

    def kill(self) -> None:
        if self.proc is not None and self.proc.returncode is None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.proc.pid, signal.SIGKILL)


class Terminals:
    """The terminals of one conversation."""

    def __init__(
        self,
        workspace: Workspace,
        *,
        max_output: int,
        timeout: float,
        max_terminals: int,
        environment: Callable[[], dict[str, str]],
        on_output: Callable[[Terminal], None],
    ) -> None:
        self._workspace = workspace
        self._max_output = max_output
        self._timeout = timeout
        self._max = max_terminals
        self._environment = environment
        self._on_output = on_output
        self._terminals: dict[str, Terminal] = {}
        # Released terminals, still readable for the tool call that showed them (bounded).
        self._released: dict[str, Terminal] = {}
        # The pumps of the terminals close_all killed, until they have reaped their processes.
        self._closing: list[asyncio.Task[None]] = []

    def get(self, terminal_id: str) -> Terminal:
        term = self._terminals.get(terminal_id)
        if term is None:
            raise RequestError(
                -32002, f"no terminal {terminal_id!r} (never created, or released)", None
            )
        return term

    def known(self, terminal_id: str) -> Terminal | None:
        """A terminal by id, released ones included (their output stays on their tool call)."""
        return self._terminals.get(terminal_id) or self._released.get(terminal_id)

    async def create(
        self,
        command: str,
        args: list[str] | None,
        env: dict[str, str],
        cwd: str | None,
        output_byte_limit: int | None,
    ) -> Terminal:
        if not command.strip():
            raise refused("the command is empty")
        if len(self._terminals) >= self._max:
            raise refused(
                f"this session already holds {self._max} terminals (the bridge's max_terminals); "
                "release one first"
            )
        roots = self._workspace.roots
        if not roots:
            raise refused("the session has no working directory to run commands in")
        workdir = self._workspace.resolve(cwd) if cwd else roots[0]
        if not workdir.is_dir():
            raise refused(f"the working directory {str(workdir)!r} does not exist")
        limit = self._max_output
        if output_byte_limit is not None and 0 <= output_byte_limit < limit:
            limit = output_byte_limit
        argv = [command, *args] if args else ["/bin/sh", "-c", command]
        environment = {**self._environment(), **env}
        term = Terminal(id=f"term-{next(_ids)}", command=command, limit=max(limit, 1))
        try:
            term.proc = await asyncio.create_subprocess_exec(
                *argv,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.STDOUT,
                cwd=str(workdir),
                env=environment,
                start_new_session=True,
            )
        except OSError as exc:
            raise refused(f"cannot start {command!r}: {exc.strerror or exc}") from None
        self._terminals[term.id] = term
        loop = asyncio.get_running_loop()
        term.tasks.append(loop.create_task(self._pump(term)))
        term.tasks.append(loop.create_task(self._deadline(term)))
        return term

    async def _pump(self, term: Terminal) -> None:
        proc = term.proc
        assert proc is not None and proc.stdout is not None
        with contextlib.suppress(Exception):
            while chunk := await proc.stdout.read(65536):
                term.append(chunk)
                self._notify(term)
        code = await proc.wait()
        if code < 0:
            try:
                name = signal.Signals(-code).name
            except ValueError:
                name = str(-code)
            term.status = ExitStatus(exit_code=None, signal=name)
        else:
            term.status = ExitStatus(exit_code=code)
        if term.timed_out:
            note = f"\n[killed by the bridge after terminal_timeout ({self._timeout:g}s)]\n"
            term.append(note.encode())
        term.done.set()
        self._notify(term)

    def _notify(self, term: Terminal) -> None:
        with contextlib.suppress(Exception):
            self._on_output(term)

    async def _deadline(self, term: Terminal) -> None:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(term.done.wait(), self._timeout)
            return
        term.timed_out = True
        term.kill()

    async def wait_for_exit(self, terminal_id: str) -> ExitStatus:
        term = self.get(terminal_id)
        await term.done.wait()
        assert term.status is not None
        return term.status

    def kill(self, terminal_id: str) -> None:
        self.get(terminal_id).kill()

    def release(self, terminal_id: str) -> None:
        term = self._terminals.pop(terminal_id, None)
        if term is None:
            raise RequestError(-32002, f"no terminal {terminal_id!r}", None)
        term.kill()  # its pump ends with the process
        self._released[terminal_id] = term
        while len(self._released) > RELEASED_KEPT:
            del self._released[next(iter(self._released))]

    def close_all(self) -> None:
        for term in [*self._terminals.values(), *self._released.values()]:
            term.kill()
            self._closing += [t for t in term.tasks if not t.done()]
        self._terminals.clear()
        self._released.clear()

    async def closed(self, timeout: float = 2.0) -> None:
        """Wait (at most ``timeout``) for the terminals ``close_all`` killed to be reaped: a
        process whose pump never saw it exit keeps its asyncio transport open past the loop
        (and asyncio reports the transport unclosed when it is collected)."""
        pending, self._closing = [t for t in self._closing if not t.done()], []
        if pending:
            await asyncio.wait(pending, timeout=timeout)
