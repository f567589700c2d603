"""The loaded window of a chat's turns, what of them the host keeps live, and the cursor.

A chat's turns have absolute indices (0 = its first turn). The store keeps only the newest of
them live (`limits.max_live_turns`, `limits.max_live_turn_bytes`): turns before `base` are
evicted to the archive (the catalog), and `archived` says how many from 0 are there already, so
a turn paged back in and evicted again is not written twice.

A subscriber asking for `view.turns` gets a tail window plus a cursor; `fetchTurns` pages older
turns in through a broadcast `chat/turnsLoaded`. Because that action reaches every subscriber of
the chat and the reducer only prepends, no subscriber may hold a boundary newer than the next
page: `start` is the boundary every subscriber holds turns from (or older), the next page ends
there, and a snapshot only ever moves it towards newer turns (a snapshot is served from the live
state, so it moves it up to `base` at least). A subscriber holding older turns than `start` only
gets turns it has again (the reducer skips them), never a gap.

A cursor is `<generation>~<absolute boundary index>`. Eviction does not move absolute indices,
so a cursor stays valid however often the turns it names are evicted and loaded back.
Generations come from one store-wide counter and change whenever indices could be reused (all
turns cleared, the chat recreated, turns the host did not hold loaded in), so a stale cursor,
or one pointing past the end, is not recognised (the host answers -32602).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

_SEP = "~"


@dataclass(slots=True)
class TurnWindow:
    """Absolute boundaries of one chat's turns (see the module docstring).

    `fixed` is False until the first windowed snapshot picks the boundary.
    """

    start: int = 0
    generation: int = 0
    fixed: bool = False
    #: Absolute index of the live state's first turn (the turns before it are evicted).
    base: int = 0
    #: Turns [0, archived) are in the archive.
    archived: int = 0
    #: Canonical JSON bytes of each live turn, by id (each is measured once).
    sizes: dict[Any, int] = field(default_factory=dict)

    def cursor_at(self, index: int) -> str:
        return f"{self.generation}{_SEP}{index}"

    def cursor(self) -> str | None:
        """The cursor for the current window, or None when every turn is loaded."""
        return self.cursor_at(self.start) if self.start > 0 else None

    def parse(self, cursor: str, turn_count: int) -> int | None:
        """Boundary index named by `cursor`, or None if this window did not issue it
        (`turn_count`: every turn of the chat, evicted ones included)."""
        gen, sep, index = cursor.partition(_SEP)
        if not sep or gen != str(self.generation) or not index.isdigit():
            return None
        value = int(index)
        return value if 0 < value <= turn_count else None

    def loaded_action(self, turns: list[Any], start: int, stop: int) -> dict[str, Any]:
        """`chat/turnsLoaded` with live turns[start:stop] (live indices), oldest first, and a
        cursor if older remain."""
        action: dict[str, Any] = {"type": "chat/turnsLoaded", "turns": turns[start:stop]}
        if self.base + start > 0:
            action["turnsNextCursor"] = self.cursor_at(self.base + start)
        return action

    def clear(self, generation: int) -> None:
        """Every turn is gone: forget the window; a new generation voids old cursors."""
        self.start = 0
        self.fixed = False
        self.generation = generation
        self.base = 0
        self.archived = 0
        self.sizes.clear()


@dataclass(frozen=True, slots=True)
class TurnsPage:
    """The page `fetchTurns` loads next: absolute turns [start, stop), of which
    [start, split) must be read from the archive and [split, stop) are `live` (as they were
    when the page was cut)."""

    chat: str
    generation: int
    start: int
    split: int
    stop: int
    live: tuple[Any, ...] = ()

    @property
    def archived(self) -> int:
        """How many of the page's turns the archive must give."""
        return self.split - self.start


@dataclass(frozen=True, slots=True)
class Evicted:
    """Turns that left a chat's live state and are not archived yet: `turns` are absolute
    [start, start + len(turns))."""

    chat: str
    start: int
    turns: tuple[Any, ...]
