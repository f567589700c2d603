"""File changes over real WebSockets, for a 1.0 and a 0.7 client: a tool call's edits as
`fileEdit` contents whose sides `resourceRead` serves, the session's and each turn's changesets
with their line counts, and undoing a turn (conversation and files) where the provider can."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest

from ahp_bridge.config import Settings
from tests.e2e.conftest import StartBridge
from tests.support.ahp_client import AhpClient, RpcFailure, create

SCRIPT = Path(__file__).parent / "scripts" / "changes.toml"
README = "# Project\n\nOld first paragraph.\nSecond line.\n"
NEW_README = "# Project\n\nA new first paragraph.\nSecond line.\n"
V1 = ("1.0.0", "0.9.0")
INVALID_PARAMS, NOT_FOUND = -32602, -32008


@pytest.fixture
def work(tmp_path: Path) -> Path:
    work = tmp_path / "work"
    work.mkdir()
    (work / "README.md").write_text(README)
    return work


@pytest.fixture
def settings(make_settings: Any, work: Path) -> Settings:
    settings: Settings = make_settings()
    settings.bridge.workdir = work
    settings.providers = {"fake": {"script": str(SCRIPT), "time_scale": 0.0}}
    return settings


async def run_turn(client: AhpClient, chat: str, text: str) -> dict[str, Any]:
    turn_id = str(uuid.uuid4())
    message = {"text": text, "origin": {"kind": "user"}}
    await client.dispatch(
        chat,
        {
            "type": "chat/turnStarted",
            "turnId": turn_id,
            "startedAt": "2026-01-01T00:00:00.000Z",
            "message": message,
        },
    )

    def done() -> dict[str, Any] | None:
        turns = client.states[chat].get("turns") or []
        return next((t for t in turns if t["id"] == turn_id), None)

    turn: dict[str, Any] = await client.wait_for(done)
    return turn


def tool_calls(turn: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        p["toolCall"]
        for p in turn.get("responseParts") or []
        if p.get("kind") == "toolCall" and "toolCall" in p
    ]


def edit_contents(turn: dict[str, Any]) -> list[dict[str, Any]]:
    (call,) = tool_calls(turn)
    content = call.get("content") or []
    return [c for c in content if c.get("type") == "fileEdit"]


async def read(client: AhpClient, uri: str) -> str:
    result = await client.request("resourceRead", {"channel": "ahp-root://", "uri": uri})
    assert result["encoding"] == "utf-8"
    text: str = result["data"]
    return text


def catalog(client: AhpClient, session: str) -> dict[str, str]:
    return {c["changeKind"]: c["uriTemplate"] for c in client.states[session]["changesets"]}


@pytest.mark.parametrize("versions", [V1, ("0.7.0",)], ids=["1.0", "0.7"])
async def test_a_tool_edit_is_file_edit_content_whose_sides_can_be_read(
    start_bridge: StartBridge, settings: Settings, work: Path, versions: tuple[str, ...]
) -> None:
    bridge = await start_bridge(settings)
    client = await bridge.client(versions=versions)
    _, chat = await create(client, work)
    turn = await run_turn(client, chat, "edit the readme")
    readme, notes = edit_contents(turn)
    uri = (work / "README.md").as_uri()
    assert readme["before"]["uri"] == readme["after"]["uri"] == uri
    assert readme["diff"] == {"added": 1, "removed": 1}
    assert await read(client, readme["before"]["content"]["uri"]) == README
    assert await read(client, readme["after"]["content"]["uri"]) == NEW_README
    assert "before" not in notes  # created
    assert notes["after"]["uri"] == (work / "notes.txt").as_uri()
    assert await read(client, notes["after"]["content"]["uri"]) == "one\ntwo\nthree\n"
    assert notes["diff"] == {"added": 3, "removed": 0}
    assert (work / "README.md").read_text() == NEW_README  # the fake really edited it


@pytest.mark.parametrize("versions", [V1, ("0.7.0",)], ids=["1.0", "0.7"])
async def test_the_turn_changeset_has_the_files_and_counts_and_undo_restores_them(
    start_bridge: StartBridge, settings: Settings, work: Path, versions: tuple[str, ...]
) -> None:
    bridge = await start_bridge(settings)
    client = await bridge.client(versions=versions)
    session, chat = await create(client, work)
    await client.wait_for(lambda: client.states[session].get("changesets"))
    templates = catalog(client, session)
    assert set(templates) == {"session", "turn"}
    first = await run_turn(client, chat, "edit the readme")
    second = await run_turn(client, chat, "delete the notes")

    turn_uri = templates["turn"].replace("{turnId}", first["id"])
    await client.subscribe(turn_uri)
    await client.wait_for(lambda: client.states[turn_uri]["status"] == "ready")
    files = {f["id"]: f["edit"] for f in client.states[turn_uri]["files"]}
    readme_uri, notes_uri = (work / "README.md").as_uri(), (work / "notes.txt").as_uri()
    assert set(files) == {readme_uri, notes_uri}
    assert files[readme_uri]["diff"] == {"added": 1, "removed": 1}
    assert files[notes_uri]["diff"] == {"added": 3, "removed": 0}
    assert "before" not in files[notes_uri]
    assert await read(client, files[readme_uri]["after"]["content"]["uri"]) == NEW_README

    second_uri = templates["turn"].replace("{turnId}", second["id"])
    await client.subscribe(second_uri)
    await client.wait_for(lambda: client.states[second_uri]["status"] == "ready")
    (deleted,) = client.states[second_uri]["files"]
    assert deleted["id"] == notes_uri and "after" not in deleted["edit"]
    assert deleted["edit"]["diff"] == {"added": 0, "removed": 3}

    session_uri = templates["session"]
    await client.subscribe(session_uri)
    await client.wait_for(lambda: len(client.states[session_uri]["files"]) == 1)
    (total,) = client.states[session_uri]["files"]  # notes.txt came and went
    assert total["id"] == readme_uri
    assert total["edit"]["diff"] == {"added": 1, "removed": 1}
    assert await read(client, total["edit"]["before"]["content"]["uri"]) == README

    # Undo the first turn: both turns go, and both files are as they were.
    (undo,) = client.states[turn_uri]["operations"]
    assert undo["id"] == "undo" and undo["scopes"] == ["changeset"] and undo["confirmation"]
    result = await client.request(
        "invokeChangesetOperation", {"channel": turn_uri, "operationId": "undo"}
    )
    assert "Discarded 2 turn(s)" in result["message"]
    assert (work / "README.md").read_text() == README
    assert not (work / "notes.txt").exists()
    await client.wait_for(lambda: client.states[chat]["turns"] == [])
    await client.wait_for(lambda: client.states[session_uri]["files"] == [])
    assert client.states[turn_uri]["files"] == []
    # The conversation lost the turns too: the next prompt is its first again.
    again = await run_turn(client, chat, "edit the readme")
    assert edit_contents(again)[0]["diff"] == {"added": 1, "removed": 1}


async def test_a_1_0_chat_lists_its_changesets_and_a_0_7_one_does_not(
    start_bridge: StartBridge, settings: Settings, work: Path
) -> None:
    bridge = await start_bridge(settings)
    v1 = await bridge.client("v1", versions=V1)
    v07 = await bridge.client("v07")
    session, chat = await create(v1, work)
    await v07.subscribe(session)
    await v07.subscribe(chat)
    await v1.wait_for(lambda: v1.states[chat].get("changesets"))
    kinds = {c["changeKind"] for c in v1.states[chat]["changesets"]}
    assert kinds == {"chat", "turn"}
    assert "changesets" not in v07.states[chat]
    assert catalog(v07, session) == catalog(v1, session)


async def test_a_turn_without_changes_has_an_empty_changeset_and_no_undo(
    start_bridge: StartBridge, settings: Settings, work: Path
) -> None:
    bridge = await start_bridge(settings)
    client = await bridge.client(versions=V1)
    session, chat = await create(client, work)
    await client.wait_for(lambda: client.states[session].get("changesets"))
    turn = await run_turn(client, chat, "chat")
    turn_uri = catalog(client, session)["turn"].replace("{turnId}", turn["id"])
    snap = await client.subscribe(turn_uri)
    assert snap["state"] == {"status": "ready", "files": []}
    with pytest.raises(RpcFailure) as failure:
        await client.request(
            "invokeChangesetOperation", {"channel": turn_uri, "operationId": "undo"}
        )
    assert (failure.value.code, failure.value.message) == (
        INVALID_PARAMS,
        f"Invalid params: operationId: 'undo' is not an operation of {turn_uri} (offered: none)",
    )
    unknown = catalog(client, session)["turn"].replace("{turnId}", "no-such-turn")
    with pytest.raises(RpcFailure) as missing:
        await client.subscribe(unknown)
    assert (missing.value.code, missing.value.message) == (
        NOT_FOUND,
        f"No such channel: {unknown}",
    )


async def test_bad_operations_are_refused_with_a_reason(
    start_bridge: StartBridge, settings: Settings, work: Path
) -> None:
    bridge = await start_bridge(settings)
    client = await bridge.client(versions=V1)
    session, chat = await create(client, work)
    await client.wait_for(lambda: client.states[session].get("changesets"))
    turn = await run_turn(client, chat, "edit the readme")
    turn_uri = catalog(client, session)["turn"].replace("{turnId}", turn["id"])
    await client.subscribe(turn_uri)
    await client.wait_for(lambda: client.states[turn_uri].get("operations"))
    cases = [
        (
            {"channel": turn_uri, "operationId": "stage"},
            INVALID_PARAMS,
            f"Invalid params: operationId: 'stage' is not an operation of {turn_uri} "
            "(offered: undo)",
        ),
        (
            {
                "channel": turn_uri,
                "operationId": "undo",
                "target": {"kind": "resource", "resource": (work / "README.md").as_uri()},
            },
            INVALID_PARAMS,
            "Invalid params: target: 'undo' applies to the whole changeset; leave target out",
        ),
        (
            {"channel": "ahp-changeset:/nope/turn/x", "operationId": "undo"},
            NOT_FOUND,
            "No such changeset: ahp-changeset:/nope/turn/x",
        ),
    ]
    for params, code, reason in cases:
        with pytest.raises(RpcFailure) as failure:
            await client.request("invokeChangesetOperation", params)
        assert (failure.value.code, failure.value.message) == (code, reason), params
    assert (work / "README.md").read_text() == NEW_README  # nothing was undone


async def test_an_edit_outside_the_working_directory_fails_the_tool(
    start_bridge: StartBridge, settings: Settings, work: Path
) -> None:
    bridge = await start_bridge(settings)
    client = await bridge.client(versions=V1)
    _, chat = await create(client, work)
    turn = await run_turn(client, chat, "escape")
    (call,) = tool_calls(turn)
    assert call["success"] is False
    assert "outside the working directory" in call["error"]["message"]
    assert not (work.parent / "outside.txt").exists()


async def test_content_uris_that_are_unknown_are_refused(
    start_bridge: StartBridge, settings: Settings
) -> None:
    bridge = await start_bridge(settings)
    client = await bridge.client(versions=V1)
    gone = "ahp-content:/sha256/" + "0" * 64
    for uri, reason in (
        (
            gone,
            f"Not found: {gone} is no longer available (the host keeps at most "
            f"changes.max_content_bytes = {settings.changes.max_content_bytes} bytes of file "
            "contents)",
        ),
        ("ahp-content:/other", "Not found: ahp-content:/other is not a content URI of this host"),
    ):
        with pytest.raises(RpcFailure) as failure:
            await client.request("resourceRead", {"channel": "ahp-root://", "uri": uri})
        assert (failure.value.code, failure.value.message) == (NOT_FOUND, reason)


async def test_a_provider_without_a_record_here_is_no_failure_in_the_log(
    start_bridge: StartBridge, settings: Settings, work: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Copilot answers `diff` with Unsupported outside a repository, on every turn: the
    changeset says so and no "diff failed" is logged each time."""
    from ahp_bridge_fake import FakeConversation
    from structlog.testing import capture_logs

    from ahp_bridge.agentapi import Unsupported

    async def no_record(self: FakeConversation) -> list[Any]:
        raise Unsupported("no repository here")

    monkeypatch.setattr(FakeConversation, "diff", no_record)
    bridge = await start_bridge(settings)
    client = await bridge.client(versions=V1)
    session, chat = await create(client, work)
    await client.wait_for(lambda: client.states[session].get("changesets"))
    with capture_logs() as logs:
        turn = await run_turn(client, chat, "chat")
        turn_uri = catalog(client, session)["turn"].replace("{turnId}", turn["id"])
        snap = await client.subscribe(turn_uri)
    assert snap["state"] == {"status": "ready", "files": []}
    assert [e for e in logs if e["event"] == "diff failed"] == []
    assert turn["state"] == "complete"
