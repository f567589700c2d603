"""Newline-delimited JSON-RPC over the agent's stdio, hardened against a misbehaving agent.

The SDK's own stdio transport hands every decoded line to its connection, which assumes a
JSON-RPC object (a list or a non-string method crashes its receive loop) and logs parse errors
with tracebacks. This transport (the SDK's ``Transport`` seam) bounds each line, and drops what
is not a JSON-RPC request, notification or response before the connection sees it, logging only
the kind of fault and counting it, never the content.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import json
import logging
from collections.abc import Callable
from typing import Any

log = logging.getLogger(__name__)

_ID_TYPES = (int, str)


class AgentTransport:
    """One agent's stdio as a stream of JSON-RPC message dicts (``acp._transport.Transport``)."""

    def __init__(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, *, max_bytes: int
    ) -> None:
        self._reader = reader
        self._writer = writer
        self._max = max_bytes
        self.faults: collections.Counter[str] = collections.Counter()
        self.received = 0
        self.on_eof: Callable[[], None] | None = None
        """Called once when the agent's stdout ends (it can no longer answer anything)."""

    def _fault(self, kind: str) -> None:
        self.faults[kind] += 1
        log.warning("acp: dropped a message from the agent: %s", kind)

    async def send(self, message: dict[str, Any]) -> None:
        data = json.dumps(message, separators=(",", ":"), ensure_ascii=False).encode() + b"\n"
        if self._writer.is_closing():
            raise ConnectionError("the agent's stdin is closed")
        self._writer.write(data)
        await self._writer.drain()

    async def receive(self) -> dict[str, Any] | None:
        while True:
            line = await self._line()
            if line is None:
                if self.on_eof is not None:
                    self.on_eof()
                    self.on_eof = None
                return None
            line = line.strip()
            if not line:
                continue
            try:
                message = json.loads(line)
            except ValueError:
                self._fault("a line that is not JSON")
                continue
            kind = _malformed(message)
            if kind:
                self._fault(kind)
                continue
            self.received += 1
            return message

    async def _line(self) -> bytes | None:
        """The next line, or None at EOF; a line over the bound is skipped whole."""
        while True:
            try:
                return await self._reader.readuntil(b"\n")
            except asyncio.IncompleteReadError as exc:
                return exc.partial or None
            except asyncio.LimitOverrunError as exc:
                # Discard up to and including the newline, however long the line is.
                await self._reader.readexactly(exc.consumed)
                while True:
                    try:
                        await self._reader.readuntil(b"\n")
                        break
                    except asyncio.LimitOverrunError as more:
                        await self._reader.readexactly(more.consumed)
                    except asyncio.IncompleteReadError:
                        return None
                self._fault(f"a message over max_message_bytes ({self._max})")

    async def close(self) -> None:
        if not self._writer.is_closing():
            with contextlib.suppress(OSError, RuntimeError):
                self._writer.close()


def _malformed(message: Any) -> str:
    """Why ``message`` is no JSON-RPC message the connection can handle, or ""."""
    if not isinstance(message, dict):
        return f"a JSON {type(message).__name__} instead of an object"
    has_method = "method" in message
    if has_method and not isinstance(message["method"], str):
        return "a method that is not a string"
    if "id" in message:
        mid = message["id"]
        if isinstance(mid, bool) or not (mid is None or isinstance(mid, _ID_TYPES)):
            return "an id that is neither a number nor a string"
        if not has_method and "result" not in message and "error" not in message:
            return "a response without result or error"
        if not has_method and "error" in message and not isinstance(message["error"], dict):
            return "an error that is not an object"
    elif not has_method:
        return "neither a request, a notification nor a response"
    if "params" in message and not isinstance(message["params"], dict | list | type(None)):
        return "params that are neither an object nor an array"
    return ""
