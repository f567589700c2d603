"""A scripted OpenAI-compatible model server on 127.0.0.1 for driving the real Copilot CLI offline.

The CLI, run in bring-your-own-model mode, talks to ``/v1/models`` and streaming
``/v1/chat/completions`` (SSE). Tests register *rules*: a trigger substring matched against the
latest user message of a request, and a list of replies. The reply used is chosen by how many
assistant messages follow that user message, so a turn that calls a tool and then answers is
scripted as ``[tool_call_reply, final_text_reply]`` and is deterministic no matter how requests
interleave (subagents run their own conversation with their own user message).

It runs in a background thread (stdlib ``ThreadingHTTPServer``) because the CLI is a separate
process; tests only observe it through recorded requests and what the CLI does.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self

__all__ = [
    "Delay",
    "FailMidStream",
    "Hold",
    "HttpError",
    "ModelServer",
    "Reasoning",
    "RecordedRequest",
    "Reply",
    "Text",
    "ToolCall",
    "Usage",
]


@dataclass(frozen=True)
class Text:
    """Assistant text, streamed as ``delta.content`` in ``chunks`` pieces."""

    text: str
    chunks: int = 3


@dataclass(frozen=True)
class Reasoning:
    """Reasoning text, streamed as ``delta.reasoning_content``."""

    text: str
    chunks: int = 2


@dataclass(frozen=True)
class ToolCall:
    """A function call the model makes (e.g. ``bash``, ``ask_user``, ``task``)."""

    name: str
    arguments: dict[str, Any]
    call_id: str = ""


@dataclass(frozen=True)
class Usage:
    """Token counts reported in the final usage chunk."""

    prompt_tokens: int = 11
    completion_tokens: int = 7


@dataclass(frozen=True)
class Delay:
    """Pause the stream for ``seconds`` (to widen a window; never used for assertions)."""

    seconds: float


@dataclass(frozen=True)
class Hold:
    """Pause the stream until the test releases ``gate`` (or ``timeout`` passes, or the client
    goes away). ``started`` is set once the stream reaches this point, so a test can wait for the
    model call to be in flight before it aborts or steers."""

    gate: threading.Event
    started: threading.Event = field(default_factory=threading.Event)
    timeout: float = 30.0


@dataclass(frozen=True)
class HttpError:
    """Answer the request with an HTTP error status and an OpenAI-style error body."""

    status: int
    message: str = "fake upstream failure"


@dataclass(frozen=True)
class FailMidStream:
    """Drop the connection in the middle of the stream, without ``[DONE]``."""


Step = Text | Reasoning | ToolCall | Usage | Delay | Hold | HttpError | FailMidStream
Reply = Sequence[Step]


@dataclass
class RecordedRequest:
    """One request the CLI made."""

    method: str
    path: str
    body: dict[str, Any]
    rule: str | None = None
    reply_index: int | None = None

    @property
    def messages(self) -> list[dict[str, Any]]:
        msgs = self.body.get("messages", [])
        return msgs if isinstance(msgs, list) else []

    @property
    def tool_names(self) -> list[str]:
        """Names of the tools the CLI offered the model in this request."""
        names = []
        for tool in self.body.get("tools") or []:
            fn = tool.get("function") or {}
            if "name" in fn:
                names.append(fn["name"])
        return names

    @property
    def last_user_text(self) -> str:
        """The latest user message, ignoring the CLI's own system notifications."""
        return _last_user_text(self.messages)


def message_text(message: dict[str, Any]) -> str:
    """The text of a chat message whose content is a string or a list of parts."""
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return ""


def _last_user_text(messages: list[dict[str, Any]]) -> str:
    for msg in reversed(messages):
        if msg.get("role") == "user":
            text = message_text(msg)
            if not text.lstrip().startswith("<system_notification>"):
                return text
    return ""


@dataclass
class _Rule:
    trigger: str
    replies: list[Reply]


class ThreadedServer:
    """A scripted HTTP server on 127.0.0.1 in a background thread, started and stopped by a
    ``with`` block; a subclass gives its request handler and thread name."""

    THREAD_NAME = "model-server"

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        raise NotImplementedError

    @property
    def _origin(self) -> str:
        assert self._httpd is not None, "server not started"
        host, port = self._httpd.server_address[:2]
        return f"http://{host!s}:{port}"

    def start(self) -> Self:
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, name=self.THREAD_NAME, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


class ModelServer(ThreadedServer):
    """The server; use as a context manager (``with ModelServer() as srv: srv.base_url``)."""

    DEFAULT_REPLY: Reply = (Text("ok"),)

    def __init__(self, models: Sequence[str] = ("fake-model", "fake-model-2")) -> None:
        super().__init__()
        self.models = list(models)
        self.requests: list[RecordedRequest] = []
        self._rules: list[_Rule] = []

    # -- scripting -----------------------------------------------------------------------------

    def script(self, trigger: str, *replies: Reply) -> None:
        """Answer requests whose latest user message contains ``trigger``.

        The CLI's own ``<system_notification>`` user messages are skipped when looking for the
        latest user message.

        The n-th reply answers the request that has n assistant messages after that user
        message; once the replies run out the last one is repeated. Later rules win over earlier
        ones with the same trigger, so a module-wide server can be re-scripted per test.
        """
        if not replies:
            raise ValueError("script() needs at least one reply")
        with self._lock:
            self._rules = [r for r in self._rules if r.trigger != trigger]
            self._rules.append(_Rule(trigger, [list(r) for r in replies]))

    def chat_requests(self, trigger: str | None = None) -> list[RecordedRequest]:
        """Recorded chat-completion requests (optionally only those a rule matched)."""
        with self._lock:
            reqs = [r for r in self.requests if r.path.endswith("/chat/completions")]
        if trigger is not None:
            reqs = [r for r in reqs if r.rule == trigger]
        return reqs

    def _choose(self, body: dict[str, Any]) -> tuple[str | None, int | None, Reply]:
        messages = body.get("messages") or []
        with self._lock:
            rules = list(self._rules)
        for idx in range(len(messages) - 1, -1, -1):
            msg = messages[idx]
            if msg.get("role") != "user":
                continue
            text = message_text(msg)
            if text.lstrip().startswith("<system_notification>"):
                continue  # the CLI's own notices (e.g. a background shell finished)
            for rule in reversed(rules):
                if rule.trigger in text:
                    n = sum(1 for m in messages[idx + 1 :] if m.get("role") == "assistant")
                    reply = rule.replies[min(n, len(rule.replies) - 1)]
                    return rule.trigger, n, reply
            break  # only the latest user message decides
        return None, None, self.DEFAULT_REPLY

    # -- lifecycle -----------------------------------------------------------------------------

    @property
    def base_url(self) -> str:
        return f"{self._origin}/v1"

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        return _make_handler(self)

    def _record(self, req: RecordedRequest) -> None:
        with self._lock:
            self.requests.append(req)


def _split(text: str, n: int) -> Iterator[str]:
    n = max(1, min(n, len(text)))
    size = -(-len(text) // n)
    for i in range(0, len(text), size):
        yield text[i : i + size]


def _make_handler(server: ModelServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            return  # keep test output quiet

        def _json(self, status: int, payload: Any) -> None:
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:
            server._record(RecordedRequest("GET", self.path, {}))
            if self.path.rstrip("/").endswith("/models"):
                data = [
                    {"id": m, "object": "model", "created": 0, "owned_by": "fake"}
                    for m in server.models
                ]
                self._json(200, {"object": "list", "data": data})
            else:
                self._json(404, {"error": {"message": "not found", "type": "invalid_request"}})

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            try:
                body = json.loads(raw or b"{}")
            except ValueError:
                self._json(400, {"error": {"message": "bad json", "type": "invalid_request"}})
                return
            if not self.path.rstrip("/").endswith("/chat/completions"):
                server._record(RecordedRequest("POST", self.path, body))
                self._json(404, {"error": {"message": "not found", "type": "invalid_request"}})
                return
            rule, index, reply = server._choose(body)
            server._record(RecordedRequest("POST", self.path, body, rule, index))
            self._stream(body, reply)

        def _stream(self, body: dict[str, Any], reply: Reply) -> None:
            for step in reply:
                if isinstance(step, HttpError):
                    err = {"message": step.message, "type": "server_error", "code": step.status}
                    self._json(step.status, {"error": err})
                    return
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Cache-Control", "no-cache")
            self.send_header("Connection", "close")
            self.end_headers()
            self.close_connection = True
            model = str(body.get("model") or "fake-model")
            created = int(time.time())
            cid = f"chatcmpl-{created}-{id(self)}"

            def chunk(delta: dict[str, Any], finish: str | None = None) -> None:
                payload = {
                    "id": cid,
                    "object": "chat.completion.chunk",
                    "created": created,
                    "model": model,
                    "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
                }
                self.wfile.write(b"data: " + json.dumps(payload).encode() + b"\n\n")
                self.wfile.flush()

            try:
                chunk({"role": "assistant", "content": ""})
                tool_index = 0
                usage = Usage()
                for step in reply:
                    if isinstance(step, Text):
                        for piece in _split(step.text, step.chunks):
                            chunk({"content": piece})
                    elif isinstance(step, Reasoning):
                        for piece in _split(step.text, step.chunks):
                            chunk({"reasoning_content": piece})
                    elif isinstance(step, ToolCall):
                        call_id = step.call_id or f"call_{cid[-6:]}_{tool_index}"
                        fn = {"name": step.name, "arguments": json.dumps(step.arguments)}
                        call = {"index": tool_index, "id": call_id, "type": "function"}
                        chunk({"tool_calls": [{**call, "function": fn}]})
                        tool_index += 1
                    elif isinstance(step, Usage):
                        usage = step
                    elif isinstance(step, Delay):
                        time.sleep(step.seconds)
                    elif isinstance(step, Hold):
                        step.started.set()
                        step.gate.wait(step.timeout)
                    elif isinstance(step, FailMidStream):
                        self.wfile.flush()
                        self.connection.shutdown(2)
                        return
                chunk({}, "tool_calls" if tool_index else "stop")
                total = usage.prompt_tokens + usage.completion_tokens
                final = {
                    "id": cid,
                    "object": "chat.completion.chunk",
                    "created": created,
                    "model": model,
                    "choices": [],
                    "usage": {
                        "prompt_tokens": usage.prompt_tokens,
                        "completion_tokens": usage.completion_tokens,
                        "total_tokens": total,
                    },
                }
                self.wfile.write(b"data: " + json.dumps(final).encode() + b"\n\n")
                self.wfile.write(b"data: [DONE]\n\n")
                self.wfile.flush()
            except (BrokenPipeError, ConnectionResetError):
                return  # the CLI aborted the call

    return Handler
