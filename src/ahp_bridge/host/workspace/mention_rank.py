"""Pure logic of `@` mentions: the word at the cursor and the ranking of workspace paths.

No I/O and no trio: `host/mentions.py` builds the path list from disk and calls these in a
worker thread. The spec measures `CompletionsParams.offset` and `CompletionItem.rangeStart/End`
in UTF-16 code units, so the conversions live here beside the word finder.

Ranking, best first, each tier tried only while the result is not full (so a one-letter
query over 50,000 paths stops after the cheap tiers):

1. the file name starts with the query (an exact name first, then shallower paths, matching
   case before not, shorter before longer);
2. the relative path starts with the query (`src/ma` -> `src/main.py`);
3. the file name contains the query;
4. the path contains the query;
5. the query's characters appear in order in the path (`rdme` -> `README.md`), tighter
   matches first.

Matching ignores case. Within a tier, shallower paths come first, and directories (entries
ending in `/`) after the files beside them.
"""

from __future__ import annotations

import heapq
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

__all__ = ["SIGILS", "Entries", "Mention", "index_to_utf16", "mention_at", "rank", "utf16_to_index"]

#: Characters that start a mention: `@path` (Copilot CLI, Claude Code) and `#path` (VS Code).
SIGILS = ("@", "#")


def utf16_to_index(text: str, offset: int) -> int:
    """The `str` index of a UTF-16 code-unit offset into `text` (clamped to its ends)."""
    if offset <= 0:
        return 0
    units = 0
    for index, char in enumerate(text):
        if units >= offset:
            return index
        units += 2 if ord(char) > 0xFFFF else 1
    return len(text)


def index_to_utf16(text: str, index: int) -> int:
    """The UTF-16 code-unit offset of a `str` index into `text`."""
    prefix = text[:index]
    return len(prefix) + sum(1 for char in prefix if ord(char) > 0xFFFF)


@dataclass(frozen=True)
class Mention:
    """A mention being typed: `sigil` + `query`, replacing `[start, end)` (UTF-16 offsets)."""

    sigil: str
    query: str
    start: int
    end: int


def mention_at(text: str, offset: int) -> Mention | None:
    """The mention the cursor at UTF-16 `offset` is in, or None.

    A mention is a word (no whitespace) that starts with a sigil, at the start of the text or
    after whitespace (so `me@example.com` is no mention). The query is what lies between the
    sigil and the cursor; the range to replace runs to the end of the word.
    """
    cursor = utf16_to_index(text, offset)
    start = cursor
    while start > 0 and not text[start - 1].isspace():
        start -= 1
    if start >= len(text) or text[start] not in SIGILS or start == cursor:
        return None
    end = cursor
    while end < len(text) and not text[end].isspace():
        end += 1
    return Mention(
        sigil=text[start],
        query=text[start + 1 : cursor],
        start=index_to_utf16(text, start),
        end=index_to_utf16(text, end),
    )


class Entries:
    """The paths of one root, relative and `/`-separated (directories end in `/`), with what
    ranking needs precomputed once per index build."""

    __slots__ = ("bases", "depth", "lower", "paths")

    def __init__(self, paths: Iterable[str]) -> None:
        self.paths: list[str] = list(paths)
        self.lower: list[str] = [p.lower() for p in self.paths]
        self.bases: list[str] = [_base(p) for p in self.lower]
        self.depth: list[int] = [p.count("/", 0, len(p) - 1) for p in self.paths]

    def __len__(self) -> int:
        return len(self.paths)

    def is_dir(self, index: int) -> bool:
        return self.paths[index].endswith("/")

    def fuzzy(self, query: str) -> list[tuple[int, int]]:
        """(entry, span) for each path holding the characters of `query` in order, the span
        being the length of the first such stretch.

        The paths that contain every character of the query are found first, rarest
        character first (each pass a C-speed `in` over fewer paths); only those are matched
        with `a[^b]*+b[^c]*+c`, whose gaps stop at the next wanted character and never
        backtrack (a lazy `a.*?b.*?c` is polynomial in the path length for every `a`).
        """
        if not query:
            return []
        lower = self.lower
        candidates: Iterable[int] = range(len(lower))
        for char in sorted(set(query), key=_commonness):
            candidates = [i for i in candidates if char in lower[i]]
        wanted = re.escape(query[0]) + "".join(
            f"[^{re.escape(char)}]*+{re.escape(char)}" for char in query[1:]
        )
        search = re.compile(wanted).search
        hits: list[tuple[int, int]] = []
        for i in candidates:
            match = search(lower[i])
            if match is not None:
                hits.append((i, match.end() - match.start()))
        return hits


#: Letters from the most to the least common in English words and identifiers.
_COMMON = "etaoinsrhldcumfpgwybvkxjqz"


def _commonness(char: str) -> int:
    """Lower for rarer characters (so filtering by them first leaves fewer paths)."""
    found = _COMMON.find(char)
    return found if found >= 0 else -1


def _base(lower_path: str) -> str:
    stripped = lower_path.rstrip("/")
    return stripped[stripped.rfind("/") + 1 :]


def rank(entries: Entries, query: str, limit: int) -> list[int]:
    """The indexes of the best `limit` entries for `query`, best first (see the module doc)."""
    if limit <= 0 or not len(entries):
        return []
    paths, lower, bases, depth = entries.paths, entries.lower, entries.bases, entries.depth
    if not query:  # just the sigil: the top of the tree
        return heapq.nsmallest(
            limit, range(len(paths)), key=lambda i: (depth[i], paths[i].endswith("/"), lower[i])
        )
    q = query.lower()
    chosen: list[int] = []
    taken: set[int] = set()

    def take(candidates: Sequence[int], key: Callable[[int], tuple[object, ...]]) -> bool:
        fresh = [i for i in candidates if i not in taken]
        for i in heapq.nsmallest(limit - len(chosen), fresh, key=key):
            chosen.append(i)
            taken.add(i)
        return len(chosen) >= limit

    def plain(i: int) -> tuple[object, ...]:
        return (depth[i], paths[i].endswith("/"), len(paths[i]), lower[i])

    def by_name(i: int) -> tuple[object, ...]:
        name = paths[i].rstrip("/")
        exact_case = name[name.rfind("/") + 1 :].startswith(query)
        return (bases[i] != q, paths[i].endswith("/"), depth[i], not exact_case, *plain(i)[2:])

    # Tier 1: the name starts with the query.
    if "/" not in q and take([i for i, b in enumerate(bases) if b.startswith(q)], by_name):
        return chosen
    # Tier 2: the path starts with it.
    if take([i for i, p in enumerate(lower) if p.startswith(q)], plain):
        return chosen
    # Tiers 3 and 4: the name, then the path, contains it.
    inside = [i for i, p in enumerate(lower) if q in p]
    if "/" not in q and take([i for i in inside if q in bases[i]], by_name):
        return chosen
    if take(inside, plain):
        return chosen
    # Tier 5: the characters in order.
    spans = dict(entries.fuzzy(q))
    take(list(spans), lambda i: (spans[i], *plain(i)))
    return chosen
