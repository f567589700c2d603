"""A clean stop says goodbye: every client gets what was queued, then close 1001 "going away".

A client that sees 1006 (no close frame) cannot tell a restart from a crash. The command line
stops the bridge with its `stop` event on SIGTERM or the first Ctrl-C (tested in test_cli.py);
here the test sets it. A bridge cancelled without it still sends the close frame (best effort).
"""

from __future__ import annotations

from functools import partial
from typing import Any

import pytest
import trio
from trio_websocket import ConnectionClosed

from ahp_bridge.host.app import run_bridge
from ahp_bridge.host.transport.connection import CLOSE_GOING_AWAY, GOING_AWAY
from tests.e2e.conftest import bridge_url
from tests.support.ahp_client import open_client


async def test_every_client_gets_a_1001_close_when_the_bridge_stops(
    nursery: trio.Nursery, make_settings: Any
) -> None:
    settings = make_settings()
    closes: list[tuple[int, str | None]] = []
    stop = trio.Event()
    async with trio.open_nursery() as bridge:
        port = await bridge.start(partial(run_bridge, settings, stop=stop))
        url = bridge_url(port, settings)
        clients = [await open_client(nursery, url, f"c{i}") for i in range(3)]
        for client in clients:
            await client.initialize(["ahp-root://"])
        stop.set()  # run_bridge returns once every client was told
    for client in clients:
        with trio.fail_after(5):
            try:
                while True:
                    await client.ws.get_message()
            except ConnectionClosed as closed:
                assert closed.reason is not None
                closes.append((closed.reason.code, closed.reason.reason))
    assert closes == [(CLOSE_GOING_AWAY, GOING_AWAY)] * 3


async def test_a_cancelled_bridge_still_sends_the_close_frame(
    nursery: trio.Nursery, make_settings: Any
) -> None:
    async with trio.open_nursery() as bridge:
        settings = make_settings()
        port = await bridge.start(run_bridge, settings)
        client = await open_client(nursery, bridge_url(port, settings), "c")
        await client.initialize(["ahp-root://"])
        bridge.cancel_scope.cancel()
    with trio.fail_after(5), pytest.raises(ConnectionClosed) as closed:
        while True:
            await client.ws.get_message()
    assert closed.value.reason is not None
    assert closed.value.reason.code == CLOSE_GOING_AWAY
