"""A server that breaks the contract: the client keeps what was valid and says what broke."""

from __future__ import annotations

import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import grpc
import pytest
from ahp_bridge_remote import RemoteProvider, create_provider
from ahp_bridge_remote._gen.agentapi.v1 import agentapi_pb2 as pb
from ahp_bridge_remote._gen.agentapi.v1 import agentapi_pb2_grpc as pb_grpc

from ahp_bridge import agentapi

from .test_remote_helpers import Recorder, socket_address


def _delta(i: int) -> pb.Event:
    return pb.Event(kind="delta", delta=pb.Delta(item_id="a", kind="assistant", text=f"{i:07d}"))


class _Provider(pb_grpc.ProviderServiceServicer):
    def Info(self, request: Any, context: Any) -> pb.ProviderInfo:
        return pb.ProviderInfo(name="bad", display_name="Bad", capabilities=pb.Capabilities())

    def Open(self, request: Any, context: Any) -> pb.OpenResponse:
        return pb.OpenResponse(handle="h1", conversation_id="c1")


class _Conversation(pb_grpc.ConversationServiceServicer):
    def Events(self, request: Any, context: Any) -> Iterator[pb.EventBatch]:
        yield pb.EventBatch(events=[_delta(0), pb.Event(kind="from_a_newer_provider"), _delta(1)])
        yield pb.EventBatch(events=[pb.Event(kind="item"), _delta(2)])  # an item without item
        while context.is_active():  # the client must hang up on us
            time.sleep(0.02)


async def test_unknown_kinds_are_skipped_and_an_invalid_event_ends_the_conversation() -> None:
    address = socket_address()
    server = grpc.server(ThreadPoolExecutor(max_workers=4))
    pb_grpc.add_ProviderServiceServicer_to_server(_Provider(), server)
    pb_grpc.add_ConversationServiceServicer_to_server(_Conversation(), server)
    server.add_insecure_port(address)
    server.start()
    try:
        sink = Recorder()
        async with RemoteProvider(address) as remote:
            assert remote.name() == "bad"
            conv = await remote.open(agentapi.OpenRequest(events=sink))
            await sink.wait_for(lambda e: e.kind == agentapi.EventKind.EXIT)
            events = sink.snapshot()
            assert [e.kind for e in events] == ["delta", "delta", "exit"]
            assert [e.delta.text for e in events[:2] if e.delta] == ["0000000", "0000001"]
            assert "invalid event (InvalidMessage)" in events[-1].error
            with pytest.raises(agentapi.Closed):
                await conv.send(agentapi.Prompt(text="hello"))
    finally:
        server.stop(None).wait()


def test_create_provider_refuses_bad_options() -> None:
    with pytest.raises(ValueError, match="needs option 'address'"):
        create_provider({})
    with pytest.raises(ValueError, match="unknown remote provider option"):
        create_provider({"address": "unix:/x", "adress": "typo"})
    with pytest.raises(ValueError, match="connect_timeout"):
        create_provider({"address": "unix:/x", "connect_timeout": "soon"})
    with pytest.raises(ValueError, match="HOST:PORT"):
        create_provider({"address": "no-port"})
    assert create_provider({"address": "127.0.0.1:1", "token": "t"}).name() == "remote"
