"""Text frames built once per envelope are exactly the frames wsproto would send."""

from __future__ import annotations

import pytest
from wsproto import ConnectionType, WSConnection
from wsproto.events import AcceptConnection, Request, TextMessage

from ahp_bridge.host.transport.frames import text_frame


def _wsproto_server_frame(text: str) -> bytes:
    """What a wsproto server connection puts on the wire for one text message."""
    client = WSConnection(ConnectionType.CLIENT)
    server = WSConnection(ConnectionType.SERVER)
    server.receive_data(client.send(Request(host="127.0.0.1", target="/")))
    next(server.events())
    client.receive_data(server.send(AcceptConnection()))
    return server.send(TextMessage(data=text))


@pytest.mark.parametrize("size", [0, 1, 125, 126, 127, 65_535, 65_536, 70_000, 300_000])
def test_a_frame_of_any_length_is_the_one_wsproto_sends(size: int) -> None:
    text = ("é" * size)[:size] if size % 2 else "x" * size  # multi-byte UTF-8 too
    assert text_frame(text) == _wsproto_server_frame(text)


def test_the_same_envelope_is_built_once_for_every_subscriber() -> None:
    envelope = '{"jsonrpc":"2.0","method":"action","params":{"n":1}}'
    assert text_frame(envelope) is text_frame(envelope)
    big = "y" * 100_000  # beyond the cache: built each time, still right
    assert text_frame(big) == text_frame(big) and text_frame(big) is not text_frame(big)
