"""`@` mentions: an index of each working directory's files, and completion items from it.

One index per real root, built once in a worker thread by walking the tree with `os.scandir`
and honouring ignore rules as git does (`.gitignore` in every directory, deeper files
overriding shallower ones, `!` re-including, `.git/info/exclude`, `.git/` itself skipped; an
ignored directory is never entered, which is what keeps `node_modules` cheap). A query ranks
the index (`mention_rank`) in a worker thread too, so neither blocks the trio loop.

Freshness: a query never waits for a rebuild once an index exists. An index older than
`workspace.mention_refresh_seconds`, or one a resource watch saw change (`touched`), is rebuilt
in the background while queries keep using the old one. Only the first query on a root waits
(the cold case `bench/completions.py` measures); `prewarm` starts that build early.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass, field

import pathspec
import structlog
import trio

from ahp_bridge.host.workspace.mention_rank import Entries, Mention, rank
from ahp_bridge.host.workspace.paths import content_type, is_within, uri_of_path

__all__ = ["MentionIndexes", "completion_item", "scan"]

log = structlog.get_logger(__name__)

_Specs = tuple[tuple[str, pathspec.GitIgnoreSpec], ...]


def _read_spec(path: str) -> pathspec.GitIgnoreSpec | None:
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            lines = f.read().splitlines()
    except OSError:
        return None
    spec = pathspec.GitIgnoreSpec.from_lines(lines)
    return spec if len(spec) else None


def _ignored(rel: str, is_dir: bool, specs: _Specs) -> bool:
    """Git's rule: the deepest ignore file with a matching pattern decides."""
    for base, spec in reversed(specs):
        sub = rel[len(base) :] + ("/" if is_dir else "")
        include = spec.check_file(sub).include
        if include is not None:
            return include
    return False


def scan(root: str, max_entries: int) -> tuple[list[str], bool]:
    """Every file and directory under `root` that git would not ignore, as relative `/` paths
    (directories ending in `/`), at most `max_entries`; and whether it stopped at that bound.

    Symlinks are listed when they point inside `root` and never followed (no loops, nothing
    outside).
    """
    found: list[str] = []
    top: list[tuple[str, pathspec.GitIgnoreSpec]] = []
    exclude = _read_spec(os.path.join(root, ".git", "info", "exclude"))
    if exclude is not None:
        top.append(("", exclude))
    stack: list[tuple[str, str, _Specs]] = [(root, "", tuple(top))]
    while stack:
        directory, prefix, specs = stack.pop()
        own = _read_spec(os.path.join(directory, ".gitignore"))
        if own is not None:
            specs = (*specs, (prefix, own))
        try:
            with os.scandir(directory) as it:
                children = list(it)
        except OSError:
            continue
        children.sort(key=lambda e: e.name)
        subdirs: list[tuple[str, str, _Specs]] = []
        for entry in children:
            name = entry.name
            rel = prefix + name
            try:
                if entry.is_symlink():
                    real = os.path.realpath(entry.path)
                    if not is_within(real, root) or real == root or not os.path.exists(real):
                        continue
                    is_dir = os.path.isdir(real)
                    follow = False
                else:
                    is_dir = entry.is_dir(follow_symlinks=False)
                    follow = is_dir
                    if not is_dir and not entry.is_file(follow_symlinks=False):
                        continue
            except OSError:
                continue
            if is_dir and name == ".git":
                continue
            if _ignored(rel, is_dir, specs):
                continue
            if len(found) >= max_entries:
                return found, True
            found.append(rel + "/" if is_dir else rel)
            if follow:
                subdirs.append((entry.path, rel + "/", specs))
        stack.extend(reversed(subdirs))
    return found, False


def completion_item(mention: Mention, display_root: str, rel: str) -> dict[str, object]:
    """A CompletionItem that replaces the mention with `@rel` and attaches the file by URI.

    The URI is built on the root as the session names it (not its real path), so the message
    that carries it passes the working-directory check of `translate.commands`.
    """
    is_dir = rel.endswith("/")
    name = rel.rstrip("/")
    path = display_root.rstrip("/") + "/" + name
    attachment: dict[str, object] = {
        "type": "resource",
        "uri": uri_of_path(path),
        "label": name[name.rfind("/") + 1 :],
    }
    if is_dir:
        attachment["displayKind"] = "directory"
    else:
        kind = content_type(name, binary=None)
        attachment["displayKind"] = "image" if kind.startswith("image/") else "document"
        attachment["contentType"] = kind
    return {
        "insertText": f"{mention.sigil}{rel}" + ("" if is_dir else " "),
        "rangeStart": mention.start,
        "rangeEnd": mention.end,
        "attachment": attachment,
    }


@dataclass
class _Index:
    root: str
    entries: Entries | None = None
    built_at: float = 0.0
    stale: bool = False
    truncated: bool = False
    building: trio.Event | None = field(default=None, repr=False)


class MentionIndexes:
    """The mention index of every root in use, built and refreshed off the trio thread."""

    def __init__(
        self,
        *,
        max_entries: int,
        results: int,
        refresh_seconds: float,
        limiter: trio.CapacityLimiter,
    ) -> None:
        self.max_entries = max_entries
        self.results = results
        self.refresh_seconds = refresh_seconds
        self._limiter = limiter
        self._indexes: dict[str, _Index] = {}
        self._nursery: trio.Nursery | None = None

    def start(self, nursery: trio.Nursery) -> None:
        self._nursery = nursery

    # -- freshness -----------------------------------------------------------------------------

    def touched(self, paths: Iterable[str]) -> None:
        """Real paths a watch saw change: the indexes holding them are rebuilt on next use."""
        for index in self._indexes.values():
            if not index.stale and any(is_within(p, index.root) for p in paths):
                index.stale = True

    def keep_only(self, roots: Iterable[str]) -> None:
        """Forget the indexes of roots no session uses any more."""
        keep = set(roots)
        for root in [r for r in self._indexes if r not in keep]:
            del self._indexes[root]

    def prewarm(self, roots: Iterable[str]) -> None:
        for root in roots:
            index = self._indexes.setdefault(root, _Index(root))
            if index.entries is None and index.building is None:
                self._start_build(index)

    def _start_build(self, index: _Index) -> None:
        if self._nursery is None:
            return
        index.building = trio.Event()
        self._nursery.start_soon(self._build, index)

    async def _build(self, index: _Index) -> None:
        done = index.building
        assert done is not None
        started = trio.current_time()
        try:
            # Read-only work: on shutdown the thread is left to finish on its own.
            paths, truncated = await trio.to_thread.run_sync(
                scan, index.root, self.max_entries, limiter=self._limiter, abandon_on_cancel=True
            )
            entries = await trio.to_thread.run_sync(
                Entries, paths, limiter=self._limiter, abandon_on_cancel=True
            )
        except Exception as exc:
            log.warning("mention index failed", error=str(exc))
            entries, truncated = index.entries or Entries(()), index.truncated
        if truncated and not index.truncated:
            log.warning(
                "mention index truncated: raise workspace.mention_index_max_entries to see more",
                entries=len(entries),
                limit=self.max_entries,
            )
        index.entries, index.truncated = entries, truncated
        index.built_at, index.stale, index.building = started, False, None
        done.set()

    async def _entries(self, root: str) -> Entries:
        index = self._indexes.setdefault(root, _Index(root))
        if index.entries is None:
            if index.building is None:
                self._start_build(index)
            if index.building is None:  # not running (no nursery): build here
                index.building = trio.Event()
                await self._build(index)
            else:
                await index.building.wait()
        elif index.building is None and (
            index.stale or trio.current_time() - index.built_at > self.refresh_seconds
        ):
            self._start_build(index)
        assert index.entries is not None
        return index.entries

    # -- queries -------------------------------------------------------------------------------

    async def complete(
        self, mention: Mention, roots: list[tuple[str, str]]
    ) -> list[dict[str, object]]:
        """Completion items for `mention` over `roots` ((as the session names it, real path)),
        best first, at most `workspace.mention_results`; several roots take turns."""
        per_root: list[list[dict[str, object]]] = []
        for display, real in roots:
            entries = await self._entries(real)
            items = await trio.to_thread.run_sync(
                self._items, entries, mention, display, limiter=self._limiter
            )
            per_root.append(items)
        merged: list[dict[str, object]] = []
        for row in range(self.results):
            for items in per_root:
                if row < len(items):
                    merged.append(items[row])
        return merged[: self.results]

    def _items(
        self, entries: Entries, mention: Mention, display_root: str
    ) -> list[dict[str, object]]:
        best = rank(entries, mention.query, self.results)
        return [completion_item(mention, display_root, entries.paths[i]) for i in best]
