"""Client actions -> Conversation call plans, or a rejection with a reason.

The host has already validated the action against the wire schema and the reducer rules; this
table decides whether the provider can honour it and which ``Conversation`` calls do so, in
order. It is pure: it reads only the action and a ``CommandContext`` snapshot of what the host
knows, and returns data (``CallPlan`` or ``Rejection``). A rejected action never reaches the
provider, so an answer that does not fit a question is refused here, with the reason.

=================================  ==========================================================
client action                      plan
=================================  ==========================================================
``chat/turnStarted``               ``SetModel`` when ``message.model`` names a model (unknown
                                   model, effort or context size: rejected), ``SelectAgent``
                                   when ``message.agent`` names a known custom agent (unknown:
                                   rejected), then ``Send``; ``RunCommand`` instead of ``Send``
                                   when the message invokes one of the provider's ``/``
                                   commands (``/name args`` as its text, or the command
                                   attachment ``completions`` offered: ``COMMAND_META``)
``chat/turnResume``                ``Send`` of a prompt that asks the agent to go on (only for
                                   the latest turn, when it ended in a resumable error: a
                                   provider exit; the conversation reopens first)
``chat/turnCancelled``             ``Cancel`` (only for the active turn)
``chat/toolCallConfirmed``         ``Respond(decision=option id)``: the selected option, else
                                   the provider's allow-once option (approve) or its first
                                   reject option (deny); a denial's ``userSuggestion`` then
                                   goes to the running turn as ``Steer``
``chat/inputCompleted``            ``Respond``: accept -> ``answers`` (one list per question,
                                   from the merged answers), decline -> ``reject``, cancel ->
                                   ``cancel`` for an elicitation (``reject`` otherwise)
``chat/pendingMessageSet``         steering -> ``Steer``; queued -> no call now (checked as
                                   the turn it will be; the host starts it when idle, see
                                   ``next_queued_turn``)
``session/titleChanged``           ``SetTitle`` (no call when the provider cannot title)
``chat/toolCallComplete``,         no call: the result answers the provider's host tool call
``chat/toolCallContentChanged``,   the host waits on (``client_calls``); refused for any other
``chat/toolCallResultConfirmed``   tool call (the rules already checked the client owns it)
state-only actions (drafts, answer no call: the reducer is the whole effect
drafts, queue edits, read/archive, (``NO_CALL_ACTIONS``)
active client, default chat)
the other client-dispatchable      rejected with the reason in ``UNSUPPORTED_ACTIONS`` (e.g.
chat and session actions           ``chat/truncated``: the provider owns the transcript); automation
                                   actions: not offered by this host
=================================  ==========================================================

Message attachments become the prompt's files and uploads: ``resource`` with a ``file:`` URI ->
``File`` (directory when ``displayKind`` is "directory"); ``embeddedResource`` -> ``Blob``
(MIME limited to what agentapi accepts, and to the named model's media when it reports them);
``simple`` -> a text/plain ``Blob`` of its ``modelRepresentation``. Other attachments are
rejected rather than silently dropped.
"""

from __future__ import annotations

import base64
import binascii
import posixpath
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any
from urllib.parse import unquote, urlparse

from ahp_bridge.agentapi import Answer, Blob, File, Interaction, Model, Option, Prompt
from ahp_bridge.protocol.action_types import ActionType

from ._wire import Action, clean_line, iso_from_ms
from .questions import AnswerError, answer_from_input

__all__ = [
    "CALL_ACTIONS",
    "CLIENT_TOOL_ACTIONS",
    "COMMAND_META",
    "MODEL_CONFIG_CONTEXT_SIZE",
    "MODEL_CONFIG_EFFORT",
    "NO_CALL_ACTIONS",
    "RESUME_PROMPT",
    "UNSUPPORTED_ACTIONS",
    "Call",
    "CallPlan",
    "Cancel",
    "CommandContext",
    "Rejection",
    "Respond",
    "RunCommand",
    "SelectAgent",
    "Send",
    "SetModel",
    "SetTitle",
    "Steer",
    "message_prompt",
    "next_queued_turn",
    "plan_command",
    "synced_answers",
]

COMMAND_META = "ahpBridge.command"
"""``_meta`` key of the ``simple`` attachment that names the ``/`` command a message invokes."""

MODEL_CONFIG_EFFORT = "effort"
"""``ModelSelection.config`` key of the reasoning effort (agentapi ``SetModel`` effort)."""
MODEL_CONFIG_CONTEXT_SIZE = "contextSize"
"""``ModelSelection.config`` key of the context tier id (agentapi ``SetModel`` context size)."""

_MIME = frozenset(
    {"image/png", "image/jpeg", "image/gif", "image/webp", "application/pdf", "text/plain"}
)

RESUME_PROMPT = (
    "Continue where you stopped: your previous attempt at this request was interrupted "
    "before it finished."
)
"""What a resumed turn sends: the provider's own record holds the request and the work so far."""

CALL_ACTIONS = frozenset(
    {
        ActionType.CHAT_TURN_STARTED,
        ActionType.CHAT_TURN_RESUME,
        ActionType.CHAT_TURN_CANCELLED,
        ActionType.CHAT_TOOL_CALL_CONFIRMED,
        ActionType.CHAT_INPUT_COMPLETED,
        ActionType.CHAT_PENDING_MESSAGE_SET,
        ActionType.SESSION_TITLE_CHANGED,
    }
)
"""Client actions that become Conversation calls (see the module table)."""

NO_CALL_ACTIONS = frozenset(
    {
        ActionType.CHAT_PENDING_MESSAGE_REMOVED,
        ActionType.CHAT_QUEUED_MESSAGES_REORDERED,
        ActionType.CHAT_DRAFT_CHANGED,
        ActionType.CHAT_INPUT_ANSWER_CHANGED,
        ActionType.SESSION_IS_READ_CHANGED,
        ActionType.SESSION_IS_ARCHIVED_CHANGED,
        ActionType.CHAT_IS_READ_CHANGED,
        ActionType.CHAT_IS_ARCHIVED_CHANGED,
        ActionType.SESSION_ACTIVE_CLIENT_SET,
        ActionType.SESSION_ACTIVE_CLIENT_REMOVED,
        ActionType.SESSION_DEFAULT_CHAT_CHANGED,
    }
)
"""Client actions whose whole effect is the reducer's: accepted, no provider call."""

CLIENT_TOOL_ACTIONS = frozenset(
    {
        ActionType.CHAT_TOOL_CALL_COMPLETE,
        ActionType.CHAT_TOOL_CALL_CONTENT_CHANGED,
        ActionType.CHAT_TOOL_CALL_RESULT_CONFIRMED,
    }
)
"""Client actions that answer a client tool call the provider waits on: no provider call."""

_FIXED_WORKDIR = "the provider's working directory is fixed when the conversation opens"
_NO_MCP = "MCP servers cannot be controlled through this bridge"
_NO_TOGGLE = "customizations cannot be toggled through this bridge"
_NO_CONFIG = "session configuration cannot be changed through this bridge"
UNSUPPORTED_ACTIONS: Mapping[str, str] = {
    ActionType.CHAT_TRUNCATED: "the provider owns the transcript and cannot truncate it",
    ActionType.CHAT_WORKING_DIRECTORY_SET: _FIXED_WORKDIR,
    ActionType.CHAT_WORKING_DIRECTORY_REMOVED: _FIXED_WORKDIR,
    ActionType.SESSION_WORKING_DIRECTORY_SET: _FIXED_WORKDIR,
    ActionType.SESSION_WORKING_DIRECTORY_REMOVED: _FIXED_WORKDIR,
    ActionType.SESSION_WORKING_DIRECTORY_REPLACED: _FIXED_WORKDIR,
    ActionType.SESSION_CUSTOMIZATION_TOGGLED: _NO_TOGGLE,
    ActionType.SESSION_MCP_SERVER_START_REQUESTED: _NO_MCP,
    ActionType.SESSION_MCP_SERVER_STOP_REQUESTED: _NO_MCP,
    ActionType.SESSION_MCP_SERVER_BACKGROUND_REQUESTED: _NO_MCP,
    ActionType.SESSION_CONFIG_CHANGED: _NO_CONFIG,
}
"""Client-dispatchable chat and session actions the provider cannot honour, with the reason."""


# ------------------------------------------------------------------------- calls


@dataclass(frozen=True)
class SetModel:
    """``Conversation.set_model(model, effort, context_size)``."""

    model: str
    effort: str = ""
    context_size: str = ""


@dataclass(frozen=True)
class SelectAgent:
    """``AgentSelector.select_agent(agent_id)`` (optional capability; "" is the default agent)."""

    agent_id: str


@dataclass(frozen=True)
class Send:
    """``Conversation.send(prompt)``."""

    prompt: Prompt


@dataclass(frozen=True)
class RunCommand:
    """``Conversation.run_command(name, args)``: starts a turn like ``Send``."""

    name: str
    args: Prompt


@dataclass(frozen=True)
class Cancel:
    """``Conversation.cancel()``."""


@dataclass(frozen=True)
class Respond:
    """``Conversation.respond(interaction_id, answer)``."""

    interaction_id: str
    answer: Answer


@dataclass(frozen=True)
class Steer:
    """``Conversation.steer(prompt)``."""

    prompt: Prompt


@dataclass(frozen=True)
class SetTitle:
    """``Conversation.set_title(title)``."""

    title: str


Call = SetModel | SelectAgent | Send | RunCommand | Cancel | Respond | Steer | SetTitle


@dataclass(frozen=True)
class CallPlan:
    """Accepted: make these calls, in order, after applying the action (may be none)."""

    calls: tuple[Call, ...] = ()


@dataclass(frozen=True)
class Rejection:
    """Refused: echo the action with ``rejectionReason=reason``; nothing reaches the provider."""

    reason: str


@dataclass(frozen=True)
class CommandContext:
    """What the host knows when a client action arrives.

    ``permissions`` maps an AHP ``toolCallId`` to its pending permission interaction and
    ``inputs`` an AHP input ``requestId`` to its pending question (both from
    ``EventTranslator.pending_permissions()`` / ``pending_inputs()``); ``input_answers`` holds
    the answers already synced on each open request (``synced_answers``). ``agents`` maps an
    AHP custom agent URI (``AgentCustomization.uri``) to the provider's agent id; leave it
    empty when the provider has no custom agents.
    """

    session_ready: bool = True
    active_turn_id: str | None = None
    models: Sequence[Model] = ()
    permissions: Mapping[str, Interaction] = field(default_factory=dict)
    inputs: Mapping[str, Interaction] = field(default_factory=dict)
    input_answers: Mapping[str, Mapping[str, Mapping[str, Any]]] = field(default_factory=dict)
    can_set_title: bool = True
    agents: Mapping[str, str] = field(default_factory=dict)
    workdir: str = ""
    """The conversation's absolute working directory; when set, attached files must be in it."""
    resumable_turn_id: str | None = None
    """The latest turn's id when it ended in a resumable error (``chat/turnResume`` may name it)."""
    client_calls: frozenset[str] = frozenset()
    """AHP ``toolCallId``s of the client tool calls the provider is waiting on."""
    commands: Mapping[str, str] = field(default_factory=dict)
    """The provider's ``/`` commands: each name and alias -> the command's name."""


class _Refused(ValueError):
    """A rejection reason raised out of nested helpers (a ValueError for outside callers)."""


# ------------------------------------------------------------------------- the table


def plan_command(action: Mapping[str, Any], ctx: CommandContext) -> CallPlan | Rejection:
    """Decide how the provider honours one client action (see the module table)."""
    kind = action.get("type")
    try:
        if kind == ActionType.CHAT_TURN_STARTED:
            return _turn_started(action, ctx)
        if kind == ActionType.CHAT_TURN_RESUME:
            return _turn_resume(action, ctx)
        if kind == ActionType.CHAT_TURN_CANCELLED:
            return CallPlan((Cancel(),))
        if kind == ActionType.CHAT_TOOL_CALL_CONFIRMED:
            return _tool_confirmed(action, ctx)
        if kind == ActionType.CHAT_INPUT_COMPLETED:
            return _input_completed(action, ctx)
        if kind == ActionType.CHAT_PENDING_MESSAGE_SET:
            return _pending_message(action, ctx)
        if kind == ActionType.SESSION_TITLE_CHANGED:
            title = clean_line(str(action.get("title", "")))
            if not title:
                raise _Refused("the title is empty")
            return CallPlan((SetTitle(title),) if ctx.can_set_title else ())
        if kind in NO_CALL_ACTIONS:
            return CallPlan()
        if kind in CLIENT_TOOL_ACTIONS:
            if action.get("toolCallId") not in ctx.client_calls:
                raise _Refused(
                    f"no client tool call {action.get('toolCallId')} is waiting for its client"
                )
            return CallPlan()
    except _Refused as refused:
        return Rejection(str(refused))
    reason = UNSUPPORTED_ACTIONS.get(str(kind))
    if reason is None and str(kind).startswith(("automation/", "automationRun/")):
        reason = "automations are not offered by this host"
    return Rejection(reason or f"{kind} is not a chat or session action this bridge plans")


def _turn_resume(action: Mapping[str, Any], ctx: CommandContext) -> CallPlan:
    if not ctx.session_ready:
        raise _Refused("the session is not ready")
    return CallPlan((Send(Prompt(text=RESUME_PROMPT)),))


def _turn_started(action: Mapping[str, Any], ctx: CommandContext) -> CallPlan:
    if not ctx.session_ready:
        raise _Refused("the session is not ready")
    message = action.get("message")
    if not isinstance(message, Mapping):
        raise _Refused("the turn has no message")
    calls: list[Call] = []
    model = _model_selection(message, ctx)
    if model is not None:
        calls.append(model)
    agent = message.get("agent")
    if agent is not None:
        uri = agent.get("uri") if isinstance(agent, Mapping) else None
        agent_id = ctx.agents.get(uri) if isinstance(uri, str) else None
        if agent_id is None:
            raise _Refused(f"custom agent {uri!r} is not available")
        calls.append(SelectAgent(agent_id))
    named = _named_model(message, ctx)
    command = _command(message, ctx)
    if command is not None:
        name, rest = command
        args = message_prompt(rest, model=named, workdir=ctx.workdir, allow_empty=True)
        calls.append(RunCommand(name, args))
    else:
        calls.append(Send(message_prompt(message, model=named, workdir=ctx.workdir)))
    return CallPlan(tuple(calls))


def _command(message: Mapping[str, Any], ctx: CommandContext) -> tuple[str, dict[str, Any]] | None:
    """(command name, the message without the command) when the message invokes one."""
    attachments = list(message.get("attachments") or [])
    text = str(message.get("text", ""))
    named: str | None = None
    for attachment in attachments:
        meta = attachment.get("_meta") if isinstance(attachment, Mapping) else None
        if (
            attachment.get("type") == "simple"
            and isinstance(meta, Mapping)
            and COMMAND_META in meta
        ):
            named = str(meta[COMMAND_META])
            attachments.remove(attachment)
            if named not in ctx.commands.values():
                raise _Refused(f"/{named} is not a command of this provider")
            break
    word, _, rest = text.lstrip().partition(" ")
    typed = ctx.commands.get(word[1:]) if word.startswith("/") else None
    if typed is not None and named in (None, typed):
        named, text = typed, rest.strip()
    if named is None:
        return None
    return named, {**message, "text": text, "attachments": attachments}


def find_model(models: Sequence[Model], model_id: Any) -> Model | None:
    """The provider's model of that id, or None."""
    return next((m for m in models if m.id == model_id), None)


def option_problem(model: Model, *, effort: str = "", context_size: str = "") -> str:
    """Why an effort or context size is not one `model` offers; "" when they fit (or are "")."""
    if effort and effort not in model.efforts:
        return f"model {model.id!r} has no effort {effort!r}"
    if context_size and context_size not in {c.id for c in model.context_sizes}:
        return f"model {model.id!r} has no context size {context_size!r}"
    return ""


def _named_model(message: Mapping[str, Any], ctx: CommandContext) -> Model | None:
    selection = message.get("model")
    if not isinstance(selection, Mapping):
        return None
    return find_model(ctx.models, selection.get("id"))


def _model_selection(message: Mapping[str, Any], ctx: CommandContext) -> SetModel | None:
    selection = message.get("model")
    if selection is None:
        return None
    if not isinstance(selection, Mapping) or not isinstance(selection.get("id"), str):
        raise _Refused("message.model must name a model id")
    model = _named_model(message, ctx)
    if model is None:
        raise _Refused(f"unknown model {selection['id']!r}")
    config = selection.get("config") or {}
    if not isinstance(config, Mapping):
        raise _Refused("message.model.config must be an object")
    unknown = sorted(set(config) - {MODEL_CONFIG_EFFORT, MODEL_CONFIG_CONTEXT_SIZE})
    if unknown:
        raise _Refused(f"model option {unknown[0]!r} is not supported")
    effort = config.get(MODEL_CONFIG_EFFORT, "")
    size = config.get(MODEL_CONFIG_CONTEXT_SIZE, "")
    if not isinstance(effort, str) or not isinstance(size, str):
        raise _Refused("model effort and context size must be strings")
    problem = option_problem(model, effort=effort, context_size=size)
    if problem:
        raise _Refused(problem)
    return SetModel(model.id, effort, size)


def _tool_confirmed(action: Mapping[str, Any], ctx: CommandContext) -> CallPlan:
    interaction = ctx.permissions.get(str(action.get("toolCallId")))
    if interaction is None or action.get("turnId") != ctx.active_turn_id:
        raise _Refused("the tool call is not waiting for confirmation")
    if "editedToolInput" in action:
        raise _Refused("this provider does not accept edited tool input")
    approved = action.get("approved") is True
    option = _option(interaction.options, action.get("selectedOptionId"), approved)
    calls: list[Call] = [Respond(interaction.id, Answer(decision=option.id))]
    suggestion = action.get("userSuggestion")
    if not approved and isinstance(suggestion, Mapping):
        calls.append(Steer(message_prompt(suggestion, workdir=ctx.workdir)))
    return CallPlan(tuple(calls))


def _option(options: Sequence[Option], selected: Any, approved: bool) -> Option:
    verb = "approve" if approved else "deny"
    if selected is not None:
        option = next((o for o in options if o.id == selected), None)
        if option is None:
            raise _Refused(f"unknown option {selected!r}")
        if option.reject == approved:
            raise _Refused(f"option {selected!r} does not {verb}")
        return option
    if approved:
        option = next((o for o in options if o.allow_once and not o.reject), None)
        option = option or next((o for o in options if not o.reject), None)
    else:
        option = next((o for o in options if o.reject), None)
    if option is None:
        raise _Refused(f"the provider offered no option to {verb}")
    return option


def _input_completed(action: Mapping[str, Any], ctx: CommandContext) -> CallPlan:
    request_id = str(action.get("requestId"))
    interaction = ctx.inputs.get(request_id)
    if interaction is None:
        raise _Refused("no such input request is open")
    response = action.get("response")
    if response == "decline":
        answer = Answer(reject=True)
    elif response == "cancel":
        answer = Answer(cancel=True) if interaction.elicitation is not None else Answer(reject=True)
    elif response == "accept":
        merged = {**ctx.input_answers.get(request_id, {}), **(action.get("answers") or {})}
        try:
            answer = answer_from_input(interaction, merged)
        except AnswerError as error:
            raise _Refused(str(error)) from None
    else:
        raise _Refused(f"unknown response {response!r}")
    return CallPlan((Respond(interaction.id, answer),))


def _pending_message(action: Mapping[str, Any], ctx: CommandContext) -> CallPlan:
    message = action.get("message")
    if not isinstance(message, Mapping):
        raise _Refused("the pending message has no message")
    prompt = message_prompt(message, workdir=ctx.workdir)
    if action.get("kind") == "steering":
        return CallPlan((Steer(prompt),))
    if action.get("kind") == "queued":
        # Checked now as the turn it will start: one the provider cannot take would sit at
        # the head of the queue and stall every message behind it.
        _turn_started(action, replace(ctx, session_ready=True))
        return CallPlan()
    raise _Refused(f"unknown pending message kind {action.get('kind')!r}")


# ------------------------------------------------------------------------- prompts


def message_prompt(
    message: Mapping[str, Any],
    *,
    model: Model | None = None,
    workdir: str = "",
    allow_empty: bool = False,
) -> Prompt:
    """The agentapi ``Prompt`` for an AHP ``Message``; raises ``ValueError`` when it cannot.

    ``model``, when given, gates uploads by the media it reports. ``workdir``, when given,
    confines attached files to it (lexically: ``..`` cannot leave it) and makes their ``rel``
    relative to it. ``allow_empty`` accepts a message with nothing in it (a command's
    arguments).
    """
    text = message.get("text")
    if not isinstance(text, str):
        raise _Refused("the message text must be a string")
    files: list[File] = []
    blobs: list[Blob] = []
    for index, attachment in enumerate(message.get("attachments") or []):
        if not isinstance(attachment, Mapping):
            raise _Refused(f"attachment {index} is not an object")
        _attachment(index, attachment, files, blobs, model, workdir)
    if not text.strip() and not files and not blobs and not allow_empty:
        raise _Refused("the message is empty")
    return Prompt(text=text, files=files, attachments=blobs)


def _attachment(
    index: int,
    attachment: Mapping[str, Any],
    files: list[File],
    blobs: list[Blob],
    model: Model | None,
    workdir: str,
) -> None:
    kind = attachment.get("type")
    label = str(attachment.get("label", ""))
    where = f"attachment {index} ({label!r})"
    if kind == "resource":
        uri = urlparse(str(attachment.get("uri", "")))
        if uri.scheme != "file" or uri.netloc not in ("", "localhost") or not uri.path:
            raise _Refused(f"{where}: only file: URIs on this host can be attached")
        path = posixpath.normpath(unquote(uri.path))
        rel = label
        if workdir:
            root = posixpath.normpath(workdir)
            if path != root and not path.startswith(root.rstrip("/") + "/"):
                raise _Refused(f"{where}: files outside the working directory cannot be attached")
            rel = posixpath.relpath(path, root)
        is_dir = attachment.get("displayKind") == "directory"
        files.append(File(path=path, rel=rel, dir=is_dir))
    elif kind == "embeddedResource":
        mime = str(attachment.get("contentType", "")).split(";")[0].strip().lower()
        if mime not in _MIME:
            raise _Refused(f"{where}: content type {mime!r} cannot be uploaded")
        _check_media(where, mime, model, blobs)
        try:
            data = base64.b64decode(str(attachment.get("data", "")), validate=True)
        except (binascii.Error, ValueError):
            raise _Refused(f"{where}: data is not valid base64") from None
        blobs.append(Blob(name=label, mime=mime, data=data))
    elif kind == "simple":
        representation = attachment.get("modelRepresentation")
        if not isinstance(representation, str) or not representation:
            raise _Refused(f"{where}: a client attachment needs its modelRepresentation")
        blobs.append(Blob(name=label, mime="text/plain", data=representation.encode()))
    else:
        raise _Refused(f"{where}: {kind!r} attachments are not supported by this provider")


def _check_media(where: str, mime: str, model: Model | None, blobs: list[Blob]) -> None:
    if model is None or model.media is None or mime == "text/plain":
        return
    media = model.media
    if mime == "application/pdf" and not media.pdf:
        raise _Refused(f"{where}: model {model.id!r} does not accept PDF files")
    if mime.startswith("image/"):
        if not media.images:
            raise _Refused(f"{where}: model {model.id!r} does not accept images")
        images = sum(1 for b in blobs if b.mime.startswith("image/")) + 1
        if media.max_images and images > media.max_images:
            raise _Refused(f"{where}: at most {media.max_images} images per message")
    if media.types and mime not in media.types:
        raise _Refused(f"{where}: model {model.id!r} does not accept {mime}")


# ------------------------------------------------------------------------- host helpers


def synced_answers(chat_state: Mapping[str, Any], request_id: str) -> dict[str, Any]:
    """The answers already synced on the open input request ``request_id`` of a chat state."""
    turn = chat_state.get("activeTurn") or {}
    for part in turn.get("responseParts") or []:
        request = part.get("request") if part.get("kind") == "inputRequest" else None
        if request is not None and request.get("id") == request_id:
            return dict(request.get("answers") or {})
    return {}


def next_queued_turn(
    chat_state: Mapping[str, Any], turn_id: str, started_at_ms: int
) -> Action | None:
    """The host's ``chat/turnStarted{queuedMessageId}`` for the chat's next queued message.

    None while a turn runs or nothing is queued. The action consumes the queue entry
    atomically in the reducer; run it through ``plan_command`` for its calls.
    """
    if chat_state.get("activeTurn"):
        return None
    queued = chat_state.get("queuedMessages") or []
    if not queued:
        return None
    first = queued[0]
    return {
        "type": ActionType.CHAT_TURN_STARTED,
        "turnId": turn_id,
        "startedAt": iso_from_ms(started_at_ms),
        "message": first["message"],
        "queuedMessageId": first["id"],
    }
