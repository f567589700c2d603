"""What a check drives: the provider under test and its open conversations.

``CheckFailed`` and ``NotApplicable`` end a check with a reason; ``Context.step`` names
what the check is waiting for, so a check the runner's time bound ends reports where
the provider hung.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

import trio

from ahp_bridge.agentapi import (
    AgentAPIError,
    CallTool,
    Capabilities,
    Conversation,
    Event,
    EventKind,
    HostTool,
    Interaction,
    InteractionKind,
    InteractionState,
    Prompt,
    Provider,
    TurnState,
)
from ahp_bridge.conformance.sink import RecordingSink
from ahp_bridge.conformance.stream import TERMINAL_TURN_STATES
from ahp_bridge.conformance.target import Target

_CLOSE_GRACE = 5.0


class CheckFailed(Exception):
    """The provider broke the contract; the message says how."""


class NotApplicable(Exception):  # an outcome, not an error
    """The check does not apply: the provider's Capabilities say it cannot do this."""


def error_name(exc: BaseException) -> str:
    """A short name for an exception in a failure reason, with its message."""
    if isinstance(exc, AgentAPIError):
        return f"{type(exc).__name__} ({exc.reason}: {exc.message})"
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


@dataclass
class OpenConversation:
    """One conversation the check opened, with the sink it was opened with."""

    conversation: Conversation
    sink: RecordingSink
    context: Context
    closed: bool = False

    async def send(self, text: str) -> None:
        """Send ``text``; any error fails the check."""
        self.context.step = "waiting for send to return"
        try:
            await self.conversation.send(Prompt(text=text))
        except AgentAPIError as exc:
            raise CheckFailed(f"send raised {error_name(exc)}") from exc

    async def wait_turn_state(self, start: int, states: frozenset[TurnState], what: str) -> int:
        """Index of the first turn event at or after ``start`` whose state is in ``states``."""
        self.context.step = f"waiting for {what}"

        def found(events: list[Event]) -> int | None:
            for i in range(start, len(events)):
                turn = events[i].turn
                if events[i].kind == EventKind.TURN and turn is not None and turn.state in states:
                    return i
            return None

        return await self.sink.wait_for(found)

    async def wait_working(self, start: int, what: str = "the turn to start working") -> int:
        """Index of the next working turn event at or after ``start``."""
        return await self.wait_turn_state(start, frozenset({TurnState.WORKING}), what)

    async def wait_end(self, start: int, what: str = "the turn to end") -> tuple[int, TurnState]:
        """Index and state of the next terminal turn event at or after ``start``."""
        index = await self.wait_turn_state(start, TERMINAL_TURN_STATES, what)
        turn = self.sink.events[index].turn
        assert turn is not None
        return index, turn.state

    async def run_turn(self, text: str, what: str) -> tuple[int, TurnState]:
        """Send ``text`` and wait for its turn to start and end; (end index, end state)."""
        start = len(self.sink)
        await self.send(text)
        working = await self.wait_working(start, f"{what} to start working")
        return await self.wait_end(working + 1, f"{what} to end")

    async def answer_turn(self, text: str) -> int:
        """Run the plain answer turn; it must complete. Returns the end index."""
        index, state = await self.run_turn(text, "the answer turn")
        if state != TurnState.COMPLETED:
            turn = self.sink.events[index].turn
            detail = f" ({turn.error})" if turn is not None and turn.error else ""
            raise CheckFailed(f"the answer turn ended {state.value}{detail}, not completed")
        return index

    async def wait_interaction(
        self, start: int, kind: InteractionKind, state: InteractionState, what: str
    ) -> Interaction:
        """The first interaction event of ``kind`` in ``state`` at or after ``start``."""
        self.context.step = f"waiting for {what}"

        def found(events: list[Event]) -> Interaction | None:
            for event in events[start:]:
                ia = event.interaction
                if ia is not None and ia.kind == kind and ia.state == state:
                    return ia
            return None

        return await self.sink.wait_for(found)

    async def wait_interaction_state(
        self, interaction_id: str, states: frozenset[InteractionState], what: str
    ) -> InteractionState:
        """The first reported state in ``states`` of interaction ``interaction_id``."""
        self.context.step = f"waiting for {what}"

        def found(events: list[Event]) -> InteractionState | None:
            for event in events:
                ia = event.interaction
                if ia is not None and ia.id == interaction_id and ia.state in states:
                    return ia.state
            return None

        return await self.sink.wait_for(found)

    def interaction_states(self, interaction_id: str) -> list[InteractionState]:
        """Every state interaction ``interaction_id`` was reported in, in order."""
        return [
            e.interaction.state
            for e in self.sink.events
            if e.interaction is not None and e.interaction.id == interaction_id
        ]

    async def close(self) -> None:
        """Close the conversation; from its return on, every event is late."""
        self.context.step = "waiting for close to return"
        try:
            await self.conversation.close()
        finally:
            self.closed = True
            self.sink.close()


@dataclass
class Context:
    """One check's view of the target and the provider it started for the check."""

    target: Target
    provider: Provider | None = None
    step: str = "starting the provider"
    conversations: list[OpenConversation] = field(default_factory=list)
    # Run after the provider shut down, for checks that judge what happened meanwhile.
    after_shutdown: list[Callable[[], None]] = field(default_factory=list)

    @property
    def started(self) -> Provider:
        """The provider under test (only inside a check)."""
        assert self.provider is not None, "the provider is not started"
        return self.provider

    def capabilities(self) -> Capabilities:
        """The provider's advertised Capabilities."""
        return self.started.capabilities()

    def prompt(self, scenario: str, capability: str | None) -> str:
        """The target's prompt for ``scenario``.

        Missing is "not applicable" only when ``capability`` (a Capabilities attribute)
        is false; without a capability the prompt is always required.
        """
        text: str | None = getattr(self.target.prompts, scenario)
        if text is not None:
            return text
        if capability is not None and not getattr(self.capabilities(), capability):
            raise NotApplicable(f"no {scenario} prompt and Capabilities.{capability} is false")
        if capability is None:
            raise CheckFailed(f"the target gives no {scenario} prompt")
        raise CheckFailed(
            f"Capabilities.{capability} is true but the target gives no {scenario} prompt"
        )

    async def open(
        self,
        conversation_id: str = "",
        *,
        tools: list[HostTool] | None = None,
        call_tool: CallTool | None = None,
    ) -> OpenConversation:
        """Open (or with ``conversation_id``, reopen) a conversation with a fresh sink, with
        ``tools`` as its host tools when given."""
        sink = RecordingSink()
        update: dict[str, object] = {"events": sink, "conversation_id": conversation_id}
        if tools is not None:
            update.update(tools=list(tools), call_tool=call_tool)
        request = self.target.open_request.model_copy(update=update)
        self.step = "waiting for open to return"
        conversation = await self.started.open(request)
        opened = OpenConversation(conversation, sink, self)
        self.conversations.append(opened)
        if not isinstance(conversation, Conversation):
            raise CheckFailed(
                f"open returned {type(conversation).__name__}, which lacks methods of the "
                "Conversation protocol"
            )
        return opened

    async def close_all(self) -> None:
        """Close every conversation the check left open (errors are ignored here).

        The step a check was on is kept, so a timeout still names what it waited for.
        """
        step = self.step
        with trio.move_on_after(_CLOSE_GRACE, shield=True):
            for opened in self.conversations:
                if not opened.closed:
                    try:
                        await opened.close()
                    except Exception:  # cleanup only; checks judge close
                        opened.closed = True
        self.step = step


async def expect_error(
    call: Callable[[], Awaitable[object]], allowed: tuple[type[AgentAPIError], ...], what: str
) -> AgentAPIError:
    """Await ``call()`` and return the error it raised, which must be one of ``allowed``."""
    names = " or ".join(cls.__name__ for cls in allowed)
    try:
        await call()
    except allowed as exc:
        return exc
    except AgentAPIError as exc:
        raise CheckFailed(f"{what} raised {error_name(exc)}, expected {names}") from exc
    raise CheckFailed(f"{what} returned normally, expected {names}")
