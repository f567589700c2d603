"""Host tool calls across the wire, both ends.

Server: ``ServedHostCalls`` is the ``call_tool`` a served conversation is opened with. Each call
the provider makes becomes a HostToolRequest queued for the conversation's HostToolCalls stream
(drained by its gRPC worker thread, like the Events queue) and waits, in trio, for the client's
HostToolReturn; when the provider stops waiting first (its call was cancelled), a request with
``cancel`` follows, so the client stops running it. Closing the conversation fails every call
still waiting.

Client: ``HostCallRunner`` runs each call the stream delivers (drained on a worker thread)
with the host's ``call_tool`` in trio, answering with HostToolReturn; a ``cancel`` cancels
that run.
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

import trio
from google.protobuf.message import Message

from ahp_bridge import agentapi

from ._gen.agentapi.v1 import agentapi_pb2 as pb
from .convert import InvalidMessage, from_proto, to_proto
from .stream_queue import StreamQueue

log = logging.getLogger(__name__)


@dataclass
class _Waiting:
    done: trio.Event = field(default_factory=trio.Event)
    result: agentapi.HostToolResult | None = None


class ServedHostCalls(StreamQueue[Message]):
    """A served conversation's (or utility call's) host tool calls: queued for the client,
    answered by it. ``wrap`` turns each HostToolRequest into the stream's message type."""

    def __init__(
        self, limit: int, wrap: Callable[[pb.HostToolRequest], Message] | None = None
    ) -> None:
        super().__init__(limit)
        self._wrap = wrap
        self._ids = itertools.count(1)
        self._waiting: dict[int, _Waiting] = {}

    # -- trio side -----------------------------------------------------------------------

    async def call_tool(self, call: agentapi.HostToolCall) -> agentapi.HostToolResult:
        """OpenRequest.call_tool of the served conversation."""
        if self._ended:
            return agentapi.HostToolResult(text="The conversation is closed.", failed=True)
        call_id = next(self._ids)
        waiting = _Waiting()
        self._waiting[call_id] = waiting
        try:
            if not self._request(pb.HostToolRequest(id=call_id, call=to_proto(call))):
                text = "Too many host tool calls are waiting for the bridge."
                return agentapi.HostToolResult(text=text, failed=True)
            await waiting.done.wait()
        except BaseException:
            if waiting.result is None:
                self._request(pb.HostToolRequest(id=call_id, cancel=True))
            raise
        finally:
            self._waiting.pop(call_id, None)
        assert waiting.result is not None
        return waiting.result

    def answer(self, call_id: int, result: agentapi.HostToolResult) -> None:
        """HostToolReturn: the client's result for one call (late or unknown ids are ignored)."""
        waiting = self._waiting.get(call_id)
        if waiting is not None and waiting.result is None:
            waiting.result = result
            waiting.done.set()

    def end(self) -> None:
        """The conversation closed: the stream ends and every waiting call fails."""
        super().end()
        for waiting in list(self._waiting.values()):
            if waiting.result is None:
                text = "The conversation closed before the host tool call completed."
                waiting.result = agentapi.HostToolResult(text=text, failed=True)
                waiting.done.set()

    def finish(self, last: Message) -> None:
        """Queue the stream's last message and end it (a utility call's reply)."""
        with self._cond:
            self._queue.append(last)
        self.end()

    def _request(self, request: pb.HostToolRequest) -> bool:
        return self.push(self._wrap(request) if self._wrap is not None else request)


Reply = Callable[[int, agentapi.HostToolResult], Awaitable[None]]


class HostCallRunner:
    """Client side: run the stream's calls with the host's call_tool, in the given nursery."""

    def __init__(self, call_tool: agentapi.CallTool, reply: Reply, nursery: trio.Nursery) -> None:
        self._call_tool = call_tool
        self._reply = reply
        self._nursery = nursery
        self._running: dict[int, trio.CancelScope] = {}

    def receive(self, request: pb.HostToolRequest) -> None:
        """One stream message, on the trio thread: start a call or cancel one."""
        if request.cancel:
            scope = self._running.get(request.id)
            if scope is not None:
                scope.cancel()
            return
        try:
            call = from_proto(request.call, agentapi.HostToolCall)
        except InvalidMessage as exc:
            log.warning("invalid host tool call from the provider server: %s", exc)
            text = "The host tool call was malformed."
            result = agentapi.HostToolResult(text=text, failed=True)
            self._nursery.start_soon(self._reply, request.id, result)
            return
        self._nursery.start_soon(self._run, request.id, call)

    async def _run(self, call_id: int, call: agentapi.HostToolCall) -> None:
        with trio.CancelScope() as scope:
            self._running[call_id] = scope
            try:
                result = await self._call_tool(call)
            except Exception as exc:
                log.warning("host tool call failed: %s", type(exc).__name__)
                result = agentapi.HostToolResult(
                    text="The host could not run the tool.", failed=True
                )
            finally:
                self._running.pop(call_id, None)
            await self._reply(call_id, result)

    def cancel_all(self) -> None:
        for scope in list(self._running.values()):
            scope.cancel()
