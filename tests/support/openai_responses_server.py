"""A scripted OpenAI Responses API server on 127.0.0.1, for driving Codex offline.

Codex (under the ACP agent ``codex-acp``) speaks only the Responses API to a model provider: a
custom provider in ``$CODEX_HOME/config.toml`` (``base_url = "http://127.0.0.1:PORT/v1"``,
``wire_api = "responses"``) gets ``POST /v1/responses`` with ``stream: true``, answered here as
server-sent events: ``response.created``, then per output item ``response.output_item.added``,
its deltas (``response.output_text.delta``, ``response.reasoning_summary_text.delta``) and
``response.output_item.done`` (a ``message``, a ``reasoning``, a ``function_call`` with its
``call_id`` and JSON ``arguments``, or a ``custom_tool_call`` with raw ``input``: Codex's
``apply_patch`` is a freeform tool), and ``response.completed`` with usage. Codex reads the items
from the ``done`` events and fails a stream that ends without ``response.completed``.

Rules work as model_server's: a trigger substring of the latest user message (Codex's own
context messages, ``<environment_context>`` and the like, are not user text); the reply used is
the number of model responses already in the input after that message (a run of output items,
ended by the tool results Codex sends back), so ``[tool_call_reply, final_text_reply]``
scripts a turn that calls a tool and then answers. The step types are model_server's own, and
``CustomToolCall``. Any other request is answered 404 and noted in ``other``.
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
    Step,
    Text,
    ThreadedServer,
    ToolCall,
    Usage,
    _split,
)

__all__ = ["CustomToolCall", "Exchange", "ResponsesServer", "input_text"]


@dataclass(frozen=True)
class CustomToolCall:
    """A call of a freeform (``custom``) tool, such as Codex's ``apply_patch``: its input is raw
    text, not JSON arguments."""

    name: str
    input: str
    call_id: str = ""


Reply = Sequence[Step | CustomToolCall]

# Items the model produced (what a reply adds to the next request's input), as opposed to what
# Codex adds: user and developer messages and tool results.
OUTPUT_ITEMS = frozenset(
    {"function_call", "custom_tool_call", "local_shell_call", "reasoning", "web_search_call"}
)
# Codex's own user-role messages: its environment, AGENTS.md instructions, turn aborts.
CONTEXT_PREFIXES = ("<environment_context>", "<user_instructions>", "# AGENTS.md", "<turn_aborted>")


def _text_of(item: dict[str, Any]) -> str:
    content = item.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            str(p.get("text", "")) for p in content if isinstance(p, dict) and "text" in p
        )
    return ""


def _is_output(item: dict[str, Any]) -> bool:
    kind = item.get("type", "message")
    if kind == "message":
        return item.get("role") == "assistant"
    return kind in OUTPUT_ITEMS


def _user_text(item: dict[str, Any]) -> str | None:
    """The text of a user message a person wrote, or None for anything else."""
    if item.get("type", "message") != "message" or item.get("role") != "user":
        return None
    text = _text_of(item)
    if not text.strip() or text.lstrip().startswith(CONTEXT_PREFIXES):
        return None
    return text


def input_text(body: dict[str, Any]) -> str:
    """Everything the request carries as text (messages, tool calls and results), for checks."""
    return json.dumps(body.get("input") or [])


@dataclass
class Exchange:
    """One ``/responses`` request Codex made, and the rule that answered it."""

    path: str
    body: dict[str, Any]
    rule: str | None = None
    reply_index: int | None = None

    @property
    def items(self) -> list[dict[str, Any]]:
        items = self.body.get("input")
        return [i for i in items if isinstance(i, dict)] if isinstance(items, list) else []

    @property
    def tool_names(self) -> list[str]:
        return [str(t.get("name", "")) for t in self.body.get("tools") or [] if isinstance(t, dict)]


@dataclass
class _Rule:
    trigger: str
    replies: list[Reply]


class ResponsesServer(ThreadedServer):
    """The server; use as a context manager (``with ResponsesServer() as srv: srv.base_url``)."""

    DEFAULT_REPLY: Reply = (Text("ok"),)
    THREAD_NAME = "responses-server"

    def __init__(self) -> None:
        super().__init__()
        self.exchanges: list[Exchange] = []
        self.other: list[tuple[str, str]] = []  # (method, path) of every other request
        self._rules: list[_Rule] = []
        self._ids = 0

    def script(self, trigger: str, *replies: Reply) -> None:
        """Answer requests whose latest user text contains ``trigger`` (later rules win)."""
        if not replies:
            raise ValueError("script() needs at least one reply")
        with self._lock:
            self._rules = [r for r in self._rules if r.trigger != trigger]
            self._rules.append(_Rule(trigger, [list(r) for r in replies]))

    def requests(self, trigger: str | None = None) -> list[Exchange]:
        with self._lock:
            found = list(self.exchanges)
        return [e for e in found if trigger is None or e.rule == trigger]

    def _choose(self, body: dict[str, Any]) -> tuple[str | None, int | None, Reply]:
        items = [i for i in body.get("input") or [] if isinstance(i, dict)]
        with self._lock:
            rules = list(self._rules)
        for idx in range(len(items) - 1, -1, -1):
            text = _user_text(items[idx])
            if text is None:
                continue
            for rule in reversed(rules):
                if rule.trigger in text:
                    n = _responses_after(items[idx + 1 :])
                    return rule.trigger, n, rule.replies[min(n, len(rule.replies) - 1)]
            break  # only the latest user message decides
        return None, None, self.DEFAULT_REPLY

    @property
    def base_url(self) -> str:
        """The provider's ``base_url`` (Codex appends ``/responses``)."""
        return f"{self._origin}/v1"

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        return _make_handler(self)

    def _record(self, exchange: Exchange) -> None:
        with self._lock:
            self.exchanges.append(exchange)

    def _note(self, method: str, path: str) -> None:
        with self._lock:
            self.other.append((method, path))

    def next_id(self) -> int:
        with self._lock:
            self._ids += 1
            return self._ids


def _responses_after(items: list[dict[str, Any]]) -> int:
    """How many model responses the items hold: runs of output items."""
    runs, inside = 0, False
    for item in items:
        if _is_output(item):
            if not inside:
                runs += 1
            inside = True
        else:
            inside = False
    return runs


def _make_handler(server: ResponsesServer) -> type[BaseHTTPRequestHandler]:
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

        def _not_found(self) -> None:
            self._json(404, {"error": {"message": "not found", "type": "invalid_request_error"}})

        def do_GET(self) -> None:
            server._note("GET", self.path)
            self._not_found()

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            path = self.path.split("?", 1)[0].rstrip("/")
            if not path.endswith("/responses"):
                server._note("POST", self.path)
                self._not_found()
                return
            try:
                body = json.loads(raw or b"{}")
            except ValueError:
                self._json(400, {"error": {"message": "bad json", "type": "invalid_request_error"}})
                return
            rule, index, reply = server._choose(body)
            server._record(Exchange(self.path, body, rule, index))
            for step in reply:
                if isinstance(step, HttpError):
                    error = {"message": step.message, "type": "server_error", "code": None}
                    self._json(step.status, {"error": error})
                    return
            self._stream(reply, f"{int(time.time())}{server.next_id()}", body)

        def _event(self, name: str, payload: dict[str, Any]) -> None:
            data = json.dumps({"type": name, **payload}).encode()
            self.wfile.write(b"event: " + name.encode() + b"\ndata: " + data + b"\n\n")
            self.wfile.flush()

        def _stream(self, reply: Reply, base: str, body: dict[str, Any]) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Cache-Control", "no-cache")
            self.send_header("Connection", "close")
            self.end_headers()
            self.close_connection = True
            response = {
                "id": f"resp_{base}",
                "object": "response",
                "created_at": int(time.time()),
                "model": str(body.get("model") or "codex-test"),
                "status": "in_progress",
                "output": [],
            }
            usage = Usage()
            output: list[dict[str, Any]] = []
            try:
                self._event("response.created", {"response": response})
                for step in reply:
                    if isinstance(step, Text):
                        output.append(self._message(step, f"msg_{base}_{len(output)}", output))
                    elif isinstance(step, Reasoning):
                        output.append(self._reasoning(step, f"rs_{base}_{len(output)}", output))
                    elif isinstance(step, ToolCall | CustomToolCall):
                        output.append(self._call(step, base, len(output)))
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
                total = usage.prompt_tokens + usage.completion_tokens
                done = {
                    **response,
                    "status": "completed",
                    "output": output,
                    "usage": {
                        "input_tokens": usage.prompt_tokens,
                        "input_tokens_details": {"cached_tokens": 0},
                        "output_tokens": usage.completion_tokens,
                        "output_tokens_details": {"reasoning_tokens": 0},
                        "total_tokens": total,
                    },
                }
                self._event("response.completed", {"response": done})
            except (BrokenPipeError, ConnectionResetError, OSError):
                return

        def _call(self, step: ToolCall | CustomToolCall, base: str, index: int) -> dict[str, Any]:
            """A ``function_call`` (JSON arguments) or ``custom_tool_call`` (raw input) item."""
            call_id = step.call_id or f"call_{base}_{index}"
            item: dict[str, Any]
            if isinstance(step, ToolCall):
                arguments = json.dumps(step.arguments)
                item = {"type": "function_call", "id": f"fc_{base}_{index}", "arguments": ""}
                field, text, delta = "arguments", arguments, "function_call_arguments.delta"
            else:
                item = {"type": "custom_tool_call", "id": f"ctc_{base}_{index}", "input": ""}
                field, text, delta = "input", step.input, "custom_tool_call_input.delta"
            item.update({"call_id": call_id, "name": step.name, "status": "in_progress"})
            self._event("response.output_item.added", {"output_index": index, "item": item})
            self._event(
                f"response.{delta}", {"output_index": index, "item_id": item["id"], "delta": text}
            )
            item = {**item, field: text, "status": "completed"}
            self._event("response.output_item.done", {"output_index": index, "item": item})
            return item

        def _message(self, step: Text, item_id: str, output: list[Any]) -> dict[str, Any]:
            index = len(output)
            item: dict[str, Any] = {
                "type": "message",
                "id": item_id,
                "role": "assistant",
                "status": "in_progress",
                "content": [],
            }
            self._event("response.output_item.added", {"output_index": index, "item": item})
            part: dict[str, Any] = {"type": "output_text", "text": "", "annotations": []}
            self._event(
                "response.content_part.added",
                {"output_index": index, "item_id": item_id, "content_index": 0, "part": part},
            )
            for piece in _split(step.text, step.chunks):
                self._event(
                    "response.output_text.delta",
                    {"output_index": index, "item_id": item_id, "content_index": 0, "delta": piece},
                )
            part = {**part, "text": step.text}
            self._event(
                "response.output_text.done",
                {"output_index": index, "item_id": item_id, "content_index": 0, "text": step.text},
            )
            self._event(
                "response.content_part.done",
                {"output_index": index, "item_id": item_id, "content_index": 0, "part": part},
            )
            item = {**item, "status": "completed", "content": [part]}
            self._event("response.output_item.done", {"output_index": index, "item": item})
            return item

        def _reasoning(self, step: Reasoning, item_id: str, output: list[Any]) -> dict[str, Any]:
            index = len(output)
            item: dict[str, Any] = {"type": "reasoning", "id": item_id, "summary": []}
            self._event("response.output_item.added", {"output_index": index, "item": item})
            for piece in _split(step.text, step.chunks):
                self._event(
                    "response.reasoning_summary_text.delta",
                    {"output_index": index, "item_id": item_id, "summary_index": 0, "delta": piece},
                )
            item = {**item, "summary": [{"type": "summary_text", "text": step.text}]}
            self._event("response.output_item.done", {"output_index": index, "item": item})
            return item

    return Handler
