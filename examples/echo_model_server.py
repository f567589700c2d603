"""A model server that runs anywhere, offline, with nothing to download: it answers every chat
completion by echoing the prompt back. It is for finishing and testing an offline setup of the
Copilot provider (docs/copilot.md) before a real local model (Ollama, llama.cpp's server) is in
place, not for work.

    python3 examples/echo_model_server.py                    # http://127.0.0.1:8000/v1
    python3 examples/echo_model_server.py --listen 127.0.0.1:0 --model echo

The first line on stdout is ``echo model server on URL``, the ``base_url`` to configure. It
speaks the part of the OpenAI API the Copilot CLI uses: ``GET /v1/models`` and ``POST
/v1/chat/completions``, streamed (server-sent events) or not. Standard library only.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


def last_user_text(messages: list[dict[str, Any]]) -> str:
    """The text of the latest user message (content may be a string or a list of parts)."""
    for message in reversed(messages):
        if message.get("role") != "user":
            continue
        content = message.get("content")
        if isinstance(content, str):
            return content
        if isinstance(content, list):
            return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return ""


def answer(messages: list[dict[str, Any]]) -> str:
    """The echo; what the runtime wraps around the prompt (`<current_datetime>...` blocks)
    is left out."""
    text = re.sub(r"<([\w-]+)>.*?</\1>", "", last_user_text(messages), flags=re.S).strip()
    return f"You said: {text}" if text else "Hello from the echo model server."


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    model = "echo"

    def log_message(self, format: str, *args: Any) -> None:
        sys.stderr.write(f"echo model server: {format % args}\n")

    def _json(self, status: int, payload: Any) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        if self.path.rstrip("/").endswith("/models"):
            model = {"id": self.model, "object": "model", "created": 0, "owned_by": "echo"}
            self._json(200, {"object": "list", "data": [model]})
        else:
            self._json(404, {"error": {"message": "not found", "type": "invalid_request"}})

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        try:
            body = json.loads(self.rfile.read(length) if length else b"{}")
        except ValueError:
            self._json(400, {"error": {"message": "bad json", "type": "invalid_request"}})
            return
        if not self.path.rstrip("/").endswith("/chat/completions"):
            self._json(404, {"error": {"message": "not found", "type": "invalid_request"}})
            return
        text = answer(body.get("messages") or [])
        model = str(body.get("model") or self.model)
        created = int(time.time())
        usage = {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}
        base = {"id": f"chatcmpl-{created}", "created": created, "model": model}
        if not body.get("stream"):
            message = {"role": "assistant", "content": text}
            choice = {"index": 0, "message": message, "finish_reason": "stop"}
            self._json(200, {**base, "object": "chat.completion", "choices": [choice]})
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True

        def event(choices: list[dict[str, Any]], **extra: Any) -> None:
            payload = {**base, "object": "chat.completion.chunk", "choices": choices, **extra}
            self.wfile.write(b"data: " + json.dumps(payload).encode() + b"\n\n")

        try:
            event([{"index": 0, "delta": {"role": "assistant", "content": ""}}])
            for word in text.split(" "):
                event([{"index": 0, "delta": {"content": word + " "}, "finish_reason": None}])
            event([{"index": 0, "delta": {}, "finish_reason": "stop"}])
            event([], usage=usage)
            self.wfile.write(b"data: [DONE]\n\n")
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            return  # the client gave up on the answer


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--listen", default="127.0.0.1:8000", metavar="HOST:PORT")
    parser.add_argument("--model", default="echo", help="the one model it lists (default echo)")
    args = parser.parse_args(argv)
    host, _, port = args.listen.rpartition(":")
    Handler.model = args.model
    server = ThreadingHTTPServer((host or "127.0.0.1", int(port)), Handler)
    bound_host, bound_port = server.server_address[:2]
    print(f"echo model server on http://{bound_host}:{bound_port}/v1", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
