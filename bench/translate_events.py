"""Benchmark the event translator (translate/events/) and the command planner.

Run: python bench/translate_events.py [--n N] [--reps R]
Prints operations/s (best and median of R runs); nothing here is asserted.
Paths measured:
  delta           : translate() of one streamed assistant delta into chat/delta (the hot path)
  delta + reduce  : the same plus the chat reducer applying it (what the store adds)
  tool lifecycle  : a tool call running -> completed (2 events, 3 actions)
  permission      : permission pending + client confirmation + tool completion (4 actions)
  plan turn       : plan_command for a chat/turnStarted with a model and two attachments
"""

from __future__ import annotations

import argparse
import base64
import statistics
import time
from collections.abc import Callable
from itertools import count

from ahp_bridge.agentapi import (
    ContextSize,
    Delta,
    Event,
    EventKind,
    Interaction,
    InteractionKind,
    InteractionState,
    Item,
    ItemKind,
    Model,
    Option,
    ToolCall,
    ToolStatus,
)
from ahp_bridge.state.reducers import reduce
from ahp_bridge.translate import CommandContext, EventTranslator, plan_command

CHAT, SESSION = "ahp-chat:/bench", "ahp-session:/bench"
NOW = "2026-01-01T00:00:00.000Z"


def _translator() -> EventTranslator:
    ids = count()
    tr = EventTranslator(CHAT, SESSION, lambda: f"id-{next(ids)}", lambda: 1_700_000_000_000)
    tr.turn_started_by_client("turn-1", 1_700_000_000_000)
    return tr


def _chat() -> dict[str, object]:
    return {
        "resource": CHAT,
        "title": "",
        "status": 8,
        "modifiedAt": NOW,
        "turns": [],
        "activeTurn": {
            "id": "turn-1",
            "startedAt": NOW,
            "message": {"text": "hi", "origin": {"kind": "user"}},
            "responseParts": [],
            "usage": None,
        },
    }


DELTA = Event(kind=EventKind.DELTA, delta=Delta(item_id="m1", kind=ItemKind.ASSISTANT, text="tok "))


def bench_delta(n: int) -> None:
    tr = _translator()
    for _ in range(n):
        tr.translate(DELTA)


def bench_delta_reduce(n: int) -> None:
    tr = _translator()
    chat = _chat()
    for _ in range(n):
        for _channel, action in tr.translate(DELTA):
            chat = reduce("chat", chat, action, now=NOW)


def _tool(call_id: str, status: ToolStatus) -> Event:
    call = ToolCall(name="bash", title="Run", status=status, input="ls", output="a\nb")
    return Event(kind=EventKind.ITEM, item=Item(id=call_id, kind=ItemKind.TOOL, tool=call))


def bench_tool(n: int) -> None:
    tr = _translator()
    for i in range(n):
        tr.translate(_tool(f"c{i}", ToolStatus.RUNNING))
        tr.translate(_tool(f"c{i}", ToolStatus.COMPLETED))


OPTIONS = [
    Option(id="once", label="Allow once", allow_once=True),
    Option(id="deny", label="Deny", reject=True),
]


def bench_permission(n: int) -> None:
    tr = _translator()
    for i in range(n):
        perm = Interaction(
            id=f"p{i}",
            kind=InteractionKind.PERMISSION,
            title="Run",
            options=OPTIONS,
            state=InteractionState.PENDING,
            tool_call_id=f"c{i}",
        )
        tr.translate(Event(kind=EventKind.INTERACTION, interaction=perm))
        tr.observe_client_action(
            {
                "type": "chat/toolCallConfirmed",
                "turnId": "turn-1",
                "toolCallId": f"c{i}",
                "approved": True,
                "confirmed": "user-action",
            }
        )
        tr.translate(_tool(f"c{i}", ToolStatus.COMPLETED))


CTX = CommandContext(models=[Model(id="m", efforts=["high"], context_sizes=[ContextSize(id="1m")])])
TURN = {
    "type": "chat/turnStarted",
    "turnId": "t",
    "startedAt": NOW,
    "message": {
        "text": "look at these",
        "origin": {"kind": "user"},
        "model": {"id": "m", "config": {"effort": "high"}},
        "attachments": [
            {"type": "resource", "label": "a.py", "uri": "file:///w/a.py"},
            {
                "type": "embeddedResource",
                "label": "i.png",
                "data": base64.b64encode(b"x" * 1024).decode(),
                "contentType": "image/png",
            },
        ],
    },
}


def bench_plan(n: int) -> None:
    for _ in range(n):
        plan_command(TURN, CTX)


def run(name: str, fn: Callable[[int], None], n: int, reps: int) -> None:
    rates = []
    for _ in range(reps):
        start = time.perf_counter()
        fn(n)
        rates.append(n / (time.perf_counter() - start))
    print(f"{name:16} best {max(rates):>10,.0f}/s  median {statistics.median(rates):>10,.0f}/s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=20_000)
    parser.add_argument("--reps", type=int, default=5)
    args = parser.parse_args()
    run("delta", bench_delta, args.n, args.reps)
    run("delta + reduce", bench_delta_reduce, args.n // 10, args.reps)
    run("tool lifecycle", bench_tool, args.n // 4, args.reps)
    run("permission", bench_permission, args.n // 4, args.reps)
    run("plan turn", bench_plan, args.n // 4, args.reps)


if __name__ == "__main__":
    main()
