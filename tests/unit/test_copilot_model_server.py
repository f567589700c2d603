"""The scripted model server speaks OpenAI-compatible SSE and picks replies deterministically."""

from __future__ import annotations

import json
import threading
import urllib.error
import urllib.request
from typing import Any

import pytest

from tests.support.model_server import (
    FailMidStream,
    Hold,
    HttpError,
    ModelServer,
    Reasoning,
    Text,
    ToolCall,
    Usage,
)


def _post(server: ModelServer, messages: list[dict[str, Any]]) -> list[Any]:
    body = json.dumps({"model": "m", "stream": True, "messages": messages}).encode()
    req = urllib.request.Request(
        server.base_url + "/chat/completions",
        data=body,
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(req, timeout=10) as resp:
        raw = resp.read().decode()
    out: list[Any] = []
    for line in raw.splitlines():
        if line.startswith("data: "):
            data = line[len("data: ") :]
            out.append(data if data == "[DONE]" else json.loads(data))
    return out


def _deltas(chunks: list[Any], key: str) -> str:
    return "".join(
        c["choices"][0]["delta"].get(key) or ""
        for c in chunks
        if isinstance(c, dict) and c["choices"]
    )


@pytest.fixture
def server() -> Any:
    with ModelServer(models=("a", "b")) as srv:
        yield srv


def test_models_endpoint_lists_configured_models(server: ModelServer) -> None:
    with urllib.request.urlopen(server.base_url + "/models", timeout=10) as resp:
        data = json.loads(resp.read())
    assert [m["id"] for m in data["data"]] == ["a", "b"]


def test_text_reasoning_and_usage_stream(server: ModelServer) -> None:
    server.script("hello", [Reasoning("hmm", chunks=2), Text("Hi there", chunks=3), Usage(5, 2)])
    chunks = _post(server, [{"role": "user", "content": "say hello"}])
    assert chunks[-1] == "[DONE]"
    assert _deltas(chunks, "content") == "Hi there"
    assert _deltas(chunks, "reasoning_content") == "hmm"
    finishes = [c["choices"][0]["finish_reason"] for c in chunks[:-1] if c["choices"]]
    assert finishes[-1] == "stop"
    assert chunks[-2]["usage"] == {"prompt_tokens": 5, "completion_tokens": 2, "total_tokens": 7}
    assert server.chat_requests("hello")[0].last_user_text == "say hello"


def test_reply_is_chosen_by_assistant_messages_after_the_user_message(
    server: ModelServer,
) -> None:
    server.script("run", [ToolCall("bash", {"command": "ls"}, call_id="c1")], [Text("done")])
    first = _post(server, [{"role": "user", "content": [{"type": "text", "text": "run it"}]}])
    calls = [
        c["choices"][0]["delta"]["tool_calls"]
        for c in first[:-1]
        if c["choices"] and "tool_calls" in c["choices"][0]["delta"]
    ]
    assert calls[0][0]["id"] == "c1"
    assert json.loads(calls[0][0]["function"]["arguments"]) == {"command": "ls"}
    assert [c["choices"][0]["finish_reason"] for c in first[:-1] if c["choices"]][-1] == (
        "tool_calls"
    )
    second = _post(
        server,
        [
            {"role": "user", "content": "run it"},
            {"role": "assistant", "content": None, "tool_calls": []},
            {"role": "tool", "tool_call_id": "c1", "content": "ok"},
        ],
    )
    assert _deltas(second, "content") == "done"
    assert [r.reply_index for r in server.chat_requests("run")] == [0, 1]


def test_unmatched_request_gets_default_reply_and_is_recorded(server: ModelServer) -> None:
    server.script("special", [Text("special reply")])
    chunks = _post(server, [{"role": "user", "content": "something else"}])
    assert _deltas(chunks, "content") == "ok"
    assert server.chat_requests()[-1].rule is None


def test_rescripting_a_trigger_replaces_it(server: ModelServer) -> None:
    server.script("x", [Text("one")])
    server.script("x", [Text("two")])
    assert _deltas(_post(server, [{"role": "user", "content": "x"}]), "content") == "two"


def test_http_error_status_and_body(server: ModelServer) -> None:
    server.script("boom", [HttpError(429, "slow down")])
    with pytest.raises(urllib.error.HTTPError) as info:
        _post(server, [{"role": "user", "content": "boom"}])
    assert info.value.code == 429
    assert json.loads(info.value.read())["error"]["message"] == "slow down"


def test_fail_mid_stream_drops_connection_without_done(server: ModelServer) -> None:
    server.script("cut", [Text("partial"), FailMidStream()])
    try:
        chunks = _post(server, [{"role": "user", "content": "cut"}])
    except (OSError, urllib.error.URLError):
        return  # the client noticed the broken stream: also fine
    assert "[DONE]" not in chunks
    assert _deltas(chunks, "content") == "partial"


def test_hold_blocks_until_released(server: ModelServer) -> None:
    hold = Hold(threading.Event())
    server.script("wait", [Text("before"), hold, Text("after")])
    result: list[Any] = []
    t = threading.Thread(
        target=lambda: result.append(_post(server, [{"role": "user", "content": "wait"}]))
    )
    t.start()
    assert hold.started.wait(10)
    assert result == []
    hold.gate.set()
    t.join(10)
    assert _deltas(result[0], "content") == "beforeafter"


def test_script_requires_a_reply(server: ModelServer) -> None:
    with pytest.raises(ValueError, match="at least one reply"):
        server.script("nothing")
