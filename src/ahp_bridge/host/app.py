"""Composition root: the store, hub, session manager and WebSocket server of one bridge."""

from __future__ import annotations

from pathlib import Path

import structlog
import trio

from ahp_bridge.config import Settings
from ahp_bridge.host.catalog import open_catalog
from ahp_bridge.host.chat import HostClock
from ahp_bridge.host.clients import KnownClients
from ahp_bridge.host.completions import Completions, MentionSource
from ahp_bridge.host.hub import Hub
from ahp_bridge.host.rpc import RpcHandler
from ahp_bridge.host.server import ServerOptions, check_bind, serve
from ahp_bridge.host.sessions import SessionManager
from ahp_bridge.host.workspace import Workspace
from ahp_bridge.state.store import Store

log = structlog.get_logger(__name__)


def server_options(settings: Settings) -> ServerOptions:
    s = settings.server
    return ServerOptions(
        host=s.host,
        port=s.port,
        token=s.token,
        allowed_origins=tuple(s.allowed_origins),
        max_frame_bytes=s.max_frame_bytes,
        outbound_queue=s.outbound_queue,
        max_subscriptions=s.max_subscriptions,
    )


def provider_options(settings: Settings) -> dict[str, dict[str, object]]:
    """Per-provider options, with a data directory under the bridge's unless one is set."""
    data_dir = settings.data_dir()
    options: dict[str, dict[str, object]] = {}
    for name in settings.bridge.providers:
        opts = dict(settings.providers.get(name, {}))
        opts.setdefault("data_dir", str(Path(data_dir) / "providers" / name))
        options[name] = opts
    return options


async def run_bridge(
    settings: Settings, *, task_status: trio.TaskStatus[int] = trio.TASK_STATUS_IGNORED
) -> None:
    """Run one bridge until cancelled; reports the bound port through `task_status`."""
    options = server_options(settings)
    check_bind(options)
    clock = HostClock()
    catalog = await open_catalog(
        settings.data_dir(), retention_days=settings.bridge.retention_days, now_ms=clock.now_ms()
    )
    store = Store(
        log_limit=settings.server.replay_log,
        log_bytes=settings.server.replay_log_bytes,
        first_seq=catalog.first_seq,
    )
    hub = Hub(store, clock=clock.now_iso)
    sessions = SessionManager(
        hub,
        provider_names=settings.bridge.providers,
        provider_options=provider_options(settings),
        workdir=settings.bridge.workdir,
        clock=clock,
        active_client_grace=settings.bridge.active_client_grace,
        catalog=catalog,
        limits=settings.limits.limits(),
    )
    workdir = sessions.workdir
    durable = sessions.durable
    clients = KnownClients(persist=durable.remember_client if durable is not None else None)
    workspace = Workspace(hub, sessions, settings.workspace, default_directory=workdir)
    completions = Completions(sessions, [MentionSource(workspace)])
    rpc = RpcHandler(
        hub,
        sessions,
        default_directory=Path(workdir).as_uri(),
        clients=clients,
        handlers={**workspace.handlers(), **completions.handlers()},
        completion_triggers=completions.triggers,
    )
    async with trio.open_nursery() as keeper:
        await keeper.start(catalog.run)  # ends (writing what is queued) when the bridge stops
        async with sessions.running(), workspace.running(), trio.open_nursery() as nursery:
            if durable is not None:
                clients.load(await durable.client_lines())
            server = await nursery.start(serve, rpc, options)
            port = server.port
            log.info(
                "serving",
                host=settings.server.host,
                port=port,
                providers=settings.bridge.providers,
            )
            task_status.started(port)
