"""The wire log's lines (the AHP inspector's JSONL), redaction, file mode and size bound."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

from ahp_bridge.host.transport.wirelog import REDACTED, WireLog, wire_line

NOW = datetime(2026, 5, 11, 17, 11, 14, 356000, tzinfo=UTC)


def line(frame: str | bytes, direction: str = "c2s") -> dict:  # type: ignore[type-arg]
    raw = wire_line(frame, direction, "conn-1", now=NOW)  # type: ignore[arg-type]
    assert raw.endswith(b"\n") and raw.count(b"\n") == 1
    parsed: dict = json.loads(raw)  # type: ignore[type-arg]
    return parsed


def test_a_frame_is_the_message_plus_the_inspector_sidecar() -> None:
    frame = '{"jsonrpc":"2.0","id":1,"method":"ping","params":{}}'
    entry = line(frame)
    meta = entry.pop("_ahpLog")
    assert entry == json.loads(frame)  # the message itself, key for key
    # What roblourens/ahp-inspector reads (`extractWireMeta`): ts as ISO-8601, dir c2s|s2c.
    assert meta == {
        "ts": "2026-05-11T17:11:14.356Z",
        "dir": "c2s",
        "connectionId": "conn-1",
        "transport": "websocket",
        "byteLength": len(frame),
    }
    assert line(frame, "s2c")["_ahpLog"]["dir"] == "s2c"


def test_splicing_equals_parsing() -> None:
    """Frames without secrets are not re-encoded; the line must still be the same JSON."""
    frames = [
        '{"jsonrpc":"2.0","method":"action","params":{"serverSeq":3,"action":{"type":"x"}}}',
        '{ "a" : [1, {"b": "}"}] }  ',
        "{}",
        '{"text":"unicode é ✓ \\n"}',
    ]
    for frame in frames:
        entry = line(frame)
        entry.pop("_ahpLog")
        assert entry == json.loads(frame)


def test_tokens_are_redacted_wherever_they_are() -> None:
    frame = json.dumps(
        {
            "jsonrpc": "2.0",
            "id": 7,
            "method": "authenticate",
            "params": {"resource": "https://api.github.com", "token": "gho_SECRET"},
        }
    )
    raw = wire_line(frame, "c2s", "conn-1")
    assert b"gho_SECRET" not in raw
    assert json.loads(raw)["params"] == {"resource": "https://api.github.com", "token": REDACTED}
    nested = json.dumps({"a": [{"connectionToken": "x-SECRET"}], "b": {"tkn": "y-SECRET"}})
    assert b"SECRET" not in wire_line(nested, "s2c", "c")


def test_a_frame_that_is_not_an_object_stays_one_json_line() -> None:
    assert line("not json\nat all")["_raw"] == "not json\nat all"
    assert line("[1, 2]")["_raw"] == "[1, 2]"
    assert line('not json "token": x')["_raw"] == REDACTED
    binary = line(b"\x00\x01\x02")
    assert binary["_binary"] == 3 and binary["_ahpLog"]["byteLength"] == 3


def test_the_file_is_private_and_bounded(tmp_path: Path) -> None:
    path = tmp_path / "wire.jsonl"
    path.write_text("")
    path.chmod(0o644)  # an existing file is narrowed too
    log = WireLog(path, max_bytes=4096)
    frame = json.dumps({"jsonrpc": "2.0", "method": "action", "params": {"pad": "x" * 200}})
    for _ in range(100):
        log.record(frame, "s2c", "conn-1")
    log.close()
    rotated = tmp_path / "wire.jsonl.1"
    assert path.stat().st_mode & 0o777 == 0o600
    assert rotated.stat().st_mode & 0o777 == 0o600
    assert path.stat().st_size <= 4096 and rotated.stat().st_size <= 4096
    for file in (path, rotated):
        for text in file.read_text().splitlines():
            assert json.loads(text)["params"]["pad"] == "x" * 200  # whole lines only
    total = len(path.read_text().splitlines()) + len(rotated.read_text().splitlines())
    assert 0 < total < 100  # older lines were let go: at most twice the bound is kept


def test_a_write_failure_turns_the_log_off(tmp_path: Path) -> None:
    log = WireLog(tmp_path / "wire.jsonl")
    log._file.close()
    log._file = open("/dev/full", "wb", buffering=0)  # noqa: SIM115 - every write: ENOSPC
    log.record("{}", "c2s", "conn-1")  # logged, not raised
    assert log.closed
    log.record("{}", "c2s", "conn-1")
