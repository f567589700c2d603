"""`@` mentions over real WebSockets: completions offer the working directory's files, ranked,
with ignore rules honoured, and the attachment a client accepts reaches the provider."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import pytest
import trio

from ahp_bridge.config import Settings
from tests.e2e.conftest import StartBridge, record_provider_calls
from tests.support.ahp_client import AhpClient, RpcFailure, create

ROOT = "ahp-root://"


@pytest.fixture
def work(tmp_path: Path) -> Path:
    work = tmp_path / "work"
    files = {
        "README.md": "# readme\n",
        "readme-notes/a.txt": "",
        "docs/README.md": "",
        "docs/guide/reading.md": "",
        "src/reader.py": "",
        "src/x.gen.py": "",
        "src/keep.gen.py": "",
        "src/.gitignore": "*.gen.py\n!keep.gen.py\n",
        ".gitignore": "build/\nnode_modules\n*.log\n",
        "build/README.md": "",
        "node_modules/left-pad/README.md": "",
        "debug.log": "",
        ".git/HEAD": "ref: refs/heads/main\n",
        ".git/info/exclude": "secret-local.txt\n",
        "secret-local.txt": "",
        ".github/workflows/ci.yml": "",
    }
    for name, text in files.items():
        path = work / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return work


@pytest.fixture
def settings(make_settings: Any, work: Path) -> Settings:
    settings: Settings = make_settings()
    settings.bridge.workdir = work
    return settings


async def complete(client: AhpClient, chat: str, text: str, offset: int | None = None) -> Any:
    units = len(text.encode("utf-16-le")) // 2
    params = {"channel": chat, "kind": "userMessage", "text": text, "offset": units}
    if offset is not None:
        params["offset"] = offset
    return (await client.request("completions", params))["items"]


def inserted(items: list[dict[str, Any]]) -> list[str]:
    return [item["insertText"] for item in items]


@pytest.fixture
async def client(start_bridge: StartBridge, settings: Settings) -> AhpClient:
    bridge = await start_bridge(settings)
    return await bridge.client()


async def test_readme_is_offered_first_for_a_prefix(client: AhpClient, work: Path) -> None:
    _, chat = await create(client, work)
    items = await complete(client, chat, "@REA")
    first = items[0]
    assert first == {
        "insertText": "@README.md ",
        "rangeStart": 0,
        "rangeEnd": 4,
        "attachment": {
            "type": "resource",
            "uri": (work / "README.md").as_uri(),
            "label": "README.md",
            "displayKind": "document",
            "contentType": "text/markdown",
        },
    }
    # Names that start with it, shallow first; then names that contain it; then the rest.
    assert inserted(items)[:5] == [
        "@README.md ",
        "@docs/README.md ",
        "@src/reader.py ",
        "@docs/guide/reading.md ",
        "@readme-notes/",
    ]
    directory = next(i for i in items if i["insertText"] == "@readme-notes/")
    assert directory["attachment"]["displayKind"] == "directory"


async def test_ignored_files_are_never_offered(client: AhpClient, work: Path) -> None:
    _, chat = await create(client, work)
    offered = set()
    for query in ("@READ", "@gen", "@log", "@HEAD", "@secret", "@left", "@"):
        offered |= set(inserted(await complete(client, chat, query)))
    assert "@src/keep.gen.py " in offered  # re-included by `!keep.gen.py` in src/.gitignore
    for never in (
        "@build/",
        "@build/README.md ",
        "@node_modules/",
        "@debug.log ",
        "@src/x.gen.py ",
        "@.git/",
        "@.git/HEAD ",
        "@secret-local.txt ",
    ):
        assert never not in offered
    assert "@.github/" in offered  # hidden but not ignored


async def test_the_word_at_the_cursor_decides(client: AhpClient, work: Path) -> None:
    _, chat = await create(client, work)
    text = "look at #src/rea please"
    cursor = text.index(" please")
    items = await complete(client, chat, text, cursor)
    assert items[0]["insertText"] == "#src/reader.py "
    assert (items[0]["rangeStart"], items[0]["rangeEnd"]) == (8, cursor)
    # Offsets are UTF-16 code units: an emoji before the mention counts two.
    items = await complete(client, chat, "😀 @REA")
    assert (items[0]["rangeStart"], items[0]["rangeEnd"]) == (3, 7)
    # The range runs to the end of the word when the cursor is inside it.
    items = await complete(client, chat, "@READxx yes", 5)
    assert items[0]["insertText"] == "@README.md "
    assert (items[0]["rangeStart"], items[0]["rangeEnd"]) == (0, 7)
    # No mention at the cursor: nothing.
    assert await complete(client, chat, "mail me@REA") == []
    assert await complete(client, chat, "plain words") == []
    assert await complete(client, chat, "@REA", 0) == []
    # Characters in order match too (after everything that matches better).
    assert "@README.md " in inserted(await complete(client, chat, "@rdme"))


async def test_results_are_bounded_by_the_setting(
    start_bridge: StartBridge, settings: Settings, work: Path
) -> None:
    for i in range(30):
        (work / f"file{i:02}.txt").write_text("")
    settings.workspace.mention_results = 7
    bridge = await start_bridge(settings)
    client = await bridge.client()
    _, chat = await create(client, work)
    items = await complete(client, chat, "@file")
    assert inserted(items) == [f"@file{i:02}.txt " for i in range(7)]


async def test_completion_refusals(
    start_bridge: StartBridge, settings: Settings, work: Path
) -> None:
    bridge = await start_bridge(settings)
    client = await bridge.client(initialize=False)
    init = await client.initialize([ROOT])  # the handshake says which characters trigger them
    assert init["completionTriggerCharacters"] == ["@", "#", "/"]  # mentions, then commands
    with pytest.raises(RpcFailure) as err:
        await complete(client, "ahp-chat:/nope", "@REA")
    assert (err.value.code, err.value.message) == (-32008, "Chat not found: ahp-chat:/nope")
    _, chat = await create(client, work)
    for offset in (5, -1, 1.5):
        with pytest.raises(RpcFailure) as err:
            await complete(client, chat, "@REA", offset)  # type: ignore[arg-type]
        assert err.value.code == -32602
        assert err.value.message == (
            "Invalid params: offset: must be a whole number from 0 to 4 (UTF-16 code units of text)"
        )


async def test_a_watched_change_refreshes_the_index(
    start_bridge: StartBridge, settings: Settings, work: Path
) -> None:
    settings.workspace.mention_refresh_seconds = 3600  # only the watch can refresh it
    bridge = await start_bridge(settings)
    client = await bridge.client()
    _, chat = await create(client, work)
    assert "@REALLY-NEW.md " not in inserted(await complete(client, chat, "@REAL"))
    watch = await client.request(
        "createResourceWatch", {"channel": ROOT, "uri": work.as_uri(), "recursive": True}
    )
    await client.subscribe(watch["channel"])
    (work / "REALLY-NEW.md").write_text("")
    with trio.fail_after(10):
        while "@REALLY-NEW.md " not in inserted(await complete(client, chat, "@REAL")):
            await trio.sleep(0.05)


async def test_an_index_older_than_the_setting_is_rebuilt(
    start_bridge: StartBridge, settings: Settings, work: Path
) -> None:
    settings.workspace.mention_refresh_seconds = 0
    bridge = await start_bridge(settings)
    client = await bridge.client()
    _, chat = await create(client, work)
    await complete(client, chat, "@REA")
    (work / "REALLY-NEW.md").write_text("")
    with trio.fail_after(10):
        while "@REALLY-NEW.md " not in inserted(await complete(client, chat, "@REAL")):
            await trio.sleep(0.05)


async def test_an_accepted_mention_reaches_the_provider_as_a_file(
    start_bridge: StartBridge,
    settings: Settings,
    work: Path,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    record = record_provider_calls(monkeypatch, tmp_path / "calls.jsonl")
    bridge = await start_bridge(settings)
    client = await bridge.client()
    _, chat = await create(client, work)
    [item, *_] = await complete(client, chat, "explain @READ")
    text = "explain " + item["insertText"]
    seq = await client.dispatch(
        chat,
        {
            "type": "chat/turnStarted",
            "turnId": str(uuid.uuid4()),
            "startedAt": "2026-01-01T00:00:00.000Z",
            "message": {
                "text": text,
                "origin": {"kind": "user"},
                "attachments": [item["attachment"]],
            },
        },
    )
    echo = await client.echo_of(seq)
    assert "rejectionReason" not in echo, echo

    def sent() -> list[dict[str, Any]]:
        if not record.exists():
            return []
        lines = [json.loads(line) for line in record.read_text().splitlines() if line]
        return [line for line in lines if line.get("call") == "send"]

    with trio.fail_after(10):
        while not sent():
            await trio.sleep(0.01)
    prompt = sent()[0]["args"]["prompt"]
    assert prompt["Text"] == text
    assert [(f["Path"], f["Rel"]) for f in prompt["Files"]] == [
        (str(work / "README.md"), "README.md")
    ]


async def test_completions_reopen_a_chat_from_an_earlier_run(
    settings: Settings, work: Path
) -> None:
    from tests.e2e.test_durable_sessions import bridge

    async with bridge(settings) as running:
        _, chat = await create(await running.client(), work)
    async with bridge(settings) as running:  # the same data directory: the session is dormant
        client = await running.client("fresh")
        items = await complete(client, chat, "@REA")
        assert items[0]["insertText"] == "@README.md "
