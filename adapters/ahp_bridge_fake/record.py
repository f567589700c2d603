"""Record any provider: its event stream and the calls made to it, as JSONL.

``RecordingProvider(inner, path)`` wraps any agentapi Provider. Each line is one JSON
object with ``t`` (seconds since the recording started) and ``conv`` (``c1``, ``c2``, ... in
the order conversations were opened):

- ``{"recording": 1, "provider", "display_name", "capabilities", "time_base"}``, first;
- ``{"t", "conv", "call": name, "args": {...}}`` when a call starts (Go JSON arguments);
- ``{"t", "conv", "return": name, "result": ..., "error": null | {type, reason, message}}``
  when it ends;
- ``{"t", "conv", "event": {...}}`` for each event, in Go JSON; its times are relative
  too: written as ``time_base`` (2000-01-01T00:00:00Z) plus their distance from the start,
  so two recordings of the same script differ only where pacing did.

Events written between a call and its return were emitted during that call. The fake
replays such a file as a script (``script = "x.jsonl"``, see ``ahp_bridge_fake.replay``).
Prompt text is recorded because replay matches on it: keep recordings of real sessions
private.
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import IO, Any

from ahp_bridge_support import ProviderLifetime

from ahp_bridge.agentapi import (
    AgentAPIError,
    Answer,
    Capabilities,
    Command,
    Conversation,
    Event,
    EventSink,
    FileDiff,
    History,
    Model,
    OpenRequest,
    Prompt,
    Provider,
    format_time,
)

from .timeshift import TIME_BASE, shift_times

FORMAT_VERSION = 1


def error_json(exc: BaseException) -> dict[str, str]:
    """How a call's failure is recorded: class name, stable reason and message."""
    reason = exc.reason if isinstance(exc, AgentAPIError) else ""
    return {"type": type(exc).__name__, "reason": reason, "message": str(exc)}


class _Writer:
    """Serialises lines from any thread into one file."""

    def __init__(self, path: Path, clock: Callable[[], float]) -> None:
        self.path = path
        self._clock = clock
        self._start = 0.0
        self._lock = threading.Lock()
        self._out: IO[str] | None = None

    def start(self, header: dict[str, Any]) -> None:
        self._out = self.path.open("w", encoding="utf-8")
        self._start = self._clock()
        self._line(header)

    def write(self, line: dict[str, Any]) -> None:
        with self._lock:
            if self._out is None:
                return
            line = {"t": round(self._clock() - self._start, 6), **line}
            self._line(line)

    def _line(self, line: dict[str, Any]) -> None:
        assert self._out is not None
        self._out.write(json.dumps(line, ensure_ascii=False, separators=(",", ":")) + "\n")
        self._out.flush()

    def close(self) -> None:
        with self._lock:
            if self._out is not None:
                self._out.close()
                self._out = None


class _RecordingSink:
    """Writes every event, then passes it on (never blocks: one short locked write)."""

    def __init__(
        self, writer: _Writer, conv: str, inner: EventSink | None, offset: timedelta
    ) -> None:
        self._writer, self._conv, self._inner, self._offset = writer, conv, inner, offset

    def emit(self, event: Event) -> None:
        relative = shift_times(event.to_json(), self._offset)
        self._writer.write({"conv": self._conv, "event": relative})
        if self._inner is not None:
            self._inner.emit(event)


class RecordingConversation:
    """A Conversation that records each call (arguments and outcome) around the inner one."""

    def __init__(
        self,
        writer: _Writer,
        conv: str,
        inner: Conversation,
        registry: dict[str, RecordingConversation],
    ) -> None:
        self._writer, self._conv, self.inner = writer, conv, inner
        self._registry = registry

    async def _call(self, name: str, args: dict[str, Any], call: Any) -> Any:
        self._writer.write({"conv": self._conv, "call": name, "args": args})
        try:
            result = await call
        except BaseException as exc:
            self._writer.write({"conv": self._conv, "return": name, "error": error_json(exc)})
            raise
        shown = [r.to_json() for r in result] if isinstance(result, list) else None
        self._writer.write({"conv": self._conv, "return": name, "result": shown, "error": None})
        return result

    def id(self) -> str:
        return self.inner.id()

    async def history(self) -> History:
        return await self.inner.history()

    async def send(self, prompt: Prompt) -> None:
        await self._call("send", {"prompt": prompt.to_json()}, self.inner.send(prompt))

    async def commands(self) -> list[Command]:
        result: list[Command] = await self._call("commands", {}, self.inner.commands())
        return result

    async def run_command(self, name: str, args: Prompt) -> None:
        call = self.inner.run_command(name, args)
        await self._call("run_command", {"name": name, "args": args.to_json()}, call)

    async def steer(self, prompt: Prompt) -> None:
        await self._call("steer", {"prompt": prompt.to_json()}, self.inner.steer(prompt))

    async def cancel(self) -> None:
        await self._call("cancel", {}, self.inner.cancel())

    async def cancel_subagent(self, agent_id: str) -> None:
        call = self.inner.cancel_subagent(agent_id)
        await self._call("cancel_subagent", {"agent_id": agent_id}, call)

    async def prompt_subagent(self, agent_id: str, text: str) -> None:
        call = self.inner.prompt_subagent(agent_id, text)
        await self._call("prompt_subagent", {"agent_id": agent_id, "text": text}, call)

    async def respond(self, interaction_id: str, answer: Answer) -> None:
        args = {"interaction_id": interaction_id, "answer": answer.to_json()}
        await self._call("respond", args, self.inner.respond(interaction_id, answer))

    async def diff(self) -> list[FileDiff]:
        result: list[FileDiff] = await self._call("diff", {}, self.inner.diff())
        return result

    async def set_model(self, model: str, effort: str, context_size: str) -> None:
        args = {"model": model, "effort": effort, "context_size": context_size}
        await self._call("set_model", args, self.inner.set_model(model, effort, context_size))

    async def set_title(self, title: str) -> None:
        await self._call("set_title", {"title": title}, self.inner.set_title(title))

    async def close(self) -> None:
        if self._registry.pop(self._conv, None) is None:
            await self.inner.close()  # already closed (or closed by shutdown): not recorded
            return
        await self._call("close", {}, self.inner.close())

    def __getattr__(self, name: str) -> Any:
        """Optional conversation capabilities pass through unrecorded."""
        if name == "inner":
            raise AttributeError(name)
        return getattr(self.inner, name)


class RecordingProvider(ProviderLifetime):
    """Wraps any Provider and records its conversations to ``path`` (JSONL).

    ``async with`` enters the inner provider (whose nursery runs the turns) and leaves it after
    this one's shutdown has recorded the closes; the file is closed last.
    """

    _lifetime_name = "the recording provider"
    _owns_nursery = False

    def __init__(
        self,
        inner: Provider,
        path: str | Path,
        *,
        clock: Callable[[], float] = time.monotonic,
        wallclock: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        self.inner = inner
        self._writer = _Writer(Path(path), clock)
        self._wallclock = wallclock
        self._offset = timedelta(0)
        self._opened = 0
        self._open: dict[str, RecordingConversation] = {}
        self._entered = contextlib.AsyncExitStack()

    async def _on_start(self) -> None:
        self._offset = TIME_BASE - self._wallclock()
        self._writer.start(
            {
                "recording": FORMAT_VERSION,
                "provider": self.inner.name(),
                "display_name": self.inner.display_name(),
                "capabilities": self.inner.capabilities().to_json(),
                "time_base": format_time(TIME_BASE),
            }
        )
        self._entered.callback(self._writer.close)
        await self._entered.enter_async_context(self.inner)

    async def _on_stop(self) -> None:
        await self._entered.aclose()  # the inner provider, then the file

    def name(self) -> str:
        return self.inner.name()

    def display_name(self) -> str:
        return self.inner.display_name()

    def capabilities(self) -> Capabilities:
        return self.inner.capabilities()

    async def check(self) -> None:
        await self.inner.check()

    async def models(self) -> list[Model]:
        models = await self.inner.models()
        self._writer.write({"conv": "", "models": [m.to_json() for m in models]})
        return models

    async def open(self, req: OpenRequest) -> RecordingConversation:
        self._opened += 1
        conv = f"c{self._opened}"
        sink = _RecordingSink(self._writer, conv, req.events, self._offset)
        self._writer.write({"conv": conv, "call": "open", "args": {"request": req.to_json()}})
        try:
            inner = await self.inner.open(req.model_copy(update={"events": sink}))
        except BaseException as exc:
            self._writer.write({"conv": conv, "return": "open", "error": error_json(exc)})
            raise
        self._writer.write({"conv": conv, "return": "open", "result": inner.id(), "error": None})
        conversation = RecordingConversation(self._writer, conv, inner, self._open)
        self._open[conv] = conversation
        return conversation

    async def shutdown(self) -> None:
        """Shut the inner provider down, recorded as a close of each open conversation."""
        closing = list(self._open)
        self._open.clear()
        for conv in closing:
            self._writer.write({"conv": conv, "call": "close", "args": {}})
        try:
            await self.inner.shutdown()
        except BaseException as exc:
            for conv in closing:
                self._writer.write({"conv": conv, "return": "close", "error": error_json(exc)})
            raise
        for conv in closing:
            self._writer.write({"conv": conv, "return": "close", "result": None, "error": None})

    def __getattr__(self, name: str) -> Any:
        """Optional provider capabilities (history reader, titler, ...) pass through."""
        if name == "inner":
            raise AttributeError(name)
        return getattr(self.inner, name)
