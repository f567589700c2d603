"""ahp_bridge_support: the provider lifetime every adapter inherits, the asyncio thread, and an
SDK's import with the cyclic collector off."""

from __future__ import annotations

import asyncio
import gc
import logging
import sys
from pathlib import Path

import pytest
import trio
from ahp_bridge_support import (
    AsyncioThread,
    LoopStopped,
    ProviderLifetime,
    close_each,
    import_without_gc,
)

from ahp_bridge.agentapi import AgentAPIError, Closed


class Toy(ProviderLifetime):
    """A provider that records what its lifetime runs, in order."""

    _lifetime_name = "the toy provider"

    def __init__(self, *, fail_start: bool = False, slow_shutdown: bool = False) -> None:
        self.calls: list[str] = []
        self.fail_start = fail_start
        self.slow_shutdown = slow_shutdown
        self.turn_ended = trio.Event()

    async def _on_start(self) -> None:
        self.calls.append("start")
        if self.fail_start:
            raise AgentAPIError("no runtime")

    async def _on_stop(self) -> None:
        self.calls.append("stop")

    async def shutdown(self) -> None:
        self.calls.append("shutdown")
        with pytest.raises(Closed, match=r"^the toy provider is not started"):
            self._turn_nursery()  # no new work while shutting down
        await trio.sleep(0)  # a checkpoint: a cancelled exit would stop here unless shielded
        if self.slow_shutdown:
            await trio.sleep_forever()
        self.calls.append("shutdown done")

    async def turn(self, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        task_status.started()
        try:
            await trio.sleep_forever()
        finally:
            self.calls.append("turn cancelled")
            self.turn_ended.set()


async def test_a_turn_outlives_its_caller_and_ends_with_the_provider() -> None:
    toy = Toy()
    with pytest.raises(Closed, match=r"^the toy provider is not started \(use `async with"):
        toy._turn_nursery()
    async with toy:
        with trio.CancelScope() as caller:
            await toy._turn_nursery().start(toy.turn)
            caller.cancel()
        assert not toy.turn_ended.is_set()
    assert toy.calls == ["start", "shutdown", "shutdown done", "turn cancelled", "stop"]
    with pytest.raises(Closed, match="not started"):
        toy._require_started()


async def test_shutdown_completes_when_the_exit_is_cancelled() -> None:
    toy = Toy()
    with trio.CancelScope() as outer:
        async with toy:
            outer.cancel()
            await trio.sleep(0)
    assert outer.cancelled_caught
    assert toy.calls == ["start", "shutdown", "shutdown done", "stop"]


async def test_a_shutdown_timeout_bounds_the_exit() -> None:
    toy = Toy(slow_shutdown=True)
    toy._shutdown_timeout = 0
    async with toy:
        pass
    assert toy.calls == ["start", "shutdown", "stop"]


async def test_a_failed_start_stops_and_propagates_and_may_be_retried() -> None:
    toy = Toy(fail_start=True)
    with pytest.raises(AgentAPIError, match=r"^no runtime$"):
        async with toy:
            raise AssertionError("the body runs only after a successful start")
    assert toy.calls == ["start", "stop"]
    toy.fail_start = False
    async with toy:
        assert toy._turn_nursery() is not None


async def test_entering_twice_is_refused() -> None:
    toy = Toy()
    async with toy:
        with pytest.raises(RuntimeError, match=r"^the toy provider is already running$"):
            await toy.__aenter__()
    assert toy.calls == ["start", "shutdown", "shutdown done", "stop"]


async def test_a_crashed_turn_ends_the_provider_with_its_error() -> None:
    toy = Toy()

    async def crash() -> None:
        raise KeyError("turn")

    with pytest.RaisesGroup(pytest.RaisesExc(KeyError, match="turn")):
        async with toy:
            toy._turn_nursery().start_soon(crash)
            await trio.sleep_forever()  # cancelled by the crash
    assert toy.calls == ["start", "shutdown", "shutdown done", "stop"]


async def test_a_provider_without_a_nursery_leaves_the_body_unwrapped() -> None:
    class Elsewhere(Toy):
        _owns_nursery = False

    toy = Elsewhere()
    with pytest.raises(ValueError, match=r"^body$"):
        async with toy:
            toy._require_started()
            raise ValueError("body")
    assert toy.calls == ["start", "shutdown", "shutdown done", "stop"]


async def test_close_each_closes_the_rest_after_one_fails(caplog: pytest.LogCaptureFixture) -> None:
    closed: list[str] = []

    class Conv:
        def __init__(self, name: str, error: BaseException | None = None) -> None:
            self.name, self.error = name, error

        async def close(self) -> None:
            closed.append(self.name)
            if self.error is not None:
                raise self.error

    log = logging.getLogger("test.adapter_support")
    convs = [Conv("a", AgentAPIError("gone")), Conv("b")]
    await close_each(convs, log, "toy")  # type: ignore[arg-type]
    assert closed == ["a", "b"]
    assert [r.getMessage() for r in caplog.records if r.name == log.name] == [
        "toy: closing a conversation failed: gone"
    ]
    with pytest.raises(KeyError):  # only AgentAPIError is logged
        await close_each([Conv("c", KeyError("x"))], log, "toy")  # type: ignore[list-item]


async def test_an_asyncio_thread_without_the_late_answer_handler_keeps_asyncios() -> None:
    thread = AsyncioThread("acp-asyncio", sdk="ACP SDK")
    with pytest.raises(LoopStopped, match=r"^the ACP SDK thread is not running$"):
        thread.submit(asyncio.sleep(0))
    thread.start()
    try:

        async def handler() -> object:
            return asyncio.get_running_loop().get_exception_handler()

        assert await thread.run(handler()) is None
    finally:
        thread.stop()
    copilot = AsyncioThread("copilot-asyncio", sdk="Copilot SDK", drop_late_answers=True)
    copilot.start()
    try:
        assert await copilot.run(handler()) is not None
    finally:
        copilot.stop()


def _module_that_records_the_collector(root: Path, name: str, body: str = "") -> None:
    (root / f"{name}.py").write_text(f"import gc\nENABLED = gc.isenabled()\n{body}")


def test_an_sdk_is_imported_with_the_collector_off_and_it_comes_back_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.syspath_prepend(str(tmp_path))
    _module_that_records_the_collector(tmp_path, "sdk_quiet_a")
    _module_that_records_the_collector(tmp_path, "sdk_quiet_b", "raise ImportError('no b')\n")
    assert gc.isenabled()
    import_without_gc("sdk_quiet_a")
    assert sys.modules["sdk_quiet_a"].ENABLED is False
    assert gc.isenabled()
    with pytest.raises(ImportError, match="no b"):  # as `import` would
        import_without_gc("sdk_quiet_b")
    assert gc.isenabled()
    gc.disable()  # a caller that had it off keeps it off
    try:
        import_without_gc("sdk_quiet_a")
        assert not gc.isenabled()
    finally:
        gc.enable()
