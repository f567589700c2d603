"""A small ACP agent on the official SDK's agent side (``acp.run_agent``), run as a subprocess.

Built the way agentclientprotocol/python-sdk's ``examples/agent.py`` builds one (the wheel ships
no examples). Prompts pick the behaviour (the first word):

- ``answer``: a thought and a streamed answer; ``long``: streams, then waits for session/cancel;
- ``stream N``: N four-character chunks as fast as they go (for bench/acp.py);
- ``permission``: a tool call that asks permission, completed or failed by the answer;
- ``write PATH TEXT`` / ``read PATH [LINE [LIMIT]]``: fs/write_text_file / fs/read_text_file
  through the client (a refusal is said as ``refused CODE: DATA``);
- ``terminal [cwd=DIR] CMD...``: terminal/create (in DIR), wait_for_exit, output, release, shown
  on a tool call;
- ``spawn N CMD...``: N terminals of CMD left running; says JSON ``{"started": [the first line
  of each one's output], "refused": {"code", "data"} or null}`` (the first refusal stops it);
- ``plan``, ``plans``, ``title``, ``usage``, ``mode``: a plan (and the unstable plan_update and
  plan_removed), a session title, usage, a mode change;
- ``garbage``: malformed lines on stdout before answering; ``exit``: the process dies mid-turn;
  ``hangup``: it closes its stdout mid-turn and keeps running.

Sessions are kept as JSON files under ``$ACP_TEST_STORE`` so a new process can ``session/load``
them (replaying user and agent messages). ``$ACP_TEST_NO_LOAD=1`` turns loadSession off;
``$ACP_TEST_AUTH=1`` refuses sessions (auth required) until ``authenticate`` with test-login.
``$ACP_TEST_LATE_REPLAY=1`` answers ``session/load`` first and replays the record after it.
``$ACP_TEST_MODEL`` is the model a session starts on (default the first); every model switch is
logged to ``switched.log`` in the store. ``$ACP_TEST_EARLY_UPDATE=1`` reports a new session's
commands before its ``session/new`` answer (an agent may; the client must not mind).
"""

from __future__ import annotations

import asyncio
import gc
import json
import os
import sys
import uuid
from pathlib import Path
from typing import Any

import pydantic

# The SDK's models are built once and live as long as the agent, which the suite starts about a
# hundred times: the cyclic collector stays off while they are built and never walks them after
# (gc.freeze below), a quarter of the agent's start.
gc.disable()

# And the SDK's models build their validators on first use (pydantic's `defer_build`, which
# changes nothing they accept or dump): of its few hundred, the agent uses a dozen, and building
# all of them was another quarter of its start. Bases' configs are inherited when a model class
# is made, so this has to come before the SDK's import.
pydantic.BaseModel.model_config = {**pydantic.BaseModel.model_config, "defer_build": True}
pydantic.RootModel.model_config = {**pydantic.RootModel.model_config, "defer_build": True}

from acp import (  # noqa: E402
    PROTOCOL_VERSION,
    InitializeResponse,
    LoadSessionResponse,
    NewSessionResponse,
    PromptResponse,
    RequestError,
    SetSessionModeResponse,
    run_agent,
    start_tool_call,
    text_block,
    update_agent_message_text,
    update_agent_thought_text,
    update_tool_call,
    update_user_message_text,
)
from acp import schema as S  # noqa: E402

gc.enable()
gc.freeze()

MODELS = ("model-a", "model-b")
MODES = ("default", "careful")


class TestAgent:
    def __init__(self) -> None:
        self._conn: Any = None
        self._store = Path(os.environ.get("ACP_TEST_STORE") or "/tmp/acp-test-store")
        self._store.mkdir(parents=True, exist_ok=True)
        self._cancel: dict[str, asyncio.Event] = {}
        self._model: dict[str, str] = {}
        self._signed_in = os.environ.get("ACP_TEST_AUTH") != "1"
        self._cwd: dict[str, str] = {}
        self._late: asyncio.Task[None] | None = None

    def on_connect(self, conn: Any) -> None:
        self._conn = conn

    # -- sessions ---------------------------------------------------------------------------

    def _path(self, session_id: str) -> Path:
        return self._store / f"{session_id}.json"

    def _record(self, session_id: str) -> list[list[str]]:
        path = self._path(session_id)
        return json.loads(path.read_text()) if path.exists() else []

    def _append(self, session_id: str, role: str, text: str) -> None:
        record = self._record(session_id)
        record.append([role, text])
        self._path(session_id).write_text(json.dumps(record))

    def _state(self, session_id: str) -> dict[str, Any]:
        model = self._model.setdefault(session_id, os.environ.get("ACP_TEST_MODEL") or MODELS[0])
        return {
            "modes": S.SessionModeState(
                current_mode_id=MODES[0],
                available_modes=[S.SessionMode(id=m, name=m.title()) for m in MODES],
            ),
            "config_options": [
                S.SessionConfigOptionSelect(
                    id="model",
                    name="Model",
                    category="model",
                    type="select",
                    current_value=model,
                    options=[S.SessionConfigSelectOption(value=m, name=m.upper()) for m in MODELS],
                )
            ],
        }

    async def initialize(self, protocol_version: int, **kwargs: Any) -> InitializeResponse:
        return InitializeResponse(
            protocol_version=PROTOCOL_VERSION,
            agent_capabilities=S.AgentCapabilities(
                load_session=os.environ.get("ACP_TEST_NO_LOAD") != "1",
                session_capabilities=S.SessionCapabilities(
                    close=S.SessionCloseCapabilities(), list=S.SessionListCapabilities()
                ),
                prompt_capabilities=S.PromptCapabilities(image=True, embedded_context=True),
            ),
            agent_info=S.Implementation(name="test-agent", title="Test Agent", version="1.0"),
            auth_methods=[
                S.AuthMethodAgent(id="test-login", name="Test login", description="log in first")
            ],
        )

    async def authenticate(self, method_id: str, **kwargs: Any) -> None:
        if method_id != "test-login":
            raise RequestError.invalid_params({"methodId": method_id})
        self._signed_in = True

    async def new_session(self, cwd: str, **kwargs: Any) -> NewSessionResponse:
        if not self._signed_in:
            raise RequestError.auth_required()
        session_id = str(uuid.uuid4())
        self._path(session_id).write_text("[]")
        self._cwd[session_id] = cwd
        if os.environ.get("ACP_TEST_EARLY_UPDATE") == "1":
            await self._conn.session_update(session_id, self._commands_update())
        else:
            asyncio.get_running_loop().call_later(0.01, self._announce_commands, session_id)
        return NewSessionResponse(session_id=session_id, **self._state(session_id))

    def _announce_commands(self, session_id: str) -> None:
        update = self._commands_update()
        asyncio.get_running_loop().create_task(self._conn.session_update(session_id, update))

    def _commands_update(self) -> S.AvailableCommandsUpdate:
        return S.AvailableCommandsUpdate(
            session_update="available_commands_update",
            available_commands=[
                S.AvailableCommand(name="review", description="Review the changes"),
                S.AvailableCommand(
                    name="explain",
                    description="Explain a file",
                    input=S.AvailableCommandInput(S.UnstructuredCommandInput(hint="path")),
                ),
            ],
        )

    async def load_session(self, cwd: str, session_id: str, **kwargs: Any) -> LoadSessionResponse:
        if not self._path(session_id).exists():
            raise RequestError(-32002, "Resource not found", {"uri": session_id})
        with open(self._store / "loaded.log", "a") as f:
            f.write(session_id + "\n")
        replay = self._replay(session_id)
        if os.environ.get("ACP_TEST_LATE_REPLAY") == "1":
            # After the answer, as Gemini CLI does, and before it takes the next request.
            self._late = asyncio.get_running_loop().create_task(replay)
        else:
            await replay
        return LoadSessionResponse(**self._state(session_id))

    async def _replayed(self) -> None:
        if self._late is not None:
            await self._late

    async def ext_method(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        await self._replayed()
        raise RequestError.method_not_found(f"_{method}")

    async def _replay(self, session_id: str) -> None:
        for role, text in self._record(session_id):
            if role == "user":
                update: Any = update_user_message_text(text)
            else:
                update = update_agent_message_text(text)
            await self._conn.session_update(session_id, update)

    async def list_sessions(
        self, cwd: str | None = None, cursor: str | None = None, **kw: Any
    ) -> Any:
        """Sessions with a record, two per page (to exercise the cursor)."""
        names = sorted(p.stem for p in self._store.glob("*.json"))
        start = int(cursor or 0)
        infos = [
            S.SessionInfo(session_id=n, cwd=self._cwd.get(n, cwd or "/"), title=f"Session {n[:4]}")
            for n in names[start : start + 2]
        ]
        more = start + 2 < len(names)
        return S.ListSessionsResponse(sessions=infos, next_cursor=str(start + 2) if more else None)

    async def close_session(self, session_id: str, **kwargs: Any) -> None:
        with open(self._store / "closed.log", "a") as f:
            f.write(session_id + "\n")

    async def set_session_mode(self, mode_id: str, session_id: str, **kwargs: Any) -> Any:
        if mode_id not in MODES:
            raise RequestError.invalid_params({"modeId": mode_id})
        await self._conn.session_update(
            session_id,
            S.CurrentModeUpdate(session_update="current_mode_update", current_mode_id=mode_id),
        )
        return SetSessionModeResponse()

    async def set_config_option(
        self, config_id: str, session_id: str, value: Any, **kwargs: Any
    ) -> Any:
        if config_id != "model" or value not in MODELS:
            raise RequestError.invalid_params({"configId": config_id})
        self._model[session_id] = value
        with open(self._store / "switched.log", "a") as f:
            f.write(f"{session_id} {value}\n")
        return S.SetSessionConfigOptionResponse(
            config_options=self._state(session_id)["config_options"]
        )

    async def cancel(self, session_id: str, **kwargs: Any) -> None:
        event = self._cancel.get(session_id)
        if event is not None:
            event.set()

    # -- prompts ----------------------------------------------------------------------------

    async def prompt(self, prompt: list[Any], session_id: str, **kwargs: Any) -> PromptResponse:
        await self._replayed()
        text = " ".join(getattr(b, "text", "") for b in prompt if getattr(b, "type", "") == "text")
        self._append(session_id, "user", text)
        cancelled = self._cancel[session_id] = asyncio.Event()
        words = text.split()
        verb = words[0] if words else ""
        say = self._say(session_id)
        try:
            handler = getattr(self, f"_do_{verb}", None)
            if handler is None:
                kinds = [getattr(b, "type", "") for b in prompt]
                extra = {
                    k: kinds.count(k) for k in ("image", "resource", "resource_link") if k in kinds
                }
                await say(
                    f"You said: {text}" + (f" {json.dumps(extra, sort_keys=True)}" if extra else "")
                )
                return PromptResponse(stop_reason="end_turn")
            return await handler(session_id, words[1:], cancelled, say)
        finally:
            self._cancel.pop(session_id, None)

    def _say(self, session_id: str) -> Any:
        async def say(text: str) -> None:
            await self._conn.session_update(session_id, update_agent_message_text(text))
            self._append(session_id, "agent", text)

        return say

    async def _do_answer(
        self, sid: str, args: list[str], cancelled: asyncio.Event, say: Any
    ) -> Any:
        await self._conn.session_update(sid, update_agent_thought_text("Thinking it over."))
        for piece in ("Hello ", "from the ", "test agent."):
            await self._conn.session_update(sid, update_agent_message_text(piece))
        self._append(sid, "agent", "Hello from the test agent.")
        return PromptResponse(stop_reason="end_turn")

    async def _do_stream(
        self, sid: str, args: list[str], cancelled: asyncio.Event, say: Any
    ) -> Any:
        """``stream N``: N agent message chunks of four characters, as fast as they go."""
        for _ in range(int(args[0]) if args else 100):
            await self._conn.session_update(sid, update_agent_message_text("xxxx"))
        return PromptResponse(stop_reason="end_turn")

    async def _do_long(self, sid: str, args: list[str], cancelled: asyncio.Event, say: Any) -> Any:
        await say("Working on it")
        try:
            await asyncio.wait_for(cancelled.wait(), 120)
        except TimeoutError:
            return PromptResponse(stop_reason="end_turn")
        return PromptResponse(stop_reason="cancelled")

    async def _do_permission(
        self, sid: str, args: list[str], cancelled: asyncio.Event, say: Any
    ) -> Any:
        call_id = f"call-{uuid.uuid4().hex[:8]}"
        await self._conn.session_update(
            sid,
            start_tool_call(
                call_id,
                "Run echo",
                kind="execute",
                status="pending",
                raw_input={"command": "echo hi"},
            ),
        )
        answer = await self._conn.request_permission(
            session_id=sid,
            tool_call=S.ToolCallUpdate(tool_call_id=call_id, title="Run echo", kind="execute"),
            options=[
                S.PermissionOption(option_id="allow", name="Allow once", kind="allow_once"),
                S.PermissionOption(option_id="always", name="Always allow", kind="allow_always"),
                S.PermissionOption(option_id="deny", name="Deny", kind="reject_once"),
            ],
        )
        outcome = answer.outcome
        if getattr(outcome, "outcome", "") == "cancelled":
            await self._conn.session_update(sid, update_tool_call(call_id, status="failed"))
            return PromptResponse(stop_reason="cancelled")
        if outcome.option_id == "deny":
            await self._conn.session_update(sid, update_tool_call(call_id, status="failed"))
            await say("Not allowed.")
            return PromptResponse(stop_reason="end_turn")
        await self._conn.session_update(
            sid,
            update_tool_call(
                call_id,
                status="completed",
                content=[S.ContentToolCallContent(type="content", content=text_block("hi"))],
            ),
        )
        await say(f"Ran it ({outcome.option_id}).")
        return PromptResponse(stop_reason="end_turn")

    async def _do_write(self, sid: str, args: list[str], cancelled: asyncio.Event, say: Any) -> Any:
        path, content = args[0], " ".join(args[1:]) + "\n"
        call_id = f"edit-{uuid.uuid4().hex[:8]}"
        await self._conn.session_update(
            sid,
            start_tool_call(
                call_id,
                f"Write {path}",
                kind="edit",
                status="in_progress",
                locations=[S.ToolCallLocation(path=path)],
                content=[
                    S.FileEditToolCallContent(
                        type="diff", path=path, old_text=None, new_text=content
                    )
                ],
            ),
        )
        try:
            await self._conn.write_text_file(session_id=sid, path=path, content=content)
        except RequestError as exc:
            await self._conn.session_update(
                sid,
                update_tool_call(
                    call_id,
                    status="failed",
                    content=[
                        S.ContentToolCallContent(type="content", content=text_block(str(exc.data)))
                    ],
                ),
            )
            await say("The client refused the write.")
            return PromptResponse(stop_reason="end_turn")
        await self._conn.session_update(sid, update_tool_call(call_id, status="completed"))
        await say("Written.")
        return PromptResponse(stop_reason="end_turn")

    async def _do_read(self, sid: str, args: list[str], cancelled: asyncio.Event, say: Any) -> Any:
        numbers = [int(a) for a in args[1:3]]
        line = numbers[0] if numbers else None
        limit = numbers[1] if len(numbers) > 1 else None
        try:
            got = await self._conn.read_text_file(
                session_id=sid, path=args[0], line=line, limit=limit
            )
        except RequestError as exc:
            await say(f"refused {exc.code}: {json.dumps(exc.data)}")
            return PromptResponse(stop_reason="end_turn")
        await say(f"content: {got.content}")
        return PromptResponse(stop_reason="end_turn")

    async def _do_terminal(
        self, sid: str, args: list[str], cancelled: asyncio.Event, say: Any
    ) -> Any:
        cwd = None
        if args and args[0].startswith("cwd="):
            cwd, args = args[0].removeprefix("cwd="), args[1:]
        call_id = f"term-{uuid.uuid4().hex[:8]}"
        await self._conn.session_update(
            sid, start_tool_call(call_id, " ".join(args), kind="execute", status="pending")
        )
        try:
            term = await self._conn.create_terminal(
                command=" ".join(args), session_id=sid, cwd=cwd, output_byte_limit=4096
            )
        except RequestError as exc:
            await self._conn.session_update(sid, update_tool_call(call_id, status="failed"))
            await say(f"refused {exc.code}: {json.dumps(exc.data)}")
            return PromptResponse(stop_reason="end_turn")
        await self._conn.session_update(
            sid,
            update_tool_call(
                call_id,
                status="in_progress",
                content=[S.TerminalToolCallContent(type="terminal", terminal_id=term.terminal_id)],
            ),
        )
        waiter = asyncio.ensure_future(
            self._conn.wait_for_terminal_exit(session_id=sid, terminal_id=term.terminal_id)
        )
        stop = asyncio.ensure_future(cancelled.wait())
        done, _ = await asyncio.wait({waiter, stop}, return_when=asyncio.FIRST_COMPLETED)
        if stop in done:
            await self._conn.kill_terminal(session_id=sid, terminal_id=term.terminal_id)
            await waiter
        stop.cancel()
        output = await self._conn.terminal_output(session_id=sid, terminal_id=term.terminal_id)
        status = (
            "completed" if output.exit_status and output.exit_status.exit_code == 0 else "failed"
        )
        await self._conn.session_update(sid, update_tool_call(call_id, status=status))
        await self._conn.release_terminal(session_id=sid, terminal_id=term.terminal_id)
        if stop in done:
            return PromptResponse(stop_reason="cancelled")
        code = output.exit_status.exit_code if output.exit_status else None
        await say(f"exit {code}: {output.output.strip()}")
        return PromptResponse(stop_reason="end_turn")

    async def _do_spawn(self, sid: str, args: list[str], cancelled: asyncio.Event, say: Any) -> Any:
        """``spawn N CMD...``: N terminals left running, each reported by its first output line."""
        ids: list[str] = []
        refused: dict[str, Any] | None = None
        for _ in range(int(args[0])):
            try:
                term = await self._conn.create_terminal(command=" ".join(args[1:]), session_id=sid)
            except RequestError as exc:
                refused = {"code": exc.code, "data": exc.data}
                break
            ids.append(term.terminal_id)
        started = []
        for terminal_id in ids:
            # The agent's side has no event for output: it asks until a whole line is there.
            for _ in range(1000):
                out = await self._conn.terminal_output(session_id=sid, terminal_id=terminal_id)
                if "\n" in out.output:
                    break
                await asyncio.sleep(0.01)
            started.append(out.output.split("\n")[0])
        await say(json.dumps({"started": started, "refused": refused}))
        return PromptResponse(stop_reason="end_turn")

    async def _do_plans(self, sid: str, args: list[str], cancelled: asyncio.Event, say: Any) -> Any:
        """The unstable multi-plan updates: an item plan, then its removal."""
        await self._conn.session_update(
            sid,
            S.AgentPlanContentUpdate(
                session_update="plan_update",
                plan=S.PlanUpdateItems(
                    type="items",
                    plan_id="p1",
                    entries=[S.PlanEntry(content="Only step", priority="high", status="pending")],
                ),
            ),
        )
        await self._conn.session_update(
            sid, S.AgentPlanRemovedUpdate(session_update="plan_removed", plan_id="p1")
        )
        await say("Plans.")
        return PromptResponse(stop_reason="end_turn")

    async def _do_plan(self, sid: str, args: list[str], cancelled: asyncio.Event, say: Any) -> Any:
        await self._conn.session_update(
            sid,
            S.AgentPlanUpdate(
                session_update="plan",
                entries=[
                    S.PlanEntry(content="Read the code", priority="high", status="completed"),
                    S.PlanEntry(content="Fix the bug", priority="medium", status="in_progress"),
                    S.PlanEntry(content="Write a test", priority="low", status="pending"),
                ],
            ),
        )
        await say("Planned.")
        return PromptResponse(stop_reason="end_turn")

    async def _do_title(self, sid: str, args: list[str], cancelled: asyncio.Event, say: Any) -> Any:
        await self._conn.session_update(
            sid, S.SessionInfoUpdate(session_update="session_info_update", title="A test title")
        )
        await say("Titled.")
        return PromptResponse(stop_reason="end_turn")

    async def _do_usage(self, sid: str, args: list[str], cancelled: asyncio.Event, say: Any) -> Any:
        await self._conn.session_update(
            sid, S.UsageUpdate(session_update="usage_update", used=1200, size=200000)
        )
        await say("Counted.")
        return PromptResponse(
            stop_reason="end_turn",
            usage=S.Usage(total_tokens=30, input_tokens=20, output_tokens=10),
        )

    async def _do_mode(self, sid: str, args: list[str], cancelled: asyncio.Event, say: Any) -> Any:
        await self._conn.session_update(
            sid,
            S.CurrentModeUpdate(session_update="current_mode_update", current_mode_id="careful"),
        )
        await say("Careful now.")
        return PromptResponse(stop_reason="end_turn")

    async def _do_garbage(
        self, sid: str, args: list[str], cancelled: asyncio.Event, say: Any
    ) -> Any:
        out = sys.stdout.buffer
        for line in (
            b"this is not json SECRET-CONTENT\n",
            b"[1, 2, 3]\n",
            b'{"jsonrpc": "2.0", "method": 7}\n',
            b'{"jsonrpc": "2.0", "id": [1], "result": {}}\n',
            b'{"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": "'
            + sid.encode()
            + b'", "update": {"sessionUpdate": "no_such_kind", "secret": "SECRET-CONTENT"}}}\n',
            b'{"jsonrpc": "2.0", "method": "x/unknown", "params": {"secret": "SECRET-CONTENT"}}\n',
        ):
            out.write(line)
        out.flush()
        await say("Still here.")
        return PromptResponse(stop_reason="end_turn")

    async def _do_hangup(
        self, sid: str, args: list[str], cancelled: asyncio.Event, say: Any
    ) -> Any:
        """Close stdout and keep running: an agent that can no longer answer."""
        await say("Hanging up")
        await asyncio.sleep(0.05)
        os.close(1)
        await asyncio.sleep(60)
        return PromptResponse(stop_reason="end_turn")

    async def _do_exit(self, sid: str, args: list[str], cancelled: asyncio.Event, say: Any) -> Any:
        await say("About to go")
        await asyncio.sleep(0.05)
        sys.stderr.write("test agent: exiting on purpose\n")
        sys.stderr.flush()
        os._exit(3)


async def main() -> None:
    await run_agent(TestAgent(), use_unstable_protocol=True)


if __name__ == "__main__":
    asyncio.run(main())
