"""RemoteConversation: one open conversation of a RemoteProvider, addressed by its handle.

Its Events stream is drained by one worker thread that emits straight into the EventSink
(safe from any thread). A stream that ends other than by Close becomes exactly one
EventExit, and the conversation is closed: calls then raise Closed. Transport failures of a
call become Closed, or SubmissionUncertain for calls that submit a prompt. Opened with host
tools, it also drains its HostToolCalls stream on a second worker thread, running each call
with the host's call_tool (host_calls.py).
"""

from __future__ import annotations

import contextlib
import logging
from typing import TYPE_CHECKING, Any

import grpc
import trio

from ahp_bridge import agentapi

from . import errors
from ._gen.agentapi.v1 import agentapi_pb2 as pb
from .convert import ConversionError, InvalidMessage, from_proto, to_proto
from .host_calls import HostCallRunner

if TYPE_CHECKING:
    from .client import RemoteProvider

log = logging.getLogger(__name__)


class RemoteConversation:
    """agentapi.Conversation over gRPC, addressed by the handle Open returned."""

    def __init__(
        self, provider: RemoteProvider, handle: str, conversation_id: str, sink: Any
    ) -> None:
        self._p = provider
        self._handle = handle
        self._ref = pb.ConversationRef(handle=handle)
        self._id = conversation_id
        self._sink: agentapi.EventSink = sink
        self._call_obj: Any = None
        self._host_call: Any = None
        self._closing = False  # Close was called: the stream's end is expected
        self._gone = False  # an exit was delivered or the stream died
        self._pump_done = trio.Event()

    def __hash__(self) -> int:
        return hash(self._handle)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, RemoteConversation) and other._handle == self._handle

    # -- the event stream ----------------------------------------------------------------

    async def pump_task(
        self, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
    ) -> None:
        call = self._p.conversations_rpc.Events(self._ref, metadata=self._p.metadata)
        self._call_obj = call
        task_status.started()
        try:
            await trio.to_thread.run_sync(
                self._pump, call, abandon_on_cancel=True, limiter=self._p.stream_limiter
            )
        finally:
            call.cancel()
            self._pump_done.set()
            self._p.conversations.discard(self)

    def _pump(self, call: Any) -> None:
        """Worker thread: deliver every event in order, then at most one synthesized exit."""
        try:
            reason = self._deliver(call)
        except grpc.RpcError as exc:
            if self._gone or self._closing:
                return
            code = exc.code()
            if code == grpc.StatusCode.UNAVAILABLE:
                self._p._connected = False
            if code == grpc.StatusCode.RESOURCE_EXHAUSTED:
                reason = (
                    "the provider server dropped the conversation: events were not read fast enough"
                )
            else:
                reason = f"lost the connection to the provider ({code.name})"
        if reason and not self._gone:
            self._gone = True
            self._emit(agentapi.Event(kind=agentapi.EventKind.EXIT, error=reason))

    def _deliver(self, call: Any) -> str:
        """Emit the stream's events; return why the conversation ended ("" when by Close)."""
        for batch in call:
            for message in batch.events:
                if message.kind not in _EVENT_KINDS:
                    # A newer provider's kind this bridge cannot show: skip it, as Go's
                    # consumers ignore kinds they do not know, rather than end the turn.
                    log.warning("skipped an event of unknown kind %r", message.kind[:40])
                    continue
                try:
                    event = from_proto(message, agentapi.Event)
                except (InvalidMessage, ConversionError) as exc:  # stop, never guess
                    call.cancel()
                    log.warning("invalid event from the provider server: %s", exc)
                    return f"the provider server sent an invalid event ({type(exc).__name__})"
                if event.kind == agentapi.EventKind.EXIT:
                    self._gone = True
                self._emit(event)
        if self._gone or self._closing:
            return ""
        return "the provider server closed the conversation"

    def _emit(self, event: agentapi.Event) -> None:
        try:
            self._sink.emit(event)
        except Exception as exc:  # the host's sink broke its contract; keep the stream going
            log.error("event sink failed on a %s event: %s", event.kind.value, type(exc).__name__)

    # -- host tool calls -----------------------------------------------------------------

    async def host_pump_task(
        self,
        call_tool: agentapi.CallTool,
        task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
    ) -> None:
        call = self._p.conversations_rpc.HostToolCalls(self._ref, metadata=self._p.metadata)
        self._host_call = call
        token = trio.lowlevel.current_trio_token()
        async with trio.open_nursery() as nursery:
            runner = HostCallRunner(call_tool, self._host_reply, nursery)
            task_status.started()
            try:
                await trio.to_thread.run_sync(
                    self._host_pump,
                    call,
                    runner,
                    token,
                    abandon_on_cancel=True,
                    limiter=self._p.stream_limiter,
                )
            finally:
                call.cancel()
                runner.cancel_all()

    def _host_pump(self, call: Any, runner: HostCallRunner, token: trio.lowlevel.TrioToken) -> None:
        """Worker thread: hand each host tool request to the runner on the trio thread."""
        try:
            for request in call:
                trio.from_thread.run_sync(runner.receive, request, trio_token=token)
        except grpc.RpcError as exc:
            if not (self._gone or self._closing) and exc.code() != grpc.StatusCode.CANCELLED:
                log.warning("host tool call stream ended: %s", exc.code().name)
        except trio.RunFinishedError:
            return

    async def _host_reply(self, call_id: int, result: agentapi.HostToolResult) -> None:
        reply = pb.HostToolReply(handle=self._handle, id=call_id, result=to_proto(result))
        try:
            await self._p._call(self._p.conversations_rpc.HostToolReturn, reply, "host tool result")
        except (errors.RemoteError, agentapi.AgentAPIError) as exc:
            log.info("host tool result not delivered: %s", type(exc).__name__)

    # -- calls ---------------------------------------------------------------------------

    def _check_open(self) -> None:
        if self._gone or self._closing:
            raise agentapi.Closed("conversation is closed")

    async def _call(self, method: Any, request: Any, where: str, *, submits: bool = False) -> Any:
        """One call; transport failures become Closed, or SubmissionUncertain for prompts."""
        self._check_open()
        try:
            return await self._p._call(method, request, where)
        except errors.RemoteNotConnected as exc:  # nothing was sent
            raise agentapi.Closed(str(exc)) from exc
        except errors.RemoteError as exc:
            if exc.from_provider or exc.code not in _TRANSPORT_CODES:
                raise
            if submits:
                raise agentapi.SubmissionUncertain(str(exc)) from exc
            raise agentapi.Closed(str(exc)) from exc

    def id(self) -> str:
        return self._id

    async def history(self) -> agentapi.History:
        reply = await self._call(self._p.conversations_rpc.History, self._ref, "history")
        return from_proto(reply, agentapi.History)

    async def send(self, prompt: agentapi.Prompt) -> None:
        request = pb.PromptRequest(handle=self._handle, prompt=to_proto(prompt))
        await self._call(self._p.conversations_rpc.Send, request, "send", submits=True)

    async def commands(self) -> list[agentapi.Command]:
        reply = await self._call(self._p.conversations_rpc.Commands, self._ref, "commands")
        return [from_proto(c, agentapi.Command) for c in reply.commands]

    async def run_command(self, name: str, args: agentapi.Prompt) -> None:
        request = pb.RunCommandRequest(handle=self._handle, name=name, args=to_proto(args))
        await self._call(self._p.conversations_rpc.RunCommand, request, "run_command", submits=True)

    async def steer(self, prompt: agentapi.Prompt) -> None:
        request = pb.PromptRequest(handle=self._handle, prompt=to_proto(prompt))
        await self._call(self._p.conversations_rpc.Steer, request, "steer", submits=True)

    async def cancel(self) -> None:
        await self._call(self._p.conversations_rpc.Cancel, self._ref, "cancel")

    async def cancel_subagent(self, agent_id: str) -> None:
        request = pb.SubagentRef(handle=self._handle, agent_id=agent_id)
        await self._call(self._p.conversations_rpc.CancelSubagent, request, "cancel_subagent")

    async def prompt_subagent(self, agent_id: str, text: str) -> None:
        request = pb.PromptSubagentRequest(handle=self._handle, agent_id=agent_id, text=text)
        await self._call(
            self._p.conversations_rpc.PromptSubagent, request, "prompt_subagent", submits=True
        )

    async def respond(self, interaction_id: str, answer: agentapi.Answer) -> None:
        request = pb.RespondRequest(
            handle=self._handle, interaction_id=interaction_id, answer=to_proto(answer)
        )
        await self._call(self._p.conversations_rpc.Respond, request, "respond")

    async def diff(self) -> list[agentapi.FileDiff]:
        reply = await self._call(self._p.conversations_rpc.Diff, self._ref, "diff")
        return [from_proto(f, agentapi.FileDiff) for f in reply.files]

    async def set_model(self, model: str, effort: str, context_size: str) -> None:
        request = pb.SetModelRequest(
            handle=self._handle, model=model, effort=effort, context_size=context_size
        )
        await self._call(self._p.conversations_rpc.SetModel, request, "set_model")

    async def set_title(self, title: str) -> None:
        request = pb.SetTitleRequest(handle=self._handle, title=title)
        await self._call(self._p.conversations_rpc.SetTitle, request, "set_title")

    async def close(self) -> None:
        """Close on the server; return once every event before it was delivered."""
        if self._closing:
            await self._pump_done.wait()
            return
        already_gone = self._gone
        self._closing = True
        closed = False
        try:
            if not already_gone:
                with contextlib.suppress(errors.RemoteError, agentapi.Closed):
                    await self._p._call(self._p.conversations_rpc.Close, self._ref, "close")
                    closed = True
        finally:
            if not closed and self._call_obj is not None:
                self._call_obj.cancel()
            if self._host_call is not None:
                self._host_call.cancel()
            await self._pump_done.wait()


_EVENT_KINDS = frozenset(kind.value for kind in agentapi.EventKind)

# Statuses a call ends with when the connection, not the provider, failed.
_TRANSPORT_CODES = frozenset(
    {
        grpc.StatusCode.UNAVAILABLE,
        grpc.StatusCode.DEADLINE_EXCEEDED,
        grpc.StatusCode.CANCELLED,
        grpc.StatusCode.INTERNAL,
        grpc.StatusCode.UNKNOWN,
    }
)
