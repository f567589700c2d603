"""The doors a client could walk through, each tried over a real socket against a real bridge:
a browser origin on the default (empty) allow-list, a move or copy onto a served directory, a
fileEdit content read from outside the working directory, and `authenticate` for a resource
that only looks like the protected one."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from ahp_bridge_fake.provider import FakeProvider

from ahp_bridge.agentapi import Capabilities
from ahp_bridge.config import Settings
from tests.e2e.conftest import StartBridge
from tests.e2e.test_changesets import edit_contents, run_turn
from tests.e2e.test_host_core import new_session_uri, upgrade_status
from tests.e2e.test_sign_in import GITHUB, TOKEN
from tests.support.ahp_client import AhpClient, RpcFailure, create
from tests.support.swap import swap_parent_at_open

ROOT = "ahp-root://"
INVALID_PARAMS, AUTH_REQUIRED, NOT_FOUND, PERMISSION_DENIED = -32602, -32007, -32008, -32009
SCRIPT = Path(__file__).parent / "scripts" / "doors.toml"


def uri(path: Path) -> str:
    return path.as_uri()


# -- 1. the default origin list ----------------------------------------------------------------


async def test_the_default_empty_origin_list_refuses_every_browser_origin(
    start_bridge: StartBridge,
) -> None:
    bridge = await start_bridge()  # the default server settings, on 127.0.0.1:0
    assert bridge.settings.server.allowed_origins == []
    own = f"http://127.0.0.1:{bridge.port}"
    path = f"/?tkn={bridge.settings.server.token}"  # the origin is checked with a good token
    for origin in ("https://evil.example", "http://localhost:3000", own, "null"):
        assert await upgrade_status(bridge.port, path, {"Origin": origin}) == 403, origin
    assert await upgrade_status(bridge.port, path) == 101  # not a browser: no Origin to check


# -- 2. a served directory is never moved, copied over or removed ------------------------------


@pytest.fixture
def roots(tmp_path: Path) -> tuple[Path, Path]:
    """The working directory (the bridge's default directory) and a configured root."""
    work, other = tmp_path / "work", tmp_path / "other"
    (work / "sub").mkdir(parents=True)
    (work / "a.txt").write_text("a\n")
    (work / "sub" / "b.txt").write_text("b\n")
    other.mkdir()
    (other / "o.txt").write_text("o\n")
    return work, other


@pytest.fixture
async def writer(
    start_bridge: StartBridge, make_settings: Any, roots: tuple[Path, Path]
) -> AhpClient:
    settings: Settings = make_settings()
    settings.bridge.workdir, other = roots
    settings.workspace.roots = [other]
    settings.workspace.allow_writes = True
    bridge = await start_bridge(settings)
    return await bridge.client()


# (method, source, destination, the verb of the refusal), paths relative to tmp_path.
ONTO_ROOTS = [
    ("resourceMove", "work/a.txt", "work", "overwritten"),
    ("resourceCopy", "work/a.txt", "work", "overwritten"),
    ("resourceMove", "work/sub", "work", "overwritten"),
    ("resourceCopy", "work/sub", "work", "overwritten"),
    ("resourceMove", "other/o.txt", "work", "overwritten"),
    ("resourceCopy", "other/o.txt", "work", "overwritten"),
    ("resourceCopy", "work", "other", "overwritten"),
    ("resourceMove", "work", "other/moved", "moved"),
    ("resourceMove", "work", "other", "moved"),
]


@pytest.mark.parametrize(
    ("method", "source", "destination", "verb"),
    ONTO_ROOTS,
    ids=[f"{m[8:].lower()}:{s}->{d}" for m, s, d, _ in ONTO_ROOTS],
)
async def test_a_move_or_copy_onto_or_of_a_served_directory_is_refused_and_removes_nothing(
    writer: AhpClient,
    roots: tuple[Path, Path],
    tmp_path: Path,
    method: str,
    source: str,
    destination: str,
    verb: str,
) -> None:
    work, other = roots
    params = {"channel": ROOT, "source": uri(tmp_path / source)}
    params["destination"] = uri(tmp_path / destination)
    with pytest.raises(RpcFailure) as err:
        await writer.request(method, params)
    refused = tmp_path / (source if verb == "moved" else destination)
    assert (err.value.code, err.value.message) == (
        PERMISSION_DENIED,
        f"Permission denied: {uri(refused)} is a directory this host serves; it cannot be {verb}",
    )
    assert (work / "a.txt").read_text() == "a\n"
    assert (work / "sub" / "b.txt").read_text() == "b\n"
    assert (other / "o.txt").read_text() == "o\n"
    assert sorted(p.name for p in work.iterdir()) == ["a.txt", "sub"]
    assert sorted(p.name for p in other.iterdir()) == ["o.txt"]


# -- 3. fileEdit content read from disk stays inside the working directory ---------------------


@pytest.fixture
def no_record(monkeypatch: pytest.MonkeyPatch) -> None:
    """The fake as a provider that keeps no record of its changes (as an ACP agent): the
    bridge then reads a tool edit's "after" side from the disk."""
    real = FakeProvider.capabilities

    def capabilities(self: FakeProvider) -> Capabilities:
        return real(self).model_copy(update={"session_diff": False, "rewind": False})

    monkeypatch.setattr(FakeProvider, "capabilities", capabilities)


async def read_after(client: AhpClient, edit: dict[str, Any]) -> tuple[int | None, str | None]:
    """A fileEdit's "after" content: (None, the text) when served, else (code, message)."""
    params = {"channel": ROOT, "uri": edit["after"]["content"]["uri"]}
    try:
        return None, (await client.request("resourceRead", params))["data"]
    except RpcFailure as err:
        return err.code, err.message


def refused(edit: dict[str, Any]) -> tuple[int, str]:
    ref = edit["after"]["content"]["uri"]
    return NOT_FOUND, f"Not found: {ref}: the file is outside the working directory"


async def fake_on(start_bridge: StartBridge, make_settings: Any, work: Path) -> AhpClient:
    """A 1.0 client of a bridge whose fake plays doors.toml in `work`."""
    settings: Settings = make_settings()
    settings.bridge.workdir = work
    settings.providers = {"fake": {"script": str(SCRIPT), "time_scale": 0.0}}
    bridge = await start_bridge(settings)
    return await bridge.client(versions=("1.0.0",))


async def test_edit_content_from_disk_is_never_read_outside_the_working_directory(
    start_bridge: StartBridge, make_settings: Any, tmp_path: Path, no_record: None
) -> None:
    work, outside = tmp_path / "work", tmp_path / "outside"
    work.mkdir()
    outside.mkdir()
    (work / "inside.txt").write_text("inside\n")
    (tmp_path / "outside.txt").write_text("beside the working directory\n")
    (outside / "secret.txt").write_text("top secret\n")
    (work / "link").symlink_to(outside)
    client = await fake_on(start_bridge, make_settings, work)
    _, chat = await create(client, work)
    inside, beside, through_link = edit_contents(await run_turn(client, chat, "report edits"))
    assert [e["after"]["uri"] for e in (inside, beside, through_link)] == [
        uri(work / "inside.txt"),
        uri(tmp_path / "outside.txt"),
        uri(work / "link" / "secret.txt"),
    ]

    assert {
        "inside": await read_after(client, inside),
        "beside": await read_after(client, beside),
        "through a symlink": await read_after(client, through_link),
    } == {
        "inside": (None, "inside\n"),  # the disk is read where it may be
        "beside": refused(beside),
        "through a symlink": refused(through_link),
    }


async def test_edit_content_from_disk_is_never_read_through_a_parent_swapped_after_the_check(
    start_bridge: StartBridge,
    make_settings: Any,
    tmp_path: Path,
    no_record: None,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    work, outside = tmp_path / "work", tmp_path / "outside"
    (work / "sub").mkdir(parents=True)
    (work / "sub" / "f.txt").write_text("inside\n")
    outside.mkdir()
    (outside / "f.txt").write_text("top secret\n")
    target = os.path.realpath(work / "sub" / "f.txt")
    swapped = swap_parent_at_open(monkeypatch, work / "sub" / "f.txt", outside)
    client = await fake_on(start_bridge, make_settings, work)
    _, chat = await create(client, work)
    (edit,) = edit_contents(await run_turn(client, chat, "report the nested edit"))
    assert await read_after(client, edit) == refused(edit)
    assert swapped == [target]  # the swap happened, after the path was checked


# -- 5. authenticate names the protected resource exactly --------------------------------------


@pytest.fixture
async def signed_out(start_bridge: StartBridge, make_settings: Any) -> Any:
    settings: Settings = make_settings()
    settings.providers = {"fake": {"time_scale": 0.0, "sign_in_token": TOKEN}}
    return await start_bridge(settings)


async def test_authenticate_for_a_resource_that_only_resembles_the_protected_one_is_refused(
    signed_out: Any,
) -> None:
    client = await signed_out.client()
    [agent] = client.states[ROOT]["agents"]
    assert [r["resource"] for r in agent["protectedResources"]] == [GITHUB]
    near_misses = [
        GITHUB + ".evil.example",  # contains it
        "https://evil.example/?" + GITHUB,  # contains it
        GITHUB[:-4],  # contained in it: https://api.github
        "api.github.com",  # contained in it
    ]
    for resource in near_misses:
        with pytest.raises(RpcFailure) as err:
            params = {"channel": ROOT, "resource": resource, "token": TOKEN}
            await client.request("authenticate", params)
        assert (err.value.code, err.value.message) == (
            INVALID_PARAMS,
            f"Invalid params: resource: {resource!r} is not protected by this host",
        )
    # The right token went nowhere: the agent is still signed out.
    assert "root/agentsChanged" not in client.action_types(ROOT)
    with pytest.raises(RpcFailure) as err:
        await client.request("createSession", {"channel": new_session_uri(), "provider": "fake"})
    assert err.value.code == AUTH_REQUIRED
