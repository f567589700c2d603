"""A chat's turn lifecycle, and the AHP actions its turns' starts and ends become.

``TurnLifecycle`` is the one record of whether a turn runs; every other part of the translator
asks it. ``TurnEvents`` turns the provider's ``turn`` and ``exit`` events (and a subagent's runs)
into ``chat/turnStarted`` and the turn's end, and announces provider-started turns.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from ahp_bridge.agentapi import (
    DELIVERY_AUTOPILOT,
    DELIVERY_STEER,
    Event,
    EventKind,
    Item,
    ItemKind,
    TurnState,
)

from .._wire import META_PREFIX, Emitted, drop_none, error_part, iso_from_ms
from .context import ChatContext, as_json


@dataclass(eq=False)
class Turn:
    """The running turn: its AHP id and start, and whether the provider confirmed it.

    ``confirmed`` is False for a turn the host started until the provider reports ``working``;
    ``announced`` is False for a provider-started turn whose ``chat/turnStarted`` waits for its
    user item.
    """

    id: str
    started_ms: int
    confirmed: bool
    announced: bool = True


T = TypeVar("T")


class PerTurn(Generic[T]):
    """A part's state for one turn: a fresh value whenever another turn starts.

    Parts keep their mirrors of a turn's content (open part, tool calls, usage) here, so the
    ``Turn`` stays the lifecycle's record and nothing else.
    """

    def __init__(self, fresh: Callable[[], T]) -> None:
        self._fresh = fresh
        self._held: tuple[Turn, T] | None = None

    def of(self, turn: Turn) -> T:
        held = self._held
        if held is None or held[0] is not turn:
            held = self._held = (turn, self._fresh())
        return held[1]


class TurnLifecycle:
    """Whether one chat's turn runs, and what the provider may still report of a cancelled one.

    It alone holds the running turn (its AHP id, whether the provider confirmed it), the ends
    still expected of turns a client cancelled, the "ghost" ``working`` of a turn cancelled
    before it started, and the user item that seeds the next provider-started turn. The
    translator's parts ask it and never keep a copy. The host will own it: the next step of the
    rewrite makes the host's engine the single owner of each chat's turn lifecycle, and the
    engine hands this object to the translator.
    """

    def __init__(self) -> None:
        self._turn: Turn | None = None
        self._stale_ends = 0
        """Ends of client-cancelled turns the provider has not reported yet."""
        self._ghost = False
        """A client cancelled a turn before its ``working``: that ``working`` starts nothing."""
        self._seed: Item | None = None
        """A main-agent user item seen while no turn ran: the next provider turn's message."""
        self.user_items: dict[str, str] = {}
        """AHP turn id -> the provider's id of the user item that started it (for rewinds)."""

    # ----------------------------------------------------------------- queries

    @property
    def current(self) -> Turn | None:
        """The running turn, if any."""
        return self._turn

    @property
    def active_id(self) -> str | None:
        """The AHP id of the running turn, if any."""
        return self._turn.id if self._turn is not None else None

    def content_turn(self) -> Turn | None:
        """The turn content belongs to, or None when it must be dropped.

        Content of a turn a client cancelled keeps arriving until the provider reports
        ``working`` again; while the next turn is unconfirmed it is the cancelled turn's.
        """
        turn = self._turn
        if turn is None or (self._stale_ends and not turn.confirmed):
            return None
        return turn

    def owes_end(self) -> bool:
        """The provider has not yet reported the end of a turn a client cancelled: it may still
        be busy with it (the next turn's prompt waits for that end; see `engine.chats`)."""
        return self._stale_ends > 0

    def unannounced(self) -> Turn | None:
        """The provider-started turn whose ``chat/turnStarted`` has not gone out yet."""
        turn = self._turn
        return turn if turn is not None and not turn.announced else None

    # ----------------------------------------------------------------- transitions

    def client_started(self, turn_id: str, started_ms: int) -> None:
        """The host applied a ``chat/turnStarted`` (a client's, or one from the queue).

        The provider's next ``working`` confirms this turn instead of starting another one.
        """
        self._turn = Turn(id=turn_id, started_ms=started_ms, confirmed=False)
        self._seed = None

    def provider_working(self) -> bool:
        """The provider reported ``working``; True when it starts a turn of its own.

        It confirms the running turn, or is the late start of a turn a client cancelled
        before it started (then its end is stale too), or else starts a provider turn: the
        caller then calls ``provider_started``.
        """
        if self._ghost:
            self._ghost = False
            self._seed = None
            return False
        self._stale_ends = 0
        if self._turn is not None:
            self._turn.confirmed = True
            return False
        return True

    def provider_started(self, turn_id: str, started_ms: int) -> tuple[Turn, Item | None]:
        """Begin a provider-started turn, unannounced; returns it and the user item seeding it."""
        seed, self._seed = self._seed, None
        turn = Turn(id=turn_id, started_ms=started_ms, confirmed=True, announced=False)
        self._turn = turn
        return turn, seed

    def announced(self, turn: Turn, seed: Item | None) -> None:
        """The provider-started turn's ``chat/turnStarted`` went out, with seed's text."""
        turn.announced = True
        if seed is not None:
            self.user_items.setdefault(turn.id, seed.id)

    def user_item(self, item: Item) -> None:
        """A main-agent user item: the next provider turn's seed, or the running turn's own.

        Steering sent into a running turn does not start it, so it is not the turn's item.
        """
        if self._turn is None:
            self._seed = item
        elif item.delivery != DELIVERY_STEER:
            self.user_items.setdefault(self._turn.id, item.id)

    def provider_ended(self) -> Turn | None:
        """The provider reported a turn's end: the running turn it ends, if it ends one.

        None for the late end of a turn a client cancelled (while the running turn, if any,
        is unconfirmed) and when no turn runs.
        """
        if self._stale_ends and (self._turn is None or not self._turn.confirmed):
            self._stale_ends -= 1
            self._ghost = False  # it ended without ever reporting working
            return None
        return self._finish()

    def run_ended(self) -> Turn | None:
        """A subagent's run ended: it ends the running turn of the subagent's chat, if any."""
        return self._finish()

    def client_cancelled(self, turn_id: object) -> bool:
        """A client cancelled the running turn ``turn_id``; False when that is not it.

        The provider's late end of it is expected (and its late ``working`` when it never
        reported one), so both are dropped.
        """
        turn = self._turn
        if turn is None or turn.id != turn_id:
            return False
        self._stale_ends += 1
        self._ghost = self._ghost or not turn.confirmed
        self._turn = None
        return True

    def not_sent(self) -> None:
        """The host never sent a turn a client cancelled first: expect nothing of it."""
        self._ghost = False
        self._stale_ends = max(0, self._stale_ends - 1)

    def send_failed(self) -> Turn | None:
        """The host's send failed after acceptance: the running turn ends, if any.

        A provider that did start the turn after all shows it as a provider-started turn.
        """
        return self._finish()

    def exited(self) -> Turn | None:
        """The provider runtime exited: nothing late is expected; the running turn ends."""
        self._stale_ends = 0
        self._ghost = False
        self._seed = None
        return self._finish()

    def _finish(self) -> Turn | None:
        turn, self._turn = self._turn, None
        if turn is not None:
            self._seed = None
        return turn


class TurnEvents:
    """The AHP actions of a chat's turn starts and ends.

    ``clear_inputs`` and ``clear_activity`` are the follow-ups of a turn that is over: every
    pending input request removed, the activity line cleared.
    """

    def __init__(
        self,
        ctx: ChatContext,
        turns: TurnLifecycle,
        *,
        clear_inputs: Callable[[], list[Emitted]],
        clear_activity: Callable[[], list[Emitted]],
    ) -> None:
        self._ctx = ctx
        self._turns = turns
        self._clear_inputs = clear_inputs
        self._clear_activity = clear_activity
        self._run_by_user: bool | None = None  # subagent chats: who started the current run

    def announcing(self, event: Event, handle: Callable[[Event], list[Emitted]]) -> list[Emitted]:
        """``handle(event)``, with a waiting provider-started turn announced as it must be.

        A user item of this chat's agent is that turn's message: it announces the turn and is
        nothing else. Any other event that writes to the chat announces it first, with no message.
        """
        unannounced = self._turns.unannounced()
        if unannounced is not None:
            item = event.item if event.kind == EventKind.ITEM else None
            if (
                item is not None
                and item.kind == ItemKind.USER
                and item.agent_id == self._ctx.agent_id
            ):
                return self._announce(unannounced, item)
        out = handle(event)
        if unannounced is not None and any(channel == self._ctx.chat_uri for channel, _ in out):
            out = self._announce(unannounced, None) + out
        return out

    def on_turn(self, event: Event) -> list[Emitted]:
        turn_event = event.turn
        if turn_event is None:
            return []
        if turn_event.state == TurnState.WORKING:
            return self.start_provider_turn() if self._turns.provider_working() else []
        turn = self._turns.provider_ended()
        if turn is None:
            return []
        meta = drop_none(
            {
                f"{META_PREFIX}reason": turn_event.reason or None,
                f"{META_PREFIX}model": turn_event.model or None,
                f"{META_PREFIX}completion": as_json(turn_event.completion),
            }
        )
        extra: dict[str, Any] = {"_meta": meta} if meta else {}
        if turn_event.state == TurnState.COMPLETED:
            return self.ended(turn, "chat/turnComplete", extra)
        if turn_event.state == TurnState.CANCELLED:
            return self.ended(turn, "chat/turnCancelled", extra)
        message = turn_event.error or "The turn failed."
        part = error_part("turnFailed", message)
        return self.ended(turn, "chat/error", {"part": part, **extra})

    def on_exit(self, event: Event) -> list[Emitted]:
        turn = self._turns.exited()
        if turn is None:
            return self._clear_inputs()
        if event.detached:
            return self.ended(turn, "chat/turnCancelled", {})
        message = event.error or "The provider runtime exited."
        # The runtime can be reopened and the turn continued: `chat/turnResume` resumes it.
        part = error_part("providerExit", message, resumable=True)
        return self.ended(turn, "chat/error", {"part": part})

    def fail(self, error_type: str, message: str) -> list[Emitted]:
        """End the running turn with ``chat/error`` after a failed send, if a turn runs."""
        turn = self._turns.send_failed()
        if turn is None:
            return []
        return self.ended(turn, "chat/error", {"part": error_part(error_type, message)})

    def client_cancelled(self, turn_id: object) -> list[Emitted]:
        """The follow-ups of a client's ``chat/turnCancelled`` of the running turn."""
        if not self._turns.client_cancelled(turn_id):
            return []
        return self._clear_inputs() + self._clear_activity()

    def start_provider_turn(self, *, run_by_user: bool | None = None) -> list[Emitted]:
        """A turn the provider started: announced with its user item, maybe a little later.

        Providers report ``working`` before or after the user message that started the turn;
        ``chat/turnStarted`` cannot be amended, so it waits for that item (when it came first
        it is already here) and goes out, at the latest, right before the turn's first action
        in the chat (content, a request, or its end). ``run_by_user`` says, in a subagent's
        chat, whether the user (not the spawning agent) started this run.
        """
        self._run_by_user = run_by_user
        turn, seed = self._turns.provider_started(self._ctx.new_id(), self._ctx.now_ms())
        return self._announce(turn, seed) if seed is not None else []

    def ended(self, turn: Turn, action_type: str, extra: Mapping[str, Any]) -> list[Emitted]:
        """The end action of a turn the lifecycle just ended, and its follow-ups."""
        duration = max(0, self._ctx.now_ms() - turn.started_ms)
        end = {"type": action_type, "turnId": turn.id, "duration": duration, **extra}
        return [self._ctx.chat(end), *self._clear_inputs(), *self._clear_activity()]

    def _announce(self, turn: Turn, seed: Item | None) -> list[Emitted]:
        self._turns.announced(turn, seed)
        own = seed is not None and seed.delivery != DELIVERY_AUTOPILOT
        origin = "user" if own and self._run_by_user is not False else "agent"
        message: dict[str, Any] = {"text": seed.text if seed else "", "origin": {"kind": origin}}
        started = {
            "type": "chat/turnStarted",
            "turnId": turn.id,
            "startedAt": iso_from_ms(turn.started_ms),
            "message": message,
            "_meta": {f"{META_PREFIX}origin": "provider"},
        }
        return [self._ctx.chat(started)]
