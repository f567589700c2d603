"""The workspace as clients see it: the resource* methods and resource watches, confined.

What is served: the default directory (`InitializeResult.defaultDirectory`), every live
session's working directories (`SessionState.workingDirectories`, else the directory the
session runs in) and `workspace.roots`. Every URI is resolved to its real path in a worker
thread and refused unless it lands inside one of those (see `workspace_io`). Reading is always
on; writing (`resourceWrite`, `resourceMkdir`, `resourceMove`, `resourceCopy`,
`resourceDelete`) only with `workspace.allow_writes`.

Blocking calls go through `trio.to_thread.run_sync` with one shared `CapacityLimiter`, so a
slow disk or a large tree never stalls the trio loop and never takes more than a few threads.
The hub tells us when a session goes (`root/activeSessionsChanged`): watches on directories
no longer served are released and their mention indexes dropped; a session that becomes ready
gets its mention index built in the background.

Other URI schemes (the content references of tool results, say) plug in with
`add_reader(scheme, handler)`; `resourceRead` hands them over before any file logic.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from contextlib import asynccontextmanager
from typing import Any, TypeVar
from urllib.parse import urlsplit

import structlog
import trio

from ahp_bridge.config import WorkspaceSettings
from ahp_bridge.engine.chats import SessionRef
from ahp_bridge.engine.effects import Run
from ahp_bridge.engine.fanout import Reaction
from ahp_bridge.engine.jobs import ShellJob
from ahp_bridge.engine.peers import Peer
from ahp_bridge.engine.sessions import Sessions
from ahp_bridge.host.shell import Handler, Shell
from ahp_bridge.host.workspace import io, writes
from ahp_bridge.host.workspace.mention_rank import Mention
from ahp_bridge.host.workspace.mentions import MentionIndexes
from ahp_bridge.host.workspace.paths import UriRefused, root_path
from ahp_bridge.host.workspace.watches import ResourceWatches
from ahp_bridge.protocol import errors as E
from ahp_bridge.protocol.action_types import ActionType
from ahp_bridge.protocol.errors import RpcError
from ahp_bridge.protocol.uris import ROOT
from ahp_bridge.state.store import Envelope

__all__ = ["Workspace"]

#: The shell jobs of this room.
SESSIONS_CHANGED = "workspace.sessions_changed"
PREWARM = "workspace.prewarm"

log = structlog.get_logger(__name__)

#: Worker threads for file work at once (reads, scans, watch batches).
THREADS = 4

ReadHandler = Callable[[dict[str, Any]], Awaitable[dict[str, Any]]]
T = TypeVar("T")

_WRITES = ("resourceWrite", "resourceMkdir", "resourceMove", "resourceCopy", "resourceDelete")


class Workspace:
    def __init__(
        self,
        shell: Shell,
        sessions: Sessions,
        settings: WorkspaceSettings,
        *,
        default_directory: str,
    ) -> None:
        self.shell = shell
        self.sessions = sessions
        self.settings = settings
        self.default_directory = default_directory
        self.limiter = trio.CapacityLimiter(THREADS)
        self.mentions = MentionIndexes(
            max_entries=settings.mention_index_max_entries,
            results=settings.mention_results,
            refresh_seconds=settings.mention_refresh_seconds,
            limiter=self.limiter,
        )
        self.watches = ResourceWatches(
            shell,
            max_watches=settings.max_watches,
            debounce_ms=settings.watch_debounce_ms,
            limiter=self.limiter,
            touched=self.mentions.touched,
        )
        self._readers: dict[str, ReadHandler] = {}
        self._nursery: trio.Nursery | None = None
        shell.observe(
            self._observe, [ActionType.ROOT_ACTIVE_SESSIONS_CHANGED, ActionType.SESSION_READY]
        )
        shell.jobs[SESSIONS_CHANGED] = lambda job: self._sessions_changed()
        shell.jobs[PREWARM] = self._prewarm_job

    @asynccontextmanager
    async def running(self) -> AsyncIterator[Workspace]:
        """Run watches and background index builds until exit; stopping releases every watch."""
        async with trio.open_nursery() as nursery:
            self._nursery = nursery
            self.watches.start(nursery)
            self.mentions.start(nursery)
            try:
                yield self
            finally:
                self.watches.stop_all()  # before the cancel, so watcher threads return at once
                nursery.cancel_scope.cancel()

    def add_reader(self, scheme: str, handler: ReadHandler) -> None:
        """Serve `resourceRead` for URIs of another scheme (handler gets the request params)."""
        self._readers[scheme.lower()] = handler

    def handlers(self) -> dict[str, Handler]:
        """The JSON-RPC methods this module answers, for the request router."""
        return {
            "resourceList": self.resource_list,
            "resourceRead": self.resource_read,
            "resourceResolve": self.resource_resolve,
            "resourceRequest": self.resource_request,
            "resourceWrite": self.resource_write,
            "resourceMkdir": self.resource_mkdir,
            "resourceMove": self.resource_move,
            "resourceCopy": self.resource_copy,
            "resourceDelete": self.resource_delete,
            "createResourceWatch": self.create_resource_watch,
        }

    # -- roots ---------------------------------------------------------------------------------

    @staticmethod
    def session_directories(session: SessionRef) -> list[str]:
        """A session's working directories as paths (its workdir when it named none)."""
        paths: list[str] = []
        for directory in session.working_directories:
            try:
                paths.append(root_path(directory))
            except UriRefused:
                continue
        if not paths and os.path.isabs(session.workdir):
            paths.append(session.workdir)
        return paths

    def candidates(self) -> list[str]:
        """Every directory served, as named (not yet resolved)."""
        dirs = [self.default_directory, *(str(p) for p in self.settings.roots)]
        for session in self.sessions.sessions.values():
            if not session.disposed:
                dirs.extend(self.session_directories(session))
        return dirs

    async def thread(self, fn: Callable[..., T], *args: Any) -> T:
        return await trio.to_thread.run_sync(fn, *args, limiter=self.limiter)

    async def roots(self) -> list[str]:
        """The real paths of every directory served."""
        return await self.thread(io.real_roots, self.candidates())

    async def session_roots(self, session: SessionRef) -> list[tuple[str, str]]:
        """(as the session names it, real path) of each of a session's directories that exist."""
        return await self.thread(_pairs, self.session_directories(session))

    def _observe(self, envelope: Envelope) -> Iterable[Reaction]:
        if self._nursery is None:
            return ()
        kind = envelope.action.get("type")
        if envelope.channel == ROOT and kind == ActionType.ROOT_ACTIVE_SESSIONS_CHANGED:
            return (Run(ShellJob(SESSIONS_CHANGED)),)
        if kind == ActionType.SESSION_READY and envelope.channel in self.sessions.sessions:
            return (Run(ShellJob(PREWARM, envelope.channel)),)
        return ()

    async def _prewarm_job(self, job: ShellJob) -> None:
        session = self.sessions.sessions.get(job.channel)
        if session is not None:
            await self._prewarm(session)

    async def _sessions_changed(self) -> None:
        roots = await self.roots()
        self.watches.release_outside(roots)
        self.mentions.keep_only(roots)

    async def _prewarm(self, session: SessionRef) -> None:
        pairs = await self.session_roots(session)
        self.mentions.prewarm(real for _, real in pairs)

    # -- reading -------------------------------------------------------------------------------

    async def resource_read(self, peer: Peer, params: dict[str, Any]) -> Any:
        reader = self._readers.get(urlsplit(params["uri"]).scheme.lower())
        if reader is not None:
            return await reader(params)
        roots = await self.roots()
        return await self.thread(
            io.read_file, params["uri"], roots, params.get("encoding"), self.settings.max_read_bytes
        )

    async def resource_list(self, peer: Peer, params: dict[str, Any]) -> Any:
        roots = await self.roots()
        return await self.thread(
            io.list_directory, params["uri"], roots, self.settings.max_list_entries
        )

    async def resource_resolve(self, peer: Peer, params: dict[str, Any]) -> Any:
        roots = await self.roots()
        follow = params.get("followSymlinks")
        return await self.thread(io.resolve, params["uri"], roots, follow is not False)

    async def resource_request(self, peer: Peer, params: dict[str, Any]) -> Any:
        """Grant what is already allowed; there is no further access to negotiate."""
        roots = await self.roots()
        await self.thread(io.confine, params["uri"], roots)
        if params.get("write") and not self.settings.allow_writes:
            self._writes_off("resourceRequest")
        return {}

    async def create_resource_watch(self, peer: Peer, params: dict[str, Any]) -> Any:
        return await self.watches.create(params, await self.roots())

    # -- writing -------------------------------------------------------------------------------

    def _writes_off(self, method: str) -> None:
        raise RpcError(
            E.PERMISSION_DENIED,
            f"Permission denied: {method} is off on this host; set workspace.allow_writes = true "
            "to let clients change files",
        )

    async def _writable_roots(self, method: str) -> list[str]:
        if not self.settings.allow_writes:
            self._writes_off(method)
        return await self.roots()

    async def resource_write(self, peer: Peer, params: dict[str, Any]) -> Any:
        roots = await self._writable_roots("resourceWrite")
        data = writes.decode_data(params["data"], params["encoding"])
        position = params.get("position") or 0
        if not float(position).is_integer():
            raise RpcError(E.INVALID_PARAMS, "Invalid params: position: expected a whole number")
        await self.thread(
            _write,
            params["uri"],
            roots,
            data,
            bool(params.get("createOnly")),
            params.get("mode") or "truncate",
            int(position),
            params.get("ifMatch"),
            self.settings.max_read_bytes,
        )
        return {}

    async def resource_mkdir(self, peer: Peer, params: dict[str, Any]) -> Any:
        roots = await self._writable_roots("resourceMkdir")
        await self.thread(writes.mkdir, params["uri"], roots)
        return {}

    async def resource_delete(self, peer: Peer, params: dict[str, Any]) -> Any:
        roots = await self._writable_roots("resourceDelete")
        await self.thread(_delete, params["uri"], roots, bool(params.get("recursive")))
        return {}

    async def resource_move(self, peer: Peer, params: dict[str, Any]) -> Any:
        roots = await self._writable_roots("resourceMove")
        await self.thread(
            _move, params["source"], params["destination"], roots, bool(params.get("failIfExists"))
        )
        return {}

    async def resource_copy(self, peer: Peer, params: dict[str, Any]) -> Any:
        roots = await self._writable_roots("resourceCopy")
        await self.thread(
            _copy, params["source"], params["destination"], roots, bool(params.get("failIfExists"))
        )
        return {}

    # -- mentions ------------------------------------------------------------------------------

    async def mention_items(self, session: SessionRef, mention: Mention) -> list[dict[str, object]]:
        """Completion items for an `@` mention over the session's working directories."""
        return await self.mentions.complete(mention, await self.session_roots(session))


def _pairs(directories: list[str]) -> list[tuple[str, str]]:
    pairs: list[tuple[str, str]] = []
    for directory in dict.fromkeys(directories):
        real = os.path.realpath(directory)
        if os.path.isdir(real) and all(real != seen for _, seen in pairs):
            pairs.append((directory, real))
    return pairs


# Keyword-taking wrappers, for `trio.to_thread.run_sync` (positional arguments only).


def _write(
    uri: str,
    roots: list[str],
    data: bytes,
    create_only: bool,
    mode: str,
    position: int,
    if_match: str | None,
    max_shift: int,
) -> None:
    writes.write(
        uri,
        roots,
        data,
        create_only=create_only,
        mode=mode,
        position=position,
        if_match=if_match,
        max_shift=max_shift,
    )


def _delete(uri: str, roots: list[str], recursive: bool) -> None:
    writes.delete(uri, roots, recursive=recursive)


def _move(source: str, destination: str, roots: list[str], fail_if_exists: bool) -> None:
    writes.move(source, destination, roots, fail_if_exists=fail_if_exists)


def _copy(source: str, destination: str, roots: list[str], fail_if_exists: bool) -> None:
    writes.copy(source, destination, roots, fail_if_exists=fail_if_exists)
