"""The chat workers: each chat's provider conversation, and the jobs the engine hands it.

A worker runs one chat's jobs one at a time, in the order the engine handed them out (the engine
hands out the next only when the last one is reported done): open the conversation (with a sink
that feeds its events to the engine and the host tool callback), make one call on it, let it go.
It decides nothing: what to open with, when to reopen, what a failure means are the engine's.
The one job that does not wait its turn is the last: a chat that is gone lets its conversation
go at once, whatever call is still running on it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import structlog
import trio

from ahp_bridge import agentapi
from ahp_bridge.engine import inputs
from ahp_bridge.engine.jobs import (
    CallChat,
    CloseConversation,
    FollowUpFailed,
    Job,
    OpenConversation,
    Opened,
    ReloadCustomizations,
    RestartMcpServer,
    SetMcpServerEnabled,
    SetSkillDisabled,
)
from ahp_bridge.engine.timeouts import Timeouts
from ahp_bridge.host.runtime.sinks import ChatSink
from ahp_bridge.host.shell import Shell
from ahp_bridge.translate.commands import (
    Cancel,
    Respond,
    RunCommand,
    SelectAgent,
    Send,
    SetModel,
    SetTitle,
    Steer,
)

__all__ = ["ChatWorker", "Workers"]

log = structlog.get_logger(__name__)

#: Records a new chat's conversation before the chat is published (durable sessions); returns
#: the turns of an imported conversation, if any.
Recorder = Callable[[str, str, bool, agentapi.Conversation], Awaitable[list[dict[str, Any]] | None]]
#: Reads a session's customizations again (after a change reached the provider).
Reloader = Callable[[str, bool], Awaitable[None]]


class ChatWorker:
    """One chat's conversation and its jobs."""

    def __init__(self, workers: Workers, uri: str, provider: agentapi.Provider) -> None:
        self.workers = workers
        self.shell = workers.shell
        self.uri = uri
        self.provider = provider
        self.conversation: agentapi.Conversation | None = None
        self.sink: ChatSink | None = None
        self._send, self._recv = trio.open_memory_channel[tuple[Job, int | None]](workers.lane_size)
        self.stopped = False

    def submit(self, job: Job, ticket: int | None) -> None:
        if isinstance(job, CloseConversation) and job.stop:
            self.stopped = True
            self._send.close()
            self.shell.nursery.start_soon(self._finish, job, ticket)
            return
        try:
            self._send.send_nowait((job, ticket))
        except (trio.WouldBlock, trio.ClosedResourceError):
            log.warning("chat worker refused a job", chat=self.uri)
            self.shell.done(ticket, error=agentapi.Closed("the chat is closed"))

    async def run(self) -> None:
        async with self._recv:
            async for job, ticket in self._recv:
                try:
                    result = await self._execute(job)
                except Exception as exc:
                    self.shell.done(ticket, error=exc)
                else:
                    self.shell.done(ticket, result=result)

    async def _finish(self, job: CloseConversation, ticket: int | None) -> None:
        await self.let_go(job.doing)
        self.workers.forget(self)
        self.shell.done(ticket)

    # -- the conversation ----------------------------------------------------------------------

    def _deliver(self, sink: ChatSink, events: list[agentapi.Event]) -> None:
        self.shell.feed(inputs.ProviderEvents(self.uri, events))
        if any(e.kind == agentapi.EventKind.EXIT for e in events) and self.sink is sink:
            # The contract: after Exit the conversation is closed; the engine reopens it.
            sink.close()
            self.conversation = None

    async def open(self, job: OpenConversation) -> Opened:
        if job.replacing:
            await self.let_go("close before reopening")
        holder: list[ChatSink] = []
        sink = ChatSink(lambda events: self._deliver(holder[0], events), self.workers.token)
        holder.append(sink)
        request = job.request.model_copy(
            update={
                "events": sink,
                "call_tool": self._call_tool if job.request.tools else None,
            }
        )
        try:
            conversation = await self.provider.open(request)
        except BaseException:
            sink.close()
            raise
        self.sink, self.conversation = sink, conversation
        turns = None
        if job.record and self.workers.record is not None:
            turns = await self.workers.record(
                self.uri, conversation.id(), job.default, conversation
            )
        return Opened(
            conversation.id(), turns, mcp=isinstance(conversation, agentapi.MCPController)
        )

    async def _call_tool(self, call: agentapi.HostToolCall) -> agentapi.HostToolResult:
        if self.sink is not None:
            self.sink.flush()  # the call's own item and its turn come first
        return await self.shell.call_tool(self.uri, call)

    async def let_go(self, doing: str) -> None:
        """Stop listening to the conversation and close it; past `timeouts.close` it is let go
        without waiting (a failure is only logged: the bridge is done with it either way)."""
        conversation, self.conversation = self.conversation, None
        if self.sink is not None:
            self.sink.close()
        if conversation is None:
            return
        with trio.move_on_after(self.workers.timeouts.close):
            try:
                await conversation.close()
            except Exception as exc:
                log.info(f"{doing} failed", chat=self.uri, error=str(exc))

    # -- jobs ----------------------------------------------------------------------------------

    async def _execute(self, job: Job) -> Any:
        if isinstance(job, OpenConversation):
            return await self.open(job)
        if isinstance(job, CloseConversation):
            await self.let_go(job.doing)
            return None
        assert isinstance(job, CallChat)
        call = job.call
        if isinstance(call, ReloadCustomizations):
            if self.workers.reload is not None:
                await self.workers.reload(call.session, call.mcp)
            return None
        conversation = self.conversation
        if conversation is None:
            raise agentapi.Closed("the conversation is closed")
        await self._call(conversation, call)
        for index, follow in enumerate(job.then):
            try:
                await self._call(conversation, follow)
            except Exception as exc:
                raise FollowUpFailed(index, exc) from exc
        return None

    async def _call(self, conversation: agentapi.Conversation, call: Any) -> None:
        match call:
            case SetModel(model=model, effort=effort, context_size=size):
                await conversation.set_model(model, effort, size)
            case Send(prompt=prompt):
                await conversation.send(prompt)
            case RunCommand(name=name, args=args):
                await conversation.run_command(name, args)
            case Cancel():
                await conversation.cancel()
            case Respond(interaction_id=interaction_id, answer=answer):
                await conversation.respond(interaction_id, answer)
            case Steer(prompt=prompt):
                await conversation.steer(prompt)
            case SetTitle(title=title):
                await conversation.set_title(title)
            case SelectAgent(agent_id=agent_id):
                if not isinstance(conversation, agentapi.AgentSelector):
                    raise agentapi.Unsupported("this provider cannot select custom agents")
                await conversation.select_agent(agent_id)
            case SetSkillDisabled(name=name, disabled=disabled):
                provider = self.provider
                assert isinstance(provider, agentapi.SkillGlobalSetter)
                await provider.set_skill_globally_disabled(name, disabled)
                if isinstance(conversation, agentapi.CustomizationsReloader):
                    await conversation.reload_customizations()
            case SetMcpServerEnabled(name=name, enabled=enabled):
                assert isinstance(conversation, agentapi.MCPController)
                await conversation.set_mcp_server_enabled(name, enabled)
            case RestartMcpServer(name=name):
                assert isinstance(conversation, agentapi.MCPController)
                await conversation.restart_mcp_server(name)


class Workers:
    """Every chat's worker, started on the first job for it."""

    def __init__(
        self,
        shell: Shell,
        providers: dict[str, agentapi.Provider],
        provider_of: Callable[[str], str],
        *,
        timeouts: Timeouts,
        lane_size: int,
    ) -> None:
        self.shell = shell
        self.providers = providers
        self.provider_of = provider_of
        self.timeouts = timeouts
        self.lane_size = lane_size
        self.token = trio.lowlevel.current_trio_token()
        self.record: Recorder | None = None
        self.reload: Reloader | None = None
        self._workers: dict[str, ChatWorker] = {}

    def get(self, uri: str) -> ChatWorker | None:
        return self._workers.get(uri)

    def worker(self, uri: str, provider: str) -> ChatWorker:
        """The chat's worker, started now if it has none."""
        worker = self._workers.get(uri)
        if worker is None:
            worker = self._workers[uri] = ChatWorker(self, uri, self.providers[provider])
            self.shell.nursery.start_soon(worker.run)
        return worker

    def conversation(self, uri: str) -> agentapi.Conversation | None:
        worker = self._workers.get(uri)
        return worker.conversation if worker is not None else None

    def submit(self, job: Job, ticket: int | None) -> None:
        assert isinstance(job, CallChat | OpenConversation | CloseConversation)
        if isinstance(job, CloseConversation) and job.chat not in self._workers:
            self.shell.done(ticket)
            return
        worker = self._workers.get(job.chat) or self.worker(job.chat, self.provider_of(job.chat))
        worker.submit(job, ticket)

    def forget(self, worker: ChatWorker) -> None:
        if self._workers.get(worker.uri) is worker:
            del self._workers[worker.uri]

    def detach_all(self) -> None:
        """Host shutdown: stop listening without calling the providers (they close everything)."""
        for worker in list(self._workers.values()):
            if worker.sink is not None:
                worker.sink.close()
            worker.stopped = True
