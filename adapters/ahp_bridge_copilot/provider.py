"""The Copilot provider: one Copilot CLI process (started on demand) shared by all conversations.

``async with provider:`` starts the asyncio thread the SDK runs on and a trio nursery for the
provider's own tasks (the watch on the CLI process). The CLI starts on first use (check, models,
open) and is stopped when the provider shuts down. If it dies, every open conversation gets
EventExit and is closed; the next open starts a new CLI.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import subprocess
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import trio
from ahp_bridge_support import AsyncioThread, LoopStopped, ProviderLifetime, close_each

from ahp_bridge.agentapi import (
    ACCOUNT_ENV,
    ACCOUNT_GITHUB_CLI,
    ACCOUNT_OTHER,
    ACCOUNT_STORED,
    PROVIDER_COPILOT,
    Account,
    AgentAPIError,
    AgentUnavailable,
    Capabilities,
    CLIIncompatible,
    Closed,
    ConfigurationCatalog,
    ContextSize,
    Conversation,
    ConversationNotFound,
    EnvAccount,
    HostToolClash,
    Media,
    Model,
    OpenRequest,
    PreviousConversation,
    SignedOut,
    SignInRejected,
    TitleRequest,
    Unsupported,
    UtilityRequest,
)

from .client import close_pipes, make_client, process_of
from .conversation import CopilotConversation, clean_title
from .customize import agent_catalog, skill_catalog
from .host_tools import HostToolRunner, clash_error, clash_names
from .options import (
    PROTOCOL_VERSION,
    CopilotOptions,
    find_cli,
    install_hint,
    not_found,
    sign_in_hint,
)
from .sdk_errors import is_definite_rejection, is_not_found, is_signed_out, plain_error, rpc_message
from .throwaway import Throwaway, run_throwaway
from .titler import run_title

log = logging.getLogger(__name__)

#: Seconds a utility call may take when its request sets no timeout.
UTILITY_TIMEOUT = 300.0
#: Seconds the SDK's reader has, once the CLI we started has exited, to read what it wrote.
EXIT_DRAIN = 0.5


def sdk_thread() -> AsyncioThread:
    """The asyncio thread the SDK runs on; it drops the SDK's late answers to cancelled reads."""
    return AsyncioThread("copilot-asyncio", sdk="Copilot SDK", drop_late_answers=True)


class CopilotProvider(ProviderLifetime):
    """agentapi Provider over github-copilot-sdk."""

    _lifetime_name = "the copilot provider"

    def __init__(self, options: CopilotOptions) -> None:
        self._opts = options
        self._loop = sdk_thread()
        self._client: Any = None
        self._process: subprocess.Popen[bytes] | None = None
        self._cli_version = ""
        self._cli: Path | None = None
        """The CLI binary the client started (None with cli_url or before the first start)."""
        self._hint: str | None = None
        """sign_in_hint, once worked out (it looks for the CLI when none was started)."""
        self._client_lock = trio.Lock()
        # Touched from trio and from the SDK thread (a conversation forgets itself on close).
        self._conversations: dict[int, CopilotConversation] = {}
        self._conversations_lock = threading.Lock()
        self._stopping = False

    # -- identity -------------------------------------------------------------------------------

    def name(self) -> str:
        return PROVIDER_COPILOT

    def display_name(self) -> str:
        return "GitHub Copilot"

    def capabilities(self) -> Capabilities:
        return Capabilities(
            cancel=True,
            permissions=True,
            questions=True,
            session_diff=True,
            history=True,
            titles=True,
            import_=True,
            host_tools=True,
            account=True,
        )

    @property
    def options(self) -> CopilotOptions:
        return self._opts

    # -- lifecycle ------------------------------------------------------------------------------

    async def _on_start(self) -> None:
        self._stopping = False
        self._loop.start()

    async def _on_stop(self) -> None:
        self._loop.stop()

    async def shutdown(self) -> None:
        """Close every conversation (detach, never delete) and stop the CLI we started."""
        self._stopping = True
        await close_each(self._open_conversations(), log, "copilot")
        async with self._client_lock:
            await self._stop_client()

    async def _stop_client(self) -> None:
        client = self._client
        self._client = None
        self._process = None
        if client is not None and self._loop.running:
            try:
                await self._loop.run(client.stop())
            except Exception as exc:
                log.warning("copilot: stopping the CLI failed: %s", plain_error("stop", exc))
                try:
                    await self._loop.run(client.force_stop())
                except Exception:
                    log.exception("copilot: force-stopping the CLI failed")
        if client is not None:
            close_pipes(client)

    # -- the client -----------------------------------------------------------------------------

    async def _ensure_client(self) -> Any:
        nursery = self._turn_nursery()
        async with self._client_lock:
            if self._client is not None:
                return self._client
            opts = self._opts
            cli = None if opts.cli_url else find_cli(opts)
            if cli is None and not opts.cli_url:
                if opts.cli_path:
                    what, fix = not_found(opts)
                    raise AgentAPIError(f"{what}: {fix}")
                raise AgentAPIError(f"the Copilot CLI is not installed: {install_hint()}")

            async def start() -> tuple[Any, Any]:
                client = make_client(opts, cli)
                try:
                    await client.start()
                    status = await client.get_status()
                except BaseException:
                    await _quiet_force_stop(client)
                    close_pipes(client)
                    raise
                return client, status

            try:
                client, status = await self._loop.run(start())
            except Exception as exc:
                if "protocol version mismatch" in str(exc):
                    raise CLIIncompatible(
                        f"this bridge cannot drive the installed Copilot CLI: {exc}"
                    ) from None
                raise AgentAPIError(plain_error("start the Copilot CLI", exc)) from None
            process = process_of(client)
            if status.protocol_version != PROTOCOL_VERSION:
                await _quiet_stop(self._loop, client)
                close_pipes(client)
                raise CLIIncompatible(
                    f"the Copilot CLI {status.version} speaks protocol {status.protocol_version}; "
                    f"this bridge needs protocol {PROTOCOL_VERSION}"
                )
            self._client = client
            self._process = process
            if cli != self._cli:
                self._cli, self._hint = cli, None
            self._cli_version = status.version
            if process is not None:
                nursery.start_soon(self._watch_process, client, process)
            else:
                self._watch_connection(client, nursery)
            return client

    async def _watch_process(self, client: Any, process: subprocess.Popen[bytes]) -> None:
        """EventExit for every conversation when the CLI we started exits while in use.

        What the CLI wrote before it exited (the answer to a request, a turn's last events) is
        still in its output: the SDK's reader gets until the output ends (at most EXIT_DRAIN
        seconds: a child of the CLI may hold it open) and the SDK's loop one pass to run what
        that woke, so a request the CLI answered is not reported lost with the runtime."""
        drained = self._output_end(client)
        code = await trio.to_thread.run_sync(process.wait, abandon_on_cancel=True)
        with trio.move_on_after(EXIT_DRAIN):
            await drained.wait()
        with contextlib.suppress(LoopStopped):
            await self._loop.run(_one_pass())
        await self._runtime_lost(client, f"the Copilot CLI exited unexpectedly (exit code {code})")

    @staticmethod
    def _output_end(client: Any) -> trio.Event:
        """Set when the SDK's reader reaches the end of the CLI's output (its ``on_close``,
        which it calls from its thread after failing the requests still waiting)."""
        ended = trio.Event()
        if not _on_connection_end(client, ended.set):
            ended.set()
        return ended

    def _watch_connection(self, client: Any, nursery: trio.Nursery) -> None:
        """For a CLI we only connect to (cli_url): the SDK's own connection-closed callback.

        The SDK calls ``on_close`` from its reader thread when the connection ends while it is
        still running (not on our own stop); it emits nothing to sessions, so we chain onto it.
        """
        error = f"the connection to the Copilot CLI at {self._opts.cli_url} was lost"

        def start_lost() -> None:
            with contextlib.suppress(Closed):  # not after the provider shut down
                if self._turn_nursery() is nursery:
                    nursery.start_soon(self._runtime_lost, client, error)

        _on_connection_end(client, start_lost)

    async def _runtime_lost(self, client: Any, error: str) -> None:
        if self._stopping or self._client is not client:
            return
        log.warning("copilot: %s", error)
        async with self._client_lock:
            if self._client is client:
                self._client = None
                self._process = None
        for conv in self._open_conversations():
            self._loop.call_soon(conv.runtime_exited, error)
        await _quiet_stop(self._loop, client)
        close_pipes(client)

    # -- agentapi.Provider ----------------------------------------------------------------------

    async def check(self) -> None:
        client = await self._ensure_client()
        if self._opts.byok is not None:
            return
        try:
            auth = await self._loop.run(client.get_auth_status(), cancel_on_abort=True)
        except Exception as exc:
            raise AgentAPIError(plain_error("read the sign-in state", exc)) from None
        if not auth.isAuthenticated:
            raise SignedOut(self.sign_in_hint())

    async def startup_problems(self) -> list[tuple[str, str]]:
        """Your own model (BYOK): its API key set, its server answering; said at the bridge's
        start (the host's StartupChecker), where a first turn would otherwise spend the CLI's
        retries (some 24 s) to find out. Signed-in mode: the models read says it."""
        from .doctor import byok_lines

        if self._opts.byok is None:
            return []
        lines = await trio.to_thread.run_sync(
            lambda: byok_lines(self._opts, timeout=5), abandon_on_cancel=True
        )
        return [(what, fix) for ok, what, fix in lines if not ok]

    def sign_in_hint(self) -> str:
        """What to do about a signed-out runtime, in one sentence (real paths, BYOK)."""
        if self._hint is None:
            self._hint = sign_in_hint(self._opts, self._cli)
        return self._hint

    async def models(self) -> list[Model]:
        if self._opts.byok is not None:
            return [Model(id=m, name=m) for m in self._opts.byok.all_models()]
        client = await self._ensure_client()
        try:
            infos = await self._loop.run(client.list_models(), cancel_on_abort=True)
        except Exception as exc:
            if is_signed_out(exc):
                raise SignedOut(self.sign_in_hint()) from None
            raise AgentAPIError(plain_error("list the models", exc)) from None
        return [_model(info) for info in infos]

    # -- agentapi.AccountManager ----------------------------------------------------------------

    async def account(self) -> Account:
        client = await self._ensure_client()
        try:
            auth = await self._loop.run(client.get_auth_status(), cancel_on_abort=True)
        except Exception as exc:
            raise AgentAPIError(plain_error("read the sign-in state", exc)) from None
        env_var = self._opts.env_token_var()
        if not auth.isAuthenticated:
            return Account(signed_in=False, message=auth.statusMessage or "")
        return Account(
            signed_in=True,
            login=auth.login or "",
            host=auth.host or "",
            source=ACCOUNT_ENV if env_var else _source(auth.authType),
            env_var=env_var,
        )

    async def sign_in(self, token: str) -> Account:
        """Validate and store ``token`` with the runtime (``account.login``); never logged."""
        from copilot.generated.rpc import AccountLoginRequest

        env_var = self._opts.env_token_var()
        if env_var:
            raise EnvAccount(f"the GitHub token in ${env_var} takes precedence; unset it first")
        client = await self._ensure_client()
        request = AccountLoginRequest(host=self._opts.github_host(), token=token)
        try:
            result = await self._loop.run(client.rpc.account.login(request))
        except Exception as exc:
            if is_definite_rejection(exc):
                raise SignInRejected(rpc_message(exc)) from None
            raise AgentAPIError(plain_error("sign in", exc)) from None
        client._models_cache = None  # the SDK caches models.list; the account changed
        account = await self.account()
        if not account.signed_in:
            raise SignInRejected(account.message or "the runtime is still signed out")
        return account.model_copy(update={"stored": bool(result.stored_in_vault)})

    async def sign_out(self) -> Account:
        from copilot.generated.rpc import AccountLogoutRequest

        env_var = self._opts.env_token_var()
        if env_var:
            raise EnvAccount(f"the GitHub token in ${env_var} takes precedence; unset it first")
        client = await self._ensure_client()
        try:
            await self._loop.run(client.rpc.account.logout(AccountLogoutRequest()))
        except Exception as exc:
            if is_definite_rejection(exc):
                raise SignInRejected(rpc_message(exc)) from None
            raise AgentAPIError(plain_error("sign out", exc)) from None
        client._models_cache = None
        return await self.account()

    async def open(self, req: OpenRequest) -> Conversation:
        client = await self._ensure_client()
        nursery = self._turn_nursery()
        if req.events is None:
            raise ValueError("OpenRequest.events (the EventSink) is required")
        runner = None
        if req.tools:
            token = trio.lowlevel.current_trio_token()
            runner = HostToolRunner(req.tools, req.call_tool, req.session_id, token, nursery)
        conv = CopilotConversation(
            self._loop,
            req.events,
            self._forget,
            host_tools=runner,
            signed_out_hint=self.sign_in_hint(),
        )
        opts = self._opts
        workdir = req.workdir or opts.workdir or None
        common: dict[str, Any] = {
            "on_permission_request": _no_result,
            "on_user_input_request": conv.park,
            "on_elicitation_request": conv.park,
            "on_event": conv.on_sdk_event,
            "streaming": True,
            "working_directory": workdir,
            "enable_file_change_tracking": True,
        }
        provider_cfg = opts.provider_config()
        if provider_cfg is not None:
            common["provider"] = provider_cfg
        if req.skill_directories:
            common["skill_directories"] = list(req.skill_directories)
        if runner is not None:
            common["tools"] = runner.sdk_tools()
        if req.agent:  # selected on create and on every reopen, before anything is sent
            common["agent"] = req.agent

        if req.conversation_id:
            conv_id = req.conversation_id

            async def go() -> Any:
                session = await client.resume_session(conv_id, **common)
                await _validate_tools(client, session, req, created=False)
                conv.attach(session)
                return session

        else:
            create = dict(common)
            create["model"] = req.model or (opts.byok.model if opts.byok else None)
            if req.effort:
                create["reasoning_effort"] = req.effort
            if req.context_size:
                create["context_tier"] = req.context_size
            if req.title:
                try:
                    create["name"] = clean_title(req.title)
                    conv.note_own_title(create["name"])
                except ValueError:
                    pass

            async def go() -> Any:
                session = await client.create_session(**create)
                await _validate_tools(client, session, req, created=True)
                conv.attach(session)
                return session

        with self._conversations_lock:
            self._conversations[id(conv)] = conv
        try:
            await self._loop.run(go())
        except HostToolClash:
            self._forget(conv)
            raise
        except Exception as exc:
            self._forget(conv)
            if req.conversation_id and is_not_found(exc):
                raise ConversationNotFound(
                    f"no Copilot conversation {req.conversation_id!r}"
                ) from None
            if req.agent and "agent" in str(exc).lower():
                raise AgentUnavailable(
                    plain_error(f"select the agent {req.agent!r}", exc)
                ) from None
            raise AgentAPIError(plain_error("open the conversation", exc)) from None
        return conv

    # -- ConfigurationDiscoverer and SkillGlobalSetter (see customize.py) ---------------------

    async def discover_skills(
        self, project_paths: list[str], skill_directories: list[str]
    ) -> ConfigurationCatalog:
        from copilot.generated.rpc import SkillsDiscoverRequest

        client = await self._ensure_client()
        request = SkillsDiscoverRequest(
            project_paths=list(project_paths) or None,
            skill_directories=list(skill_directories) or None,
        )
        try:
            listing = await self._loop.run(
                client.rpc.skills.discover(request), cancel_on_abort=True
            )
        except Exception as exc:
            raise AgentAPIError(plain_error("discover the skills", exc)) from None
        return skill_catalog(listing)

    async def discover_agents(self, project_paths: list[str]) -> ConfigurationCatalog:
        from copilot.generated.rpc import AgentsDiscoverRequest

        client = await self._ensure_client()
        request = AgentsDiscoverRequest(project_paths=list(project_paths) or None)
        try:
            listing = await self._loop.run(
                client.rpc.agents.discover(request), cancel_on_abort=True
            )
        except Exception as exc:
            raise AgentAPIError(plain_error("discover the custom agents", exc)) from None
        return agent_catalog(listing)

    async def discover_hooks(self, project_paths: list[str]) -> ConfigurationCatalog:
        raise Unsupported("the Copilot CLI lists no hooks outside a session")

    async def discover_instructions(self, project_paths: list[str]) -> ConfigurationCatalog:
        raise Unsupported("the Copilot CLI lists no instructions outside a session")

    async def set_skill_globally_disabled(self, name: str, disabled: bool) -> None:
        from copilot.generated.rpc import SkillsConfigSetSkillDisabledRequest

        client = await self._ensure_client()
        request = SkillsConfigSetSkillDisabledRequest(disabled=disabled, name=name)
        try:
            await self._loop.run(client.rpc.skills.config.set_skill_disabled(request))
        except Exception as exc:
            raise AgentAPIError(plain_error(f"turn the skill {name!r} on or off", exc)) from None

    async def previous(self, workdir: str) -> list[PreviousConversation]:
        """agentapi Importer: conversations recorded with exactly ``workdir`` ("" = all)."""
        from copilot.client import SessionListFilter

        client = await self._ensure_client()
        filt = SessionListFilter(working_directory=workdir) if workdir else None
        try:
            sessions = await self._loop.run(client.list_sessions(filt), cancel_on_abort=True)
        except Exception as exc:
            raise AgentAPIError(plain_error("list the recorded conversations", exc)) from None
        out = []
        for meta in sessions:
            cwd = meta.context.working_directory if meta.context else ""
            if meta.is_remote or (workdir and cwd != workdir):
                continue
            out.append(
                PreviousConversation(
                    id=meta.session_id,
                    title=meta.summary or "",
                    workdir=cwd,
                    created_at=meta.start_time,
                    updated_at=meta.modified_time,
                )
            )
        return out

    async def in_use(self, ids: list[str]) -> list[str]:
        """agentapi Importer: the ids another process holds open (never our own runtime)."""
        from copilot.generated.rpc import SessionsCheckInUseRequest

        if not ids:
            return []
        client = await self._ensure_client()
        ours = {c.id() for c in self._open_conversations()}
        try:
            res = await self._loop.run(
                client.rpc.sessions.check_in_use(SessionsCheckInUseRequest(list(ids))),
                cancel_on_abort=True,
            )
        except Exception as exc:
            raise AgentAPIError(plain_error("check which conversations are in use", exc)) from None
        return [i for i in res.in_use if i not in ours]

    async def title(self, req: TitleRequest) -> str:
        """agentapi Titler: the model's title for a Task's first message, as it came."""
        client = await self._ensure_client()
        text, usage = await self._loop.run(run_title(client, self._opts, req), cancel_on_abort=True)
        if usage is not None and req.on_usage is not None:
            req.on_usage(usage)
        return text

    async def run_utility(self, req: UtilityRequest) -> str:
        """agentapi UtilityRunner: one throwaway session whose system message is req.system and
        whose only tools are req.tools (their calls have no task id); permissions are
        rejected; the reply as it came. The session is deleted whatever the outcome."""
        client = await self._ensure_client()
        nursery = self._turn_nursery()
        token = trio.lowlevel.current_trio_token()
        runner = HostToolRunner(req.tools, req.call_tool, "", token, nursery)
        seconds = req.timeout.total_seconds()
        job = Throwaway(
            purpose=req.purpose or "utility",
            system=req.system,
            prompt=req.prompt,
            model=req.model,
            workdir=req.workdir,
            images=list(req.attachments),
            timeout=seconds if seconds > 0 else UTILITY_TIMEOUT,
            tools=runner.sdk_tools(),
            response_schema=req.response_schema,
        )
        try:
            text, usage = await self._loop.run(
                run_throwaway(client, self._opts, job), cancel_on_abort=True
            )
        finally:
            runner.cancel_all()
        if usage is not None and req.on_usage is not None:
            req.on_usage(usage)
        return text

    def _forget(self, conv: CopilotConversation) -> None:
        with self._conversations_lock:
            self._conversations.pop(id(conv), None)

    def _open_conversations(self) -> list[CopilotConversation]:
        with self._conversations_lock:
            return list(self._conversations.values())


async def _validate_tools(client: Any, session: Any, req: OpenRequest, *, created: bool) -> None:
    """Initialize the session's tools now, so host tools that clash fail the open.

    The CLI names a clash only when it initializes the tools (else at the first turn, which
    would fail). A refused session is detached, and deleted when this open created it.
    """
    if not req.tools:
        return
    try:
        await session.rpc.tools.initialize_and_validate()
    except Exception as exc:
        with contextlib.suppress(Exception):
            await session.disconnect()
        if created:
            with contextlib.suppress(Exception):
                await client.delete_session(session.session_id)
        names = clash_names(exc, req.tools)
        message = plain_error("initialize the tools", exc)
        if names:
            raise clash_error(names, message) from None
        raise AgentAPIError(message) from None


def _source(auth_type: Any) -> str:
    """The agentapi account source for the CLI's authType."""
    kind = str(getattr(auth_type, "value", auth_type) or "")
    return {
        "user": ACCOUNT_STORED,
        "account": ACCOUNT_STORED,
        "gh-cli": ACCOUNT_GITHUB_CLI,
        "env": ACCOUNT_ENV,
        "token": ACCOUNT_ENV,
    }.get(kind, ACCOUNT_OTHER)


def _no_result(request: Any, invocation: Any) -> Any:
    """Leave permission requests pending: the user answers them through Respond."""
    from copilot.session import PermissionNoResult

    return PermissionNoResult()


def _model(info: Any) -> Model:
    """An agentapi Model for the SDK's ModelInfo: efforts, image support and prompt budget."""
    efforts = [str(getattr(e, "value", e)) for e in (info.supported_reasoning_efforts or [])]
    caps = getattr(info, "capabilities", None)
    supports = getattr(caps, "supports", None)
    limits = getattr(caps, "limits", None)
    media = None
    if supports is not None:
        vision = getattr(limits, "vision", None)
        media = Media(
            images=bool(supports.vision),
            pdf=False,
            max_images=(vision.max_prompt_images or 0) if vision else 0,
            types=list(vision.supported_media_types or []) if vision else [],
        )
    sizes = []
    budget = getattr(limits, "max_prompt_tokens", None) if limits is not None else None
    if budget:
        sizes.append(ContextSize(id="default", tokens=int(budget)))
    return Model(
        id=info.id, name=info.name or info.id, efforts=efforts, context_sizes=sizes, media=media
    )


async def _quiet_force_stop(client: Any) -> None:
    try:
        await client.force_stop()
    except Exception:
        log.debug("copilot: force_stop failed", exc_info=True)


def _on_connection_end(client: Any, then: Callable[[], None]) -> bool:
    """Chain ``then`` (run on the trio thread) after the SDK's own ``on_close``, which its
    reader thread calls when the CLI's output or connection ends while the client runs.
    False when the client has no connection to watch."""
    rpc = getattr(client, "_client", None)
    if rpc is None:
        return False
    token = trio.lowlevel.current_trio_token()
    previous = rpc.on_close

    def closed() -> None:
        if previous is not None:
            previous()
        with contextlib.suppress(trio.RunFinishedError):
            token.run_sync_soon(then)

    rpc.on_close = closed
    return True


async def _one_pass() -> None:
    """Two turns of the asyncio loop: a task woken by an answer the reader has dispatched runs
    before whatever is scheduled after this."""
    await asyncio.sleep(0)
    await asyncio.sleep(0)


async def _quiet_stop(loop: AsyncioThread, client: Any) -> None:
    if not loop.running:
        return
    try:
        with trio.CancelScope(shield=True):
            await loop.run(_quiet_force_stop(client))
    except Exception:
        log.debug("copilot: stopping the client failed", exc_info=True)
