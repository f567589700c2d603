"""Scripts for the fake provider: a TOML format a person writes, and its validating parser.

Format reference (every key is optional unless marked *required*)::

    display_name = "Fake agent"          # Provider.display_name()
    default_model = "fake-fast"          # the model a new conversation starts on

    [defaults]
    chunk_size = 12                      # characters per streamed delta (text, reasoning)
    delay = 0.03                         # seconds between deltas; also tool run time unit

    [[models]]                           # Provider.models(); a built-in pair when absent
    id = "fake-fast"                     # required
    name = "Fake Fast"
    efforts = ["low", "medium", "high"]
    context_sizes = [{ id = "default", tokens = 128000 }]

    [[prompts]]                          # rules, tried in file order; the first match runs
    text = "hello"                       # exact prompt text, or
    pattern = "^run (.+)$"               # a regex searched in the prompt text, and/or
    order = 1                            # the n-th prompt (1-based) of the conversation
    model = "fake-fast"                  # the model the turn reports (default: the current one)
    steer = true                         # false: steers are never used (the notice path)

    [[prompts.steps]]                    # what the turn does, in order
    kind = "text"                        # required; one of the step kinds below
    ...

    [[conversations]]                    # rules for some conversations only; they are tried
    title = "Project X"                  # before the top-level ones. Select by the exact
    workdir = "/src/x"                   # OpenRequest title, workdir and/or the n-th
    index = 2                            # conversation opened (1-based)
    [[conversations.prompts]]            # same shape as [[prompts]]

A prompt no rule matches fails its turn ("no script rule matches this prompt").

Commands, skills, custom agents, hooks, instructions and MCP servers are declared with
``[[commands]]``, ``[[skills]]``, ``[[agents]]``, ``[[hooks]]``, ``[[instructions]]`` and
``[[mcp_servers]]``; their keys are documented in ``catalog.py``.

Step kinds (``kind = ...``):

- ``text``, ``reasoning``: ``text`` *required*, ``chunk_size``, ``delay``. Streams deltas,
  then the whole item.
- ``tool``: ``name`` *required*, ``title``, ``input``, ``output``, ``status`` ("completed" or
  "failed"), ``exit_code``, ``duration`` (seconds running), ``progress``,
  ``file_edits = [{ path, kind, additions, deletions, diff_status, content }]``. Emits the
  item running, then ended. An edit with ``content`` (the file's new text) or ``kind =
  "delete"`` really changes the file, inside the working directory only (``path`` is
  relative to it); its kind and line counts are then the real ones, the conversation's
  ``diff`` reports it and a rewind to conversation-and-files puts it back.
- ``permission``: ``title`` *required*, ``detail``, ``intention``, ``options`` (``[{ id, label,
  reject, allow_once, session }]``; default: allow-once, allow-session, reject; a ``session``
  option also allows the same request, same tool or else same title, without asking until
  the conversation closes), ``tool`` (a table
  shaped like a tool step: the call that needs the permission; it runs only when allowed).
  Waits for the answer. Branches: ``[[prompts.steps.on.<option id>]]``, then ``on.allow``
  (any non-reject option) or ``on.reject``, then ``on.default``. A branch runs, then the
  steps after the permission step.
- ``question``: ``title`` *required*, ``questions`` *required* (``[{ text, header, choices,
  multiple, custom }]``). ``form``: the same, an elicitation form; each question needs a
  ``field = { name, type, required, values, format, minimum, maximum, min_length,
  max_length, min_items, max_items }``; ``source``. Both wait for the answer. Branches:
  ``on.reject``, ``on.cancel``, then ``on.<first answer of the first question>``, then
  ``on.answered``, then ``on.default``.
- ``host_tool``: ``name`` *required* (a host tool of ``OpenRequest.tools``: a tool an AHP
  client offers), ``title``, ``arguments`` (a table, the call's JSON object; default ``{}``),
  ``arguments_json`` (the raw JSON text instead, to send what a table cannot, such as a
  malformed or oversized call), ``call_id`` (default: a fresh id; repeat one to repeat a call),
  ``reply`` (assistant text streamed after the result, ``{text}`` replaced by the result's
  text). Emits the tool item running, calls the host's ``call_tool`` (unless the tool is not
  registered, or the arguments exceed ``MAX_HOST_TOOL_ARGUMENTS``: the call then fails without
  reaching the host), then the item completed or failed with the result's text. Branches:
  ``on.ok``, ``on.failed``, ``on.missing`` (no such host tool), then ``on.default``.
- ``subagent``: ``name`` *required*, ``id``, ``description``, ``model``, ``background``,
  ``status`` ("completed" or "failed"), ``error``, ``steps`` (nested steps the subagent runs,
  ``[[prompts.steps.steps]]``; their items carry its agent id).
- ``title``: ``title`` *required*. ``usage``: ``ai_units`` *required*.
  ``tokens``: ``model``, ``input``, ``output``, ``cache_read``, ``cache_write``,
  ``duration_ms``, ``cost``. ``context``: ``used``, ``limit`` *required*.
- ``notice``: ``text`` *required*. ``delay``: ``seconds`` *required*.
- ``error``: ``message`` *required*; the turn fails. ``exit``: ``message`` *required*; the
  runtime exits (EventExit) and the conversation is closed. ``stop``: the turn completes here.
- ``sign_out``: ``message`` *required*; the runtime's sign-in expires (with the provider option
  ``sign_in_token``: ``account()`` says signed out with the message, ``check()`` raises
  SignedOut, until a client signs in again) and the turn fails with the message. Without
  ``sign_in_token`` the runtime has no sign-in to lose: the turn fails saying so.

Steers are used at the next step boundary (a user item with Delivery "steer"); a steer the
turn never reached gets a notice before the turn ends. Errors name the file, the line and
the field, with 0-based indices: ``demo.toml:42: prompts[3].steps[1].kind: unknown step kind``.
"""

from __future__ import annotations

import json
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path as FsPath
from typing import Any

from .catalog import CATALOG_KEYS, Catalog, parse_catalog
from .locate import LineIndex, Path, format_path


class ScriptError(ValueError):
    """An invalid script, located at file, line and field."""

    def __init__(self, file: str, line: int, path: str, message: str) -> None:
        self.file, self.line, self.path, self.message = file, line, path, message
        where = f"{path}: " if path else ""
        super().__init__(f"{file}:{line}: {where}{message}")


@dataclass(frozen=True)
class FileEditSpec:
    path: str
    kind: str = "edit"
    additions: int = 0
    deletions: int = 0
    diff_status: str = "available"
    content: str | None = None
    """The file's new text: the edit is written to disk (``kind = "delete"`` removes it)."""

    @property
    def writes(self) -> bool:
        return self.content is not None or self.kind == "delete"


@dataclass(frozen=True)
class Step:
    """Base of every step; ``kind`` is the script's name for it."""

    kind: str


@dataclass(frozen=True)
class TextStep(Step):
    text: str = ""
    chunk_size: int = 12
    delay: float = 0.0


@dataclass(frozen=True)
class ToolStep(Step):
    name: str = ""
    title: str = ""
    input: str = ""
    output: str = ""
    status: str = "completed"
    exit_code: int | None = None
    duration: float = 0.0
    progress: str = ""
    file_edits: tuple[FileEditSpec, ...] = ()


@dataclass(frozen=True)
class HostToolStep(Step):
    """A call of a host tool (a tool an AHP client runs), through OpenRequest.call_tool."""

    name: str = ""
    title: str = ""
    arguments: str = "{}"
    """The call's JSON arguments, as text."""
    call_id: str = ""
    reply: str = ""
    on: Mapping[str, tuple[Step, ...]] = field(default_factory=dict)


@dataclass(frozen=True)
class OptionSpec:
    id: str
    label: str
    reject: bool = False
    allow_once: bool = False
    session: bool = False
    """Allows this request and, until the conversation closes, the same request again."""


DEFAULT_OPTIONS = (
    OptionSpec("allow-once", "Allow once", allow_once=True),
    OptionSpec("allow-session", "Allow for this session", session=True),
    OptionSpec("reject", "Reject", reject=True),
)


@dataclass(frozen=True)
class PermissionStep(Step):
    title: str = ""
    detail: str = ""
    intention: str = ""
    options: tuple[OptionSpec, ...] = DEFAULT_OPTIONS
    tool: ToolStep | None = None
    on: Mapping[str, tuple[Step, ...]] = field(default_factory=dict)


@dataclass(frozen=True)
class FieldSpec:
    name: str
    type: str
    required: bool = False
    values: tuple[str, ...] = ()
    format: str = ""
    minimum: float | None = None
    maximum: float | None = None
    min_length: int | None = None
    max_length: int | None = None
    min_items: int | None = None
    max_items: int | None = None


@dataclass(frozen=True)
class QuestionSpec:
    text: str
    header: str = ""
    choices: tuple[str, ...] = ()
    multiple: bool = False
    custom: bool = False
    field: FieldSpec | None = None


@dataclass(frozen=True)
class QuestionStep(Step):
    """A question (kind "question") or an elicitation form (kind "form")."""

    title: str = ""
    detail: str = ""
    source: str = ""
    questions: tuple[QuestionSpec, ...] = ()
    on: Mapping[str, tuple[Step, ...]] = field(default_factory=dict)


@dataclass(frozen=True)
class SubagentStep(Step):
    name: str = ""
    id: str = ""
    description: str = ""
    model: str = ""
    background: bool = False
    status: str = "completed"
    error: str = ""
    steps: tuple[Step, ...] = ()


@dataclass(frozen=True)
class ValueStep(Step):
    """The one-value steps: title, notice, error, sign_out, exit (``value``), delay
    (``seconds``)."""

    value: str = ""
    seconds: float = 0.0


@dataclass(frozen=True)
class UsageStep(Step):
    ai_units: float = 0.0


@dataclass(frozen=True)
class TokensStep(Step):
    model: str = ""
    input: int = 0
    output: int = 0
    cache_read: int = 0
    cache_write: int = 0
    duration_ms: int = 0
    cost: float = 0.0


@dataclass(frozen=True)
class ContextStep(Step):
    used: int = 0
    limit: int = 0


@dataclass(frozen=True)
class PromptRule:
    steps: tuple[Step, ...]
    text: str | None = None
    pattern: re.Pattern[str] | None = None
    order: int | None = None
    model: str = ""
    steer: bool = True

    def matches(self, text: str, order: int) -> bool:
        """Whether a prompt (its text and 1-based position) satisfies every selector."""
        if self.text is not None and text != self.text:
            return False
        if self.pattern is not None and not self.pattern.search(text):
            return False
        return self.order is None or self.order == order


@dataclass(frozen=True)
class ConversationRules:
    prompts: tuple[PromptRule, ...]
    title: str | None = None
    workdir: str | None = None
    index: int | None = None

    def selects(self, title: str, workdir: str, index: int) -> bool:
        """Whether this block applies to a conversation (title, workdir, 1-based index)."""
        if self.title is not None and title != self.title:
            return False
        if self.workdir is not None and workdir != self.workdir:
            return False
        return self.index is None or self.index == index


@dataclass(frozen=True)
class ModelSpec:
    id: str
    name: str
    efforts: tuple[str, ...] = ()
    context_sizes: tuple[tuple[str, int], ...] = ()


DEFAULT_MODELS = (
    ModelSpec("fake-fast", "Fake Fast", ("low", "medium", "high"), (("default", 128000),)),
    ModelSpec("fake-deep", "Fake Deep", ("medium", "high"), (("default", 200000),)),
)


@dataclass(frozen=True)
class Script:
    """A parsed, validated script."""

    source: str
    display_name: str = "Fake (scripted)"
    default_model: str = ""
    models: tuple[ModelSpec, ...] = DEFAULT_MODELS
    prompts: tuple[PromptRule, ...] = ()
    conversations: tuple[ConversationRules, ...] = ()
    catalog: Catalog = field(default_factory=Catalog)
    """Commands, skills, agents, hooks, instructions and MCP servers (see catalog.py)."""

    def tool_names(self) -> frozenset[str]:
        """The names of the script's own tools (tool steps, permission tools, ``task``)."""
        names: set[str] = set()
        rules = [*self.prompts, *(r for block in self.conversations for r in block.prompts)]
        pending: list[Step] = [step for rule in rules for step in rule.steps]
        while pending:
            step = pending.pop()
            if isinstance(step, ToolStep):
                names.add(step.name)
            elif isinstance(step, SubagentStep):
                names.add("task")
                pending.extend(step.steps)
            if isinstance(step, PermissionStep) and step.tool is not None:
                names.add(step.tool.name)
            for branch in getattr(step, "on", {}).values():
                pending.extend(branch)
        return frozenset(names)

    def rule_for(
        self, text: str, order: int, *, title: str = "", workdir: str = "", index: int = 0
    ) -> PromptRule | None:
        """The first rule matching a prompt, conversation-specific rules first."""
        for block in self.conversations:
            if block.selects(title, workdir, index):
                for rule in block.prompts:
                    if rule.matches(text, order):
                        return rule
        for rule in self.prompts:
            if rule.matches(text, order):
                return rule
        return None


STEP_KINDS = (
    "text",
    "reasoning",
    "tool",
    "host_tool",
    "permission",
    "question",
    "form",
    "subagent",
    "title",
    "usage",
    "tokens",
    "context",
    "notice",
    "delay",
    "error",
    "sign_out",
    "exit",
    "stop",
)
_FIELD_TYPES = ("string", "number", "integer", "boolean", "array")
_FIELD_FORMATS = ("", "email", "uri", "date", "date-time")
_TOOL_END = ("completed", "failed")
_TOOL_KEYS: tuple[str, ...] = ("kind", "name", "title", "input", "output", "status")
_TOOL_KEYS += ("exit_code", "duration", "progress", "file_edits")
_QUESTION_RESERVED = ("reject", "cancel", "answered", "default")


class ScriptParser:
    """Validates the raw TOML tree; every error carries the file, line and field."""

    def __init__(self, name: str, source: str) -> None:
        self.name = name
        self.index = LineIndex(source)
        self.chunk_size = 12
        self.delay = 0.0
        self.model_ids: list[str] = []

    def fail(self, path: Path, message: str) -> ScriptError:
        return ScriptError(self.name, self.index.line_of(path), format_path(path), message)

    # -- typed accessors -------------------------------------------------------------------

    def check_keys(self, table: Mapping[str, Any], path: Path, allowed: tuple[str, ...]) -> None:
        for key in table:
            if key not in allowed:
                raise self.fail(
                    (*path, key), f"unknown field (expected one of {', '.join(allowed)})"
                )

    def table(self, value: Any, path: Path) -> Mapping[str, Any]:
        if not isinstance(value, dict):
            raise self.fail(path, f"expected a table, got {_type_name(value)}")
        return value

    def tables(self, table: Mapping[str, Any], key: str, path: Path) -> list[Mapping[str, Any]]:
        value = table.get(key, [])
        if not isinstance(value, list):
            raise self.fail((*path, key), f"expected an array of tables, got {_type_name(value)}")
        return [self.table(v, (*path, key, i)) for i, v in enumerate(value)]

    def text(
        self, table: Mapping[str, Any], key: str, path: Path, *, required: bool = False
    ) -> str:
        if key not in table:
            if required:
                raise self.fail(path, f'missing required field "{key}"')
            return ""
        value = table[key]
        if not isinstance(value, str):
            raise self.fail((*path, key), f"expected a string, got {_type_name(value)}")
        if required and not value:
            raise self.fail((*path, key), "must not be empty")
        return value

    def opt_text(self, table: Mapping[str, Any], key: str, path: Path) -> str | None:
        return self.text(table, key, path) if key in table else None

    def choice(
        self, table: Mapping[str, Any], key: str, path: Path, allowed: tuple[str, ...], default: str
    ) -> str:
        value = self.text(table, key, path) if key in table else default
        if value not in allowed:
            shown = ", ".join(f'"{a}"' for a in allowed if a)
            raise self.fail((*path, key), f'"{value}" is not one of {shown}')
        return value

    def boolean(self, table: Mapping[str, Any], key: str, path: Path, default: bool) -> bool:
        value = table.get(key, default)
        if not isinstance(value, bool):
            raise self.fail((*path, key), f"expected true or false, got {_type_name(value)}")
        return value

    def integer(
        self,
        table: Mapping[str, Any],
        key: str,
        path: Path,
        default: int | None,
        *,
        minimum: int = 0,
        required: bool = False,
    ) -> int | None:
        if key not in table:
            if required:
                raise self.fail(path, f'missing required field "{key}"')
            return default
        value = table[key]
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.fail((*path, key), f"expected an integer, got {_type_name(value)}")
        if value < minimum:
            raise self.fail((*path, key), f"must be at least {minimum}, got {value}")
        return value

    def number(
        self,
        table: Mapping[str, Any],
        key: str,
        path: Path,
        default: float | None,
        *,
        minimum: float | None = 0.0,
        required: bool = False,
    ) -> float | None:
        if key not in table:
            if required:
                raise self.fail(path, f'missing required field "{key}"')
            return default
        value = table[key]
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise self.fail((*path, key), f"expected a number, got {_type_name(value)}")
        if minimum is not None and value < minimum:
            raise self.fail((*path, key), f"must be at least {minimum}, got {value}")
        return float(value)

    def strings(self, table: Mapping[str, Any], key: str, path: Path) -> tuple[str, ...]:
        value = table.get(key, [])
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise self.fail((*path, key), "expected an array of strings")
        return tuple(value)

    # -- the document ----------------------------------------------------------------------

    def script(self, doc: Mapping[str, Any], source: str) -> Script:
        self.check_keys(
            doc,
            (),
            (
                "display_name",
                "default_model",
                "defaults",
                "models",
                "prompts",
                "conversations",
                *CATALOG_KEYS,
            ),
        )
        if "defaults" in doc:
            defaults = self.table(doc["defaults"], ("defaults",))
            self.check_keys(defaults, ("defaults",), ("chunk_size", "delay"))
            self.chunk_size = (
                self.integer(defaults, "chunk_size", ("defaults",), 12, minimum=1) or 12
            )
            self.delay = self.number(defaults, "delay", ("defaults",), 0.0) or 0.0
        models = tuple(
            self.model(m, ("models", i)) for i, m in enumerate(self.tables(doc, "models", ()))
        )
        if "models" in doc and not models:
            raise self.fail(("models",), "must list at least one model")
        models = models or DEFAULT_MODELS
        ids = [m.id for m in models]
        for i, model_id in enumerate(ids):
            if model_id in ids[:i]:
                raise self.fail(("models", i, "id"), f'duplicate model id "{model_id}"')
        self.model_ids = ids
        default_model = self.text(doc, "default_model", ())
        if default_model and default_model not in ids:
            raise self.fail(
                ("default_model",), f'"{default_model}" is not a model id of [[models]]'
            )
        prompts = self.rules(doc, ())
        conversations = []
        for i, block in enumerate(self.tables(doc, "conversations", ())):
            path: Path = ("conversations", i)
            self.check_keys(block, path, ("title", "workdir", "index", "prompts"))
            conversations.append(
                ConversationRules(
                    prompts=self.rules(block, path),
                    title=self.opt_text(block, "title", path),
                    workdir=self.opt_text(block, "workdir", path),
                    index=self.integer(block, "index", path, None, minimum=1),
                )
            )
        return Script(
            source=source,
            display_name=self.text(doc, "display_name", ()) or "Fake (scripted)",
            default_model=default_model or ids[0],
            models=models,
            prompts=prompts,
            conversations=tuple(conversations),
            catalog=parse_catalog(self, doc),
        )

    def model(self, table: Mapping[str, Any], path: Path) -> ModelSpec:
        self.check_keys(table, path, ("id", "name", "efforts", "context_sizes"))
        model_id = self.text(table, "id", path, required=True)
        sizes = []
        for i, size in enumerate(self.tables(table, "context_sizes", path)):
            spath: Path = (*path, "context_sizes", i)
            self.check_keys(size, spath, ("id", "tokens"))
            tokens = self.integer(size, "tokens", spath, None, minimum=1, required=True)
            sizes.append((self.text(size, "id", spath, required=True), tokens or 0))
        return ModelSpec(
            id=model_id,
            name=self.text(table, "name", path) or model_id,
            efforts=self.strings(table, "efforts", path),
            context_sizes=tuple(sizes),
        )

    def rules(self, table: Mapping[str, Any], path: Path) -> tuple[PromptRule, ...]:
        rules = []
        for i, rule in enumerate(self.tables(table, "prompts", path)):
            rpath: Path = (*path, "prompts", i)
            self.check_keys(rule, rpath, ("text", "pattern", "order", "model", "steer", "steps"))
            pattern = None
            if "pattern" in rule:
                source = self.text(rule, "pattern", rpath)
                try:
                    pattern = re.compile(source)
                except re.error as exc:
                    raise self.fail(
                        (*rpath, "pattern"), f"invalid regular expression: {exc}"
                    ) from exc
            if "steps" not in rule:
                raise self.fail(rpath, 'missing required field "steps"')
            model = self.text(rule, "model", rpath)
            if model and model not in self.model_ids:
                raise self.fail((*rpath, "model"), f'"{model}" is not a model id of [[models]]')
            rules.append(
                PromptRule(
                    steps=self.steps(rule, rpath),
                    text=self.opt_text(rule, "text", rpath),
                    pattern=pattern,
                    order=self.integer(rule, "order", rpath, None, minimum=1),
                    model=model,
                    steer=self.boolean(rule, "steer", rpath, True),
                )
            )
        return tuple(rules)

    def steps(self, table: Mapping[str, Any], path: Path, key: str = "steps") -> tuple[Step, ...]:
        return tuple(
            self.step(s, (*path, key, i)) for i, s in enumerate(self.tables(table, key, path))
        )

    def step(self, table: Mapping[str, Any], path: Path) -> Step:
        kind = self.text(table, "kind", path, required=True)
        if kind not in STEP_KINDS:
            raise self.fail(
                (*path, "kind"),
                f'unknown step kind "{kind}" (expected one of {", ".join(STEP_KINDS)})',
            )
        builder = getattr(self, f"step_{kind}", None) or getattr(self, f"step_{_FAMILY[kind]}")
        step: Step = builder(kind, table, path)
        return step

    def step_text(self, kind: str, table: Mapping[str, Any], path: Path) -> Step:
        self.check_keys(table, path, ("kind", "text", "chunk_size", "delay"))
        return TextStep(
            kind=kind,
            text=self.text(table, "text", path, required=True),
            chunk_size=self.integer(table, "chunk_size", path, self.chunk_size, minimum=1) or 1,
            delay=self.number(table, "delay", path, self.delay) or 0.0,
        )

    def step_tool(self, kind: str, table: Mapping[str, Any], path: Path) -> ToolStep:
        self.check_keys(
            table,
            path,
            _TOOL_KEYS,
        )
        edits = []
        for i, edit in enumerate(self.tables(table, "file_edits", path)):
            epath: Path = (*path, "file_edits", i)
            keys = ("path", "kind", "additions", "deletions", "diff_status", "content")
            self.check_keys(edit, epath, keys)
            spec = FileEditSpec(
                path=self.text(edit, "path", epath, required=True),
                kind=self.text(edit, "kind", epath) or "edit",
                additions=self.integer(edit, "additions", epath, 0) or 0,
                deletions=self.integer(edit, "deletions", epath, 0) or 0,
                diff_status=self.text(edit, "diff_status", epath) or "available",
                content=self.text(edit, "content", epath) if "content" in edit else None,
            )
            if spec.kind == "delete" and spec.content is not None:
                raise self.fail((*epath, "content"), 'a "delete" edit has no content')
            edits.append(spec)
        return ToolStep(
            kind="tool",
            name=self.text(table, "name", path, required=True),
            title=self.text(table, "title", path),
            input=self.text(table, "input", path),
            output=self.text(table, "output", path),
            status=self.choice(table, "status", path, _TOOL_END, "completed"),
            exit_code=self.integer(table, "exit_code", path, None, minimum=-(2**31)),
            duration=self.number(table, "duration", path, self.delay) or 0.0,
            progress=self.text(table, "progress", path),
            file_edits=tuple(edits),
        )

    def step_host_tool(self, kind: str, table: Mapping[str, Any], path: Path) -> Step:
        keys = ("kind", "name", "title", "arguments", "arguments_json", "call_id", "reply", "on")
        self.check_keys(table, path, keys)
        if "arguments" in table and "arguments_json" in table:
            raise self.fail((*path, "arguments_json"), "give arguments or arguments_json, not both")
        arguments = "{}"
        if "arguments" in table:
            arguments = json.dumps(
                self.table(table["arguments"], (*path, "arguments")), ensure_ascii=False
            )
        elif "arguments_json" in table:
            arguments = self.text(table, "arguments_json", path)
        allowed = {"ok", "failed", "missing", "default"}
        return HostToolStep(
            kind=kind,
            name=self.text(table, "name", path, required=True),
            title=self.text(table, "title", path),
            arguments=arguments,
            call_id=self.text(table, "call_id", path),
            reply=self.text(table, "reply", path),
            on=self.branches(table, path, allowed, "ok, failed, missing or default"),
        )

    def step_permission(self, kind: str, table: Mapping[str, Any], path: Path) -> Step:
        self.check_keys(
            table, path, ("kind", "title", "detail", "intention", "options", "tool", "on")
        )
        options: tuple[OptionSpec, ...] = DEFAULT_OPTIONS
        if "options" in table:
            parsed: list[OptionSpec] = []
            for i, opt in enumerate(self.tables(table, "options", path)):
                opath: Path = (*path, "options", i)
                self.check_keys(opt, opath, ("id", "label", "reject", "allow_once", "session"))
                option_id = self.text(opt, "id", opath, required=True)
                if any(p.id == option_id for p in parsed):
                    raise self.fail((*opath, "id"), f'duplicate option id "{option_id}"')
                parsed.append(
                    OptionSpec(
                        id=option_id,
                        label=self.text(opt, "label", opath) or option_id,
                        reject=self.boolean(opt, "reject", opath, False),
                        allow_once=self.boolean(opt, "allow_once", opath, False),
                        session=self.boolean(opt, "session", opath, False),
                    )
                )
                chosen = parsed[-1]
                if sum((chosen.reject, chosen.allow_once, chosen.session)) > 1:
                    raise self.fail(
                        opath, "an option is at most one of reject, allow_once, session"
                    )
            if not parsed:
                raise self.fail((*path, "options"), "must list at least one option")
            options = tuple(parsed)
        tool = None
        if "tool" in table:
            tpath: Path = (*path, "tool")
            tool = self.step_tool(
                "tool", {"kind": "tool", **self.table(table["tool"], tpath)}, tpath
            )
        allowed = {o.id for o in options} | {"allow", "reject", "default"}
        on = self.branches(table, path, allowed, "an option id, allow, reject or default")
        return PermissionStep(
            kind=kind,
            title=self.text(table, "title", path, required=True),
            detail=self.text(table, "detail", path),
            intention=self.text(table, "intention", path),
            options=options,
            tool=tool,
            on=on,
        )

    def step_question(self, kind: str, table: Mapping[str, Any], path: Path) -> Step:
        self.check_keys(table, path, ("kind", "title", "detail", "source", "questions", "on"))
        if "questions" not in table:
            raise self.fail(path, 'missing required field "questions"')
        questions = []
        for i, q in enumerate(self.tables(table, "questions", path)):
            qpath: Path = (*path, "questions", i)
            self.check_keys(q, qpath, ("text", "header", "choices", "multiple", "custom", "field"))
            spec_field = None
            if "field" in q:
                spec_field = self.field(
                    self.table(q["field"], (*qpath, "field")), (*qpath, "field")
                )
            elif kind == "form":
                raise self.fail(qpath, 'missing required field "field" (a form question is typed)')
            choices = self.strings(q, "choices", qpath)
            if spec_field is not None:
                choices, spec_field = self.field_choices(choices, spec_field, qpath)
            questions.append(
                QuestionSpec(
                    text=self.text(q, "text", qpath, required=True),
                    header=self.text(q, "header", qpath),
                    choices=choices,
                    multiple=self.boolean(q, "multiple", qpath, False),
                    custom=self.boolean(q, "custom", qpath, False),
                    field=spec_field,
                )
            )
        if not questions:
            raise self.fail((*path, "questions"), "must list at least one question")
        return QuestionStep(
            kind=kind,
            title=self.text(table, "title", path, required=True),
            detail=self.text(table, "detail", path),
            source=self.text(table, "source", path),
            questions=tuple(questions),
            on=self.branches(table, path, None, ""),
        )

    def field(self, table: Mapping[str, Any], path: Path) -> FieldSpec:
        keys = ("name", "type", "required", "values", "format", "minimum", "maximum")
        self.check_keys(table, path, (*keys, "min_length", "max_length", "min_items", "max_items"))
        spec = FieldSpec(
            name=self.text(table, "name", path, required=True),
            type=self.choice(table, "type", path, _FIELD_TYPES, "string"),
            required=self.boolean(table, "required", path, False),
            values=self.strings(table, "values", path),
            format=self.choice(table, "format", path, _FIELD_FORMATS, ""),
            minimum=self.number(table, "minimum", path, None, minimum=None),
            maximum=self.number(table, "maximum", path, None, minimum=None),
            min_length=self.integer(table, "min_length", path, None),
            max_length=self.integer(table, "max_length", path, None),
            min_items=self.integer(table, "min_items", path, None),
            max_items=self.integer(table, "max_items", path, None),
        )
        for low, high in (
            ("minimum", "maximum"),
            ("min_length", "max_length"),
            ("min_items", "max_items"),
        ):
            lo, hi = getattr(spec, low), getattr(spec, high)
            if lo is not None and hi is not None and lo > hi:
                raise self.fail((*path, high), f"{high} {hi} is below {low} {lo}")
        return spec

    def field_choices(
        self, choices: tuple[str, ...], spec: FieldSpec, path: Path
    ) -> tuple[tuple[str, ...], FieldSpec]:
        """Fill a boolean's Yes/No choices and values; values must pair with choices."""
        values = spec.values
        if spec.type == "boolean":
            choices = choices or ("Yes", "No")
            if not values:
                if len(choices) != 2:
                    raise self.fail(
                        (*path, "field", "values"),
                        "a boolean field with other than two choices needs values",
                    )
                values = ("true", "false")
        if values and len(values) != len(choices):
            raise self.fail(
                (*path, "field", "values"),
                f"{len(values)} values for {len(choices)} choices (one value per choice)",
            )
        return choices, replace(spec, values=values)

    def branches(
        self, table: Mapping[str, Any], path: Path, allowed: set[str] | None, expected: str
    ) -> dict[str, tuple[Step, ...]]:
        if "on" not in table:
            return {}
        on = self.table(table["on"], (*path, "on"))
        out = {}
        for key in on:
            if allowed is not None and key not in allowed:
                raise self.fail((*path, "on", key), f'unknown branch "{key}" (expected {expected})')
            out[key] = self.steps(on, (*path, "on"), key)
        return out

    def step_subagent(self, kind: str, table: Mapping[str, Any], path: Path) -> Step:
        keys = ("kind", "name", "id", "description", "model", "background", "status", "error")
        self.check_keys(table, path, (*keys, "steps"))
        steps = self.steps(table, path)
        for i, step in enumerate(steps):
            if isinstance(step, SubagentStep | ValueStep) and step.kind in (
                "subagent",
                "exit",
                "error",
                "sign_out",
                "stop",
            ):
                raise self.fail(
                    (*path, "steps", i, "kind"), f'a subagent cannot run a "{step.kind}" step'
                )
        return SubagentStep(
            kind=kind,
            name=self.text(table, "name", path, required=True),
            id=self.text(table, "id", path),
            description=self.text(table, "description", path),
            model=self.text(table, "model", path),
            background=self.boolean(table, "background", path, False),
            status=self.choice(table, "status", path, _TOOL_END, "completed"),
            error=self.text(table, "error", path),
            steps=steps,
        )

    def step_value(self, kind: str, table: Mapping[str, Any], path: Path) -> Step:
        key = _VALUE_KEY[kind]
        self.check_keys(table, path, ("kind", key) if key else ("kind",))
        if kind == "delay":
            seconds = self.number(table, "seconds", path, None, required=True) or 0.0
            return ValueStep(kind=kind, seconds=seconds)
        return ValueStep(kind=kind, value=self.text(table, key, path, required=True) if key else "")

    def step_usage(self, kind: str, table: Mapping[str, Any], path: Path) -> Step:
        self.check_keys(table, path, ("kind", "ai_units"))
        return UsageStep(
            kind=kind, ai_units=self.number(table, "ai_units", path, None, required=True) or 0.0
        )

    def step_tokens(self, kind: str, table: Mapping[str, Any], path: Path) -> Step:
        counts = ("input", "output", "cache_read", "cache_write", "duration_ms")
        self.check_keys(table, path, ("kind", "model", *counts, "cost"))
        values = {k: self.integer(table, k, path, 0) or 0 for k in counts}
        return TokensStep(
            kind=kind,
            model=self.text(table, "model", path),
            cost=self.number(table, "cost", path, 0.0) or 0.0,
            **values,
        )

    def step_context(self, kind: str, table: Mapping[str, Any], path: Path) -> Step:
        self.check_keys(table, path, ("kind", "used", "limit"))
        return ContextStep(
            kind=kind,
            used=self.integer(table, "used", path, None, required=True) or 0,
            limit=self.integer(table, "limit", path, None, minimum=1, required=True) or 0,
        )


_FAMILY = {
    "reasoning": "text",
    "form": "question",
    "title": "value",
    "notice": "value",
    "delay": "value",
    "error": "value",
    "sign_out": "value",
    "exit": "value",
    "stop": "value",
}
_VALUE_KEY = {
    "title": "title",
    "notice": "text",
    "delay": "seconds",
    "error": "message",
    "sign_out": "message",
    "exit": "message",
    "stop": "",
}


def _type_name(value: Any) -> str:
    return {dict: "a table", list: "an array", str: "a string", bool: "a boolean"}.get(
        type(value), type(value).__name__
    )


def parse_script(source: str, name: str = "<script>") -> Script:
    """Parse and validate TOML script text; ScriptError names file, line and field."""
    try:
        doc = tomllib.loads(source)
    except tomllib.TOMLDecodeError as exc:
        match = re.search(r"line (\d+)", str(exc))
        raise ScriptError(
            name, int(match.group(1)) if match else 1, "", f"invalid TOML: {exc}"
        ) from exc
    return ScriptParser(name, source).script(doc, name)


def load_script(path: str | FsPath) -> Script:
    """Read and parse a TOML script file; errors name the file."""
    file = FsPath(path)
    try:
        source = file.read_text(encoding="utf-8")
    except OSError as exc:
        raise ScriptError(file.name, 1, "", f"cannot read script: {exc.strerror}") from exc
    return parse_script(source, file.name)
