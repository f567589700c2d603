"""The session corpus: what the recorder writes, what the normaliser makes of it, and that
`scripts/corpus.py diff` reports a real difference (a changed field, a missing frame, a
reordered pair, an id used inconsistently) while run-to-run noise compares equal."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from trio_websocket import ConnectionClosed

from tests.support import corpus as recorder

ROOT = Path(__file__).resolve().parents[2]


def _script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("corpus_script", ROOT / "scripts/corpus.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


cs = _script()

S1 = "0b7c3c8e-5d1a-4e57-9d0a-3f1f8a3c2b11"  # a session the client made up
C1 = "9f4a2f7e-1c3b-4d2e-8a6b-7c5d4e3f2a10"  # the chat the host made for it
P1 = "11111111-2222-4333-8444-555555555555"  # a part id
TMP = "/tmp/pytest-of-root/pytest-41/test_x0"
#: A client's own timestamp, which the host echoes.
STARTED = {"type": "chat/turnStarted", "turnId": "t2", "startedAt": "2026-01-01T00:00:00.000Z"}


def env(channel: str, action: dict[str, Any], seq: int | str) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "method": "action",
        "params": {"channel": channel, "action": action, "serverSeq": seq},
    }


def delta(content: str, seq: int) -> dict[str, Any]:
    action = {"type": "chat/delta", "turnId": "t1", "partId": P1, "content": content}
    return env(f"ahp-chat:/{C1}", action, seq)


def session(
    *, deltas: tuple[str, ...] = ("Hel", "lo"), now: str = "2026-12-01T19:32:18.377Z"
) -> list[tuple[str, Any]]:
    """One connection's messages in order: (direction, frame). `now` is the host's clock."""
    e = 2 << 32
    return [
        ("out", {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "channel": "ahp-root://", "protocolVersions": ["1.0.0"], "clientId": "c1"}}),
        ("in", {"jsonrpc": "2.0", "id": 1, "result": {
            "protocolVersion": "1.0.0", "serverSeq": e, "defaultDirectory": f"file://{TMP}"}}),
        ("out", {"jsonrpc": "2.0", "id": 2, "method": "subscribe", "params": {
            "channel": f"ahp-chat:/{C1}"}}),
        ("in", {"jsonrpc": "2.0", "method": "root/sessionSummaryChanged", "params": {
            "channel": "ahp-root://", "session": f"ahp-session:/{S1}",
            "changes": {"modifiedAt": now}}}),
        ("in", {"jsonrpc": "2.0", "id": 2, "result": {"snapshot": {
            "resource": f"ahp-chat:/{C1}", "state": {"modifiedAt": now}, "fromSeq": e + 3}}}),
        *(("in", delta(d, e + 4 + i)) for i, d in enumerate(deltas)),
        ("in", env(f"ahp-chat:/{C1}", {
            "type": "chat/turnComplete", "turnId": "t1", "duration": 731}, e + 9)),
        ("out", {"jsonrpc": "2.0", "method": "dispatchAction", "params": {
            "channel": f"ahp-chat:/{C1}", "clientSeq": 1, "action": STARTED}}),
        ("in", {**env(f"ahp-chat:/{C1}", STARTED, e + 10),
                "origin": {"clientId": "c1", "clientSeq": 1}}),
    ]  # fmt: skip


class FakeSocket:
    """What `record` wraps: send_message and get_message (then a close)."""

    def __init__(self, incoming: list[str]) -> None:
        self.incoming = incoming
        self.sent: list[str] = []

    async def send_message(self, message: str) -> None:
        self.sent.append(message)

    async def get_message(self) -> str:
        if not self.incoming:
            raise ConnectionClosed(None)
        return self.incoming.pop(0)


async def record(folder: Path, monkeypatch: pytest.MonkeyPatch, messages: Any, name: str) -> Path:
    """Play `messages` through a recorded socket, as a test named `name` would."""
    monkeypatch.setattr(recorder, "CORPUS_DIR", str(folder))
    recorder.begin(f"tests/e2e/test_x.py::{name}")
    incoming = [json.dumps(m, separators=(",", ":")) for d, m in messages if d == "in"]
    ws = recorder.record(FakeSocket(incoming), "ws://127.0.0.1:41323/?tkn=s3cret")  # type: ignore[arg-type]
    for direction, message in messages:
        if direction == "out":
            await ws.send_message(json.dumps(message, separators=(",", ":")))
        else:
            await ws.get_message()
    with pytest.raises(ConnectionClosed):
        await ws.get_message()
    path = recorder.end()
    assert path is not None
    return path


async def test_the_recorder_writes_each_frame_with_direction_client_and_version(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = await record(tmp_path, monkeypatch, session(), "test_one[0.7]")
    assert path.name == "tests_e2e_test_x.py--test_one_0.7.jsonl"
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert lines[0] == {"test": "tests/e2e/test_x.py::test_one[0.7]", "corpus": 1}
    assert lines[1] == {
        "conn": 1,
        "client": "c1",
        "version": "1.0.0",
        "url": "ws://127.0.0.1:41323/?tkn=s3cret",
    }
    frames = lines[2:]
    assert [(f["dir"], f.get("version")) for f in frames[:3]] == [
        ("out", None),
        ("in", "1.0.0"),  # known from the initialize result on
        ("out", "1.0.0"),
    ]
    assert json.loads(frames[0]["text"])["method"] == "initialize"
    assert frames[-1] == {"conn": 1, "dir": "close", "code": None, "reason": None}
    assert len(frames) == len(session()) + 1


async def test_unset_the_recorder_returns_the_socket_untouched(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(recorder, "CORPUS_DIR", None)
    ws = FakeSocket([])
    assert recorder.record(ws, "ws://127.0.0.1:1/") is ws  # type: ignore[arg-type]
    assert "send_message" not in vars(ws)
    assert recorder.end() is None


async def test_the_normalised_frames_are_exactly_these(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = await record(tmp_path, monkeypatch, session(), "test_one")
    test = cs.normalise(cs.load_file(path.read_text().split("\n")))
    conn = test.connections[1]
    assert (conn.client, conn.version, conn.url) == (
        "c1",
        "1.0.0",
        "ws://127.0.0.1:<port>/?tkn=<token>",
    )
    seq, chat = "<seq e2>", "ahp-chat:/<uuid-1>"
    started = {**STARTED}
    expected = [
        ("out", {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "channel": "ahp-root://", "protocolVersions": ["1.0.0"], "clientId": "c1"}}),
        ("response", {"jsonrpc": "2.0", "id": 1, "result": {
            "protocolVersion": "1.0.0", "serverSeq": seq,
            "defaultDirectory": "file://<tmp>/test_x0"}}),
        ("out", {"jsonrpc": "2.0", "id": 2, "method": "subscribe", "params": {"channel": chat}}),
        # the clock-only summary change is gone (rule 9)
        ("response", {"jsonrpc": "2.0", "id": 2, "result": {"snapshot": {
            "resource": chat, "state": {"modifiedAt": "<time>"}, "fromSeq": seq}}}),
        # two deltas, one envelope (rule 10); the part id is the second id seen
        (f"action {chat}", env(chat, {
            "type": "chat/delta", "turnId": "t1", "partId": "<uuid-2>", "content": "Hello"}, seq)),
        # the host's duration goes ...
        (f"action {chat}", env(chat, {
            "type": "chat/turnComplete", "turnId": "t1", "duration": "<ms>"}, seq)),
        ("out", {"jsonrpc": "2.0", "method": "dispatchAction", "params": {
            "channel": chat, "clientSeq": 1, "action": started}}),
        # ... the client's own time stays
        (f"action {chat}", {**env(chat, started, seq),
                            "origin": {"clientId": "c1", "clientSeq": 1}}),
    ]  # fmt: skip
    assert [(f.stream, f.text) for f in conn.frames] == [
        *((stream, json.dumps(frame, separators=(",", ":"))) for stream, frame in expected),
        ("close", "close None"),
    ]


def two(tmp_path: Path, old: Path, new: Path) -> Any:
    """`diff` of two single-test corpora."""
    a, b = tmp_path / "a", tmp_path / "b"
    for folder, path in ((a, old), (b, new)):
        folder.mkdir(exist_ok=True)
        (folder / "t.jsonl").write_text(path.read_text())
    return cs.diff(cs.load(a), cs.load(b), set())


async def test_run_dependent_noise_compares_equal(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    old = await record(tmp_path / "1", monkeypatch, session(), "test_one")
    # Another run: other ids, another clock, the burst cut in three, the summary change
    # arriving after the response.
    other = session(deltas=("H", "el", "lo"), now="2026-12-02T08:00:00.001Z")
    other[3], other[4] = other[4], other[3]
    text = json.dumps(other).replace(C1, "5e0d1c2b-3a49-4f8e-9d7c-6b5a4f3e2d1c")
    text = text.replace("pytest-41", "pytest-42/popen-gw3")  # a run in pytest-xdist's worker 3
    new = await record(tmp_path / "2", monkeypatch, json.loads(text), "test_one")
    report = two(tmp_path, old, new)
    assert report.differences == []
    assert report.tests["identical"] == 1 and report.connections["identical"] == 1


@pytest.mark.parametrize(
    ("change", "what", "at"),
    [
        ("field", "stream 'action ahp-chat:/<uuid-1>' differs", 1),
        ("missing", "stream 'action ahp-chat:/<uuid-1>' differs", 1),
        ("answer", "stream 'response': 2 / 1 frames", 1),
        ("reordered", "stream 'action ahp-chat:/<uuid-1>' differs", 0),
        ("ids", "stream 'action ahp-chat:/<uuid-1>' differs", 1),
    ],
)
async def test_a_real_difference_is_reported_with_its_first_differing_pair(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, change: str, what: str, at: int
) -> None:
    old_messages = session(deltas=("Hello",))
    new_messages = session(deltas=("Hello",))
    done = new_messages[6][1]["params"]["action"]
    if change == "field":
        done["turnId"] = "t2"
    elif change == "missing":
        del new_messages[6]  # before the client's last send: not the end of the connection
    elif change == "answer":
        del new_messages[4]  # the subscribe went unanswered
    elif change == "reordered":
        new_messages[5], new_messages[6] = new_messages[6], new_messages[5]
    else:  # the delta's part named again, by a fresh id on one side only
        old_messages[6][1]["params"]["action"]["partId"] = P1
        done["partId"] = "22222222-3333-4444-8555-666666666666"
    old = await record(tmp_path / "1", monkeypatch, old_messages, "test_one")
    new = await record(tmp_path / "2", monkeypatch, new_messages, "test_one")
    report = two(tmp_path, old, new)
    [difference] = report.differences
    assert (difference.test, difference.conn, difference.what, difference.at) == (
        "tests/e2e/test_x.py::test_one",
        1,
        what,
        at,
    )
    assert report.failed and report.tests["different"] == 1
    shown = cs.show(difference, 2000)
    assert shown.startswith(f"* tests/e2e/test_x.py::test_one conn 1: {what} (frame {at})")
    assert "OLD" in shown and "NEW" in shown


async def test_a_frame_missing_after_the_last_send_is_the_end_of_the_connection(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    old = await record(tmp_path / "1", monkeypatch, session(), "test_one")
    shorter = session()
    del shorter[-1]  # the echo had not arrived when the test closed
    new = await record(tmp_path / "2", monkeypatch, shorter, "test_one")
    report = two(tmp_path, old, new)
    assert report.differences == []
    assert report.notes["streams cut at the end (rule 13)"] == 1


async def test_a_difference_the_baseline_shows_too_is_reported_apart(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    changed = session()
    changed[6][1]["params"]["action"]["turnId"] = "t2"
    folders = []
    for name, messages in (("old", session()), ("new", changed), ("again", changed)):
        path = await record(tmp_path / name, monkeypatch, messages, "test_one")
        folders.append(str(path.parent))
    old, new, again = folders
    none = str(tmp_path / "no-list.txt")
    assert cs.main(["diff", old, new, "--unstable", none]) == 1
    # a second recording of the old code differs the same way: noise, not a change
    assert cs.main(["diff", old, new, "--unstable", none, "--baseline", again]) == 0
    out = capsys.readouterr().out
    assert f"unstable in the baseline {again}: tests/e2e/test_x.py::test_one" in out
    assert "tests: compared 1, different, listed unstable 1" in out
