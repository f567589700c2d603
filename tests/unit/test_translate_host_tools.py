"""Client tools, the pure half: which tools a conversation registers, what the model sees of a
client's result, and the translator's client tool calls (through the real reducers, strictly
valid in 1.0 and 0.7, via the translation harness)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from ahp_bridge.agentapi import ToolStatus, TurnState
from ahp_bridge.state.reducers.session import awaits_user
from ahp_bridge.translate.host_tools import (
    execution_input_id,
    failed_result,
    host_result,
    plan_tools,
)

from .test_translate_support import CHAT, SESSION, Harness, ev_tool, ev_turn, strict_type, types

USAGES = {
    "name": "usages",
    "title": "List Code Usages",
    "description": "Find usages",
    "inputSchema": {"type": "object", "properties": {"symbol": {"type": "string"}}},
}
OWNERS = {"usages": ("editor", "List Code Usages")}


def client(client_id: str, *tools: dict[str, Any]) -> dict[str, Any]:
    return {"clientId": client_id, "tools": list(tools)}


# ------------------------------------------------------------------ plan_tools


def test_offered_tools_become_host_tools_in_order_with_their_schema() -> None:
    rename = {"name": "rename"}  # no title, description or schema
    plan = plan_tools([client("editor", USAGES, rename)], supported=True, provider="fake")
    assert [(o.client_id, o.tool.name, o.display) for o in plan.tools] == [
        ("editor", "usages", "List Code Usages"),
        ("editor", "rename", "rename"),
    ]
    assert plan.tools[0].tool.parameters == USAGES["inputSchema"]
    assert plan.tools[0].tool.description == "Find usages"
    assert plan.tools[1].tool.parameters == {"type": "object", "properties": {}}
    assert plan.refused == ()
    assert plan.meta() == {
        "registered": [
            {"name": "usages", "clientId": "editor"},
            {"name": "rename", "clientId": "editor"},
        ],
        "refused": [],
    }


def test_each_refusal_says_why() -> None:
    clients = [
        client("editor", USAGES, {"name": "bad name!"}, USAGES, {"name": "shell"}),
        client("other", USAGES, {"name": "extra"}),
    ]
    plan = plan_tools(
        clients,
        supported=True,
        provider="fake",
        clashes={"shell": "the provider has its own shell"},
        max_tools=1,
    )
    assert [o.tool.name for o in plan.tools] == ["usages"]
    assert [(r.client_id, r.name, r.reason) for r in plan.refused] == [
        ("editor", "bad name!", "a tool name must be 1 to 64 letters, digits, '_' or '-'"),
        ("editor", "usages", "this client already offers a tool of that name"),
        ("editor", "shell", "the provider has its own shell"),
        ("other", "usages", "client editor already offers a tool of that name"),
        ("other", "extra", "the session already registers 1 client tools (client_tools.max_tools)"),
    ]


def test_a_provider_without_host_tools_registers_none() -> None:
    plan = plan_tools([client("editor", USAGES)], supported=False, provider="remote")
    assert plan.tools == () and plan.key() == ()
    [refusal] = plan.refused
    assert refusal.reason == "the remote provider cannot register client tools (no host tools)"


def test_the_key_changes_only_with_what_the_provider_is_told() -> None:
    one = plan_tools([client("editor", USAGES)], supported=True, provider="fake")
    same = plan_tools([client("editor", dict(USAGES))], supported=True, provider="fake")
    described = plan_tools(
        [client("editor", {**USAGES, "description": "other"})], supported=True, provider="fake"
    )
    assert one.key() == same.key() != described.key()
    unsupported = plan_tools([client("editor", USAGES)], supported=False, provider="fake")
    assert unsupported.key() == plan_tools([], supported=True, provider="fake").key()


# ------------------------------------------------------------------ results


def test_the_model_sees_the_text_content_and_the_payload_keeps_the_whole_result() -> None:
    result = {
        "success": True,
        "pastTenseMessage": "Found usages",
        "content": [
            {"type": "text", "text": "a.py:1"},
            {"type": "resource", "uri": "file:///w/b.py"},
            {"type": "text", "text": "b.py:2"},
        ],
        "structuredContent": {"count": 2},
    }
    out = host_result(result, max_bytes=1000)
    assert out.text == "a.py:1\n[resource file:///w/b.py]\nb.py:2" and not out.failed
    assert json.loads(out.payload) == result


@pytest.mark.parametrize(
    ("result", "text", "failed"),
    [
        (
            {"success": True, "pastTenseMessage": "Done", "structuredContent": {"n": 1}},
            '{"n": 1}',
            False,
        ),
        ({"success": True, "pastTenseMessage": {"markdown": "**Done**"}}, "**Done**", False),
        (
            {"success": False, "pastTenseMessage": "x", "error": {"message": "no symbol"}},
            "no symbol\nx",
            True,
        ),
        ({"success": False, "pastTenseMessage": ""}, "The client tool failed.", True),
    ],
)
def test_text_falls_back_in_order(result: dict[str, Any], text: str, failed: bool) -> None:
    out = host_result(result, max_bytes=1000)
    assert (out.text, out.failed) == (text, failed)


def test_a_long_result_is_cut_on_a_character_boundary_and_says_so() -> None:
    result = {
        "success": True,
        "pastTenseMessage": "",
        "content": [{"type": "text", "text": "é" * 10}],
    }
    out = host_result(result, max_bytes=5)
    assert out.text == (
        "éé\n[The client's result was cut at 5 of its 20 bytes (client_tools.max_result_bytes).]"
    )


def test_a_failed_result_is_a_valid_tool_call_result() -> None:
    out, ahp = failed_result("The client left.", "List Code Usages")
    assert out.failed and out.text == "The client left."
    strict_type("ToolCallResult", ahp)


# ------------------------------------------------------------------ the translator


@pytest.fixture
def h() -> Harness:
    h = Harness()
    h.tr.set_client_tools(OWNERS)
    h.start_turn()
    h.feed(ev_turn(TurnState.WORKING))
    return h


def execution(h: Harness) -> dict[str, Any]:
    [request] = h.session["inputNeeded"]
    return dict(request)


def test_the_item_first_starts_a_client_tool_that_runs_only_once_the_host_waits(
    h: Harness,
) -> None:
    out = h.feed(ev_tool("c1", ToolStatus.RUNNING, name="usages", input='{"symbol":"x"}'))
    assert types(out) == ["chat/toolCallStart"]
    assert out[0][1]["contributor"] == {"kind": "client", "clientId": "editor"}
    assert out[0][1]["displayName"] == "List Code Usages"
    assert h.tool_state("c1")["status"] == "streaming"  # no client may run it yet

    out, problem = h.tr.client_call("c1", "usages", "", '{"symbol":"x"}')
    h.apply(out)
    assert problem == ""
    assert [(c, a["type"]) for c, a in out] == [
        (CHAT, "chat/toolCallReady"),
        (SESSION, "session/inputNeededSet"),
    ]
    request = execution(h)
    assert request["id"] == execution_input_id(CHAT, "c1")
    assert request["kind"] == "toolClientExecution" and request["clientId"] == "editor"
    assert request["toolCall"] == h.tool_state("c1")
    assert not awaits_user(request)  # 1.0: the client's work, not the user's
    strict_type("SessionToolClientExecutionRequest", request)
    assert h.tr.client_executions() == {"c1"}

    # The owning client completes it; the provider's own end of the call adds nothing.
    result = {
        "success": True,
        "pastTenseMessage": "Found",
        "content": [{"type": "text", "text": "a"}],
    }
    follow = h.client(
        {"type": "chat/toolCallComplete", "turnId": "turn-1", "toolCallId": "c1", "result": result}
    )
    assert types(follow) == ["session/inputNeededRemoved"]
    assert "inputNeeded" not in h.session
    assert h.feed(ev_tool("c1", ToolStatus.COMPLETED, name="usages", output="a")) == []
    assert h.tool_state("c1")["status"] == "completed"


def test_the_call_first_starts_the_tool_itself_and_the_late_item_changes_nothing(
    h: Harness,
) -> None:
    out, problem = h.tr.client_call("c1", "usages", "", "{}")
    h.apply(out)
    assert problem == ""
    assert types(out) == ["chat/toolCallStart", "chat/toolCallReady", "session/inputNeededSet"]
    assert h.feed(ev_tool("c1", ToolStatus.RUNNING, name="usages")) == []
    # A repeated call while it waits asks the client nothing more.
    assert h.tr.client_call("c1", "usages", "", "{}") == ([], "")


def test_a_subagents_call_runs_in_the_main_chat_under_its_agent(h: Harness) -> None:
    out, problem = h.tr.client_call("c9", "usages", "sub-1", "{}")
    h.apply(out)
    assert problem == ""
    state = h.tool_state("sub-1/c9")
    assert state["_meta"] == {"ahpBridge.agentId": "sub-1"} and state["status"] == "running"


def test_calls_that_cannot_reach_a_client_say_why(h: Harness) -> None:
    assert h.tr.client_call("c1", "rename", "", "{}") == (
        [],
        "no client tool named 'rename' is registered",
    )
    h.feed(ev_tool("c2", ToolStatus.COMPLETED, name="usages", output="done by the provider"))
    out, problem = h.tr.client_call("c2", "usages", "", "{}")
    assert out == [] and problem == "the tool call is already completed"
    h.feed(ev_turn(TurnState.COMPLETED))
    assert h.tr.client_call("c3", "usages", "", "{}") == ([], "no turn is running in the chat")


def test_the_host_fails_a_call_and_the_turn_end_clears_the_rest(h: Harness) -> None:
    for call_id in ("c1", "c2"):
        h.apply(h.tr.client_call(call_id, "usages", "", "{}")[0])
    assert len(h.session["inputNeeded"]) == 2
    _, result = failed_result("The client left.", "List Code Usages")
    out = h.tr.client_call_failed("c1", result)
    h.apply(out)
    assert types(out) == ["chat/toolCallComplete", "session/inputNeededRemoved"]
    state = h.tool_state("c1")
    assert state["success"] is False and state["error"] == {"message": "The client left."}
    out = h.feed(ev_turn(TurnState.CANCELLED))
    assert "session/inputNeededRemoved" in types(out)
    assert "inputNeeded" not in h.session
    assert h.tool_state("c2")["status"] == "cancelled"


def test_the_provider_ending_a_call_its_client_runs_removes_the_request(h: Harness) -> None:
    h.apply(h.tr.client_call("c1", "usages", "", "{}")[0])
    out = h.feed(ev_tool("c1", ToolStatus.FAILED, name="usages", output="cancelled"))
    assert types(out) == ["chat/toolCallComplete", "session/inputNeededRemoved"]
    assert "inputNeeded" not in h.session


def test_a_result_awaiting_confirmation_ends_on_the_confirmation(h: Harness) -> None:
    h.apply(h.tr.client_call("c1", "usages", "", "{}")[0])
    result = {"success": True, "pastTenseMessage": "Renamed"}
    complete = {"type": "chat/toolCallComplete", "turnId": "turn-1", "toolCallId": "c1"}
    h.client({**complete, "result": result, "requiresResultConfirmation": True})
    assert h.tool_state("c1")["status"] == "pending-result-confirmation"
    confirmed = {"type": "chat/toolCallResultConfirmed", "turnId": "turn-1", "toolCallId": "c1"}
    h.client({**confirmed, "approved": True})
    assert h.tool_state("c1")["status"] == "completed"
    assert h.feed(ev_tool("c1", ToolStatus.COMPLETED, name="usages")) == []


def test_host_meta_keeps_the_translators_other_keys(h: Harness) -> None:
    h.apply(h.tr.set_session_meta("ahpBridge.hostTools", {"registered": [], "refused": []}))
    assert h.tr.set_session_meta("ahpBridge.hostTools", {"registered": [], "refused": []}) == []
    out = h.tr.set_session_meta("ahpBridge.hostTools", None)
    h.apply(out)
    assert out == [(SESSION, {"type": "session/metaChanged", "_meta": {}})]
