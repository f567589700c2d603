"""The remote provider against a controllable provider: errors, cancellation, faults, threads."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, cast

import grpc
import pytest
import trio
from ahp_bridge_remote import RemoteAuthError, RemoteError, RemoteProvider, RemoteUnavailable
from ahp_bridge_remote.server import serve

from ahp_bridge import agentapi

from .test_remote_helpers import (
    DEADLINE,
    Controlled,
    Recorder,
    service_threads,
    serving,
    socket_address,
)

EXIT = agentapi.EventKind.EXIT
DELTA = agentapi.EventKind.DELTA


def _open_req(sink: Recorder, conversation_id: str = "") -> agentapi.OpenRequest:
    return agentapi.OpenRequest(workdir="/w", conversation_id=conversation_id, events=sink)


async def _wait(predicate: Callable[[], bool]) -> None:
    with trio.fail_after(DEADLINE):
        while not predicate():
            await trio.sleep(0.005)


async def test_calls_results_and_sentinel_errors_cross_the_wire() -> None:
    ctl = Controlled()
    async with serving(ctl, socket_address()) as (address, _), RemoteProvider(address) as remote:
        assert remote.name() == "controlled"
        assert remote.display_name() == "Controlled test provider"
        caps = remote.capabilities()
        assert caps.cancel and caps.session_diff
        assert caps.host_tools  # host tools cross (HostToolCalls / HostToolReturn)
        with pytest.raises(agentapi.SignedOut, match="ctl login"):
            await remote.check()
        assert await remote.models() == [agentapi.Model(id="m1", name="Model One", efforts=["low"])]
        with pytest.raises(agentapi.ConversationNotFound, match="no conversation 'missing'"):
            await remote.open(_open_req(Recorder(), "missing"))

        conv = await remote.open(_open_req(Recorder()))
        assert isinstance(remote, agentapi.Provider)
        assert isinstance(conv, agentapi.Conversation)
        # The controlled provider has no optional Protocols, so the client has none either.
        assert not isinstance(remote, agentapi.HistoryReader | agentapi.Titler)
        assert conv.id().startswith("ctl-")
        assert ctl.calls == ["open:/w"]
        with pytest.raises(agentapi.InteractionGone, match="p1 was answered elsewhere"):
            await conv.respond("p1", agentapi.Answer(decision="allow"))
        with pytest.raises(agentapi.Busy, match="turn t1 is running"):
            await conv.send(agentapi.Prompt(text="busy"))
        with pytest.raises(agentapi.Unsupported):
            await conv.steer(agentapi.Prompt(text="more"))
        # A provider's own (non-sentinel) failure is not an uncertain submission.
        with pytest.raises(RemoteError, match="the runtime said no") as info:
            await conv.send(agentapi.Prompt(text="crash"))
        assert not isinstance(info.value, agentapi.AgentAPIError)
        assert [c.name for c in await conv.commands()] == ["review"]
        assert (await conv.diff())[0].patch == "@@"
        assert (await conv.history()).model == "ctl-model"
        await conv.set_model("m1", "low", "default")
        await conv.set_title("A title")
        await conv.cancel_subagent("sub-1")
        await conv.prompt_subagent("sub-2", "hello")
        await conv.cancel()
        assert ctl.calls[1:] == [
            "set_model:m1/low/default",
            "set_title:A title",
            "cancel_subagent:sub-1",
            "prompt_subagent:sub-2",
            "cancel",
        ]
        await conv.close()
        assert ctl.calls[-1] == f"close:{conv.id()}"
        with pytest.raises(agentapi.Closed):
            await conv.set_title("after close")


async def test_every_sentinel_error_arrives_as_its_own_class_with_its_message() -> None:
    async with (
        serving(Controlled(), socket_address()) as (address, _),
        RemoteProvider(address) as remote,
    ):
        conv = await remote.open(_open_req(Recorder()))
        for reason, cls in sorted(agentapi.ERRORS_BY_REASON.items()):
            with pytest.raises(cls) as info:
                await conv.set_title(f"raise {reason}")
            assert type(info.value) is cls
            assert info.value.reason == reason
            assert str(info.value) == f"because of {reason}"
        # An unknown reason (a newer server) keeps its reason rather than being guessed.
        with pytest.raises(agentapi.AgentAPIError) as unknown:
            await conv.set_title("raise from_the_future")
        assert unknown.value.reason == "from_the_future"
        await conv.set_title("still usable")


class _TitlingControlled(Controlled):
    async def title(self, req: agentapi.TitleRequest) -> str:
        assert req.on_usage is not None  # the server passes its own, to carry usage back
        req.on_usage(agentapi.UtilityUsage(input_tokens=12, output_tokens=3, credits=0.5))
        return f"title for {req.text}"


async def test_a_title_carries_its_usage_back_to_the_callback() -> None:
    async with (
        serving(_TitlingControlled(), socket_address()) as (address, _),
        RemoteProvider(address) as remote,
    ):
        assert isinstance(remote, agentapi.Titler)
        got: list[agentapi.UtilityUsage] = []
        title = await remote.title(agentapi.TitleRequest(text="hi", on_usage=got.append))
        assert title == "title for hi"
        assert got == [agentapi.UtilityUsage(input_tokens=12, output_tokens=3, credits=0.5)]


async def test_cancelling_a_call_cancels_the_provider_call() -> None:
    ctl = Controlled()
    async with serving(ctl, socket_address()) as (address, _), RemoteProvider(address) as remote:
        conv = await remote.open(_open_req(Recorder()))
        async with trio.open_nursery() as nursery:
            scope = trio.CancelScope()

            async def send() -> None:
                with scope:
                    await conv.send(agentapi.Prompt(text="block"))

            nursery.start_soon(send)
            await _wait(lambda: "send:block" in ctl.calls)
            scope.cancel()
        await _wait(lambda: "send:cancelled" in ctl.calls)
        # The conversation is still usable after a cancelled call.
        await conv.set_title("still open")
        assert ctl.calls[-1] == "set_title:still open"


def _assert_in_order(events: list[agentapi.Event], n: int) -> None:
    deltas = [e.delta.text[:7] for e in events if e.kind == DELTA and e.delta]
    assert deltas == [f"{i:07d}" for i in range(n)]


async def test_a_flood_of_events_arrives_complete_and_in_order() -> None:
    ctl = Controlled()
    sink = Recorder()
    async with serving(ctl, socket_address()) as (address, _), RemoteProvider(address) as remote:
        conv = await remote.open(_open_req(sink))
        await conv.send(agentapi.Prompt(text="flood 5000 16"))
        end = await sink.wait_turn_end()
        assert end.turn is not None and end.turn.state == agentapi.TurnState.COMPLETED
        _assert_in_order(sink.snapshot(), 5000)
        await conv.close()
    assert sink.of(EXIT) == []


async def test_a_slow_consumer_loses_nothing() -> None:
    ctl = Controlled()
    sink = Recorder(per_event=0.0005)
    async with serving(ctl, socket_address()) as (address, _), RemoteProvider(address) as remote:
        conv = await remote.open(_open_req(sink))
        await conv.send(agentapi.Prompt(text="flood 1500 2000"))
        await sink.wait_turn_end()
        _assert_in_order(sink.snapshot(), 1500)
        await conv.close()


async def test_a_consumer_that_stops_reading_gets_exit_not_silent_loss() -> None:
    ctl = Controlled()
    gate = threading.Event()
    sink = Recorder(gate=gate)
    async with (
        serving(ctl, socket_address(), event_buffer=64) as (address, _),
        RemoteProvider(address) as remote,
    ):
        conv = await remote.open(_open_req(sink))
        await conv.send(agentapi.Prompt(text="flood 8000 4000"))
        # The server's buffer overflows while the client is stuck: it closes the conversation.
        await _wait(lambda: f"close:{conv.id()}" in ctl.calls)
        gate.set()
        await sink.wait_for(lambda e: e.kind == EXIT)
        events = sink.snapshot()
        assert events[-1].kind == EXIT
        assert "not read fast enough" in events[-1].error
        received = [e for e in events if e.kind == DELTA]
        assert len(received) < 8000
        _assert_in_order(received, len(received))  # a prefix, in order, then the exit
        with pytest.raises(agentapi.Closed):
            await conv.send(agentapi.Prompt(text="flood 1 1"))


async def test_a_cancelled_stream_closes_the_conversation_on_the_server() -> None:
    ctl = Controlled()
    sink = Recorder()
    async with serving(ctl, socket_address()) as (address, _), RemoteProvider(address) as remote:
        conv = await remote.open(_open_req(sink))
        await conv.send(agentapi.Prompt(text="flood 1 1"))
        await sink.wait_turn_end()  # the server is streaming to us now
        conv._call_obj.cancel()  # the stream dies under the conversation (as on a crash)
        await sink.wait_for(lambda e: e.kind == EXIT)
        await _wait(lambda: f"close:{conv.id()}" in ctl.calls)
        assert len(sink.of(EXIT)) == 1
        with pytest.raises(agentapi.Closed):
            await conv.set_title("x")


async def test_server_stop_mid_turn_is_exit_and_reopen_works_once_it_is_back() -> None:
    address = socket_address()
    sink = Recorder()

    async def server(
        scope: trio.CancelScope, task_status: trio.TaskStatus[str] = trio.TASK_STATUS_IGNORED
    ) -> None:
        with scope:
            await serve(Controlled(), address, task_status=task_status)

    async with trio.open_nursery() as nursery:
        first = trio.CancelScope()
        await nursery.start(server, first)
        async with RemoteProvider(address) as remote:  # outlives the first server
            conv = await remote.open(_open_req(sink))
            await conv.send(agentapi.Prompt(text="flood 3 1"))
            await sink.wait_turn_end()
            first.cancel()  # the server goes away...
            exits = await sink.wait_for(lambda e: e.kind == EXIT)
            assert len(exits) == 1
            with pytest.raises(agentapi.Closed):
                await conv.send(agentapi.Prompt(text="flood 1 1"))
            second = trio.CancelScope()
            await nursery.start(server, second)  # ...and comes back on the same address
            again = Recorder()
            conv2 = await remote.open(_open_req(again, conv.id()))
            assert conv2.id() == conv.id()
            await conv2.send(agentapi.Prompt(text="flood 10 1"))
            await again.wait_turn_end()
            _assert_in_order(again.snapshot(), 10)
            await conv2.close()
        second.cancel()
    assert len(sink.of(EXIT)) == 1


async def test_a_wrong_or_missing_token_is_refused_on_every_call() -> None:
    ctl = Controlled()
    async with serving(ctl, "127.0.0.1:0", token="s3cret-token") as (address, _):
        assert address.startswith("127.0.0.1:") and not address.endswith(":0")
        for token in ("wrong", None):
            with pytest.raises(RemoteAuthError):
                async with RemoteProvider(address, token=token, connect_timeout=5):
                    pass  # entering already calls Info
        async with RemoteProvider(address, token="s3cret-token") as remote:
            with pytest.raises(agentapi.SignedOut):  # reached the provider
                await remote.check()
    assert ctl.calls == []


async def test_no_threads_are_left_behind() -> None:
    before = service_threads()
    ctl = Controlled()
    async with serving(ctl, socket_address()) as (address, _), RemoteProvider(address) as remote:
        sinks = [Recorder() for _ in range(3)]
        convs = [await remote.open(_open_req(s)) for s in sinks]
        for conv in convs:
            await conv.send(agentapi.Prompt(text="flood 200 10"))
        for sink in sinks:
            await sink.wait_turn_end()
        await convs[0].close()
        convs[1]._call_obj.cancel()
        await sinks[1].wait_for(lambda e: e.kind == EXIT)
        # convs[2] stays open: leaving the provider must close it.
    with trio.fail_after(DEADLINE):
        while service_threads() != before:
            await trio.sleep(0.05)
    assert service_threads() == before


async def test_open_beyond_the_stream_workers_is_refused_plainly() -> None:
    ctl = Controlled()
    async with (
        serving(ctl, socket_address(), max_workers=18) as (address, _),  # 2 conversations
        RemoteProvider(address) as remote,
    ):
        first = await remote.open(_open_req(Recorder()))
        await remote.open(_open_req(Recorder()))
        with pytest.raises(RemoteError, match="already holds 2 open conversations"):
            await remote.open(_open_req(Recorder()))
        await first.close()
        third = Recorder()
        conv = await remote.open(_open_req(third))
        await conv.send(agentapi.Prompt(text="flood 5 1"))
        await third.wait_turn_end()


async def test_an_unreachable_server_fails_the_start_clearly() -> None:
    before = service_threads()
    with pytest.raises(
        RemoteUnavailable,
        match=r"^no provider is serving at unix:.*: start one with `ahp-bridge serve-provider ",
    ):
        async with RemoteProvider(socket_address(), connect_timeout=0.3):
            pass
    with trio.fail_after(DEADLINE):
        while service_threads() != before:
            await trio.sleep(0.05)


async def test_a_request_the_contract_refuses_is_invalid_argument_without_its_values() -> None:
    ctl = Controlled()
    async with serving(ctl, socket_address()) as (address, _), RemoteProvider(address) as remote:
        conv = await remote.open(_open_req(Recorder()))
        # A peer that skipped validation sends a plan action that does not exist.
        bad = agentapi.Answer.model_construct(
            plan=agentapi.PlanAnswer.model_construct(action=cast(Any, "my secret prompt text"))
        )
        with pytest.raises(RemoteError, match="invalid Answer: action: Input should be") as info:
            await conv.respond("p1", bad)
        assert info.value.code == grpc.StatusCode.INVALID_ARGUMENT
        assert "secret" not in str(info.value)
        await conv.set_title("still usable")


class _BrokenSink(Recorder):
    """A sink that fails on the first delta (a host bug), then records normally."""

    failed = False

    def emit(self, event: agentapi.Event) -> None:
        if event.kind == DELTA and not self.failed:
            self.failed = True
            raise RuntimeError("sink bug")
        super().emit(event)


async def test_a_failing_sink_loses_one_event_not_the_conversation(
    caplog: pytest.LogCaptureFixture,
) -> None:
    sink = _BrokenSink()
    async with (
        serving(Controlled(), socket_address()) as (address, _),
        RemoteProvider(address) as remote,
    ):
        conv = await remote.open(_open_req(sink))
        await conv.send(agentapi.Prompt(text="flood 5 1"))
        await sink.wait_turn_end()
        texts = [e.delta.text[:7] for e in sink.snapshot() if e.kind == DELTA and e.delta]
        assert texts == [f"{i:07d}" for i in range(1, 5)]
        await conv.set_title("still usable")
    assert "event sink failed on a delta event: RuntimeError" in caplog.text


async def test_many_conversations_stream_at_once_each_in_its_own_order() -> None:
    async with (
        serving(Controlled(), socket_address()) as (address, _),
        RemoteProvider(address) as remote,
    ):
        sinks = [Recorder() for _ in range(20)]
        convs = [await remote.open(_open_req(sink)) for sink in sinks]
        async with trio.open_nursery() as nursery:
            for conv in convs:
                nursery.start_soon(conv.send, agentapi.Prompt(text="flood 300 32"))
        for sink in sinks:
            await sink.wait_turn_end()
            _assert_in_order(sink.snapshot(), 300)
        async with trio.open_nursery() as nursery:
            for conv in convs:
                nursery.start_soon(conv.close)
        assert all(sink.of(EXIT) == [] for sink in sinks)
