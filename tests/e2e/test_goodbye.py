"""A clean stop says goodbye: every client gets what was queued, then close 1001 "going away".

A client that sees 1006 (no close frame) cannot tell a restart from a crash. The bridge's stop
is a cancellation (the command line cancels it on SIGTERM or the first Ctrl-C, tested in
test_cli.py); here the bridge runs in a nursery of its own and is cancelled the same way.
"""

from __future__ import annotations

from typing import Any

import trio
from trio_websocket import ConnectionClosed

from ahp_bridge.host.app import run_bridge
from ahp_bridge.host.transport.connection import CLOSE_GOING_AWAY, GOING_AWAY
from tests.support.ahp_client import open_client


async def test_every_client_gets_a_1001_close_when_the_bridge_stops(
    nursery: trio.Nursery, make_settings: Any
) -> None:
    settings = make_settings()
    closes: list[tuple[int, str | None]] = []
    async with trio.open_nursery() as bridge:
        port = await bridge.start(run_bridge, settings)
        url = f"ws://127.0.0.1:{port}/"
        clients = [await open_client(nursery, url, f"c{i}") for i in range(3)]
        for client in clients:
            await client.initialize(["ahp-root://"])
        bridge.cancel_scope.cancel()
    for client in clients:
        with trio.fail_after(5):
            try:
                while True:
                    await client.ws.get_message()
            except ConnectionClosed as closed:
                assert closed.reason is not None
                closes.append((closed.reason.code, closed.reason.reason))
    assert closes == [(CLOSE_GOING_AWAY, GOING_AWAY)] * 3
