"""A minimal MCP server over stdio (newline-delimited JSON-RPC), for tests of runtimes that
start MCP servers: it answers `initialize`, `tools/list` (one tool, `echo`), `tools/call` and
`ping`, and nothing else. Run: python tests/support/mcp_stdio_server.py"""

from __future__ import annotations

import json
import sys
from typing import Any

TOOL = {
    "name": "echo",
    "description": "Echo the text back",
    "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}},
}


def answer(request: dict[str, Any]) -> dict[str, Any] | None:
    method = request.get("method")
    if "id" not in request:
        return None  # a notification (notifications/initialized)
    if method == "initialize":
        version = (request.get("params") or {}).get("protocolVersion", "2025-06-18")
        result: Any = {
            "protocolVersion": version,
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "ahp-bridge-test-mcp", "version": "1.0.0"},
        }
    elif method == "tools/list":
        result = {"tools": [TOOL]}
    elif method == "tools/call":
        text = ((request.get("params") or {}).get("arguments") or {}).get("text", "")
        result = {"content": [{"type": "text", "text": str(text)}]}
    elif method == "ping":
        result = {}
    else:
        error = {"code": -32601, "message": f"Method not found: {method}"}
        return {"jsonrpc": "2.0", "id": request["id"], "error": error}
    return {"jsonrpc": "2.0", "id": request["id"], "result": result}


def main() -> None:
    for line in sys.stdin:
        if not line.strip():
            continue
        reply = answer(json.loads(line))
        if reply is not None:
            sys.stdout.write(json.dumps(reply) + "\n")
            sys.stdout.flush()


if __name__ == "__main__":
    main()
