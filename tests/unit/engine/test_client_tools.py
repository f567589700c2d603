"""Client tools: a provider's host tool call becomes a call its client runs, and each way it ends
resolves the provider's wait (`ResolveHostTool`)."""

from __future__ import annotations

from typing import Any

from ahp_bridge import agentapi
from ahp_bridge.engine.effects import ResolveHostTool, SetTimer
from ahp_bridge.engine.inputs import HostToolCalled, HostToolCancelled
from ahp_bridge.engine.jobs import OpenConversation
from ahp_bridge.engine.peers import Peer
from tests.support.engine import Harness, fake_provider, turn_event

SESSION = "ahp-session:/s1"
TOOL = {
    "name": "usages",
    "description": "find usages",
    "inputSchema": {"type": "object", "properties": {"q": {"type": "string"}}},
}


def call(call_id: str = "call-1", agent_id: str = "") -> agentapi.HostToolCall:
    return agentapi.HostToolCall(
        name="usages", call_id=call_id, agent_id=agent_id, arguments=b'{"q":"x"}'
    )


def complete(tool_call_id: str, text: str) -> dict[str, Any]:
    return {
        "type": "chat/toolCallComplete",
        "turnId": "t1",
        "toolCallId": tool_call_id,
        "result": {
            "success": True,
            "pastTenseMessage": "found",
            "content": [{"type": "text", "text": text}],
        },
    }


def running(h: Harness) -> tuple[Peer, Peer, str]:
    """A session whose active client `vs` offers `usages`, a turn running; and another peer."""
    h.providers[0].capabilities.host_tools = True
    vs = h.connect("vs")
    chat = h.create_session(vs, activeClient={"clientId": "vs", "tools": [TOOL]})
    [open_job] = [j for j in h.jobs if isinstance(j, OpenConversation)]
    assert [t.name for t in open_job.request.tools] == ["usages"]
    for channel in (chat, SESSION):
        h.subscribe(vs, channel)
    other = h.connect("other", subscriptions=[chat])
    h.start_turn(vs, chat)
    h.provider(chat, turn_event(agentapi.TurnState.WORKING))
    h.frames(vs), h.frames(other)
    return vs, other, chat


def test_a_host_tool_call_becomes_a_call_its_client_runs() -> None:
    h = Harness(providers=[fake_provider()])
    vs, _, chat = running(h)
    effects = h.feed(HostToolCalled(chat, 7, call()))
    assert effects[0] == SetTimer(("client-tool", chat, "call-1"), 300.0)
    start, ready, needed = h.actions(vs)
    assert start == {
        "type": "chat/toolCallStart",
        "turnId": "t1",
        "toolCallId": "call-1",
        "toolName": "usages",
        "displayName": "usages",
        "contributor": {"kind": "client", "clientId": "vs"},
    }
    assert (ready["type"], ready["toolInput"]) == ("chat/toolCallReady", '{"q":"x"}')
    assert needed["type"] == "session/inputNeededSet"
    assert {k: needed["request"][k] for k in ("kind", "chat", "turnId", "clientId")} == {
        "kind": "toolClientExecution",
        "chat": chat,
        "turnId": "t1",
        "clientId": "vs",
    }
    assert h.resolved == []  # the provider waits


def test_the_owners_result_resolves_the_call_and_no_one_elses_does() -> None:
    h = Harness(providers=[fake_provider()])
    vs, other, chat = running(h)
    h.feed(HostToolCalled(chat, 7, call()))
    h.frames(vs), h.frames(other)
    h.dispatch(other, chat, complete("call-1", "forged"))
    [echo] = h.envelopes(other)
    assert echo["rejectionReason"] == "tool call call-1 belongs to another client"
    assert h.resolved == []
    h.dispatch(vs, chat, complete("call-1", "3 usages"), 2)
    assert [a["type"] for a in h.actions(vs)] == [
        "chat/toolCallComplete",
        "session/inputNeededRemoved",
    ]
    [resolved] = h.resolved
    assert resolved.waiter == 7
    assert (resolved.result.text, resolved.result.failed) == ("3 usages", False)
    # Answered: the provider's repeat of the same call gets the same result at once.
    assert h.feed(HostToolCalled(chat, 8, call())) == [ResolveHostTool(8, resolved.result)]


def test_a_call_its_client_does_not_answer_in_time_fails() -> None:
    h = Harness(providers=[fake_provider()])
    vs, _, chat = running(h)
    h.feed(HostToolCalled(chat, 7, call()))
    h.frames(vs)
    h.fire(("client-tool", chat, "call-1"))
    [resolved] = h.resolved
    message = (
        "The client vs did not complete the usages tool call within 300 seconds "
        "(client_tools.timeout); the call failed."
    )
    assert (resolved.waiter, resolved.result.text, resolved.result.failed) == (7, message, True)
    complete_action = next(a for a in h.actions(vs, chat) if a["type"] == "chat/toolCallComplete")
    assert complete_action["result"]["error"] == {"message": message}
    # A late answer from the client finds nothing waiting.
    h.dispatch(vs, chat, complete("call-1", "late"), 2)
    assert len(h.resolved) == 1


def test_a_call_the_provider_stops_waiting_for_fails_on_the_hosts_side() -> None:
    h = Harness(providers=[fake_provider()])
    _, _, chat = running(h)
    h.feed(HostToolCalled(chat, 7, call()))
    h.feed(HostToolCancelled(chat, 7))
    [resolved] = h.resolved
    assert (resolved.waiter, resolved.result.text) == (7, "The usages tool call was cancelled.")


def test_two_subagents_may_use_the_same_call_id_at_once() -> None:
    h = Harness(providers=[fake_provider()])
    vs, _, chat = running(h)
    h.feed(HostToolCalled(chat, 1, call("c", agent_id="a1")))
    h.feed(HostToolCalled(chat, 2, call("c", agent_id="a2")))
    assert set(h.timers) == {("client-tool", chat, "a1/c"), ("client-tool", chat, "a2/c")}
    h.dispatch(vs, chat, complete("a2/c", "second's"), 2)
    assert [(r.waiter, r.result.text) for r in h.resolved] == [(2, "second's")]
    h.fire(("client-tool", chat, "a1/c"))
    assert [r.waiter for r in h.resolved] == [2, 1]
    assert h.resolved[1].result.failed


def test_a_call_for_a_tool_no_client_offers_fails_at_once() -> None:
    h = Harness(providers=[fake_provider()])
    _, _, chat = running(h)
    unknown = agentapi.HostToolCall(name="rename", call_id="c9", arguments=b"{}")
    effects = h.feed(HostToolCalled(chat, 3, unknown))
    [resolved] = [e for e in effects if isinstance(e, ResolveHostTool)]
    assert resolved.waiter == 3 and resolved.result.failed
    assert resolved.result.text == (
        "No client tool named 'rename' is registered in this conversation."
    )
    assert h.timers == {}


def test_a_call_for_a_chat_that_is_gone_fails_at_once() -> None:
    h = Harness(providers=[fake_provider()])
    effects = h.feed(HostToolCalled("ahp-chat:/gone", 4, call()))
    assert effects == [
        ResolveHostTool(
            4,
            agentapi.HostToolResult(
                text="The usages tool call cannot reach its client: the chat is gone.",
                failed=True,
            ),
        )
    ]
