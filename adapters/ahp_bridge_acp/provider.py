"""The ACP provider: one agent process (started on demand) shared by all its conversations.

``async with provider:`` starts the asyncio thread the SDK runs on and, best effort, the agent
(so ``capabilities()`` can say what it really supports). Each conversation is one ACP session on
that process. If the process dies, every open conversation gets EventExit and is closed; the
next ``open`` (the host reopens on the next prompt) starts a new process and reloads the session
with ``session/load``. What the agent asks of the client arrives at ``_route``, which validates
it with the SDK's schema and hands it to the conversation that owns the session; a malformed or
unexpected message is answered with a JSON-RPC error and logged by kind, never by content.
"""

from __future__ import annotations

import asyncio
import logging
import os
import threading
import time
from datetime import datetime
from pathlib import Path
from typing import Any

import trio
from acp import schema as S
from acp.exceptions import RequestError
from acp.meta import PROTOCOL_VERSION
from ahp_bridge_support import AsyncioThread, ProviderLifetime, close_each
from ahp_bridge_support.private import private_dir
from pydantic import ValidationError

from ahp_bridge.agentapi import (
    AgentAPIError,
    Capabilities,
    Conversation,
    ConversationNotFound,
    Event,
    History,
    Model,
    OpenRequest,
    PreviousConversation,
    ReadRequest,
    SignedOut,
    Unsupported,
)

from . import credentials
from .conversation import (
    AUTH_REQUIRED,
    AcpConversation,
    agent_error,
    config_options,
    error_detail,
    needs_sign_in,
    now,
)
from .mapping import SessionMapper
from .options import AcpOptions
from .process import AgentGone, AgentProcess

log = logging.getLogger(__name__)

NOT_FOUND = -32002
RENEW_AFTER_CANCEL = frozenset({"@zed-industries/claude-agent-acp"})
"""Agents (``agentInfo.name``) whose sessions are renewed after a cancel by default: after
claude-agent-acp 0.23.1 answers a cancelled prompt, its session still owes the cancelled
turn's "idle", which ends the next prompt at once (empty); that prompt's answer then goes to
the prompt after it."""
MAX_DETACHED = 64
MAX_LISTED = 1000
LOAD_RETRIES = 20
LOAD_RETRY_DELAY = 0.1
#: An extension method (ACP keeps ``_`` names for them) no agent offers: every agent answers it
#: at once, "method not found", after what it sent before. See ``_replayed``.
SYNC_METHOD = "_ahp_bridge/sync"
SYNC_TIMEOUT = 5.0


def current_first(models: list[Model], current: str) -> list[Model]:
    """The agent's models with its current one first: the default a client is shown (and the
    host asks for when no client chose one) is the model the agent runs anyway."""
    out = [m.model_copy() for m in models]
    out.sort(key=lambda m: m.id != current)  # stable: the agent's order otherwise
    return out


def auth_hint(methods: list[Any]) -> str:
    """What an operator does to sign the agent in, from its ``authMethods``."""
    hints = []
    for method in methods:
        inner = getattr(method, "root", method)
        name = getattr(inner, "name", "") or getattr(inner, "id", "")
        desc = getattr(inner, "description", "") or ""
        env = [v.name for v in getattr(inner, "vars", None) or []]
        if env:
            hints.append(f"{name}: set {', '.join(env)} in the provider's env")
        else:
            hints.append(f"{name}{': ' + desc if desc else ''}")
    if not hints:
        return "the agent offers no sign-in method; sign it in outside the bridge"
    return "; ".join(hints) + " (or set auth_method in the provider's config)"


class AcpProvider(ProviderLifetime):
    """agentapi Provider over any Agent Client Protocol agent."""

    _lifetime_name = "the ACP provider"
    _owns_nursery = False  # its sessions and their turns all live on the asyncio thread

    def __init__(self, options: AcpOptions) -> None:
        self._opts = options
        self._loop = AsyncioThread("acp-asyncio", sdk="ACP SDK")
        self._agent: AgentProcess | None = None
        self._agent_lock: asyncio.Lock | None = None
        self._init: S.InitializeResponse | None = None
        self._start_error = ""
        # session id -> conversation; touched on the asyncio thread only, read from trio.
        self._sessions: dict[str, AcpConversation] = {}
        self._opening: dict[str, AcpConversation] = {}
        # Updates for a session whose session/new answer is still on its way (bounded).
        self._early: dict[str, list[Any]] = {}
        self._lock = threading.Lock()
        self._models: list[Model] = []
        self._models_known = False
        self._stopping = False
        self._creating = 0
        self._known: set[str] = set()
        # Sessions closed here whose agent process still holds them, to reattach on reopen.
        self._detached: dict[str, AcpConversation] = {}
        self._background: set[asyncio.Task[None]] = set()
        """Session ids this provider created or loaded (they exist on the agent's side)."""
        self.starts = 0
        self.last_stderr = ""
        self.start_seconds = 0.0
        """How long the last agent took from spawn to its initialize answer."""
        """The stderr tail of the last agent that failed to start or exited (for doctor)."""
        """How many agent processes this provider started (tests and benchmarks read it)."""

    # -- identity -------------------------------------------------------------------------

    def name(self) -> str:
        return "acp"

    def display_name(self) -> str:
        if self._opts.display_name:
            return self._opts.display_name
        info = self._init.agent_info if self._init else None
        if info is not None:
            return info.title or info.name
        return self._opts.label()

    def capabilities(self) -> Capabilities:
        caps = self._init.agent_capabilities if self._init else None
        sessions = caps.session_capabilities if caps else None
        return Capabilities(
            cancel=True,
            permissions=True,
            session_diff=True,
            history=bool(caps and caps.load_session),
            import_=bool(caps and caps.load_session and sessions and sessions.list is not None),
        )

    @property
    def options(self) -> AcpOptions:
        return self._opts

    @property
    def initialize_result(self) -> S.InitializeResponse | None:
        return self._init

    @property
    def agent(self) -> AgentProcess | None:
        return self._agent

    # -- lifecycle ------------------------------------------------------------------------

    async def _on_start(self) -> None:
        self._stopping = False
        self._loop.start()
        try:
            with trio.move_on_after(self._opts.start_timeout + 5):
                await self._loop.run(self._ensure_agent(), cancel_on_abort=True)
        except AgentAPIError as exc:
            # The first use tries again and says why; the bridge still starts.
            log.warning("acp: the agent did not start: %s", exc)

    async def _on_stop(self) -> None:
        self._loop.stop()

    async def shutdown(self) -> None:
        """Close every conversation (never deleting one) and stop the agent we started."""
        self._stopping = True
        await close_each(self._open_conversations(), log, "acp")
        if self._loop.running:
            await self._loop.run(self._stop_agent())

    async def _stop_agent(self) -> None:
        agent, self._agent = self._agent, None
        if agent is not None:
            await agent.stop(eof_grace=self._opts.stop_grace)

    # -- the agent (asyncio thread) -------------------------------------------------------

    async def _ensure_agent(self) -> AgentProcess:
        if self._agent_lock is None:
            self._agent_lock = asyncio.Lock()
        async with self._agent_lock:
            agent = self._agent
            if agent is not None and not agent.exited.is_set():
                return agent
            opts = self._opts
            started = time.monotonic()
            try:
                agent = await AgentProcess.spawn(opts, self._route)
            except FileNotFoundError as exc:
                raise AgentAPIError(str(exc)) from None
            except OSError as exc:
                raise AgentAPIError(
                    f"the ACP agent {opts.label()!r} could not be started: {exc.strerror or exc}"
                ) from None
            self.starts += 1
            try:
                raw = await agent.request(
                    "initialize",
                    {
                        "protocolVersion": PROTOCOL_VERSION,
                        "clientCapabilities": {
                            "fs": {"readTextFile": True, "writeTextFile": True},
                            "terminal": True,
                        },
                        "clientInfo": {
                            "name": "ahp-bridge",
                            "title": "ahp-bridge",
                            "version": "0.1.0",
                        },
                    },
                    timeout=opts.start_timeout,
                )
                init = S.InitializeResponse.model_validate(raw)
            except (AgentGone, TimeoutError, RequestError, ValidationError) as exc:
                await agent.stop(grace=0.5)
                self.last_stderr = agent.stderr.text()
                raise AgentAPIError(self._start_failure(agent, exc)) from None
            if init.protocol_version != PROTOCOL_VERSION:
                await agent.stop(grace=0.5)
                raise AgentAPIError(
                    f"the ACP agent speaks protocol version {init.protocol_version}; this bridge "
                    f"speaks {PROTOCOL_VERSION}"
                )
            if opts.auth_method:
                await self._authenticate(agent, init)
            self._init = init
            self._agent = agent
            self.start_seconds = time.monotonic() - started
            asyncio.get_running_loop().create_task(self._watch(agent))
            return agent

    def _start_failure(self, agent: AgentProcess, exc: BaseException) -> str:
        label = self._opts.label()
        if isinstance(exc, AgentGone):
            return f"{exc} before answering initialize; see `ahp-bridge doctor` for its stderr"
        if isinstance(exc, TimeoutError):
            return (
                f"the ACP agent {label!r} did not answer initialize within "
                f"{self._opts.start_timeout:g}s (start_timeout)"
            )
        if isinstance(exc, RequestError):
            return agent_error("initialize", exc)
        return f"the ACP agent {label!r} answered initialize with something that is not ACP"

    async def _authenticate(self, agent: AgentProcess, init: S.InitializeResponse) -> None:
        ids = [getattr(getattr(m, "root", m), "id", "") for m in init.auth_methods or []]
        method = self._opts.auth_method
        if method not in ids:
            await agent.stop(grace=0.5)
            raise AgentAPIError(
                f"auth_method {method!r} is not one the agent offers ({', '.join(ids) or 'none'})"
            )
        try:
            await agent.request(
                "authenticate", {"methodId": method}, timeout=self._opts.request_timeout
            )
        except (AgentGone, TimeoutError, RequestError) as exc:
            await agent.stop(grace=0.5)
            detail = agent_error("authenticate", exc) if isinstance(exc, RequestError) else str(exc)
            raise SignedOut(detail) from None

    async def _watch(self, agent: AgentProcess) -> None:
        await agent.exited.wait()
        await asyncio.sleep(0.05)  # let its last stderr bytes arrive
        self.last_stderr = agent.stderr.text()
        if self._agent is agent:
            self._agent = None
        for sid in [s for s, c in self._detached.items() if c.agent is agent]:
            del self._detached[sid]
        if self._stopping:
            return
        error = agent.describe_exit()
        convs = [c for c in self._open_conversations() if c.agent is agent]
        if convs:
            log.warning("acp: %s; %d conversations closed", error, len(convs))
        for conv in convs:
            conv.runtime_exited(error)

    def auth_hint(self) -> str:
        return auth_hint(list(self._init.auth_methods or [])) if self._init else ""

    # -- what the agent asks of the client (asyncio thread) --------------------------------

    async def _route(self, method: str, params: Any, is_notification: bool) -> Any:
        """The SDK connection's handler; never raises anything but RequestError."""
        model = _REQUESTS.get(method)
        if model is None:
            kind = "notification" if is_notification else "request"
            log.warning("acp: the agent sent an unexpected %s %s", kind, method[:64])
            if is_notification:
                return None
            raise RequestError.method_not_found(method[:64])
        try:
            req = model.model_validate(params)
        except ValidationError as exc:
            log.warning("acp: the agent sent a malformed %s (%d errors)", method, exc.error_count())
            if is_notification:
                return None
            raise RequestError.invalid_params({"reason": f"malformed {method} params"}) from None
        conv = self._sessions.get(req.session_id) or self._opening.get(req.session_id)
        if conv is None and method == "session/update" and self._keep_early(req):
            return None
        if conv is None:
            # A scratch or closed session of ours is no surprise; anything else is.
            level = logging.DEBUG if req.session_id in self._known else logging.WARNING
            log.log(level, "acp: the agent sent %s for a session the bridge does not hold", method)
            if is_notification:
                return None
            raise RequestError(NOT_FOUND, "no such session on this client", None)
        try:
            return await _dispatch(conv, method, req)
        except RequestError:
            raise
        except Exception as exc:
            log.error("acp: handling %s failed (%s)", method, type(exc).__name__)
            if is_notification:
                return None
            raise RequestError.internal_error({"reason": f"the client failed {method}"}) from None

    def _keep_early(self, req: S.SessionNotification) -> bool:
        """Hold an update that may belong to a session being created (at most 16 x 64)."""
        if not self._creating:
            return False
        held = self._early.get(req.session_id)
        if held is None:
            if len(self._early) >= 16:
                return False
            held = self._early[req.session_id] = []
        if len(held) >= 64:
            return False
        held.append(req.update)
        return True

    # -- the host's StartupChecker ----------------------------------------------------------

    async def startup_problems(self) -> list[tuple[str, str]]:
        """An agent command that is not there, or an agent without credentials it can use (every
        prompt would fail): said at the bridge's start, in doctor's words, not at the first turn.
        An agent that did not start was said by the start itself (and the first use retries)."""
        opts = self._opts
        if opts.executable() is None:
            return [
                (
                    f"the agent command {opts.command[0]!r} is not found",
                    "install the agent (`bash scripts/install-acp-agents.sh` puts the pinned "
                    "Claude Agent, Codex and Gemini CLI under .tools/acp; docs/acp.md has their "
                    "configs), or set `command` to its full path",
                )
            ]
        init = self._init
        if init is None:
            return []
        info = init.agent_info
        methods = list(init.auth_methods or [])
        verdict = credentials.check(info.name if info else "", methods, opts.environment())
        if verdict is not None and not verdict[0]:
            return [(verdict[1], verdict[2])]
        return []

    # -- agentapi.Provider ----------------------------------------------------------------

    async def check(self) -> None:
        self._require_started()
        await self._loop.run(self._ensure_agent(), cancel_on_abort=True)

    async def models(self) -> list[Model]:
        self._require_started()
        if not self._models_known and self._opts.probe_models:
            await self._loop.run(self._probe_models(), cancel_on_abort=True)
        return [m.model_copy() for m in self._models]

    async def _probe_models(self) -> None:
        """Models are per session in ACP: read them from one scratch session."""
        agent = await self._ensure_agent()
        cwd = self._opts.data_dir or self._opts.workdir or os.getcwd()
        if self._opts.data_dir:
            private_dir(cwd)  # the bridge's own directory for this agent: the user's only
        else:
            Path(cwd).mkdir(parents=True, exist_ok=True)
        # What the agent reports for the scratch session before its answer is read (commands,
        # say) is held as for any session being created, and dropped with it below.
        self._creating += 1
        try:
            raw = await agent.request(
                "session/new",
                {"cwd": os.path.realpath(cwd), "mcpServers": []},
                timeout=self._opts.request_timeout,
            )
        except RequestError as exc:
            if exc.code == AUTH_REQUIRED:
                raise SignedOut(needs_sign_in(self.auth_hint())) from None
            raise AgentAPIError(agent_error("open a session", exc)) from None
        except (AgentGone, TimeoutError) as exc:
            raise AgentAPIError(str(exc)) from None
        finally:
            self._creating -= 1
        self._note_models(raw)
        self._models_known = True
        if isinstance(raw, dict) and isinstance(raw.get("sessionId"), str):
            self._known.add(raw["sessionId"])
            self._early.pop(raw["sessionId"], None)
            await self._close_session(agent, raw["sessionId"])

    def _renews(self) -> bool:
        """Whether conversations close and resume their session after a cancelled turn
        (``renew_after_cancel``; by default for the agents known to need it)."""
        caps = self._init.agent_capabilities if self._init else None
        sessions = caps.session_capabilities if caps else None
        if not (sessions and sessions.close is not None and sessions.resume is not None):
            return False
        wanted = self._opts.renew_after_cancel
        if wanted is None:
            info = self._init.agent_info if self._init else None
            return info is not None and info.name in RENEW_AFTER_CANCEL
        return wanted

    def _can_close(self) -> bool:
        caps = self._init.agent_capabilities if self._init else None
        sessions = caps.session_capabilities if caps else None
        return bool(sessions and sessions.close is not None)

    async def _close_session(self, agent: AgentProcess, session_id: str) -> None:
        """``session/close`` (frees the agent's resources, keeps the record) where offered."""
        if not self._can_close():
            return
        try:
            await agent.request(
                "session/close", {"sessionId": session_id}, timeout=self._opts.request_timeout
            )
        except (RequestError, AgentGone, TimeoutError) as exc:
            log.info("acp: session/close failed (%s)", type(exc).__name__)

    def _note_models(self, raw: Any) -> None:
        if not isinstance(raw, dict):
            return
        probe = SessionMapper(now, lambda _: None, text_limit=1024)
        if isinstance(raw.get("configOptions"), list):
            probe.config_options(config_options(raw["configOptions"]))
        probe.unstable_model_state(raw.get("models"))
        if probe.models:
            self._models = current_first(probe.models, probe.model)
            self._models_known = True

    async def open(self, req: OpenRequest) -> Conversation:
        self._require_started()
        if req.events is None:
            raise ValueError("OpenRequest.events (the EventSink) is required")
        if req.agent:
            raise Unsupported("ACP agents have no custom agents to select")
        workdir = os.path.realpath(req.workdir or self._opts.workdir or os.getcwd())
        if not os.path.isdir(workdir):
            raise AgentAPIError(f"the working directory {workdir!r} does not exist")
        sink = req.events

        async def go() -> AcpConversation:
            agent = await self._ensure_agent()
            init = self._init
            assert init is not None
            caps = init.agent_capabilities
            conv = AcpConversation(
                self._loop,
                agent,
                sink,
                self._opts,
                workdir,
                prompt_caps=caps.prompt_capabilities if caps else None,
                on_closed=self._forget,
                auth_hint=self.auth_hint(),
                renew_after_cancel=self._renews(),
            )
            base = {"cwd": workdir, "mcpServers": []}
            timeout = self._opts.request_timeout
            earlier = self._detached.pop(req.conversation_id, None)
            if earlier is not None and earlier.agent is agent and earlier.workdir == workdir:
                conv.reattach(earlier)
                with self._lock:
                    self._sessions[conv.session_id] = conv
                return conv
            try:
                if req.conversation_id:
                    if not (caps and caps.load_session):
                        raise Unsupported(
                            "this ACP agent cannot reopen sessions (it has no loadSession)"
                        )
                    conv.session_id = req.conversation_id
                    self._opening[req.conversation_id] = conv
                    conv.begin_replay()
                    try:
                        raw = await agent.request(
                            "session/load",
                            {**base, "sessionId": req.conversation_id},
                            timeout=timeout,
                        )
                        await self._replayed(agent)
                    finally:
                        self._opening.pop(req.conversation_id, None)
                        conv.end_replay()
                else:
                    self._creating += 1
                    try:
                        raw = await agent.request("session/new", base, timeout=timeout)
                    finally:
                        self._creating -= 1
                    if not isinstance(raw, dict) or not isinstance(raw.get("sessionId"), str):
                        raise AgentAPIError("the agent answered session/new without a sessionId")
                    conv.session_id = raw["sessionId"]
                    self._known.add(conv.session_id)
            except RequestError as exc:
                if exc.code == AUTH_REQUIRED:
                    raise SignedOut(needs_sign_in(self.auth_hint())) from None
                if req.conversation_id and _not_found(exc):
                    raise ConversationNotFound(
                        f"the ACP agent has no session {req.conversation_id!r}"
                    ) from None
                raise AgentAPIError(agent_error("open the session", exc)) from None
            except (AgentGone, TimeoutError) as exc:
                raise AgentAPIError(str(exc)) from None
            with self._lock:
                self._sessions[conv.session_id] = conv
            self._known.add(conv.session_id)
            self._apply_session_state(conv, raw)
            for update in self._early.pop(conv.session_id, []):
                conv.on_update(update)
            if not self._creating:
                self._early.clear()
            if self._opts.mode and conv.mapper.mode != self._opts.mode:
                await self._set_mode(conv, self._opts.mode)
            # Only a model other than the session's own: the host asks for the default it
            # shows (the agent's current model, listed first) when no client chose one, and
            # an agent may record every switch (Claude Code replays each as a /model prompt).
            mapper = conv.mapper
            if (
                req.model
                and not req.conversation_id
                and mapper.models
                and req.model != mapper.model
            ):
                try:
                    await conv.set_model_here(req.model)
                except AgentAPIError as exc:
                    log.warning("acp: the requested model was not applied: %s", exc)
            return conv

        return await self._loop.run(go())

    async def _load(self, agent: AgentProcess, params: dict[str, Any]) -> Any:
        """session/load; a session this provider saw may take a moment to be on the agent's disk.

        (Claude Code writes its transcript shortly after a turn ends, so a reopen right after a
        close can find nothing yet; an id never seen here gets no second try.)
        """
        tries = LOAD_RETRIES if params["sessionId"] in self._known else 1
        for attempt in range(tries):
            try:
                raw = await agent.request(
                    "session/load", params, timeout=self._opts.request_timeout
                )
                await self._replayed(agent)
                return raw
            except RequestError as exc:
                if attempt == tries - 1 or not _not_found(exc):
                    raise
            await asyncio.sleep(LOAD_RETRY_DELAY)
        raise AssertionError("unreachable")

    async def _replayed(self, agent: AgentProcess) -> None:
        """Wait until the agent's replay of a loaded session has arrived.

        ACP has the agent stream a session's history before it answers session/load; Gemini CLI
        answers first and streams after, so the replay would fall into the next turn (or be
        lost). A round trip after the answer ends it: the agent answers the next request only
        after what it had started sending.
        """
        try:
            await agent.request(SYNC_METHOD, {}, timeout=SYNC_TIMEOUT)
        except (RequestError, TimeoutError):
            return  # answered (method not found), or an agent that ignores it: carry on

    async def previous(self, workdir: str) -> list[PreviousConversation]:
        """agentapi Importer: the sessions the agent lists (``session/list``) for ``workdir``.

        "" lists every working directory. Pages are followed up to MAX_LISTED sessions.
        """
        self._require_started()
        if not self.capabilities().import_:
            raise Unsupported("this ACP agent cannot list its sessions (no session/list)")
        cwd = os.path.realpath(workdir) if workdir else ""

        async def go() -> list[PreviousConversation]:
            agent = await self._ensure_agent()
            out: list[PreviousConversation] = []
            cursor: str | None = None
            while len(out) < MAX_LISTED:
                params: dict[str, Any] = {}
                if cwd:
                    params["cwd"] = cwd
                if cursor:
                    params["cursor"] = cursor
                try:
                    raw = await agent.request(
                        "session/list", params, timeout=self._opts.request_timeout
                    )
                    page = S.ListSessionsResponse.model_validate(raw)
                except RequestError as exc:
                    raise AgentAPIError(agent_error("list its sessions", exc)) from None
                except ValidationError:
                    raise AgentAPIError("the agent's session list was malformed") from None
                except (AgentGone, TimeoutError) as exc:
                    raise AgentAPIError(str(exc)) from None
                for info in page.sessions:
                    if cwd and os.path.realpath(info.cwd) != cwd:
                        continue
                    updated = _time(info.updated_at)
                    out.append(
                        PreviousConversation(
                            id=info.session_id,
                            title=info.title or "",
                            workdir=info.cwd,
                            created_at=updated,
                            updated_at=updated,
                        )
                    )
                cursor = page.next_cursor
                if not cursor:
                    break
            return out[:MAX_LISTED]

        return await self._loop.run(go(), cancel_on_abort=True)

    async def in_use(self, ids: list[str]) -> list[str]:
        """agentapi Importer: ACP says nothing of other clients, so none is known in use."""
        self._require_started()
        return []

    async def read_history(self, req: ReadRequest) -> History:
        """agentapi HistoryReader: a conversation's record without opening it for use.

        A session this process holds gives what the bridge saw of it; any other is loaded
        (session/load, its replay collected and nothing emitted) and then kept reattachable.
        """
        self._require_started()
        workdir = os.path.realpath(req.workdir or self._opts.workdir or os.getcwd())

        async def go() -> History:
            sid = req.conversation_id
            held = self._sessions.get(sid) or self._detached.get(sid)
            agent = await self._ensure_agent()
            if held is not None and held.agent is agent:
                return held.recorded()
            caps = self._init.agent_capabilities if self._init else None
            if not (caps and caps.load_session):
                raise Unsupported("this ACP agent cannot read sessions back (no loadSession)")
            conv = AcpConversation(
                self._loop,
                agent,
                _NO_EVENTS,
                self._opts,
                workdir,
                prompt_caps=caps.prompt_capabilities,
                on_closed=self._forget,
                auth_hint=self.auth_hint(),
            )
            conv.session_id = sid
            self._opening[sid] = conv
            conv.begin_replay()
            try:
                raw = await self._load(agent, {"cwd": workdir, "mcpServers": [], "sessionId": sid})
            except RequestError as exc:
                if _not_found(exc):
                    raise ConversationNotFound(f"the ACP agent has no session {sid!r}") from None
                raise AgentAPIError(agent_error("read the session", exc)) from None
            except (AgentGone, TimeoutError) as exc:
                raise AgentAPIError(str(exc)) from None
            finally:
                self._opening.pop(sid, None)
                conv.end_replay()
            self._known.add(sid)
            self._apply_session_state(conv, raw)
            history = conv.recorded()
            conv.detach()
            return history

        return await self._loop.run(go())

    def _apply_session_state(self, conv: AcpConversation, raw: Any) -> None:
        if not isinstance(raw, dict):
            return
        mapper = conv.mapper
        events = []
        modes = raw.get("modes")
        if isinstance(modes, dict) and isinstance(modes.get("currentModeId"), str):
            mapper.mode = modes["currentModeId"]
            mapper.modes = [
                str(m.get("id")) for m in modes.get("availableModes") or [] if isinstance(m, dict)
            ]
            events.append(mapper.execution())
        if isinstance(raw.get("configOptions"), list):
            events += mapper.config_options(config_options(raw["configOptions"]))
        events += mapper.unstable_model_state(raw.get("models"))
        if mapper.models:
            self._models = current_first(mapper.models, mapper.model)
            self._models_known = True
        conv.emit_all(events)

    async def _set_mode(self, conv: AcpConversation, mode: str) -> None:
        if conv.mapper.modes and mode not in conv.mapper.modes:
            raise AgentAPIError(
                f"mode {mode!r} is not one the agent offers ({', '.join(conv.mapper.modes)})"
            )
        try:
            await conv.agent.request(
                "session/set_mode",
                {"sessionId": conv.session_id, "modeId": mode},
                timeout=self._opts.request_timeout,
            )
        except RequestError as exc:
            raise AgentAPIError(agent_error(f"switch to mode {mode!r}", exc)) from None
        except (AgentGone, TimeoutError) as exc:
            raise AgentAPIError(str(exc)) from None
        conv.mapper.mode = mode
        conv.emit_all([conv.mapper.execution()])

    def _forget(self, conv: AcpConversation) -> None:
        with self._lock:
            if self._sessions.get(conv.session_id) is conv:
                del self._sessions[conv.session_id]
        agent = self._agent
        if conv.session_id and agent is conv.agent and not agent.exited.is_set():
            self._detached[conv.session_id] = conv
            while len(self._detached) > MAX_DETACHED:
                oldest = self._detached.pop(next(iter(self._detached)))
                # Its next reopen uses session/load; the agent may free it meanwhile.
                self._loop.call_soon(self._spawn_close, agent, oldest.session_id)

    def _spawn_close(self, agent: AgentProcess, session_id: str) -> None:
        task = asyncio.get_running_loop().create_task(self._close_session(agent, session_id))
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    def _open_conversations(self) -> list[AcpConversation]:
        with self._lock:
            return list(self._sessions.values())

    # -- for doctor, tests and benchmarks --------------------------------------------------

    def stderr_tail(self) -> str:
        """The newest stderr of the running agent, else of the last one that failed to start."""
        agent = self._agent
        return agent.stderr.text() if agent is not None else self.last_stderr

    def kill_agent(self) -> None:
        """SIGKILL the running agent (a fault tests and benchmarks need on demand)."""
        agent = self._agent
        if agent is not None:
            self._loop.call_soon(agent.kill)


class _NoEvents:
    """The sink of a session loaded only to read it: what it reports goes nowhere."""

    def emit(self, event: Event) -> None:
        return None


_NO_EVENTS = _NoEvents()


def _time(value: str | None) -> datetime | None:
    if not value:
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None


#: How agents say "no such session" besides ACP's -32002: most say "not found" or "no session";
#: Gemini CLI answers session/load of an unknown id -32603 'Invalid session identifier "..."',
#: or 'No previous sessions found for this project.' while the working directory has none.
_NOT_FOUND_WORDS = (
    "not found",
    "no session",
    "invalid session identifier",
    "no previous sessions found",
)


def _not_found(exc: RequestError) -> bool:
    text = error_detail(exc).lower()
    return exc.code == NOT_FOUND or any(words in text for words in _NOT_FOUND_WORDS)


_REQUESTS: dict[str, Any] = {
    "session/update": S.SessionNotification,
    "session/request_permission": S.RequestPermissionRequest,
    "fs/read_text_file": S.ReadTextFileRequest,
    "fs/write_text_file": S.WriteTextFileRequest,
    "terminal/create": S.CreateTerminalRequest,
    "terminal/output": S.TerminalOutputRequest,
    "terminal/wait_for_exit": S.WaitForTerminalExitRequest,
    "terminal/kill": S.KillTerminalRequest,
    "terminal/release": S.ReleaseTerminalRequest,
}


async def _dispatch(conv: AcpConversation, method: str, req: Any) -> Any:
    if method == "session/update":
        conv.on_update(req.update)
        return None
    if method == "session/request_permission":
        return await conv.request_permission(req)
    if method == "fs/read_text_file":
        return conv.read_text_file(req)
    if method == "fs/write_text_file":
        return conv.write_text_file(req)
    if method == "terminal/create":
        return await conv.create_terminal(req)
    if method == "terminal/output":
        return conv.terminal_output(req)
    if method == "terminal/wait_for_exit":
        return await conv.wait_for_terminal_exit(req)
    if method == "terminal/kill":
        return conv.kill_terminal(req)
    return conv.release_terminal(req)
