"""The ACP provider against every conformance check with a real coding agent: Codex.

``codex-acp`` (npm, pinned by scripts/install-acp-agents.sh) runs offline against the scripted
OpenAI Responses API server on 127.0.0.1. The server turns the suite's prompts into a plain
answer (after a reasoning summary), a turn held open until it is cancelled, a shell command
(``exec_command``) that Codex asks permission for and then runs itself, and an ``apply_patch``
that creates a file, which Codex also asks permission for.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import AbstractAsyncContextManager
from pathlib import Path

import pytest
from ahp_bridge_acp import create_provider

from ahp_bridge.agentapi import OpenRequest, Provider
from ahp_bridge.conformance import CHECKS, Check, Outcome, Prompts, Target, run_check
from tests.support.acp_agents import codex_options, requires_codex
from tests.support.model_server import Hold, Reasoning, Text, ToolCall
from tests.support.openai_responses_server import CustomToolCall, ResponsesServer

pytestmark = requires_codex

#: The checks that may be not applicable to Codex, and why; any other must pass. A check that
#: quietly stops applying (a capability dropped, a scenario no longer reached) fails the test.
NOT_APPLICABLE = {
    "exit_closes": "no prompt makes codex-acp exit (an optional scenario)",
    "cap_rewind": "ACP has no rewind (Capabilities.rewind is false)",
    "cap_host_tools": "the ACP adapter offers no host tools (Capabilities.host_tools is false)",
    "host_tools_utility": "the ACP adapter offers no host tools (Capabilities.host_tools is false)",
}

PROMPTS = Prompts(
    answer="conformance answer",
    long="conformance long",
    permission="conformance permission",
    edit="conformance edit",
)
EDITED = "conformance-edit.txt"
PATCH = f"*** Begin Patch\n*** Add File: {EDITED}\n+written by the suite\n*** End Patch\n"


@pytest.fixture(scope="module")
def responses() -> Iterator[ResponsesServer]:
    never = threading.Event()  # the long turn's model call waits until Codex aborts it
    with ResponsesServer() as srv:
        srv.script(
            "conformance answer",
            [Reasoning("Thinking about a greeting."), Text("Hello from the scripted model.")],
        )
        srv.script("conformance long", [Text("Working on it"), Hold(never, timeout=60.0)])
        srv.script(
            "conformance permission",
            [ToolCall("exec_command", {"cmd": "echo conformance > conformance.txt"})],
            [Text("done")],
        )
        # A relative path: Codex resolves it in each check's working directory.
        srv.script("conformance edit", [CustomToolCall("apply_patch", PATCH)], [Text("written")])
        yield srv


@pytest.fixture
def codex(responses: ResponsesServer, tmp_path: Path) -> Target:
    options = codex_options(responses.base_url, tmp_path / "home")
    workdir = tmp_path / "work"
    workdir.mkdir()

    def factory() -> AbstractAsyncContextManager[Provider]:
        provider: Provider = create_provider(options)
        return provider

    request = OpenRequest(workdir=str(workdir), title="AHP conformance")
    return Target("acp(codex)", factory, request, PROMPTS, timeout=60.0)


def expected_outcome(check: Check) -> Outcome:
    return Outcome.NOT_APPLICABLE if check.name in NOT_APPLICABLE else Outcome.PASS


def test_the_not_applicable_checks_exist() -> None:
    assert set(NOT_APPLICABLE) <= {c.name for c in CHECKS}


@pytest.mark.parametrize("check", CHECKS, ids=[c.name for c in CHECKS])
async def test_codex_over_acp_keeps_the_contract(codex: Target, check: Check) -> None:
    result = await run_check(codex, check)
    assert result.outcome is expected_outcome(check), result.line()
