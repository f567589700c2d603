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

A chat keeps its newest completed turns here, at most `live_turns` of them and `live_turn_bytes`
of canonical JSON (the newest completed turn always, the running one is not among them): when
a turn ends past either bound the oldest are evicted, handed out once by `take_evicted` for the
host to archive, and paged back with `fetchTurns` (`older_page`, `page_loaded`). What
subscribers see of the turns is governed by the chat's loaded window (see `turn_window`).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Container, Iterable
from itertools import count, islice
from typing import Any

import orjson

from .envelope import Envelope
from .reducers import KINDS, reduce
from .turn_window import Evicted, TurnsPage, TurnWindow

__all__ = ["Envelope", "Evicted", "Store", "TurnsPage"]

_TURN_ENDS = frozenset({"chat/turnComplete", "chat/turnCancelled", "chat/error"})


class Store:
    """Authoritative state of every channel, keyed by URI."""

    def __init__(
        self,
        *,
        log_limit: int = 10_000,
        log_bytes: int = 64 * 1024 * 1024,
        turns_page_size: int = 50,
        first_seq: int = 0,
        live_turns: int = 50,
        live_turn_bytes: int = 256 * 1024,
    ) -> None:
        """`first_seq`: where serverSeq starts; a restarted host starts above every number an
        earlier run issued, so a client's old `lastSeenServerSeq` never matches a new action."""
        if log_limit < 1:
            raise ValueError("log_limit must be at least 1")
        if log_bytes < 1:
            raise ValueError("log_bytes must be at least 1")
        if turns_page_size < 1:
            raise ValueError("turns_page_size must be at least 1")
        if live_turns < 1 or live_turn_bytes < 1:
            raise ValueError("live_turns and live_turn_bytes must be at least 1")
        self._live_turns = live_turns
        self._live_bytes = live_turn_bytes
        self._evicted: list[Evicted] = []
        #: The last page action `page_action` made, by chat (applied as a page, not foreign).
        self._pages: dict[str, tuple[dict[str, Any], TurnsPage]] = {}
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
        self._kinds[uri] = kind
        if kind == "chat":
            self._windows[uri] = TurnWindow(generation=next(self._generations))
            state = self._evict(uri, state)
        self._states[uri] = state

    def dispose(self, uri: str) -> None:
        """Forget a channel; its logged envelopes stay until they age out."""
        self._require(uri)
        del self._states[uri], self._kinds[uri]
        self._windows.pop(uri, None)
        self._pages.pop(uri, None)

    def has(self, uri: str) -> bool:
        return uri in self._states

    def kind(self, uri: str) -> str | None:
        return self._kinds.get(uri)

    def state(self, uri: str) -> dict[str, Any]:
        """Current state (shared, treat as read-only); KeyError if unknown."""
        try:  # `_require` inlined: read a dozen times for every action
            return self._states[uri]
        except KeyError:
            raise KeyError(f"unknown channel: {uri}") from None

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
        if kind == "chat":
            self._check_truncation(channel, state, action)
        try:
            new_state = reduce(kind, state, action)
        except (TypeError, AttributeError, KeyError, IndexError) as exc:
            # A field of the wrong JSON type; nothing was changed or sequenced.
            raise ValueError(f"malformed {action['type']} action for {channel}: {exc}") from exc
        if kind == "chat":
            new_state = self._track_window(channel, state, new_state, action)
            if action["type"] in _TURN_ENDS and new_state is not state:
                new_state = self._evict(channel, new_state)
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
        loaded window; for any chat with evicted turns, a `turnsNextCursor`.

        The first windowed snapshot of a chat fixes its window at the newest
        `last_turns` turns; later ones get the (possibly larger) current window.
        """
        state = self._require(uri)
        if self._kinds[uri] == "chat":
            if last_turns is not None and last_turns < 0:
                raise ValueError("last_turns must not be negative")
            state = self._windowed(uri, state, last_turns)
        return {"resource": uri, "state": state, "fromSeq": self._seq}

    def older_page(self, chat: str, cursor: str | None) -> TurnsPage:
        """The page of turns just older than the chat's window that `fetchTurns` loads.

        When part of it is evicted (`TurnsPage.archived`), the host reads that part from the
        archive and hands it to `page_action`. ValueError for a cursor this chat did not issue
        (-32602) or a channel that is not a chat.
        """
        state = self._require(chat)
        window = self._chat_window(chat)
        turns = state["turns"]
        if cursor is not None and window.parse(cursor, window.base + len(turns)) is None:
            raise ValueError(f"unrecognised turns cursor for {chat}")
        stop = window.start
        start = max(0, stop - self._page)
        split = min(max(start, window.base), stop)
        live = turns[split - window.base : stop - window.base] if split < stop else ()
        return TurnsPage(chat, window.generation, start, split, stop, tuple(live))

    def page_action(self, page: TurnsPage, archived: list[Any]) -> dict[str, Any] | None:
        """The `chat/turnsLoaded` of `page`, with its `archived` turns as the archive gave them
        (oldest first); the host applies it before answering. None when the window moved since
        the page was cut (cut another); ValueError when the archive lacks some of them."""
        window = self._windows.get(page.chat)
        if window is None or window.generation != page.generation or window.start != page.stop:
            return None
        if len(archived) != page.archived:
            raise ValueError(
                f"the archive holds {len(archived)} of the {page.archived} older turns asked for"
            )
        action: dict[str, Any] = {"type": "chat/turnsLoaded", "turns": [*archived, *page.live]}
        if page.start > 0:
            action["turnsNextCursor"] = window.cursor_at(page.start)
        self._pages[page.chat] = (action, page)
        return action

    def load_older_turns(self, chat: str, cursor: str | None) -> dict[str, Any]:
        """`page_action` of `older_page` when the page is all live (ValueError otherwise)."""
        page = self.older_page(chat, cursor)
        if page.archived:
            raise ValueError(f"older turns of {chat} are evicted: read them from the archive")
        action = self.page_action(page, [])
        assert action is not None  # cut just now
        return action

    @property
    def has_evicted(self) -> bool:
        """Turns were evicted that `take_evicted` has not handed out yet."""
        return bool(self._evicted)

    def take_evicted(self) -> list[Evicted]:
        """Turns evicted since the last call, not archived before: the host archives them."""
        evicted, self._evicted = self._evicted, []
        return evicted

    def live_base(self, chat: str) -> int:
        """How many of the chat's oldest turns are evicted (0 for a channel that is not a chat)."""
        window = self._windows.get(chat)
        return 0 if window is None else window.base

    def preload_for(self, channel: str, action: dict[str, Any]) -> dict[str, Any] | None:
        """A `chat/turnsLoaded` to apply first when `action` names a turn older than the window.

        The spec requires the host to load such turns into state before applying
        an action that refers to them (today: `chat/truncated` with a `turnId`),
        so that windowed subscribers reduce it against the same turns. (A turn that is
        evicted cannot be loaded synchronously: `apply` refuses the truncation.)
        """
        if self._kinds.get(channel) != "chat" or action.get("type") != "chat/truncated":
            return None
        window = self._windows[channel]
        turns = self._states[channel]["turns"]
        turn_id = action.get("turnId")
        index = next((i for i, t in enumerate(turns) if t.get("id") == turn_id), -1)
        if turn_id is None or index < 0 or window.base + index >= window.start:
            return None
        return window.loaded_action(turns, index, window.start - window.base)

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

    def _windowed(self, uri: str, state: dict[str, Any], last_turns: int | None) -> dict[str, Any]:
        """A snapshot's turns: from the window's boundary (windowed) or every live turn, with
        the cursor. A snapshot is served from the live state, so the boundary every
        subscriber holds turns from moves up to the live state's first turn at least."""
        window = self._windows[uri]
        turns = state["turns"]
        if last_turns is None:
            window.start = max(window.start, window.base)
            if window.base == 0:
                return state
            return {**state, "turnsNextCursor": window.cursor_at(window.base)}
        if not window.fixed:
            window.start = max(0, window.base + len(turns) - last_turns)
            window.fixed = True
        window.start = max(window.start, window.base)
        cursor = window.cursor()
        if cursor is None:
            return state
        return {**state, "turns": turns[window.start - window.base :], "turnsNextCursor": cursor}

    def _check_truncation(self, uri: str, state: dict[str, Any], action: dict[str, Any]) -> None:
        """A truncation to an evicted turn cannot be applied (the turn is not in state, and
        loading it back takes a read): refused before anything changes."""
        if action.get("type") != "chat/truncated" or action.get("turnId") is None:
            return
        window = self._windows[uri]
        turn_id = action.get("turnId")
        if window.base == 0 or any(t.get("id") == turn_id for t in state["turns"]):
            return
        raise ValueError(
            f"turn {turn_id!r} of {uri} is not among the turns the host keeps live "
            "(limits.max_live_turns, limits.max_live_turn_bytes): it cannot be truncated to"
        )

    def _track_window(
        self, uri: str, old: dict[str, Any], new: dict[str, Any], action: dict[str, Any]
    ) -> dict[str, Any]:
        """Keep the chat's window in step with turn-changing actions.

        The stored state never carries a `turnsNextCursor`: `chat/turnsLoaded` moves the
        window boundary (and, for a page of evicted turns, holds them live until evicted).
        """
        window = self._windows[uri]
        kind = action["type"]
        if kind == "chat/turnsLoaded":
            own = self._pages.pop(uri, None)
            if own is not None and own[0] is action:
                return self._page_loaded(uri, old, new, own[1])
            loaded = action.get("turns") or []
            ids = {t.get("id") for t in loaded if isinstance(t, dict)}
            turns = new["turns"]
            added = len(turns) - len(old["turns"])
            if added > 0:  # turns this store did not hold: indices moved, old cursors are void
                window.start += added
                window.archived = min(window.archived, window.base)
                window.generation = next(self._generations)
            first = next((i for i, t in enumerate(turns) if t.get("id") in ids), -1)
            if first >= 0 and window.base + first < window.start:
                window.start = window.base + first
            if "turnsNextCursor" in new:
                new = {k: v for k, v in new.items() if k != "turnsNextCursor"}
            return old if new == old else new
        if kind == "chat/turnResume":
            window.sizes.pop(action.get("turnId"), None)  # it grows again before it ends
        if kind == "chat/truncated" and new is not old:
            self._pages.pop(uri, None)
            if action.get("turnId") is None:
                window.clear(next(self._generations))
            else:
                total = window.base + len(new["turns"])
                window.start = min(window.start, total)
                window.archived = min(window.archived, total)
                live = {t.get("id") for t in new["turns"]}
                window.sizes = {k: v for k, v in window.sizes.items() if k in live}
        return new

    def _page_loaded(
        self, uri: str, old: dict[str, Any], new: dict[str, Any], page: TurnsPage
    ) -> dict[str, Any]:
        """A page `page_action` made is applied: its turns older than the live state are held
        live when they join it (the reducer prepended them), the window starts at the page,
        and the chat is brought back within its bounds (what was loaded may leave again)."""
        window = self._windows[uri]
        state = old
        if page.start < window.base <= page.stop:
            window.base -= len(new["turns"]) - len(old["turns"])
            state = {k: v for k, v in new.items() if k != "turnsNextCursor"}
        window.start = page.start
        return self._evict(uri, state)

    def _evict(self, uri: str, state: dict[str, Any]) -> dict[str, Any]:
        """The chat within its bounds: its oldest completed turns leave the live state while it
        holds more than `live_turns` or `live_turn_bytes` (never the newest); those not
        archived yet are handed out by `take_evicted`."""
        turns = state.get("turns")
        if not isinstance(turns, list) or len(turns) <= 1:
            return state
        window = self._windows[uri]
        sizes = window.sizes
        measured: list[int] = []
        for turn in turns:
            key = turn.get("id") if isinstance(turn, dict) else None
            size = sizes.get(key) if key is not None else None
            if size is None:
                size = len(orjson.dumps(turn))
                if key is not None:
                    sizes[key] = size
            measured.append(size)
        count, total, cut = len(turns), sum(measured), 0
        while cut < count - 1 and (count - cut > self._live_turns or total > self._live_bytes):
            total -= measured[cut]
            cut += 1
        if cut == 0:
            return state
        for turn in turns[:cut]:
            if isinstance(turn, dict):
                sizes.pop(turn.get("id"), None)
        fresh = max(window.archived, window.base)  # the first turn not archived yet
        if fresh < window.base + cut:
            evicted = tuple(turns[fresh - window.base : cut])
            self._evicted.append(Evicted(uri, fresh, evicted))
        window.archived = max(window.archived, window.base + cut)
        window.base += cut
        return {**state, "turns": turns[cut:]}
