"""A scripted Gemini API server on 127.0.0.1, for driving Gemini CLI (``gemini --acp``) offline.

Gemini CLI reaches its model through ``GOOGLE_GEMINI_BASE_URL`` (which makes it use the
``gateway`` auth type): ``POST /v1beta/models/{model}:streamGenerateContent?alt=sse`` for the
agent loop, answered as server-sent events whose chunks carry ``candidates[0].content.parts``
(``text``, ``thought`` text, ``functionCall``), a ``finishReason`` on the last one and
``usageMetadata``; ``POST .../{model}:generateContent`` for its own side requests (the model
router's classifier when the model is ``auto``, the next-speaker check, edit correction), each
of which asks for JSON in a ``responseJsonSchema``; ``:countTokens`` when it estimates a prompt.

Rules are model_server's: a trigger substring matched against the latest user text of a
main-loop request, and replies chosen by how many model messages follow it, so a turn that calls
a tool and then answers is ``[tool_call_reply, final_text_reply]``. Side requests get an object
built from the schema they ask for (the router is told ``flash``, the next-speaker check
``user``), never a rule's reply. The step types are model_server's own; a ``ToolCall`` becomes a
``functionCall`` part and a ``Reasoning`` a ``thought`` part.
"""

from __future__ import annotations

import json
import re
import time
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

__all__ = ["Exchange", "GeminiServer", "side_answer"]

_CALL = re.compile(
    r"/models/(?P<model>[^/:]+):(?P<verb>streamGenerateContent|generateContent|countTokens)$"
)
#: Values a side request's enum is answered with when it offers one: the router's cheap model,
#: and the next-speaker check's "the user speaks next" (so no extra turn is taken).
_PREFERRED = ("flash", "user")


@dataclass
class Exchange:
    """One model request Gemini CLI made, and the rule that answered it."""

    verb: str
    model: str
    body: dict[str, Any]
    rule: str | None = None
    reply_index: int | None = None

    @property
    def contents(self) -> list[dict[str, Any]]:
        contents = self.body.get("contents")
        return contents if isinstance(contents, list) else []

    @property
    def tool_names(self) -> list[str]:
        names = []
        for tool in self.body.get("tools") or []:
            for decl in tool.get("functionDeclarations") or [] if isinstance(tool, dict) else []:
                names.append(str(decl.get("name", "")))
        return names

    @property
    def main(self) -> bool:
        """The agent loop's own call (streamed), not a side request."""
        return self.verb == "streamGenerateContent"


def _texts(content: dict[str, Any]) -> str:
    """A user content's own text: its text parts less the CLI's ``<session_context>`` preamble
    (which names the working and temporary directories, so could hold any trigger)."""
    parts = content.get("parts")
    if not isinstance(parts, list):
        return ""
    texts = [p.get("text") for p in parts if isinstance(p, dict)]
    return "".join(
        t for t in texts if isinstance(t, str) and not t.lstrip().startswith("<session_context>")
    )


def side_answer(schema: Any) -> Any:
    """A value that fits a JSON schema: what a side request that asks for JSON is told."""
    if not isinstance(schema, dict):
        return "ok"
    enum = schema.get("enum")
    if isinstance(enum, list) and enum:
        return next((v for v in _PREFERRED if v in enum), enum[0])
    kind = schema.get("type")
    kind = kind.lower() if isinstance(kind, str) else kind
    if kind == "object" or "properties" in schema:
        props = schema.get("properties") or {}
        return {name: side_answer(sub) for name, sub in props.items()}
    if kind == "array":
        return []
    if kind in ("number", "integer"):
        low = schema.get("minimum", 10)
        return low if isinstance(low, int | float) else 10
    if kind == "boolean":
        return False
    return "ok"


@dataclass
class _Rule:
    trigger: str
    replies: list[Reply]


class GeminiServer(ThreadedServer):
    """The server; use as a context manager (``with GeminiServer() as srv: srv.base_url``)."""

    DEFAULT_REPLY: Reply = (Text("ok"),)
    THREAD_NAME = "gemini-server"

    def __init__(self) -> None:
        super().__init__()
        self.exchanges: list[Exchange] = []
        self._rules: list[_Rule] = []

    def script(self, trigger: str, *replies: Reply) -> None:
        """Answer main-loop requests whose latest user text contains ``trigger`` (later wins)."""
        if not replies:
            raise ValueError("script() needs at least one reply")
        with self._lock:
            self._rules = [r for r in self._rules if r.trigger != trigger]
            self._rules.append(_Rule(trigger, [list(r) for r in replies]))

    def main_requests(self, trigger: str | None = None) -> list[Exchange]:
        with self._lock:
            found = [e for e in self.exchanges if e.main]
        return [e for e in found if trigger is None or e.rule == trigger]

    def side_requests(self) -> list[Exchange]:
        with self._lock:
            return [e for e in self.exchanges if not e.main]

    def _choose(self, contents: list[dict[str, Any]]) -> tuple[str | None, int | None, Reply]:
        with self._lock:
            rules = list(self._rules)
        for idx in range(len(contents) - 1, -1, -1):
            content = contents[idx]
            if not isinstance(content, dict) or content.get("role") != "user":
                continue
            text = _texts(content)
            if not text.strip():
                continue  # only function responses
            for rule in reversed(rules):
                if rule.trigger in text:
                    n = sum(
                        1
                        for c in contents[idx + 1 :]
                        if isinstance(c, dict) and c.get("role") == "model"
                    )
                    return rule.trigger, n, rule.replies[min(n, len(rule.replies) - 1)]
            break
        return None, None, self.DEFAULT_REPLY

    @property
    def base_url(self) -> str:
        """The value for GOOGLE_GEMINI_BASE_URL (no /v1beta: the client adds it)."""
        return self._origin

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        return _make_handler(self)

    def _record(self, exchange: Exchange) -> None:
        with self._lock:
            self.exchanges.append(exchange)


def _call_part(step: ToolCall) -> dict[str, Any]:
    call: dict[str, Any] = {"name": step.name, "args": step.arguments}
    if step.call_id:
        call["id"] = step.call_id
    return {"functionCall": call}


def _usage(usage: Usage) -> dict[str, int]:
    return {
        "promptTokenCount": usage.prompt_tokens,
        "candidatesTokenCount": usage.completion_tokens,
        "totalTokenCount": usage.prompt_tokens + usage.completion_tokens,
    }


def _make_handler(server: GeminiServer) -> type[BaseHTTPRequestHandler]:
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

        def _error(self, status: int, message: str) -> None:
            state = {400: "INVALID_ARGUMENT", 404: "NOT_FOUND", 429: "RESOURCE_EXHAUSTED"}
            error = {"code": status, "message": message, "status": state.get(status, "INTERNAL")}
            self._json(status, {"error": error})

        def do_GET(self) -> None:
            self._error(404, "not found")

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            try:
                body = json.loads(raw or b"{}")
            except ValueError:
                self._error(400, "bad json")
                return
            match = _CALL.search(self.path.split("?", 1)[0])
            if match is None or not isinstance(body, dict):
                self._error(404, "not found")
                return
            verb, model = match["verb"], match["model"]
            if verb == "countTokens":
                self._json(200, {"totalTokens": 10})
                return
            if verb == "generateContent":
                server._record(Exchange(verb, model, body))
                self._side(body, model)
                return
            contents = body.get("contents")
            rule, index, reply = server._choose(contents if isinstance(contents, list) else [])
            server._record(Exchange(verb, model, body, rule, index))
            for step in reply:
                if isinstance(step, HttpError):
                    self._error(step.status, step.message)
                    return
            self._stream(reply, model)

        def _side(self, body: dict[str, Any], model: str) -> None:
            config = body.get("generationConfig") or {}
            schema = config.get("responseJsonSchema") or config.get("responseSchema")
            text = json.dumps(side_answer(schema)) if schema is not None else "ok"
            self._json(
                200,
                {
                    "candidates": [
                        {
                            "content": {"role": "model", "parts": [{"text": text}]},
                            "finishReason": "STOP",
                            "index": 0,
                        }
                    ],
                    "usageMetadata": _usage(Usage()),
                    "modelVersion": model,
                },
            )

        def _chunk(self, model: str, parts: list[dict[str, Any]], **extra: Any) -> None:
            candidate: dict[str, Any] = {"content": {"role": "model", "parts": parts}, "index": 0}
            if "finishReason" in extra:
                candidate["finishReason"] = extra.pop("finishReason")
            payload = {"candidates": [candidate], "modelVersion": model, **extra}
            self.wfile.write(b"data: " + json.dumps(payload).encode() + b"\r\n\r\n")
            self.wfile.flush()

        def _stream(self, reply: Reply, model: str) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Cache-Control", "no-cache")
            self.send_header("Connection", "close")
            self.end_headers()
            self.close_connection = True
            usage = Usage()
            try:
                for step in reply:
                    if isinstance(step, Text):
                        for piece in _split(step.text, step.chunks):
                            self._chunk(model, [{"text": piece}])
                    elif isinstance(step, Reasoning):
                        for piece in _split(step.text, step.chunks):
                            self._chunk(model, [{"text": piece, "thought": True}])
                    elif isinstance(step, ToolCall):
                        self._chunk(model, [_call_part(step)])
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
                self._chunk(model, [{"text": ""}], finishReason="STOP", usageMetadata=_usage(usage))
            except (BrokenPipeError, ConnectionResetError, OSError):
                return

    return Handler
