"""Composition root: the store, hub, session manager and WebSocket server of one bridge."""

from __future__ import annotations

from pathlib import Path

import structlog
import trio

from ahp_bridge.config import Settings
from ahp_bridge.host import content as content_scheme
from ahp_bridge.host.catalog import AsyncCatalog, open_catalog
from ahp_bridge.host.changesets import Changesets
from ahp_bridge.host.chat import HostClock
from ahp_bridge.host.client_tools import ClientToolLimits
from ahp_bridge.host.clients import KnownClients
from ahp_bridge.host.completions import Completions, MentionSource
from ahp_bridge.host.customizations import Customizations
from ahp_bridge.host.hub import Hub
from ahp_bridge.host.rpc import RpcHandler
from ahp_bridge.host.server import ServerOptions, check_bind, is_loopback, serve
from ahp_bridge.host.session_config import SessionConfig
from ahp_bridge.host.sessions import SessionManager
from ahp_bridge.host.slash import CommandSource
from ahp_bridge.host.wirelog import WireLog
from ahp_bridge.host.workspace import Workspace
from ahp_bridge.host.workspace_paths import uri_of_path
from ahp_bridge.state.store import Store

log = structlog.get_logger(__name__)


def server_options(settings: Settings, wire_log: WireLog | None = None) -> ServerOptions:
    s = settings.server
    return ServerOptions(
        wire_log=wire_log,
        host=s.host,
        port=s.port,
        token=s.token,
        allowed_origins=tuple(s.allowed_origins),
        max_frame_bytes=s.max_frame_bytes,
        outbound_queue=s.outbound_queue,
        max_subscriptions=s.max_subscriptions,
        slow_client_grace=s.slow_client_grace,
        remembered_request_ids=s.remembered_request_ids,
        max_json_depth=s.max_json_depth,
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


async def _keep_catalog(
    catalog: AsyncCatalog, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
) -> None:
    """The catalog writer, deaf to the bridge's cancellation: it ends at `catalog.close()`, so
    what sessions write while they stop (last titles, turn states) still reaches the database."""
    with trio.CancelScope(shield=True):
        await catalog.run(task_status=task_status)


async def run_bridge(
    settings: Settings, *, task_status: trio.TaskStatus[int] = trio.TASK_STATUS_IGNORED
) -> None:
    """Run one bridge until cancelled; reports the bound port through `task_status`."""
    wire = None
    if settings.server.wire_log is not None:
        wire = WireLog(settings.server.wire_log, max_bytes=settings.server.wire_log_max_bytes)
    try:
        await _run(settings, server_options(settings, wire), task_status)
    finally:
        if wire is not None:
            wire.close()


async def _run(
    settings: Settings, options: ServerOptions, task_status: trio.TaskStatus[int]
) -> None:
    check_bind(options)
    if not is_loopback(options.host) and not settings.bridge.allowed_directories:
        log.warning(
            "clients on the network may name any directory as a session's working directory; "
            "set bridge.allowed_directories to the ones they may use"
        )
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
        client_tools=ClientToolLimits(**settings.client_tools.model_dump()),
        limits=settings.limits.limits(),
        timeouts=settings.timeouts.timeouts(),
        allowed_directories=settings.bridge.allowed_directories,
    )
    workdir = sessions.workdir
    durable = sessions.durable
    clients = KnownClients(persist=durable.remember_client if durable is not None else None)
    workspace = Workspace(hub, sessions, settings.workspace, default_directory=workdir)
    content = content_scheme.ContentStore(
        max_bytes=settings.changes.max_content_bytes,
        wait_seconds=settings.changes.content_wait_seconds,
    )
    workspace.add_reader(content_scheme.SCHEME, content.read)
    changes = Changesets(
        hub,
        sessions,
        content,
        diff_timeout=settings.changes.diff_timeout_seconds,
        max_read_bytes=settings.workspace.max_read_bytes,
    )
    sessions.changes = changes
    config = SessionConfig(sessions)
    sessions.config = config
    customizations = Customizations(sessions)
    sessions.customizations = customizations
    commands = CommandSource(hub, sessions)
    customizations.changed.append(commands.session_changed)
    completions = Completions(sessions, [MentionSource(workspace), commands])
    rpc = RpcHandler(
        hub,
        sessions,
        default_directory=uri_of_path(workdir),
        clients=clients,
        handlers={
            **workspace.handlers(),
            **completions.handlers(),
            **config.handlers(),
            "invokeChangesetOperation": changes.invoke,
        },
        completion_triggers=completions.triggers,
        materializers=[changes.materialize],
    )
    async with trio.open_nursery() as keeper:
        await keeper.start(_keep_catalog, catalog)
        try:
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
        finally:
            catalog.close()  # the writer finishes what is queued, then ends
