"""Shared helpers for the remote (gRPC) provider tests; this module holds no tests.

``Recorder`` is an EventSink that tests can wait on; ``serving`` runs
``ahp_bridge_remote.server.serve`` in a nursery; ``Controlled`` is a minimal Provider whose
calls block, flood or fail on demand, for the fault tests the scripted fake cannot stage.
"""

from __future__ import annotations

import atexit
import itertools
import shutil
import tempfile
import threading
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, Self

import trio
from ahp_bridge_remote.server import serve

from ahp_bridge import agentapi

DEADLINE = 30.0  # a safety net for waits on events; never a measured assertion


class Recorder:
    """Records events from any thread; emit never blocks unless a test gates it."""

    def __init__(self, gate: threading.Event | None = None, per_event: float = 0.0) -> None:
        self._lock = threading.Lock()
        self.events: list[agentapi.Event] = []
        self._gate = gate
        self._per_event = per_event

    def emit(self, event: agentapi.Event) -> None:
        if self._gate is not None:
            self._gate.wait()
        if self._per_event:
            threading.Event().wait(self._per_event)
        with self._lock:
            self.events.append(event)

    def snapshot(self) -> list[agentapi.Event]:
        with self._lock:
            return list(self.events)

    def of(self, kind: agentapi.EventKind) -> list[agentapi.Event]:
        return [e for e in self.snapshot() if e.kind == kind]

    async def wait_for(
        self, predicate: Callable[[agentapi.Event], bool], *, count: int = 1
    ) -> list[agentapi.Event]:
        with trio.fail_after(DEADLINE):
            while True:
                found = [e for e in self.snapshot() if predicate(e)]
                if len(found) >= count:
                    return found
                await trio.sleep(0.005)

    async def wait_turn_end(self, count: int = 1) -> agentapi.Event:
        ends = await self.wait_for(
            lambda e: (
                e.kind == agentapi.EventKind.TURN
                and e.turn is not None
                and e.turn.state != agentapi.TurnState.WORKING
            ),
            count=count,
        )
        return ends[count - 1]

    def text(self, kind: agentapi.ItemKind = agentapi.ItemKind.ASSISTANT) -> str:
        """The assistant text as items and deltas built it, by item id, in order."""
        texts: dict[str, str] = {}
        for e in self.snapshot():
            if e.kind == agentapi.EventKind.ITEM and e.item and e.item.kind == kind:
                texts[e.item.id] = e.item.text
            elif e.kind == agentapi.EventKind.DELTA and e.delta and e.delta.kind == kind:
                texts[e.delta.item_id] = texts.get(e.delta.item_id, "") + e.delta.text
        return "".join(texts.values())


_SOCKETS = tempfile.mkdtemp(prefix="ahpg")
atexit.register(shutil.rmtree, _SOCKETS, ignore_errors=True)
_socket_ids = itertools.count(1)


def socket_address() -> str:
    """A fresh unix socket address with a short path (sun_path holds 107 bytes)."""
    return f"unix:{Path(_SOCKETS) / f'p{next(_socket_ids)}.sock'}"


@asynccontextmanager
async def serving(
    provider: agentapi.Provider, listen: str, **kwargs: Any
) -> AsyncIterator[tuple[str, trio.CancelScope]]:
    """Serve provider; yields (bound address, the scope that stops the server)."""
    async with trio.open_nursery() as nursery:
        scope = trio.CancelScope()

        async def run(task_status: trio.TaskStatus[str] = trio.TASK_STATUS_IGNORED) -> None:
            with scope:
                await serve(provider, listen, task_status=task_status, **kwargs)

        bound = await nursery.start(run)
        try:
            yield bound, scope
        finally:
            scope.cancel()


def service_threads() -> set[str]:
    """Live thread names, without trio's idle cached workers (reused, not leaked)."""
    return {
        t.name
        for t in threading.enumerate()
        if not (t.name.startswith("Trio thread ") and t.is_alive())
    }


# -- a controllable provider --------------------------------------------------------------

_ids = itertools.count(1)


class ControlledConversation:
    """send("block") blocks until cancelled; send("flood N SIZE") emits N deltas in a task."""

    def __init__(self, provider: Controlled, req: agentapi.OpenRequest) -> None:
        self.p = provider
        assert req.events is not None
        self.events: agentapi.EventSink = req.events
        self._id = req.conversation_id or f"ctl-{next(_ids)}"
        self.closed = False

    def id(self) -> str:
        return self._id

    async def history(self) -> agentapi.History:
        return agentapi.History(model="ctl-model")

    async def send(self, prompt: agentapi.Prompt) -> None:
        if self.closed:
            raise agentapi.Closed("closed")
        words = prompt.text.split()
        if words[0] == "block":
            self.p.calls.append("send:block")
            try:
                await trio.sleep_forever()
            finally:
                self.p.calls.append("send:cancelled")
        elif words[0] == "flood":
            assert self.p.nursery is not None
            self.p.nursery.start_soon(self._flood, int(words[1]), int(words[2]))
        elif words[0] == "busy":
            raise agentapi.Busy("turn t1 is running")
        elif words[0] == "crash":
            raise RuntimeError("the runtime said no")
        elif words[0] == "exit":
            self.events.emit(agentapi.Event(kind=agentapi.EventKind.EXIT, error="scripted exit"))

    async def _flood(self, n: int, size: int) -> None:
        pad = "x" * size
        for i in range(n):
            delta = agentapi.Delta(
                item_id="a1", kind=agentapi.ItemKind.ASSISTANT, text=f"{i:07d}{pad}"
            )
            self.events.emit(agentapi.Event(kind=agentapi.EventKind.DELTA, delta=delta))
            if i % 64 == 0:
                await trio.sleep(0)
        end = agentapi.Turn(state=agentapi.TurnState.COMPLETED)
        self.events.emit(agentapi.Event(kind=agentapi.EventKind.TURN, turn=end))

    async def commands(self) -> list[agentapi.Command]:
        return [agentapi.Command(name="review", description="Review", kind="skill", input_hint="")]

    async def run_command(self, name: str, args: agentapi.Prompt) -> None:
        raise agentapi.Unsupported("no commands here")

    async def steer(self, prompt: agentapi.Prompt) -> None:
        raise agentapi.Unsupported("cannot steer")

    async def cancel(self) -> None:
        self.p.calls.append("cancel")

    async def cancel_subagent(self, agent_id: str) -> None:
        self.p.calls.append(f"cancel_subagent:{agent_id}")

    async def prompt_subagent(self, agent_id: str, text: str) -> None:
        self.p.calls.append(f"prompt_subagent:{agent_id}")

    async def respond(self, interaction_id: str, answer: agentapi.Answer) -> None:
        raise agentapi.InteractionGone(f"{interaction_id} was answered elsewhere")

    async def diff(self) -> list[agentapi.FileDiff]:
        return [agentapi.FileDiff(path="a.txt", additions=2, deletions=1, patch="@@")]

    async def set_model(self, model: str, effort: str, context_size: str) -> None:
        self.p.calls.append(f"set_model:{model}/{effort}/{context_size}")

    async def set_title(self, title: str) -> None:
        if title.startswith("raise "):  # "raise REASON": fail with that sentinel
            reason = title.removeprefix("raise ")
            raise agentapi.error_for_reason(reason, f"because of {reason}")
        self.p.calls.append(f"set_title:{title}")

    async def close(self) -> None:
        self.closed = True
        self.p.calls.append(f"close:{self._id}")


class Controlled:
    """A Provider for fault tests; records what the server made it do in ``calls``."""

    def __init__(self) -> None:
        self.calls: list[str] = []
        self.nursery: trio.Nursery | None = None
        self._cm: Any = None

    async def __aenter__(self) -> Self:
        self._cm = trio.open_nursery()
        self.nursery = await self._cm.__aenter__()
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self.nursery is not None
        self.nursery.cancel_scope.cancel()
        await self._cm.__aexit__(None, None, None)
        self.nursery = None

    def name(self) -> str:
        return "controlled"

    def display_name(self) -> str:
        return "Controlled test provider"

    def capabilities(self) -> agentapi.Capabilities:
        return agentapi.Capabilities(cancel=True, host_tools=True, session_diff=True)

    async def check(self) -> None:
        raise agentapi.SignedOut("sign in with `ctl login`")

    async def models(self) -> list[agentapi.Model]:
        return [agentapi.Model(id="m1", name="Model One", efforts=["low"])]

    async def open(self, req: agentapi.OpenRequest) -> ControlledConversation:
        if req.conversation_id == "missing":
            raise agentapi.ConversationNotFound("no conversation 'missing'")
        self.calls.append(f"open:{req.workdir}")
        return ControlledConversation(self, req)

    async def shutdown(self) -> None:
        self.calls.append("shutdown")
