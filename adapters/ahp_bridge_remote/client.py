"""RemoteProvider: an agentapi Provider whose runtime is a provider served over gRPC.

Unary calls use grpcio's synchronous stubs through ``.future()``: the future's done-callback
wakes the trio task (no worker thread per call), and every exit path cancels the future, so
cancelling the caller cancels the call on the server. Each open conversation's Events stream
is drained by one worker thread (its own CapacityLimiter, so streams never starve other
``to_thread`` users); see conversation.py.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import math
from collections.abc import Mapping
from typing import Any

import grpc
import trio
from ahp_bridge_support import ProviderLifetime
from google.protobuf import empty_pb2

from ahp_bridge import agentapi

from . import auth, errors
from ._gen.agentapi.v1 import agentapi_pb2 as pb
from ._gen.agentapi.v1 import agentapi_pb2_grpc as pb_grpc
from .conversation import RemoteConversation
from .convert import from_proto, to_proto
from .host_calls import HostCallRunner

EMPTY = empty_pb2.Empty()

log = logging.getLogger(__name__)

#: How long the first call may take before a missing server is reported (it is then awaited
#: for the rest of connect_timeout: a provider started at the same time still gets in).
FIRST_CONTACT = 2.0

# Reconnect quickly once a restarted server is back (gRPC's default backoff reaches 120 s).
# While a conversation's stream is open, ping every 5 minutes, so a server that vanished
# without a reset is noticed; 5 minutes is the shortest interval gRPC servers accept by
# default (Go's and C-core's keepalive enforcement), so any conforming server works.
CHANNEL_OPTIONS = (
    ("grpc.initial_reconnect_backoff_ms", 100),
    ("grpc.min_reconnect_backoff_ms", 100),
    ("grpc.max_reconnect_backoff_ms", 1000),
    ("grpc.keepalive_time_ms", 300_000),
    ("grpc.keepalive_timeout_ms", 20_000),
    ("grpc.max_receive_message_length", 64 << 20),
    ("grpc.max_send_message_length", 64 << 20),
)


async def _wait_future(future: grpc.Future) -> None:
    """Wait for a grpc future from trio; cancel it on every exit path."""
    token = trio.lowlevel.current_trio_token()
    done = trio.Event()

    def wake(_f: grpc.Future) -> None:  # grpc thread, or this one when already done
        with contextlib.suppress(trio.RunFinishedError):
            token.run_sync_soon(done.set)

    future.add_done_callback(wake)
    try:
        await done.wait()
    finally:
        future.cancel()


class RemoteProvider(ProviderLifetime):
    """agentapi.Provider over gRPC. Options: address (``unix:PATH`` or ``HOST:PORT``), token.

    ``async with`` connects (waiting up to connect_timeout for the server) and reads the served
    provider's name and capabilities; leaving closes this client's conversations (waiting for
    that at most connect_timeout). The served provider's runtimes are stopped only by
    shutdown(stop_remote=True) or owns_server=True.
    """

    _lifetime_name = "the remote provider"

    def __init__(
        self,
        address: str,
        *,
        token: str | None = None,
        connect_timeout: float = 10.0,
        max_streams: int = 256,
        owns_server: bool = False,
    ) -> None:
        if not address.startswith(("unix:", "unix-abstract:")):
            auth.split_host_port(address)  # validates
        self._address = address
        self.metadata = auth.bearer(token) if token else ()
        self._connect_timeout = connect_timeout
        self._shutdown_timeout = connect_timeout
        self._owns_server = owns_server
        self.stream_limiter = trio.CapacityLimiter(max_streams)
        self._channel: grpc.Channel | None = None
        self._connected = False  # False until a call succeeds, and after UNAVAILABLE
        self._info: pb.ProviderInfo | None = None
        self._capabilities: agentapi.Capabilities | None = None
        self.conversations: set[RemoteConversation] = set()

    # -- lifetime ------------------------------------------------------------------------

    async def _on_start(self) -> None:
        self._channel = grpc.insecure_channel(self._address, options=CHANNEL_OPTIONS)
        self._provider = pb_grpc.ProviderServiceStub(self._channel)
        self.conversations_rpc = pb_grpc.ConversationServiceStub(self._channel)
        info = await self._first_info()
        self._info = info
        served = from_proto(info.capabilities, agentapi.Capabilities)
        hidden = dict.fromkeys(UNFORWARDED_CAPABILITIES, False)
        hidden["usage"] = served.usage and info.quota_reporter  # QuotaReporter forwarded
        hidden["titles"] = served.titles and info.titler
        self._capabilities = served.model_copy(update=hidden)
        variant: type = _variant(tuple(bool(getattr(info, f)) for f, _ in _MIXINS))
        self.__class__ = variant

    async def _on_stop(self) -> None:
        if self._channel is not None:
            self._channel.close()

    # -- calls ---------------------------------------------------------------------------

    def _serve_hint(self) -> str:
        return (
            f"start one with `ahp-bridge serve-provider --provider NAME --listen {self._address}`, "
            "or fix address in [providers.remote]"
        )

    async def _first_info(self) -> pb.ProviderInfo:
        """Info, saying at once when nothing answers (then waiting up to connect_timeout)."""
        future = self._provider.Info.future(
            pb.InfoRequest(),
            metadata=self.metadata,
            timeout=min(FIRST_CONTACT, self._connect_timeout),
        )
        await _wait_future(future)
        try:
            info: pb.ProviderInfo = future.result()
        except grpc.RpcError as exc:
            error = errors.from_rpc_error(exc, where="info")
            if not isinstance(error, errors.RemoteUnavailable):
                raise error from None
            log.warning(
                "no provider answers at %s; waiting up to %gs for one (%s)",
                self._address,
                self._connect_timeout,
                self._serve_hint(),
            )
        else:
            self._connected = True
            return info
        try:
            waited = await self._ready("info")
        except errors.RemoteNotConnected:
            raise errors.RemoteNotConnected(
                f"no provider is serving at {self._address}: {self._serve_hint()}",
                grpc.StatusCode.UNAVAILABLE,
            ) from None
        assert waited is not None  # not connected yet, so _ready asked
        return waited

    async def _ready(self, where: str) -> pb.ProviderInfo | None:
        """Wait (up to connect_timeout) for the server when the last call found it gone.

        A cheap Info call with wait_for_ready stands in for channel connectivity watching,
        whose polling thread races channel.close() in grpcio. Returns its ProviderInfo, or
        None when already connected (no call made).
        """
        if self._connected:
            return None
        if self._channel is None:
            raise errors.RemoteNotConnected(f"{where}: the provider is not started")
        future = self._provider.Info.future(
            pb.InfoRequest(),
            metadata=self.metadata,
            wait_for_ready=True,
            timeout=self._connect_timeout,
        )
        await _wait_future(future)
        try:
            info: pb.ProviderInfo = future.result()
        except grpc.RpcError as exc:
            error = errors.from_rpc_error(exc, where=where)
            if isinstance(error, errors.RemoteUnavailable):
                raise errors.RemoteNotConnected(
                    f"{where}: provider at {self._address} unreachable "
                    f"for {self._connect_timeout:g}s",
                    grpc.StatusCode.UNAVAILABLE,
                ) from None
            raise error from None
        self._connected = True
        return info

    async def _call(self, method: Any, request: Any, where: str) -> Any:
        await self._ready(where)
        future = method.future(request, metadata=self.metadata)
        await _wait_future(future)
        try:
            return future.result()
        except grpc.RpcError as exc:
            error = errors.from_rpc_error(exc, where=where)
            if isinstance(error, errors.RemoteUnavailable):
                self._connected = False
            raise error from None

    # -- agentapi.Provider ---------------------------------------------------------------

    def name(self) -> str:
        return self._info.name if self._info is not None else "remote"

    def display_name(self) -> str:
        return self._info.display_name if self._info is not None else "Remote provider"

    def capabilities(self) -> agentapi.Capabilities:
        return self._capabilities or agentapi.Capabilities()

    async def check(self) -> None:
        self._require_started()
        await self._call(self._provider.Check, EMPTY, "check")

    async def models(self) -> list[agentapi.Model]:
        self._require_started()
        reply = await self._call(self._provider.Models, EMPTY, "models")
        return [from_proto(m, agentapi.Model) for m in reply.models]

    async def open(self, req: agentapi.OpenRequest) -> RemoteConversation:
        nursery = self._turn_nursery()
        reply = await self._call(self._provider.Open, to_proto(req), "open")
        conversation = RemoteConversation(self, reply.handle, reply.conversation_id, req.events)
        self.conversations.add(conversation)
        with trio.CancelScope(shield=True):  # opened: never leave it without its stream
            await nursery.start(conversation.pump_task)
            if req.tools and req.call_tool is not None:
                await nursery.start(conversation.host_pump_task, req.call_tool)
        return conversation

    async def shutdown(self, *, stop_remote: bool | None = None) -> None:
        """Close this client's conversations; with stop_remote also the served provider."""
        async with trio.open_nursery() as nursery:
            for conversation in list(self.conversations):
                nursery.start_soon(conversation.close)
        if self._owns_server if stop_remote is None else stop_remote:
            await self._call(self._provider.Shutdown, EMPTY, "shutdown")


class _HistoryReader(RemoteProvider):
    """agentapi.HistoryReader, mixed in when the served provider is one."""

    async def read_history(self, req: agentapi.ReadRequest) -> agentapi.History:
        self._require_started()
        reply = await self._call(self._provider.ReadHistory, to_proto(req), "read_history")
        return from_proto(reply, agentapi.History)


class _HistoryPager(RemoteProvider):
    """agentapi.HistoryPager, mixed in when the served provider is one."""

    async def read_history_window(self, req: agentapi.WindowRequest) -> agentapi.HistoryWindow:
        self._require_started()
        reply = await self._call(self._provider.ReadHistoryWindow, to_proto(req), "history page")
        return from_proto(reply, agentapi.HistoryWindow)


class _Titler(RemoteProvider):
    """agentapi.Titler, mixed in when the served provider is one."""

    async def title(self, req: agentapi.TitleRequest) -> str:
        self._require_started()
        reply = await self._call(self._provider.Title, to_proto(req), "title")
        if reply.HasField("usage") and req.on_usage is not None:
            req.on_usage(from_proto(reply.usage, agentapi.UtilityUsage))
        return str(reply.title)


class _SubagentPager(RemoteProvider):
    """agentapi.SubagentPager, mixed in when the served provider is one."""

    async def read_subagents(self, req: agentapi.SubagentRequest) -> agentapi.SubagentWindow:
        self._require_started()
        reply = await self._call(self._provider.ReadSubagents, to_proto(req), "read_subagents")
        return from_proto(reply, agentapi.SubagentWindow)


class _QuotaReporter(RemoteProvider):
    """agentapi.QuotaReporter, mixed in when the served provider is one."""

    async def quota(self) -> list[agentapi.Quota]:
        self._require_started()
        reply = await self._call(self._provider.Quota, EMPTY, "quota")
        return [from_proto(q, agentapi.Quota) for q in reply.quotas]


class _UtilityRunner(RemoteProvider):
    """agentapi.UtilityRunner, mixed in when the served provider is one."""

    async def run_utility(self, req: agentapi.UtilityRequest) -> str:
        self._require_started()
        await self._ready("run_utility")
        stream = self._provider.RunUtility(to_proto(req), metadata=self.metadata)
        handle: list[str] = []

        async def reply(call_id: int, result: agentapi.HostToolResult) -> None:
            message = pb.HostToolReply(handle=handle[0], id=call_id, result=to_proto(result))
            with contextlib.suppress(errors.RemoteError, agentapi.AgentAPIError):
                await self._call(self.conversations_rpc.HostToolReturn, message, "host tool result")

        token = trio.lowlevel.current_trio_token()
        async with trio.open_nursery() as nursery:
            runner = HostCallRunner(req.call_tool or _no_host_tools, reply, nursery)

            def pump() -> Any:
                for update in stream:
                    if update.HasField("done"):
                        return update.done
                    handle[:] = [update.handle]
                    trio.from_thread.run_sync(runner.receive, update.call, trio_token=token)
                return None

            failure: Exception | None = None
            done = None
            try:
                done = await trio.to_thread.run_sync(
                    pump, abandon_on_cancel=True, limiter=self.stream_limiter
                )
            except grpc.RpcError as exc:
                failure = errors.from_rpc_error(exc, where="run_utility")
            finally:
                stream.cancel()
                runner.cancel_all()
        if failure is not None:  # raised out here, not as the nursery's exception group
            raise failure
        if done is None:
            raise errors.RemoteError("run_utility: the provider server sent no reply")
        if done.HasField("usage") and req.on_usage is not None:
            req.on_usage(from_proto(done.usage, agentapi.UtilityUsage))
        return str(done.text)


async def _no_host_tools(call: agentapi.HostToolCall) -> agentapi.HostToolResult:
    return agentapi.HostToolResult(text="This call runs no host tools.", failed=True)


_MIXINS = (
    ("history_reader", _HistoryReader),
    ("history_pager", _HistoryPager),
    ("titler", _Titler),
    ("subagent_pager", _SubagentPager),
    ("quota_reporter", _QuotaReporter),
    ("utility_runner", _UtilityRunner),
)


@functools.cache
def _variant(flags: tuple[bool, ...]) -> type[RemoteProvider]:
    """RemoteProvider plus exactly the optional Protocols the served provider implements.

    Optional capabilities are runtime-checked Protocols, so the client must not have a
    method the served provider lacks (isinstance would claim the capability).
    """
    mixins = tuple(mixin for (_, mixin), on in zip(_MIXINS, flags, strict=True) if on)
    if not mixins:
        return RemoteProvider
    return type("RemoteProvider", mixins, {"__doc__": RemoteProvider.__doc__})


# Capabilities whose Go interfaces this client does not forward (yet): it reports them off,
# so the bridge never offers what a call could not reach.
UNFORWARDED_CAPABILITIES = frozenset(
    {
        "fork",
        "rewind",
        "context_breakdown",
        "usage_metrics",
        "aside",
        "import_",
        "account",
        "device_sign_in",
        "mcp",
        "cli_update",
        "subagent_models",
        "github_mcp",
        "assisted_permissions",
        "custom_agents",
    }
)


_OPTIONS = ("address", "token", "connect_timeout")

#: Options a host gives every provider; the served provider keeps its own data, so unused here.
_HOST_OPTIONS = ("data_dir",)

#: The keys `[providers.NAME]` may hold (None: any value), which the bridge checks when it
#: loads its configuration.
OPTION_KEYS: Mapping[str, Any] = dict.fromkeys((*_OPTIONS, *_HOST_OPTIONS))


def create_provider(options: Mapping[str, Any]) -> RemoteProvider:
    """Entry point ``remote``: options address (required), token, connect_timeout.

    ``data_dir``, which the bridge passes to every provider, is accepted and unused.
    """
    unknown = sorted(set(options) - set(_OPTIONS) - set(_HOST_OPTIONS))
    if unknown:
        raise ValueError(f"unknown remote provider option(s): {', '.join(unknown)}")
    address = options.get("address")
    if not isinstance(address, str) or not address:
        raise ValueError("the remote provider needs option 'address' (unix:PATH or HOST:PORT)")
    token = options.get("token") or None
    if token is not None and not isinstance(token, str):
        raise ValueError("option 'token' must be a string")
    try:
        timeout = float(options.get("connect_timeout", 10.0))
    except (TypeError, ValueError):
        timeout = math.nan
    if not math.isfinite(timeout) or timeout <= 0:
        raise ValueError("option 'connect_timeout' must be a positive number of seconds")
    return RemoteProvider(address, token=token, connect_timeout=timeout)
