"""File changes -> AHP changesets: what changed in a session, a chat and a turn (pure).

The provider's record of a conversation's changes is ``Conversation.diff()``: one ``FileDiff``
per file, its content when the session began (``before``) and now (``after``). The host reads it
at a chat's start, after each tool call that edited files and at each turn's end, and keeps the
latest reading as a ``Snapshot`` (path -> ``FileState``). Everything else is computed here:

* the session's and a chat's changeset files are the snapshot as it is (the provider's own
  counts, else counted here);
* a turn's files are the difference between the snapshot at its start and at its end
  (``turn_files``): a file whose content moved, with the content at the turn's start as
  ``before`` and at its end as ``after``, and line counts computed here (``line_stats``);
* the changeset file of one change (``changeset_file``): ``id`` the file URI (the spec: the
  after URI, the before URI for a deletion), ``edit`` an AHP ``FileEdit`` whose sides point at
  content references the host serves through ``resourceRead``.

Content references are made by the caller (``ContentRefs``): this module never stores text or
mints URIs itself. No clock, no I/O.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from ahp_bridge.agentapi import FileDiff

__all__ = [
    "ChangeKind",
    "FileChange",
    "FileState",
    "Snapshot",
    "catalog_entry",
    "changeset_file",
    "is_created",
    "is_deleted",
    "line_stats",
    "reverse_patch",
    "snapshot",
    "snapshot_files",
    "turn_files",
]

ChangeKind = str
"""``created``, ``deleted``, ``modified`` or ``renamed`` (what a changeset file shows)."""


@dataclass(frozen=True)
class FileState:
    """One file in the provider's record: its text when the session began and now.

    ``before``/``after`` are None when the file did not exist then (or the provider did not
    say); ``known`` is False when the provider gave counts but no text (a binary or omitted
    file), so no content can be shown for it.
    """

    path: str
    before: str | None
    after: str | None
    additions: int = 0
    deletions: int = 0
    counts_known: bool = True
    old_path: str = ""
    known: bool = True


Snapshot = Mapping[str, FileState]
"""A conversation's changes by path, as one ``diff()`` reported them."""


@dataclass(frozen=True)
class FileChange:
    """One file's change across a span (a session, a turn): what a changeset file shows."""

    path: str
    before: str | None
    after: str | None
    added: int | None
    removed: int | None
    old_path: str = ""
    known: bool = True

    @property
    def kind(self) -> ChangeKind:
        if self.old_path and self.old_path != self.path:
            return "renamed"
        if self.before is None and self.after is not None:
            return "created"
        if self.after is None and self.before is not None:
            return "deleted"
        return "modified"


#: How runtimes spell a created or a deleted file (agentapi leaves `FileDiff.status` and
#: `FileEdit.kind` free text): one vocabulary for every reading of either.
_CREATED = frozenset({"added", "add", "created", "create", "new", "a"})
_DELETED = frozenset({"deleted", "delete", "removed", "remove", "d"})


def is_created(status: str) -> bool:
    """A `FileDiff.status` or `FileEdit.kind` that says the file was created."""
    return status.lower() in _CREATED


def is_deleted(status: str) -> bool:
    """A `FileDiff.status` or `FileEdit.kind` that says the file was deleted."""
    return status.lower() in _DELETED


def snapshot(diffs: Iterable[FileDiff]) -> dict[str, FileState]:
    """The provider's ``FileDiff`` list as a snapshot; a later entry for a path wins."""
    out: dict[str, FileState] = {}
    for diff in diffs:
        if not diff.path:
            continue
        # A patch without the texts (or a binary or clipped file) gives counts, no content.
        patch_only = bool(diff.patch) and not diff.before and not diff.after
        known = not diff.binary and not diff.truncated and not patch_only
        status_given = bool(diff.status)
        created = is_created(diff.status) or (
            not status_given and known and not diff.before and bool(diff.after)
        )
        deleted = is_deleted(diff.status) or (
            not status_given and known and not diff.after and bool(diff.before)
        )
        before = None if created else diff.before
        after = None if deleted else diff.after
        if not known:
            before = after = None
        counts_known = not diff.counts_unknown
        additions, deletions = diff.additions, diff.deletions
        if known and (diff.counts_unknown or (additions == 0 and deletions == 0)):
            additions, deletions = line_stats(before, after)
            counts_known = True
        out[diff.path] = FileState(
            path=diff.path,
            before=before,
            after=after,
            additions=additions,
            deletions=deletions,
            counts_known=counts_known,
            old_path=diff.old_path,
            known=known,
        )
    return out


_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")


def reverse_patch(after: str, patch: str) -> str | None:
    """The text a unified diff ``patch`` turned into ``after``: the patch applied backwards.

    None when the patch does not fit ``after`` (the file moved on since), so a caller never
    shows content the provider did not have. A provider that reports only a patch (Copilot)
    gets its ``before`` this way from the file as it is now.
    """
    new = after.splitlines(keepends=True)
    old: list[str] = []
    at = 0  # index into new
    lines = patch.splitlines()
    i = 0
    while i < len(lines) and not lines[i].startswith("@@"):
        i += 1  # the header (diff --git, ---, +++)
    if i == len(lines):
        return None
    while i < len(lines):
        match = _HUNK.match(lines[i])
        if match is None:
            return None
        start = max(int(match.group(3)) - 1, 0)
        if int(match.group(4) or "1") == 0:
            start = int(match.group(3))  # an empty new side names the line before
        if start < at or start > len(new):
            return None
        old.extend(new[at:start])
        at = start
        i += 1
        while i < len(lines) and not lines[i].startswith("@@"):
            line = lines[i]
            tag, body = line[:1], line[1:]
            if line.startswith("\\"):  # "\ No newline at end of file": the last line had none
                if old and tag and old[-1].endswith("\n") and lines[i - 1].startswith("-"):
                    old[-1] = old[-1][:-1]
            elif tag in (" ", "+"):
                if at >= len(new) or new[at].rstrip("\r\n") != body:
                    return None
                if tag == " ":
                    old.append(new[at])
                at += 1
            elif tag == "-":
                old.append(body + "\n")
            elif line == "":
                if at < len(new) and new[at].strip() == "":
                    old.append(new[at])
                    at += 1
            else:
                return None
            i += 1
    old.extend(new[at:])
    return "".join(old)


def _lines(text: str | None) -> list[str]:
    return [] if not text else text.splitlines()


def line_stats(before: str | None, after: str | None) -> tuple[int, int]:
    """(lines added, lines removed) from ``before`` to ``after``, as a unified diff counts."""
    if before == after:
        return 0, 0
    old, new = _lines(before), _lines(after)
    if not old:
        return len(new), 0
    if not new:
        return 0, len(old)
    # Trim the common head and tail first: edits are usually small and local, and the
    # matcher is quadratic in the worst case on what remains.
    start = 0
    limit = min(len(old), len(new))
    while start < limit and old[start] == new[start]:
        start += 1
    end_old, end_new = len(old), len(new)
    while end_old > start and end_new > start and old[end_old - 1] == new[end_new - 1]:
        end_old -= 1
        end_new -= 1
    old, new = old[start:end_old], new[start:end_new]
    if not old or not new:
        return len(new), len(old)
    added = removed = 0
    matcher = difflib.SequenceMatcher(None, old, new, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag in ("replace", "delete"):
            removed += i2 - i1
        if tag in ("replace", "insert"):
            added += j2 - j1
    return added, removed


def snapshot_files(snap: Snapshot) -> list[FileChange]:
    """A snapshot as the changes of its whole span (a session's or a chat's), path order."""
    out = []
    for path in sorted(snap):
        state = snap[path]
        counted = state.counts_known
        out.append(
            FileChange(
                path=path,
                before=state.before,
                after=state.after,
                added=state.additions if counted else None,
                removed=state.deletions if counted else None,
                old_path=state.old_path,
                known=state.known,
            )
        )
    return out


def turn_files(start: Snapshot, end: Snapshot) -> list[FileChange]:
    """The files a turn changed: content at its start (``start``) against its end (``end``).

    A file the turn created, changed or deleted is listed with line counts computed here; a
    file the turn changed back to its content at the turn's start is not. A file that drops
    out of the record during the turn went back to its content when the session began.
    """
    out = []
    for path in sorted(set(start) | set(end)):
        was, now = start.get(path), end.get(path)
        known = (was is None or was.known) and (now is None or now.known)
        # at the turn's start: its recorded content then, else (new to the record) the
        # session's baseline
        before = was.after if was is not None else (now.before if now is not None else None)
        after = now.after if now is not None else (was.before if was is not None else None)
        if before == after and known:
            continue
        if not known:
            if was is not None and now is not None and was == now:
                continue
            out.append(FileChange(path, None, None, None, None, known=False))
            continue
        added, removed = line_stats(before, after)
        old_path = now.old_path if now is not None and (was is None or not was.old_path) else ""
        out.append(FileChange(path, before, after, added, removed, old_path=old_path))
    return out


ContentRefs = Callable[[str | None], dict[str, Any] | None]
"""Text -> an AHP ``ContentRef`` the host serves (None for no text), made by the host."""


def changeset_file(
    change: FileChange, file_uri: Callable[[str], str], ref: ContentRefs
) -> dict[str, Any]:
    """The AHP ``ChangesetFile`` of one change; its sides point at served content."""
    edit: dict[str, Any] = {}
    before_uri = file_uri(change.old_path or change.path)
    after_uri = file_uri(change.path)
    if change.known:
        if change.before is not None:
            content = ref(change.before)
            if content is not None:
                edit["before"] = {"uri": before_uri, "content": content}
        if change.after is not None:
            content = ref(change.after)
            if content is not None:
                edit["after"] = {"uri": after_uri, "content": content}
    diff: dict[str, Any] = {}
    if change.added is not None:
        diff["added"] = change.added
    if change.removed is not None:
        diff["removed"] = change.removed
    if diff:
        edit["diff"] = diff
    deleted = change.kind == "deleted"
    file: dict[str, Any] = {"id": before_uri if deleted else after_uri, "edit": edit}
    file["_meta"] = {"ahpBridge.change": change.kind}
    return file


def catalog_entry(
    label: str, uri_template: str, change_kind: str, description: str = ""
) -> dict[str, Any]:
    """One AHP ``Changeset`` catalog entry (what ``session/changesetsChanged`` lists)."""
    entry: dict[str, Any] = {"label": label, "uriTemplate": uri_template, "changeKind": change_kind}
    if description:
        entry["description"] = description
    return entry
