"""The agentapi.v1 servicers: each RPC, on a grpc pool thread, runs its provider call in trio.

Unary calls hop in with ``trio.from_thread.run(..., trio_token=...)`` inside a cancel scope
that the RPC's termination callback cancels, so a client that cancels a call cancels the
provider call. Failures leave as a status plus ErrorInfo (see errors.py). Event streams
drain a Served queue on their own thread (served.py); host tool call streams drain a
ServedHostCalls queue the same way (host_calls.py).
"""

from __future__ import annotations

import contextlib
import logging
import secrets
from collections.abc import Awaitable, Callable, Generator, Iterator
from typing import Any, NoReturn, TypeVar

import grpc
import trio
from google.protobuf import empty_pb2
from google.protobuf.message import Message
from pydantic import BaseModel

from ahp_bridge import agentapi

from . import errors
from ._gen.agentapi.v1 import agentapi_pb2 as pb
from ._gen.agentapi.v1 import agentapi_pb2_grpc as pb_grpc
from .convert import InvalidMessage, from_proto, to_proto
from .host_calls import ServedHostCalls
from .served import Served

log = logging.getLogger(__name__)

T = TypeVar("T")
M = TypeVar("M", bound=BaseModel)
EMPTY = empty_pb2.Empty()
ATTACH_GRACE_SECONDS = 60.0
MAX_BATCH = 256  # events per EventBatch message


def _fail(context: grpc.ServicerContext, code: grpc.StatusCode, message: str) -> NoReturn:
    """End the RPC with code (ServicerContext.abort raises; this says so to the type checker)."""
    context.abort(code, message)
    raise AssertionError("unreachable")  # pragma: no cover


class _CallCancelledError(Exception):
    """The client cancelled the RPC, so the provider call was cancelled."""


class _Call:
    """One unary RPC's trio side: a cancel scope the RPC's end cancels."""

    def __init__(self, token: trio.lowlevel.TrioToken) -> None:
        self._token = token
        self._scope: trio.CancelScope | None = None
        self._cancelled = False

    def rpc_done(self) -> None:  # grpc thread, also after a normal finish (harmless then)
        with contextlib.suppress(trio.RunFinishedError):
            self._token.run_sync_soon(self._cancel)

    def _cancel(self) -> None:
        self._cancelled = True
        if self._scope is not None:
            self._scope.cancel()

    async def run(self, fn: Callable[..., Awaitable[T]], *args: Any) -> T:
        with trio.CancelScope() as scope:
            self._scope = scope
            if self._cancelled:
                scope.cancel()
            return await fn(*args)
        raise _CallCancelledError


class Service:
    """Both servicers' logic; the generated base classes only route to it."""

    def __init__(
        self,
        provider: agentapi.Provider,
        nursery: trio.Nursery,
        token: trio.lowlevel.TrioToken,
        event_buffer: int,
        max_conversations: int,
    ) -> None:
        self.provider = provider
        self.max_conversations = max_conversations
        self.nursery = nursery
        self.token = token
        self.event_buffer = event_buffer
        self.served: dict[str, Served] = {}
        #: Host tool calls of the utility calls running, by their handle (trio thread).
        self.utilities: dict[str, ServedHostCalls] = {}

    # -- plumbing ------------------------------------------------------------------------

    def call(self, context: grpc.ServicerContext, fn: Callable[..., Awaitable[T]], *args: Any) -> T:
        """Run fn in trio for this RPC; map its failure to a status + ErrorInfo."""
        rpc = _Call(self.token)
        if not context.add_callback(rpc.rpc_done):
            _fail(context, grpc.StatusCode.CANCELLED, "call ended before it started")
        try:
            return trio.from_thread.run(rpc.run, fn, *args, trio_token=self.token)
        except trio.RunFinishedError:
            _fail(context, grpc.StatusCode.UNAVAILABLE, "the provider server is shutting down")
        except _CallCancelledError:
            _fail(context, grpc.StatusCode.CANCELLED, "call cancelled")
        except Exception as exc:
            self.fail_with(context, exc)

    def fail_with(self, context: grpc.ServicerContext, exc: Exception) -> NoReturn:
        """End the RPC with the status and ErrorInfo of the provider's failure ``exc``."""
        if isinstance(exc, InvalidMessage):
            self._abort(context, grpc.StatusCode.INVALID_ARGUMENT, "", str(exc))
        if isinstance(exc, agentapi.HostToolClash):
            self._abort(context, errors.status_for(exc), exc.reason, str(exc), exc.tools)
        if isinstance(exc, agentapi.AgentAPIError):
            self._abort(context, errors.status_for(exc), exc.reason, str(exc))
        log.warning("provider call failed: %s", type(exc).__name__)
        self._abort(context, grpc.StatusCode.UNKNOWN, "", str(exc) or type(exc).__name__)

    @staticmethod
    def _abort(
        context: grpc.ServicerContext,
        code: grpc.StatusCode,
        reason: str,
        msg: str,
        host_tools: tuple[str, ...] = (),
    ) -> NoReturn:
        """Fail the RPC with ErrorInfo(reason, msg, host_tools): an error the provider raised."""
        context.set_trailing_metadata(errors.error_trailer(reason, msg, host_tools))
        _fail(context, code, msg)

    def decode(self, context: grpc.ServicerContext, message: Any, model: type[M]) -> M:
        """The request's agentapi value, or INVALID_ARGUMENT naming what is wrong."""
        try:
            return from_proto(message, model)
        except InvalidMessage as exc:
            self._abort(context, grpc.StatusCode.INVALID_ARGUMENT, "", str(exc))

    def lookup(self, context: grpc.ServicerContext, handle: str) -> agentapi.Conversation:
        served = self.served.get(handle)
        if served is None or served.conversation is None or served.dropped:
            self._abort(
                context,
                grpc.StatusCode.FAILED_PRECONDITION,
                agentapi.Closed.reason,
                "conversation is closed",
            )
        return served.conversation

    def schedule_drop(self, served: Served) -> None:
        """Close a conversation whose stream is gone (any thread)."""
        with contextlib.suppress(trio.RunFinishedError):
            self.token.run_sync_soon(self._drop_soon, served)

    def _drop_soon(self, served: Served) -> None:
        if not served.dropped:
            served.dropped = True
            self.nursery.start_soon(self._close, served)

    @staticmethod
    def _end(served: Served) -> None:
        """No more events; host tool calls still waiting fail (trio thread)."""
        served.end()
        if served.host_calls is not None:
            served.host_calls.end()

    async def _close(self, served: Served) -> None:
        self.served.pop(served.handle, None)
        self._end(served)
        if served.conversation is not None:
            try:
                await served.conversation.close()
            except Exception as exc:  # already closed or its runtime is gone: nothing to keep
                log.info("closing dropped conversation: %s", type(exc).__name__)

    async def _attach_grace(self, served: Served) -> None:
        with trio.move_on_after(ATTACH_GRACE_SECONDS):
            await served.attached_event.wait()
            return
        log.info("no event stream attached within %ss; closing", ATTACH_GRACE_SECONDS)
        self._drop_soon(served)

    # -- provider ------------------------------------------------------------------------

    def info(self) -> pb.ProviderInfo:
        p = self.provider
        caps = p.capabilities()
        return pb.ProviderInfo(
            name=p.name(),
            display_name=p.display_name(),
            capabilities=to_proto(caps),
            history_reader=isinstance(p, agentapi.HistoryReader),
            history_pager=isinstance(p, agentapi.HistoryPager),
            titler=isinstance(p, agentapi.Titler),
            subagent_pager=isinstance(p, agentapi.SubagentPager),
            quota_reporter=isinstance(p, agentapi.QuotaReporter),
            utility_runner=isinstance(p, agentapi.UtilityRunner),
        )

    async def open(self, request: pb.OpenRequest) -> pb.OpenResponse:
        if len(self.served) >= self.max_conversations:
            # Each open conversation's event stream holds a worker thread; one more would
            # queue behind the others forever, so refuse it plainly instead.
            raise RuntimeError(
                f"the provider server already holds {self.max_conversations} open conversations"
            )
        served = Served(secrets.token_urlsafe(12), self.event_buffer)
        extra: dict[str, Any] = {"events": served}
        if request.tools:
            served.host_calls = ServedHostCalls(self.event_buffer)
            extra["call_tool"] = served.host_calls.call_tool
        req = from_proto(request, agentapi.OpenRequest, **extra)
        conversation = await self.provider.open(req)
        served.conversation = conversation
        self.served[served.handle] = served
        self.nursery.start_soon(self._attach_grace, served)
        return pb.OpenResponse(handle=served.handle, conversation_id=conversation.id())

    async def shutdown(self) -> None:
        for served in list(self.served.values()):
            served.dropped = True
            self.served.pop(served.handle, None)
            self._end(served)
        await self.provider.shutdown()

    async def read_history(self, request: pb.ReadRequest) -> pb.History:
        if not isinstance(self.provider, agentapi.HistoryReader):
            raise agentapi.Unsupported("the provider cannot read history")
        req = from_proto(request, agentapi.ReadRequest)
        history: agentapi.History = await self.provider.read_history(req)
        return to_proto(history)

    async def read_history_window(self, request: pb.WindowRequest) -> pb.HistoryWindow:
        if not isinstance(self.provider, agentapi.HistoryPager):
            raise agentapi.Unsupported("the provider cannot page history")
        req = from_proto(request, agentapi.WindowRequest)
        window: agentapi.HistoryWindow = await self.provider.read_history_window(req)
        return to_proto(window)

    async def read_subagents(self, request: pb.SubagentRequest) -> pb.SubagentWindow:
        if not isinstance(self.provider, agentapi.SubagentPager):
            raise agentapi.Unsupported("the provider cannot page subagents")
        req = from_proto(request, agentapi.SubagentRequest)
        window: agentapi.SubagentWindow = await self.provider.read_subagents(req)
        return to_proto(window)

    async def quota(self) -> pb.QuotaResponse:
        if not isinstance(self.provider, agentapi.QuotaReporter):
            raise agentapi.Unsupported("the provider reports no quota")
        quotas: list[agentapi.Quota] = await self.provider.quota()
        return pb.QuotaResponse(quotas=[to_proto(q) for q in quotas])

    async def title(self, request: pb.TitleRequest) -> pb.TitleResponse:
        if not isinstance(self.provider, agentapi.Titler):
            raise agentapi.Unsupported("the provider cannot title")
        usage: list[agentapi.UtilityUsage] = []
        req = from_proto(request, agentapi.TitleRequest, on_usage=usage.append)
        title = await self.provider.title(req)
        reply = pb.TitleResponse(title=title)
        if usage:
            reply.usage.CopyFrom(to_proto(usage[-1]))
        return reply

    # -- conversation --------------------------------------------------------------------

    def events(
        self, request: pb.ConversationRef, context: grpc.ServicerContext
    ) -> Iterator[pb.EventBatch]:
        served = self.served.get(request.handle)
        if served is None or served.dropped:
            self._abort(
                context, grpc.StatusCode.FAILED_PRECONDITION, agentapi.Closed.reason, "closed"
            )
        if not served.attach():
            self._abort(
                context, grpc.StatusCode.FAILED_PRECONDITION, "", "events already subscribed"
            )
        try:
            self.token.run_sync_soon(served.attached_event.set)
        except trio.RunFinishedError:
            _fail(context, grpc.StatusCode.UNAVAILABLE, "the provider server is shutting down")
        context.add_callback(served.wake)
        try:
            while True:
                batch, ended = served.take(context.is_active)
                if not context.is_active():
                    return
                for start in range(0, len(batch), MAX_BATCH):
                    chunk = batch[start : start + MAX_BATCH]
                    exit_at = next(
                        (i for i, e in enumerate(chunk) if e.kind == agentapi.EventKind.EXIT),
                        None,
                    )
                    if exit_at is not None:  # the conversation is unusable: end the stream
                        yield pb.EventBatch(events=[to_proto(e) for e in chunk[: exit_at + 1]])
                        return
                    yield pb.EventBatch(events=[to_proto(e) for e in chunk])
                if ended:
                    if served.overflowed:
                        _fail(
                            context,
                            grpc.StatusCode.RESOURCE_EXHAUSTED,
                            "event consumer too slow: buffer overflowed; conversation closed",
                        )
                    return
        finally:
            # Whatever ended the stream (Close, exit, overflow, the client going away), the
            # conversation must not outlive it; after Close this is a no-op.
            self.schedule_drop(served)

    async def close(self, handle: str) -> None:
        served = self.served.pop(handle, None)
        if served is None or served.dropped or served.conversation is None:
            return  # closing twice, or after an exit, is a no-op
        served.dropped = True
        try:
            await served.conversation.close()
        finally:
            self._end(served)

    def host_tool_calls(
        self, request: pb.ConversationRef, context: grpc.ServicerContext
    ) -> Iterator[pb.HostToolRequest]:
        served = self.served.get(request.handle)
        if served is None or served.dropped:
            self._abort(
                context, grpc.StatusCode.FAILED_PRECONDITION, agentapi.Closed.reason, "closed"
            )
        calls = served.host_calls
        if calls is None:
            self._abort(
                context, grpc.StatusCode.FAILED_PRECONDITION, "", "opened without host tools"
            )
        if not calls.attach():
            self._abort(
                context,
                grpc.StatusCode.FAILED_PRECONDITION,
                "",
                "host tool calls already subscribed",
            )
        yield from self._drain(calls, context)

    async def host_tool_return(self, request: pb.HostToolReply) -> None:
        served = self.served.get(request.handle)
        calls = served.host_calls if served is not None else self.utilities.get(request.handle)
        if calls is None:
            return  # closed or finished meanwhile: nothing waits for it any more
        calls.answer(request.id, from_proto(request.result, agentapi.HostToolResult))

    def run_utility(
        self, request: pb.UtilityRequest, context: grpc.ServicerContext
    ) -> Iterator[pb.UtilityUpdate]:
        """UtilityRunner over a stream: host tool calls while it runs, then the reply."""
        provider = self.provider
        if not isinstance(provider, agentapi.UtilityRunner):
            self._abort(
                context,
                grpc.StatusCode.UNIMPLEMENTED,
                agentapi.Unsupported.reason,
                "the provider runs no utility calls",
            )
        handle = secrets.token_urlsafe(12)
        calls = ServedHostCalls(
            self.event_buffer, wrap=lambda call: pb.UtilityUpdate(handle=handle, call=call)
        )
        usage: list[agentapi.UtilityUsage] = []
        req = self.decode_with(
            context,
            request,
            agentapi.UtilityRequest,
            call_tool=calls.call_tool,
            on_usage=usage.append,
        )
        scope = trio.CancelScope()
        failure: list[Exception] = []

        async def run() -> None:
            try:
                with scope:
                    text = await provider.run_utility(req)
                    done = pb.UtilityResponse(text=text)
                    if usage:
                        done.usage.CopyFrom(to_proto(usage[-1]))
                    calls.finish(pb.UtilityUpdate(handle=handle, done=done))
            except Exception as exc:
                failure.append(exc)
            finally:
                calls.end()
                self.utilities.pop(handle, None)

        def start() -> None:
            self.utilities[handle] = calls
            self.nursery.start_soon(run)

        try:
            trio.from_thread.run_sync(start, trio_token=self.token)
        except trio.RunFinishedError:
            _fail(context, grpc.StatusCode.UNAVAILABLE, "the provider server is shutting down")
        context.add_callback(lambda: self._cancel_soon(scope))
        if not (yield from self._drain(calls, context)):
            return
        if failure:
            self.fail_with(context, failure[0])

    @staticmethod
    def _drain(
        calls: ServedHostCalls, context: grpc.ServicerContext
    ) -> Generator[Message, None, bool]:
        """Yield the queued messages until the queue ends (True) or the RPC goes away (False)."""
        context.add_callback(calls.wake)
        while True:
            batch, ended = calls.take(context.is_active)
            if not context.is_active():
                return False
            yield from batch
            if ended:
                return True

    def _cancel_soon(self, scope: trio.CancelScope) -> None:
        with contextlib.suppress(trio.RunFinishedError):
            self.token.run_sync_soon(scope.cancel)

    def decode_with(
        self, context: grpc.ServicerContext, message: Any, model: type[M], **extra: Any
    ) -> M:
        """The request's agentapi value with callbacks added, or INVALID_ARGUMENT."""
        try:
            return from_proto(message, model, **extra)
        except InvalidMessage as exc:
            self._abort(context, grpc.StatusCode.INVALID_ARGUMENT, "", str(exc))


class ProviderServicer(pb_grpc.ProviderServiceServicer):
    def __init__(self, service: Service) -> None:
        self.s = service

    def Info(self, request: pb.InfoRequest, context: grpc.ServicerContext) -> pb.ProviderInfo:
        async def info() -> pb.ProviderInfo:
            return self.s.info()

        return self.s.call(context, info)

    def Check(self, request: Any, context: grpc.ServicerContext) -> Any:
        self.s.call(context, self.s.provider.check)
        return EMPTY

    def Models(self, request: Any, context: grpc.ServicerContext) -> pb.ModelsResponse:
        models = self.s.call(context, self.s.provider.models)
        return pb.ModelsResponse(models=[to_proto(m) for m in models])

    def Open(self, request: pb.OpenRequest, context: grpc.ServicerContext) -> pb.OpenResponse:
        return self.s.call(context, self.s.open, request)

    def Shutdown(self, request: Any, context: grpc.ServicerContext) -> Any:
        self.s.call(context, self.s.shutdown)
        return EMPTY

    def ReadHistory(self, request: pb.ReadRequest, context: grpc.ServicerContext) -> pb.History:
        return self.s.call(context, self.s.read_history, request)

    def ReadHistoryWindow(
        self, request: pb.WindowRequest, context: grpc.ServicerContext
    ) -> pb.HistoryWindow:
        return self.s.call(context, self.s.read_history_window, request)

    def Title(self, request: pb.TitleRequest, context: grpc.ServicerContext) -> pb.TitleResponse:
        return self.s.call(context, self.s.title, request)

    def ReadSubagents(
        self, request: pb.SubagentRequest, context: grpc.ServicerContext
    ) -> pb.SubagentWindow:
        return self.s.call(context, self.s.read_subagents, request)

    def Quota(self, request: Any, context: grpc.ServicerContext) -> pb.QuotaResponse:
        return self.s.call(context, self.s.quota)

    def RunUtility(
        self, request: pb.UtilityRequest, context: grpc.ServicerContext
    ) -> Iterator[pb.UtilityUpdate]:
        return self.s.run_utility(request, context)


class ConversationServicer(pb_grpc.ConversationServiceServicer):
    def __init__(self, service: Service) -> None:
        self.s = service

    def _conv(self, context: grpc.ServicerContext, handle: str) -> agentapi.Conversation:
        return self.s.lookup(context, handle)

    def Events(
        self, request: pb.ConversationRef, context: grpc.ServicerContext
    ) -> Iterator[pb.EventBatch]:
        return self.s.events(request, context)

    def History(self, request: pb.ConversationRef, context: grpc.ServicerContext) -> pb.History:
        history = self.s.call(context, self._conv(context, request.handle).history)
        return to_proto(history)

    def Send(self, request: pb.PromptRequest, context: grpc.ServicerContext) -> Any:
        prompt = self.s.decode(context, request.prompt, agentapi.Prompt)
        self.s.call(context, self._conv(context, request.handle).send, prompt)
        return EMPTY

    def Commands(self, request: pb.ConversationRef, context: grpc.ServicerContext) -> Any:
        commands = self.s.call(context, self._conv(context, request.handle).commands)
        return pb.CommandsResponse(commands=[to_proto(c) for c in commands])

    def RunCommand(self, request: pb.RunCommandRequest, context: grpc.ServicerContext) -> Any:
        args = self.s.decode(context, request.args, agentapi.Prompt)
        conv = self._conv(context, request.handle)
        self.s.call(context, conv.run_command, request.name, args)
        return EMPTY

    def Steer(self, request: pb.PromptRequest, context: grpc.ServicerContext) -> Any:
        prompt = self.s.decode(context, request.prompt, agentapi.Prompt)
        self.s.call(context, self._conv(context, request.handle).steer, prompt)
        return EMPTY

    def Cancel(self, request: pb.ConversationRef, context: grpc.ServicerContext) -> Any:
        self.s.call(context, self._conv(context, request.handle).cancel)
        return EMPTY

    def CancelSubagent(self, request: pb.SubagentRef, context: grpc.ServicerContext) -> Any:
        conv = self._conv(context, request.handle)
        self.s.call(context, conv.cancel_subagent, request.agent_id)
        return EMPTY

    def PromptSubagent(
        self, request: pb.PromptSubagentRequest, context: grpc.ServicerContext
    ) -> Any:
        conv = self._conv(context, request.handle)
        self.s.call(context, conv.prompt_subagent, request.agent_id, request.text)
        return EMPTY

    def Respond(self, request: pb.RespondRequest, context: grpc.ServicerContext) -> Any:
        answer = self.s.decode(context, request.answer, agentapi.Answer)
        conv = self._conv(context, request.handle)
        self.s.call(context, conv.respond, request.interaction_id, answer)
        return EMPTY

    def Diff(self, request: pb.ConversationRef, context: grpc.ServicerContext) -> Any:
        files = self.s.call(context, self._conv(context, request.handle).diff)
        return pb.DiffResponse(files=[to_proto(f) for f in files])

    def SetModel(self, request: pb.SetModelRequest, context: grpc.ServicerContext) -> Any:
        conv = self._conv(context, request.handle)
        self.s.call(context, conv.set_model, request.model, request.effort, request.context_size)
        return EMPTY

    def SetTitle(self, request: pb.SetTitleRequest, context: grpc.ServicerContext) -> Any:
        conv = self._conv(context, request.handle)
        self.s.call(context, conv.set_title, request.title)
        return EMPTY

    def Close(self, request: pb.ConversationRef, context: grpc.ServicerContext) -> Any:
        self.s.call(context, self.s.close, request.handle)
        return EMPTY

    def HostToolCalls(
        self, request: pb.ConversationRef, context: grpc.ServicerContext
    ) -> Iterator[pb.HostToolRequest]:
        return self.s.host_tool_calls(request, context)

    def HostToolReturn(self, request: pb.HostToolReply, context: grpc.ServicerContext) -> Any:
        self.s.call(context, self.s.host_tool_return, request)
        return EMPTY
