"""One ACP session as an agentapi Conversation, and the client side the agent calls back.

Methods are called from trio and run their work as coroutines on the adapter's asyncio thread
(``AsyncioThread.run``), where the session's ``SessionMapper``, its pending permissions, its
workspace and its terminals live; the agent's requests for this session arrive on that thread
too (through the provider's router). So the state is touched by one thread only, and events go
to the sink straight from there (``EventSink.emit`` is thread-safe and never blocks).
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import logging
from collections.abc import Callable, Coroutine
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, TypeVar

from acp import schema as S
from acp.exceptions import RequestError
from ahp_bridge_support import AsyncioThread
from pydantic import ValidationError

from ahp_bridge.agentapi import (
    AgentAPIError,
    Answer,
    Busy,
    Closed,
    Command,
    Event,
    EventKind,
    EventSink,
    FileDiff,
    History,
    InteractionGone,
    Prompt,
    Unsupported,
)

from .mapping import Record, SessionMapper
from .process import AgentGone, AgentProcess
from .terminals import Terminal, Terminals
from .workspace import Workspace

if TYPE_CHECKING:
    from .options import AcpOptions

log = logging.getLogger(__name__)
T = TypeVar("T")

AUTH_REQUIRED = -32000
CANCEL_GRACE = 3.0
TAIL_INTERVAL = 0.1
"""A running terminal's output updates its tool call at most this often (seconds)."""
_TURN_CONTENT = frozenset(
    {"agent_message_chunk", "agent_thought_chunk", "tool_call", "tool_call_update", "plan"}
)
_REPLAY_DROPPED = frozenset({EventKind.ITEM, EventKind.DELTA, EventKind.INTERACTION})
"""What a session/load replay reports that only its history keeps (not re-emitted live)."""


def now() -> datetime:
    return datetime.now(UTC)


def error_detail(exc: RequestError) -> str:
    """The agent's own words for an error: its message, and ``data.details`` when it is text."""
    message = str(exc).strip().splitlines()[0][:300] if str(exc).strip() else "no message"
    data = exc.data
    if isinstance(data, dict):
        for key in ("details", "message"):
            detail = data.get(key)
            if isinstance(detail, str) and detail.strip():
                return f"{message}: {detail.strip().splitlines()[0][:300]}"
    return message


def agent_error(what: str, exc: RequestError) -> str:
    """A one-line account of an agent's JSON-RPC error (bounded; never other data)."""
    return f"the agent could not {what}: {error_detail(exc)} (error {exc.code})"


def needs_sign_in(hint: str) -> str:
    """What to say when the agent refuses for want of a sign-in (``hint``: how to sign in)."""
    return f"the agent needs a sign-in: {hint}"


class AcpConversation:
    """An open ACP session. Create through ``AcpProvider.open``."""

    def __init__(
        self,
        loop: AsyncioThread,
        agent: AgentProcess,
        sink: EventSink,
        opts: AcpOptions,
        workdir: str,
        *,
        prompt_caps: S.PromptCapabilities | None,
        on_closed: Callable[[AcpConversation], None],
        auth_hint: str,
        renew_after_cancel: bool = False,
    ) -> None:
        self._loop = loop
        self.agent = agent
        self._sink = sink
        self._opts = opts
        self._on_closed = on_closed
        self._auth_hint = auth_hint
        self._renew_after_cancel = renew_after_cancel
        self._prompt_caps = prompt_caps or S.PromptCapabilities()
        self.session_id = ""
        self.workdir = workdir
        self.workspace = Workspace([workdir], max_bytes=opts.max_file_bytes)
        self.terminals = Terminals(
            self.workspace,
            max_output=opts.terminal_output_bytes,
            timeout=opts.terminal_timeout,
            max_terminals=opts.max_terminals,
            environment=opts.environment,
            on_output=self._terminal_output,
        )
        self.mapper = SessionMapper(now, self._terminal_view, text_limit=opts.max_tool_text_bytes)
        self.closed = False
        self._exit_error = ""
        self._replay: list[Event] = []
        self._history = History()
        self.record = Record()
        """The transcript as this bridge saw it (replayed, then live), for a reattach."""
        self._answers: dict[str, asyncio.Future[str | None]] = {}
        self._prompt_task: asyncio.Task[None] | None = None
        self._heard = asyncio.Event()
        """Set once the agent reported anything for the running turn."""
        self._tasks: set[asyncio.Task[None]] = set()
        self._tail_sent: dict[str, float] = {}
        self._tail_due: set[str] = set()

    # -- wiring (asyncio thread) ------------------------------------------------------------

    def emit_all(self, events: list[Event]) -> None:
        if self.closed:
            return
        for event in events:
            self.record.feed(event)
            if self.mapper.replaying:
                if event.kind not in _REPLAY_DROPPED:
                    self._replay.append(event)
            else:
                self._sink.emit(event)

    def begin_replay(self) -> None:
        self.mapper.replaying = True
        self._replay = []

    def end_replay(self) -> None:
        self.mapper.replaying = False
        live, self._replay = self._replay, []
        self._history = self.recorded()
        for event in live:  # titles, modes, todos the replay reported still count
            self._sink.emit(event)

    def reattach(self, earlier: AcpConversation) -> None:
        """Continue a session this process still holds, closed here before (no session/load).

        The history is what the bridge saw of it; the mapper keeps its ids, commands, modes
        and models, so nothing it reported is lost and no item id repeats.
        """
        self.session_id = earlier.session_id
        self.mapper = earlier.mapper
        self.mapper.replaying = False
        self.mapper.set_terminal_lookup(self._terminal_view)
        self.record = earlier.record
        self._history = self.recorded()

    def recorded(self) -> History:
        """The transcript as the bridge saw it (replayed, then live)."""
        return History(
            items=self.record.history(), model=self.mapper.model, truncated=self.record.truncated
        )

    def detach(self) -> None:
        """Stop reporting, and leave the session to the agent (reattachable by the provider)."""
        self._finish_close()

    def on_update(self, update: Any) -> None:
        if self.mapper.active and getattr(update, "session_update", "") in _TURN_CONTENT:
            self._heard.set()
        self.emit_all(self.mapper.update(update))

    def _terminal_view(self, terminal_id: str) -> tuple[str, int | None, bool] | None:
        term = self.terminals.known(terminal_id)
        if term is None:
            return None
        code = term.status.exit_code if term.status else None
        return term.text(), code, term.done.is_set()

    def _terminal_output(self, term: Terminal) -> None:
        """Show new terminal output on its tool call, at most every TAIL_INTERVAL seconds."""
        if term.id in self._tail_due:
            return
        loop = asyncio.get_running_loop()
        wait = self._tail_sent.get(term.id, 0.0) + TAIL_INTERVAL - loop.time()
        if wait > 0 and not term.done.is_set():
            self._tail_due.add(term.id)
            loop.call_later(wait, self._send_tail, term)
        else:
            self._send_tail(term)

    def _send_tail(self, term: Terminal) -> None:
        self._tail_due.discard(term.id)
        self._tail_sent[term.id] = asyncio.get_running_loop().time()
        self.emit_all(self.mapper.terminal_changed(term.id))

    def runtime_exited(self, error: str) -> None:
        """The agent process went away: fail the turn, expire what waited, EventExit, closed."""
        if self.closed:
            return
        self._exit_error = error
        self._settle_answers()
        events = self.mapper.expire_pending("the agent exited")
        events += self.mapper.fail_turn(error)
        self.emit_all(events)
        self._sink.emit(Event(kind=EventKind.EXIT, error=error))
        self._finish_close()

    def _finish_close(self) -> None:
        self.closed = True
        for task in list(self._tasks):
            task.cancel()
        self._settle_answers()
        self.terminals.close_all()
        self._on_closed(self)

    def _settle_answers(self) -> None:
        for fut in self._answers.values():
            if not fut.done():
                fut.set_result(None)
        self._answers.clear()

    # -- the client side: what the agent asks of us (asyncio thread) ------------------------

    async def request_permission(self, req: S.RequestPermissionRequest) -> dict[str, Any]:
        if self.closed or not req.options:
            return {"outcome": {"outcome": "cancelled"}}
        pending, events = self.mapper.permission(req.tool_call, req.options)
        fut: asyncio.Future[str | None] = asyncio.get_running_loop().create_future()
        self._answers[pending.interaction.id] = fut
        self.emit_all(events)
        try:
            option = await fut
        finally:
            self._answers.pop(pending.interaction.id, None)
        if option is None:
            return {"outcome": {"outcome": "cancelled"}}
        return {"outcome": {"outcome": "selected", "optionId": option}}

    def read_text_file(self, req: S.ReadTextFileRequest) -> dict[str, Any]:
        return {"content": self.workspace.read(req.path, req.line, req.limit)}

    def write_text_file(self, req: S.WriteTextFileRequest) -> dict[str, Any]:
        self.workspace.write(req.path, req.content)
        return {}

    async def create_terminal(self, req: S.CreateTerminalRequest) -> dict[str, Any]:
        env = {e.name: e.value for e in req.env or []}
        term = await self.terminals.create(
            req.command, req.args, env, req.cwd, req.output_byte_limit
        )
        return {"terminalId": term.id}

    def terminal_output(self, req: S.TerminalOutputRequest) -> dict[str, Any]:
        term = self.terminals.get(req.terminal_id)
        out: dict[str, Any] = {"output": term.text(), "truncated": term.truncated}
        if term.status is not None:
            out["exitStatus"] = _exit_status(term)
        return out

    async def wait_for_terminal_exit(self, req: S.WaitForTerminalExitRequest) -> dict[str, Any]:
        await self.terminals.wait_for_exit(req.terminal_id)
        return _exit_status(self.terminals.get(req.terminal_id))

    def kill_terminal(self, req: S.KillTerminalRequest) -> dict[str, Any]:
        self.terminals.kill(req.terminal_id)
        return {}

    def release_terminal(self, req: S.ReleaseTerminalRequest) -> dict[str, Any]:
        self.terminals.release(req.terminal_id)
        return {}

    # -- helpers ----------------------------------------------------------------------------

    def _check_open(self) -> None:
        if self.closed:
            raise Closed(self._exit_error or "the conversation is closed")

    async def _run(self, make: Callable[[], Coroutine[Any, Any, T]], *, read: bool = False) -> T:
        self._check_open()
        return await self._loop.run(make(), cancel_on_abort=read)

    def _blocks(self, prompt: Prompt, text: str) -> list[dict[str, Any]]:
        blocks: list[dict[str, Any]] = []
        if text:
            blocks.append({"type": "text", "text": text})
        for f in prompt.files:
            name = f.rel or f.path
            blocks.append({"type": "resource_link", "uri": f"file://{f.path}", "name": name})
        for blob in prompt.attachments:
            if blob.mime.startswith("image/"):
                if not self._prompt_caps.image:
                    raise AgentAPIError(
                        "this ACP agent does not accept images (its promptCapabilities.image is "
                        "off); send the image as a file instead"
                    )
                blocks.append(
                    {
                        "type": "image",
                        "mimeType": blob.mime,
                        "data": base64.b64encode(blob.data).decode(),
                    }
                )
            elif blob.path:
                blocks.append(
                    {"type": "resource_link", "uri": f"file://{blob.path}", "name": blob.name}
                )
            elif blob.mime == "text/plain" and self._prompt_caps.embedded_context:
                blocks.append(
                    {
                        "type": "resource",
                        "resource": {
                            "uri": f"attachment:{blob.name or 'text'}",
                            "mimeType": "text/plain",
                            "text": blob.data.decode("utf-8", "replace"),
                        },
                    }
                )
            else:
                raise AgentAPIError(
                    f"this ACP agent cannot take the attachment {blob.name!r} ({blob.mime})"
                )
        if not blocks:
            blocks.append({"type": "text", "text": ""})
        return blocks

    async def _start_turn(self, prompt: Prompt, text: str, shown: str) -> None:
        self._check_open()
        if self.mapper.active:
            raise Busy("a turn is still running; send again when it has ended")
        blocks = self._blocks(prompt, text)
        self.emit_all(self.mapper.begin_turn(prompt, shown))
        self._heard = asyncio.Event()
        params = {"sessionId": self.session_id, "prompt": blocks}
        self._prompt_task = asyncio.get_running_loop().create_task(self._prompt(params))

    async def _prompt(self, params: dict[str, Any]) -> None:
        try:
            raw = await self.agent.request("session/prompt", params, timeout=None)
        except AgentGone:
            return  # the provider's watch reports the exit to every conversation
        except RequestError as exc:
            if exc.code == AUTH_REQUIRED:
                error = needs_sign_in(self._auth_hint)
            else:
                error = agent_error("run the prompt", exc)
            self.emit_all(self.mapper.fail_turn(error))
            return
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # never let a turn die silently
            log.error("acp: the prompt failed (%s)", type(exc).__name__)
            self.emit_all(self.mapper.fail_turn("the bridge lost the prompt's result"))
            return
        try:
            resp = S.PromptResponse.model_validate(raw)
        except ValidationError:
            log.warning("acp: dropped a malformed session/prompt result from the agent")
            self.emit_all(self.mapper.fail_turn("the agent's answer to the prompt was malformed"))
            return
        cancelled = resp.stop_reason == "cancelled" or self.mapper.cancelling
        if cancelled and self._renew_after_cancel and not self.closed:
            await self._renew()  # before the end is reported: the host holds the next prompt
        self.emit_all(self.mapper.end_turn(resp.stop_reason, resp.usage))

    async def _renew(self) -> None:
        """Close the session on the agent and resume it (its record kept), so what the
        cancelled turn left in the agent cannot reach the next prompt."""
        params: dict[str, Any] = {"sessionId": self.session_id}
        timeout = self._opts.request_timeout
        try:
            await self.agent.request("session/close", params, timeout=timeout)
            resume = {**params, "cwd": self.workdir, "mcpServers": []}
            await self.agent.request("session/resume", resume, timeout=timeout)
        except (RequestError, AgentGone, TimeoutError) as exc:
            log.warning("acp: the session was not renewed after a cancel (%s)", type(exc).__name__)

    # -- agentapi.Conversation --------------------------------------------------------------

    def id(self) -> str:
        return self.session_id

    async def history(self) -> History:
        self._check_open()
        return self._history.model_copy(deep=True)

    async def send(self, prompt: Prompt) -> None:
        async def go() -> None:
            await self._start_turn(prompt, prompt.text, "")

        await self._run(go)

    async def commands(self) -> list[Command]:
        async def go() -> list[Command]:
            self._check_open()
            return [c.model_copy() for c in self.mapper.commands]

        return await self._run(go, read=True)

    async def run_command(self, name: str, args: Prompt) -> None:
        async def go() -> None:
            self._check_open()
            if not any(c.name == name for c in self.mapper.commands):
                if not self.mapper.commands:
                    raise Unsupported("this agent offers no commands")
                raise AgentAPIError(f"the agent offers no command /{name}")
            text = f"/{name} {args.text}".rstrip()
            await self._start_turn(args, text, text)

        await self._run(go)

    async def steer(self, prompt: Prompt) -> None:
        raise Unsupported("ACP has no way to add to a running turn")

    async def cancel(self) -> None:
        async def go() -> None:
            self._check_open()
            if not self.mapper.active:
                return
            self.mapper.cancelling = True
            self._settle_answers()  # ACP: pending permission requests are answered "cancelled"
            self.emit_all(self.mapper.expire_pending("the turn was cancelled"))
            if self._heard.is_set():
                await self._send_cancel()
            else:
                task = asyncio.get_running_loop().create_task(self._cancel_when_heard())
                self._tasks.add(task)
                task.add_done_callback(self._tasks.discard)

        await self._run(go)

    async def _send_cancel(self) -> None:
        try:
            await self.agent.notify("session/cancel", {"sessionId": self.session_id})
        except AgentGone as exc:
            raise AgentAPIError(str(exc)) from None

    async def _cancel_when_heard(self) -> None:
        """Cancel once the agent has started the turn (or after CANCEL_GRACE seconds).

        Some agents lose a session/cancel that arrives before they began the prompt (Claude
        Code then answers "cancelled" at once but still runs the prompt, and the next one
        waits behind it), so a cancel right after send waits for the turn's first update.
        """
        turn = self.mapper.turn
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._heard.wait(), CANCEL_GRACE)
        if self.closed or not self.mapper.active or self.mapper.turn != turn:
            return
        with contextlib.suppress(AgentAPIError):
            await self._send_cancel()

    async def cancel_subagent(self, agent_id: str) -> None:
        raise Unsupported("ACP agents report no subagents")

    async def prompt_subagent(self, agent_id: str, text: str) -> None:
        raise Unsupported("ACP agents report no subagents")

    async def respond(self, interaction_id: str, answer: Answer) -> None:
        async def go() -> None:
            self._check_open()
            pending = self.mapper.pending.get(interaction_id)
            fut = self._answers.get(interaction_id)
            if pending is None or fut is None or fut.done():
                raise InteractionGone(f"interaction {interaction_id!r} is no longer pending")
            allowed = [o.id for o in pending.interaction.options]
            if answer.decision not in allowed:
                raise ValueError(f"decision must be one of {allowed}, not {answer.decision!r}")
            fut.set_result(answer.decision)
            self.emit_all(self.mapper.resolve(interaction_id, answer.decision))

        await self._run(go)

    async def diff(self) -> list[FileDiff]:
        """The files this conversation's completed tool calls changed, from the ACP diffs they
        showed (oldText/newText): what the bridge saw, so none from before a restart."""

        async def go() -> list[FileDiff]:
            self._check_open()
            return self.mapper.file_diffs()

        return await self._run(go, read=True)

    async def set_model(self, model: str, effort: str, context_size: str) -> None:
        async def go() -> None:
            await self.set_model_here(model)

        await self._run(go)

    async def set_model_here(self, model: str) -> None:
        """Select ``model`` (asyncio thread): its config option, else ``session/set_model``."""
        self._check_open()
        mapper = self.mapper
        if not mapper.models:
            raise Unsupported("this agent lists no models")
        if model not in {m.id for m in mapper.models}:
            raise AgentAPIError(f"the agent offers no model {model!r}")
        params: dict[str, Any] = {"sessionId": self.session_id}
        if mapper.model_config_id:
            method = "session/set_config_option"
            params.update(configId=mapper.model_config_id, value=model)
        else:
            method = "session/set_model"
            params.update(modelId=model)
        try:
            raw = await self.agent.request(method, params, timeout=self._opts.request_timeout)
        except RequestError as exc:
            raise AgentAPIError(agent_error("switch the model", exc)) from None
        except (AgentGone, TimeoutError) as exc:
            raise AgentAPIError(str(exc)) from None
        events: list[Event] = []
        if isinstance(raw, dict) and isinstance(raw.get("configOptions"), list):
            events = mapper.config_options(config_options(raw["configOptions"]))
        if mapper.model != model:
            mapper.model = model
            events.append(mapper.model_selection())
        self.emit_all(events)

    async def set_title(self, title: str) -> None:
        raise Unsupported("ACP has no way to name a session")

    async def close(self) -> None:
        async def go() -> None:
            if self.closed:
                return
            was_active = self.mapper.active
            self._settle_answers()
            events = self.mapper.expire_pending("conversation closed")
            if was_active:
                self.mapper.cancelling = True
                events += self.mapper.end_turn("cancelled")
            self.emit_all(events)
            self._finish_close()
            if was_active:
                with contextlib.suppress(AgentGone):
                    await self.agent.notify("session/cancel", {"sessionId": self.session_id})
            await self.terminals.closed()

        if self.closed or not self._loop.running:
            self.closed = True
            return
        await self._loop.run(go())


def _exit_status(term: Terminal) -> dict[str, Any]:
    status = term.status
    out: dict[str, Any] = {}
    if status is not None:
        out["exitCode"] = status.exit_code
        out["signal"] = status.signal
    return out


def config_options(raw: list[Any]) -> list[Any]:
    """The entries of a raw ``configOptions`` list the SDK's schema accepts (others skipped)."""
    out = S.LoadSessionResponse.model_validate({"configOptions": raw}).config_options or []
    if len(out) < len(raw):
        log.debug("acp: skipped a config option the SDK's schema does not know")
    return list(out)
