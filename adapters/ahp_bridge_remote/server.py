"""Serve any agentapi Provider over gRPC (agentapi.v1), from a trio program.

``serve`` runs grpcio's thread-pool server beside the provider (servicers in service.py,
event queues in served.py). Run standalone:
``python -m ahp_bridge_remote.server --provider fake --listen unix:/tmp/p.sock``
(the token, when needed, comes from the environment variable AHP_BRIDGE_REMOTE_TOKEN).
"""

from __future__ import annotations

import argparse
import os
import signal
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from importlib.metadata import entry_points
from typing import Any

import grpc
import trio

from ahp_bridge import agentapi

from . import auth
from ._gen.agentapi.v1 import agentapi_pb2_grpc as pb_grpc
from .service import ConversationServicer, ProviderServicer, Service

TOKEN_ENV = "AHP_BRIDGE_REMOTE_TOKEN"
DEFAULT_EVENT_BUFFER = 65536
RESERVED_WORKERS = 16  # worker threads kept for unary calls beside the event streams
# Ping clients every 30 s, so a bridge that vanished without a reset is noticed and its
# conversations closed, and accept their pings (every 5 minutes) even between calls.
SERVER_OPTIONS = (
    ("grpc.keepalive_time_ms", 30_000),
    ("grpc.keepalive_timeout_ms", 10_000),
    ("grpc.keepalive_permit_without_calls", 1),
    ("grpc.http2.min_recv_ping_interval_without_data_ms", 15_000),
    ("grpc.http2.max_ping_strikes", 0),
    ("grpc.max_receive_message_length", 64 << 20),
    ("grpc.max_send_message_length", 64 << 20),
)


async def serve(
    provider: agentapi.Provider,
    listen: str,
    *,
    token: str | None = None,
    task_status: trio.TaskStatus[str] = trio.TASK_STATUS_IGNORED,
    max_workers: int = 256,
    event_buffer: int = DEFAULT_EVENT_BUFFER,
) -> None:
    """Serve provider on listen (``unix:PATH`` or ``HOST:PORT``) until cancelled.

    Enters ``async with provider`` for the server's lifetime, so leaving shuts it down.
    task_status.started receives the bound address (the real port when PORT was 0).
    A non-loopback address requires token; when given, every call must present it.
    max_workers bounds concurrent RPCs; each open conversation's event stream holds one,
    so at most max_workers - RESERVED_WORKERS conversations are open at once (Open refuses
    more). event_buffer bounds the events queued for one slow stream before the server
    gives up on it (the client sees an exit) rather than grow without bound.
    """
    if max_workers <= RESERVED_WORKERS:
        raise ValueError(f"max_workers must exceed {RESERVED_WORKERS}")
    auth.check_listen(listen, token)
    interceptors = [auth.TokenInterceptor(token)] if token is not None else []
    pool = ThreadPoolExecutor(max_workers=max_workers, thread_name_prefix="agentapi-grpc")
    server = grpc.server(pool, interceptors=interceptors, options=SERVER_OPTIONS)
    async with provider, trio.open_nursery() as nursery:
        service = Service(
            provider,
            nursery,
            trio.lowlevel.current_trio_token(),
            event_buffer,
            max_workers - RESERVED_WORKERS,
        )
        pb_grpc.add_ProviderServiceServicer_to_server(ProviderServicer(service), server)
        pb_grpc.add_ConversationServiceServicer_to_server(ConversationServicer(service), server)
        port = server.add_insecure_port(listen)
        if port == 0 and not listen.startswith("unix"):
            raise auth.AddressError(f"cannot listen on {listen!r}")
        bound = listen
        if not listen.startswith("unix"):
            host, _ = auth.split_host_port(listen)
            bound = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
        server.start()
        try:
            task_status.started(bound)
            await trio.sleep_forever()
        finally:
            for served in list(service.served.values()):
                served.end()
            with trio.CancelScope(shield=True):
                stopped = server.stop(grace=1.0)
                await trio.to_thread.run_sync(stopped.wait)
                await trio.to_thread.run_sync(pool.shutdown)
            nursery.cancel_scope.cancel()


def load_provider(name: str, options: Mapping[str, Any]) -> agentapi.Provider:
    """The provider registered as name in the ``ahp_bridge.providers`` entry-point group."""
    found = entry_points(group="ahp_bridge.providers", name=name)
    if not found:
        raise SystemExit(f"no provider named {name!r} is installed")
    factory = next(iter(found)).load()
    provider: agentapi.Provider = factory(options)
    return provider


def main(argv: list[str] | None = None) -> None:
    """``python -m ahp_bridge_remote.server --provider NAME --listen ADDR [--option K=V]``.

    Prints ``listening on ADDR`` once serving; SIGTERM or SIGINT stop it cleanly.
    """
    parser = argparse.ArgumentParser(prog="python -m ahp_bridge_remote.server")
    parser.add_argument("--provider", required=True, help="an ahp_bridge.providers entry point")
    parser.add_argument("--listen", required=True, help="unix:PATH or HOST:PORT")
    parser.add_argument(
        "--option", action="append", default=[], metavar="KEY=VALUE", help="a provider option"
    )
    args = parser.parse_args(argv)
    options: dict[str, str] = {}
    for pair in args.option:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            parser.error(f"--option expects KEY=VALUE, got {pair!r}")
        options[key] = value
    token = os.environ.get(TOKEN_ENV) or None
    try:
        auth.check_listen(args.listen, token)
        provider = load_provider(args.provider, options)
    except ValueError as exc:
        parser.error(str(exc))

    async def run() -> None:
        with trio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
            async with trio.open_nursery() as nursery:
                bound = await nursery.start(partial(serve, provider, args.listen, token=token))
                print(f"listening on {bound}", flush=True)
                async for _ in signals:
                    nursery.cancel_scope.cancel()
                    break

    trio.run(run)


if __name__ == "__main__":
    main()
