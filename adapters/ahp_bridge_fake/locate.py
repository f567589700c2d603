"""Find the source line of a TOML value from its path, because tomllib reports no positions.

The scanner follows table headers (``[a.b]``, ``[[a.b]]``, counting array-of-tables
elements per concrete parent) and ``key = value`` lines, and records the line where each
concrete path starts. A path inside an inline table or array falls back to the line of the
nearest recorded ancestor, which is the line a person would look at anyway.
"""

from __future__ import annotations

import re

Path = tuple[str | int, ...]

_BARE = re.compile(r"[A-Za-z0-9_-]+")


def _split_key(text: str) -> list[str] | None:
    """Split a dotted TOML key (bare or quoted parts); None when it is not a key."""
    parts: list[str] = []
    i, n = 0, len(text)
    while True:
        while i < n and text[i] in " \t":
            i += 1
        if i >= n:
            return None
        if text[i] in "\"'":
            quote = text[i]
            end = text.find(quote, i + 1)
            if end < 0:
                return None
            parts.append(text[i + 1 : end])
            i = end + 1
        else:
            m = _BARE.match(text, i)
            if not m:
                return None
            parts.append(m.group())
            i = m.end()
        while i < n and text[i] in " \t":
            i += 1
        if i >= n:
            return parts
        if text[i] != ".":
            return None
        i += 1


def _key_of_line(line: str) -> list[str] | None:
    """The dotted key of a ``key = value`` line, or None."""
    depth_quote = ""
    for i, ch in enumerate(line):
        if depth_quote:
            if ch == depth_quote:
                depth_quote = ""
        elif ch in "\"'":
            depth_quote = ch
        elif ch == "=":
            return _split_key(line[:i])
        elif ch == "#":
            return None
    return None


class LineIndex:
    """Map concrete TOML value paths to 1-based source lines."""

    def __init__(self, source: str) -> None:
        self._lines: dict[Path, int] = {}
        self._scan(source)

    def _scan(self, source: str) -> None:
        arrays: dict[Path, int] = {}  # concrete array path -> index of its last element
        current: Path = ()
        in_multiline = ""
        for lineno, raw in enumerate(source.splitlines(), start=1):
            line = raw.strip()
            if in_multiline:
                if raw.count(in_multiline) % 2 == 1:
                    in_multiline = ""
                continue
            if not line or line.startswith("#"):
                continue
            if line.startswith("["):
                is_array = line.startswith("[[")
                inner = line[2:] if is_array else line[1:]
                close = inner.find("]]" if is_array else "]")
                keys = _split_key(inner[:close]) if close >= 0 else None
                if keys is None:
                    continue
                path: Path = ()
                for key in keys[:-1]:
                    path = (*path, key)
                    if path in arrays:
                        path = (*path, arrays[path])
                path = (*path, keys[-1])
                if is_array:
                    index = arrays.get(path, -1) + 1
                    arrays[path] = index
                    self._lines.setdefault(path, lineno)
                    path = (*path, index)
                self._lines.setdefault(path, lineno)
                current = path
                continue
            dotted = _key_of_line(line)
            if dotted is None:
                continue
            full = (*current, *dotted)
            self._lines.setdefault(full, lineno)
            for quote in ('"""', "'''"):
                if raw.count(quote) % 2 == 1:
                    in_multiline = quote

    def line_of(self, path: Path) -> int:
        """The line of path, else of its nearest recorded ancestor, else 1."""
        probe = tuple(path)
        while probe:
            if probe in self._lines:
                return self._lines[probe]
            probe = probe[:-1]
        return 1


def format_path(path: Path) -> str:
    """Render ``("prompts", 3, "steps", 1, "kind")`` as ``prompts[3].steps[1].kind``."""
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            text = part if _BARE.fullmatch(part) else f'"{part}"'
            out += f".{text}" if out else text
    return out
