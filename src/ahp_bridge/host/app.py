"""Composition root: the engine, the shell around it and the rooms of one bridge."""

from __future__ import annotations

import time
import uuid
from pathlib import Path

import structlog
import trio

from ahp_bridge.config import Settings, provider_options
from ahp_bridge.engine.client_tools import ClientToolLimits
from ahp_bridge.engine.core import Engine, EngineConfig
from ahp_bridge.host.durable.catalog import AsyncCatalog, open_catalog
from ahp_bridge.host.durable.sessions import DurableSessions
from ahp_bridge.host.features.changesets import Changesets
from ahp_bridge.host.features.completions import Completions, MentionSource
from ahp_bridge.host.features.creation import SessionCreation
from ahp_bridge.host.features.customizations import CustomizationReads
from ahp_bridge.host.features.session_config import SessionConfig
from ahp_bridge.host.features.slash import CommandSource
from ahp_bridge.host.runtime.auth import CHECK, SignIn, SignInWatch
from ahp_bridge.host.runtime.providers import Providers
from ahp_bridge.host.runtime.workers import Workers
from ahp_bridge.host.shell import Shell
from ahp_bridge.host.transport import connect
from ahp_bridge.host.transport.binding import has_token
from ahp_bridge.host.transport.connection import CLOSE_GOING_AWAY, GOING_AWAY
from ahp_bridge.host.transport.server import ServerOptions, check_bind, serve
from ahp_bridge.host.transport.wirelog import WireLog
from ahp_bridge.host.workspace import content as content_scheme
from ahp_bridge.host.workspace.paths import directory_uri, uri_of_path
from ahp_bridge.host.workspace.service import Workspace
from ahp_bridge.state.store import Store
from ahp_bridge.translate import iso_from_ms

log = structlog.get_logger(__name__)

#: The methods the shell answers (they need files, the provider or the catalog).
SERVED = frozenset(
    {
        "resourceRead",
        "resourceWrite",
        "resourceList",
        "resourceCopy",
        "resourceDelete",
        "resourceMove",
        "resourceResolve",
        "resourceMkdir",
        "resourceRequest",
        "createResourceWatch",
        "completions",
        "resolveSessionConfig",
        "sessionConfigCompletions",
        "authenticate",
        "invokeChangesetOperation",
    }
)


class HostClock:
    """Wall-clock time for the shell (the engine only ever receives it)."""

    def now_ms(self) -> int:
        return time.time_ns() // 1_000_000

    def now_iso(self) -> str:
        return iso_from_ms(self.now_ms())


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
        shutdown_grace=s.shutdown_grace,
        remembered_request_ids=s.remembered_request_ids,
        max_json_depth=s.max_json_depth,
    )


async def _keep_catalog(
    catalog: AsyncCatalog, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
) -> None:
    """The catalog writer, deaf to the bridge's cancellation: it ends at `catalog.close()`, so
    what sessions write while they stop (last titles, turn states) still reaches the database."""
    with trio.CancelScope(shield=True):
        await catalog.run(task_status=task_status)


async def run_bridge(
    settings: Settings,
    *,
    stop: trio.Event | None = None,
    task_status: trio.TaskStatus[int] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Run one bridge until `stop` is set (then every client gets close 1001 "going away"
    after what was queued for it, `server.shutdown_grace` at most) or until cancelled; reports
    the bound port through `task_status`."""
    wire = None
    if settings.server.wire_log is not None:
        wire = WireLog(settings.server.wire_log, max_bytes=settings.server.wire_log_max_bytes)
        # It holds transcripts: the operator is told it is on, every time.
        log.warning(
            "recording every frame in and out (prompts and answers too) to the wire log",
            file=str(settings.server.wire_log),
            max_bytes=settings.server.wire_log_max_bytes,
        )
    try:
        _ensure_token(settings)
        await _run(settings, server_options(settings, wire), stop, task_status)
    finally:
        if wire is not None:
            wire.close()


def _ensure_token(settings: Settings) -> None:
    """Every bind gets a connection token (the one configured or kept in the data directory);
    a loopback bind without one is the operator's explicit choice, said at every start."""
    connect.ensure_token(settings)
    if not has_token(settings.server.token):
        log.warning(
            "no connection token (server.require_token = false): any process of any user on "
            "this machine can connect and use the agents as you; remove the setting to require one",
            host=settings.server.host,
        )


def default_workdir(settings: Settings) -> Path:
    """`bridge.workdir`, or the directory the bridge was started in unless that is `/` (a
    service's usual directory, which would serve every file): then the user's home."""
    if settings.bridge.workdir is not None:
        return settings.bridge.workdir.resolve()
    here = Path.cwd().resolve()
    return here if here != Path("/") else Path.home().resolve()


def allowed_directories(settings: Settings, workdir: str) -> list[str]:
    """Where sessions may work: `bridge.allowed_directories`, or by default the bridge's working
    directory and the user's home, never `/` (a session rooted there could read everything):
    none at all when both are `/`."""
    configured = [str(p) for p in settings.bridge.allowed_directories]
    if configured:
        return configured
    defaults = [workdir, str(Path.home())]
    return [d for d in dict.fromkeys(defaults) if Path(d).resolve() != Path("/")]


def engine_config(settings: Settings, *, workdir: str, durable: bool) -> EngineConfig:
    s = settings.server
    return EngineConfig(
        outbound_queue=s.outbound_queue,
        max_subscriptions=s.max_subscriptions,
        remembered_request_ids=s.remembered_request_ids,
        max_json_depth=s.max_json_depth,
        limits=settings.limits.limits(),
        timeouts=settings.timeouts.timeouts(),
        client_tools=ClientToolLimits(**settings.client_tools.model_dump()),
        active_client_grace=settings.bridge.active_client_grace,
        workdir=workdir,
        default_directory=uri_of_path(workdir),
        completion_triggers=("@", "#", "/"),
        durable=durable,
        served=SERVED,
    )


async def _run(
    settings: Settings,
    options: ServerOptions,
    stop: trio.Event | None,
    task_status: trio.TaskStatus[int],
) -> None:
    check_bind(options)
    clock = HostClock()
    catalog = await open_catalog(
        settings.data_dir(), retention_days=settings.bridge.retention_days, now_ms=clock.now_ms()
    )
    workdir = str(default_workdir(settings))
    timeouts = settings.timeouts.timeouts()
    providers = Providers(settings.bridge.providers, provider_options(settings), timeouts=timeouts)
    async with trio.open_nursery() as keeper:
        await keeper.start(_keep_catalog, catalog)
        try:
            async with providers.running(), trio.open_nursery() as nursery:
                nursery.start_soon(providers.warn_at_start)
                await _serve(
                    settings,
                    options,
                    clock,
                    catalog,
                    providers,
                    workdir,
                    nursery,
                    stop,
                    task_status,
                )
                nursery.cancel_scope.cancel()  # stopped: the listener and every task go too
        finally:
            catalog.close()  # the writer finishes what is queued, then ends


async def _serve(
    settings: Settings,
    options: ServerOptions,
    clock: HostClock,
    catalog: AsyncCatalog,
    providers: Providers,
    workdir: str,
    nursery: trio.Nursery,
    stop: trio.Event | None,
    task_status: trio.TaskStatus[int],
) -> None:
    limits = settings.limits.limits()
    store = Store(
        log_limit=settings.server.replay_log,
        log_bytes=settings.server.replay_log_bytes,
        first_seq=catalog.first_seq,
        live_turns=limits.max_live_turns,
        live_turn_bytes=limits.max_live_turn_bytes,
    )
    engine = Engine(
        store,
        providers.infos,
        engine_config(settings, workdir=workdir, durable=True),
        now_ms=clock.now_ms,
        new_id=lambda: str(uuid.uuid4()),
        directory_uri=directory_uri,
    )
    shell = Shell(engine, nursery)
    workers = Workers(
        shell,
        providers.providers,
        engine.chat_provider,
        timeouts=providers.timeouts,
        lane_size=settings.limits.limits().max_pending_calls + 8,
    )
    shell.chat_jobs = workers.submit
    config = SessionConfig(providers, workdir=workdir)
    durable = DurableSessions(catalog, shell, providers, workers, config)
    config.offer_imports = durable.offer_imports
    shell.persist = durable.persist
    shell.archive = durable.archive
    shell.read_turns = durable.read_turns
    shell.restore = durable.restore
    workers.record = durable.chat_opened
    workspace = Workspace(shell, engine.sessions, settings.workspace, default_directory=workdir)
    content = content_scheme.ContentStore(
        max_bytes=settings.changes.max_content_bytes,
        wait_seconds=settings.changes.content_wait_seconds,
    )
    workspace.add_reader(content_scheme.SCHEME, content.read)
    changes = Changesets(
        shell,
        workers,
        content,
        diff_timeout=settings.changes.diff_timeout_seconds,
        max_read_bytes=settings.workspace.max_read_bytes,
    )
    engine.materializers.append(changes.materialize)
    reads = CustomizationReads(shell, providers, workers)
    commands = CommandSource(shell, workers)
    reads.changed.append(commands.session_changed)
    completions = Completions(engine.sessions, [MentionSource(workspace), commands])
    creation = SessionCreation(
        shell,
        workdir=workdir,
        allowed_directories=allowed_directories(settings, workdir),
        config=config,
    )
    creation.record = durable.session_created
    sign_in = SignIn(shell, providers)
    watch = SignInWatch(shell, providers)
    shell.jobs[CHECK] = watch.check
    shell.answers["createSession"] = creation.create
    shell.serve_with(
        {
            **workspace.handlers(),
            **completions.handlers(),
            **config.handlers(),
            "invokeChangesetOperation": changes.invoke,
            "authenticate": sign_in.authenticate,
        }
    )
    engine.start()
    shell.settle()
    async with workspace.running():
        engine.clients.load(await durable.load())
        try:
            server = await nursery.start(serve, shell, options)
            port = server.port
            log.info(
                "serving", host=settings.server.host, port=port, providers=settings.bridge.providers
            )
            task_status.started(port)
            if stop is None:
                await trio.sleep_forever()
            await stop.wait()
            log.info("saying goodbye to every client")
            await shell.goodbye(CLOSE_GOING_AWAY, GOING_AWAY, settings.server.shutdown_grace)
        finally:
            workers.detach_all()
