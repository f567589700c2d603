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
TMP_ROOT = "/tmp/pytest-of-root/pytest-41"
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
        "ws://127.0.0.1:<port>",  # the token query and the bare `/` go (rule 3)
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


async def test_an_intended_change_compares_equal_and_is_counted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    changed = session(deltas=("Hello",))
    changed[6][1]["params"]["action"]["turnId"] = "t2"
    old = await record(tmp_path / "1", monkeypatch, session(deltas=("Hello",)), "test_one")
    new = await record(tmp_path / "2", monkeypatch, changed, "test_one")

    def same_turn(frame: Any) -> Any:
        action = frame.get("params", {}).get("action") if isinstance(frame, dict) else None
        if isinstance(action, dict) and action.get("type") == "chat/turnComplete":
            action["turnId"] = "t1"
            return frame
        return None

    rule = cs.Intended("turn t2 is t1 (on purpose)", same_turn)
    loaded = cs.load(old.parent), cs.load(new.parent)
    assert cs.diff(*loaded, set()).failed  # without it: a difference
    report = cs.diff(*loaded, set(), [rule])
    assert report.differences == [] and report.tests["identical"] == 1
    assert report.intended["new"]["turn t2 is t1 (on purpose)"] == 1
    assert "turn t2 is t1 (on purpose): old 1, new 1" in cs.summary(report)


async def test_a_test_that_sends_other_frames_is_inputs_changed_not_a_difference(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    changed = session(deltas=("Hello",))
    changed[7][1]["params"]["clientSeq"] = 2  # the test itself sends another frame
    old = await record(tmp_path / "1", monkeypatch, session(deltas=("Hello",)), "test_one")
    new = await record(tmp_path / "2", monkeypatch, changed, "test_one")
    report = two(tmp_path, old, new)
    assert report.differences == [] and not report.failed, report.differences
    assert report.tests["inputs changed"] == 1
    [d] = report.inputs
    assert d.what == "inputs changed: stream 'out' differs" and d.at == 2


def frames_of(path: Path, conn: int = 1, **kwargs: Any) -> list[tuple[str, str]]:
    test = cs.normalise(cs.load_file(path.read_text().split("\n")), **kwargs)
    return [(f.stream, f.text) for f in test.connections[conn].frames]


async def test_the_checkout_and_pytests_folder_numbers_are_normalised(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    messages = session()
    result = messages[1][1]["result"]
    result["defaultDirectory"] = "file:///work/old"
    result["workingDirectories"] = [
        f"file://{TMP_ROOT}/test_a_move_or_copy_onto_or_of5/work",
        f"file://{TMP}/work",
    ]
    path = await record(tmp_path, monkeypatch, messages, "test_one")
    [(_, text)] = [f for f in frames_of(path, root="/work/old") if f[0] == "response"][:1]
    assert '"defaultDirectory":"file://<repo>"' in text
    assert "<tmp>/test_a_move_or_copy_onto_or_of<n>/work" in text
    # Without the root the checkout stays; a short folder name keeps its number.
    assert '"defaultDirectory":"file:///work/old"' in frames_of(path)[1][1]
    assert "<tmp>/test_x0/work" in frames_of(path)[1][1]


async def test_intended_changes_rewrite_both_sides_and_are_counted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The changes made on purpose compare equal: the lines served, the one wording, the 50
    live turns, the goodbye; anything else in the same frames still differs."""
    old_messages, new_messages = session(), session()
    old_messages[1][1]["result"]["_meta"] = {"ahpBridge.supportedVersions": [">=1.0.0 <2.0.0"]}
    new_messages[1][1]["result"]["_meta"] = {
        "ahpBridge.supportedVersions": [">=1.0.0 <2.0.0", ">=0.6.0 <0.7.0"]
    }
    turns = [{"id": f"t{i}"} for i in range(54)]
    old_messages[4][1]["result"]["snapshot"]["state"]["turns"] = turns
    new_messages[4][1]["result"]["snapshot"]["state"].update(turns=turns[4:], turnsNextCursor="1~4")
    old = await record(tmp_path / "1", monkeypatch, old_messages, "test_one")
    new = await record(tmp_path / "2", monkeypatch, new_messages, "test_one")
    loaded = cs.load(old.parent), cs.load(new.parent)
    assert cs.diff(*loaded, set()).failed  # without them
    report = cs.diff(*loaded, set(), cs.INTENDED)
    assert report.differences == [], report.differences
    assert report.intended["new"]["issue 21: five wire lines served"] == 1
    assert report.intended["new"]["issue 23: a chat keeps its last 50 turns live"] == 1
    # A 51st live turn on one side only is still a difference.
    new_messages[4][1]["result"]["snapshot"]["state"]["turns"] = turns[3:]
    new = await record(tmp_path / "3", monkeypatch, new_messages, "test_one")
    assert cs.diff(cs.load(old.parent), cs.load(new.parent), set(), cs.INTENDED).failed


@pytest.mark.parametrize(
    ("old_reason", "new_reason", "same"),
    [
        ("turn t1 is still active", "turn t1 is still running: cancel it or wait until it ends", 1),
        ("turn t1 is still active", "turn t2 is still running: cancel it or wait until it ends", 0),
        ("busy", "turn t1 is still running: cancel it or wait until it ends", 0),
    ],
)
def test_the_one_wording_rule_rewrites_that_refusal_only(
    old_reason: str, new_reason: str, same: int
) -> None:
    def refused(reason: str) -> Any:
        frame = env("ahp-chat:/c", STARTED, 1)
        frame["params"]["rejectionReason"] = reason
        return frame

    rules = cs.INTENDED
    a, _ = cs._intended(refused(old_reason), rules, None)
    b, _ = cs._intended(refused(new_reason), rules, None)
    assert (a == b) == bool(same)


async def test_a_goodbye_compares_with_the_drop_it_replaced(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    old = await record(tmp_path / "1", monkeypatch, session(), "test_one")
    new = await record(tmp_path / "2", monkeypatch, session(), "test_one")
    for path, (code, reason) in (
        (old, (1006, None)),
        (new, (1001, "going away: the bridge is stopping; reconnect when it is back")),
    ):
        lines = path.read_text().splitlines()
        lines[-1] = json.dumps({"conn": 1, "dir": "close", "code": code, "reason": reason})
        path.write_text("\n".join(lines) + "\n")
    loaded = cs.load(old.parent), cs.load(new.parent)
    assert cs.diff(*loaded, set()).failed
    report = cs.diff(*loaded, set(), cs.INTENDED)
    assert report.differences == [] and report.tests["identical"] == 1
    assert report.intended["new"]["issue 23: a goodbye (1001) when the bridge stops"] == 1


async def test_a_1009_in_the_hosts_words_compares_with_the_librarys(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    old = await record(tmp_path / "1", monkeypatch, session(), "test_one")
    new = await record(tmp_path / "2", monkeypatch, session(), "test_one")
    for path, reason in (
        (old, "Exceeded maximum message size: 65536 bytes"),
        (new, "a message over server.max_frame_bytes (65,536 bytes): send less in one message"),
    ):
        lines = path.read_text().splitlines()
        lines[-1] = json.dumps({"conn": 1, "dir": "close", "code": 1009, "reason": reason})
        path.write_text("\n".join(lines) + "\n")
    loaded = cs.load(old.parent), cs.load(new.parent)
    assert cs.diff(*loaded, set()).failed
    report = cs.diff(*loaded, set(), cs.INTENDED)
    assert report.differences == [] and report.tests["identical"] == 1
    assert report.intended["new"]["issue 25: a 1009 names the key that bounds a message"] == 1


async def test_a_subscribe_that_raced_and_a_tail_that_never_came_compare_equal(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Rules 12 and 13 at once: one side's snapshot was taken an envelope later (so that
    envelope is not in its stream), and the other's last envelope came after its last send."""
    base = session(deltas=("Hello",))
    raced = session(deltas=("Hello",))
    raced[4][1]["result"]["snapshot"]["state"]["parts"] = 1  # taken after the delta
    del raced[5]  # so the delta is not in its stream
    del base[-1]  # and base's last envelope came after the client closed
    old = await record(tmp_path / "1", monkeypatch, base, "test_one")
    new = await record(tmp_path / "2", monkeypatch, raced, "test_one")
    report = two(tmp_path, old, new)
    assert report.differences == [], report.differences
    assert report.notes["subscribes raced (rule 12)"] == 1


async def test_renamed_tests_are_paired_and_a_new_test_is_no_failure(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    before, after = next(iter(cs.RENAMED.items()))
    old = await record(tmp_path / "1", monkeypatch, session(), "x")
    new = await record(tmp_path / "2", monkeypatch, session(), "x")
    added = await record(tmp_path / "2", monkeypatch, session(), "test_brand_new")
    for path, nodeid in ((old, before), (new, after)):
        lines = path.read_text().splitlines()
        lines[0] = json.dumps({"test": nodeid, "corpus": 1})
        path.write_text("\n".join(lines) + "\n")
    report = cs.diff(cs.load(old.parent), cs.load(new.parent), set())
    assert report.notes["tests renamed"] == 1 and report.tests["identical"] == 1
    assert report.new_tests == ["tests/e2e/test_x.py::test_brand_new"] and added.exists()
    assert not report.failed


async def test_a_repinned_agents_differences_are_its_inputs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    module = next(iter(cs.REPINNED))
    changed = session()
    changed[6][1]["params"]["action"]["turnId"] = "t2"
    old = await record(tmp_path / "1", monkeypatch, session(), "x")
    new = await record(tmp_path / "2", monkeypatch, changed, "x")
    for path in (old, new):
        lines = path.read_text().splitlines()
        lines[0] = json.dumps({"test": f"{module}::test_one", "corpus": 1})
        path.write_text("\n".join(lines) + "\n")
    report = cs.diff(cs.load(old.parent), cs.load(new.parent), set())
    assert report.differences == [] and report.tests["inputs changed"] == 1
    [d] = report.inputs
    assert d.what.startswith("inputs changed: the agent")


async def test_another_client_id_or_connection_is_the_tests_input(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    renamed = json.loads(json.dumps(session()).replace('"c1"', '"c2"'))
    old = await record(tmp_path / "1", monkeypatch, session(), "test_one")
    new = await record(tmp_path / "2", monkeypatch, renamed, "test_one")
    report = two(tmp_path, old, new)
    assert report.differences == [] and report.tests["inputs changed"] == 1
    assert report.inputs[0].what == "inputs changed: the client id"


async def test_a_shared_bridges_session_count_is_the_schedulers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    module = next(iter(cs.SHARED_BRIDGE))
    messages = [session(), session()]
    for n, m in enumerate(messages):
        m[1][1]["result"]["snapshots"] = [{"resource": "ahp-root://", "state": {
            "activeSessions": n}}]  # fmt: skip
        m[1][1]["result"]["defaultDirectory"] = f"file://{TMP_ROOT}/fuzz-params{n}"
    paths = []
    for n, m in enumerate(messages):
        path = await record(tmp_path / str(n), monkeypatch, m, "x")
        lines = path.read_text().splitlines()
        lines[0] = json.dumps({"test": f"{module}::test_one", "corpus": 1})
        path.write_text("\n".join(lines) + "\n")
        paths.append(path)
    report = cs.diff(cs.load(paths[0].parent), cs.load(paths[1].parent), set())
    assert report.differences == [] and report.tests["identical"] == 1
    # Elsewhere the count is compared.
    (tmp_path / "elsewhere").mkdir()
    assert two(tmp_path / "elsewhere", *[
        await record(tmp_path / f"e{n}", monkeypatch, m, "test_one") for n, m in enumerate(messages)
    ]).failed  # fmt: skip
