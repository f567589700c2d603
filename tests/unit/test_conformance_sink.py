"""The suite's recording sink: thread-safe, marks late events, spots blocking hand-offs."""

from __future__ import annotations

import threading

import trio
import trio.testing

from ahp_bridge.agentapi import Event, EventKind
from ahp_bridge.conformance.sink import RecordingSink


def title(text: str) -> Event:
    return Event(kind=EventKind.TITLE, title=text)


async def test_direct_calls_and_run_sync_soon_do_not_block() -> None:
    sink = RecordingSink()
    sink.emit(title("direct"))
    token = trio.lowlevel.current_trio_token()

    def from_a_thread() -> None:
        sink.emit(title("thread"))
        token.run_sync_soon(sink.emit, title("soon"))

    def pump() -> None:  # a worker thread the adapter started, calling emit itself
        sink.emit(title("pump"))

    thread = threading.Thread(target=from_a_thread)
    thread.start()
    await trio.to_thread.run_sync(thread.join)
    await trio.to_thread.run_sync(pump)
    await sink.wait_for(lambda events: len(events) == 4 or None)
    emissions = sink.emissions
    assert sorted(e.event.title for e in emissions) == ["direct", "pump", "soon", "thread"]
    assert [e.blocking for e in emissions] == ["", "", "", ""]
    on_trio = {e.event.title: e.on_trio_thread for e in emissions}
    assert on_trio == {"direct": True, "thread": False, "soon": True, "pump": False}


async def test_from_thread_hand_off_is_blocking() -> None:
    sink = RecordingSink()
    token = trio.lowlevel.current_trio_token()

    def worker() -> None:
        trio.from_thread.run_sync(sink.emit, title("hop"))

    def foreign() -> None:
        trio.from_thread.run_sync(lambda: sink.emit(title("wrapped")), trio_token=token)

    async def deliver() -> None:
        sink.emit(title("async"))

    def worker_async() -> None:
        trio.from_thread.run(deliver)

    await trio.to_thread.run_sync(worker)
    await trio.to_thread.run_sync(worker_async)
    thread = threading.Thread(target=foreign)
    thread.start()
    await trio.to_thread.run_sync(thread.join)
    reasons = [e.blocking for e in sink.emissions]
    assert len(reasons) == 3
    assert all("trio.from_thread" in r for r in reasons)


async def test_emit_awaited_in_a_worker_thread_is_blocking() -> None:
    sink = RecordingSink()
    await trio.to_thread.run_sync(sink.emit, title("awaited"))
    (emission,) = sink.emissions
    assert "trio.to_thread.run_sync" in emission.blocking
    assert not emission.on_trio_thread


async def test_events_after_close_are_late() -> None:
    sink = RecordingSink()
    sink.emit(title("before"))
    sink.close()
    sink.emit(title("after"))
    assert [(e.event.title, e.late) for e in sink.emissions] == [
        ("before", False),
        ("after", True),
    ]
    assert len(sink) == 2


async def test_wait_for_wakes_on_a_later_emit() -> None:
    sink = RecordingSink()
    found: list[int] = []

    async def waiter() -> None:
        found.append(await sink.wait_for(lambda events: len(events) if len(events) >= 2 else None))

    async with trio.open_nursery() as nursery:
        nursery.start_soon(waiter)
        await trio.testing.wait_all_tasks_blocked()
        sink.emit(title("one"))
        await trio.testing.wait_all_tasks_blocked()
        assert found == []
        await trio.to_thread.run_sync(sink.emit, title("two"))
    assert found == [2]
