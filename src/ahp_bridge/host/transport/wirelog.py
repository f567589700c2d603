"""The wire log: every WebSocket frame in and out, one JSON object per line, for debugging.

The format is the one VS Code's agent host writes and the public AHP inspector
(github.com/roblourens/ahp-inspector) reads: each line is the JSON-RPC message itself with one
extra root-level key, `_ahpLog: {ts, dir, connectionId, transport, byteLength}`, where `ts` is an
ISO-8601 UTC time, `dir` is `c2s` (client to host) or `s2c` from the client's point of view
(provenance: microsoft/vscode `src/vs/platform/agentHost/common/ahpJsonlLogger.ts` `log()`, and
roblourens/ahp-inspector `packages/parser/src/wire-meta.ts` `extractWireMeta`). A frame that is
not a JSON object is kept as `{"_ahpLog": {...}, "_raw": "<text>"}` so the line stays JSON.

The log holds transcripts (prompts, answers, tool output): it is created with mode 0600, and
the value of every `token` key (the `authenticate` request's credential) is replaced by
`"<redacted>"`. It is bounded: past `max_bytes` the file is moved to `<file>.1` (replacing an
older one) and a new file begun, so at most twice the limit is on disk. Writes go straight to
the file from the trio thread, a cost paid only while the log is on.
"""

from __future__ import annotations

import os
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

import orjson
import structlog

log = structlog.get_logger(__name__)

Direction = Literal["c2s", "s2c"]

REDACTED = "<redacted>"
_SECRET_KEYS = frozenset({"token", "tkn", "connectionToken"})


def _redact(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: REDACTED if k in _SECRET_KEYS else _redact(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_redact(v) for v in value]
    return value


def _may_hold_secret(text: str) -> bool:
    return any(f'"{key}"' in text for key in _SECRET_KEYS)


def wire_line(
    frame: str | bytes, direction: Direction, connection: str, *, now: datetime | None = None
) -> bytes:
    """One log line (with its newline) for one frame."""
    meta = {
        "ts": (now or datetime.now(UTC)).isoformat(timespec="milliseconds").replace("+00:00", "Z"),
        "dir": direction,
        "connectionId": connection,
        "transport": "websocket",
        "byteLength": len(frame.encode() if isinstance(frame, str) else frame),
    }
    if isinstance(frame, bytes):
        return orjson.dumps({"_ahpLog": meta, "_binary": len(frame)}) + b"\n"
    text = frame.strip()
    if text.startswith("{") and text.endswith("}") and not _may_hold_secret(text):
        # The frame is already JSON: splice the sidecar in rather than parse and re-encode it.
        body = text[:-1].rstrip()
        sep = "" if body == "{" else ","
        return f'{body}{sep}"_ahpLog":'.encode() + orjson.dumps(meta) + b"}\n"
    try:
        message = orjson.loads(text)
    except orjson.JSONDecodeError:
        message = None
    if isinstance(message, dict):
        message = _redact(message)
        message["_ahpLog"] = meta
        return orjson.dumps(message) + b"\n"
    return orjson.dumps({"_ahpLog": meta, "_raw": REDACTED if _may_hold_secret(text) else text}) + (
        b"\n"
    )


class WireLog:
    """An append-only JSONL file of frames, rotated once it passes `max_bytes`."""

    def __init__(self, path: Path, *, max_bytes: int = 64 * 1024 * 1024) -> None:
        self.path = Path(path)
        self.max_bytes = max_bytes
        self._file = self._open()
        self._size = self._file.tell()
        self.closed = False

    def _open(self) -> Any:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        os.fchmod(fd, 0o600)  # an existing file keeps no wider mode than a new one
        return os.fdopen(fd, "ab", buffering=0)

    def record(self, frame: str | bytes, direction: Direction, connection: str) -> None:
        """Append one frame; an I/O failure turns the log off (the bridge keeps serving)."""
        if self.closed:
            return
        line = wire_line(frame, direction, connection)
        try:
            if self._size and self._size + len(line) > self.max_bytes:
                self._rotate()
            self._file.write(line)
        except OSError as exc:
            log.error(
                "wire log write failed; the wire log is off", path=str(self.path), error=str(exc)
            )
            self.close()
            return
        self._size += len(line)

    def _rotate(self) -> None:
        self._file.close()
        os.replace(self.path, self.path.with_name(self.path.name + ".1"))
        self._file = self._open()
        self._size = 0

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self._file.close()
