"""The session catalog: what the bridge must remember across restarts, in embedded SQLite.

The provider owns transcripts; the bridge owns the mapping from each AHP session URI to its
provider and, per chat, the provider conversation id, plus working directories, titles,
timestamps, the lifecycle status, the session's settings values (model, effort, context size,
agent: what `SessionState.config.values` held last, so a restored session keeps them) and the
turn that was running when the record was last written (so a turn interrupted by a crash can be
shown as ended after a restart).

`Catalog` is the synchronous store (stdlib `sqlite3`, WAL, a schema version table with
migrations). The bridge holds an exclusive `fcntl` lock on `catalog.lock` next to the
database for its whole lifetime, so a second bridge on the same data directory refuses to
start instead of corrupting the first one's view. A corrupt database, a locked one or one
written by a newer schema raises `CatalogError` with a message an operator can act on;
nothing is ever dropped or overwritten to "repair" it.

`AsyncCatalog` is what the trio host uses: every call runs on a worker thread through one
`CapacityLimiter(1)`, in submission order, on the one connection (`submit` for writes that
need no answer, `call` for those the caller must wait for).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import sqlite3
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar, cast

import orjson
import structlog
import trio
from ahp_bridge_support.private import private_dir, private_file

from ahp_bridge.engine.records import CREATING, FAILED, READY, ChatRecord, SessionRecord

#: The records and their lifecycle values are the engine's; the catalog stores them.
__all__ = [
    "CREATING",
    "FAILED",
    "READY",
    "AsyncCatalog",
    "Catalog",
    "CatalogError",
    "ChatRecord",
    "SessionRecord",
    "open_catalog",
]
from ahp_bridge.translate._wire import iso_from_ms

log = structlog.get_logger(__name__)

T = TypeVar("T")

DB_NAME = "catalog.sqlite3"
LOCK_NAME = "catalog.lock"

#: Session status values kept in the catalog.


class CatalogError(Exception):
    """The catalog cannot be used (corrupt, locked by another bridge, newer schema, I/O)."""


# -- schema ------------------------------------------------------------------------------------

#: Migrations, in order: MIGRATIONS[i] brings a version-i database to version i + 1.
MIGRATIONS: tuple[tuple[str, ...], ...] = (
    (
        """
        CREATE TABLE sessions (
            uri TEXT PRIMARY KEY,
            provider TEXT NOT NULL,
            working_directories TEXT NOT NULL DEFAULT '[]',
            workdir TEXT NOT NULL,
            title TEXT NOT NULL DEFAULT '',
            created_at TEXT NOT NULL,
            modified_at TEXT NOT NULL,
            status TEXT NOT NULL DEFAULT 'creating',
            error TEXT NOT NULL DEFAULT '',
            default_chat TEXT NOT NULL DEFAULT '',
            import_conversation TEXT NOT NULL DEFAULT ''
        )
        """,
        """
        CREATE TABLE chats (
            uri TEXT PRIMARY KEY,
            session_uri TEXT NOT NULL REFERENCES sessions(uri) ON DELETE CASCADE,
            conversation_id TEXT NOT NULL,
            title TEXT NOT NULL DEFAULT '',
            created_at TEXT NOT NULL,
            modified_at TEXT NOT NULL,
            active_turn TEXT NOT NULL DEFAULT ''
        )
        """,
        "CREATE INDEX chats_by_session ON chats(session_uri)",
    ),
    (
        # How many times a bridge has started on this catalog: serverSeq of run n starts at
        # n * RUN_SEQ_SPAN, so numbers from an earlier run are never reused.
        "CREATE TABLE runs (count INTEGER NOT NULL)",
        "INSERT INTO runs (count) VALUES (0)",
    ),
    (
        # The wire line each client last negotiated: `reconnect` names no version, so a client
        # that reconnects after a restart is spoken to in the line it chose (bounded, newest).
        "CREATE TABLE clients (client_id TEXT PRIMARY KEY, line TEXT NOT NULL, seen INTEGER)",
    ),
    (
        # The session's settings values (JSON of `SessionState.config.values`); '' for a
        # session recorded before settings were kept (restored with the provider's defaults).
        "ALTER TABLE sessions ADD COLUMN settings TEXT NOT NULL DEFAULT ''",
    ),
    (
        # Turns a chat evicted from the host's live state (limits.max_live_turns), by their
        # index in the chat (0 = its first turn), as canonical JSON: fetchTurns reads them back.
        """
        CREATE TABLE turns (
            chat_uri TEXT NOT NULL,
            idx INTEGER NOT NULL,
            turn TEXT NOT NULL,
            PRIMARY KEY (chat_uri, idx)
        ) WITHOUT ROWID
        """,
    ),
)
#: Client lines kept in the catalog (the newest by last use).
CLIENTS_KEPT = 10_000
#: serverSeq numbers each run of the bridge may use (2^33; 2^20 runs stay below 2^53).
RUN_SEQ_SPAN = 1 << 33
SCHEMA_VERSION = len(MIGRATIONS)


_SESSION_COLUMNS = (
    "uri, provider, working_directories, workdir, title, created_at, modified_at, status, "
    "error, default_chat, import_conversation, settings"
)
_CHAT_COLUMNS = "uri, conversation_id, created_at, modified_at, title, active_turn"
_SESSION_FIELDS = frozenset(
    {"title", "modified_at", "status", "error", "default_chat", "working_directories", "settings"}
)
_CHAT_FIELDS = frozenset({"title", "modified_at", "active_turn", "conversation_id"})


# -- the synchronous store ---------------------------------------------------------------------


class Catalog:
    """One SQLite connection to `<data_dir>/catalog.sqlite3`; not thread-safe by itself."""

    def __init__(self, conn: sqlite3.Connection, path: Path, lock_fd: int | None) -> None:
        self._conn = conn
        self.path = path
        self._lock_fd = lock_fd
        #: Inside `batch()`: each write is a savepoint of the batch's one transaction.
        self._batched = False

    @contextlib.contextmanager
    def batch(self) -> Iterator[None]:
        """Run several calls as one transaction (one commit, one sync to disk), each call
        still all or nothing: its own savepoint, rolled back alone when it fails."""
        if self._batched:
            yield
            return
        with self._errors():
            self._conn.execute("BEGIN IMMEDIATE")
        self._batched = True
        try:
            yield
        except BaseException:
            self._batched = False
            self._conn.rollback()
            raise
        self._batched = False
        with self._errors():
            self._conn.commit()

    # -- opening -------------------------------------------------------------------------------

    @classmethod
    def open(cls, data_dir: Path, *, read_only: bool = False) -> Catalog:
        """Open (creating or migrating) the catalog under `data_dir`; CatalogError if unusable.

        `read_only` takes no lock and never creates or migrates (for `sessions list` while a
        bridge runs); a missing catalog then reads as empty.
        """
        path = Path(data_dir) / DB_NAME
        lock_fd: int | None = None
        if not read_only:
            try:
                private_dir(data_dir)  # transcripts' map, titles, settings: the user's only
                private_file(path)  # SQLite gives the -wal and -shm files the db file's mode
            except OSError as exc:
                raise CatalogError(f"cannot create the data directory {data_dir}: {exc}") from None
            lock_fd = _lock(Path(data_dir) / LOCK_NAME, path)
        try:
            conn = _connect(path, read_only=read_only)
        except BaseException:
            _unlock(lock_fd)
            raise
        catalog = cls(conn, path, lock_fd)
        try:
            catalog._check_and_migrate(read_only=read_only)
        except BaseException:
            catalog.close()
            raise
        return catalog

    def _check_and_migrate(self, *, read_only: bool) -> None:
        try:
            ok = self._conn.execute("PRAGMA quick_check").fetchone()
            if ok is None or ok[0] != "ok":
                raise CatalogError(
                    f"the session catalog {self.path} is corrupt ({ok[0] if ok else 'no answer'}); "
                    "move it aside to start with an empty catalog (nothing was changed)"
                )
            version = self._version()
            if version > SCHEMA_VERSION:
                raise CatalogError(
                    f"the session catalog {self.path} has schema version {version}, written by a "
                    f"newer ahp-bridge (this one knows up to version {SCHEMA_VERSION}); upgrade "
                    "ahp-bridge or use another --data-dir (nothing was changed)"
                )
            if read_only:
                return
            if version == 0 and not self._has_table("schema_version") and self._has_any_table():
                raise CatalogError(
                    f"{self.path} is an SQLite database but not an ahp-bridge session catalog; "
                    "move it aside or use another --data-dir (nothing was changed)"
                )
            self._conn.execute("PRAGMA journal_mode=WAL")
            for target in range(version, SCHEMA_VERSION):
                with self._conn:
                    self._conn.execute("BEGIN IMMEDIATE")
                    for statement in MIGRATIONS[target]:
                        self._conn.execute(statement)
                    self._set_version(target + 1)
        except sqlite3.DatabaseError as exc:
            raise _database_error(self.path, exc) from None

    def _has_table(self, name: str) -> bool:
        row = self._conn.execute(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (name,)
        ).fetchone()
        return row is not None

    def _has_any_table(self) -> bool:
        return self._conn.execute("SELECT 1 FROM sqlite_master LIMIT 1").fetchone() is not None

    def _version(self) -> int:
        if not self._has_table("schema_version"):
            return 0
        row = self._conn.execute("SELECT MAX(version) FROM schema_version").fetchone()
        return int(row[0]) if row and row[0] is not None else 0

    def _set_version(self, version: int) -> None:
        if not self._has_table("schema_version"):
            self._conn.execute("CREATE TABLE schema_version (version INTEGER NOT NULL)")
        self._conn.execute("DELETE FROM schema_version")
        self._conn.execute("INSERT INTO schema_version (version) VALUES (?)", (version,))

    @property
    def version(self) -> int:
        return self._version()

    def close(self) -> None:
        with contextlib.suppress(sqlite3.Error):
            self._conn.close()
        _unlock(self._lock_fd)
        self._lock_fd = None

    # -- reading -------------------------------------------------------------------------------

    def sessions(self) -> list[SessionRecord]:
        """Every session with its chats, newest modification first."""
        with self._errors():
            if not self._has_table("sessions"):  # read-only view of a catalog never created
                return []
            rows = self._conn.execute(
                f"SELECT {_SESSION_COLUMNS} FROM sessions ORDER BY modified_at DESC, uri DESC"
            ).fetchall()
            return [self._session(row) for row in rows]

    def get(self, uri: str) -> SessionRecord | None:
        with self._errors():
            row = self._conn.execute(
                f"SELECT {_SESSION_COLUMNS} FROM sessions WHERE uri = ?", (uri,)
            ).fetchone()
            return self._session(row) if row is not None else None

    def _session(self, row: tuple[Any, ...]) -> SessionRecord:
        uri, provider, dirs, workdir, title, created, modified, status, error, default = row[:10]
        imp, values = row[10:]
        chats = [
            ChatRecord(*chat)
            for chat in self._conn.execute(
                f"SELECT {_CHAT_COLUMNS} FROM chats WHERE session_uri = ? ORDER BY rowid",
                (uri,),
            ).fetchall()
        ]
        return SessionRecord(
            uri=uri,
            provider=provider,
            workdir=workdir,
            created_at=created,
            modified_at=modified,
            working_directories=_json_list(dirs),
            title=title,
            status=status,
            error=error,
            default_chat=default,
            import_conversation=imp,
            settings=_json_dict(values),
            chats=chats,
        )

    # -- writing -------------------------------------------------------------------------------

    def add_session(self, record: SessionRecord) -> None:
        """Insert a new session (and its chats); CatalogError if the URI is already recorded."""
        with self._tx():
            try:
                self._conn.execute(
                    f"INSERT INTO sessions ({_SESSION_COLUMNS}) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
                    (
                        record.uri,
                        record.provider,
                        json.dumps(record.working_directories),
                        record.workdir,
                        record.title,
                        record.created_at,
                        record.modified_at,
                        record.status,
                        record.error,
                        record.default_chat,
                        record.import_conversation,
                        _settings_text(record.settings),
                    ),
                )
            except sqlite3.IntegrityError:
                raise CatalogError(f"session already recorded: {record.uri}") from None
            for chat in record.chats:
                self._insert_chat(record.uri, chat)

    def update_session(self, uri: str, **fields: Any) -> bool:
        """Change some of a session's fields; False when the session is not recorded."""
        unknown = set(fields) - _SESSION_FIELDS
        if unknown:
            raise ValueError(f"unknown session field(s): {', '.join(sorted(unknown))}")
        if not fields:
            return self.get(uri) is not None
        if "working_directories" in fields:
            fields["working_directories"] = json.dumps(fields["working_directories"])
        if "settings" in fields:
            fields["settings"] = _settings_text(fields["settings"])
        assignments = ", ".join(f"{name} = ?" for name in fields)
        with self._tx():
            cur = self._conn.execute(
                f"UPDATE sessions SET {assignments} WHERE uri = ?", (*fields.values(), uri)
            )
            return cur.rowcount > 0

    def add_chat(self, session_uri: str, chat: ChatRecord, *, default: bool = False) -> None:
        """Record a chat of a recorded session; a default chat also makes the session ready."""
        with self._tx():
            exists = self._conn.execute(
                "SELECT 1 FROM sessions WHERE uri = ?", (session_uri,)
            ).fetchone()
            if exists is None:
                raise CatalogError(f"session not recorded: {session_uri}")
            self._insert_chat(session_uri, chat)
            if default:
                self._conn.execute(
                    "UPDATE sessions SET default_chat = ?, status = ?, error = '' WHERE uri = ?",
                    (chat.uri, READY, session_uri),
                )

    def _insert_chat(self, session_uri: str, chat: ChatRecord) -> None:
        self._conn.execute(
            "INSERT OR REPLACE INTO chats (uri, session_uri, conversation_id, title, created_at,"
            " modified_at, active_turn) VALUES (?,?,?,?,?,?,?)",
            (
                chat.uri,
                session_uri,
                chat.conversation_id,
                chat.title,
                chat.created_at,
                chat.modified_at,
                chat.active_turn,
            ),
        )

    def update_chat(self, uri: str, **fields: Any) -> bool:
        unknown = set(fields) - _CHAT_FIELDS
        if unknown:
            raise ValueError(f"unknown chat field(s): {', '.join(sorted(unknown))}")
        if not fields:
            return False
        assignments = ", ".join(f"{name} = ?" for name in fields)
        with self._tx():
            cur = self._conn.execute(
                f"UPDATE chats SET {assignments} WHERE uri = ?", (*fields.values(), uri)
            )
            return cur.rowcount > 0

    def remove_chat(self, uri: str) -> bool:
        with self._tx():
            self._conn.execute("DELETE FROM turns WHERE chat_uri = ?", (uri,))
            return self._conn.execute("DELETE FROM chats WHERE uri = ?", (uri,)).rowcount > 0

    def forget(self, uri: str) -> bool:
        """Remove a session and its chats (with their archived turns); False when it was not
        recorded."""
        with self._tx():
            self._forget_turns(uri)
            self._conn.execute("DELETE FROM chats WHERE session_uri = ?", (uri,))
            return self._conn.execute("DELETE FROM sessions WHERE uri = ?", (uri,)).rowcount > 0

    def client_lines(self) -> dict[str, str]:
        """The wire line of each remembered client, oldest first."""
        rows = self._conn.execute(
            "SELECT client_id, line FROM clients ORDER BY seen, client_id"
        ).fetchall()
        return {str(client): str(line) for client, line in rows}

    def remember_client(self, client_id: str, line: str, seen: int) -> None:
        """Record (or refresh) a client's line, keeping the newest `CLIENTS_KEPT`."""
        with self._tx():
            self._conn.execute(
                "INSERT INTO clients (client_id, line, seen) VALUES (?, ?, ?) "
                "ON CONFLICT(client_id) DO UPDATE SET line = excluded.line, seen = excluded.seen",
                (client_id, line, seen),
            )
            self._conn.execute(
                "DELETE FROM clients WHERE client_id NOT IN "
                "(SELECT client_id FROM clients ORDER BY seen DESC LIMIT ?)",
                (CLIENTS_KEPT,),
            )

    def next_run(self) -> int:
        """Count one more start of a bridge on this catalog; the new count (1 for the first)."""
        with self._tx():
            self._conn.execute("UPDATE runs SET count = count + 1")
            row = self._conn.execute("SELECT count FROM runs").fetchone()
            return int(row[0])

    def forget_older_than(self, cutoff: str) -> list[str]:
        """Forget sessions last modified before `cutoff` (ISO 8601, UTC 'Z'); their URIs."""
        with self._tx():
            uris = [
                row[0]
                for row in self._conn.execute(
                    "SELECT uri FROM sessions WHERE modified_at < ? ORDER BY uri", (cutoff,)
                ).fetchall()
            ]
            for uri in uris:
                self._forget_turns(uri)
                self._conn.execute("DELETE FROM chats WHERE session_uri = ?", (uri,))
                self._conn.execute("DELETE FROM sessions WHERE uri = ?", (uri,))
            return uris

    # -- turns evicted from the live state --------------------------------------------------

    def store_turns(self, chat_uri: str, start: int, turns: list[dict[str, Any]]) -> None:
        """Keep a chat's turns [start, start + len(turns)) (replacing what those indices held:
        a chat rebuilt after a restart, or truncated and grown again)."""
        rows = [(chat_uri, start + i, orjson.dumps(t).decode()) for i, t in enumerate(turns)]
        with self._tx():
            self._conn.executemany(
                "INSERT OR REPLACE INTO turns (chat_uri, idx, turn) VALUES (?, ?, ?)", rows
            )

    def read_turns(self, chat_uri: str, start: int, stop: int) -> list[dict[str, Any]]:
        """A chat's archived turns [start, stop), oldest first (those it holds)."""
        with self._errors():
            rows = self._conn.execute(
                "SELECT turn FROM turns WHERE chat_uri = ? AND idx >= ? AND idx < ? ORDER BY idx",
                (chat_uri, start, stop),
            ).fetchall()
        return [orjson.loads(row[0]) for row in rows]

    def turn_count(self, chat_uri: str) -> int:
        with self._errors():
            row = self._conn.execute(
                "SELECT COUNT(*) FROM turns WHERE chat_uri = ?", (chat_uri,)
            ).fetchone()
        return int(row[0])

    def _forget_turns(self, session_uri: str) -> None:
        self._conn.execute(
            "DELETE FROM turns WHERE chat_uri IN (SELECT uri FROM chats WHERE session_uri = ?)",
            (session_uri,),
        )

    @contextlib.contextmanager
    def _tx(self) -> Iterator[None]:
        """One write transaction (a savepoint inside a batch): all of it or none of it."""
        if self._batched:
            with self._errors():
                self._conn.execute("SAVEPOINT tx")
                try:
                    yield
                except BaseException:
                    self._conn.execute("ROLLBACK TO tx")
                    self._conn.execute("RELEASE tx")
                    raise
                self._conn.execute("RELEASE tx")
            return
        with self._errors():
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                yield
            except BaseException:
                self._conn.rollback()
                raise
            self._conn.commit()

    @contextlib.contextmanager
    def _errors(self) -> Iterator[None]:
        try:
            yield
        except sqlite3.DatabaseError as exc:
            raise _database_error(self.path, exc) from None


# -- helpers -----------------------------------------------------------------------------------


def _connect(path: Path, *, read_only: bool) -> sqlite3.Connection:
    try:
        if read_only:
            uri = f"{path.resolve().as_uri()}?mode=ro"
            if not path.exists():
                uri = "file::memory:"
            conn = sqlite3.connect(uri, uri=True, check_same_thread=False, isolation_level=None)
        else:
            conn = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
        conn.execute("PRAGMA busy_timeout = 2000")
        conn.execute("PRAGMA foreign_keys = ON")
        return conn
    except sqlite3.DatabaseError as exc:
        raise _database_error(path, exc) from None


def _database_error(path: Path, exc: sqlite3.DatabaseError) -> CatalogError:
    text = str(exc)
    if "not a database" in text or "malformed" in text or "corrupt" in text:
        return CatalogError(
            f"the session catalog {path} is corrupt ({text}); move it aside to start with an "
            "empty catalog (nothing was changed)"
        )
    if "locked" in text or "busy" in text:
        return CatalogError(f"the session catalog {path} is locked by another process ({text})")
    return CatalogError(f"the session catalog {path} cannot be used: {text}")


def _lock(lock_path: Path, db_path: Path) -> int:
    """Take the exclusive lifetime lock; CatalogError naming the holder when another has it."""
    try:
        fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o600)
    except OSError as exc:
        raise CatalogError(f"cannot open the catalog lock {lock_path}: {exc}") from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        holder = ""
        with contextlib.suppress(OSError, ValueError):
            holder = os.pread(fd, 64, 0).decode().strip()
        os.close(fd)
        who = f" (pid {holder})" if holder.isdigit() else ""
        raise CatalogError(
            f"the session catalog {db_path} is in use by another ahp-bridge{who}; stop it or use "
            "another --data-dir"
        ) from None
    os.ftruncate(fd, 0)
    os.pwrite(fd, str(os.getpid()).encode(), 0)
    return fd


def _unlock(fd: int | None) -> None:
    if fd is None:
        return
    with contextlib.suppress(OSError):
        fcntl.flock(fd, fcntl.LOCK_UN)
    with contextlib.suppress(OSError):
        os.close(fd)


def _settings_text(values: dict[str, Any] | None) -> str:
    return "" if values is None else json.dumps(values, sort_keys=True)


def _json_dict(text: str) -> dict[str, Any] | None:
    """Recorded settings values; None for none recorded (or a value that is not an object)."""
    if not text:
        return None
    try:
        value = json.loads(text)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def _json_list(text: str) -> list[str]:
    try:
        value = json.loads(text)
    except ValueError:
        return []
    return [v for v in value if isinstance(v, str)] if isinstance(value, list) else []


# -- the trio face -----------------------------------------------------------------------------


#: Most queued catalog jobs one thread hop (and one transaction) runs.
BATCH = 512


@dataclass
class _Job:
    fn: Callable[..., Any]
    args: tuple[Any, ...]
    kwargs: dict[str, Any]
    done: trio.Event | None = None
    outcome: tuple[bool, Any] | None = None


class AsyncCatalog:
    """The catalog for the trio host: calls run off the trio thread, one at a time, in order.

    `call(Catalog.method, *args)` waits for the result (or raises its error); `submit` queues a
    write the caller need not wait for (a failure is logged). Both go through one queue served
    by `run`, so they reach the database in the order they were made. Writes still queued when
    the host stops are finished before the connection closes.
    """

    def __init__(self, catalog: Catalog, *, queue: int = 100_000, run: int = 0) -> None:
        self.catalog = catalog
        #: This bridge run's number (see `Catalog.next_run`); its serverSeq starts at first_seq.
        self.run_number = run
        self.first_seq = run * RUN_SEQ_SPAN
        self._limiter = trio.CapacityLimiter(1)
        self._send, self._recv = trio.open_memory_channel[_Job](queue)
        #: Thread hops made (each runs a batch): for tests and benches.
        self.batches = 0
        self._taken: list[_Job] = []

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Serve the queue until `close()` or cancellation; then finish queued writes and close
        the catalog. (The bridge runs it shielded and calls `close()` once its sessions have
        stopped, so the writes they make while stopping are kept.)

        Everything queued when the thread is free goes in one batch (at most `BATCH` jobs):
        one thread hop and one transaction, each job its own savepoint. A chat that evicts a
        turn at every turn's end, or a burst of summaries, then costs one commit per batch
        rather than per write, so the queue (and what it holds in memory) stays short."""
        task_status.started()
        try:
            async for job in self._recv:
                jobs = [job]
                while len(jobs) < BATCH:
                    try:
                        jobs.append(self._recv.receive_nowait())
                    except (trio.WouldBlock, trio.EndOfChannel):
                        break
                self.batches += 1
                self._taken = jobs  # run by _drain if cancelled before the thread ran them
                try:
                    await trio.to_thread.run_sync(self._execute_all, jobs, limiter=self._limiter)
                except Exception as exc:  # the batch's commit failed: none of it was kept
                    for failed in jobs:
                        failed.outcome = (False, exc)
                self._taken = []
                self._finish(jobs)
        finally:
            self._drain()
            self.catalog.close()

    @staticmethod
    def _finish(jobs: list[_Job]) -> None:
        for done in jobs:
            assert done.outcome is not None
            if not done.outcome[0] and done.done is None:
                log.error("catalog write failed", op=done.fn.__name__, error=str(done.outcome[1]))
            if done.done is not None:
                done.done.set()

    def _execute_all(self, jobs: list[_Job]) -> None:
        """Run `jobs` in order in one transaction; each one's outcome on it."""
        with self.catalog.batch():
            for job in jobs:
                try:
                    job.outcome = (True, self._execute(job))
                except Exception as exc:
                    job.outcome = (False, exc)

    def close(self) -> None:
        """Accept no more work: `run` finishes what is queued, closes the catalog and returns."""
        self._send.close()

    def _execute(self, job: _Job) -> Any:
        return job.fn(self.catalog, *job.args, **job.kwargs)

    def _drain(self) -> None:
        """At shutdown: run what is still queued (a batch taken but never run first), here, in
        one transaction (the host is stopping anyway)."""
        self._send.close()
        ran = [job for job in self._taken if job.outcome is not None]
        jobs = [job for job in self._taken if job.outcome is None]
        self._taken = []
        self._finish(ran)
        while True:
            try:
                jobs.append(self._recv.receive_nowait())
            except (trio.WouldBlock, trio.EndOfChannel, trio.ClosedResourceError):
                break
        if not jobs:
            return
        try:
            self._execute_all(jobs)
        except Exception as exc:
            for failed in jobs:
                failed.outcome = (False, exc)
        self._finish(jobs)

    def submit(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> None:
        """Queue `fn(catalog, *args, **kwargs)`; never blocks; failures are logged."""
        try:
            self._send.send_nowait(_Job(fn, args, kwargs))
        except (trio.WouldBlock, trio.ClosedResourceError):
            log.error("catalog write dropped: queue full or closed", op=fn.__name__)

    async def call(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """Run `fn(catalog, *args, **kwargs)` after everything queued before it."""
        job = _Job(fn, args, kwargs, trio.Event())
        try:
            self._send.send_nowait(job)
        except (trio.WouldBlock, trio.ClosedResourceError):
            raise CatalogError("the session catalog is not accepting writes") from None
        assert job.done is not None
        await job.done.wait()
        assert job.outcome is not None
        ok, value = job.outcome
        if not ok:
            raise value
        return cast(T, value)


def retention_cutoff(now_ms: int, days: int) -> str | None:
    """The modified-at bound under which sessions are forgotten; None for 0 (keep forever)."""
    if days <= 0:
        return None
    return iso_from_ms(now_ms - days * 86_400_000)


async def open_catalog(data_dir: Path, *, retention_days: int, now_ms: int) -> AsyncCatalog:
    """Open the catalog under `data_dir` (off the trio thread) and apply the retention.

    Raises CatalogError when the bridge must not start (corrupt, locked, newer schema).
    """

    def work() -> tuple[Catalog, int]:
        catalog = Catalog.open(data_dir)
        try:
            run = catalog.next_run()
            cutoff = retention_cutoff(now_ms, retention_days)
            if cutoff is not None:
                forgotten = catalog.forget_older_than(cutoff)
                if forgotten:
                    log.info("sessions past retention forgotten", count=len(forgotten))
        except BaseException:
            catalog.close()
            raise
        return catalog, run

    catalog, run = await trio.to_thread.run_sync(work)
    return AsyncCatalog(catalog, run=run)
