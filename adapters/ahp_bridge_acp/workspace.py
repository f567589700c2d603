"""The bridge's file-system methods for the agent, confined to a session's working directories.

``fs/read_text_file`` and ``fs/write_text_file`` take absolute paths. A path is refused when it
is relative, names ``..``, or resolves (symlinks followed, for the file and every parent) outside
every root; writes never follow a symlink at the final component. Refusals are JSON-RPC errors
whose message says what was refused and why, so the agent (and through it the model) can adapt.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from acp.exceptions import RequestError

INVALID_PARAMS = -32602


def refused(message: str) -> RequestError:
    return RequestError(INVALID_PARAMS, message, {"reason": message})


@dataclass(frozen=True)
class Write:
    """One write the bridge made: the file's text before (None: it did not exist) and after."""

    path: str
    before: str | None
    after: str


class Workspace:
    """Roots a session's agent may read and write under."""

    def __init__(self, roots: list[str], *, max_bytes: int) -> None:
        self.roots = [Path(os.path.realpath(r)) for r in roots if r]
        self.max_bytes = max_bytes

    def describe(self) -> str:
        return ", ".join(str(r) for r in self.roots) or "none"

    def resolve(self, path: str) -> Path:
        """The real path of ``path`` inside a root; RequestError when it is not."""
        if not isinstance(path, str) or not path:
            raise refused("a path is required")
        if "\x00" in path:
            raise refused("the path contains a NUL byte")
        if not os.path.isabs(path):
            raise refused(f"the path {path!r} is not absolute; the client needs absolute paths")
        if ".." in Path(path).parts:
            raise refused(f"the path {path!r} contains '..'; name the file directly")
        real = Path(os.path.realpath(path))
        if not any(real == root or root in real.parents for root in self.roots):
            raise refused(
                f"the path {path!r} is outside the session's working directories "
                f"({self.describe()}); the bridge only reads and writes inside them"
            )
        return real

    def within(self, path: str) -> bool:
        try:
            self.resolve(path)
        except RequestError:
            return False
        return True

    def read(self, path: str, line: int | None, limit: int | None) -> str:
        real = self.resolve(path)
        if not real.exists():
            raise RequestError(-32002, f"the file {path!r} does not exist", {"uri": path})
        if not real.is_file():
            raise refused(f"{path!r} is not a regular file")
        if line is not None and line < 1:
            raise refused("line numbers start at 1")
        if limit is not None and limit < 0:
            raise refused("limit must not be negative")
        size = real.stat().st_size
        if size > self.max_bytes and line is None and limit is None:
            raise refused(
                f"the file {path!r} has {size} bytes, more than the bridge's max_file_bytes "
                f"({self.max_bytes}); read it in parts with line and limit"
            )
        out: list[str] = []
        taken = 0
        with open(real, encoding="utf-8", errors="replace", newline="") as f:
            for number, text in enumerate(f, start=1):
                if line is not None and number < line:
                    continue
                if limit is not None and len(out) >= limit:
                    break
                taken += len(text.encode())
                if taken > self.max_bytes:
                    raise refused(
                        f"the requested part of {path!r} is over the bridge's max_file_bytes "
                        f"({self.max_bytes}); ask for fewer lines"
                    )
                out.append(text)
        return "".join(out)

    def write(self, path: str, content: str) -> Write:
        real = self.resolve(path)
        data = content.encode()
        if len(data) > self.max_bytes:
            raise refused(
                f"the content for {path!r} has {len(data)} bytes, more than the bridge's "
                f"max_file_bytes ({self.max_bytes})"
            )
        if real.is_dir():
            raise refused(f"{path!r} is a directory")
        before: str | None = None
        if real.exists():
            if not real.is_file():
                raise refused(f"{path!r} is not a regular file")
            if real.stat().st_size <= self.max_bytes:
                before = real.read_text(encoding="utf-8", errors="replace")
        real.parent.mkdir(parents=True, exist_ok=True)
        # Resolve again after creating parents: a parent that appeared as a symlink meanwhile
        # must not lead outside.
        real = self.resolve(str(real))
        flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0)
        try:
            fd = os.open(real, flags, 0o644)
        except OSError as exc:
            raise refused(f"cannot write {path!r}: {exc.strerror}") from None
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        return Write(str(real), before, content)
