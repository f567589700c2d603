"""ahp_bridge_support: the asyncio thread."""

from __future__ import annotations

import asyncio

import pytest
from ahp_bridge_support import AsyncioThread, LoopStopped


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
