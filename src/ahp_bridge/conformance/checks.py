"""The contract checks. Each drives a freshly started provider and judges what it did.

A check is an async function of a :class:`Context` that returns normally to pass (an
optional note for the report) or raises ``CheckFailed``/``NotApplicable``. Checks judge
the contract only: which events arrive, in what shape and order, and which errors the
calls raise, never a provider's wording.
"""

from __future__ import annotations

import json
import os
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from functools import partial

import trio
import trio.testing

from ahp_bridge.agentapi import (
    COMMAND_PROMPT,
    COMMAND_SKILL,
    DELIVERY_STEER,
    MAX_HOST_TOOL_ARGUMENTS,
    REWIND_CONVERSATION,
    AgentAPIError,
    Answer,
    Busy,
    Capabilities,
    Closed,
    ConversationNotFound,
    Event,
    EventKind,
    FileDiff,
    FileEdit,
    History,
    HistoryReader,
    HistoryRewinder,
    HostToolCall,
    HostToolResult,
    Interaction,
    InteractionGone,
    InteractionKind,
    InteractionState,
    ItemKind,
    Prompt,
    Provider,
    ReadRequest,
    Titler,
    ToolStatus,
    TurnState,
    Unsupported,
    UtilityRequest,
    UtilityRunner,
)
from ahp_bridge.conformance.driver import (
    TERMINAL_TURN_STATES,
    CheckFailed,
    Context,
    NotApplicable,
    OpenConversation,
    error_name,
    expect_error,
)
from ahp_bridge.conformance.stream import (
    FINAL_INTERACTION_STATES,
    Transcript,
    TurnTracker,
    describe,
)
from ahp_bridge.conformance.target import HOST_TOOL

CheckFn = Callable[[Context], Awaitable[str | None]]

_SHOWN = 3  # violations quoted in one failure reason
_TITLE = "AHP conformance title"
_UNKNOWN_AGENT = "ahp-conformance-no-such-agent"
_UNKNOWN_MODEL = "ahp-conformance-unlisted-model"
_STEER = "AHP conformance steer"
_UNKNOWN_COMMAND = "ahp-conformance-no-such-command"
_COMMAND_ARGS = "AHP conformance arguments"
_TURN_OUTPUT = frozenset({EventKind.TURN, EventKind.ITEM, EventKind.DELTA, EventKind.INTERACTION})


@dataclass(frozen=True)
class Check:
    """One named contract check and what it proves."""

    name: str
    summary: str
    run: CheckFn


def _violations(kind: str, found: list[str]) -> CheckFailed:
    shown = "; ".join(found[:_SHOWN])
    more = f" (and {len(found) - _SHOWN} more)" if len(found) > _SHOWN else ""
    return CheckFailed(f"{kind}: {shown}{more}")


async def _settle() -> None:
    """Let the provider's trio tasks run until they all wait (stragglers show up)."""
    await trio.testing.wait_all_tasks_blocked(cushion=0.01)


async def _cancel_long(ctx: Context, conv: OpenConversation, working: int) -> tuple[int, TurnState]:
    """End the running long turn: cancel it when the provider can, else let it finish."""
    if ctx.capabilities().cancel:
        ctx.step = "waiting for cancel to return"
        try:
            await conv.conversation.cancel()
        except AgentAPIError as exc:
            raise CheckFailed(f"cancel of a running turn raised {error_name(exc)}") from exc
        return await conv.wait_end(working + 1, "the cancelled turn to end")
    return await conv.wait_end(working + 1, "the long turn to end")


def _answer_for(ia: Interaction) -> Answer:
    """An answer that accepts a permission (allow once) or picks each question's first choice."""
    if ia.kind == InteractionKind.PERMISSION:
        if not ia.options:
            raise CheckFailed(f"permission request {ia.id!r} offers no options")
        allow = [o for o in ia.options if o.allow_once] or [o for o in ia.options if not o.reject]
        return Answer(decision=(allow or ia.options)[0].id)
    if not ia.questions:
        raise CheckFailed(f"question {ia.id!r} asks no questions")
    return Answer(answers=[[q.choices[0]] if q.choices else ["yes"] for q in ia.questions])


async def _answered_turn(
    ctx: Context, conv: OpenConversation, text: str, kind: InteractionKind
) -> tuple[Interaction, Answer]:
    """Run a turn that asks: answer its pending interaction, see it answered, see the end."""
    start = len(conv.sink)
    await conv.send(text)
    ia = await conv.wait_interaction(
        start, kind, InteractionState.PENDING, f"a pending {kind.value}"
    )
    answer = _answer_for(ia)
    ctx.step = f"waiting for respond to the pending {kind.value} to return"
    try:
        await conv.conversation.respond(ia.id, answer)
    except AgentAPIError as exc:
        raise CheckFailed(f"respond to a pending {kind.value} raised {error_name(exc)}") from exc
    state = await conv.wait_interaction_state(
        ia.id, FINAL_INTERACTION_STATES, f"the answered {kind.value} to leave pending"
    )
    if state != InteractionState.ANSWERED:
        raise CheckFailed(f"the answered {kind.value} was reported {state.value}")
    await conv.wait_end(start, f"the {kind.value} turn to end")
    return ia, answer


def _interaction_scenarios(ctx: Context) -> list[tuple[str, InteractionKind]]:
    """The interaction scenarios the provider supports: (prompt text, kind)."""
    caps = ctx.capabilities()
    scenarios: list[tuple[str, InteractionKind]] = []
    if caps.permissions or ctx.target.prompts.permission is not None:
        scenarios.append((ctx.prompt("permission", "permissions"), InteractionKind.PERMISSION))
    if caps.questions or ctx.target.prompts.question is not None:
        scenarios.append((ctx.prompt("question", "questions"), InteractionKind.QUESTION))
    if not scenarios:
        raise NotApplicable(
            "no permission or question prompt, and Capabilities.permissions and "
            "Capabilities.questions are false"
        )
    return scenarios


# --- provider basics -------------------------------------------------------------------


async def provider_basics(ctx: Context) -> str | None:
    """Name, display name and Capabilities are given; check passes; models are well formed."""
    provider = ctx.started
    if not isinstance(provider, Provider):
        raise CheckFailed(f"{type(provider).__name__} lacks methods of the Provider protocol")
    if not provider.name():
        raise CheckFailed("name() is empty")
    if not provider.display_name():
        raise CheckFailed("display_name() is empty")
    if not isinstance(ctx.capabilities(), Capabilities):
        raise CheckFailed("capabilities() does not return Capabilities")
    ctx.step = "waiting for check to return"
    try:
        await provider.check()
    except AgentAPIError as exc:
        raise CheckFailed(f"check raised {error_name(exc)}") from exc
    ctx.step = "waiting for models to return"
    try:
        models = await provider.models()
    except Unsupported:
        return "models: unsupported (provider default only)"
    ids = [m.id for m in models]
    if any(not i for i in ids):
        raise CheckFailed("models() lists a model without an id")
    if len(set(ids)) != len(ids):
        raise CheckFailed(f"models() lists an id twice: {sorted(ids)}")
    return f"{len(models)} models"


# --- the event stream ------------------------------------------------------------------


async def transcript(ctx: Context) -> str | None:
    """Items upsert by (agent_id, id), deltas create absent items, kinds never change.

    Runs every scenario the target gives (answer, answered interactions, cancelled long
    turn) on one conversation; interactions must name tool calls that exist.
    """
    answer = ctx.prompt("answer", None)
    conv = await ctx.open()
    await conv.answer_turn(answer)
    prompts = ctx.target.prompts
    for text, kind in (
        (prompts.permission, InteractionKind.PERMISSION),
        (prompts.question, InteractionKind.QUESTION),
    ):
        if text is not None:
            await _answered_turn(ctx, conv, text, kind)
    if prompts.long is not None:
        start = len(conv.sink)
        await conv.send(prompts.long)
        working = await conv.wait_working(start, "the long turn to start working")
        await _cancel_long(ctx, conv, working)
    await _settle()
    await conv.close()
    model = Transcript()
    for event in conv.sink.events:
        model.feed(event)
    violations = model.violations + model.dangling_tool_calls()
    if violations:
        raise _violations("inconsistent transcript", violations)
    if not any(t.strip() for t in model.texts(ItemKind.ASSISTANT)):
        raise CheckFailed("the answer turn produced no assistant text (items or deltas)")
    return f"{model.events} events, {len(model.items)} items"


async def turn_lifecycle(ctx: Context) -> str | None:
    """Each turn goes working, then exactly one terminal state; nothing of it comes later."""
    answer = ctx.prompt("answer", None)
    conv = await ctx.open()
    sends = 2
    await conv.answer_turn(answer)
    await _settle()
    await conv.answer_turn(answer)
    if ctx.target.prompts.long is not None:
        sends += 1
        start = len(conv.sink)
        await conv.send(ctx.target.prompts.long)
        working = await conv.wait_working(start, "the long turn to start working")
        await _cancel_long(ctx, conv, working)
    await _settle()
    await conv.close()
    tracker = TurnTracker()
    for event in conv.sink.events:
        tracker.feed(event)
    if tracker.violations:
        raise _violations("turn lifecycle broken", tracker.violations)
    if tracker.running:
        raise CheckFailed("the last turn never reached a terminal state before close returned")
    if len(tracker.turns) != sends:
        raise CheckFailed(f"{sends} prompts sent one after another made {len(tracker.turns)} turns")
    return f"{len(tracker.turns)} turns"


async def events_after_close(ctx: Context) -> str | None:
    """Events arrive only until close returns: after a turn, during one, and while asking."""
    answer = ctx.prompt("answer", None)
    conv = await ctx.open()
    await conv.answer_turn(answer)
    await conv.close()
    convs = [conv]
    if ctx.target.prompts.long is not None:
        running = await ctx.open()
        start = len(running.sink)
        await running.send(ctx.target.prompts.long)
        await running.wait_working(start, "the long turn to start working")
        await running.close()
        convs.append(running)
    prompts = ctx.target.prompts
    for text, kind in (
        (prompts.permission, InteractionKind.PERMISSION),
        (prompts.question, InteractionKind.QUESTION),
    ):
        if text is not None:
            asking = await ctx.open()
            start = len(asking.sink)
            await asking.send(text)
            await asking.wait_interaction(
                start, kind, InteractionState.PENDING, f"a pending {kind.value}"
            )
            await asking.close()
            convs.append(asking)
    await _settle()

    def judge() -> None:
        late = [e for c in convs for e in c.sink.emissions if e.late]
        if late:
            shown = ", ".join(describe(e.event) for e in late[:_SHOWN])
            raise CheckFailed(f"{len(late)} events after close returned: {shown}")

    ctx.after_shutdown.append(judge)
    return None


async def emit_nonblocking(ctx: Context) -> str | None:
    """The adapter calls emit directly, never waiting on the host to run it."""
    answer = ctx.prompt("answer", None)
    conv = await ctx.open()
    await conv.answer_turn(answer)
    if ctx.target.prompts.long is not None:
        start = len(conv.sink)
        await conv.send(ctx.target.prompts.long)
        working = await conv.wait_working(start, "the long turn to start working")
        await _cancel_long(ctx, conv, working)
    await _settle()
    await conv.close()
    emissions = conv.sink.emissions
    blocking = [e for e in emissions if e.blocking]
    if blocking:
        first = blocking[0]
        raise CheckFailed(
            f"{len(blocking)} of {len(emissions)} emit calls made the adapter wait: "
            f"{first.blocking} ({describe(first.event)})"
        )
    foreign = sum(1 for e in emissions if not e.on_trio_thread)
    return f"{len(emissions)} emit calls, {foreign} from other threads"


async def conversation_isolation(ctx: Context) -> str | None:
    """Each conversation's events reach only its own sink, and ids differ."""
    answer = ctx.prompt("answer", None)
    first = await ctx.open()
    second = await ctx.open()
    ids = (first.conversation.id(), second.conversation.id())
    if not all(ids) or ids[0] == ids[1]:
        raise CheckFailed(f"two new conversations have the ids {ids[0]!r} and {ids[1]!r}")
    quiet = len(second.sink)
    await first.answer_turn(answer)
    await _settle()
    # Only turn output counts: a provider may report its own state to every conversation.
    strays = [e for e in second.sink.events[quiet:] if e.kind in _TURN_OUTPUT]
    if strays:
        raise CheckFailed(
            f"a turn of one conversation sent {len(strays)} events to another's sink, "
            f"first {describe(strays[0])}"
        )
    await second.answer_turn(answer)
    return None


# --- turns -----------------------------------------------------------------------------


async def busy_or_queued(ctx: Context) -> str | None:
    """A send during a running turn raises Busy, or runs as its own turn after it."""
    long = ctx.prompt("long", "cancel")
    answer = ctx.prompt("answer", None)
    conv = await ctx.open()
    start = len(conv.sink)
    await conv.send(long)
    working = await conv.wait_working(start, "the long turn to start working")
    ctx.step = "waiting for the send during the running turn to return"
    try:
        await conv.conversation.send(Prompt(text=answer))
    except Busy:
        queued = False
    except AgentAPIError as exc:
        raise CheckFailed(
            f"send during a running turn raised {error_name(exc)}; only Busy or queueing is allowed"
        ) from exc
    else:
        queued = True
    if not queued:
        ended = [e for e in conv.sink.events[working + 1 :] if e.turn is not None]
        if any(e.turn is not None and e.turn.state != TurnState.WORKING for e in ended):
            raise CheckFailed("the running turn ended when a send during it was refused Busy")
    end, _ = await _cancel_long(ctx, conv, working)
    if not queued:
        await _settle()
        later = [e.turn for e in conv.sink.events[end + 1 :] if e.turn is not None]
        if any(t.state == TurnState.WORKING for t in later):
            raise CheckFailed("a prompt refused with Busy started a turn after all")
        return "refused with Busy"
    next_working = await conv.wait_working(
        end + 1, "the prompt queued during the running turn to start its own turn"
    )
    _, state = await conv.wait_end(next_working + 1, "the queued prompt's turn to end")
    if state != TurnState.COMPLETED:
        raise CheckFailed(f"the queued prompt's turn ended {state.value}, not completed")
    return "queued and run after the turn"


async def cancel_ends_cancelled(ctx: Context) -> str | None:
    """Cancel ends the running turn as cancelled, and the conversation stays usable."""
    if not ctx.capabilities().cancel:
        raise NotApplicable("Capabilities.cancel is false")
    long = ctx.prompt("long", "cancel")
    answer = ctx.prompt("answer", None)
    conv = await ctx.open()
    start = len(conv.sink)
    await conv.send(long)
    working = await conv.wait_working(start, "the long turn to start working")
    ctx.step = "waiting for cancel to return"
    try:
        await conv.conversation.cancel()
    except AgentAPIError as exc:
        raise CheckFailed(f"cancel raised {error_name(exc)}") from exc
    _, state = await conv.wait_end(working + 1, "the cancelled turn to end")
    if state != TurnState.CANCELLED:
        raise CheckFailed(f"the cancelled turn ended {state.value}, not cancelled")
    await conv.answer_turn(answer)
    return None


async def turn_after_cancel(ctx: Context) -> str | None:
    """Cancel, then send at once: the cancelled turn's end is reported, and a send right after
    it is accepted and answers on its own.

    The host holds the next prompt until the provider reports the cancelled turn's end
    (``timeouts.turn_end``), so a provider that never reports it makes every turn after a
    cancel wait; one that refuses the send with Busy, or whose next turn ends without its
    answer (the agent still finishing the cancelled one), breaks "cancel and go on".
    """
    if not ctx.capabilities().cancel:
        raise NotApplicable("Capabilities.cancel is false")
    long = ctx.prompt("long", "cancel")
    answer = ctx.prompt("answer", None)
    conv = await ctx.open()
    start = len(conv.sink)
    await conv.send(long)
    working = await conv.wait_working(start, "the long turn to start working")
    ctx.step = "waiting for cancel to return"
    try:
        await conv.conversation.cancel()
    except AgentAPIError as exc:
        raise CheckFailed(f"cancel raised {error_name(exc)}") from exc
    end, state = await conv.wait_end(
        working + 1, "the cancelled turn's end (the host holds the next prompt until then)"
    )
    if state != TurnState.CANCELLED:
        raise CheckFailed(f"the cancelled turn ended {state.value}, not cancelled")
    ctx.step = "waiting for the send right after the cancelled turn's end to return"
    try:
        await conv.conversation.send(Prompt(text=answer))
    except Busy as exc:
        raise CheckFailed(
            "a send right after the cancelled turn's end was refused Busy: the turn was "
            "reported ended before the provider could take the next one"
        ) from exc
    except AgentAPIError as exc:
        raise CheckFailed(f"the send after the cancel raised {error_name(exc)}") from exc
    next_working = await conv.wait_working(end + 1, "the turn after the cancel to start working")
    index, state = await conv.wait_end(next_working + 1, "the turn after the cancel to end")
    if state != TurnState.COMPLETED:
        turn = conv.sink.events[index].turn
        detail = f" ({turn.error})" if turn is not None and turn.error else ""
        raise CheckFailed(f"the turn after the cancel ended {state.value}{detail}, not completed")
    said = [
        e
        for e in conv.sink.events[next_working + 1 : index]
        if (e.delta is not None and e.delta.kind is ItemKind.ASSISTANT and e.delta.text)
        or (e.item is not None and e.item.kind is ItemKind.ASSISTANT and e.item.text)
    ]
    if not said:
        raise CheckFailed(
            "the turn after the cancel completed without an answer (the agent may have "
            "ended it with what the cancelled turn left, and answer in the turn after)"
        )
    return None


# --- interactions ----------------------------------------------------------------------


async def respond_when_gone(ctx: Context) -> str | None:
    """Respond to an answered or expired interaction raises InteractionGone."""
    notes = []
    for text, kind in _interaction_scenarios(ctx):
        conv = await ctx.open()
        ia, answer = await _answered_turn(ctx, conv, text, kind)
        await expect_error(
            partial(conv.conversation.respond, ia.id, answer),
            (InteractionGone,),
            f"a second respond to an answered {kind.value}",
        )
        notes.append(f"{kind.value}: answered")
        if ctx.capabilities().cancel:
            start = len(conv.sink)
            await conv.send(text)
            ia = await conv.wait_interaction(
                start, kind, InteractionState.PENDING, f"another pending {kind.value}"
            )
            working = await conv.wait_working(start, f"the {kind.value} turn to be working")
            await _cancel_long(ctx, conv, working)
            state = await conv.wait_interaction_state(
                ia.id,
                FINAL_INTERACTION_STATES,
                f"the {kind.value} of the cancelled turn to expire",
            )
            if state != InteractionState.EXPIRED:
                raise CheckFailed(
                    f"the {kind.value} of a cancelled turn was reported {state.value}, not expired"
                )
            await expect_error(
                partial(conv.conversation.respond, ia.id, _answer_for(ia)),
                (InteractionGone,),
                f"respond to the {kind.value} of a cancelled turn",
            )
            notes[-1] += " and expired"
        await conv.close()
    return ", ".join(notes)


async def close_expires_interactions(ctx: Context) -> str | None:
    """Close expires a pending interaction and fabricates no answer for it."""
    notes = []
    for text, kind in _interaction_scenarios(ctx):
        conv = await ctx.open()
        start = len(conv.sink)
        await conv.send(text)
        ia = await conv.wait_interaction(
            start, kind, InteractionState.PENDING, f"a pending {kind.value}"
        )
        await conv.close()
        states = conv.interaction_states(ia.id)
        fabricated = [
            s for s in states if s in (InteractionState.ANSWERED, InteractionState.REJECTED)
        ]
        if fabricated:
            raise CheckFailed(
                f"close answered the pending {kind.value} on its own ({fabricated[0].value})"
            )
        if states[-1] != InteractionState.EXPIRED:
            raise CheckFailed(
                f"the pending {kind.value} was {states[-1].value}, not expired, when close returned"
            )
        notes.append(f"{kind.value} expired")
    return ", ".join(notes)


# --- conversations ---------------------------------------------------------------------


async def reopen_unknown(ctx: Context) -> str | None:
    """Opening an unknown conversation id raises ConversationNotFound, creating nothing."""
    ctx.step = "waiting for open of an unknown conversation id to return"
    unknown = ctx.target.unknown_conversation_id
    try:
        conv = await ctx.open(unknown)
    except ConversationNotFound:
        return None
    except AgentAPIError as exc:
        raise CheckFailed(
            f"open of an unknown conversation id raised {error_name(exc)}, "
            "expected ConversationNotFound"
        ) from exc
    raise CheckFailed(
        f"open of an unknown conversation id succeeded (conversation {conv.conversation.id()!r})"
    )


async def closed_conversation(ctx: Context) -> str | None:
    """A conversation is unusable after close: send raises Closed."""
    answer = ctx.prompt("answer", None)
    conv = await ctx.open()
    await conv.answer_turn(answer)
    await conv.close()
    await expect_error(
        lambda: conv.conversation.send(Prompt(text=answer)), (Closed,), "send after close"
    )
    return None


async def exit_closes(ctx: Context) -> str | None:
    """After an exit event the conversation is closed: nothing follows, send raises Closed."""
    text = ctx.target.prompts.exit
    if text is None:
        raise NotApplicable("the target gives no exit prompt (an optional scenario)")
    conv = await ctx.open()
    start = len(conv.sink)
    await conv.send(text)
    ctx.step = "waiting for the exit event"
    exited = await conv.sink.wait_for(
        lambda events: next(
            (i for i in range(start, len(events)) if events[i].kind == EventKind.EXIT), None
        )
    )
    if not conv.sink.events[exited].error:
        raise CheckFailed("the exit event carries no error text")
    await expect_error(
        lambda: conv.conversation.send(Prompt(text=ctx.target.prompts.answer or "hello")),
        (Closed,),
        "send after the exit event",
    )
    await _settle()
    try:
        await conv.close()
    except Closed:
        pass
    except AgentAPIError as exc:
        raise CheckFailed(f"close after the exit event raised {error_name(exc)}") from exc
    after = conv.sink.events[exited + 1 :]
    if after:
        raise CheckFailed(f"{len(after)} events after the exit event, first {describe(after[0])}")
    return None


# --- capabilities ----------------------------------------------------------------------


def _judge_history(history: History, live: Transcript, what: str) -> None:
    """A recorded transcript of an answered conversation, consistent with the live stream."""
    keys = [(item.agent_id, item.id) for item in history.items]
    twice = sorted({k for k in keys if keys.count(k) > 1})
    if twice:
        raise CheckFailed(f"{what} lists item {twice[0][1]!r} more than once")
    kinds = {item.kind for item in history.items if not item.agent_id}
    missing = [k.value for k in (ItemKind.USER, ItemKind.ASSISTANT) if k not in kinds]
    if missing:
        raise CheckFailed(f"{what} of an answered conversation has no {' or '.join(missing)} item")
    for item in history.items:
        entry = live.items.get((item.agent_id, item.id))
        if entry is not None and entry.kind != item.kind:
            raise CheckFailed(
                f"{what} has item {item.id!r} as {item.kind.value}, live it was {entry.kind.value}"
            )


async def _answered_conversation(ctx: Context) -> tuple[str, Transcript]:
    """Open a conversation, run the answer turn, close it: (its id, the live transcript)."""
    conv = await ctx.open()
    await conv.answer_turn(ctx.prompt("answer", None))
    conversation_id = conv.conversation.id()
    if not conversation_id:
        raise CheckFailed("id() is empty")
    live = Transcript()
    for event in conv.sink.events:
        live.feed(event)
    await conv.close()
    return conversation_id, live


async def cap_history(ctx: Context) -> str | None:
    """Capabilities.history: a reopened conversation's history holds its transcript."""
    if not ctx.capabilities().history:
        conv = await ctx.open()
        ctx.step = "waiting for history to return"
        await expect_error(conv.conversation.history, (Unsupported,), "history without History")
        return "unsupported, as advertised"
    conversation_id, live = await _answered_conversation(ctx)
    try:
        reopened = await ctx.open(conversation_id)
    except AgentAPIError as exc:
        raise CheckFailed(
            f"reopening conversation {conversation_id!r} raised {error_name(exc)}"
        ) from exc
    if reopened.conversation.id() != conversation_id:
        raise CheckFailed(
            f"reopening {conversation_id!r} gave conversation {reopened.conversation.id()!r}"
        )
    ctx.step = "waiting for history to return"
    try:
        history = await reopened.conversation.history()
    except AgentAPIError as exc:
        raise CheckFailed(f"history raised {error_name(exc)}") from exc
    _judge_history(history, live, "history")
    return f"{len(history.items)} items"


async def history_reader(ctx: Context) -> str | None:
    """A HistoryReader reads a closed conversation's record, and refuses an unknown id."""
    provider = ctx.started
    if not isinstance(provider, HistoryReader):
        raise NotApplicable("the provider implements no HistoryReader")
    conversation_id, live = await _answered_conversation(ctx)
    workdir = ctx.target.open_request.workdir
    ctx.step = "waiting for read_history to return"
    try:
        history = await provider.read_history(
            ReadRequest(conversation_id=conversation_id, workdir=workdir)
        )
    except AgentAPIError as exc:
        raise CheckFailed(
            f"read_history of a closed conversation raised {error_name(exc)}"
        ) from exc
    _judge_history(history, live, "read_history")
    unknown = ReadRequest(conversation_id=ctx.target.unknown_conversation_id, workdir=workdir)
    await expect_error(
        lambda: provider.read_history(unknown),
        (ConversationNotFound,),
        "read_history of an unknown conversation id",
    )
    return f"{len(history.items)} items"


async def cap_set_title(ctx: Context) -> str | None:
    """Capabilities.titles: a Titler whose set_title works; else set_title is Unsupported.

    Go's Titles means both the provider-level Titler and Conversation.SetTitle, so a
    provider that is no Titler may still rename conversations with Titles false; a
    Titler whose set_title works must advertise Titles.
    """
    conv = await ctx.open()
    titler = isinstance(ctx.started, Titler)
    ctx.step = "waiting for set_title to return"
    if ctx.capabilities().titles and not titler:
        raise CheckFailed("Titles is true but the provider does not implement Titler")
    try:
        await conv.conversation.set_title(_TITLE)
    except Unsupported as exc:
        if ctx.capabilities().titles:
            raise CheckFailed(
                f"set_title raised {error_name(exc)} although Titles is true"
            ) from exc
        return "unsupported, as advertised"
    except AgentAPIError as exc:
        raise CheckFailed(f"set_title raised {error_name(exc)}") from exc
    if not ctx.capabilities().titles:
        if titler:
            raise CheckFailed("Titles is false, yet the provider is a Titler and set_title works")
        return "set_title works; Titles is false because the provider is no Titler"
    return None


def _judge_diffs(diffs: list[FileDiff]) -> None:
    """Each FileDiff names its file once, with counts that are not negative."""
    paths = [d.path for d in diffs]
    if any(not p for p in paths):
        raise CheckFailed("diff returned a file change without a path")
    if len(set(paths)) != len(paths):
        raise CheckFailed("diff lists a file twice")
    wrong = [d.path for d in diffs if d.additions < 0 or d.deletions < 0]
    if wrong:
        raise _violations("diff counts below zero", wrong)
    same = [d.path for d in diffs if d.before and d.before == d.after and not d.patch]
    if same:
        raise _violations("diff lists files whose before and after are the same", same)


async def cap_diff(ctx: Context) -> str | None:
    """Capabilities.session_diff: diff returns file changes; without it, Unsupported."""
    conv = await ctx.open()
    ctx.step = "waiting for diff to return"
    if not ctx.capabilities().session_diff:
        await expect_error(conv.conversation.diff, (Unsupported,), "diff without SessionDiff")
        return "unsupported, as advertised"
    try:
        diffs = await conv.conversation.diff()
    except AgentAPIError as exc:
        raise CheckFailed(f"diff raised {error_name(exc)} although SessionDiff is true") from exc
    _judge_diffs(diffs)
    return f"{len(diffs)} file changes"


def _edited(events: list[Event], start: int) -> list[FileEdit]:
    """The file edits of the main agent's finished tool calls since ``start``, latest per call."""
    calls: dict[str, list[FileEdit]] = {}
    for event in events[start:]:
        item = event.item
        if item is None or item.agent_id or item.tool is None:
            continue
        if item.tool.status in (ToolStatus.COMPLETED, ToolStatus.FAILED):
            calls[item.id] = list(item.tool.file_edits)
    return [edit for edits in calls.values() for edit in edits]


async def _allowing(ctx: Context, conv: OpenConversation, start: int) -> TurnState:
    """Wait for the turn's end, allowing every permission it asks for on the way."""
    answered: set[str] = set()

    def next_step(events: list[Event]) -> TurnState | Interaction | None:
        for event in events[start:]:
            if event.turn is not None and event.turn.state in TERMINAL_TURN_STATES:
                return event.turn.state
            ia = event.interaction
            if (
                ia is not None
                and ia.kind == InteractionKind.PERMISSION
                and ia.state == InteractionState.PENDING
                and ia.id not in answered
            ):
                return ia
        return None

    while True:
        ctx.step = "waiting for the editing turn to end"
        found: TurnState | Interaction = await conv.sink.wait_for(next_step)
        if isinstance(found, TurnState):
            return found
        answered.add(found.id)
        ctx.step = "waiting for respond to the editing turn's permission to return"
        try:
            await conv.conversation.respond(found.id, _answer_for(found))
        except AgentAPIError as exc:
            raise CheckFailed(f"respond to the edit's permission raised {error_name(exc)}") from exc


def _same_file(path: str, other: str, workdir: str) -> bool:
    def absolute(p: str) -> str:
        return os.path.normpath(p if os.path.isabs(p) else os.path.join(workdir, p))

    return absolute(path) == absolute(other)


async def cap_file_edits(ctx: Context) -> str | None:
    """A turn that edits a file reports it on its tool item, and the diff then lists it.

    Needs the target's ``edit`` prompt. Each FileEdit names a path and a kind, with counts
    not below zero; with Capabilities.session_diff, diff lists every edited file.
    """
    text = ctx.prompt("edit", "session_diff")
    conv = await ctx.open()
    start = len(conv.sink)
    await conv.send(text)
    state = await _allowing(ctx, conv, start)
    if state != TurnState.COMPLETED:
        raise CheckFailed(f"the editing turn ended {state.value}, expected completed")
    edits = _edited(conv.sink.events, start)
    if not edits:
        raise CheckFailed("the editing turn reported no file edit on a finished tool item")
    bad = [e.path or "(no path)" for e in edits if not e.path or not e.kind]
    if bad:
        raise _violations("file edits without a path or kind", bad)
    negative = [e.path for e in edits if e.additions < 0 or e.deletions < 0]
    if negative:
        raise _violations("file edit counts below zero", negative)
    if not ctx.capabilities().session_diff:
        return f"{len(edits)} file edits; no diff (SessionDiff is false)"
    ctx.step = "waiting for diff to return"
    try:
        diffs = await conv.conversation.diff()
    except AgentAPIError as exc:
        raise CheckFailed(f"diff after an edit raised {error_name(exc)}") from exc
    _judge_diffs(diffs)
    workdir = ctx.target.open_request.workdir
    missing = [
        e.path
        for e in edits
        if not any(_same_file(e.path, d.path, workdir) for d in diffs)
        and not any(_same_file(e.path, d.old_path, workdir) for d in diffs if d.old_path)
    ]
    if missing:
        raise _violations("edited files the diff does not list", missing)
    return f"{len(edits)} file edits, all in the diff of {len(diffs)} files"


async def cap_rewind(ctx: Context) -> str | None:
    """Capabilities.rewind: rewinding to a turn's user item drops it from the history.

    Without the capability the check does not apply; with it the conversation must be a
    HistoryRewinder whose preview counts the turn and whose rewind (conversation only, so no
    file is touched) leaves a history without that user item.
    """
    if not ctx.capabilities().rewind:
        raise NotApplicable("Capabilities.rewind is false")
    text = ctx.prompt("answer", None)
    conv = await ctx.open()
    if not isinstance(conv.conversation, HistoryRewinder):
        raise CheckFailed("Capabilities.rewind is true, but the conversation is no HistoryRewinder")
    start = len(conv.sink)
    await conv.send(text)
    await conv.wait_end(start)
    users = [
        e.item.id
        for e in conv.sink.events[start:]
        if e.item is not None and e.item.kind == ItemKind.USER and not e.item.agent_id
    ]
    if not users:
        raise CheckFailed("the turn reported no user item to rewind to")
    ctx.step = "waiting for preview_rewind to return"
    try:
        preview = await conv.conversation.preview_rewind(users[0])
        if preview.turns < 1:
            raise CheckFailed(f"preview_rewind counts {preview.turns} turns to discard")
        ctx.step = "waiting for rewind to return"
        await conv.conversation.rewind(preview.user_event_id, REWIND_CONVERSATION)
        ctx.step = "waiting for history to return"
        history = await conv.conversation.history()
    except AgentAPIError as exc:
        raise CheckFailed(f"{ctx.step.split()[2]} raised {error_name(exc)}") from exc
    if any(item.id == users[0] for item in history.items):
        raise CheckFailed("the history still holds the user item the rewind discarded")
    return f"rewound {preview.turns} turn(s)"


async def cap_set_model(ctx: Context) -> str | None:
    """A provider that lists models applies a listed one; one that lists none refuses."""
    ctx.step = "waiting for models to return"
    try:
        models = await ctx.started.models()
    except Unsupported:
        models = []
    conv = await ctx.open()
    ctx.step = "waiting for set_model to return"
    if not models:
        await expect_error(
            lambda: conv.conversation.set_model(_UNKNOWN_MODEL, "", ""),
            (Unsupported,),
            "set_model on a provider that lists no models",
        )
        return "unsupported, as advertised"
    model = models[0]
    selections = [(model.id, "", "")]
    if model.efforts:
        selections.append((model.id, model.efforts[0], ""))
    if model.context_sizes:
        selections.append((model.id, "", model.context_sizes[0].id))
    for selection in selections:
        try:
            await conv.conversation.set_model(*selection)
        except AgentAPIError as exc:
            raise CheckFailed(
                f"set_model{selection} with a listed model raised {error_name(exc)}"
            ) from exc
    return f"{len(selections)} selections of {model.id!r}"


async def cap_steer(ctx: Context) -> str | None:
    """Steer during a running turn is accepted or Unsupported; an accepted one is accounted for.

    An accepted steer cannot be withdrawn: it shows up as a user item delivered as a steer,
    as a notice that the turn ended without it, or as a user item of a turn of its own.
    """
    long = ctx.prompt("long", "cancel")
    conv = await ctx.open()
    start = len(conv.sink)
    await conv.send(long)
    working = await conv.wait_working(start, "the long turn to start working")
    ctx.step = "waiting for steer to return"
    steered = len(conv.sink)
    try:
        await conv.conversation.steer(Prompt(text=_STEER))
    except Unsupported:
        await _cancel_long(ctx, conv, working)
        return "unsupported"
    except AgentAPIError as exc:
        raise CheckFailed(f"steer during a running turn raised {error_name(exc)}") from exc
    await _cancel_long(ctx, conv, working)
    ctx.step = "waiting for the accepted steer to be used or reported unused"

    def accounted(events: list[Event]) -> str | None:
        for event in events[steered:]:
            item = event.item
            if item is None or item.agent_id:
                continue
            if item.kind == ItemKind.USER and item.delivery == DELIVERY_STEER:
                return "accepted and used"
            if item.kind == ItemKind.NOTICE:
                return "accepted, reported unused"
            if item.kind == ItemKind.USER and item.text == _STEER:
                return "accepted, run as its own turn"
        return None

    return await conv.sink.wait_for(accounted)


async def cap_commands(ctx: Context) -> str | None:
    """commands lists named commands, or raises Unsupported and so does run_command."""
    conv = await ctx.open()
    ctx.step = "waiting for commands to return"
    try:
        commands = await conv.conversation.commands()
    except Unsupported:
        ctx.step = "waiting for run_command to return"
        await expect_error(
            lambda: conv.conversation.run_command("ahp-conformance", Prompt(text="")),
            (Unsupported,),
            "run_command on a provider whose commands are unsupported",
        )
        return "unsupported"
    except AgentAPIError as exc:
        raise CheckFailed(f"commands raised {error_name(exc)}") from exc
    names = [c.name for c in commands]
    if any(not n for n in names):
        raise CheckFailed("commands lists a command without a name")
    if len(set(names)) != len(names):
        raise CheckFailed("commands lists a name twice")
    kinds = [c.name for c in commands if c.kind not in (COMMAND_SKILL, COMMAND_PROMPT)]
    if kinds:
        raise _violations("commands of a kind other than skill or command", kinds)
    # A name the provider does not list is refused, and no turn starts.
    ctx.step = "waiting for run_command of an unknown command to return"
    before = len(conv.sink)
    await expect_error(
        lambda: conv.conversation.run_command(_UNKNOWN_COMMAND, Prompt(text="")),
        (AgentAPIError,),
        "run_command of a command the provider does not list",
    )
    await _settle()
    started = [e for e in conv.sink.events[before:] if e.kind == EventKind.TURN]
    if started:
        raise CheckFailed("run_command of an unknown command started a turn")
    name = ctx.target.prompts.command
    if name is None:
        return f"{len(commands)} commands"
    if name not in names:
        raise CheckFailed(f"the target's command {name!r} is not among the listed commands")
    ctx.step = "waiting for run_command to return"
    start = len(conv.sink)
    try:
        await conv.conversation.run_command(name, Prompt(text=_COMMAND_ARGS))
    except AgentAPIError as exc:
        raise CheckFailed(f"run_command({name!r}) raised {error_name(exc)}") from exc
    await conv.wait_working(start, "the command's turn to start working")
    await conv.wait_end(start, "the command's turn to end")
    users = [
        e.item.text
        for e in conv.sink.events[start:]
        if e.item is not None and e.item.kind == ItemKind.USER and not e.item.agent_id
    ]
    if users and not users[0].startswith(f"/{name}"):
        raise CheckFailed(f"the command's user item shows {users[0]!r}, not /{name} ...")
    return f"{len(commands)} commands; /{name} ran a turn"


async def cap_subagents(ctx: Context) -> str | None:
    """cancel_subagent and prompt_subagent of an unknown agent raise a contract error.

    Go names no sentinel for an unknown agent, so any AgentAPIError (Unsupported when the
    provider has no subagents) will do; returning normally claims an agent that is not.
    """
    conv = await ctx.open()
    ctx.step = "waiting for cancel_subagent to return"
    cancel = await expect_error(
        lambda: conv.conversation.cancel_subagent(_UNKNOWN_AGENT),
        (AgentAPIError,),
        "cancel_subagent of an unknown agent",
    )
    ctx.step = "waiting for prompt_subagent to return"
    prompt = await expect_error(
        lambda: conv.conversation.prompt_subagent(_UNKNOWN_AGENT, _STEER),
        (AgentAPIError,),
        "prompt_subagent of an unknown agent",
    )
    return f"cancel: {type(cancel).__name__}, prompt: {type(prompt).__name__}"


class _HostTools:
    """A call_tool that records each call and answers ``result``, or with None waits until
    its call is cancelled (and notes that it was)."""

    def __init__(self, result: HostToolResult | None) -> None:
        self.result = result
        self.calls: list[HostToolCall] = []
        self.cancelled = trio.Event()

    async def __call__(self, call: HostToolCall) -> HostToolResult:
        self.calls.append(call)
        if self.result is not None:
            return self.result
        try:
            await trio.sleep_forever()
        finally:
            self.cancelled.set()
        raise AssertionError("unreachable")  # pragma: no cover

    async def wait_call(self, ctx: Context, what: str) -> HostToolCall:
        ctx.step = f"waiting for {what}"
        while not self.calls:
            await trio.sleep(0.01)
        return self.calls[0]


_HOST_TOOL_TEXT = "ahp-conformance host tool result"


def _judge_call(call: HostToolCall, task_id: str, what: str) -> None:
    if call.name != HOST_TOOL.name:
        raise CheckFailed(f"{what} named tool {call.name!r}, not {HOST_TOOL.name!r}")
    if call.task_id != task_id:
        raise CheckFailed(f"{what} carried task id {call.task_id!r}, expected {task_id!r}")
    if len(call.arguments) > MAX_HOST_TOOL_ARGUMENTS:
        raise CheckFailed(f"{what} reached call_tool with {len(call.arguments)} bytes of arguments")
    try:
        arguments = json.loads(call.arguments or b"null")
    except ValueError:
        arguments = None
    if not isinstance(arguments, dict):
        raise CheckFailed(f"{what} arguments are not a JSON object")


async def cap_host_tools(ctx: Context) -> str | None:
    """Capabilities.host_tools: a call of an OpenRequest host tool reaches call_tool (its
    item's id, the Task's id, a JSON object) and the item ends with the result; a call still
    waiting when the turn is cancelled (or the conversation closed) is cancelled."""
    if not ctx.capabilities().host_tools:
        raise NotApplicable("Capabilities.host_tools is false")
    prompt = ctx.prompt("host_tool", "host_tools")
    answering = _HostTools(HostToolResult(text=_HOST_TOOL_TEXT))
    conv = await ctx.open(tools=[HOST_TOOL], call_tool=answering)
    index, state = await conv.run_turn(prompt, "the host tool turn")
    if state != TurnState.COMPLETED:
        raise CheckFailed(f"the host tool turn ended {state.value}, not completed")
    if not answering.calls:
        raise CheckFailed("the host tool turn ended without calling call_tool")
    call = answering.calls[0]
    _judge_call(call, ctx.target.open_request.session_id, "the host tool call")
    if not call.call_id:
        raise CheckFailed("the host tool call has no call id")
    items = [
        e.item
        for e in conv.sink.events[:index]
        if e.item is not None
        and e.item.kind == ItemKind.TOOL
        and e.item.id == call.call_id
        and e.item.agent_id == call.agent_id
    ]
    if not items:
        raise CheckFailed(f"no tool item has the call's id {call.call_id!r}")
    last = items[-1].tool
    if last is None or last.status != ToolStatus.COMPLETED:
        shown = last.status.value if last is not None else "no tool call"
        raise CheckFailed(f"the host tool's item ended {shown}, not completed with the result")
    await conv.close()
    waiting = _HostTools(None)
    conv = await ctx.open(tools=[HOST_TOOL], call_tool=waiting)
    start = len(conv.sink)
    await conv.send(prompt)
    await waiting.wait_call(ctx, "the second host tool call")
    how = "cancel" if ctx.capabilities().cancel else "close"
    ctx.step = f"waiting for {how} to return"
    try:
        await (conv.conversation.cancel() if how == "cancel" else conv.close())
    except AgentAPIError as exc:
        raise CheckFailed(f"{how} during a host tool call raised {error_name(exc)}") from exc
    ctx.step = f"waiting for call_tool to be cancelled after {how}"
    await waiting.cancelled.wait()
    if how == "cancel":
        await conv.wait_end(start, "the cancelled host tool turn to end")
    return f"{len(answering.calls)} call(s); a waiting call ends on {how}"


async def host_tools_utility(ctx: Context) -> str | None:
    """Capabilities.host_tools also means UtilityRunner: a utility call's model calls the host
    tools (calls without a task id) and its reply is returned."""
    if not ctx.capabilities().host_tools:
        raise NotApplicable("Capabilities.host_tools is false")
    provider = ctx.started
    if not isinstance(provider, UtilityRunner):
        raise CheckFailed("Capabilities.host_tools is true but the provider is no UtilityRunner")
    prompt = ctx.prompt("host_tool", "host_tools")
    answering = _HostTools(HostToolResult(text=_HOST_TOOL_TEXT))
    request = UtilityRequest(
        model=ctx.target.open_request.model,
        workdir=ctx.target.open_request.workdir,
        purpose="conformance",
        system="You answer in one short sentence and use the tools you are given.",
        prompt=prompt,
        tools=[HOST_TOOL],
        call_tool=answering,
    )
    ctx.step = "waiting for run_utility to return"
    try:
        reply = await provider.run_utility(request)
    except AgentAPIError as exc:
        raise CheckFailed(f"run_utility raised {error_name(exc)}") from exc
    if not isinstance(reply, str):
        raise CheckFailed(f"run_utility returned {type(reply).__name__}, not the reply text")
    if not answering.calls:
        raise CheckFailed("the utility call never called its host tool")
    for call in answering.calls:
        _judge_call(call, "", "a utility call's host tool call")
    return f"{len(answering.calls)} call(s), a reply of {len(reply)} characters"


CHECKS: tuple[Check, ...] = (
    Check("provider_basics", "identity, check and models", provider_basics),
    Check("transcript", "items upsert by (agent_id, id); deltas match their item", transcript),
    Check("turn_lifecycle", "working, then exactly one terminal state", turn_lifecycle),
    Check("events_after_close", "no event after close returns", events_after_close),
    Check("emit_nonblocking", "emit is called directly, never awaited", emit_nonblocking),
    Check("conversation_isolation", "events reach only their own sink", conversation_isolation),
    Check("busy_or_queued", "a send during a turn: Busy or queued", busy_or_queued),
    Check("cancel", "cancel ends the turn cancelled", cancel_ends_cancelled),
    Check("turn_after_cancel", "cancel, then send at once: a turn of its own", turn_after_cancel),
    Check("respond_gone", "respond to a final interaction: InteractionGone", respond_when_gone),
    Check("close_expires", "close expires pending interactions", close_expires_interactions),
    Check("reopen_unknown", "unknown conversation id: ConversationNotFound", reopen_unknown),
    Check("closed_conversation", "send after close: Closed", closed_conversation),
    Check("exit_closes", "after an exit event the conversation is closed", exit_closes),
    Check("cap_history", "history of a reopened conversation", cap_history),
    Check("history_reader", "read_history of a closed or unknown conversation", history_reader),
    Check("cap_set_title", "set_title or Unsupported", cap_set_title),
    Check("cap_diff", "diff or Unsupported", cap_diff),
    Check("cap_file_edits", "a tool's file edits, and the diff lists them", cap_file_edits),
    Check("cap_rewind", "rewind drops the turn from the history", cap_rewind),
    Check("cap_set_model", "set_model with a listed model", cap_set_model),
    Check("cap_steer", "steer during a turn or Unsupported", cap_steer),
    Check("cap_commands", "commands/run_command or Unsupported", cap_commands),
    Check("cap_subagents", "unknown subagents are refused", cap_subagents),
    Check("cap_host_tools", "host tool calls reach call_tool and end with it", cap_host_tools),
    Check("host_tools_utility", "host tools also mean a UtilityRunner", host_tools_utility),
)
"""Every check, in the order the runner runs them."""

CHECKS_BY_NAME = {check.name: check for check in CHECKS}
