"""One open Copilot session as an agentapi Conversation.

Methods are called from trio; each one runs its SDK work as a coroutine on the provider's asyncio
thread (``AsyncioThread.run``), where the session, its event handler and the ``EventMapper`` live.
Mapper state is therefore touched by one thread only, and events reach the sink straight from the
SDK's handler (``EventSink.emit`` is thread-safe and never blocks).
"""

from __future__ import annotations

import asyncio
import base64
import concurrent.futures
import logging
from collections.abc import Callable, Coroutine
from typing import TYPE_CHECKING, Any, TypeVar

from ahp_bridge_support import AsyncioThread

from ahp_bridge.agentapi import (
    AgentAPIError,
    AgentUnavailable,
    Answer,
    BackgroundTask,
    BackgroundTaskInactive,
    BackgroundTaskNotFound,
    BackgroundTasks,
    Busy,
    Closed,
    Command,
    CommandOption,
    Event,
    EventKind,
    EventSink,
    FileDiff,
    History,
    InteractionGone,
    InteractionKind,
    InteractionState,
    MCPStatus,
    Prompt,
    SubagentStatus,
    SubmissionUncertain,
    TodoList,
    Unsupported,
)

from .customize import mcp_statuses
from .history import rebuild_history
from .host_tools import HostToolRunner
from .mapping import APPROVE_ONCE, APPROVE_SESSION, EventMapper, todo_rows, usage_from_metrics
from .sdk_errors import is_definite_rejection, plain_error

if TYPE_CHECKING:
    from copilot.session import CopilotSession

log = logging.getLogger(__name__)
T = TypeVar("T")

MAX_TITLE_UTF16 = 100


def clean_title(title: str) -> str:
    """A title the CLI accepts: ≤100 UTF-16 units, no control characters or double quotes, no
    surrounding whitespace. Raises ValueError when nothing usable is left."""
    cleaned = "".join(" " if (ord(c) < 32 or ord(c) == 127) else c for c in title)
    cleaned = cleaned.replace('"', "'").strip()
    out = []
    units = 0
    for ch in cleaned:
        units += 2 if ord(ch) > 0xFFFF else 1
        if units > MAX_TITLE_UTF16:
            break
        out.append(ch)
    result = "".join(out).strip()
    if not result:
        raise ValueError("the title is empty after removing control characters and quotes")
    return result


def prompt_attachments(prompt: Prompt) -> list[dict[str, Any]]:
    """SDK attachments for a prompt's project files and uploads."""
    out: list[dict[str, Any]] = []
    for f in prompt.files:
        att: dict[str, Any] = {"type": "directory" if f.dir else "file", "path": f.path}
        if f.rel:
            att["displayName"] = f.rel
        out.append(att)
    for blob in prompt.attachments:
        if blob.path:
            out.append({"type": "file", "path": blob.path, "displayName": blob.name or blob.path})
        else:
            out.append(
                {
                    "type": "blob",
                    "data": base64.b64encode(blob.data).decode(),
                    "mimeType": blob.mime,
                    "displayName": blob.name,
                }
            )
    return out


class CopilotConversation:
    """An open Copilot session. Create through ``CopilotProvider.open``."""

    def __init__(
        self,
        loop: AsyncioThread,
        sink: EventSink,
        on_closed: Callable[[CopilotConversation], None],
        *,
        host_tools: HostToolRunner | None = None,
        signed_out_hint: str = "",
    ) -> None:
        self._loop = loop
        self._host_tools = host_tools
        self._sink = sink
        self._on_closed = on_closed
        self._mapper = EventMapper(signed_out_hint=signed_out_hint)
        self._session: CopilotSession | None = None
        self._session_id = ""
        self._closed = False
        self._exit_error = ""
        # Futures the SDK's question/elicitation handlers wait on; resolved at close.
        self._parked: set[asyncio.Future[Any]] = set()
        self._tasks: set[asyncio.Task[Any]] = set()
        self._tasks_refreshing = False
        self._last_shells: BackgroundTasks | None = None

    # -- wiring (asyncio thread) ----------------------------------------------------------------

    def note_own_title(self, title: str) -> None:
        """The title this bridge gave the session at create: not news from the CLI."""
        self._mapper.note_own_title(title)

    def attach(self, session: CopilotSession) -> None:
        self._session = session
        self._session_id = session.session_id

    def on_sdk_event(self, ev: Any) -> None:
        """The SDK's event handler: map and emit. Never raises into the SDK dispatcher."""
        if self._closed:
            return
        try:
            data = ev.to_dict()
            self._emit_all(self._mapper.map(data))
            etype = data.get("type")
            if etype == "session.idle" and not data.get("agentId"):
                if self._host_tools is not None:  # the turn is over: so are its tool calls
                    self._host_tools.cancel_all()
                self._spawn(self._refresh_usage())
            elif etype == "session.todos_changed":
                self._spawn(self._refresh_todos())
            elif etype == "session.background_tasks_changed" and not self._tasks_refreshing:
                # Sent often and without data: one re-read at a time is enough.
                self._tasks_refreshing = True
                self._spawn(self._refresh_background_tasks())
        except Exception as exc:
            # Only the event type and the error class: messages can quote event data (prompts).
            log.error("copilot: could not map a %s event (%s)", _etype(ev), type(exc).__name__)

    def _spawn(self, coro: Coroutine[Any, Any, None]) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _read_background_tasks(self) -> BackgroundTasks:
        session = self._require_session()
        try:
            listing = await session.rpc.tasks.list()
        except Exception as exc:
            log.warning("copilot: %s", plain_error("read the background tasks", exc))
            last = self._last_shells.tasks if self._last_shells else []
            return BackgroundTasks(known=False, tasks=list(last))
        shells = [t for t in listing.tasks if getattr(t, "type", "") == "shell"]
        snapshot = BackgroundTasks(known=True, tasks=[_shell_task(t) for t in shells])
        self._last_shells = snapshot
        return snapshot

    async def _refresh_background_tasks(self) -> None:
        try:
            await asyncio.sleep(0)  # let a burst of change events arrive first
            self._tasks_refreshing = False
            if self._closed:
                return
            snapshot = await self._read_background_tasks()
        finally:
            self._tasks_refreshing = False
        if not self._closed:
            self._sink.emit(Event(kind=EventKind.BACKGROUND_TASKS, background_tasks=snapshot))

    async def cancel_background_task(self, task_id: str) -> BackgroundTasks:
        """agentapi BackgroundTaskController: stop one background shell process."""
        from copilot.generated.rpc import TasksCancelRequest

        async def go() -> BackgroundTasks:
            session = self._require_session()
            current = await self._read_background_tasks()
            task = next((t for t in current.tasks if t.id == task_id), None)
            if current.known and task is None:
                raise BackgroundTaskNotFound(f"no background shell task {task_id!r}")
            if task is not None and task.status != "running":
                raise BackgroundTaskInactive(f"background shell task {task_id!r} is {task.status}")
            try:
                result = await session.rpc.tasks.cancel(TasksCancelRequest(id=task_id))
            except Exception as exc:
                raise AgentAPIError(plain_error("stop the background task", exc)) from None
            if not result.cancelled:
                raise BackgroundTaskInactive(f"background shell task {task_id!r} is not running")
            return await self._read_background_tasks()

        return await self._run(go)

    async def _refresh_usage(self) -> None:
        """After each turn: the conversation's AI units so far (EventUsage), when known."""
        session = self._session
        if session is None or self._closed:
            return
        try:
            metrics = await session.rpc.usage.get_metrics()
            usage = usage_from_metrics(metrics.to_dict())
        except Exception as exc:
            log.warning("copilot: %s", plain_error("read the usage", exc))
            return
        if usage is not None and not self._closed:
            self._sink.emit(Event(kind=EventKind.USAGE, usage=usage))

    async def _refresh_todos(self) -> None:
        """The todo list lives in the session's SQL database; the event only says it changed."""
        session = self._session
        if session is None or self._closed:
            return
        try:
            result = await session.rpc.plan.read_sql_todos()
            todos = TodoList(known=True, todos=todo_rows(result.rows))
        except Exception as exc:
            log.warning("copilot: %s", plain_error("read the todo list", exc))
            todos = TodoList(known=False)
        if not self._closed:
            self._sink.emit(Event(kind=EventKind.TODOS, todos=todos))

    def map_raw(self, data: dict[str, Any]) -> None:
        """Map an event already in wire shape (used for replays and the fault runtime)."""
        self._emit_all(self._mapper.map(data))

    async def park(self, *_: Any) -> Any:
        """SDK handler for questions and elicitations: wait until close, never answer.

        Answers go through the pending-request RPCs from ``respond`` instead, keyed by the
        requestId the events carry (the handler itself gets no requestId).
        """
        fut: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._parked.add(fut)
        try:
            return await fut
        finally:
            self._parked.discard(fut)

    def _emit_all(self, events: list[Event]) -> None:
        for event in events:
            self._sink.emit(event)

    def runtime_exited(self, error: str) -> None:
        """Called on the asyncio thread when the CLI process died: fail and close."""
        if self._closed:
            return
        self._exit_error = error
        self._emit_all(self._mapper.end_turn_exit(error))
        self._sink.emit(Event(kind=EventKind.EXIT, error=error))
        self._finish_close()

    def _finish_close(self) -> None:
        self._closed = True
        if self._host_tools is not None:
            self._host_tools.cancel_all()
        for fut in list(self._parked):
            if not fut.done():
                fut.cancel()
        for task in list(self._tasks):
            task.cancel()
        self._on_closed(self)

    # -- helpers ----------------------------------------------------------------------------------

    def _require_session(self) -> CopilotSession:
        if self._closed or self._session is None:
            raise Closed(self._exit_error or "the conversation is closed")
        return self._session

    async def _run(
        self,
        make: Callable[[], Coroutine[Any, Any, T]],
        *,
        read: bool = False,
        submits: str | None = None,
    ) -> T:
        """Run a call on the SDK's loop, as one of this conversation's tasks: a runtime that
        dies cancels it (`_finish_close`). The SDK fails a request it waits on when the CLI's
        output ends, but not when it is already stopping the client, which the provider does
        as soon as it sees the process exit: without the cancel, such a call never returned.
        A call that `submits` something then is SubmissionUncertain (the CLI may have taken
        it); any other call is Closed."""
        if self._closed:
            raise Closed(self._exit_error or "the conversation is closed")

        async def tracked() -> T:
            task = asyncio.current_task()
            if task is not None:
                self._tasks.add(task)
            try:
                return await make()
            finally:
                if task is not None:
                    self._tasks.discard(task)

        try:
            return await self._loop.run(tracked(), cancel_on_abort=read)
        except (asyncio.CancelledError, concurrent.futures.CancelledError):
            if not self._exit_error:
                raise
            if submits is not None:
                raise SubmissionUncertain(f"could not {submits}: {self._exit_error}") from None
            raise Closed(self._exit_error) from None

    # -- agentapi.Conversation ------------------------------------------------------------------

    def id(self) -> str:
        return self._session_id

    async def history(self) -> History:
        async def go() -> History:
            session = self._require_session()
            try:
                events = await session.get_events()
            except Exception as exc:
                raise AgentAPIError(plain_error("read the conversation history", exc)) from None
            return rebuild_history([e.to_dict() for e in events])

        return await self._run(go, read=True)

    async def send(self, prompt: Prompt) -> None:
        await self._submit(prompt.text, prompt_attachments(prompt), display=None)

    async def _submit(
        self, text: str, attachments: list[dict[str, Any]], display: str | None
    ) -> None:
        async def go() -> None:
            session = self._require_session()
            if self._mapper.busy:
                raise Busy("a turn is still running; send again when it has ended")
            kwargs: dict[str, Any] = {"mode": "enqueue"}
            if attachments:
                kwargs["attachments"] = attachments
            if display:
                kwargs["display_prompt"] = display
            self._mapper.submit_turn()  # what the CLI says before send returns is this turn's
            try:
                await session.send(text, **kwargs)
            except BaseException as exc:
                if not self._closed:  # a runtime that died ended the turn already (EXIT last)
                    self._emit_all(self._mapper.turn_not_accepted())
                if not isinstance(exc, Exception):
                    raise
                if is_definite_rejection(exc):
                    raise AgentAPIError(plain_error("send the prompt", exc)) from None
                raise SubmissionUncertain(plain_error("send the prompt", exc)) from None
            self._emit_all(self._mapper.turn_accepted())

        await self._run(go, submits="send the prompt")

    async def commands(self) -> list[Command]:
        async def go() -> list[Command]:
            session = self._require_session()
            try:
                listing = await session.rpc.commands.list()
            except Exception as exc:
                raise AgentAPIError(plain_error("list the commands", exc)) from None
            out = []
            for c in listing.commands:
                kind = getattr(c.kind, "value", c.kind)
                if kind not in ("skill", "client"):
                    continue  # built-ins act on the session; they do not become a prompt
                inp = c.input
                out.append(
                    Command(
                        name=c.name,
                        description=c.description or "",
                        kind="skill" if kind == "skill" else "command",
                        input_hint=(inp.hint or "") if inp else "",
                        aliases=list(c.aliases or []),
                        allow_during_turn=bool(c.allow_during_agent_execution),
                        input_choices=[
                            CommandOption(name=ch.name, description=ch.description or "")
                            for ch in ((inp.choices or []) if inp else [])
                        ],
                        input_required=bool(inp.required) if inp else False,
                    )
                )
            return out

        return await self._run(go, read=True)

    async def run_command(self, name: str, args: Prompt) -> None:
        from copilot.generated.rpc import CommandsInvokeRequest, SlashCommandAgentPromptResult

        async def go() -> tuple[str, str]:
            session = self._require_session()
            if self._mapper.turn.active:
                raise Busy("a turn is still running; run the command when it has ended")
            try:
                result = await session.rpc.commands.invoke(
                    CommandsInvokeRequest(name=name, input=args.text or None)
                )
            except Exception as exc:
                raise AgentAPIError(plain_error(f"run /{name}", exc)) from None
            if not isinstance(result, SlashCommandAgentPromptResult):
                text = getattr(result, "text", "") or getattr(result, "message", "") or ""
                detail = f": {text}" if text else ""
                raise AgentAPIError(f"/{name} did not start a prompt turn{detail}")
            return result.prompt, result.display_prompt

        prompt_text, display = await self._run(go)
        shown = display or f"/{name} {args.text}".rstrip()
        await self._submit(prompt_text, prompt_attachments(args), display=shown)

    async def steer(self, prompt: Prompt) -> None:
        async def go() -> None:
            session = self._require_session()
            if not self._mapper.turn.active:
                raise AgentAPIError("no turn is running to steer")
            kwargs: dict[str, Any] = {"mode": "immediate"}
            attachments = prompt_attachments(prompt)
            if attachments:
                kwargs["attachments"] = attachments
            try:
                message_id = await session.send(prompt.text, **kwargs)
            except Exception as exc:
                if is_definite_rejection(exc):
                    raise AgentAPIError(plain_error("steer the turn", exc)) from None
                raise SubmissionUncertain(plain_error("steer the turn", exc)) from None
            self._mapper.note_steer(str(message_id), prompt.text)

        await self._run(go, submits="steer the turn")

    async def cancel(self) -> None:
        async def go() -> None:
            session = self._require_session()
            self._mapper.note_cancel()
            try:
                await session.abort()
            except Exception as exc:
                raise AgentAPIError(plain_error("cancel the turn", exc)) from None

        await self._run(go)

    async def cancel_subagent(self, agent_id: str) -> None:
        from copilot.generated.rpc import TasksCancelRequest

        async def go() -> None:
            session = self._require_session()
            if agent_id not in self._mapper.subagents:
                raise AgentAPIError(f"no subagent {agent_id!r} in this conversation")
            try:
                result = await session.rpc.tasks.cancel(TasksCancelRequest(id=agent_id))
            except Exception as exc:
                raise AgentAPIError(plain_error("cancel the subagent", exc)) from None
            if not result.cancelled:
                raise AgentAPIError("the subagent is not running")

        await self._run(go)

    async def prompt_subagent(self, agent_id: str, text: str) -> None:
        from copilot.generated.rpc import TasksSendMessageRequest

        async def go() -> None:
            session = self._require_session()
            sub = self._mapper.subagents.get(agent_id)
            if sub is None:
                raise AgentAPIError(f"no subagent {agent_id!r} in this conversation")
            if sub.status is not SubagentStatus.IDLE:
                raise AgentAPIError(f"subagent {agent_id!r} is {sub.status.value}, not idle")
            self._mapper.note_subagent_prompt(agent_id)
            try:
                result = await session.rpc.tasks.send_message(
                    TasksSendMessageRequest(id=agent_id, message=text)
                )
            except Exception as exc:
                self._mapper.prompted.discard(agent_id)
                if is_definite_rejection(exc):
                    raise AgentAPIError(plain_error("prompt the subagent", exc)) from None
                raise SubmissionUncertain(plain_error("prompt the subagent", exc)) from None
            if not result.sent:
                self._mapper.prompted.discard(agent_id)
                raise AgentAPIError(f"the subagent refused the prompt: {result.error or 'busy'}")

        await self._run(go, submits="prompt the subagent")

    async def respond(self, interaction_id: str, answer: Answer) -> None:
        async def go() -> None:
            session = self._require_session()
            inter = self._mapper.pending(interaction_id)
            if inter is None:
                raise InteractionGone(f"interaction {interaction_id!r} is no longer pending")
            if inter.kind is InteractionKind.PERMISSION:
                await self._respond_permission(session, interaction_id, answer, inter)
            elif inter.elicitation is not None:
                await self._respond_elicitation(session, interaction_id, answer, inter)
            else:
                await self._respond_question(session, interaction_id, answer, inter)

        await self._run(go)

    async def _respond_permission(
        self, session: CopilotSession, rid: str, answer: Answer, inter: Any
    ) -> None:
        from copilot.generated.rpc import PermissionDecisionRequest

        allowed = {o.id for o in inter.options}
        if answer.decision not in allowed:
            raise ValueError(f"decision must be one of {sorted(allowed)}, not {answer.decision!r}")
        kind = {APPROVE_ONCE: "approve-once", APPROVE_SESSION: "approve-for-session"}.get(
            answer.decision, "reject"
        )
        state = InteractionState.REJECTED if kind == "reject" else InteractionState.ANSWERED
        result: dict[str, Any] = {"kind": kind}
        if kind == "approve-for-session":
            result.update(self._mapper.session_approvals.get(rid) or {})
        request = PermissionDecisionRequest.from_dict({"requestId": rid, "result": result})
        await self._answer(
            rid, state, lambda: session.rpc.permissions.handle_pending_permission_request(request)
        )

    async def _respond_question(
        self, session: CopilotSession, rid: str, answer: Answer, inter: Any
    ) -> None:
        from copilot.generated.rpc import UIHandlePendingUserInputRequest

        if answer.reject or answer.cancel:
            text, freeform, state = "", True, InteractionState.REJECTED
        else:
            if len(answer.answers) != len(inter.questions):
                raise ValueError(f"expected {len(inter.questions)} answer(s)")
            values = [v for v in answer.answers[0] if v.strip()]
            if not values:
                raise ValueError("the answer is empty")
            question = inter.questions[0]
            text = ", ".join(values)
            freeform = not all(v in question.choices for v in values)
            if freeform and not question.custom:
                raise ValueError("only the listed choices are accepted")
            state = InteractionState.ANSWERED
        request = UIHandlePendingUserInputRequest.from_dict(
            {"requestId": rid, "response": {"answer": text, "wasFreeform": freeform}}
        )
        await self._answer(rid, state, lambda: session.rpc.ui.handle_pending_user_input(request))

    async def _respond_elicitation(
        self, session: CopilotSession, rid: str, answer: Answer, inter: Any
    ) -> None:
        from copilot.generated.rpc import UIHandlePendingElicitationRequest

        result: dict[str, Any]
        if answer.cancel:
            result, state = {"action": "cancel"}, InteractionState.REJECTED
        elif answer.reject:
            result, state = {"action": "decline"}, InteractionState.REJECTED
        else:
            content: dict[str, Any] = {}
            if len(answer.answers) != len(inter.questions):
                raise ValueError(f"expected {len(inter.questions)} answer(s)")
            for question, values in zip(inter.questions, answer.answers, strict=True):
                try:
                    value, answered = question.field_value(list(values))
                except ValueError as exc:
                    raise ValueError(f"{question.field.name}: the answer {exc}") from None
                if answered:
                    content[question.field.name] = value
            result, state = {"action": "accept", "content": content}, InteractionState.ANSWERED
        request = UIHandlePendingElicitationRequest.from_dict({"requestId": rid, "result": result})
        await self._answer(rid, state, lambda: session.rpc.ui.handle_pending_elicitation(request))

    async def _answer(
        self, rid: str, state: InteractionState, call: Callable[[], Coroutine[Any, Any, Any]]
    ) -> None:
        # Noted first: the completion event can arrive before the RPC's reply.
        self._mapper.note_response(rid, state)
        try:
            result = await call()
        except Exception as exc:
            self._mapper.responded.pop(rid, None)
            raise AgentAPIError(plain_error("answer the request", exc)) from None
        if getattr(result, "success", True) is False:
            self._mapper.responded.pop(rid, None)
            raise InteractionGone(f"interaction {rid!r} is no longer pending")

    async def diff(self) -> list[FileDiff]:
        from copilot.generated.rpc import WorkspaceDiffMode, WorkspacesDiffRequest

        async def go() -> list[FileDiff]:
            session = self._require_session()
            try:
                res = await session.rpc.workspaces.diff(
                    WorkspacesDiffRequest(mode=WorkspaceDiffMode.SESSION)
                )
            except Exception as exc:
                raise AgentAPIError(plain_error("read the session's changes", exc)) from None
            if res.is_fallback:
                reason = getattr(res.unavailable_reason, "value", res.unavailable_reason)
                raise Unsupported(f"the session's file changes are unavailable ({reason})")
            return [_file_diff(c) for c in res.changes]

        return await self._run(go, read=True)

    # -- AgentSelector, MCPController, CustomizationsReloader (see customize.py) ----------------

    async def select_agent(self, id: str) -> None:
        from copilot.generated.rpc import AgentSelectRequest

        async def go() -> None:
            session = self._require_session()
            if self._mapper.busy:
                raise Busy("a turn is running; select the agent when it has ended")
            try:
                if id:
                    await session.rpc.agent.select(AgentSelectRequest(name=id))
                else:
                    await session.rpc.agent.deselect()
            except Exception as exc:
                raise AgentUnavailable(plain_error(f"select the agent {id!r}", exc)) from None

        await self._run(go)

    async def mcp_status(self) -> list[MCPStatus]:
        async def go() -> list[MCPStatus]:
            session = self._require_session()
            try:
                listing = await session.rpc.mcp.list()
            except Exception as exc:
                raise AgentAPIError(plain_error("list the MCP servers", exc)) from None
            return mcp_statuses(listing)

        return await self._run(go, read=True)

    async def set_mcp_server_enabled(self, name: str, enabled: bool) -> None:
        from copilot.generated.rpc import MCPDisableRequest, MCPEnableRequest

        async def go() -> None:
            session = self._require_session()
            try:
                if enabled:
                    await session.rpc.mcp.enable(MCPEnableRequest(server_name=name))
                else:
                    await session.rpc.mcp.disable(MCPDisableRequest(server_name=name))
            except Exception as exc:
                verb = "start" if enabled else "stop"
                raise AgentAPIError(plain_error(f"{verb} the MCP server {name!r}", exc)) from None

        await self._run(go)

    async def restart_mcp_server(self, name: str) -> None:
        async def go() -> None:
            session = self._require_session()
            try:
                await session.rpc.mcp.reload()  # the CLI reconnects every server
            except Exception as exc:
                raise AgentAPIError(plain_error(f"restart the MCP server {name!r}", exc)) from None

        await self._run(go)

    async def mcp_sign_in(self, name: str, again: bool) -> str:
        raise Unsupported("MCP sign-in is not offered by this adapter")

    async def reload_customizations(self) -> None:
        async def go() -> None:
            session = self._require_session()
            try:
                await session.rpc.customizations.reload()
            except Exception as exc:
                raise AgentAPIError(plain_error("reload the customizations", exc)) from None

        await self._run(go)

    async def set_model(self, model: str, effort: str, context_size: str) -> None:
        async def go() -> None:
            session = self._require_session()
            kwargs: dict[str, Any] = {}
            if effort:
                kwargs["reasoning_effort"] = effort
            if context_size:
                kwargs["context_tier"] = context_size
            try:
                await session.set_model(model, **kwargs)
            except Exception as exc:
                raise AgentAPIError(plain_error("switch the model", exc)) from None

        await self._run(go)

    async def set_title(self, title: str) -> None:
        from copilot.generated.rpc import NameSetRequest

        name = clean_title(title)

        async def go() -> None:
            session = self._require_session()
            self._mapper.note_own_title(name)
            try:
                await session.rpc.name.set(NameSetRequest(name))
            except Exception as exc:
                self._mapper.own_titles.remove(name)
                raise AgentAPIError(plain_error("set the title", exc)) from None

        await self._run(go)

    async def close(self) -> None:
        async def go() -> None:
            if self._closed:
                return
            session = self._session
            self._mapper.turn_not_accepted()  # a prompt on its way: nothing of it comes now
            self._emit_all(self._mapper.expire_all("conversation closed"))
            self._finish_close()
            if session is not None:
                try:
                    await session.disconnect()
                except Exception as exc:
                    log.warning("copilot: detach failed: %s", plain_error("detach", exc))

        if self._closed or not self._loop.running:
            self._closed = True
            return
        await self._loop.run(go())


def _file_diff(change: Any) -> FileDiff:
    ctype = getattr(change.change_type, "value", str(change.change_type))
    adds = dels = 0
    for line in (change.diff or "").splitlines():
        if line.startswith("+") and not line.startswith("+++"):
            adds += 1
        elif line.startswith("-") and not line.startswith("---"):
            dels += 1
    truncated = bool(change.is_truncated)
    contents = getattr(change, "contents", None)
    return FileDiff(
        path=change.path,
        old_path=change.old_path or "",
        status=ctype,
        additions=adds,
        deletions=dels,
        counts_unknown=truncated,
        truncated=truncated,
        patch=change.diff or "",
        before=(getattr(contents, "before", None) or "") if contents else "",
        after=(getattr(contents, "after", None) or "") if contents else "",
    )


def _shell_task(t: Any) -> BackgroundTask:
    status = str(getattr(t.status, "value", t.status))
    return BackgroundTask(
        id=t.id,
        description=t.description or "",
        command=t.command,
        status=status,
        started_at=t.started_at,
        ended_at=t.completed_at,
    )


def _etype(ev: Any) -> str:
    return str(getattr(ev, "raw_type", None) or getattr(getattr(ev, "type", None), "value", "?"))
