"""Exact Go JSON for agentapi values: keys, omitempty/omitzero, internal fields, encodings."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta, timezone

import pytest
from pydantic import ValidationError

from ahp_bridge.agentapi import (
    Account,
    Answer,
    AssistedReview,
    Blob,
    Capabilities,
    DeviceCode,
    Event,
    EventKind,
    File,
    HostToolCall,
    HostToolResult,
    Interaction,
    InteractionKind,
    InteractionState,
    Item,
    ItemKind,
    MCPServer,
    MCPServerConfig,
    Model,
    ModelSelection,
    OpenRequest,
    Prices,
    Prompt,
    TierPrices,
    TokenUsage,
    ToolCall,
    ToolHooks,
    ToolStatus,
    Turn,
    TurnState,
    UtilityRequest,
    WindowRequest,
    format_time,
    from_json,
    to_json,
)

ZERO = "0001-01-01T00:00:00Z"


def test_item_minimal_writes_only_untagged_omitempty_free_fields() -> None:
    item = Item(id="i1", kind=ItemKind.ASSISTANT)
    assert to_json(item) == {"id": "i1", "kind": "assistant", "time": ZERO}


def test_times_are_rfc3339_as_go_writes_them() -> None:
    plus2 = timezone(timedelta(hours=2))
    item = Item(
        id="i",
        kind=ItemKind.TOOL,
        time=datetime(2026, 3, 4, 5, 6, 7, 120000, tzinfo=plus2),
        ended_at=datetime(2026, 3, 4, 5, 6, 8, tzinfo=UTC),
        tool=ToolCall(name="bash", status=ToolStatus.COMPLETED, exit_code=0),
    )
    data = to_json(item)
    assert data["time"] == "2026-03-04T05:06:07.12+02:00"
    assert data["ended_at"] == "2026-03-04T05:06:08Z"
    # *int exit code 0 is kept: omitempty omits only a nil pointer.
    assert data["tool"] == {"name": "bash", "status": "completed", "exit_code": 0}
    back = from_json(Item, data)
    assert back.time == item.time and back.time is not None
    assert back.time.utcoffset() == timedelta(hours=2)


def test_time_formatting_edges() -> None:
    minus = timezone(-timedelta(hours=5, minutes=30))
    assert format_time(datetime(2026, 1, 2, 3, 4, 5, tzinfo=minus)) == "2026-01-02T03:04:05-05:30"
    assert format_time(datetime(5, 1, 2, 3, 4, 5, 60, tzinfo=UTC)) == "0005-01-02T03:04:05.00006Z"
    assert format_time(None) == ZERO


def test_time_parsing_zero_nanoseconds_and_errors() -> None:
    base = {"id": "i", "kind": "user"}
    assert from_json(Item, {**base, "time": ZERO}).time is None
    assert from_json(Item, {**base, "time": "0001-01-01T00:00:00+00:00"}).time is None
    nano = from_json(Item, {**base, "time": "2026-01-02T03:04:05.123456789Z"})
    assert nano.time == datetime(2026, 1, 2, 3, 4, 5, 123456, tzinfo=UTC)
    with pytest.raises(ValidationError, match="RFC 3339"):
        from_json(Item, {**base, "time": "yesterday"})
    with pytest.raises(ValidationError, match="timezone-aware"):
        Item(id="i", kind=ItemKind.USER, time=datetime(2026, 1, 1))


def test_pointer_bool_false_is_kept_value_bool_false_is_omitted() -> None:
    assert to_json(Account()) == {"signed_in": False}
    assert to_json(Account(stored=False, login="")) == {"signed_in": False, "stored": False}


def test_omitzero_struct_is_dropped_only_when_all_zero() -> None:
    base = Interaction(
        id="p1",
        kind=InteractionKind.PERMISSION,
        title="Run ls",
        state=InteractionState.PENDING,
    )
    assert to_json(base) == {
        "id": "p1",
        "kind": "permission",
        "title": "Run ls",
        "state": "pending",
        "time": ZERO,
    }
    reviewed = base.model_copy(update={"assisted": AssistedReview(recommendation="approve")})
    assert to_json(reviewed)["assisted"] == {"recommendation": "approve"}
    assert from_json(Interaction, to_json(reviewed)) == reviewed


def test_capabilities_zero_value_and_internal_field() -> None:
    caps = Capabilities(session_diff_needs_tracking=True, import_=True)
    assert to_json(caps) == {
        "cancel": False,
        "permissions": False,
        "questions": False,
        "session_diff": False,
        "history": False,
        "context_size": False,
        "usage": False,
        "titles": False,
        "import": True,
    }
    back = from_json(Capabilities, {**to_json(caps), "session_diff_needs_tracking": True})
    assert back.import_ is True
    assert back.session_diff_needs_tracking is False


def test_prompt_uses_go_field_names_and_base64_bytes() -> None:
    prompt = Prompt(
        text="look",
        files=[File(path="/p/a.py", rel="a.py")],
        attachments=[Blob(name="x.png", mime="image/png", data=b"\x89PNG\x00")],
    )
    data = to_json(prompt)
    assert data == {
        "Text": "look",
        "Files": [{"Path": "/p/a.py", "Rel": "a.py", "Dir": False}],
        "Attachments": [{"Name": "x.png", "MIME": "image/png", "Data": "iVBORwA=", "Path": ""}],
    }
    assert from_json(Prompt, json.dumps(data)) == prompt
    with pytest.raises(ValidationError, match="base64"):
        from_json(Blob, {"Data": "not base64!"})
    # Go writes nil slices as null.
    assert from_json(Prompt, {"Text": "t", "Files": None, "Attachments": None}).files == []


def test_open_request_never_serialises_functions_sink_or_hooks() -> None:
    class Sink:
        def emit(self, event: Event) -> None:
            pass

    async def call_tool(call: HostToolCall) -> HostToolResult:
        return HostToolResult(text="ok")

    async def validate(path: str) -> str:
        return path

    req = OpenRequest(
        session_id="s",
        workdir="/w",
        events=Sink(),
        call_tool=call_tool,
        validate_file=validate,
        hooks=ToolHooks(prompt=None),
        compaction_threshold=0.8,
    )
    data = to_json(req)
    assert data == {
        "SessionID": "s",
        "ConversationID": "",
        "Workdir": "/w",
        "Title": "",
        "Model": "",
        "Effort": "",
        "ContextSize": "",
        "Agent": "",
        "Tools": [],
        "SkillDirectories": [],
        "CompactionThreshold": 0.8,
        "AssistedApprovalModel": "",
    }
    back = from_json(OpenRequest, data)
    assert back.events is None and back.call_tool is None and back.session_id == "s"
    with pytest.raises(ValidationError, match="EventSink"):
        OpenRequest(events=object())


def test_device_code_uses_its_json_tags() -> None:
    code = DeviceCode(url="https://github.com/login/device", code="AB-CD")
    assert to_json(code) == {
        "verification_uri": "https://github.com/login/device",
        "user_code": "AB-CD",
    }
    assert from_json(DeviceCode, to_json(code)) == code


def test_embedded_structs_are_flattened() -> None:
    prices = Prices(batch_size=1000, input=1.5, long_context=TierPrices(input=3.0))
    assert to_json(prices) == {"input": 1.5, "batch_size": 1000, "long_context": {"input": 3.0}}
    req = WindowRequest(conversation_id="c", agent_id="a", item_id="i", before=2)
    assert to_json(req) == {
        "ConversationID": "c",
        "Workdir": "",
        "AgentID": "a",
        "ItemID": "i",
        "Before": 2,
        "After": 0,
    }
    server = MCPServer(name="s", type="stdio", command="run", enabled=True, source="user")
    assert to_json(server) == {
        "name": "s",
        "type": "stdio",
        "command": "run",
        "enabled": True,
        "source": "user",
    }


def test_secrets_in_internal_fields_never_leave_and_are_never_read() -> None:
    cfg = MCPServerConfig(
        name="s", type="http", url="https://x", headers={"Authorization": "tok-9"}
    )
    assert "headers" not in to_json(cfg) and "tok-9" not in json.dumps(to_json(cfg))
    read = from_json(MCPServerConfig, {"name": "s", "type": "http", "env": {"A": "secret"}})
    assert read.env == {}


def test_internal_fields_are_ignored_at_any_depth_of_go_json() -> None:
    data = {
        "id": "t1",
        "kind": "tool",
        "images": [{"id": "", "mime": "image/png", "size": 0, "data": "AAAA", "sha256": "ab"}],
        "attachments": [{"name": "a.pdf", "mime": "application/pdf", "sha256": "cd"}],
        "clipped": True,
    }
    item = from_json(Item, data)
    assert item.images[0].data == b"" and item.images[0].sha256 == ""
    assert item.attachments[0].sha256 == "" and item.clipped is False


def test_answer_auto_is_internal_a_client_cannot_set_it() -> None:
    assert to_json(Answer(decision="allow", auto=True)) == {"decision": "allow"}
    assert from_json(Answer, {"decision": "allow", "auto": True}).auto is False
    assert from_json(Answer, {"decision": "allow", "Auto": True}).auto is False
    # The host itself can still build one in-process.
    assert Answer(decision="allow", auto=True).auto is True


def test_raw_json_is_embedded_as_its_value() -> None:
    call = HostToolCall(name="t", call_id="c1", arguments=b'{"path": "a"}')
    data = to_json(call)
    assert data["Arguments"] == {"path": "a"}
    back = from_json(HostToolCall, json.dumps(data))
    assert json.loads(back.arguments) == {"path": "a"}
    assert to_json(HostToolResult(text="x"))["Payload"] is None
    assert from_json(HostToolResult, {"Text": "x", "Payload": None}).payload == b""
    with pytest.raises(ValidationError, match="not valid JSON"):
        HostToolCall(name="t", arguments=b"{broken")


def test_duration_is_integer_nanoseconds() -> None:
    req = UtilityRequest(model="m", timeout=timedelta(seconds=1, milliseconds=500))
    assert to_json(req)["Timeout"] == 1_500_000_000
    assert from_json(UtilityRequest, {"Timeout": 2_000_000_000}).timeout == timedelta(seconds=2)
    with pytest.raises(ValidationError, match="nanoseconds"):
        from_json(UtilityRequest, {"Timeout": "2s"})


def test_untagged_struct_keys() -> None:
    usage = TokenUsage(model="m", input=10, cache_read=3, duration_ms=5, nano_aiu=9)
    assert to_json(usage) == {
        "Model": "m",
        "Time": ZERO,
        "Input": 10,
        "Output": 0,
        "CacheRead": 3,
        "CacheWrite": 0,
        "DurationMS": 5,
        "NanoAIU": 9,
        "Cost": 0.0,
    }
    sel = ModelSelection(model="m", effort="")
    assert to_json(sel) == {"Model": "m", "Effort": "", "ContextSize": None}


def test_null_slices_from_go_read_as_empty() -> None:
    model = from_json(Model, {"id": "m", "name": "M", "efforts": None, "context_sizes": None})
    assert model.efforts == [] and model.context_sizes == []
    assert to_json(model) == {"id": "m", "name": "M", "efforts": [], "context_sizes": []}


def test_unknown_keys_and_bad_values_are_clear_errors() -> None:
    with pytest.raises(ValidationError, match="bogus"):
        from_json(Item, {"id": "i", "kind": "user", "bogus": 1})
    with pytest.raises(ValidationError, match="kind"):
        from_json(Item, {"id": "i", "kind": "robot"})


def test_go_event_json_with_null_payloads_reads_back() -> None:
    delta = {"item_id": "a1", "kind": "assistant", "text": "Hel"}
    event = Event(
        kind=EventKind.DELTA, delta=from_json(Event, {"Kind": "delta", "Delta": delta}).delta
    )
    data = to_json(event)
    assert data["Kind"] == "delta" and data["Delta"] == delta
    assert data["Item"] is None and data["Title"] == "" and data["Compacting"] is False
    assert from_json(Event, json.dumps(data)) == event


def test_event_needs_exactly_its_own_payload() -> None:
    turn = Turn(state=TurnState.COMPLETED)
    assert Event(kind=EventKind.TURN, turn=turn).turn == turn
    with pytest.raises(ValidationError, match="needs its turn payload"):
        Event(kind=EventKind.TURN)
    with pytest.raises(ValidationError, match="cannot carry title"):
        Event(kind=EventKind.TURN, turn=turn, title="x")
    with pytest.raises(ValidationError, match="cannot carry turn"):
        Event(kind=EventKind.TITLE, title="x", turn=turn)
    # Scalar payloads may be empty: a compaction that ended, an exit without a reason.
    assert Event(kind=EventKind.COMPACTION).compacting is False
    assert Event(kind=EventKind.EXIT, detached=True).detached is True
    assert Event(kind=EventKind.PLAN_PATH, plan_path="/p", plan_version=3).plan_version == 3
