"""The ACP provider against every conformance check with a real coding agent: Claude Agent.

``claude-agent-acp`` (npm, pinned by scripts/install-acp-agents.sh) runs offline against the
scripted Anthropic server on 127.0.0.1. The server turns the suite's prompts into a plain
answer, a turn held open until it is cancelled, a Bash tool call, which Claude Code asks
permission for and then runs itself, and a Write of a new file, which it also asks for.
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
from tests.support.acp_agents import claude_options, requires_claude
from tests.support.anthropic_server import AnthropicServer
from tests.support.model_server import Hold, Text, ToolCall

pytestmark = requires_claude

#: The checks that may be not applicable to Claude Agent, and why; any other must pass. A check
#: that quietly stops applying (a capability dropped, a scenario no longer reached) fails.
NOT_APPLICABLE = {
    "exit_closes": "no prompt makes claude-agent-acp exit (an optional scenario)",
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


@pytest.fixture(scope="module")
def anthropic() -> Iterator[AnthropicServer]:
    never = threading.Event()  # the long turn's model call waits until Claude Code aborts it
    with AnthropicServer() as srv:
        srv.script("conformance answer", [Text("Hello from the scripted model.")])
        srv.script("conformance long", [Text("Working on it"), Hold(never, timeout=60.0)])
        srv.script(
            "conformance permission",
            [
                ToolCall(
                    "Bash", {"command": "echo conformance > conformance.txt", "description": "Echo"}
                )
            ],
            [Text("done")],
        )
        yield srv


@pytest.fixture
def claude(anthropic: AnthropicServer, tmp_path: Path) -> Target:
    options = claude_options(anthropic.base_url, tmp_path / "home")
    workdir = tmp_path / "work"
    workdir.mkdir()
    # Re-scripted per check: Claude Code writes the absolute path, in this check's workdir.
    anthropic.script(
        "conformance edit",
        [
            ToolCall(
                "Write",
                {"file_path": str(workdir / "edited.txt"), "content": "written by the suite\n"},
            )
        ],
        [Text("written")],
    )

    def factory() -> AbstractAsyncContextManager[Provider]:
        provider: Provider = create_provider(options)
        return provider

    request = OpenRequest(workdir=str(workdir), title="AHP conformance")
    return Target("acp(claude-agent)", factory, request, PROMPTS, timeout=60.0)


def expected_outcome(check: Check) -> Outcome:
    return Outcome.NOT_APPLICABLE if check.name in NOT_APPLICABLE else Outcome.PASS


def test_the_not_applicable_checks_exist() -> None:
    assert set(NOT_APPLICABLE) <= {c.name for c in CHECKS}


@pytest.mark.parametrize("check", CHECKS, ids=[c.name for c in CHECKS])
async def test_claude_agent_over_acp_keeps_the_contract(claude: Target, check: Check) -> None:
    result = await run_check(claude, check)
    assert result.outcome is expected_outcome(check), result.line()
