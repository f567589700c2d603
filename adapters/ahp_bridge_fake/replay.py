"""Replay a recording (``ahp_bridge_fake.record``) as the fake's script.

The i-th conversation opened replays the i-th recorded one. Within it a cursor walks the
recorded lines in order:

- ``send`` with a recorded prompt text emits what the recorded ``send`` emitted (the user
  item, the turn start), then a turn task emits the events that followed, with the recorded
  pacing (scaled by ``time_scale``), up to the next recorded call;
- a recorded ``respond``, ``steer``, ``cancel``, ``set_model``, ``set_title`` or ``close``
  is played when the same call is made: it emits the events recorded during it and returns
  (or raises) what it returned; the turn task then goes on. A ``cancel`` or ``close`` made
  earlier than recorded skips the rest of the turn; a ``respond`` with a different answer
  than recorded is refused (ValueError), so the interaction stays pending;
- a call the recording does not have here behaves as the contract says where it can (Busy,
  InteractionGone, a cancel or close that expires pending interactions and ends the turn,
  set_model and set_title as the scripted fake does them); a prompt, steer or answer the
  recording has no events for is refused with ValueError.

Opens that failed when recorded are left out: the i-th successful open replays the i-th
recorded conversation whose open succeeded.

Times inside events are recorded relative to ``time_base``; replay moves them to start at
the replay provider's creation, so replayed items carry current times with recorded spacing.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import trio

from ahp_bridge.agentapi import (
    Answer,
    Busy,
    Event,
    EventKind,
    InteractionGone,
    InteractionState,
    Prompt,
    Turn,
    TurnState,
    error_for_reason,
)

from .conversation import FakeConversation
from .provider import FakeProvider
from .script import DEFAULT_MODELS, ModelSpec, Script
from .timeshift import shift_times


@dataclass
class Entry:
    """One recorded line of a conversation."""

    t: float
    call: str = ""
    args: dict[str, Any] = field(default_factory=dict)
    returned: bool = False
    error: dict[str, str] | None = None
    event: dict[str, Any] | None = None
    failed: bool = False
    """On a call: its recorded return carries an error."""


@dataclass
class Recording:
    header: dict[str, Any]
    conversations: list[list[Entry]]
    models: list[dict[str, Any]] | None = None


def load_recording(path: str | Path) -> Recording:
    """Read a recording; a damaged line names the file and line."""
    file = Path(path)
    conversations: dict[str, list[Entry]] = {}
    header: dict[str, Any] | None = None
    models = None
    try:
        text = file.read_text(encoding="utf-8")
    except OSError as exc:
        raise ValueError(f"{file.name}:1: cannot read recording: {exc.strerror}") from exc
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            if not isinstance(row, dict):
                raise ValueError("expected a JSON object")
            if header is None:
                if row.get("recording") != 1 or "time_base" not in row:
                    raise ValueError('expected the header {"recording": 1, "time_base": ...}')
                header = row
                continue
            t = float(row["t"])
            if "models" in row:
                models = list(row["models"])
                continue
            conv = str(row["conv"])
            if "event" in row:
                Event.from_json(row["event"])  # fail early on a damaged event
                entry = Entry(t=t, event=row["event"])
            elif "call" in row:
                entry = Entry(t=t, call=str(row["call"]), args=dict(row.get("args") or {}))
            elif "return" in row:
                entry = Entry(t=t, call=str(row["return"]), returned=True, error=row.get("error"))
            else:
                raise ValueError("expected an event, call or return line")
            conversations.setdefault(conv, []).append(entry)
        except (ValueError, KeyError, TypeError) as exc:
            raise ValueError(f"{file.name}:{number}: invalid recording line: {exc}") from exc
    if header is None:
        raise ValueError(f"{file.name}:1: empty recording")
    for entries in conversations.values():
        _pair_calls(entries)
    ordered = [
        conversations[k]
        for k in sorted(conversations, key=lambda k: int(k[1:] or 0))
        if not any(e.call == "open" and e.failed for e in conversations[k])
    ]
    return Recording(header=header, conversations=ordered, models=models)


def _pair_calls(entries: list[Entry]) -> None:
    """Mark each call whose return failed (a return ends the latest open call of its name)."""
    open_calls: dict[str, list[Entry]] = {}
    for e in entries:
        if e.call and not e.returned:
            open_calls.setdefault(e.call, []).append(e)
        elif e.returned and open_calls.get(e.call):
            open_calls[e.call].pop().failed = e.error is not None


def _raise(error: dict[str, str]) -> None:
    exc = error_for_reason(error.get("reason", ""), error.get("message", ""))
    if error.get("reason"):
        raise exc
    raise ValueError(error.get("message", "the recorded call failed"))


class ReplayTurns:
    """The replay of one recorded conversation (a TurnSource with call hooks)."""

    def __init__(self, conversation: FakeConversation, entries: list[Entry], offset: timedelta):
        self.c = conversation
        self.entries = entries
        self.offset = offset
        self.i = 0
        self.last_t = 0.0
        self.generation = 0
        self.moved = trio.Event()
        self.running = False
        self.pending: set[str] = set()

    # -- emitting --------------------------------------------------------------------------

    def emit(self, raw: dict[str, Any]) -> None:
        event = Event.from_json(shift_times(raw, self.offset))
        if event.kind is EventKind.TURN and event.turn is not None:
            self.running = event.turn.state is TurnState.WORKING
        if event.kind is EventKind.INTERACTION and event.interaction is not None:
            if event.interaction.state is InteractionState.PENDING:
                self.pending.add(event.interaction.id)
            else:
                self.pending.discard(event.interaction.id)
        self.c.emit(event)
        if event.kind is EventKind.EXIT:
            self.c.mark_exited()

    def _find(self, name: str, match: Callable[[Entry], bool] | None = None) -> int | None:
        """The next recorded start of call ``name`` before the next turn's send."""
        for k in range(self.i, len(self.entries)):
            e = self.entries[k]
            if e.call and not e.returned:
                if e.call == name and (match is None or match(e)):
                    return k
                if e.call == "send" and name != "send" and not e.failed:
                    return None
        return None

    def _play_call(self, k: int, *, skip_events: bool) -> dict[str, str] | None:
        """Move the cursor to call k, emit what was emitted during it; return its error."""
        for e in self.entries[self.i : k]:
            if e.event is not None and not skip_events:
                self.emit(e.event)
        name = self.entries[k].call
        self.i = k + 1
        self.last_t = self.entries[k].t
        error = None
        while self.i < len(self.entries):
            e = self.entries[self.i]
            self.i += 1
            if e.returned and e.call == name:
                self.last_t, error = e.t, e.error
                break
            if e.event is not None:
                self.emit(e.event)
        old, self.moved = self.moved, trio.Event()
        old.set()
        return error

    # -- the turn --------------------------------------------------------------------------

    async def run(self, generation: int) -> None:
        while self.generation == generation and self.i < len(self.entries):
            index = self.i
            e = self.entries[index]
            if e.event is not None:
                await self.c.sleep(e.t - self.last_t)
                if self.i != index or self.generation != generation:
                    continue
                self.i += 1
                self.last_t = e.t
                self.emit(e.event)
            elif e.returned or e.failed:  # a refused call changed nothing: go on
                self.i += 1
            elif e.call in ("send", "open"):
                return
            else:
                moved = self.moved
                await moved.wait()


class ReplayConversation(FakeConversation):
    """A FakeConversation whose events come from a recording."""

    replay: ReplayTurns

    async def send(self, prompt: Prompt) -> None:
        self._check_open()
        r = self.replay
        if r.running:
            raise Busy("a turn is already running in this conversation")

        def same_prompt(e: Entry) -> bool:
            recorded = Prompt.from_json(e.args.get("prompt") or {})
            return recorded.text == prompt.text and not e.failed

        k = r._find("send", same_prompt)
        if k is None:
            raise ValueError("the recording has no turn for this prompt here")
        error = r._play_call(k, skip_events=False)
        if error is not None:
            _raise(error)
        r.generation += 1
        self._provider.spawn(r.run, r.generation)

    async def _recorded(self, name: str, args: dict[str, Any] | None = None) -> bool:
        """Play recorded call ``name`` if it comes next; False when the recording lacks it."""
        r = self.replay
        k = r._find(name)
        if k is None:
            return False
        recorded = r.entries[k].args
        if args is not None and recorded != args:
            raise ValueError(
                f"replay diverged: the recording made {name} with {json.dumps(recorded)}"
            )
        error = r._play_call(k, skip_events=name in ("cancel", "close"))
        if name in ("cancel", "close"):
            r.generation += 1
        if error is not None:
            _raise(error)
        await trio.lowlevel.checkpoint()
        return True

    async def steer(self, prompt: Prompt) -> None:
        self._check_open()
        if not await self._recorded("steer", {"prompt": prompt.to_json()}):
            raise ValueError("the recording has no steer here")

    async def respond(self, interaction_id: str, answer: Answer) -> None:
        self._check_open()
        if interaction_id not in self.replay.pending:
            raise InteractionGone(f"interaction {interaction_id} is not pending")
        args = {"interaction_id": interaction_id, "answer": answer.to_json()}
        if not await self._recorded("respond", args):
            raise ValueError("the recording has no answer here")

    async def cancel(self) -> None:
        self._check_open()
        if await self._recorded("cancel"):
            return
        r = self.replay
        if r.running:
            self._expire_and_end(TurnState.CANCELLED, "")

    def _expire_and_end(self, state: TurnState, reason: str) -> None:
        r = self.replay
        r.generation += 1
        for e in r.entries[: r.i]:
            interaction = (e.event or {}).get("Interaction")
            if interaction and interaction.get("id") in r.pending:
                raw = {"Kind": "interaction", "Interaction": {**interaction, "state": "expired"}}
                r.emit(raw)
        r.running = False
        self.emit(Event(kind=EventKind.TURN, turn=Turn(state=state, reason=reason)))
        k = r._find("send")
        r.i = k if k is not None else len(r.entries)

    async def set_model(self, model: str, effort: str, context_size: str) -> None:
        self._check_open()
        if self.replay.running:
            raise Busy("the model cannot change during a turn")
        args = {"model": model, "effort": effort, "context_size": context_size}
        if not await self._recorded("set_model", args):
            await super().set_model(model, effort, context_size)

    async def set_title(self, title: str) -> None:
        self._check_open()
        if not await self._recorded("set_title", {"title": title}):
            await super().set_title(title)

    async def close(self) -> None:
        if self.closed:
            return
        if not await self._recorded("close") and self.replay.running:
            self._expire_and_end(TurnState.CANCELLED, "closed")
        self.closed = True
        self._provider.forget(self)


def _models(recording: Recording) -> tuple[ModelSpec, ...]:
    if not recording.models:
        return DEFAULT_MODELS
    return tuple(
        ModelSpec(
            id=m["id"],
            name=m.get("name") or m["id"],
            efforts=tuple(m.get("efforts") or ()),
            context_sizes=tuple((c["id"], int(c["tokens"])) for c in m.get("context_sizes") or ()),
        )
        for m in recording.models
    )


def replay_provider(
    path: str | Path,
    *,
    data_dir: str | Path | None = None,
    time_scale: float = 1.0,
    clock: Callable[[], datetime] | None = None,
) -> FakeProvider:
    """A fake provider that replays the recording at ``path``."""
    recording = load_recording(path)
    models = _models(recording)
    script = Script(
        source=Path(path).name,
        display_name=str(recording.header.get("display_name") or "Fake (replay)"),
        default_model=models[0].id,
        models=models,
    )
    kwargs: dict[str, Any] = {"data_dir": data_dir, "time_scale": time_scale}
    if clock is not None:
        kwargs["clock"] = clock
    provider = FakeProvider(script, conversation_class=ReplayConversation, **kwargs)
    started = datetime.fromisoformat(str(recording.header["time_base"]))
    offset = provider.now() - started

    def attach(conversation: FakeConversation) -> None:
        assert isinstance(conversation, ReplayConversation)
        index = conversation.index - 1
        entries = recording.conversations[index] if index < len(recording.conversations) else []
        # The recorded open (and its return) are played by the open itself.
        replay = ReplayTurns(conversation, entries, offset)
        k = replay._find("open")
        if k is not None:
            replay._play_call(k, skip_events=False)
        conversation.replay = replay

    provider.on_open = attach
    return provider


__all__ = ["Recording", "ReplayConversation", "load_recording", "replay_provider"]
