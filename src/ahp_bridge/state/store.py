"""The single writer of AHP state: sequencing, the bounded replay log, snapshots.

The host calls it on the trio thread; it is sans-IO and reads no clock (AHP 1.0 reducers derive
every timestamp from the actions; the host's time of an action, when it gives one, is only
carried on its envelope). Every accepted action gets the next serverSeq (one counter shared by
all channels) and goes into a replay log bounded by count and by bytes (each envelope weighs
its canonical frame, `Envelope.frame`, which fan-out encodes anyway), so a reconnecting client
can be served from the log or told to take a snapshot instead, and a client sending large
actions cannot make the log hold more than its byte budget.

The state here is canonical (1.0) and only that: no wire version's view of it and no state
derived from it for one (a line that needs some keeps it in its own lens, fed by the envelopes),
nor the host's own derived state (a chat's last activity is the engine's). Each wire version's
view is `protocol.lens`'s business, given the channel's kind, which is bound here when the
channel is created and never read from its URI.

Chats keep their full turn list here; what subscribers see of it is governed by
the chat's loaded window (see `turn_window`).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Container, Iterable
from itertools import count, islice
from typing import Any

from .envelope import Envelope
from .reducers import KINDS, reduce
from .turn_window import TurnWindow

__all__ = ["Envelope", "Store"]


class Store:
    """Authoritative state of every channel, keyed by URI."""

    def __init__(
        self,
        *,
        log_limit: int = 10_000,
        log_bytes: int = 64 * 1024 * 1024,
        turns_page_size: int = 50,
        first_seq: int = 0,
    ) -> None:
        """`first_seq`: where serverSeq starts; a restarted host starts above every number an
        earlier run issued, so a client's old `lastSeenServerSeq` never matches a new action."""
        if log_limit < 1:
            raise ValueError("log_limit must be at least 1")
        if log_bytes < 1:
            raise ValueError("log_bytes must be at least 1")
        if turns_page_size < 1:
            raise ValueError("turns_page_size must be at least 1")
        self._page = turns_page_size
        self._seq = first_seq
        self._log: deque[tuple[Envelope, int]] = deque()
        self._log_limit = log_limit
        self._log_budget = log_bytes
        self._log_bytes = 0
        self._states: dict[str, dict[str, Any]] = {}
        self._kinds: dict[str, str] = {}
        self._windows: dict[str, TurnWindow] = {}
        self._generations = count(1)

    # ── channels ──────────────────────────────────────────────────────────

    @property
    def server_seq(self) -> int:
        """The serverSeq of the last applied action (0 before any)."""
        return self._seq

    def create(self, uri: str, kind: str, state: dict[str, Any]) -> None:
        """Register a channel with its initial state; ValueError if it exists."""
        if uri in self._states:
            raise ValueError(f"channel already exists: {uri}")
        if kind not in KINDS:
            raise ValueError(f"unknown state kind {kind!r}; expected one of {sorted(KINDS)}")
        if not isinstance(state, dict):
            raise ValueError(f"state for {uri} must be a JSON object")
        if kind == "chat" and not isinstance(state.get("turns"), list):
            raise ValueError(f"chat state for {uri} needs a 'turns' list")
        self._states[uri] = state
        self._kinds[uri] = kind
        if kind == "chat":
            self._windows[uri] = TurnWindow(generation=next(self._generations))

    def dispose(self, uri: str) -> None:
        """Forget a channel; its logged envelopes stay until they age out."""
        self._require(uri)
        del self._states[uri], self._kinds[uri]
        self._windows.pop(uri, None)

    def has(self, uri: str) -> bool:
        return uri in self._states

    def kind(self, uri: str) -> str | None:
        return self._kinds.get(uri)

    def state(self, uri: str) -> dict[str, Any]:
        """Current state (shared, treat as read-only); KeyError if unknown."""
        return self._require(uri)

    # ── actions ───────────────────────────────────────────────────────────

    def apply(
        self,
        channel: str,
        action: dict[str, Any],
        origin: dict[str, Any] | None = None,
        *,
        at: str | None = None,
        keep_post: Container[str] = frozenset(),
    ) -> Envelope:
        """Reduce `action` into `channel`, assign serverSeq + 1 and log it.

        `at` is the host's time of it (ISO-8601), carried on the envelope for those who date
        things by it; the reducers never read it. For an action whose type is in `keep_post`,
        the envelope keeps the state it produced (`Envelope.post`: an older wire's form of it
        depends on that state; the fan-out says which). KeyError for an unknown channel,
        ValueError for an action without a type or with fields of the wrong JSON type; neither
        changes anything.
        """
        state = self._require(channel)
        if not isinstance(action, dict) or not isinstance(action.get("type"), str):
            raise ValueError("action must be a JSON object with a string 'type'")
        kind = self._kinds[channel]
        try:
            new_state = reduce(kind, state, action)
        except (TypeError, AttributeError, KeyError, IndexError) as exc:
            # A field of the wrong JSON type; nothing was changed or sequenced.
            raise ValueError(f"malformed {action['type']} action for {channel}: {exc}") from exc
        if kind == "chat":
            new_state = self._track_window(channel, state, new_state, action)
        self._states[channel] = new_state
        self._seq += 1
        post = new_state if action["type"] in keep_post else None
        envelope = Envelope(
            channel,
            self._seq,
            action,
            origin,
            kind=kind,
            changed=new_state is not state,
            post=post,
            at=at,
        )
        self._log_append(envelope)
        return envelope

    def rejection(
        self, channel: str, action: dict[str, Any], origin: dict[str, Any], reason: str
    ) -> Envelope:
        """The echo of a rejected dispatch: state untouched, not logged, current serverSeq."""
        return Envelope(
            channel, self._seq, action, origin, reason, kind=self._kinds.get(channel, "")
        )

    def replay(self, last_seen: int, channels: Iterable[str]) -> list[Envelope] | None:
        """Logged envelopes after `last_seen` on `channels`, in order.

        None when the log no longer reaches back to `last_seen + 1`, or when
        `last_seen` is ahead of this store (the client must take snapshots).
        """
        if last_seen > self._seq:
            return None
        if last_seen == self._seq:
            return []
        first = self._log[0][0].server_seq if self._log else self._seq + 1
        if last_seen + 1 < first:
            return None
        wanted = set(channels)
        tail = islice(self._log, last_seen + 1 - first, None)
        return [env for env, _ in tail if env.channel in wanted]

    @property
    def log_bytes(self) -> int:
        """Bytes of canonical frames the replay log holds now."""
        return self._log_bytes

    def log_length(self) -> int:
        return len(self._log)

    # ── snapshots and turn paging ─────────────────────────────────────────

    def snapshot(self, uri: str, *, last_turns: int | None = None) -> dict[str, Any]:
        """`{resource, state, fromSeq}`, canonical. For a chat with `last_turns`, only the
        loaded window.

        The first windowed snapshot of a chat fixes its window at the newest
        `last_turns` turns; later ones get the (possibly larger) current window.
        """
        state = self._require(uri)
        kind = self._kinds[uri]
        if last_turns is not None and kind == "chat":
            if last_turns < 0:
                raise ValueError("last_turns must not be negative")
            state = self._windowed(uri, state, last_turns)
        return {"resource": uri, "state": state, "fromSeq": self._seq}

    def load_older_turns(self, chat: str, cursor: str | None) -> dict[str, Any]:
        """The `chat/turnsLoaded` action that pages in the turns just older than the window.

        The host applies it (before answering fetchTurns). With no older turns
        left the action has no turns and no cursor. ValueError for a cursor this
        chat did not issue (-32602) or a channel that is not a chat.
        """
        state = self._require(chat)
        window = self._chat_window(chat)
        turns = state["turns"]
        if cursor is not None and window.parse(cursor, len(turns)) is None:
            raise ValueError(f"unrecognised turns cursor for {chat}")
        stop = window.start
        return window.loaded_action(turns, max(0, stop - self._page), stop)

    def preload_for(self, channel: str, action: dict[str, Any]) -> dict[str, Any] | None:
        """A `chat/turnsLoaded` to apply first when `action` names a turn older than the window.

        The spec requires the host to load such turns into state before applying
        an action that refers to them (today: `chat/truncated` with a `turnId`),
        so that windowed subscribers reduce it against the same turns.
        """
        if self._kinds.get(channel) != "chat" or action.get("type") != "chat/truncated":
            return None
        window = self._windows[channel]
        turns = self._states[channel]["turns"]
        turn_id = action.get("turnId")
        index = next((i for i, t in enumerate(turns) if t.get("id") == turn_id), -1)
        if turn_id is None or index < 0 or index >= window.start:
            return None
        return window.loaded_action(turns, index, window.start)

    # ── internals ─────────────────────────────────────────────────────────

    def _log_append(self, envelope: Envelope) -> None:
        """Log an envelope, dropping the oldest past the count or the byte budget (one larger
        than the whole budget is not kept: a reconnect that needs it takes snapshots)."""
        frame = envelope.frame
        # An ASCII frame's length is its size in bytes (isascii is O(1)): no copy to count it.
        size = len(frame) if frame.isascii() else len(frame.encode())
        self._log.append((envelope, size))
        self._log_bytes += size
        while self._log and (
            len(self._log) > self._log_limit or self._log_bytes > self._log_budget
        ):
            _, dropped = self._log.popleft()
            self._log_bytes -= dropped

    def _require(self, uri: str) -> dict[str, Any]:
        try:
            return self._states[uri]
        except KeyError:
            raise KeyError(f"unknown channel: {uri}") from None

    def _chat_window(self, uri: str) -> TurnWindow:
        window = self._windows.get(uri)
        if window is None:
            raise ValueError(f"{uri} is not a chat channel")
        return window

    def _windowed(self, uri: str, state: dict[str, Any], last_turns: int) -> dict[str, Any]:
        window = self._windows[uri]
        turns = state["turns"]
        if not window.fixed:
            window.start = max(0, len(turns) - last_turns)
            window.fixed = True
        cursor = window.cursor()
        if cursor is None:
            return state
        return {**state, "turns": turns[window.start :], "turnsNextCursor": cursor}

    def _track_window(
        self, uri: str, old: dict[str, Any], new: dict[str, Any], action: dict[str, Any]
    ) -> dict[str, Any]:
        """Keep the chat's window in step with turn-changing actions.

        The stored state always holds every turn, so it never carries a
        `turnsNextCursor`: `chat/turnsLoaded` only moves the window boundary.
        """
        window = self._windows[uri]
        kind = action["type"]
        if kind == "chat/turnsLoaded":
            loaded = action.get("turns") or []
            ids = {t.get("id") for t in loaded if isinstance(t, dict)}
            turns = new["turns"]
            added = len(turns) - len(old["turns"])
            if added > 0:  # turns this store did not hold: indices moved, old cursors are void
                window.start += added
                window.generation = next(self._generations)
            first = next((i for i, t in enumerate(turns) if t.get("id") in ids), -1)
            if 0 <= first < window.start:
                window.start = first
            if "turnsNextCursor" in new:
                new = {k: v for k, v in new.items() if k != "turnsNextCursor"}
            return old if new == old else new
        if kind == "chat/truncated" and new is not old:
            if action.get("turnId") is None:
                window.clear(next(self._generations))
            else:
                window.start = min(window.start, len(new["turns"]))
        return new
