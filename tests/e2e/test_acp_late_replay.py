"""An agent that answers session/load before it replays the session (as Gemini CLI 0.61 does):
the replay still becomes the reopened conversation's history, and none of it the next turn's.

The SDK test agent does it with ``ACP_TEST_LATE_REPLAY=1``; ACP wants the replay first.
"""

from __future__ import annotations

from pathlib import Path

import trio
from ahp_bridge_acp import create_provider

from ahp_bridge.agentapi import ItemKind, OpenRequest, ReadRequest
from ahp_bridge.conformance import RecordingSink
from tests.e2e.test_acp_provider import assistant_text, open_conv, turn
from tests.support.acp_agents import sdk_agent_options

HELLO = "Hello from the test agent."


async def test_a_replay_after_the_load_answer_is_the_history(tmp_path: Path) -> None:
    workdir = tmp_path / "work"
    workdir.mkdir()
    options = sdk_agent_options(tmp_path / "store")
    async with create_provider(options) as first:
        conv, sink = await open_conv(first, workdir)
        for _ in range(3):
            await turn(conv, sink, "answer")
        conversation_id = conv.id()
    late = {**options, "env": {**options["env"], "ACP_TEST_LATE_REPLAY": "1"}}  # type: ignore[dict-item]
    recorded = [(ItemKind.USER, "answer"), (ItemKind.ASSISTANT, HELLO)] * 3
    async with create_provider(late) as second:
        history = await second.read_history(
            ReadRequest(conversation_id=conversation_id, workdir=str(workdir))
        )
        assert [(i.kind, i.text) for i in history.items] == recorded
    async with create_provider(late) as third:
        sink = RecordingSink()
        with trio.fail_after(15):
            again = await third.open(
                OpenRequest(workdir=str(workdir), conversation_id=conversation_id, events=sink)
            )
        assert [(i.kind, i.text) for i in (await again.history()).items] == recorded
        assert assistant_text(await turn(again, sink, "answer")) == HELLO
