"""Record every frame test clients exchange with a bridge: a behaviour corpus of whole sessions.

With ``AHP_CORPUS_DIR`` set, every client socket passed to :func:`record` (all of them go through
``tests.support.ahp_client.connect``) keeps, in memory and in order, each message it sends and
receives, and at the end of each test (``pytest_runtest_protocol`` in ``tests/conftest.py``) the
test's connections are written to one JSONL file in that folder, named from the test's node id.
``scripts/corpus.py diff`` compares two such folders. Unset, :func:`record` returns the socket
untouched and nothing else runs: no overhead and no change of behaviour.

Recording adds no checkpoint: a sent message is appended before the real ``send_message`` is
awaited (so it precedes anything the host answers to it), a received one after ``get_message``
returned; nothing is parsed or written until the test is over.

File layout, one JSON object per line:

* ``{"test": NODEID, "corpus": 1}`` first;
* per connection, in the order they opened: ``{"conn": N, "client": ID, "version": V,
  "url": URL}`` (``client`` is the id given to :func:`record` or else the ``clientId`` of the
  first ``initialize`` sent; ``version`` the ``protocolVersion`` its result chose, or null),
  then its messages ``{"conn": N, "dir": "out"|"in"|"unsent", "client": ID, "version": V-or-null,
  "text": TEXT}`` (``version`` is null until the ``initialize`` result arrived; a binary message
  has ``"bytes": BASE64`` instead of ``text``; ``unsent``: a send that found the socket closed),
  and a last ``{"conn": N, "dir": "close", "code": C, "reason": R}`` when the client saw the
  socket close.
"""

from __future__ import annotations

import base64
import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from trio_websocket import ConnectionClosed, WebSocketConnection

#: Where to write; None: not recording (read once, at import, so an unset variable costs nothing).
CORPUS_DIR: str | None = os.environ.get("AHP_CORPUS_DIR") or None

_UNSAFE = re.compile(r"[^A-Za-z0-9._=+-]+")


@dataclass
class _Connection:
    index: int
    url: str
    client_id: str | None
    #: (direction, message) in the order the client saw them.
    messages: list[tuple[str, str | bytes]] = field(default_factory=list)
    close: tuple[int | None, str | None] | None = None


@dataclass
class _Test:
    nodeid: str
    connections: list[_Connection] = field(default_factory=list)


_current: _Test | None = None
_written: set[str] = set()


def begin(nodeid: str) -> None:
    """A test starts: the connections opened from now on are its, numbered from 1."""
    global _current
    _current = _Test(nodeid)


def end() -> Path | None:
    """The test is over: write its connections (if it opened any); the file written."""
    global _current
    test, _current = _current, None
    if CORPUS_DIR is None or test is None or not test.connections:
        return None
    path = Path(CORPUS_DIR) / file_name(test.nodeid)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as out:
        for line in lines(test):
            out.write(json.dumps(line, ensure_ascii=False) + "\n")
    return path


def file_name(nodeid: str) -> str:
    """A file name for a node id: unsafe runs of characters become `_`; a name that another
    node id of this session already produced gets a numeric suffix."""
    stem = _UNSAFE.sub("_", nodeid.replace("::", "--")).strip("_")[:200]
    name, n = stem, 1
    while name in _written:
        n += 1
        name = f"{stem}~{n}"
    _written.add(name)
    return name + ".jsonl"


def record(ws: WebSocketConnection, url: str, client_id: str | None = None) -> WebSocketConnection:
    """Record what `ws` (a client socket to `url`) sends and receives, when recording."""
    if CORPUS_DIR is None:
        return ws
    test = _current if _current is not None else _orphan()
    conn = _Connection(len(test.connections) + 1, url, client_id)
    test.connections.append(conn)
    send, get = ws.send_message, ws.get_message

    async def send_message(message: str | bytes) -> None:
        at = len(conn.messages)
        conn.messages.append(("out", message))
        try:
            await send(message)
        except ConnectionClosed:
            conn.messages[at] = ("unsent", message)  # the socket was closed already
            raise

    async def get_message() -> str | bytes:
        try:
            message = await get()
        except ConnectionClosed as closed:
            if conn.close is None:
                reason = closed.reason
                conn.close = (getattr(reason, "code", None), getattr(reason, "reason", None))
            raise
        conn.messages.append(("in", message))
        return message

    # WebSocketConnection instances have a __dict__: these shadow the methods for this one only.
    ws.send_message = send_message  # type: ignore[method-assign]
    ws.get_message = get_message  # type: ignore[method-assign]
    return ws


def _orphan() -> _Test:
    """Connections opened outside a test's protocol (no hook ran): kept under the test pytest
    says is current."""
    global _current
    nodeid = os.environ.get("PYTEST_CURRENT_TEST", "unknown").rsplit(" (", 1)[0]
    _current = _Test(nodeid)
    return _current


def _negotiated(conn: _Connection) -> tuple[str | None, str | None, int | None]:
    """(clientId, protocolVersion, index of the message that chose it) from the first initialize
    the connection sent and the result that answered it."""
    client_id, version, at, init_id = conn.client_id, None, None, None
    for i, (direction, message) in enumerate(conn.messages):
        frame = _json(message)
        if not isinstance(frame, dict):
            continue
        if direction == "out" and init_id is None and frame.get("method") == "initialize":
            init_id = frame.get("id")
            params = frame.get("params")
            if client_id is None and isinstance(params, dict):
                found = params.get("clientId")
                client_id = found if isinstance(found, str) else None
        elif direction == "in" and init_id is not None and frame.get("id") == init_id:
            result = frame.get("result")
            if isinstance(result, dict) and isinstance(result.get("protocolVersion"), str):
                version, at = result["protocolVersion"], i
            break
    return client_id, version, at


def _json(message: str | bytes) -> Any:
    if not isinstance(message, str) or not message.startswith("{"):
        return None
    try:
        return json.loads(message)
    except ValueError:
        return None


def lines(test: _Test) -> list[dict[str, Any]]:
    """The JSONL records of one test (see the module docstring)."""
    out: list[dict[str, Any]] = [{"test": test.nodeid, "corpus": 1}]
    for conn in test.connections:
        client_id, version, at = _negotiated(conn)
        out.append({"conn": conn.index, "client": client_id, "version": version, "url": conn.url})
        for i, (direction, message) in enumerate(conn.messages):
            line: dict[str, Any] = {
                "conn": conn.index,
                "dir": direction,
                "client": client_id,
                "version": version if at is not None and i >= at else None,
            }
            if isinstance(message, str):
                line["text"] = message
            else:
                line["bytes"] = base64.b64encode(message).decode()
            out.append(line)
        if conn.close is not None:
            code, reason = conn.close
            out.append({"conn": conn.index, "dir": "close", "code": code, "reason": reason})
    return out
