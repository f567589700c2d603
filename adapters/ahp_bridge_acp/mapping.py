"""ACP session updates -> agentapi Events, as a small pure state machine per conversation.

``SessionMapper`` keeps what the mapping needs to remember: the running turn, the text items
being streamed, every tool call's merged state (ACP ``tool_call_update`` carries only what
changed; agentapi items replace whole), the terminals shown on tool calls, the commands, modes
and models the agent reported. It does no I/O and reads no clock: the caller passes ``now`` and a
terminal lookup. The table of the whole mapping is in the package docstring.
"""

from __future__ import annotations

import difflib
import itertools
import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from acp import schema as S

from ahp_bridge.agentapi import (
    COMMAND_PROMPT,
    MAX_FILE_EDITS,
    TODO_DONE,
    TODO_IN_PROGRESS,
    TODO_PENDING,
    Attachment,
    Command,
    Context,
    Delta,
    Event,
    EventKind,
    ExecutionState,
    FileDiff,
    FileEdit,
    Interaction,
    InteractionKind,
    InteractionState,
    Item,
    ItemKind,
    Model,
    ModelSelection,
    Option,
    OutputLine,
    Prompt,
    Todo,
    TodoList,
    TokenUsage,
    ToolCall,
    ToolStatus,
    Turn,
    TurnState,
)

MAX_TAIL_LINES = 10
MAX_LINE_BYTES = 512
MAX_CHANGE_TEXT = 1024 * 1024
"""Characters kept per side of a file change a finished tool reported (a larger one: counts)."""

_STATUS = {
    "pending": ToolStatus.PENDING,
    "in_progress": ToolStatus.RUNNING,
    "completed": ToolStatus.COMPLETED,
    "failed": ToolStatus.FAILED,
}
_ENDED = (ToolStatus.COMPLETED, ToolStatus.FAILED)
_TODO = {"pending": TODO_PENDING, "in_progress": TODO_IN_PROGRESS, "completed": TODO_DONE}
_STOP = {
    "end_turn": TurnState.COMPLETED,
    "max_tokens": TurnState.COMPLETED,
    "max_turn_requests": TurnState.COMPLETED,
    "refusal": TurnState.FAILED,
    "cancelled": TurnState.CANCELLED,
}

_LOCAL_COMMAND = re.compile(
    r"\s*(?:<(command-name|command-message|command-args|local-command-stdout|"
    r"local-command-stderr|local-command-caveat)>.*?</\1>\s*)+",
    re.DOTALL,
)
"""A user message that is only Claude Code's record of a local command (``/model``, which
claude-agent-acp runs at every session's start, and its output): its replay drops none."""

TerminalLookup = Callable[[str], tuple[str, int | None, bool] | None]
"""terminal id -> (output text, exit code or None, whether it has exited), None when unknown."""


def clip(text: str, limit: int) -> str:
    """``text`` cut to at most ``limit`` UTF-8 bytes, at a character boundary."""
    data = text.encode()
    if len(data) <= limit:
        return text
    return data[: max(limit - 3, 0)].decode("utf-8", "ignore") + "..."


def block_text(block: Any) -> str:
    """Display text of one ACP content block (text as is; other kinds as a short mention)."""
    kind = getattr(block, "type", "")
    if kind == "text":
        return str(block.text)
    if kind == "resource_link":
        return f"[{block.name}]({block.uri})"
    if kind == "resource":
        res = block.resource
        return str(getattr(res, "text", "") or f"[{getattr(res, 'uri', 'resource')}]")
    if kind in ("image", "audio"):
        return f"[{kind}]"
    return ""


@dataclass
class _Tool:
    id: str
    started: datetime
    title: str = ""
    kind: str = ""
    status: ToolStatus = ToolStatus.PENDING
    raw_input: Any = None
    raw_output: Any = None
    texts: list[str] = field(default_factory=list)
    edits: list[FileEdit] = field(default_factory=list)
    """The first MAX_FILE_EDITS diffs of the latest content, counted once when they arrive."""
    edits_truncated: bool = False
    diffs: list[tuple[str, str | None, str]] = field(default_factory=list)
    """(path, oldText, newText) of the latest content's diffs, recorded when the call completes."""
    recorded: bool = False
    terminals: list[str] = field(default_factory=list)
    locations: list[tuple[str, int | None]] = field(default_factory=list)
    ended: datetime | None = None
    turn: int = 0


@dataclass
class _Change:
    """A file's change across the conversation, from the diffs of its completed tool calls."""

    before: str | None
    """The first call's oldText (None: the conversation created the file)."""
    after: str
    additions: int = 0
    deletions: int = 0
    truncated: bool = False


@dataclass
class PendingPermission:
    interaction: Interaction
    kinds: dict[str, str]
    """option id -> ACP option kind (allow_once, allow_always, reject_once, reject_always)."""


#: What a replay (session/load) gives back that neither the user nor the model wrote, and the
#: agent's own UI leaves out. Gemini CLI replays its ``<session_context>`` preamble (the date, the
#: OS, the working directory's listing) as the first user message, a tool call as the model's
#: text ``[Function Call: write_file]`` and its result as a user message ``[Function Response:
#: write_file]``.
_REPLAYED_CONTEXT = re.compile(r"\A\s*<session_context>.*?</session_context>\s*", re.DOTALL)
_REPLAYED_CALL = re.compile(r"\[Function Call: [^\]\n]+\]")
_REPLAYED_RESULT = re.compile(r"\A(?:\s*\[Function Response: [^\]\n]+\])+\s*\Z")


class SessionMapper:
    """The mapping state of one conversation. Every method returns the Events to emit."""

    def __init__(
        self, now: Callable[[], datetime], terminal: TerminalLookup, *, text_limit: int
    ) -> None:
        self._now = now
        self._terminal = terminal
        self._limit = text_limit
        self._ids = itertools.count(1)
        self.turn = 0
        self.active = False
        self.replaying = False
        self.cancelling = False
        self._assistant: str | None = None
        self._reasoning: str | None = None
        self._user: Item | None = None
        self.tools: dict[str, _Tool] = {}
        self._terminal_tools: dict[str, str] = {}
        self.pending: dict[str, PendingPermission] = {}
        self.commands: list[Command] = []
        self.mode = ""
        self.modes: list[str] = []
        self.model = ""
        self.models: list[Model] = []
        self.model_config_id = ""
        """The config option (category "model") that selects the model, "" when none."""
        self.unstable_models = False
        """The agent reported ``models`` (unstable ``session/set_model``) instead."""
        self.title = ""
        self.changes: dict[str, _Change] = {}
        """Files the completed tool calls changed, by path (Conversation.diff)."""

    def set_terminal_lookup(self, terminal: TerminalLookup) -> None:
        self._terminal = terminal

    # -- turns --------------------------------------------------------------------------------

    def begin_turn(self, prompt: Prompt, shown: str = "") -> list[Event]:
        self.turn += 1
        self.active = True
        self.cancelling = False
        self._break_text()
        self._user = None
        user = Item(
            id=f"user-{next(self._ids)}",
            kind=ItemKind.USER,
            text=shown or prompt.text,
            time=self._now(),
            attachments=[
                Attachment(name=b.name or "attachment", mime=b.mime or "", size=len(b.data))
                for b in prompt.attachments
            ],
        )
        return [
            Event(kind=EventKind.TURN, turn=Turn(state=TurnState.WORKING)),
            Event(kind=EventKind.ITEM, item=user),
        ]

    def end_turn(self, stop_reason: str, usage: S.Usage | None = None) -> list[Event]:
        """The prompt returned with ``stop_reason``."""
        state = _STOP.get(stop_reason, TurnState.COMPLETED)
        if self.cancelling and state is not TurnState.FAILED:
            state = TurnState.CANCELLED
        out: list[Event] = []
        if usage is not None:
            out.append(
                Event(
                    kind=EventKind.TOKENS,
                    tokens=TokenUsage(
                        model=self.model,
                        time=self._now(),
                        input=usage.input_tokens,
                        output=usage.output_tokens,
                        cache_read=usage.cached_read_tokens or 0,
                        cache_write=usage.cached_write_tokens or 0,
                    ),
                )
            )
        reason = "" if state is TurnState.COMPLETED else stop_reason
        error = "the agent refused to continue" if stop_reason == "refusal" else ""
        if stop_reason in ("max_tokens", "max_turn_requests"):
            out.append(self.notice(f"The agent stopped: {stop_reason.replace('_', ' ')}."))
        return out + self._finish(Turn(state=state, error=error, reason=reason))

    def fail_turn(self, error: str) -> list[Event]:
        return self._finish(Turn(state=TurnState.FAILED, error=error))

    def _finish(self, turn: Turn) -> list[Event]:
        if not self.active:
            return []
        out = self.expire_pending("the turn ended")
        for tool in self.tools.values():
            if tool.turn == self.turn and tool.status not in _ENDED:
                tool.status = ToolStatus.FAILED
                tool.ended = self._now()
                tool.texts.append("The turn ended before this tool call finished.")
                out.append(self._tool_event(tool))
        self.active = False
        self.cancelling = False
        self._break_text()
        out.append(Event(kind=EventKind.TURN, turn=turn))
        return out

    def notice(self, text: str) -> Event:
        return Event(
            kind=EventKind.ITEM,
            item=Item(
                id=f"notice-{next(self._ids)}", kind=ItemKind.NOTICE, text=text, time=self._now()
            ),
        )

    # -- permissions --------------------------------------------------------------------------

    def permission(
        self, tool_call: S.ToolCallUpdate, options: list[S.PermissionOption]
    ) -> tuple[PendingPermission, list[Event]]:
        out: list[Event] = []
        tool = self.tools.get(tool_call.tool_call_id)
        if tool is None or tool.turn != self.turn:
            out += self._merge_tool(tool_call, start=True)
        else:
            out += self._merge_tool(tool_call, start=False)
        tool = self.tools[tool_call.tool_call_id]
        opts = [
            Option(
                id=o.option_id,
                label=o.name,
                reject=o.kind.startswith("reject"),
                allow_once=o.kind == "allow_once",
            )
            for o in options
        ]
        detail = clip(_json(tool.raw_input), 2048) if tool.raw_input not in (None, {}, "") else ""
        inter = Interaction(
            id=f"perm-{next(self._ids)}",
            kind=InteractionKind.PERMISSION,
            title=tool.title or tool.kind or "Permission",
            detail=detail,
            options=opts,
            state=InteractionState.PENDING,
            time=self._now(),
            tool_call_id=tool.id,
        )
        pending = PendingPermission(inter, {o.option_id: o.kind for o in options})
        self.pending[inter.id] = pending
        out.append(Event(kind=EventKind.INTERACTION, interaction=inter))
        return pending, out

    def resolve(self, interaction_id: str, option_id: str) -> list[Event]:
        pending = self.pending.pop(interaction_id, None)
        if pending is None:
            return []
        kind = pending.kinds.get(option_id, "")
        state = (
            InteractionState.REJECTED if kind.startswith("reject") else InteractionState.ANSWERED
        )
        inter = pending.interaction.model_copy(update={"state": state, "resolution": option_id})
        return [Event(kind=EventKind.INTERACTION, interaction=inter)]

    def expire_pending(self, why: str) -> list[Event]:
        out = []
        for pending in self.pending.values():
            inter = pending.interaction.model_copy(
                update={"state": InteractionState.EXPIRED, "resolution": why}
            )
            out.append(Event(kind=EventKind.INTERACTION, interaction=inter))
        self.pending.clear()
        return out

    # -- session/update -----------------------------------------------------------------------

    def update(self, update: Any) -> list[Event]:
        """One ``session/update`` (a validated SDK model) as events."""
        kind = getattr(update, "session_update", "")
        handler = _UPDATES.get(kind)
        if handler is None:
            return []
        events: list[Event] = handler(self, update)
        if not self.active and not self.replaying:
            # Turn output after the turn ended (or before one began) has nowhere to go.
            events = [e for e in events if e.kind not in (EventKind.ITEM, EventKind.DELTA)]
        return events

    def _break_text(self) -> None:
        self._assistant = None
        self._reasoning = None

    def _chunk(self, update: Any, kind: ItemKind, text: str | None = None) -> list[Event]:
        text = block_text(update.content) if text is None else text
        if not text:
            return []
        message_id = getattr(update, "message_id", None)
        current = self._assistant if kind is ItemKind.ASSISTANT else self._reasoning
        if message_id:
            item_id = f"{kind.value}-{message_id}"
        elif current is not None:
            item_id = current
        else:
            item_id = f"{kind.value}-{next(self._ids)}"
        if kind is ItemKind.ASSISTANT:
            self._assistant, self._reasoning = item_id, None
        else:
            self._reasoning, self._assistant = item_id, None
        self._user = None
        return [Event(kind=EventKind.DELTA, delta=Delta(item_id=item_id, kind=kind, text=text))]

    def _agent_message(self, update: S.AgentMessageChunk) -> list[Event]:
        if self.replaying:
            text = _REPLAYED_CALL.sub("", block_text(update.content))
            return self._chunk(update, ItemKind.ASSISTANT, text)
        return self._chunk(update, ItemKind.ASSISTANT)

    def _agent_thought(self, update: S.AgentThoughtChunk) -> list[Event]:
        return self._chunk(update, ItemKind.REASONING)

    def _user_message(self, update: S.UserMessageChunk) -> list[Event]:
        """Only recorded conversations replay user messages (session/load); a local command's
        record that Claude Code keeps as a user message is not the user's words."""
        if not self.replaying:
            return []
        text = _REPLAYED_CONTEXT.sub("", block_text(update.content), count=1)
        if _LOCAL_COMMAND.fullmatch(text):
            return []
        self._break_text()
        if not text or _REPLAYED_RESULT.match(text):
            return []  # only what the agent added: no words of the user's
        if self._user is None:
            self._user = Item(
                id=f"user-{next(self._ids)}", kind=ItemKind.USER, text=text, time=self._now()
            )
        else:
            self._user = self._user.model_copy(update={"text": self._user.text + text})
        return [Event(kind=EventKind.ITEM, item=self._user)]

    def _tool_start(self, update: S.ToolCallStart) -> list[Event]:
        return self._merge_tool(update, start=True)

    def _tool_progress(self, update: S.ToolCallProgress) -> list[Event]:
        return self._merge_tool(update, start=update.tool_call_id not in self.tools)

    def _merge_tool(self, update: Any, *, start: bool) -> list[Event]:
        self._break_text()
        self._user = None
        tid = update.tool_call_id
        tool = self.tools.get(tid)
        if tool is None or (start and tool.turn != self.turn):
            tool = _Tool(id=tid, started=self._now(), turn=self.turn)
            self.tools[tid] = tool
        if update.title:
            tool.title = update.title
        if update.kind:
            tool.kind = update.kind
        if update.status:
            tool.status = _STATUS.get(update.status, tool.status)
            if tool.status in _ENDED and tool.ended is None:
                tool.ended = self._now()
        if update.raw_input is not None:
            tool.raw_input = update.raw_input
        if update.raw_output is not None:
            tool.raw_output = update.raw_output
        if update.locations is not None:
            tool.locations = [(loc.path, loc.line) for loc in update.locations]
        if update.content is not None:
            # ACP content replaces the whole collection.
            tool.texts, tool.edits, tool.edits_truncated = [], [], False
            tool.diffs = []
            terminals: list[str] = []
            for part in update.content:
                ptype = getattr(part, "type", "")
                if ptype == "content":
                    text = block_text(part.content)
                    if text:
                        tool.texts.append(text)
                elif ptype == "diff":
                    if len(tool.edits) < MAX_FILE_EDITS:
                        tool.edits.append(_file_edit(part.path, part.old_text, part.new_text))
                        tool.diffs.append((part.path, part.old_text, part.new_text))
                    else:
                        tool.edits_truncated = True
                elif ptype == "terminal":
                    terminals.append(part.terminal_id)
            for term in terminals:
                self._terminal_tools[term] = tid
            tool.terminals = terminals or tool.terminals
        if tool.status is ToolStatus.COMPLETED and not tool.recorded:
            tool.recorded = True
            self._record_changes(tool.diffs)
        return [self._tool_event(tool)]

    def _record_changes(self, diffs: list[tuple[str, str | None, str]]) -> None:
        """Fold a completed call's diffs into the conversation's changes (a diff shown while
        the call waits for permission is no change until the call completes)."""
        for path, old, new in diffs:
            prev = self.changes.get(path)
            before = prev.before if prev is not None else old
            too_long = any(len(t) > MAX_CHANGE_TEXT for t in (before or "", new))
            if too_long or (prev is not None and prev.truncated):
                adds, dels = _line_counts(old, new)
                if prev is not None:
                    adds, dels = prev.additions + adds, prev.deletions + dels
                self.changes[path] = _Change(None, "", adds, dels, truncated=True)
            else:
                adds, dels = _line_counts(before, new)
                self.changes[path] = _Change(before, new, adds, dels)

    def file_diffs(self) -> list[FileDiff]:
        """The conversation's file changes, for Conversation.diff (unchanged files left out)."""
        out = []
        for path, change in self.changes.items():
            if change.truncated:
                out.append(
                    FileDiff(
                        path=path,
                        truncated=True,
                        additions=change.additions,
                        deletions=change.deletions,
                    )
                )
            elif change.before != change.after:
                out.append(
                    FileDiff(
                        path=path,
                        status="added" if change.before is None else "modified",
                        additions=change.additions,
                        deletions=change.deletions,
                        before=change.before or "",
                        after=change.after,
                    )
                )
        return out

    def terminal_changed(self, terminal_id: str) -> list[Event]:
        tid = self._terminal_tools.get(terminal_id)
        tool = self.tools.get(tid or "")
        if tool is None or tool.status in _ENDED or not self.active:
            return []
        return [self._tool_event(tool)]

    def _tool_event(self, tool: _Tool) -> Event:
        return Event(kind=EventKind.ITEM, item=self.tool_item(tool))

    def tool_item(self, tool: _Tool) -> Item:
        ended = tool.status in _ENDED
        texts = list(tool.texts)
        exit_code: int | None = None
        tail: list[OutputLine] = []
        for term in tool.terminals:
            found = self._terminal(term)
            if found is None:
                continue
            output, code, exited = found
            if exited:
                exit_code = code
            if ended:
                texts.append(output)
            else:
                lines = output.splitlines()[-MAX_TAIL_LINES:]
                tail = [OutputLine(text=clip(line, MAX_LINE_BYTES)) for line in lines]
        if not texts and tool.raw_output is not None and ended:
            texts.append(_json(tool.raw_output))
        shown_input = _json(tool.raw_input) if tool.raw_input not in (None, {}, "") else ""
        if tool.locations:
            where = "\n".join(f"{p}:{n}" if n else p for p, n in tool.locations)
            shown_input = f"{shown_input}\n{where}" if shown_input else where
        call = ToolCall(
            name=tool.kind or "other",
            title=tool.title,
            status=tool.status,
            input=clip(shown_input, self._limit),
            output=clip("\n".join(t for t in texts if t), self._limit) if ended else "",
            file_edits=list(tool.edits),
            file_edits_truncated=tool.edits_truncated,
            exit_code=exit_code,
            tail=[] if ended else tail,
        )
        return Item(
            id=tool.id,
            kind=ItemKind.TOOL,
            tool=call,
            time=tool.started,
            ended_at=tool.ended if ended else None,
        )

    def _plan(self, update: S.AgentPlanUpdate) -> list[Event]:
        return self._todos(update.entries)

    def _plan_update(self, update: S.AgentPlanContentUpdate) -> list[Event]:
        """The unstable multi-plan form: an item plan becomes the todos; markdown or file
        plans have no rows to show."""
        entries = getattr(update.plan, "entries", None)
        return self._todos(entries) if entries is not None else []

    def _plan_removed(self, update: S.AgentPlanRemovedUpdate) -> list[Event]:
        return [Event(kind=EventKind.TODOS, todos=TodoList(known=True, todos=[]))]

    def _todos(self, entries: list[S.PlanEntry]) -> list[Event]:
        todos = [
            Todo(
                id=str(i + 1),
                title=clip(entry.content, 1024),
                status=_TODO.get(entry.status, TODO_PENDING),
            )
            for i, entry in enumerate(entries)
        ]
        return [Event(kind=EventKind.TODOS, todos=TodoList(known=True, todos=todos))]

    def _commands(self, update: S.AvailableCommandsUpdate) -> list[Event]:
        seen: set[str] = set()
        commands = []
        for c in update.available_commands:
            if not c.name or c.name in seen:
                continue
            seen.add(c.name)
            hint = ""
            if c.input is not None:
                hint = getattr(c.input.root, "hint", "") or ""
            commands.append(
                Command(
                    name=c.name,
                    description=c.description or "",
                    kind=COMMAND_PROMPT,
                    input_hint=hint,
                )
            )
        self.commands = commands
        return []

    def _mode(self, update: S.CurrentModeUpdate) -> list[Event]:
        self.mode = update.current_mode_id
        return [self.execution()]

    def execution(self) -> Event:
        return Event(kind=EventKind.EXECUTION, execution=ExecutionState(known=True, mode=self.mode))

    def _config(self, update: S.ConfigOptionUpdate) -> list[Event]:
        return self.config_options(update.config_options)

    def config_options(self, options: list[Any] | None) -> list[Event]:
        """Read modes and models from ``configOptions`` (category "mode" / "model")."""
        out: list[Event] = []
        for opt in options or []:
            inner = getattr(opt, "root", opt)
            category = getattr(inner, "category", None)
            current = getattr(inner, "current_value", None)
            if not isinstance(current, str):
                continue
            if category == "model":
                self.model_config_id = inner.id
                self.models = [Model(id=v, name=n) for v, n in _select_values(inner)]
                if current != self.model:
                    self.model = current
                    out.append(self.model_selection())
            elif category == "mode" and current != self.mode:
                self.mode = current
                out.append(self.execution())
        return out

    def unstable_model_state(self, models: Any) -> list[Event]:
        """The older ``models`` field of session/new and session/load (unstable protocol)."""
        if not isinstance(models, dict) or self.model_config_id:
            return []
        available = models.get("availableModels")
        if not isinstance(available, list):
            return []
        self.unstable_models = True
        self.models = [
            Model(id=str(m["modelId"]), name=str(m.get("name") or m["modelId"]))
            for m in available
            if isinstance(m, dict) and m.get("modelId")
        ]
        current = models.get("currentModelId")
        if isinstance(current, str) and current != self.model:
            self.model = current
            return [self.model_selection()]
        return []

    def model_selection(self) -> Event:
        return Event(
            kind=EventKind.MODEL_SELECTION, model_selection=ModelSelection(model=self.model)
        )

    def _info(self, update: S.SessionInfoUpdate) -> list[Event]:
        if update.title and update.title != self.title:
            self.title = update.title
            return [Event(kind=EventKind.TITLE, title=update.title)]
        return []

    def _usage(self, update: S.UsageUpdate) -> list[Event]:
        return [Event(kind=EventKind.CONTEXT, context=Context(used=update.used, limit=update.size))]


def _select_values(option: Any) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    for entry in getattr(option, "options", None) or []:
        entry = getattr(entry, "root", entry)
        if hasattr(entry, "value"):
            out.append((entry.value, entry.name or entry.value))
        for sub in getattr(entry, "options", None) or []:
            out.append((sub.value, sub.name or sub.value))
    return out


def _json(value: Any) -> str:
    if isinstance(value, str):
        return value
    try:
        return json.dumps(value, ensure_ascii=False, sort_keys=True)
    except (TypeError, ValueError):
        return str(value)


def _line_counts(old: str | None, new: str) -> tuple[int, int]:
    """Lines added and removed from ``old`` to ``new``."""
    adds = dels = 0
    for line in difflib.unified_diff((old or "").splitlines(), new.splitlines(), lineterm="", n=0):
        if line.startswith("+") and not line.startswith("+++"):
            adds += 1
        elif line.startswith("-") and not line.startswith("---"):
            dels += 1
    return adds, dels


def _file_edit(path: str, old: str | None, new: str) -> FileEdit:
    adds, dels = _line_counts(old, new)
    return FileEdit(
        path=path,
        kind="add" if old is None else "edit",
        additions=adds,
        deletions=dels,
        diff_status="available",
    )


_UPDATES: dict[str, Callable[[SessionMapper, Any], list[Event]]] = {
    "agent_message_chunk": SessionMapper._agent_message,
    "agent_thought_chunk": SessionMapper._agent_thought,
    "user_message_chunk": SessionMapper._user_message,
    "tool_call": SessionMapper._tool_start,
    "tool_call_update": SessionMapper._tool_progress,
    "plan": SessionMapper._plan,
    "plan_update": SessionMapper._plan_update,
    "plan_removed": SessionMapper._plan_removed,
    "available_commands_update": SessionMapper._commands,
    "current_mode_update": SessionMapper._mode,
    "config_option_update": SessionMapper._config,
    "session_info_update": SessionMapper._info,
    "usage_update": SessionMapper._usage,
}
"""Every ``session/update`` kind of the SDK's schema and its handler."""


class Record:
    """A transcript folded from events: items upserted, deltas appended (oldest first).

    Bounded to ``limit`` items; the oldest go first and ``truncated`` says so.
    """

    def __init__(self, limit: int = 5000) -> None:
        self.items: dict[str, Item] = {}
        self.limit = limit
        self.truncated = False

    def feed(self, event: Event) -> None:
        if event.item is not None:
            self.items[event.item.id] = event.item
        elif event.delta is not None:
            d = event.delta
            prev = self.items.get(d.item_id)
            if prev is None:
                self.items[d.item_id] = Item(id=d.item_id, kind=d.kind, text=d.text)
            else:
                self.items[d.item_id] = prev.model_copy(update={"text": prev.text + d.text})
        else:
            return
        while len(self.items) > self.limit:
            del self.items[next(iter(self.items))]
            self.truncated = True

    def history(self) -> list[Item]:
        return list(self.items.values())


def fold_history(events: list[Event]) -> list[Item]:
    """The transcript a replay (session/load) produced: items upserted, deltas appended."""
    record = Record(limit=1 << 30)
    for event in events:
        record.feed(event)
    return record.history()
