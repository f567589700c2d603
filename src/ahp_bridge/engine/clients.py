"""The wire line each client negotiated, remembered for its `reconnect`.

`reconnect` replaces `initialize` on a new socket and names no protocol version, so the host
speaks to a reconnecting client in the line that client negotiated before (kept in the session
catalog across restarts when the bridge has one). A client the host has never seen is served
in 0.7, the only line this host spoke before it learnt the others.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Mapping

from ahp_bridge.protocol.versions import LINES, V07, Line

#: Clients remembered in memory (the catalog keeps as many).
REMEMBERED = 10_000


class KnownClients:
    """A bounded map client id -> line, newest last; `persist` records each change."""

    def __init__(
        self, *, limit: int = REMEMBERED, persist: Callable[[str, Line], None] | None = None
    ) -> None:
        self._lines: OrderedDict[str, Line] = OrderedDict()
        self._limit = limit
        self.persist = persist

    def load(self, lines: Mapping[str, str]) -> None:
        """Take what an earlier run recorded (oldest first); unknown lines are ignored."""
        for client_id, line in lines.items():
            for known in LINES:
                if line == known:
                    self._put(client_id, known)

    def remember(self, client_id: str, line: Line) -> None:
        self._put(client_id, line)
        if self.persist is not None:
            self.persist(client_id, line)

    def line(self, client_id: str) -> Line:
        """The line to speak with `client_id` (0.7 when it never negotiated one here)."""
        line = self._lines.get(client_id)
        if line is None:
            return V07
        self._lines.move_to_end(client_id)
        return line

    def __len__(self) -> int:
        return len(self._lines)

    def _put(self, client_id: str, line: Line) -> None:
        self._lines[client_id] = line
        self._lines.move_to_end(client_id)
        while len(self._lines) > self._limit:
            self._lines.popitem(last=False)
