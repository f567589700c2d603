"""The files a fake conversation's turns change: real writes in its working directory.

A tool step whose ``file_edits`` carry ``content`` (or ``kind = "delete"``) changes the file on
disk, inside the conversation's working directory only, like a real agent's edit would. The
record of those writes is what the fake reports as its session diff (``Conversation.diff``:
each file's content when the conversation first touched it against its content now) and what
a rewind to "conversation-and-files" puts back, newest write first.

The record lives as long as the provider process (it is not in the transcript file): after a
restart the diff starts empty again, as the files on disk stay as they are.
"""

from __future__ import annotations

import difflib
import os
from dataclasses import dataclass
from pathlib import Path

from ahp_bridge.agentapi import FileDiff, FileEdit, RewindSkip

__all__ = ["FileRecord", "line_counts"]


def line_counts(before: str | None, after: str | None) -> tuple[int, int]:
    """(lines added, lines removed) from ``before`` to ``after``."""
    old = (before or "").splitlines()
    new = (after or "").splitlines()
    added = removed = 0
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, old, new).get_opcodes():
        if tag in ("replace", "delete"):
            removed += i2 - i1
        if tag in ("replace", "insert"):
            added += j2 - j1
    return added, removed


@dataclass(frozen=True)
class _Write:
    turn: int
    path: str
    before: str | None
    after: str | None


class FileRecord:
    """The writes of one conversation, in order, and each file's content before the first."""

    def __init__(self, workdir: str) -> None:
        self.workdir = workdir
        self.writes: list[_Write] = []
        self.baseline: dict[str, str | None] = {}
        self.current: dict[str, str | None] = {}

    def resolve(self, path: str) -> str:
        """The absolute path of an edit, refused (ValueError) outside the working directory."""
        if not self.workdir or not os.path.isabs(self.workdir):
            raise ValueError("the conversation has no working directory to edit files in")
        root = os.path.realpath(self.workdir)
        target = os.path.realpath(os.path.join(root, path))
        if target != root and not target.startswith(root.rstrip(os.sep) + os.sep):
            raise ValueError(f"{path!r} is outside the working directory")
        return target

    def write(self, turn: int, path: str, kind: str, content: str | None) -> FileEdit:
        """Apply one edit on disk and record it; returns its FileEdit."""
        target = self.resolve(path)
        file = Path(target)
        before = _read(file)
        after = None if kind == "delete" else (content or "")
        if kind == "delete":
            if before is None:
                raise ValueError(f"{path!r} does not exist, so it cannot be deleted")
            file.unlink()
        else:
            file.parent.mkdir(parents=True, exist_ok=True)
            file.write_text(after or "", encoding="utf-8")
        self.baseline.setdefault(target, before)
        self.current[target] = after
        self.writes.append(_Write(turn, target, before, after))
        added, removed = line_counts(before, after)
        shown = "create" if before is None else kind
        return FileEdit(
            path=target,
            kind=shown,
            additions=added,
            deletions=removed,
            diff_status="available",
        )

    def diff(self) -> list[FileDiff]:
        """Every recorded file whose content differs from before the conversation's first write."""
        out = []
        for path, before in self.baseline.items():
            after = self.current.get(path)
            if after == before:
                continue
            added, removed = line_counts(before, after)
            status = "added" if before is None else "deleted" if after is None else "modified"
            out.append(
                FileDiff(
                    path=path,
                    status=status,
                    additions=added,
                    deletions=removed,
                    before=before or "",
                    after=after or "",
                )
            )
        return out

    def touched_since(self, turn: int) -> list[str]:
        return sorted({w.path for w in self.writes if w.turn >= turn})

    def rewind(self, turn: int) -> tuple[list[str], list[RewindSkip]]:
        """Undo every write of turn ``turn`` and later, newest first; (restored, skipped)."""
        restored: list[str] = []
        skipped: list[RewindSkip] = []
        undone = [w for w in self.writes if w.turn >= turn]
        self.writes = [w for w in self.writes if w.turn < turn]
        for write in reversed(undone):
            file = Path(write.path)
            if _read(file) != write.after:
                skipped.append(RewindSkip(path=write.path, reason="changed since the edit"))
                continue
            try:
                if write.before is None:
                    file.unlink(missing_ok=True)
                else:
                    file.parent.mkdir(parents=True, exist_ok=True)
                    file.write_text(write.before, encoding="utf-8")
            except OSError as exc:
                skipped.append(RewindSkip(path=write.path, reason=exc.strerror or str(exc)))
                continue
            self.current[write.path] = write.before
            if write.path not in restored:
                restored.append(write.path)
        for path in restored:
            if not any(w.path == path for w in self.writes):
                self.current.pop(path, None)
                self.baseline.pop(path, None)
        return restored, skipped


def _read(file: Path) -> str | None:
    try:
        return file.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
