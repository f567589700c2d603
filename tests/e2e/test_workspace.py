"""Workspace files over real WebSockets: list, read, resolve, watch, write; and their refusals.

A bridge runs on 127.0.0.1 with its default directory at `tmp/work`; `tmp/outside` holds what
no client may reach (a secret, a directory) and symlinks inside the work tree point at it.
"""

from __future__ import annotations

import base64
import os
import uuid
from pathlib import Path
from typing import Any

import pytest
import trio

from ahp_bridge.config import Settings
from tests.e2e.conftest import Bridge, StartBridge
from tests.support.ahp_client import AhpClient, RpcFailure

ROOT = "ahp-root://"
NOT_FOUND, PERMISSION_DENIED, ALREADY_EXISTS, INVALID_PARAMS = -32008, -32009, -32010, -32602


@pytest.fixture
def tree(tmp_path: Path) -> dict[str, Path]:
    work = tmp_path / "work"
    (work / "src" / "pkg").mkdir(parents=True)
    (work / "README.md").write_text("# Hello\n\nébauche ✓\n", encoding="utf-8")
    (work / "src" / "main.py").write_text("print('hi')\n")
    (work / "src" / "pkg" / "util.py").write_text("X = 1\n")
    (work / "logo.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256)))
    (work / "latin1.txt").write_bytes("café".encode("latin-1"))
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("top secret\n")
    (work / "leak.txt").symlink_to(outside / "secret.txt")
    (work / "leakdir").symlink_to(outside)
    (work / "inner-link.py").symlink_to(work / "src" / "main.py")
    return {"work": work, "outside": outside}


def uri(path: Path | str) -> str:
    return Path(path).as_uri()


@pytest.fixture
def settings(make_settings: Any, tree: dict[str, Path]) -> Settings:
    settings: Settings = make_settings()
    settings.bridge.workdir = tree["work"]
    return settings


@pytest.fixture
async def client(start_bridge: StartBridge, settings: Settings) -> AhpClient:
    bridge: Bridge = await start_bridge(settings)
    return await bridge.client()


async def refused(client: AhpClient, method: str, params: dict[str, Any]) -> RpcFailure:
    with pytest.raises(RpcFailure) as err:
        await client.request(method, {"channel": ROOT, **params})
    return err.value


# -- reading -----------------------------------------------------------------------------------


async def test_a_client_lists_and_reads_the_working_directory(
    client: AhpClient, tree: dict[str, Path]
) -> None:
    work = tree["work"]
    listing = await client.request("resourceList", {"channel": ROOT, "uri": uri(work)})
    # Symlinks are listed as what they point to inside; the ones leading out are left out.
    assert listing["entries"] == [
        {"name": "README.md", "type": "file"},
        {"name": "inner-link.py", "type": "file"},
        {"name": "latin1.txt", "type": "file"},
        {"name": "logo.png", "type": "file"},
        {"name": "src", "type": "directory"},
    ]
    nested = await client.request("resourceList", {"channel": ROOT, "uri": uri(work / "src")})
    assert nested["entries"] == [
        {"name": "main.py", "type": "file"},
        {"name": "pkg", "type": "directory"},
    ]
    read = await client.request("resourceRead", {"channel": ROOT, "uri": uri(work / "README.md")})
    assert read == {
        "data": "# Hello\n\nébauche ✓\n",
        "encoding": "utf-8",
        "contentType": "text/markdown",
    }
    inner = await client.request(
        "resourceRead", {"channel": ROOT, "uri": uri(work / "inner-link.py")}
    )
    assert inner["data"] == "print('hi')\n"


async def test_resolve_reports_stat_and_the_real_uri(
    client: AhpClient, tree: dict[str, Path]
) -> None:
    work = tree["work"]
    readme = await client.request(
        "resourceResolve", {"channel": ROOT, "uri": uri(work / "README.md")}
    )
    assert readme["type"] == "file"
    assert readme["size"] == (work / "README.md").stat().st_size
    assert readme["uri"] == uri(work / "README.md")
    assert readme["contentType"] == "text/markdown"
    assert readme["mtime"].endswith("Z") and readme["etag"]
    folder = await client.request("resourceResolve", {"channel": ROOT, "uri": uri(work / "src")})
    assert folder["type"] == "directory" and "size" not in folder
    # A symlink inside: followed by default (the real URI), or reported as itself.
    link = uri(work / "inner-link.py")
    followed = await client.request("resourceResolve", {"channel": ROOT, "uri": link})
    assert followed["uri"] == uri(work / "src" / "main.py")
    assert followed["type"] == "file"
    itself = await client.request(
        "resourceResolve", {"channel": ROOT, "uri": link, "followSymlinks": False}
    )
    assert itself["type"] == "symlink" and itself["uri"] == link
    missing = await refused(client, "resourceResolve", {"uri": uri(work / "nope.txt")})
    assert missing.code == NOT_FOUND
    assert missing.message == f"Not found: {uri(work / 'nope.txt')}"


async def test_nothing_outside_the_working_directory_can_be_read(
    client: AhpClient, tree: dict[str, Path]
) -> None:
    work, outside = tree["work"], tree["outside"]
    secret = uri(outside / "secret.txt")
    for method in ("resourceRead", "resourceResolve", "resourceList"):
        target = secret if method != "resourceList" else uri(outside)
        err = await refused(client, method, {"uri": target})
        assert err.code == PERMISSION_DENIED
        assert err.message.startswith(f"Permission denied: {target} leads outside")
        assert "workspace.roots" in err.message
        assert "top secret" not in str(err.data)
    # `..` that climbs out is refused; `..` that stays inside is fine.
    climb = f"{uri(work)}/src/../../outside/secret.txt"
    err = await refused(client, "resourceRead", {"uri": climb})
    assert err.code == PERMISSION_DENIED
    assert "leads outside" in err.message
    stays = await client.request(
        "resourceRead", {"channel": ROOT, "uri": f"{uri(work)}/src/pkg/../main.py"}
    )
    assert stays["data"] == "print('hi')\n"
    # Through a symlink to a file, and through a symlinked directory.
    for through in (uri(work / "leak.txt"), f"{uri(work)}/leakdir/secret.txt"):
        err = await refused(client, "resourceRead", {"uri": through})
        assert err.code == PERMISSION_DENIED
        assert err.message == (
            f"Permission denied: {through} leads outside the directories this host serves "
            "through a symlink (a session's working directories, the default directory and "
            "workspace.roots)"
        )
    err = await refused(client, "resourceList", {"uri": f"{uri(work)}/leakdir"})
    assert err.code == PERMISSION_DENIED
    # The link itself may be resolved (it lives inside), but not followed.
    link = await client.request(
        "resourceResolve",
        {"channel": ROOT, "uri": uri(work / "leak.txt"), "followSymlinks": False},
    )
    assert link["type"] == "symlink"
    err = await refused(client, "resourceResolve", {"uri": uri(work / "leak.txt")})
    assert err.code == PERMISSION_DENIED


@pytest.mark.parametrize(
    ("target", "why"),
    [
        ("https://example.com/README.md", "only file: URIs are served by this host (got https)"),
        ("ahp-session:/x", "only file: URIs are served by this host (got ahp-session)"),
        ("README.md", "only file: URIs are served by this host (got no scheme)"),
        ("file://elsewhere/etc/passwd", "file URIs must name this host, not 'elsewhere'"),
        ("file:///etc/passwd%00.txt", "file URIs may not encode '/' or NUL in a path segment"),
        ("file:///a%2F..%2F..%2Fetc", "file URIs may not encode '/' or NUL in a path segment"),
        ("file:relative/path", "file URIs must carry an absolute path"),
    ],
)
async def test_other_schemes_and_hosts_are_refused(
    client: AhpClient, target: str, why: str
) -> None:
    err = await refused(client, "resourceRead", {"uri": target})
    assert err.code == INVALID_PARAMS
    assert err.message == f"Invalid params: uri: {why}"


async def test_binary_files_come_as_base64(client: AhpClient, tree: dict[str, Path]) -> None:
    work = tree["work"]
    png = (work / "logo.png").read_bytes()
    for encoding in (None, "utf-8", "base64"):
        params: dict[str, Any] = {"channel": ROOT, "uri": uri(work / "logo.png")}
        if encoding:
            params["encoding"] = encoding
        read = await client.request("resourceRead", params)
        # utf-8 cannot carry it: the spec's fallback is base64.
        assert read["encoding"] == "base64"
        assert base64.b64decode(read["data"]) == png
        assert read["contentType"] == "image/png"
    latin = await client.request("resourceRead", {"channel": ROOT, "uri": uri(work / "latin1.txt")})
    assert latin["encoding"] == "base64"
    assert base64.b64decode(latin["data"]) == "café".encode("latin-1")
    assert latin["contentType"] == "application/octet-stream"
    # Text asked for as base64 comes as base64.
    text = await client.request(
        "resourceRead", {"channel": ROOT, "uri": uri(work / "README.md"), "encoding": "base64"}
    )
    assert text["encoding"] == "base64"
    assert base64.b64decode(text["data"]) == (work / "README.md").read_bytes()


async def test_a_file_over_the_read_limit_is_refused_naming_the_setting(
    start_bridge: StartBridge, settings: Settings, tree: dict[str, Path]
) -> None:
    settings.workspace.max_read_bytes = 1024
    (tree["work"] / "big.log").write_bytes(b"x" * 1025)
    (tree["work"] / "fits.log").write_bytes(b"y" * 1024)
    bridge = await start_bridge(settings)
    client = await bridge.client()
    big = uri(tree["work"] / "big.log")
    err = await refused(client, "resourceRead", {"uri": big})
    assert err.code == PERMISSION_DENIED
    assert err.message == (
        f"Permission denied: {big} is 1025 bytes, more than the 1024 bytes resourceRead serves; "
        "raise workspace.max_read_bytes to read it"
    )
    fits = await client.request(
        "resourceRead", {"channel": ROOT, "uri": uri(tree["work"] / "fits.log")}
    )
    assert fits["data"] == "y" * 1024
    # resolve still tells its size, so a client can decide before reading.
    info = await client.request("resourceResolve", {"channel": ROOT, "uri": big})
    assert info["size"] == 1025


async def test_a_directory_over_the_list_limit_is_refused_naming_the_setting(
    start_bridge: StartBridge, settings: Settings, tree: dict[str, Path]
) -> None:
    settings.workspace.max_list_entries = 3
    bridge = await start_bridge(settings)
    client = await bridge.client()
    err = await refused(client, "resourceList", {"uri": uri(tree["work"])})
    assert err.code == PERMISSION_DENIED
    assert "the most resourceList returns (workspace.max_list_entries)" in err.message
    small = await client.request(
        "resourceList", {"channel": ROOT, "uri": uri(tree["work"] / "src")}
    )
    assert len(small["entries"]) == 2


async def test_wrong_kinds_and_missing_paths_get_clear_errors(
    client: AhpClient, tree: dict[str, Path]
) -> None:
    work = tree["work"]
    err = await refused(client, "resourceRead", {"uri": uri(work / "src")})
    assert (err.code, err.message) == (
        INVALID_PARAMS,
        f"Invalid params: uri: {uri(work / 'src')} is a directory; list it with resourceList",
    )
    err = await refused(client, "resourceList", {"uri": uri(work / "README.md")})
    assert (err.code, err.message) == (
        INVALID_PARAMS,
        f"Invalid params: uri: {uri(work / 'README.md')} is not a directory",
    )
    for method in ("resourceRead", "resourceList"):
        err = await refused(client, method, {"uri": uri(work / "gone")})
        assert (err.code, err.message) == (NOT_FOUND, f"Not found: {uri(work / 'gone')}")
    os.mkfifo(work / "pipe")
    err = await refused(client, "resourceRead", {"uri": uri(work / "pipe")})
    assert err.code == PERMISSION_DENIED
    assert err.message.endswith("is not a regular file")


async def test_a_session_working_directory_and_configured_roots_are_served(
    start_bridge: StartBridge, settings: Settings, tmp_path: Path
) -> None:
    project, extra = tmp_path / "project", tmp_path / "extra"
    project.mkdir()
    extra.mkdir()
    (project / "a.txt").write_text("project\n")
    (extra / "b.txt").write_text("extra\n")
    settings.workspace.roots = [extra]
    bridge = await start_bridge(settings)
    client = await bridge.client()
    a = uri(project / "a.txt")
    err = await refused(client, "resourceRead", {"uri": a})
    assert err.code == PERMISSION_DENIED  # no session works there yet
    read = await client.request("resourceRead", {"channel": ROOT, "uri": uri(extra / "b.txt")})
    assert read["data"] == "extra\n"
    session = f"ahp-session:/{uuid.uuid4()}"
    await client.request(
        "createSession",
        {"channel": session, "provider": "fake", "workingDirectories": [uri(project)]},
    )
    read = await client.request("resourceRead", {"channel": ROOT, "uri": a})
    assert read["data"] == "project\n"
    await client.request("disposeSession", {"channel": session})
    err = await refused(client, "resourceRead", {"uri": a})
    assert err.code == PERMISSION_DENIED  # the session went, and its directory with it


# -- watching ----------------------------------------------------------------------------------


def changes(client: AhpClient, channel: str) -> list[dict[str, Any]]:
    return [
        item
        for action in client.actions(channel)
        if action["type"] == "resourceWatch/changed"
        for item in action["changes"]["items"]
    ]


async def wait_change(client: AhpClient, channel: str, want: dict[str, str]) -> None:
    await client.wait_for(lambda: want in changes(client, channel), timeout=10)


async def watch_gone(client: AhpClient, channel: str) -> None:
    """Wait until subscribing to `channel` says NotFound (the host released the watch)."""
    with trio.fail_after(5):
        while True:
            try:
                await client.request("subscribe", {"channel": channel})
            except RpcFailure as exc:
                assert exc.code == NOT_FOUND
                assert exc.message == f"No such channel: {channel}"
                return
            await client.notify("unsubscribe", {"channel": channel})
            await trio.sleep(0.05)


async def test_working_directories_outside_bridge_allowed_directories_are_refused(
    start_bridge: StartBridge, settings: Settings, tree: dict[str, Path]
) -> None:
    """With `bridge.allowed_directories` set, a session may work only inside them: a path
    outside, one that climbs out with `..`, and a symlink that leads out are refused, and
    nothing is created; inside (and the default directory) works."""
    settings.bridge.allowed_directories = [tree["work"]]
    bridge = await start_bridge(settings)
    client = await bridge.client()

    async def create(*dirs: str) -> str:
        session = f"ahp-session:/{uuid.uuid4()}"
        params: dict[str, Any] = {"channel": session, "provider": "fake"}
        if dirs:
            params["workingDirectories"] = list(dirs)
        await client.request("createSession", params)
        return session

    await create(uri(tree["work"] / "src"))
    await create()  # the bridge's own default directory
    for outside in (
        uri(tree["outside"]),
        uri(tree["work"]) + "/../outside",
        uri(tree["work"] / "leakdir"),
        str(tree["outside"]),
    ):
        with pytest.raises(RpcFailure) as err:
            await create(uri(tree["work"]), outside)
        assert err.value.code == INVALID_PARAMS
        assert "(bridge.allowed_directories): choose one inside " in str(err.value.message)
        assert str(tree["work"]) in str(err.value.message)
    listed = (await client.request("listSessions", {"channel": ROOT}))["items"]
    assert len(listed) == 2  # the refused ones left nothing behind


async def test_by_default_sessions_work_in_the_bridges_directory_or_home_never_at_root(
    start_bridge: StartBridge, settings: Settings, tmp_path: Path
) -> None:
    """Empty `bridge.allowed_directories` is the bridge's working directory and the user's
    home: `/` (whose files a client could then read) and `/etc` are refused, naming the key;
    listing `/` is how an operator allows any directory."""
    assert Settings().bridge.allowed_directories == []
    settings.bridge.allowed_directories = []  # the default
    bridge = await start_bridge(settings)
    client = await bridge.client()

    async def create(directory: str) -> None:
        session = f"ahp-session:/{uuid.uuid4()}"
        await client.request(
            "createSession",
            {"channel": session, "provider": "fake", "workingDirectories": [directory]},
        )

    workdir = settings.bridge.workdir
    assert workdir is not None
    await create(uri(workdir))  # the bridge's working directory (bridge.workdir)
    await create(uri(Path.home()))
    for outside in ("file:///", "file:///etc"):
        with pytest.raises(RpcFailure) as err:
            await create(outside)
        assert err.value.code == INVALID_PARAMS
        message = str(err.value.message)
        assert "(bridge.allowed_directories): choose one inside " in message, message
        assert str(workdir) in message and str(Path.home()) in message


async def test_a_bridge_started_in_root_works_in_home_and_never_at_root(
    start_bridge: StartBridge, settings: Settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A service started in `/` (no `bridge.workdir`) works in its user's home; with `/` as the
    home too, no directory is allowed by default and createSession says which key to set."""
    settings.bridge.workdir, settings.bridge.allowed_directories = None, []
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.chdir("/")
    monkeypatch.setenv("HOME", str(home))
    (home / "a.txt").write_text("home\n")
    client = await (await start_bridge(settings)).client()
    # The default directory (served) is home, not `/`.
    read = await client.request("resourceRead", {"channel": ROOT, "uri": uri(home / "a.txt")})
    assert read["data"] == "home\n"
    err_root = await refused(client, "resourceRead", {"uri": "file:///etc/hostname"})
    assert err_root.code == PERMISSION_DENIED
    with pytest.raises(RpcFailure) as err:
        await client.request(
            "createSession",
            {
                "channel": f"ahp-session:/{uuid.uuid4()}",
                "provider": "fake",
                "workingDirectories": ["file:///"],
            },
        )
    assert "choose one inside " + str(home) in str(err.value.message)

    monkeypatch.setenv("HOME", "/")
    settings.bridge.data_dir = tmp_path / "data-2"  # a second bridge beside the first
    client = await (await start_bridge(settings)).client()
    with pytest.raises(RpcFailure) as err:
        await client.request(
            "createSession",
            {
                "channel": f"ahp-session:/{uuid.uuid4()}",
                "provider": "fake",
                "workingDirectories": [uri(home)],
            },
        )
    assert err.value.code == INVALID_PARAMS
    assert str(err.value.message).endswith(
        "it lets sessions work nowhere by default: list the directories they may use in "
        "bridge.allowed_directories"
    )


async def test_listing_root_allows_any_directory(
    start_bridge: StartBridge, settings: Settings
) -> None:
    settings.bridge.allowed_directories = [Path("/")]
    bridge = await start_bridge(settings)
    client = await bridge.client()
    session = f"ahp-session:/{uuid.uuid4()}"
    await client.request(
        "createSession",
        {"channel": session, "provider": "fake", "workingDirectories": ["file:///etc"]},
    )
    snapshot = await client.subscribe(session)
    assert snapshot["state"]["workingDirectories"] == ["file:///etc"]


async def test_a_watch_reports_added_updated_and_deleted_files(
    client: AhpClient, tree: dict[str, Path]
) -> None:
    work = tree["work"]
    created = await client.request(
        "createResourceWatch", {"channel": ROOT, "uri": uri(work), "recursive": True}
    )
    channel = created["channel"]
    assert channel.startswith("ahp-resource-watch:/")
    snapshot = await client.subscribe(channel)
    assert snapshot["state"] == {"root": uri(work), "recursive": True}
    # The OS watch is in place once createResourceWatch answers: a change right away is seen.
    new = work / "src" / "pkg" / "new.py"
    await trio.to_thread.run_sync(new.write_text, "A = 1\n")
    await wait_change(client, channel, {"uri": uri(new), "type": "added"})
    await trio.sleep(0.3)
    await trio.to_thread.run_sync(new.write_text, "A = 2\n")
    await wait_change(client, channel, {"uri": uri(new), "type": "updated"})
    await trio.to_thread.run_sync(new.unlink)
    await wait_change(client, channel, {"uri": uri(new), "type": "deleted"})
    # Every action carries at least one change (the spec forbids empty batches).
    assert all(a["changes"]["items"] for a in client.actions(channel))


async def test_watch_filters_and_non_recursive_watches(
    client: AhpClient, tree: dict[str, Path]
) -> None:
    work = tree["work"]
    flat = (await client.request("createResourceWatch", {"channel": ROOT, "uri": uri(work)}))[
        "channel"
    ]
    filtered = (
        await client.request(
            "createResourceWatch",
            {
                "channel": ROOT,
                "uri": uri(work),
                "recursive": True,
                "excludes": {"items": ["*.log"]},
                "includes": {"items": ["src/**"]},
            },
        )
    )["channel"]
    file_watch = (
        await client.request(
            "createResourceWatch", {"channel": ROOT, "uri": uri(work / "README.md")}
        )
    )["channel"]
    for channel in (flat, filtered, file_watch):
        await client.subscribe(channel)

    def touch(path: Path, text: str) -> None:
        path.write_text(text)

    await trio.to_thread.run_sync(touch, work / "src" / "deep.py", "x")
    await trio.to_thread.run_sync(touch, work / "src" / "noise.log", "x")
    await trio.to_thread.run_sync(touch, work / "top.txt", "x")
    await trio.to_thread.run_sync(touch, work / "README.md", "changed")
    await wait_change(client, flat, {"uri": uri(work / "top.txt"), "type": "added"})
    await wait_change(client, filtered, {"uri": uri(work / "src" / "deep.py"), "type": "added"})
    await wait_change(client, file_watch, {"uri": uri(work / "README.md"), "type": "updated"})
    await trio.sleep(0.5)  # anything else would have arrived by now
    flat_uris = {c["uri"] for c in changes(client, flat)}
    assert uri(work / "src" / "deep.py") not in flat_uris  # not recursive: direct children only
    filtered_uris = {c["uri"] for c in changes(client, filtered)}
    assert filtered_uris == {uri(work / "src" / "deep.py")}  # *.log excluded, top.txt not included
    assert {c["uri"] for c in changes(client, file_watch)} == {uri(work / "README.md")}


async def test_a_watch_ends_when_its_last_subscriber_leaves(
    start_bridge: StartBridge, settings: Settings, tree: dict[str, Path]
) -> None:
    bridge = await start_bridge(settings)
    first = await bridge.client("one")
    second = await bridge.client("two")
    channel = (
        await first.request("createResourceWatch", {"channel": ROOT, "uri": uri(tree["work"])})
    )["channel"]
    await first.subscribe(channel)
    await second.subscribe(channel)
    await first.notify("unsubscribe", {"channel": channel})
    await first.request("ping", {"channel": ROOT})
    assert (await second.request("subscribe", {"channel": channel}))["snapshot"]
    await second.close()  # the last subscriber's connection drops
    await watch_gone(first, channel)


async def test_a_watch_ends_with_the_session_whose_directory_it_watches(
    start_bridge: StartBridge, settings: Settings, tmp_path: Path
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    bridge = await start_bridge(settings)
    client = await bridge.client()
    session = f"ahp-session:/{uuid.uuid4()}"
    await client.request(
        "createSession",
        {"channel": session, "provider": "fake", "workingDirectories": [uri(project)]},
    )
    channel = (await client.request("createResourceWatch", {"channel": ROOT, "uri": uri(project)}))[
        "channel"
    ]
    await client.subscribe(channel)
    await client.request("disposeSession", {"channel": session})
    await watch_gone(client, channel)


async def test_watch_refusals(
    start_bridge: StartBridge, settings: Settings, tree: dict[str, Path]
) -> None:
    settings.workspace.max_watches = 1
    bridge = await start_bridge(settings)
    client = await bridge.client()
    err = await refused(client, "createResourceWatch", {"uri": uri(tree["outside"])})
    assert err.code == PERMISSION_DENIED and "leads outside" in err.message
    err = await refused(client, "createResourceWatch", {"uri": uri(tree["work"] / "nothing")})
    assert err.code == NOT_FOUND
    # A pattern gitignore cannot parse is the client's mistake, and takes no watch.
    for key, pattern in (("excludes", "!"), ("includes", "src\\")):
        params = {"uri": uri(tree["work"]), key: {"items": ["*.log", pattern]}}
        err = await refused(client, "createResourceWatch", params)
        assert (err.code, err.message) == (
            INVALID_PARAMS,
            f"Invalid params: {key}: {pattern!r} is not a gitignore-style pattern",
        )
    await client.request("createResourceWatch", {"channel": ROOT, "uri": uri(tree["work"])})
    err = await refused(client, "createResourceWatch", {"uri": uri(tree["work"] / "src")})
    assert err.code == PERMISSION_DENIED
    assert err.message == (
        "Permission denied: 1 resource watches are open, the most this host allows "
        "(workspace.max_watches); unsubscribe from one first"
    )


# -- writing -----------------------------------------------------------------------------------

WRITES: list[tuple[str, dict[str, Any]]] = [
    ("resourceWrite", {"uri": "{work}/new.txt", "data": "x", "encoding": "utf-8"}),
    ("resourceMkdir", {"uri": "{work}/newdir"}),
    ("resourceMove", {"source": "{work}/README.md", "destination": "{work}/R.md"}),
    ("resourceCopy", {"source": "{work}/README.md", "destination": "{work}/R.md"}),
    ("resourceDelete", {"uri": "{work}/README.md"}),
]


@pytest.mark.parametrize(("method", "params"), WRITES, ids=[m for m, _ in WRITES])
async def test_writes_are_refused_unless_configured(
    client: AhpClient, tree: dict[str, Path], method: str, params: dict[str, Any]
) -> None:
    filled = {k: v.replace("{work}", uri(tree["work"])) for k, v in params.items()}
    err = await refused(client, method, filled)
    assert err.code == PERMISSION_DENIED
    assert err.message == (
        f"Permission denied: {method} is off on this host; set workspace.allow_writes = true "
        "to let clients change files"
    )
    assert sorted(p.name for p in tree["work"].iterdir()) == [
        "README.md",
        "inner-link.py",
        "latin1.txt",
        "leak.txt",
        "leakdir",
        "logo.png",
        "src",
    ]
    err = await refused(
        client, "resourceRequest", {"uri": uri(tree["work"] / "README.md"), "write": True}
    )
    assert err.code == PERMISSION_DENIED and "workspace.allow_writes" in err.message
    granted = await client.request(
        "resourceRequest", {"channel": ROOT, "uri": uri(tree["work"] / "README.md"), "read": True}
    )
    assert granted == {}


@pytest.fixture
async def writer(start_bridge: StartBridge, settings: Settings) -> AhpClient:
    settings.workspace.allow_writes = True
    bridge = await start_bridge(settings)
    return await bridge.client()


async def test_writes_work_when_configured(writer: AhpClient, tree: dict[str, Path]) -> None:
    work = tree["work"]
    note = work / "notes" / "todo.txt"

    async def call(method: str, **params: Any) -> Any:
        return await writer.request(method, {"channel": ROOT, **params})

    err = await refused(
        writer, "resourceWrite", {"uri": uri(note), "data": "a", "encoding": "utf-8"}
    )
    assert err.code == NOT_FOUND and "create it with resourceMkdir" in err.message
    assert await call("resourceMkdir", uri=uri(note.parent)) == {}
    assert await call("resourceMkdir", uri=uri(note.parent)) == {}  # already there: fine
    await call(
        "resourceWrite", uri=uri(note), data="hello world", encoding="utf-8", createOnly=True
    )
    assert note.read_text() == "hello world"
    err = await refused(
        writer,
        "resourceWrite",
        {"uri": uri(note), "data": "b", "encoding": "utf-8", "createOnly": True},
    )
    assert err.code == ALREADY_EXISTS
    await call("resourceWrite", uri=uri(note), data="!", encoding="utf-8", mode="append")
    assert note.read_text() == "hello world!"
    await call(
        "resourceWrite", uri=uri(note), data=",", encoding="utf-8", mode="append", position=7
    )
    assert note.read_text() == "hello, world!"
    await call("resourceWrite", uri=uri(note), data=">> ", encoding="utf-8", mode="insert")
    assert note.read_text() == ">> hello, world!"
    await call("resourceWrite", uri=uri(note), data="HELLO", encoding="utf-8", position=3)
    assert note.read_text() == ">> HELLO"
    data = base64.b64encode(b"\x00\x01binary").decode()
    await call("resourceWrite", uri=uri(work / "blob.bin"), data=data, encoding="base64")
    assert (work / "blob.bin").read_bytes() == b"\x00\x01binary"
    # ifMatch: the etag from resolve guards against lost updates.
    tag = (await call("resourceResolve", uri=uri(note)))["etag"]
    await call("resourceWrite", uri=uri(note), data="v2", encoding="utf-8", ifMatch=tag)
    err = await refused(
        writer,
        "resourceWrite",
        {"uri": uri(note), "data": "v3", "encoding": "utf-8", "ifMatch": tag},
    )
    assert err.code == -32011 and err.message.startswith("Conflict:")
    assert note.read_text() == "v2"
    err = await refused(writer, "resourceMkdir", {"uri": uri(note)})
    assert err.code == ALREADY_EXISTS
    # copy, move, delete
    await call("resourceCopy", source=uri(work / "src"), destination=uri(work / "src2"))
    assert (work / "src2" / "pkg" / "util.py").read_text() == "X = 1\n"
    err = await refused(
        writer,
        "resourceMove",
        {"source": uri(note), "destination": uri(work / "README.md"), "failIfExists": True},
    )
    assert err.code == ALREADY_EXISTS
    await call("resourceMove", source=uri(note), destination=uri(work / "README.md"))
    assert (work / "README.md").read_text() == "v2" and not note.exists()
    err = await refused(writer, "resourceDelete", {"uri": uri(work / "src2")})
    assert err.code == INVALID_PARAMS and "pass recursive: true" in err.message
    await call("resourceDelete", uri=uri(work / "src2"), recursive=True)
    assert not (work / "src2").exists()
    # Deleting a symlink that leads out removes the link, never its target.
    await call("resourceDelete", uri=uri(work / "leak.txt"))
    assert not (work / "leak.txt").is_symlink()
    assert (tree["outside"] / "secret.txt").read_text() == "top secret\n"


async def test_writes_stay_inside_too(writer: AhpClient, tree: dict[str, Path]) -> None:
    work, outside = tree["work"], tree["outside"]
    attempts: list[tuple[str, dict[str, Any]]] = [
        ("resourceWrite", {"uri": uri(outside / "x.txt"), "data": "x", "encoding": "utf-8"}),
        ("resourceWrite", {"uri": uri(work / "leak.txt"), "data": "x", "encoding": "utf-8"}),
        ("resourceWrite", {"uri": f"{uri(work)}/leakdir/y.txt", "data": "x", "encoding": "utf-8"}),
        ("resourceMkdir", {"uri": f"{uri(work)}/leakdir/sub"}),
        ("resourceCopy", {"source": uri(work / "leak.txt"), "destination": uri(work / "c.txt")}),
        ("resourceCopy", {"source": uri(work / "README.md"), "destination": uri(outside / "c")}),
        ("resourceMove", {"source": uri(work / "README.md"), "destination": uri(outside / "m")}),
        ("resourceDelete", {"uri": uri(outside / "secret.txt")}),
        ("resourceDelete", {"uri": f"{uri(work)}/leakdir/secret.txt"}),
    ]
    for method, params in attempts:
        err = await refused(writer, method, params)
        assert err.code == PERMISSION_DENIED, (method, params)
        assert "leads outside" in err.message
    err = await refused(writer, "resourceDelete", {"uri": uri(work), "recursive": True})
    assert err.code == PERMISSION_DENIED
    assert "is a directory this host serves; it cannot be deleted" in err.message
    assert sorted(p.name for p in outside.iterdir()) == ["secret.txt"]
    assert (outside / "secret.txt").read_text() == "top secret\n"
    assert (work / "README.md").exists()


async def test_bad_writes_are_refused_with_a_reason(
    start_bridge: StartBridge, settings: Settings, tree: dict[str, Path]
) -> None:
    settings.workspace.allow_writes = True
    settings.workspace.max_read_bytes = 16
    bridge = await start_bridge(settings)
    client = await bridge.client()
    work = tree["work"]
    note = work / "note.txt"
    note.write_text("0123456789")

    async def why(method: str, **params: Any) -> tuple[int | None, str | None]:
        err = await refused(client, method, params)
        return err.code, err.message

    def write(**extra: Any) -> dict[str, Any]:
        return {"uri": uri(note), "data": "x", "encoding": "utf-8", **extra}

    assert await why("resourceWrite", **write(mode="append", position=11)) == (
        INVALID_PARAMS,
        f"Invalid params: position: 11 bytes before the end is outside {uri(note)} (10 bytes)",
    )
    assert await why("resourceWrite", **write(mode="insert", position=11)) == (
        INVALID_PARAMS,
        f"Invalid params: position: offset 11 is outside {uri(note)} (10 bytes)",
    )
    assert await why("resourceWrite", **write(position=-1)) == (
        INVALID_PARAMS,
        "Invalid params: position: must not be negative",
    )
    assert await why("resourceWrite", **write(position=1.5)) == (
        INVALID_PARAMS,
        "Invalid params: position: expected a whole number",
    )
    assert await why("resourceWrite", **write(data="not base64!", encoding="base64")) == (
        INVALID_PARAMS,
        "Invalid params: data: not valid base64",
    )
    assert await why("resourceWrite", **write(uri=uri(work / "src"))) == (
        INVALID_PARAMS,
        f"Invalid params: uri: {uri(work / 'src')} is a directory",
    )
    big = work / "big.txt"
    big.write_text("y" * 40)
    assert await why(
        "resourceWrite", uri=uri(big), data="x", encoding="utf-8", mode="insert", position=2
    ) == (
        PERMISSION_DENIED,
        f"Permission denied: writing there would move 38 bytes of {uri(big)}, more than "
        "workspace.max_read_bytes (16) allows",
    )
    assert await why(
        "resourceCopy", source=uri(work / "src"), destination=uri(work / "src" / "pkg" / "copy")
    ) == (
        INVALID_PARAMS,
        f"Invalid params: destination: cannot copy {uri(work / 'src')} into itself",
    )
    assert await why(
        "resourceMove", source=uri(work / "src"), destination=uri(work / "src" / "moved")
    ) == (
        INVALID_PARAMS,
        f"Invalid params: destination: cannot move {uri(work / 'src')} into itself",
    )
    assert await why("resourceMove", source=uri(work), destination=uri(work / "x")) == (
        PERMISSION_DENIED,
        f"Permission denied: {uri(work)} is a directory this host serves; it cannot be moved",
    )
    assert await why("resourceDelete", uri=uri(work / "gone")) == (
        NOT_FOUND,
        f"Not found: {uri(work / 'gone')}",
    )
    # Nothing was changed by any of them.
    assert note.read_text() == "0123456789"
    assert big.read_text() == "y" * 40
    assert sorted(p.name for p in (work / "src").iterdir()) == ["main.py", "pkg"]
