"""Resource watches: `createResourceWatch` channels fed by `watchfiles`, debounced, on trio.

`watchfiles` wraps the Rust `notify` crate (inotify, FSEvents, ReadDirectoryChangesW). Its
`awatch` runs on anyio, hence on trio, but it starts the OS watch lazily inside the generator,
in anyio's default thread pool; so this module drives the same documented backend `awatch`
loops over (`watchfiles._rust_notify.RustNotify`, see the watchfiles "Rust backend" API page)
itself: the OS watch exists before `createResourceWatch` answers (no change after the answer
is missed, and a watch limit or a vanished path is an error the client sees), and each watch's
blocking `RustNotify.watch` runs in a worker thread of its own limiter, so watches never take
the threads file reads need. A batch is debounced in Rust (`workspace.watch_debounce_ms` at
most, or as soon as changes pause for `_STEP_MS`) and becomes one `resourceWatch/changed`
action applied through the hub like any other, so subscribers get it in serverSeq order and
`reconnect` replays it.

A watch lives as long as someone listens (the spec: no dispose command; the receiver MUST
release the watch when every subscriber has unsubscribed or its connection dropped). It is also
released when nobody subscribes within `UNSUBSCRIBED_GRACE`, and when the directory it watches
stops being served (its session went). Stopping sets the watcher's stop event first, so the
worker thread returns within one step instead of its five-second poll.

What a watch reports is confined like everything else: changes whose real location is outside
the roots (a symlinked directory the OS watcher followed) are dropped, and `includes` /
`excludes` are gitignore-style patterns relative to the watched URI.
"""

from __future__ import annotations

import os
import threading
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import pathspec
import structlog
import trio
from watchfiles import Change
from watchfiles._rust_notify import RustNotify

from ahp_bridge.engine.effects import Run
from ahp_bridge.engine.fanout import Reaction
from ahp_bridge.engine.jobs import ShellJob
from ahp_bridge.host.shell import Shell
from ahp_bridge.host.workspace.io import confine, os_errors
from ahp_bridge.host.workspace.paths import uri_of_path, within_any
from ahp_bridge.protocol import errors as E
from ahp_bridge.protocol.action_types import ActionType
from ahp_bridge.protocol.errors import RpcError

__all__ = ["UNSUBSCRIBED_GRACE", "ResourceWatches"]

log = structlog.get_logger(__name__)

#: Seconds a new watch waits for its first subscriber before it is released.
UNSUBSCRIBED_GRACE = 30.0
#: Changes per `resourceWatch/changed` action; a bigger batch (a checkout) is split, not cut.
CHANGES_PER_ACTION = 500
#: How long (ms) the OS watcher waits for more changes before it reports a batch.
_STEP_MS = 50
#: How long (ms) one blocking wait lasts before it returns and is started again (a bound on how
#: long a thread outlives a stop that did not set the event).
_WAIT_MS = 1000

_CHANGE_TYPES = {Change.added: "added", Change.modified: "updated", Change.deleted: "deleted"}


@dataclass
class _Watch:
    channel: str
    uri: str
    #: The path as the client named it, and where it really is (changes are reported in the
    #: client's terms).
    path: str
    real: str
    is_dir: bool
    recursive: bool
    roots: list[str]
    includes: pathspec.GitIgnoreSpec | None
    excludes: pathspec.GitIgnoreSpec | None
    #: Checked by the Rust loop every step: set it and the waiting thread returns.
    stop: threading.Event = field(default_factory=threading.Event)
    scope: trio.CancelScope = field(default_factory=trio.CancelScope)


def _spec(key: str, value: Any) -> pathspec.GitIgnoreSpec | None:
    """The `includes` or `excludes` patterns; one gitignore cannot parse (a lone `!`, a
    trailing backslash) is the client's mistake, answered as invalid params."""
    items = (value or {}).get("items") if isinstance(value, dict) else None
    patterns = [p for p in items or () if isinstance(p, str) and p.strip()]
    for pattern in patterns:
        try:
            pathspec.GitIgnoreSpec.from_lines([pattern])
        except ValueError:  # pathspec's GitIgnorePatternError
            raise RpcError(
                E.INVALID_PARAMS,
                f"Invalid params: {key}: {pattern!r} is not a gitignore-style pattern",
            ) from None
    return pathspec.GitIgnoreSpec.from_lines(patterns) if patterns else None


#: The shell job that releases a watch whose last subscriber left.
RELEASE = "watches.release"


class ResourceWatches:
    """Every open watch, by channel URI."""

    def __init__(
        self,
        shell: Shell,
        *,
        max_watches: int,
        debounce_ms: int,
        limiter: trio.CapacityLimiter,
        touched: Callable[[list[str]], None] = lambda paths: None,
    ) -> None:
        self.shell = shell
        self.store = shell.engine.store
        self.fanout = shell.engine.fanout
        self.max_watches = max_watches
        self.debounce_ms = debounce_ms
        self._limiter = limiter
        #: One thread per watch while it waits for the OS; never the file I/O threads.
        self._waiters = trio.CapacityLimiter(max_watches)
        self._touched = touched
        self._watches: dict[str, _Watch] = {}
        #: Watches being opened (in a thread), counted against the limit already.
        self._opening = 0
        self._nursery: trio.Nursery | None = None
        self.fanout.unsubscribed.append(self._last_subscriber_left)
        shell.jobs[RELEASE] = self._release_job

    def start(self, nursery: trio.Nursery) -> None:
        self._nursery = nursery

    def __len__(self) -> int:
        return len(self._watches)

    # -- lifecycle -----------------------------------------------------------------------------

    async def create(self, params: dict[str, Any], roots: list[str]) -> dict[str, str]:
        """`createResourceWatch` on a file or directory inside `roots` (real paths)."""
        if self._nursery is None:
            raise RpcError(E.INTERNAL_ERROR, "Internal error: resource watches are not running")
        if len(self._watches) + self._opening >= self.max_watches:
            raise RpcError(
                E.PERMISSION_DENIED,
                f"Permission denied: {self.max_watches} resource watches are open, the most "
                "this host allows (workspace.max_watches); unsubscribe from one first",
            )
        uri = params["uri"]
        recursive = bool(params.get("recursive", False))
        includes = _spec("includes", params.get("includes"))
        excludes = _spec("excludes", params.get("excludes"))
        self._opening += 1
        try:
            target, is_dir, notify = await trio.to_thread.run_sync(
                _open, uri, roots, recursive, limiter=self._limiter
            )
        finally:
            self._opening -= 1
        channel = f"ahp-resource-watch:/{uuid.uuid4()}"
        state: dict[str, Any] = {"root": uri, "recursive": recursive}
        for key in ("includes", "excludes"):
            if params.get(key) is not None:
                state[key] = {"items": list(params[key].get("items") or [])}
        watch = _Watch(
            channel=channel,
            uri=uri,
            path=target.path,
            real=target.real,
            is_dir=is_dir,
            recursive=recursive and is_dir,
            roots=roots,
            includes=includes,
            excludes=excludes,
        )
        self.store.create(channel, "resourceWatch", state)
        self._watches[channel] = watch
        self._nursery.start_soon(self._run, watch, notify)
        self._nursery.start_soon(self._expire_unsubscribed, channel)
        log.info("resource watch created", channel=channel, recursive=recursive)
        return {"channel": channel}

    def _last_subscriber_left(self, channel: str) -> Iterable[Reaction]:
        if channel in self._watches:
            return (Run(ShellJob(RELEASE, channel)),)
        return ()

    async def _release_job(self, job: ShellJob) -> None:
        self.release(job.channel)

    async def _expire_unsubscribed(self, channel: str) -> None:
        await trio.sleep(UNSUBSCRIBED_GRACE)
        if channel in self._watches and not self.fanout.subscribers(channel):
            self.release(channel)

    def release(self, channel: str) -> None:
        """Stop one watch and forget its channel."""
        watch = self._watches.pop(channel, None)
        if watch is None:
            return
        watch.stop.set()
        watch.scope.cancel()
        self.fanout.dispose(channel)
        log.info("resource watch released", channel=channel)

    def release_outside(self, roots: list[str]) -> None:
        """Release the watches whose directory is no longer served (its session went)."""
        for channel, watch in list(self._watches.items()):
            if within_any(watch.real, roots) is None:
                self.release(channel)

    def stop_all(self) -> None:
        for watch in self._watches.values():
            watch.stop.set()

    # -- watching ------------------------------------------------------------------------------

    async def _run(self, watch: _Watch, notify: RustNotify) -> None:
        try:
            with watch.scope:
                while not watch.stop.is_set():
                    raw = await trio.to_thread.run_sync(
                        notify.watch,
                        self.debounce_ms,
                        min(_STEP_MS, self.debounce_ms),
                        _WAIT_MS,
                        watch.stop,
                        limiter=self._waiters,
                    )
                    if raw == "timeout":
                        continue
                    if isinstance(raw, str):  # "stop" (or a signal, which never reaches a thread)
                        break
                    batch = {(Change(change), path) for change, path in raw}
                    changes = await trio.to_thread.run_sync(
                        _report, watch, batch, limiter=self._limiter
                    )
                    self._publish(watch, changes)
        except Exception as exc:
            log.warning("resource watch failed", channel=watch.channel, error=str(exc))
            self.release(watch.channel)
        finally:
            notify.close()

    def _publish(self, watch: _Watch, changes: list[tuple[str, str, str]]) -> None:
        if not changes or self._watches.get(watch.channel) is not watch:
            return
        self._touched([real for _, _, real in changes])
        items = [{"uri": uri, "type": kind} for uri, kind, _ in changes]
        for start in range(0, len(items), CHANGES_PER_ACTION):
            chunk = items[start : start + CHANGES_PER_ACTION]
            self.shell.apply(
                watch.channel,
                {"type": ActionType.RESOURCE_WATCH_CHANGED, "changes": {"items": chunk}},
            )


def _open(uri: str, roots: list[str], recursive: bool) -> tuple[Any, bool, RustNotify]:
    """Confine `uri` and start the OS watch: a directory itself, or a file's directory (so an
    editor's save-by-rename is still seen)."""
    target = confine(uri, roots)
    with os_errors(uri, "watch"):
        is_dir = os.path.isdir(target.real)
        if not is_dir:
            os.stat(target.real)
        where = target.real if is_dir else os.path.dirname(target.real)
        notify = RustNotify([where], False, False, 300, recursive and is_dir, True)
    return target, is_dir, notify


def _report(watch: _Watch, batch: set[tuple[Change, str]]) -> list[tuple[str, str, str]]:
    """(uri, change type, real path) for the changes of a batch the client should hear of."""
    seen: dict[str, tuple[str, set[str]]] = {}
    real_root = watch.real
    for change, path in batch:
        if watch.is_dir:
            if path == real_root:
                rel = ""
            elif path.startswith(real_root.rstrip("/") + "/"):
                rel = path[len(real_root.rstrip("/")) + 1 :]
            else:
                continue
            if not watch.recursive and "/" in rel:
                continue
        elif path != real_root:
            continue
        else:
            rel = ""
        # The OS watcher may follow a symlinked directory: report only what is really inside.
        if within_any(os.path.realpath(os.path.dirname(path)), watch.roots) is None:
            continue
        if rel and watch.excludes is not None and watch.excludes.match_file(rel):
            continue
        if rel and watch.includes is not None and not watch.includes.match_file(rel):
            continue
        kind = _CHANGE_TYPES.get(change)
        if kind is not None:
            seen.setdefault(path, (rel, set()))[1].add(kind)
    out: list[tuple[str, str, str]] = []
    for path, (rel, kinds) in seen.items():
        # Several changes to one path in a batch: report where it ended up.
        if not os.path.lexists(path):
            kind = "deleted"
        elif "added" in kinds:
            kind = "added"
        else:
            kind = "updated"
        shown = watch.path if not rel else watch.path.rstrip("/") + "/" + rel
        out.append((uri_of_path(shown), kind, path))
    out.sort()
    return out
