"""agentapi behaviour: subagent runs, statuses, errors, protocols and package hygiene."""

from __future__ import annotations

import ast
import pickle
from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import TracebackType
from typing import Self

import pytest

import ahp_bridge.agentapi as api
from ahp_bridge.agentapi import (
    MAX_SUBAGENT_RUNS,
    SUBAGENT_TRIGGER_AGENT,
    SUBAGENT_TRIGGER_SPAWN,
    SUBAGENT_TRIGGER_USER,
    AgentAPIError,
    Answer,
    Busy,
    Capabilities,
    Command,
    Conversation,
    CustomModel,
    Elicitation,
    Event,
    EventSink,
    FileDiff,
    History,
    HistoryPager,
    HistoryReader,
    HistoryWindow,
    Model,
    OpenRequest,
    PlanAction,
    Prompt,
    Provider,
    ReadRequest,
    Subagent,
    SubagentRun,
    SubagentStatus,
    SubmissionUncertain,
    Unsupported,
    WindowRequest,
    cap_subagent_runs,
    error_for_reason,
)

T0 = datetime(2026, 5, 1, 12, 0, tzinfo=UTC)


def at(minutes: int) -> datetime:
    return T0 + timedelta(minutes=minutes)


# --- subagents -----------------------------------------------------------------------------


def test_terminal_statuses() -> None:
    assert {s for s in SubagentStatus if s.terminal} == {
        SubagentStatus.COMPLETED,
        SubagentStatus.FAILED,
        SubagentStatus.CANCELLED,
    }


def test_first_run_and_reuse() -> None:
    sa = Subagent(id="a1", name="explore", status=SubagentStatus.RUNNING, started_at=at(0))
    sa.start_run(at(0), SUBAGENT_TRIGGER_SPAWN)
    assert sa.runs == [
        SubagentRun(started_at=at(0), status=SubagentStatus.RUNNING, trigger="spawn")
    ]
    # The first run ends: the record says so, the caller sets its own fields.
    sa.status, sa.ended_at = SubagentStatus.IDLE, at(1)
    sa.start_run(at(2), SUBAGENT_TRIGGER_USER)
    assert sa.runs == [
        SubagentRun(started_at=at(0), ended_at=at(1), status=SubagentStatus.IDLE, trigger="spawn"),
        SubagentRun(started_at=at(2), status=SubagentStatus.RUNNING, trigger="user"),
    ]


def test_record_without_runs_gets_its_spawn_run_back() -> None:
    sa = Subagent(
        id="a1",
        name="explore",
        status=SubagentStatus.COMPLETED,
        started_at=at(0),
        ended_at=at(5),
    )
    sa.start_run(at(6), SUBAGENT_TRIGGER_AGENT)
    assert sa.runs == [
        SubagentRun(
            started_at=at(0), ended_at=at(5), status=SubagentStatus.COMPLETED, trigger="spawn"
        ),
        SubagentRun(started_at=at(6), status=SubagentStatus.RUNNING, trigger="agent"),
    ]


def test_snapshot_owns_its_runs_and_carries_status() -> None:
    sa = Subagent(id="a", name="n", status=SubagentStatus.RUNNING)
    sa.start_run(at(0), SUBAGENT_TRIGGER_SPAWN)
    sa.status, sa.ended_at = SubagentStatus.FAILED, at(3)
    snap = sa.snapshot()
    assert snap.runs[-1].status == SubagentStatus.FAILED and snap.runs[-1].ended_at == at(3)
    assert sa.runs[-1].status == SubagentStatus.RUNNING  # the original is untouched
    snap.runs.append(SubagentRun(status=SubagentStatus.RUNNING, trigger="user"))
    assert len(sa.runs) == 1
    assert Subagent(id="b", name="n", status=SubagentStatus.IDLE).snapshot().runs == []


def test_runs_are_capped_keeping_first_and_newest() -> None:
    runs = [
        SubagentRun(started_at=at(i), status=SubagentStatus.COMPLETED, trigger="agent")
        for i in range(MAX_SUBAGENT_RUNS + 7)
    ]
    capped = cap_subagent_runs(runs)
    assert len(capped) == MAX_SUBAGENT_RUNS
    assert capped[0] is runs[0]
    assert capped[1:] == runs[-(MAX_SUBAGENT_RUNS - 1) :]
    assert cap_subagent_runs(runs[:3]) == runs[:3]

    sa = Subagent(id="a", name="n", status=SubagentStatus.IDLE, runs=runs[:MAX_SUBAGENT_RUNS])
    sa.start_run(at(999), SUBAGENT_TRIGGER_USER)
    assert len(sa.runs) == MAX_SUBAGENT_RUNS
    assert sa.runs[0] == runs[0] and sa.runs[-1].started_at == at(999)
    assert sa.runs[-2].status == SubagentStatus.IDLE  # ended as the record says


# --- small methods -------------------------------------------------------------------------


def test_custom_model_selection_id_and_secret_key() -> None:
    m = CustomModel(name="local", model_id="qwen3", api_key="sk-123")
    assert m.selection_id == "local/qwen3"
    assert "sk-123" not in str(m.to_json())


def test_plan_action_valid() -> None:
    assert PlanAction.valid("autopilot") and PlanAction.valid(PlanAction.EXIT_ONLY)
    assert not PlanAction.valid("yolo")


def test_elicitation_clone_is_independent() -> None:
    e = Elicitation(mode="url", url="https://x")
    c = e.clone()
    c.url = "https://y"
    assert e.url == "https://x"


# --- errors --------------------------------------------------------------------------------


def test_error_reasons_map_back_to_their_classes() -> None:
    for reason, cls in api.ERRORS_BY_REASON.items():
        err = error_for_reason(reason, "detail")
        assert type(err) is cls and err.reason == reason and str(err) == "detail"
        assert isinstance(err, AgentAPIError)
    assert len(api.ERRORS_BY_REASON) == 18  # Go's 17 sentinels and ahp-bridge's HostToolClash


def test_unknown_reason_keeps_the_reason() -> None:
    err = error_for_reason("quota_exceeded", "no credits left")
    assert type(err) is AgentAPIError
    assert err.reason == "quota_exceeded" and err.message == "no credits left"
    assert error_for_reason("", "").reason == "agentapi_error"


def test_default_messages_and_pickling() -> None:
    assert str(Busy()) == "a turn is already running"
    err = SubmissionUncertain("send timed out")
    again = pickle.loads(pickle.dumps(err))
    assert type(again) is SubmissionUncertain and again.message == "send timed out"
    with pytest.raises(Unsupported):
        raise error_for_reason("unsupported")


# --- protocols -----------------------------------------------------------------------------


class _Conversation:
    def id(self) -> str:
        return "c1"

    async def history(self) -> History:
        return History()

    async def send(self, prompt: Prompt) -> None: ...

    async def commands(self) -> list[Command]:
        return []

    async def run_command(self, name: str, args: Prompt) -> None: ...

    async def steer(self, prompt: Prompt) -> None: ...

    async def cancel(self) -> None: ...

    async def cancel_subagent(self, agent_id: str) -> None: ...

    async def prompt_subagent(self, agent_id: str, text: str) -> None: ...

    async def respond(self, interaction_id: str, answer: Answer) -> None: ...

    async def diff(self) -> list[FileDiff]:
        return []

    async def set_model(self, model: str, effort: str, context_size: str) -> None: ...

    async def set_title(self, title: str) -> None: ...

    async def close(self) -> None: ...


class _Provider:
    def __init__(self) -> None:
        self.entered = False

    def name(self) -> str:
        return "toy"

    def display_name(self) -> str:
        return "Toy"

    def capabilities(self) -> Capabilities:
        return Capabilities(history=True)

    async def check(self) -> None: ...

    async def models(self) -> list[Model]:
        return []

    async def open(self, req: OpenRequest) -> Conversation:
        return _Conversation()

    async def shutdown(self) -> None: ...

    async def read_history(self, req: ReadRequest) -> History:
        return History()

    async def __aenter__(self) -> Self:
        self.entered = True
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.entered = False


class _NoContextManager:
    name = _Provider.name
    display_name = _Provider.display_name
    capabilities = _Provider.capabilities
    check = _Provider.check
    models = _Provider.models
    open = _Provider.open
    shutdown = _Provider.shutdown


class _MissingClose:
    id = _Conversation.id
    send = _Conversation.send


def test_protocol_isinstance_checks() -> None:
    provider = _Provider()
    assert isinstance(provider, Provider)
    assert isinstance(provider, HistoryReader)
    assert not isinstance(provider, HistoryPager)
    assert not isinstance(_NoContextManager(), Provider)
    assert isinstance(_Conversation(), Conversation)
    assert not isinstance(_MissingClose(), Conversation)

    class Sink:
        def emit(self, event: Event) -> None: ...

    assert isinstance(Sink(), EventSink)
    assert not isinstance(object(), EventSink)


async def test_provider_protocol_is_used_as_an_async_context_manager() -> None:
    provider: Provider = _Provider()
    async with provider as entered:
        conv = await entered.open(OpenRequest(session_id="s"))
        assert conv.id() == "c1"
        assert isinstance(conv, Conversation)
    assert not isinstance(conv, HistoryPager)


class _Pager:
    async def read_history_window(self, req: WindowRequest) -> HistoryWindow:
        return HistoryWindow(at=req.before)


async def test_optional_capability_protocol() -> None:
    pager = _Pager()
    assert isinstance(pager, HistoryPager) and not isinstance(pager, HistoryReader)
    window = await pager.read_history_window(WindowRequest(conversation_id="c", before=3))
    assert window.at == 3


# --- package hygiene -----------------------------------------------------------------------


def test_all_is_complete_and_importable() -> None:
    assert len(api.__all__) == len(set(api.__all__))
    for name in api.__all__:
        assert hasattr(api, name), name


def test_agentapi_imports_nothing_else_from_ahp_bridge() -> None:
    package = Path(api.__file__).parent
    for path in package.glob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                top = node.module
            elif isinstance(node, ast.Import):
                top = node.names[0].name
            else:
                continue
            assert not top.startswith("ahp_bridge") or top.startswith("ahp_bridge.agentapi"), (
                f"{path.name} imports {top}"
            )
            assert not top.startswith(("trio", "socket", "threading")), f"{path.name}: {top}"
