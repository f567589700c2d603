"""The Copilot adapter against every conformance check: the real CLI, offline.

One Copilot CLI (server mode) and one scripted OpenAI-compatible model server serve the
module; each check starts its own provider connected to that CLI. The model server turns
the suite's scenario prompts into a plain answer, a turn held open until it is cancelled,
a shell command that needs permission, and an ``ask_user`` question.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import AbstractAsyncContextManager
from pathlib import Path

import pytest
from ahp_bridge_copilot import create_provider

from ahp_bridge.agentapi import OpenRequest, Provider
from ahp_bridge.conformance import CHECKS, Check, Outcome, Prompts, Target, run_check
from tests.conformance.test_remote import served
from tests.support.copilot_cli import CliServer, cli_server, requires_cli
from tests.support.model_server import Hold, ModelServer, Reasoning, Text, ToolCall

pytestmark = requires_cli

#: The checks that may be not applicable to Copilot, and why; any other must pass. A check that
#: quietly stops applying (a capability dropped, a scenario no longer reached) fails the test.
NOT_APPLICABLE = {
    "exit_closes": "no prompt makes the CLI exit (an optional scenario)",
    "history_reader": "the adapter does not implement the optional HistoryReader",
    "cap_rewind": "the adapter does not offer native rewind (Capabilities.rewind is false)",
}

PROMPTS = Prompts(
    answer="conformance answer",
    long="conformance long",
    permission="conformance permission",
    question="conformance question",
    host_tool="conformance host tool",
    edit="conformance edit",
)
EDITED = "conformance-edit.txt"


@pytest.fixture(scope="module")
def models() -> Iterator[ModelServer]:
    never = threading.Event()  # the long turn's model call waits until the client goes away
    with ModelServer() as srv:
        # Reasoning first, so the transcript check sees reasoning deltas next to answer deltas.
        srv.script(
            "conformance answer",
            [Reasoning("Thinking about a greeting."), Text("Hello from the scripted model.")],
        )
        srv.script("conformance long", [Text("Working on it"), Hold(never, timeout=120.0)])
        srv.script(
            "conformance permission",
            [ToolCall("bash", {"command": "echo conformance", "description": "Echo"})],
            [Text("done")],
        )
        srv.script(  # a relative path: the CLI writes it in each check's working directory
            "conformance edit",
            [ToolCall("create", {"path": EDITED, "file_text": "written by the suite\n"})],
            [Text("written")],
        )
        srv.script(
            "conformance host tool",
            [ToolCall("ahp_conformance_echo", {"text": "conformance"})],
            [Text("echoed")],
        )
        srv.script(
            "conformance question",
            [ToolCall("ask_user", {"question": "Which colour?", "choices": ["red", "blue"]})],
            [Text("noted")],
        )
        yield srv


@pytest.fixture(scope="module")
def cli(tmp_path_factory: pytest.TempPathFactory) -> Iterator[CliServer]:
    with cli_server(tmp_path_factory.mktemp("copilot-cli")) as srv:
        yield srv


@pytest.fixture
def copilot(cli: CliServer, models: ModelServer, tmp_path: Path) -> Target:
    options = cli.options(models.base_url)

    def factory() -> AbstractAsyncContextManager[Provider]:
        provider: Provider = create_provider(options)
        return provider

    request = OpenRequest(workdir=str(tmp_path), title="AHP conformance")
    return Target("copilot", factory, request, PROMPTS, timeout=60.0)


def expected_outcome(check: Check) -> Outcome:
    return Outcome.NOT_APPLICABLE if check.name in NOT_APPLICABLE else Outcome.PASS


def test_the_not_applicable_checks_exist() -> None:
    assert set(NOT_APPLICABLE) <= {c.name for c in CHECKS}


@pytest.mark.parametrize("check", CHECKS, ids=[c.name for c in CHECKS])
async def test_copilot_keeps_the_contract(copilot: Target, check: Check) -> None:
    result = await run_check(copilot, check)
    assert result.outcome is expected_outcome(check), result.line()


@pytest.mark.parametrize("check", CHECKS, ids=[c.name for c in CHECKS])
async def test_copilot_served_over_grpc_keeps_the_contract(copilot: Target, check: Check) -> None:
    """The same checks with the Copilot provider behind the gRPC hop (serve-provider + remote)."""
    result = await run_check(served(copilot), check)
    assert result.outcome is expected_outcome(check), result.line()
