"""The session catalog: schema and migrations, records, retention, locking, refusal to start."""

from __future__ import annotations

import argparse
import io
import sqlite3
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import trio

from ahp_bridge.config import Settings
from ahp_bridge.host.durable.catalog import (
    DB_NAME,
    FAILED,
    MIGRATIONS,
    READY,
    RUN_SEQ_SPAN,
    SCHEMA_VERSION,
    AsyncCatalog,
    Catalog,
    CatalogError,
    ChatRecord,
    SessionRecord,
    open_catalog,
    retention_cutoff,
)
from ahp_bridge.host.durable.catalog_cli import format_sessions, run_sessions_command

T0 = "2026-01-01T00:00:00.000Z"
T1 = "2026-02-01T00:00:00.000Z"
T2 = "2026-03-01T00:00:00.000Z"


def session(uri: str = "ahp-session:/a", *, modified: str = T1, **fields: Any) -> SessionRecord:
    return SessionRecord(
        uri=uri,
        provider="fake",
        workdir="/w",
        created_at=T0,
        modified_at=modified,
        **fields,
    )


def chat(uri: str = "ahp-chat:/1", conversation: str = "conv-1") -> ChatRecord:
    return ChatRecord(uri=uri, conversation_id=conversation, created_at=T0, modified_at=T0)


@pytest.fixture
def catalog(tmp_path: Path) -> Iterator[Catalog]:
    opened = Catalog.open(tmp_path)
    yield opened
    opened.close()


# -- schema ------------------------------------------------------------------------------------


def test_a_new_catalog_is_created_at_the_current_schema_in_wal_mode(tmp_path: Path) -> None:
    catalog = Catalog.open(tmp_path / "nested" / "dir")
    try:
        assert catalog.version == SCHEMA_VERSION
        assert catalog.sessions() == []
    finally:
        catalog.close()
    with sqlite3.connect(tmp_path / "nested" / "dir" / DB_NAME) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert conn.execute("SELECT version FROM schema_version").fetchall() == [(SCHEMA_VERSION,)]


def test_reopening_keeps_the_records_and_does_not_migrate_again(tmp_path: Path) -> None:
    first = Catalog.open(tmp_path)
    first.add_session(session(chats=[chat()], status=READY, default_chat="ahp-chat:/1"))
    first.close()
    second = Catalog.open(tmp_path)
    try:
        (record,) = second.sessions()
        assert record.chats == [chat()]
        assert second.version == SCHEMA_VERSION
    finally:
        second.close()


def test_a_version_1_catalog_is_migrated_keeping_its_sessions(tmp_path: Path) -> None:
    with sqlite3.connect(tmp_path / DB_NAME) as conn:
        for statement in MIGRATIONS[0]:
            conn.execute(statement)
        conn.execute("CREATE TABLE schema_version (version INTEGER NOT NULL)")
        conn.execute("INSERT INTO schema_version VALUES (1)")
        conn.execute(
            "INSERT INTO sessions (uri, provider, workdir, created_at, modified_at)"
            " VALUES ('ahp-session:/v1', 'fake', '/w', ?, ?)",
            (T0, T1),
        )
    catalog = Catalog.open(tmp_path)
    try:
        assert catalog.version == SCHEMA_VERSION == 5
        assert [r.uri for r in catalog.sessions()] == ["ahp-session:/v1"]
        assert [catalog.next_run(), catalog.next_run()] == [1, 2]
        assert catalog.client_lines() == {}
    finally:
        catalog.close()


def test_a_version_3_catalog_gets_settings_and_its_sessions_read_as_having_none(
    tmp_path: Path,
) -> None:
    """Migration 4 adds the settings values; a session recorded before has none recorded (the
    restore shows the provider's defaults) and takes values from then on."""
    with sqlite3.connect(tmp_path / DB_NAME) as conn:
        for migration in MIGRATIONS[:3]:
            for statement in migration:
                conn.execute(statement)
        conn.execute("CREATE TABLE schema_version (version INTEGER NOT NULL)")
        conn.execute("INSERT INTO schema_version VALUES (3)")
        conn.execute(
            "INSERT INTO sessions (uri, provider, workdir, title, created_at, modified_at, status,"
            " default_chat) VALUES ('ahp-session:/v3', 'fake', '/w', 'Old', ?, ?, 'ready', "
            "'ahp-chat:/1')",
            (T0, T1),
        )
        conn.execute(
            "INSERT INTO chats (uri, session_uri, conversation_id, created_at, modified_at)"
            " VALUES ('ahp-chat:/1', 'ahp-session:/v3', 'conv-1', ?, ?)",
            (T0, T0),
        )
    catalog = Catalog.open(tmp_path)
    try:
        assert catalog.version == SCHEMA_VERSION == 5
        (old,) = catalog.sessions()
        assert (old.uri, old.title, old.status, old.default_chat) == (
            "ahp-session:/v3",
            "Old",
            READY,
            "ahp-chat:/1",
        )
        assert [c.conversation_id for c in old.chats] == ["conv-1"]
        assert old.settings is None
        values = {"model": "fake-plain", "effort": "", "workingDirectory": "file:///w"}
        assert catalog.update_session("ahp-session:/v3", settings=values)
    finally:
        catalog.close()
    reopened = Catalog.open(tmp_path)  # no migration runs again; the values stay
    try:
        assert reopened.version == 5
        stored = reopened.get("ahp-session:/v3")
        assert stored is not None and stored.settings == values
    finally:
        reopened.close()


def test_client_lines_are_kept_newest_and_bounded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import ahp_bridge.host.durable.catalog as module

    monkeypatch.setattr(module, "CLIENTS_KEPT", 3)
    catalog = Catalog.open(tmp_path)
    try:
        for seen, client in enumerate(["a", "b", "c", "d"]):
            catalog.remember_client(client, "1.0", seen)
        catalog.remember_client("b", "0.7", 10)  # refreshed: newest now, line changed
        assert catalog.client_lines() == {"c": "1.0", "d": "1.0", "b": "0.7"}
    finally:
        catalog.close()
    reopened = Catalog.open(tmp_path)
    try:
        assert list(reopened.client_lines()) == ["c", "d", "b"]
    finally:
        reopened.close()


def test_runs_are_counted_across_opens(tmp_path: Path) -> None:
    for expected in (1, 2, 3):
        catalog = Catalog.open(tmp_path)
        assert catalog.next_run() == expected
        catalog.close()


def test_a_newer_schema_is_refused_and_left_as_it_is(tmp_path: Path) -> None:
    Catalog.open(tmp_path).close()
    with sqlite3.connect(tmp_path / DB_NAME) as conn:
        conn.execute("UPDATE schema_version SET version = ?", (SCHEMA_VERSION + 1,))
    newer = SCHEMA_VERSION + 1
    with pytest.raises(CatalogError, match=rf"schema version {newer}, written by a newer ahp-b"):
        Catalog.open(tmp_path)
    with sqlite3.connect(tmp_path / DB_NAME) as conn:
        assert conn.execute("SELECT version FROM schema_version").fetchone()[0] == newer
    # The failed open released the lock: fixing the version makes the catalog usable again.
    with sqlite3.connect(tmp_path / DB_NAME) as conn:
        conn.execute("UPDATE schema_version SET version = ?", (SCHEMA_VERSION,))
    Catalog.open(tmp_path).close()


def test_a_corrupt_file_is_refused_and_never_rewritten(tmp_path: Path) -> None:
    garbage = b"\x00\x01 definitely not sqlite " * 300
    (tmp_path / DB_NAME).write_bytes(garbage)
    with pytest.raises(CatalogError, match="is corrupt") as err:
        Catalog.open(tmp_path)
    assert str(tmp_path / DB_NAME) in str(err.value)
    assert (tmp_path / DB_NAME).read_bytes() == garbage


def test_a_damaged_page_is_found_by_the_startup_check(tmp_path: Path) -> None:
    catalog = Catalog.open(tmp_path)
    for i in range(200):
        catalog.add_session(session(f"ahp-session:/{i:04d}", title="x" * 200))
    catalog.close()
    with sqlite3.connect(tmp_path / DB_NAME) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    data = bytearray((tmp_path / DB_NAME).read_bytes())
    page = 4096
    for offset in range(3 * page, 3 * page + 200):  # scribble over a b-tree page
        data[offset] = 0xFF
    (tmp_path / DB_NAME).write_bytes(bytes(data))
    with pytest.raises(CatalogError, match="corrupt"):
        Catalog.open(tmp_path)


def test_another_sqlite_database_is_not_taken_over(tmp_path: Path) -> None:
    with sqlite3.connect(tmp_path / DB_NAME) as conn:
        conn.execute("CREATE TABLE mine (x)")
        conn.execute("INSERT INTO mine VALUES (1)")
    with pytest.raises(CatalogError, match="not an ahp-bridge session catalog"):
        Catalog.open(tmp_path)
    with sqlite3.connect(tmp_path / DB_NAME) as conn:
        assert conn.execute("SELECT x FROM mine").fetchall() == [(1,)]
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master")}
        assert tables == {"mine"}


def test_the_lock_is_held_for_the_catalogs_lifetime(tmp_path: Path) -> None:
    first = Catalog.open(tmp_path)
    with pytest.raises(CatalogError, match=r"in use by another ahp-bridge \(pid \d+\)"):
        Catalog.open(tmp_path)
    # Reading without the lock still works (operators list sessions while a bridge runs).
    reader = Catalog.open(tmp_path, read_only=True)
    assert reader.sessions() == []
    reader.close()
    first.close()
    Catalog.open(tmp_path).close()


# -- records -----------------------------------------------------------------------------------


def test_session_and_chat_records_round_trip(catalog: Catalog) -> None:
    record = session(working_directories=["file:///w", "file:///x"], import_conversation="c0")
    catalog.add_session(record)
    catalog.add_chat(record.uri, chat(), default=True)
    catalog.add_chat(record.uri, chat("ahp-chat:/2", "conv-2"))
    stored = catalog.get(record.uri)
    assert stored is not None
    assert stored.working_directories == ["file:///w", "file:///x"]
    assert stored.status == READY  # recording the default chat makes the session ready
    assert stored.default_chat == "ahp-chat:/1"
    assert stored.import_conversation == "c0"
    assert [c.conversation_id for c in stored.chats] == ["conv-1", "conv-2"]
    assert stored.settings is None  # none given: none recorded


def test_settings_values_round_trip_and_are_replaced_whole(catalog: Catalog) -> None:
    values = {"model": "fake-fast", "effort": "high", "contextSize": "long", "agent": "reviewer"}
    catalog.add_session(session(settings=values))
    stored = catalog.get("ahp-session:/a")
    assert stored is not None and stored.settings == values
    assert catalog.update_session("ahp-session:/a", settings={"model": "fake-plain"})
    (listed,) = catalog.sessions()
    assert listed.settings == {"model": "fake-plain"}
    assert catalog.update_session("ahp-session:/a", settings={})
    stored = catalog.get("ahp-session:/a")
    assert stored is not None and stored.settings == {}  # recorded, empty: not "none recorded"


def test_unreadable_settings_read_as_none_recorded(tmp_path: Path) -> None:
    """A settings text that is not a JSON object (written by hand) is not trusted: the restore
    then shows the provider's defaults rather than failing."""
    catalog = Catalog.open(tmp_path)
    try:
        catalog.add_session(session())
    finally:
        catalog.close()
    with sqlite3.connect(tmp_path / DB_NAME) as conn:
        conn.execute("UPDATE sessions SET settings = '[1, 2'")
    catalog = Catalog.open(tmp_path)
    try:
        stored = catalog.get("ahp-session:/a")
        assert stored is not None and stored.settings is None
        with sqlite3.connect(tmp_path / DB_NAME) as conn:
            conn.execute("UPDATE sessions SET settings = '[1, 2]'")
        stored = catalog.get("ahp-session:/a")
        assert stored is not None and stored.settings is None
    finally:
        catalog.close()


def test_adding_a_session_twice_is_refused_and_keeps_the_first(catalog: Catalog) -> None:
    catalog.add_session(session(title="first"))
    with pytest.raises(CatalogError, match="already recorded"):
        catalog.add_session(session(title="second", chats=[chat()]))
    (stored,) = catalog.sessions()
    assert stored.title == "first"
    assert stored.chats == []  # the failed insert wrote nothing at all


def test_a_chat_of_an_unknown_session_is_refused(catalog: Catalog) -> None:
    with pytest.raises(CatalogError, match="session not recorded"):
        catalog.add_chat("ahp-session:/nope", chat())


def test_updates_change_only_the_named_fields(catalog: Catalog) -> None:
    catalog.add_session(session(chats=[chat()]))
    assert catalog.update_session("ahp-session:/a", title="T", modified_at=T2)
    assert catalog.update_chat("ahp-chat:/1", active_turn='{"id": "t"}')
    assert not catalog.update_session("ahp-session:/other", title="x")
    stored = catalog.get("ahp-session:/a")
    assert stored is not None
    assert (stored.title, stored.modified_at, stored.provider) == ("T", T2, "fake")
    assert stored.chats[0].running_turn() == {"id": "t"}
    with pytest.raises(ValueError, match="unknown session field"):
        catalog.update_session("ahp-session:/a", provider="x")
    with pytest.raises(ValueError, match="unknown chat field"):
        catalog.update_chat("ahp-chat:/1", session_uri="x")


def test_sessions_are_listed_newest_first(catalog: Catalog) -> None:
    catalog.add_session(session("ahp-session:/old", modified=T0))
    catalog.add_session(session("ahp-session:/new", modified=T2))
    catalog.add_session(session("ahp-session:/mid", modified=T1))
    assert [r.uri for r in catalog.sessions()] == [
        "ahp-session:/new",
        "ahp-session:/mid",
        "ahp-session:/old",
    ]


def test_forget_removes_the_session_and_its_chats(catalog: Catalog) -> None:
    catalog.add_session(session(chats=[chat()]))
    catalog.add_session(session("ahp-session:/b", chats=[chat("ahp-chat:/b", "conv-b")]))
    assert catalog.forget("ahp-session:/a")
    assert not catalog.forget("ahp-session:/a")
    assert [r.uri for r in catalog.sessions()] == ["ahp-session:/b"]
    assert not catalog.remove_chat("ahp-chat:/1")
    assert catalog.remove_chat("ahp-chat:/b")


def test_retention_forgets_only_sessions_untouched_since_the_cutoff(catalog: Catalog) -> None:
    catalog.add_session(session("ahp-session:/old", modified=T0, chats=[chat()]))
    catalog.add_session(session("ahp-session:/new", modified=T2))
    assert catalog.forget_older_than(T1) == ["ahp-session:/old"]
    assert [r.uri for r in catalog.sessions()] == ["ahp-session:/new"]


def turn(i: int) -> dict[str, Any]:
    return {"id": f"t{i}", "message": {"text": f"m{i}"}, "responseParts": [], "state": "complete"}


def test_a_version_4_catalog_gets_the_turns_table_keeping_its_sessions(tmp_path: Path) -> None:
    with sqlite3.connect(tmp_path / DB_NAME) as conn:
        for migration in MIGRATIONS[:4]:
            for statement in migration:
                conn.execute(statement)
        conn.execute("CREATE TABLE schema_version (version INTEGER NOT NULL)")
        conn.execute("INSERT INTO schema_version VALUES (4)")
        conn.execute(
            "INSERT INTO sessions (uri, provider, workdir, created_at, modified_at)"
            " VALUES ('ahp-session:/v4', 'fake', '/w', ?, ?)",
            (T0, T1),
        )
    catalog = Catalog.open(tmp_path)
    try:
        assert catalog.version == SCHEMA_VERSION == 5
        assert [r.uri for r in catalog.sessions()] == ["ahp-session:/v4"]
        assert catalog.read_turns("ahp-chat:/1", 0, 10) == []
    finally:
        catalog.close()


def test_archived_turns_round_trip_in_order_and_are_replaced_by_index(catalog: Catalog) -> None:
    catalog.store_turns("ahp-chat:/1", 0, [turn(i) for i in range(3)])
    catalog.store_turns("ahp-chat:/1", 3, [turn(i) for i in range(3, 6)])
    catalog.store_turns("ahp-chat:/2", 0, [turn(9)])
    assert [t["id"] for t in catalog.read_turns("ahp-chat:/1", 1, 5)] == ["t1", "t2", "t3", "t4"]
    assert catalog.read_turns("ahp-chat:/1", 0, 1) == [turn(0)]
    catalog.store_turns("ahp-chat:/1", 2, [turn(20)])  # a chat rebuilt: the index is replaced
    assert [t["id"] for t in catalog.read_turns("ahp-chat:/1", 0, 6)] == [
        "t0",
        "t1",
        "t20",
        "t3",
        "t4",
        "t5",
    ]
    assert catalog.turn_count("ahp-chat:/1") == 6


def test_archived_turns_go_with_their_chat_or_session(catalog: Catalog) -> None:
    catalog.add_session(session(chats=[chat(), chat("ahp-chat:/2", "conv-2")]))
    catalog.add_session(session("ahp-session:/old", modified=T0, chats=[chat("ahp-chat:/o")]))
    for uri in ("ahp-chat:/1", "ahp-chat:/2", "ahp-chat:/o"):
        catalog.store_turns(uri, 0, [turn(0), turn(1)])
    assert catalog.remove_chat("ahp-chat:/2")
    assert catalog.turn_count("ahp-chat:/2") == 0 and catalog.turn_count("ahp-chat:/1") == 2
    assert catalog.forget_older_than(T1) == ["ahp-session:/old"]
    assert catalog.turn_count("ahp-chat:/o") == 0 and catalog.turn_count("ahp-chat:/1") == 2
    assert catalog.forget("ahp-session:/a")
    assert catalog.turn_count("ahp-chat:/1") == 0


def test_retention_cutoff() -> None:
    day = 86_400_000
    assert retention_cutoff(10 * day, 0) is None
    assert retention_cutoff(10 * day, 3) == "1970-01-08T00:00:00.000Z"


async def test_open_catalog_applies_the_retention(tmp_path: Path) -> None:
    seed = Catalog.open(tmp_path)
    seed.add_session(session("ahp-session:/old", modified="2026-01-01T00:00:00.000Z"))
    seed.add_session(session("ahp-session:/new", modified="2026-01-09T00:00:00.000Z"))
    seed.close()
    now = 1_767_225_600_000 + 10 * 86_400_000  # 2026-01-11
    kept = await open_catalog(tmp_path, retention_days=5, now_ms=now)
    assert [r.uri for r in kept.catalog.sessions()] == ["ahp-session:/new"]
    assert (kept.run_number, kept.first_seq) == (1, RUN_SEQ_SPAN)
    kept.catalog.close()
    forever = await open_catalog(tmp_path, retention_days=0, now_ms=now * 10)
    assert [r.uri for r in forever.catalog.sessions()] == ["ahp-session:/new"]
    forever.catalog.close()


async def test_open_catalog_raises_catalog_error_and_releases_nothing_it_holds(
    tmp_path: Path,
) -> None:
    (tmp_path / DB_NAME).write_bytes(b"garbage" * 1000)
    with pytest.raises(CatalogError):
        await open_catalog(tmp_path, retention_days=1, now_ms=0)
    (tmp_path / DB_NAME).unlink()
    (await open_catalog(tmp_path, retention_days=0, now_ms=0)).catalog.close()


# -- the trio face -----------------------------------------------------------------------------


async def test_calls_run_off_the_trio_thread_in_submission_order(tmp_path: Path) -> None:
    acatalog = AsyncCatalog(Catalog.open(tmp_path))
    threads: list[int] = []

    def spy(catalog: Catalog, title: str) -> None:
        threads.append(threading.get_ident())
        catalog.update_session("ahp-session:/a", title=title)

    async with trio.open_nursery() as nursery:
        await nursery.start(acatalog.run)
        await acatalog.call(Catalog.add_session, session())
        for i in range(50):
            acatalog.submit(spy, f"title {i}")
        stored = await acatalog.call(Catalog.get, "ahp-session:/a")
        assert stored is not None and stored.title == "title 49"
        with pytest.raises(CatalogError, match="already recorded"):
            await acatalog.call(Catalog.add_session, session())
        nursery.cancel_scope.cancel()
    assert threading.get_ident() not in threads
    assert len(threads) == 50


async def test_writes_queued_at_shutdown_are_finished(tmp_path: Path) -> None:
    acatalog = AsyncCatalog(Catalog.open(tmp_path))
    async with trio.open_nursery() as nursery:
        await nursery.start(acatalog.run)
        await acatalog.call(Catalog.add_session, session())
        for i in range(20):
            acatalog.submit(Catalog.update_session, "ahp-session:/a", title=f"t{i}")
        nursery.cancel_scope.cancel()
    reopened = Catalog.open(tmp_path)  # the lock was released when the writer stopped
    try:
        stored = reopened.get("ahp-session:/a")
        assert stored is not None and stored.title == "t19"
    finally:
        reopened.close()


async def test_a_failed_submitted_write_is_logged_and_the_writer_goes_on(tmp_path: Path) -> None:
    acatalog = AsyncCatalog(Catalog.open(tmp_path))
    async with trio.open_nursery() as nursery:
        await nursery.start(acatalog.run)
        acatalog.submit(Catalog.add_chat, "ahp-session:/missing", chat())
        await acatalog.call(Catalog.add_session, session())
        assert [r.uri for r in await acatalog.call(Catalog.sessions)] == ["ahp-session:/a"]
        nursery.cancel_scope.cancel()


async def test_queued_writes_run_in_batches_one_transaction_each(tmp_path: Path) -> None:
    """A burst of writes (a turn's end evicting a turn, summaries) costs one thread hop and one
    commit per batch, not per write: the queue stays short and every write is kept, in order."""
    acatalog = AsyncCatalog(Catalog.open(tmp_path))
    async with trio.open_nursery() as nursery:
        await nursery.start(acatalog.run)
        await acatalog.call(Catalog.add_session, session())
        before = acatalog.batches
        for i in range(300):
            acatalog.submit(Catalog.store_turns, "ahp-chat:/1", i, [{"id": f"t{i}"}])
            acatalog.submit(Catalog.update_session, "ahp-session:/a", title=f"t{i}")
        turns = await acatalog.call(Catalog.read_turns, "ahp-chat:/1", 0, 300)
        assert [t["id"] for t in turns] == [f"t{i}" for i in range(300)]
        assert acatalog.batches - before <= 3  # 601 jobs, at most 512 a batch
        stored = await acatalog.call(Catalog.get, "ahp-session:/a")
        assert stored is not None and stored.title == "t299"
        nursery.cancel_scope.cancel()


async def test_a_write_that_fails_in_a_batch_loses_only_itself(tmp_path: Path) -> None:
    acatalog = AsyncCatalog(Catalog.open(tmp_path))
    async with trio.open_nursery() as nursery:
        await nursery.start(acatalog.run)
        await acatalog.call(Catalog.add_session, session())
        # One batch: a write before, one that fails (no such session), one after, and a call
        # that fails with its own error.
        acatalog.submit(Catalog.update_session, "ahp-session:/a", title="before")
        acatalog.submit(Catalog.add_chat, "ahp-session:/missing", chat())
        acatalog.submit(Catalog.add_chat, "ahp-session:/a", chat("ahp-chat:/2", "conv-2"))
        with pytest.raises(CatalogError):
            await acatalog.call(Catalog.add_session, session())  # already there
        stored = await acatalog.call(Catalog.get, "ahp-session:/a")
        assert stored is not None and stored.title == "before"
        assert [c.uri for c in stored.chats] == ["ahp-chat:/2"]
        nursery.cancel_scope.cancel()


# -- the operator commands ---------------------------------------------------------------------


def settings_for(data_dir: Path) -> Settings:
    settings = Settings()
    settings.bridge.data_dir = data_dir
    return settings


def test_sessions_list_shows_every_session_readably(tmp_path: Path) -> None:
    catalog = Catalog.open(tmp_path)
    record = session(title="Fix the build", chats=[chat()])
    catalog.add_session(record)
    catalog.add_chat(record.uri, chat(), default=True)
    catalog.update_chat("ahp-chat:/1", active_turn='{"id": "t"}')
    catalog.add_session(session("ahp-session:/b", modified=T0))
    catalog.update_session("ahp-session:/b", status=FAILED, error="provider said no")
    catalog.close()
    out = io.StringIO()
    args = argparse.Namespace(sessions_command="list")
    assert run_sessions_command(args, settings_for(tmp_path), out=out) == 0
    text = out.getvalue()
    assert text.startswith("2 sessions\n")
    assert text.index("ahp-session:/a") < text.index("ahp-session:/b")
    assert "  title:     Fix the build\n" in text
    assert "  status:    failed: provider said no\n" in text
    assert (
        "  chat:      ahp-chat:/1 -> conversation conv-1 "
        "(default, a turn was running when the bridge stopped)\n"
    ) in text


def test_format_of_an_empty_catalog() -> None:
    assert format_sessions([]) == "no sessions\n"


def test_sessions_forget(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    catalog = Catalog.open(tmp_path)
    catalog.add_session(session(chats=[chat()]))
    catalog.close()
    out = io.StringIO()
    forget = argparse.Namespace(sessions_command="forget", uri="ahp-session:/a")
    assert run_sessions_command(forget, settings_for(tmp_path), out=out) == 0
    assert out.getvalue() == "forgot ahp-session:/a (the provider's conversation is kept)\n"
    assert run_sessions_command(forget, settings_for(tmp_path), out=out) == 1
    assert capsys.readouterr().err == (
        f"ahp-bridge: no session ahp-session:/a in the catalog {tmp_path / DB_NAME}\n"
    )


def test_sessions_forget_refuses_while_a_bridge_holds_the_catalog(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    held = Catalog.open(tmp_path)
    held.add_session(session())
    try:
        forget = argparse.Namespace(sessions_command="forget", uri="ahp-session:/a")
        assert run_sessions_command(forget, settings_for(tmp_path), out=io.StringIO()) == 1
        assert "in use by another ahp-bridge" in capsys.readouterr().err
        assert held.get("ahp-session:/a") is not None
    finally:
        held.close()
