"""A scripted Anthropic Messages API server on 127.0.0.1, for driving Claude Code offline.

Claude Code (under the ACP agent ``claude-agent-acp``) reaches its model through
``ANTHROPIC_BASE_URL``: ``POST /v1/messages`` with ``stream: true`` answered as server-sent
events (``message_start``, ``content_block_*``, ``message_delta``, ``message_stop``). Rules work
as in ``model_server``: a trigger substring of the latest user message that carries text picks
the rule, and the number of assistant messages after it picks the reply, so a turn that calls a
tool and then answers is scripted as ``[tool_call_reply, final_text_reply]``.

Claude Code also makes side requests without tools (titles, topic checks, summaries); they never
consume a scripted reply and get a short plain answer. The step types (``Text``, ``Reasoning``,
``ToolCall``, ``Hold``, ``Delay``, ``HttpError``, ``FailMidStream``) are model_server's own.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler
from typing import Any

from tests.support.model_server import (
    Delay,
    FailMidStream,
    Hold,
    HttpError,
    Reasoning,
    Reply,
    Text,
    ThreadedServer,
    ToolCall,
    Usage,
    _split,
)

__all__ = ["AnthropicServer", "Exchange", "side_request"]

SIDE_REPLY = "ok"


@dataclass
class Exchange:
    """One request Claude Code made, and the rule that answered it."""

    path: str
    body: dict[str, Any]
    rule: str | None = None
    reply_index: int | None = None

    @property
    def messages(self) -> list[dict[str, Any]]:
        msgs = self.body.get("messages")
        return msgs if isinstance(msgs, list) else []

    @property
    def tool_names(self) -> list[str]:
        return [t.get("name", "") for t in self.body.get("tools") or [] if isinstance(t, dict)]


def _text_of(message: dict[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            p.get("text", "") for p in content if isinstance(p, dict) and p.get("type") == "text"
        )
    return ""


def side_request(body: dict[str, Any]) -> bool:
    """A request that is not the main agent loop: it offers the model no tools."""
    return not body.get("tools")


@dataclass
class _Rule:
    trigger: str
    replies: list[Reply]


class AnthropicServer(ThreadedServer):
    """The server; use as a context manager (``with AnthropicServer() as srv: srv.base_url``)."""

    DEFAULT_REPLY: Reply = (Text("ok"),)
    THREAD_NAME = "anthropic-server"

    def __init__(self) -> None:
        super().__init__()
        self.exchanges: list[Exchange] = []
        self._rules: list[_Rule] = []
        self._ids = 0

    def script(self, trigger: str, *replies: Reply) -> None:
        """Answer main-loop requests whose latest user text contains ``trigger`` (later wins)."""
        if not replies:
            raise ValueError("script() needs at least one reply")
        with self._lock:
            self._rules = [r for r in self._rules if r.trigger != trigger]
            self._rules.append(_Rule(trigger, [list(r) for r in replies]))

    def main_requests(self, trigger: str | None = None) -> list[Exchange]:
        with self._lock:
            found = [e for e in self.exchanges if not side_request(e.body)]
        return [e for e in found if trigger is None or e.rule == trigger]

    def _choose(self, body: dict[str, Any]) -> tuple[str | None, int | None, Reply]:
        if side_request(body):
            return None, None, (Text(SIDE_REPLY, chunks=1),)
        messages = body.get("messages") or []
        with self._lock:
            rules = list(self._rules)
        for idx in range(len(messages) - 1, -1, -1):
            msg = messages[idx]
            if msg.get("role") != "user":
                continue
            text = _text_of(msg)
            if not text.strip():
                continue  # only tool results
            for rule in reversed(rules):
                if rule.trigger in text:
                    n = sum(1 for m in messages[idx + 1 :] if m.get("role") == "assistant")
                    return rule.trigger, n, rule.replies[min(n, len(rule.replies) - 1)]
            break
        return None, None, self.DEFAULT_REPLY

    @property
    def base_url(self) -> str:
        """The value for ANTHROPIC_BASE_URL (no /v1: the client adds it)."""
        return self._origin

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        return _make_handler(self)

    def _record(self, exchange: Exchange) -> None:
        with self._lock:
            self.exchanges.append(exchange)
            self._ids += 1

    def next_id(self) -> int:
        with self._lock:
            self._ids += 1
            return self._ids


def _usage(input_tokens: int, output_tokens: int) -> dict[str, int]:
    """A Messages API usage object with the cache token fields the real API always sends
    (Claude Agent adds them up; a missing one makes its context size NaN, so a malformed
    ``usage_update``)."""
    return {
        "input_tokens": input_tokens,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 0,
        "output_tokens": output_tokens,
    }


def _blocks(reply: Sequence[Any], base: str) -> list[dict[str, Any]]:
    """The content blocks of a non-streamed reply."""
    out: list[dict[str, Any]] = []
    for i, step in enumerate(reply):
        if isinstance(step, Text):
            out.append({"type": "text", "text": step.text})
        elif isinstance(step, Reasoning):
            out.append({"type": "thinking", "thinking": step.text, "signature": "sig"})
        elif isinstance(step, ToolCall):
            call_id = step.call_id or f"toolu_{base}_{i}"
            out.append(
                {"type": "tool_use", "id": call_id, "name": step.name, "input": step.arguments}
            )
    return out


def _make_handler(server: AnthropicServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            return

        def _json(self, status: int, payload: Any) -> None:
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:
            self._json(404, {"type": "error", "error": {"type": "not_found_error"}})

        def do_HEAD(self) -> None:
            self.send_response(200)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            try:
                body = json.loads(raw or b"{}")
            except ValueError:
                self._json(400, {"type": "error", "error": {"type": "invalid_request_error"}})
                return
            path = self.path.split("?", 1)[0].rstrip("/")
            if path.endswith("/messages/count_tokens"):
                self._json(200, {"input_tokens": 10})
                return
            if not path.endswith("/v1/messages"):
                self._json(404, {"type": "error", "error": {"type": "not_found_error"}})
                return
            rule, index, reply = server._choose(body)
            server._record(Exchange(self.path, body, rule, index))
            for step in reply:
                if isinstance(step, HttpError):
                    self._json(
                        step.status,
                        {"type": "error", "error": {"type": "api_error", "message": step.message}},
                    )
                    return
            base = f"{int(time.time())}{server.next_id()}"
            model = str(body.get("model") or "claude-test")
            if not body.get("stream"):
                blocks = _blocks(reply, base)
                stop = "tool_use" if any(b["type"] == "tool_use" for b in blocks) else "end_turn"
                self._json(
                    200,
                    {
                        "id": f"msg_{base}",
                        "type": "message",
                        "role": "assistant",
                        "model": model,
                        "content": blocks,
                        "stop_reason": stop,
                        "stop_sequence": None,
                        "usage": _usage(10, 5),
                    },
                )
                return
            self._stream(reply, base, model)

        def _event(self, name: str, payload: dict[str, Any]) -> None:
            data = json.dumps({"type": name, **payload}).encode()
            self.wfile.write(b"event: " + name.encode() + b"\ndata: " + data + b"\n\n")
            self.wfile.flush()

        def _stream(self, reply: Reply, base: str, model: str) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Cache-Control", "no-cache")
            self.send_header("Connection", "close")
            self.end_headers()
            self.close_connection = True
            usage = Usage()
            try:
                self._event(
                    "message_start",
                    {
                        "message": {
                            "id": f"msg_{base}",
                            "type": "message",
                            "role": "assistant",
                            "model": model,
                            "content": [],
                            "stop_reason": None,
                            "stop_sequence": None,
                            "usage": _usage(usage.prompt_tokens, 1),
                        }
                    },
                )
                index = 0
                tools = 0
                for step in reply:
                    if isinstance(step, Text | Reasoning):
                        thinking = isinstance(step, Reasoning)
                        start = (
                            {"type": "thinking", "thinking": "", "signature": ""}
                            if thinking
                            else {"type": "text", "text": ""}
                        )
                        self._event("content_block_start", {"index": index, "content_block": start})
                        for piece in _split(step.text, step.chunks):
                            delta = (
                                {"type": "thinking_delta", "thinking": piece}
                                if thinking
                                else {"type": "text_delta", "text": piece}
                            )
                            self._event("content_block_delta", {"index": index, "delta": delta})
                        if thinking:
                            self._event(
                                "content_block_delta",
                                {
                                    "index": index,
                                    "delta": {"type": "signature_delta", "signature": "sig"},
                                },
                            )
                        self._event("content_block_stop", {"index": index})
                        index += 1
                    elif isinstance(step, ToolCall):
                        call_id = step.call_id or f"toolu_{base}_{index}"
                        self._event(
                            "content_block_start",
                            {
                                "index": index,
                                "content_block": {
                                    "type": "tool_use",
                                    "id": call_id,
                                    "name": step.name,
                                    "input": {},
                                },
                            },
                        )
                        self._event(
                            "content_block_delta",
                            {
                                "index": index,
                                "delta": {
                                    "type": "input_json_delta",
                                    "partial_json": json.dumps(step.arguments),
                                },
                            },
                        )
                        self._event("content_block_stop", {"index": index})
                        index += 1
                        tools += 1
                    elif isinstance(step, Usage):
                        usage = step
                    elif isinstance(step, Delay):
                        time.sleep(step.seconds)
                    elif isinstance(step, Hold):
                        step.started.set()
                        step.gate.wait(step.timeout)
                    elif isinstance(step, FailMidStream):
                        self.connection.shutdown(2)
                        return
                self._event(
                    "message_delta",
                    {
                        "delta": {
                            "stop_reason": "tool_use" if tools else "end_turn",
                            "stop_sequence": None,
                        },
                        "usage": _usage(usage.prompt_tokens, usage.completion_tokens),
                    },
                )
                self._event("message_stop", {})
            except (BrokenPipeError, ConnectionResetError, OSError):
                return

    return Handler
