"""The loaded window of a chat's turns and the opaque `turnsNextCursor`.

The store keeps every turn of a chat. A subscriber asking for `view.turns`
gets a tail window plus a cursor; `fetchTurns` pages older turns in through a
broadcast `chat/turnsLoaded`. Because that action reaches every subscriber of
the chat and the reducer only prepends, all windowed subscribers must share one
boundary: the window is per chat, it only ever grows towards older turns
(until a truncation clears it), and a later `view.turns` subscriber gets the
current window even if that is more than it asked for (which the spec allows).

A cursor is `<generation>~<boundary index>`. Indices of retained turns never
move (turns are only appended, or truncated from the end). Generations come from
one store-wide counter and change whenever indices could be reused (all turns
cleared, the chat recreated), so a stale cursor, or one pointing past the end,
is not recognised (the host answers -32602).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

_SEP = "~"


@dataclass(slots=True)
class TurnWindow:
    """Index of the oldest loaded turn (0 = everything) and the cursor generation.

    `fixed` is False until the first windowed snapshot picks the boundary.
    """

    start: int = 0
    generation: int = 0
    fixed: bool = False

    def cursor_at(self, index: int) -> str:
        return f"{self.generation}{_SEP}{index}"

    def cursor(self) -> str | None:
        """The cursor for the current window, or None when every turn is loaded."""
        return self.cursor_at(self.start) if self.start > 0 else None

    def parse(self, cursor: str, turn_count: int) -> int | None:
        """Boundary index named by `cursor`, or None if this window did not issue it."""
        gen, sep, index = cursor.partition(_SEP)
        if not sep or gen != str(self.generation) or not index.isdigit():
            return None
        value = int(index)
        return value if 0 < value <= turn_count else None

    def loaded_action(self, turns: list[Any], start: int, stop: int) -> dict[str, Any]:
        """`chat/turnsLoaded` with turns[start:stop], oldest first, and a cursor if older remain."""
        action: dict[str, Any] = {"type": "chat/turnsLoaded", "turns": turns[start:stop]}
        if start > 0:
            action["turnsNextCursor"] = self.cursor_at(start)
        return action

    def clear(self, generation: int) -> None:
        """Every turn is gone: forget the window; a new generation voids old cursors."""
        self.start = 0
        self.fixed = False
        self.generation = generation
