"""What the agent changed: `fileEdit` tool results, and the session's, chats' and turns' changesets.

Sources (agentapi only, so any provider works, in process or remote):

* a tool call's `FileEdit`s (path, kind, counts) arrive with its completion. The translator asks
  `tool_edits` for the call's `fileEdit` contents at once; their `before`/`after` point at
  `ahp-content:/edit/...` references that are filled a moment later, when the provider's record
  has been read (see `host/content.py`);
* the provider's record, `Conversation.diff()`, read when a chat opens (the baseline), after each
  tool call that edited files, and when each turn ends (`changes.diff_timeout_seconds` bounds
  every read). Readings of one chat never overlap; requests during one are merged into the next.

What clients get (when the provider's capabilities have `session_diff`):

* the session lists its changesets (`session/changesetsChanged`): the session's changes
  (`ahp-changeset:/<key>/session`, every chat's record together) and each turn's
  (`ahp-changeset:/<key>/turn/{turnId}`); a 1.0 peer also sees each chat's own list
  (`chat/changesetsChanged`: the chat's changes and the same turn template), the lens drops it
  for 0.9 and 0.7;
* a changeset channel (kind `changeset`, bound when the host creates it) holds the files, their
  line counts and their contents, `status` `computing` while its turn runs and `ready` after.
  A turn's channel is created when the turn first changes a file, or when a client subscribes to
  a turn of this session that changed none;
* where the conversation can rewind natively (capability `rewind` and `HistoryRewinder`), a
  turn's changeset offers `undo`: `invokeChangesetOperation` discards that turn and every later
  one of its chat, conversation and files (`conversation-and-files`), and the chat's turns are
  truncated to match. Nothing else is offered.

A turn's files are its record's difference from the turn's start to its end
(`translate.changes.turn_files`); the reading at a turn's start is the latest one finished when
it started, or the one in flight then.
"""

from __future__ import annotations

import os
import stat
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import partial
from typing import Any
from urllib.parse import quote, unquote, urlsplit

import structlog
import trio

from ahp_bridge import agentapi
from ahp_bridge.engine.chats import Chat
from ahp_bridge.engine.effects import Run
from ahp_bridge.engine.fanout import HostAction, Later, Reaction
from ahp_bridge.engine.jobs import ShellJob
from ahp_bridge.engine.peers import Peer
from ahp_bridge.host.runtime.workers import Workers
from ahp_bridge.host.shell import Shell
from ahp_bridge.host.workspace.content import ContentStore
from ahp_bridge.host.workspace.io import READ_FLAGS, fd_path, read_all, text_of
from ahp_bridge.host.workspace.paths import uri_of_path, within_any
from ahp_bridge.protocol import errors as E
from ahp_bridge.protocol.action_types import ActionType
from ahp_bridge.protocol.errors import RpcError
from ahp_bridge.protocol.uris import ROOT
from ahp_bridge.state.store import Envelope
from ahp_bridge.translate.changes import (
    FileChange,
    FileState,
    catalog_entry,
    changeset_file,
    is_created,
    is_deleted,
    reverse_patch,
    snapshot,
    snapshot_files,
    turn_files,
)

__all__ = ["REFRESH", "UNDO", "Changesets"]

log = structlog.get_logger(__name__)

#: The one changeset operation offered: undo a turn (and every later one) with its files.
UNDO = "undo"
#: The shell job that reads a chat's record of changes (again).
REFRESH = "changes.refresh"
#: The shell job that fills a tool edit's "after" from the file on disk.
FROM_DISK = "changes.from_disk"
_PREFIX = "ahp-changeset:/"
_TURN_ENDS = frozenset(
    {ActionType.CHAT_TURN_COMPLETE, ActionType.CHAT_TURN_CANCELLED, ActionType.CHAT_ERROR}
)


@dataclass
class _Pending:
    """One side of a tool call's edit whose content is read after the call completed."""

    uri: str
    path: str
    side: str  # "before" or "after"


@dataclass
class _Turn:
    id: str
    chat: str
    start: dict[str, FileState] | None = None
    files: list[FileChange] = field(default_factory=list)
    channel: str | None = None
    running: bool = True


@dataclass
class _Chat:
    runtime: Chat
    key: str
    snapshot: dict[str, FileState] = field(default_factory=dict)
    turn: str | None = None
    refreshing: bool = False
    again: bool = False
    pending: list[_Pending] = field(default_factory=list)
    start_waiting: list[str] = field(default_factory=list)
    end_waiting: list[str] = field(default_factory=list)


@dataclass
class _Session:
    uri: str
    key: str
    chats: dict[str, _Chat] = field(default_factory=dict)
    turns: dict[str, _Turn] = field(default_factory=dict)
    channels: set[str] = field(default_factory=set)

    @property
    def session_channel(self) -> str:
        return f"{_PREFIX}{self.key}/session"

    def chat_channel(self, chat: _Chat) -> str:
        return f"{_PREFIX}{self.key}/chat/{chat.key}"

    def turn_channel(self, turn_id: str) -> str:
        return f"{_PREFIX}{self.key}/turn/{quote(turn_id, safe='')}"

    @property
    def turn_template(self) -> str:
        return f"{_PREFIX}{self.key}/turn/{{turnId}}"


class Changesets:
    def __init__(
        self,
        shell: Shell,
        workers: Workers,
        content: ContentStore,
        *,
        diff_timeout: float,
        max_read_bytes: int,
    ) -> None:
        self.shell = shell
        self.engine = shell.engine
        self.store = shell.engine.store
        self.workers = workers
        self.content = content
        self.diff_timeout = diff_timeout
        #: Largest file read from disk when the provider's record has no text (workspace's).
        self.max_read_bytes = max_read_bytes
        self._sessions: dict[str, _Session] = {}
        self._by_key: dict[str, _Session] = {}
        shell.observe(
            self._observe,
            [
                ActionType.ROOT_ACTIVE_SESSIONS_CHANGED,
                ActionType.SESSION_CHAT_ADDED,
                ActionType.SESSION_CHAT_REMOVED,
                ActionType.CHAT_TURN_STARTED,
                *_TURN_ENDS,
            ],
        )
        shell.jobs[REFRESH] = self._refresh_job
        shell.jobs[FROM_DISK] = self._from_disk_job
        shell.engine.file_edit_hook = self.tool_edits

    # -- who offers what -----------------------------------------------------------------------

    def _diffs(self, runtime: Chat) -> bool:
        return runtime.provider.capabilities.session_diff

    def _can_undo(self, runtime: Chat) -> bool:
        return runtime.provider.capabilities.rewind and isinstance(
            self.workers.conversation(runtime.uri), agentapi.HistoryRewinder
        )

    # -- the translator's hook: a tool call's edits --------------------------------------------

    def tool_edits(
        self, runtime: Chat, turn_id: str, edits: list[agentapi.FileEdit]
    ) -> list[dict[str, Any]]:
        """The `fileEdit` contents of a completed tool call's edits (their texts follow)."""
        chat = self._chat(runtime)
        out: list[dict[str, Any]] = []
        for edit in edits:
            path = _absolute(edit.path, runtime.session.workdir)
            if not path:
                continue
            uri = uri_of_path(path)
            content: dict[str, Any] = {"type": "fileEdit"}
            sides = ("after",) if is_created(edit.kind) else ()
            if is_deleted(edit.kind):
                sides = ("before",)
            for side in sides or ("before", "after"):
                ref_uri, ref = self.content.pending(path)
                content[side] = {"uri": uri, "content": ref}
                if chat is not None:
                    chat.pending.append(_Pending(ref_uri, path, side))
                elif side == "after":
                    # No record of changes: the file as it is now is the best "after".
                    data = (ref_uri, path, runtime.session.workdir)
                    self.engine.fanout.effects.append(Run(ShellJob(FROM_DISK, data=data)))
                else:
                    self.content.fill(ref_uri, None, "the provider keeps no earlier content")
            if edit.diff_status == "available":
                content["diff"] = {"added": edit.additions, "removed": edit.deletions}
            out.append(content)
        if chat is not None and edits:
            self.engine.fanout.effects.append(Run(ShellJob(REFRESH, runtime.uri)))
        return out

    # -- state observation ---------------------------------------------------------------------

    def _observe(self, envelope: Envelope) -> Iterable[Reaction]:
        kind = envelope.action.get("type")
        channel = envelope.channel
        if channel == ROOT and kind == ActionType.ROOT_ACTIVE_SESSIONS_CHANGED:
            return self._sessions_changed()
        chats = self.engine.sessions.chats
        if kind == ActionType.SESSION_CHAT_ADDED:
            runtime = chats.get(envelope.action.get("summary", {}).get("resource"))
            if runtime is not None and runtime.session.uri == channel:
                return self._chat_added(runtime)
            return ()
        if kind == ActionType.SESSION_CHAT_REMOVED:
            session = self._sessions.get(channel)
            if session is not None:
                session.chats.pop(str(envelope.action.get("chat")), None)
            return ()
        runtime = chats.get(channel)
        chat = self._chat(runtime) if runtime is not None else None
        if chat is None:
            return ()
        turn_id = str(envelope.action.get("turnId", ""))
        if kind == ActionType.CHAT_TURN_STARTED:
            self._turn_started(chat, turn_id)
            return ()
        return self._turn_ended(chat, turn_id)

    def _session(self, runtime: Chat) -> _Session | None:
        return self._sessions.get(runtime.session.uri)

    def _chat(self, runtime: Chat) -> _Chat | None:
        session = self._session(runtime)
        return session.chats.get(runtime.uri) if session is not None else None

    def _chat_added(self, runtime: Chat) -> list[Reaction]:
        if not self._diffs(runtime):
            return []
        reactions: list[Reaction] = []
        session = self._sessions.get(runtime.session.uri)
        if session is None:
            key = str(uuid.uuid4())
            session = _Session(runtime.session.uri, key)
            self._sessions[session.uri] = session
            self._by_key[key] = session
            self._create(session, session.session_channel, "ready", [])
            catalog = [
                catalog_entry(
                    "Session changes",
                    session.session_channel,
                    "session",
                    "Every file the agent changed in this session",
                ),
                catalog_entry(
                    "Turn changes",
                    session.turn_template,
                    "turn",
                    "The files one turn changed",
                ),
            ]
            update = {"type": ActionType.SESSION_CHANGESETS_CHANGED, "changesets": catalog}
            reactions.append(HostAction(session.uri, update))
        chat = _Chat(runtime, quote(runtime.uri.split(":/", 1)[-1], safe=""))
        session.chats[runtime.uri] = chat
        self._create(session, session.chat_channel(chat), "computing", [])
        chat_catalog = [
            catalog_entry("Chat changes", session.chat_channel(chat), "chat"),
            catalog_entry("Turn changes", session.turn_template, "turn"),
        ]
        update = {"type": ActionType.CHAT_CHANGESETS_CHANGED, "changesets": chat_catalog}
        reactions.append(HostAction(runtime.uri, update))
        reactions.append(Run(ShellJob(REFRESH, runtime.uri)))  # the baseline
        return reactions

    def _turn_started(self, chat: _Chat, turn_id: str) -> None:
        session = self._session(chat.runtime)
        if session is None or turn_id in session.turns:
            return
        turn = _Turn(turn_id, chat.runtime.uri)
        session.turns[turn_id] = turn
        chat.turn = turn_id
        if chat.refreshing:
            chat.start_waiting.append(turn_id)  # the reading in flight is its start
        else:
            turn.start = dict(chat.snapshot)

    def _turn_ended(self, chat: _Chat, turn_id: str) -> list[Reaction]:
        session = self._session(chat.runtime)
        turn = session.turns.get(turn_id) if session is not None else None
        if turn is None or not turn.running:
            return []
        if chat.turn == turn_id:
            chat.turn = None
        chat.end_waiting.append(turn_id)
        return [Run(ShellJob(REFRESH, chat.runtime.uri))]

    def _sessions_changed(self) -> list[Reaction]:
        reactions: list[Reaction] = []
        live = self.engine.sessions.sessions
        for uri in [u for u in self._sessions if u not in live]:
            session = self._sessions.pop(uri)
            self._by_key.pop(session.key, None)
            for channel in session.channels:
                if self.store.has(channel):
                    reactions.append(HostAction(channel, {"type": ActionType.CHANGESET_CLEARED}))
                reactions.append(Later(partial(self._dispose, channel)))
            for chat in session.chats.values():
                for pending in chat.pending:
                    self.content.fill(pending.uri, None, "the session is gone")
        return reactions

    def _dispose(self, channel: str) -> None:
        self.engine.fanout.dispose(channel)

    # -- reading the provider's record ---------------------------------------------------------

    async def _refresh_job(self, job: ShellJob) -> None:
        runtime = self.engine.sessions.chats.get(job.channel)
        chat = self._chat(runtime) if runtime is not None else None
        if chat is not None:
            self._request(chat)

    async def _from_disk_job(self, job: ShellJob) -> None:
        uri, path, workdir = job.data
        text, why = await self._read_confined(path, workdir)
        self.content.fill(uri, text, why)

    def _request(self, chat: _Chat) -> None:
        if chat.refreshing:
            chat.again = True
            return
        chat.refreshing = True
        self.shell.nursery.start_soon(self._refresh_loop, chat)

    async def _refresh_loop(self, chat: _Chat) -> None:
        try:
            while True:
                chat.again = False
                await self._refresh(chat)
                if not chat.again:
                    break
        finally:
            chat.refreshing = False

    async def _refresh(self, chat: _Chat) -> None:
        runtime = chat.runtime
        session = self._session(runtime)
        if session is None:
            return
        ending, chat.end_waiting = chat.end_waiting, []
        pending, chat.pending = chat.pending, []
        before = chat.snapshot
        after, problem = await self._read(runtime)
        if after is None:
            after = before
        starts, chat.start_waiting = chat.start_waiting, []
        for turn_id in starts:
            turn = session.turns.get(turn_id)
            if turn is not None and turn.start is None:
                turn.start = dict(before if problem else after)
        chat.snapshot = after
        if problem and not ending and self._diffs(runtime):
            # A record not readable yet (Copilot's captures lag a tool's end): the earlier
            # sides wait for the next reading, at the latest the one at the turn's end.
            later = [p for p in pending if p.side == "before"]
            pending = [p for p in pending if p.side != "before"]
            chat.pending = later + chat.pending
        await self._fill(runtime, pending, before, after, problem)
        if self._session(runtime) is not session:
            return  # disposed meanwhile
        self._publish_totals(session)
        for turn_id in ending:
            turn = session.turns.get(turn_id)
            if turn is not None:
                turn.running = False
                self._publish_turn(session, chat, turn, after)
        if ending:
            self._forget_evicted(session, runtime)
        if chat.turn is not None:
            live = session.turns.get(chat.turn)
            if live is not None and live.start is not None:
                self._publish_turn(session, chat, live, after)

    def _forget_evicted(self, session: _Session, runtime: Chat) -> None:
        """A finished turn that changed no file and left the chat's live state
        (`limits.max_live_turns`) has no changeset to serve and cannot be undone: its record
        goes, so a long chat keeps a record per live turn, not per turn it ever ran."""
        if not self.store.has(runtime.uri):
            return
        live = {t.get("id") for t in self.store.state(runtime.uri).get("turns") or []}
        for turn_id in [
            turn_id
            for turn_id, turn in session.turns.items()
            if turn.chat == runtime.uri
            and not turn.running
            and turn.channel is None
            and turn_id not in live
        ]:
            del session.turns[turn_id]

    async def _read(self, runtime: Chat) -> tuple[dict[str, FileState] | None, str]:
        """The chat's record now, or (None, why it could not be read)."""
        conversation = self.workers.conversation(runtime.uri)
        if conversation is None or not self._diffs(runtime):
            return None, "the provider keeps no record of its changes"
        try:
            with trio.fail_after(self.diff_timeout):
                diffs = await conversation.diff()
        except trio.TooSlowError:
            return None, (
                f"the provider did not report its changes within "
                f"changes.diff_timeout_seconds = {self.diff_timeout} s"
            )
        except agentapi.Unsupported as exc:
            # The provider keeps no record here (Copilot outside a repository, on every turn):
            # an answer, not a failure worth a log line.
            return None, f"the provider keeps no record of its changes here: {exc}"
        except Exception as exc:
            log.info("diff failed", chat=runtime.uri, error=type(exc).__name__)
            return None, f"the provider could not report its changes: {exc}"
        workdir = runtime.session.workdir
        resolved = []
        for diff in diffs:
            path = _absolute(diff.path, workdir)
            if path:
                diff = diff.model_copy(update={"path": path})
                if diff.patch and not diff.before and not diff.after:
                    diff = await self._texts(diff, workdir)
                resolved.append(diff)
        return snapshot(resolved), ""

    async def _texts(self, diff: agentapi.FileDiff, workdir: str) -> agentapi.FileDiff:
        """A record that gives only a patch (Copilot): the text after from the file as it is,
        the text before by applying the patch backwards; unchanged when they do not fit."""
        if diff.binary or diff.truncated:
            return diff
        deleted = is_deleted(diff.status)
        after = ""
        if not deleted:
            text, _ = await self._read_confined(diff.path, workdir)
            if text is None:
                return diff
            after = text
        before = reverse_patch(after, diff.patch)
        if before is None:
            return diff
        return diff.model_copy(update={"before": before, "after": after})

    async def _fill(
        self,
        runtime: Chat,
        pending: list[_Pending],
        before: dict[str, FileState],
        after: dict[str, FileState],
        problem: str,
    ) -> None:
        """Settle the contents of tool edits: the record's texts, else the file on disk."""
        for item in pending:
            was, now = before.get(item.path), after.get(item.path)
            text: str | None = None
            why = problem
            if not problem:
                if item.side == "after":
                    text = now.after if now is not None and now.known else None
                else:
                    source = was or now
                    if was is not None and was.known:
                        text = was.after
                    elif now is not None and now.known:
                        text = now.before
                    elif source is None:
                        why = "the provider's record does not show this file's earlier content"
                if text is None and not why:
                    why = "the provider's record has no text for this file"
            elif item.side == "after":
                text, why = await self._read_confined(item.path, runtime.session.workdir)
            self.content.fill(item.uri, text, why)

    async def _read_confined(self, path: str, workdir: str) -> tuple[str | None, str]:
        """A file's text from disk, only inside the conversation's working directory."""
        limit = self.max_read_bytes

        def read() -> tuple[str | None, str]:
            outside = "the file is outside the working directory"
            root = os.path.realpath(workdir) if os.path.isabs(workdir) else ""
            real = os.path.realpath(path)
            if not root or within_any(real, [root]) is None:
                return None, outside
            try:
                # as resourceRead opens: never blocks on a FIFO, never follows a late symlink,
                # and checks where it opened (a parent swapped for a symlink meanwhile)
                fd = os.open(real, READ_FLAGS)
                try:
                    opened = fd_path(fd)
                    if opened is not None and within_any(opened, [root]) is None:
                        return None, outside
                    if not stat.S_ISREG(os.fstat(fd).st_mode):
                        return None, "the file is not a regular file"
                    data = read_all(fd, limit + 1)
                finally:
                    os.close(fd)
            except OSError as exc:
                return None, f"the file cannot be read: {exc.strerror or exc}"
            if len(data) > limit:
                return None, f"the file is larger than workspace.max_read_bytes = {limit}"
            text = text_of(data)
            return (text, "") if text is not None else (None, "the file is binary or not UTF-8")

        return await trio.to_thread.run_sync(read)

    # -- publishing ----------------------------------------------------------------------------

    def _ref(self, path: str) -> Callable[[str | None], dict[str, Any] | None]:
        return lambda text: self.content.ref(text, name=path)

    def _files(self, changes: list[FileChange]) -> list[dict[str, Any]]:
        return [changeset_file(change, uri_of_path, self._ref(change.path)) for change in changes]

    def _create(
        self,
        session: _Session,
        channel: str,
        status: str,
        files: list[dict[str, Any]],
        operations: list[dict[str, Any]] | None = None,
    ) -> None:
        state: dict[str, Any] = {"status": status, "files": files}
        if operations:
            state["operations"] = operations
        self.store.create(channel, "changeset", state)
        session.channels.add(channel)

    def _set(
        self,
        session: _Session,
        channel: str,
        status: str,
        files: list[dict[str, Any]],
        operations: list[dict[str, Any]] | None = None,
    ) -> None:
        store = self.store
        if not store.has(channel):
            self._create(session, channel, status, files, operations)
            return
        state = store.state(channel)
        if state.get("files") != files:
            self.shell.apply(
                channel, {"type": ActionType.CHANGESET_CONTENT_CHANGED, "files": files}
            )
        if (state.get("operations") or None) != (operations or None):
            self.shell.apply(
                channel,
                {"type": ActionType.CHANGESET_OPERATIONS_CHANGED, "operations": operations or []},
            )
        if state.get("status") != status:
            self.shell.apply(
                channel, {"type": ActionType.CHANGESET_STATUS_CHANGED, "status": status}
            )

    def _publish_totals(self, session: _Session) -> None:
        merged: dict[str, FileState] = {}
        for chat in session.chats.values():
            for path, state in chat.snapshot.items():
                merged.setdefault(path, state)
            if self.store.has(session.chat_channel(chat)):
                files = self._files(snapshot_files(chat.snapshot))
                self._set(session, session.chat_channel(chat), "ready", files)
        self._set(session, session.session_channel, "ready", self._files(snapshot_files(merged)))

    def _publish_turn(
        self, session: _Session, chat: _Chat, turn: _Turn, now: dict[str, FileState]
    ) -> None:
        if turn.start is None:
            return
        turn.files = turn_files(turn.start, now)
        if not turn.files and turn.channel is None:
            return
        turn.channel = session.turn_channel(turn.id)
        status = "computing" if turn.running else "ready"
        self._set(session, turn.channel, status, self._files(turn.files), self._operations(chat))
        if not turn.running:
            turn.start = None  # its files are final; the reading is not needed any more

    def _operations(self, chat: _Chat) -> list[dict[str, Any]] | None:
        if not self._can_undo(chat.runtime):
            return None
        return [
            {
                "id": UNDO,
                "label": "Undo this turn",
                "description": "Discard this turn and every later one, and restore the files "
                "they changed",
                "scopes": ["changeset"],
                "confirmation": "This discards this turn and every later turn of the chat, "
                "and puts back the files they changed.",
                "icon": "discard",
                "status": "idle",
            }
        ]

    # -- channels made on demand ---------------------------------------------------------------

    def materialize(self, uri: str) -> bool:
        """Create the (empty) changeset of a turn of a live session that changed no file."""
        parsed = _turn_of(uri)
        if parsed is None:
            return False
        key, turn_id = parsed
        session = self._by_key.get(key)
        turn = session.turns.get(turn_id) if session is not None else None
        if session is None or turn is None:
            return False
        status = "computing" if turn.running else "ready"
        self._create(session, uri, status, [])
        turn.channel = uri
        return True

    # -- invokeChangesetOperation --------------------------------------------------------------

    async def invoke(self, peer: Peer, params: dict[str, Any]) -> dict[str, Any]:
        channel = params["channel"]
        parsed = _turn_of(channel)
        session = self._by_key.get(parsed[0]) if parsed is not None else None
        if not self.store.has(channel) or session is None or channel not in session.channels:
            if self.store.has(channel) and self.store.kind(channel) == "changeset":
                raise RpcError(
                    E.INVALID_PARAMS,
                    f"Invalid params: operationId: {params['operationId']!r} is not an "
                    f"operation of {channel} (it offers none)",
                )
            raise RpcError(E.NOT_FOUND, f"No such changeset: {channel}")
        assert parsed is not None
        operations = self.store.state(channel).get("operations") or []
        operation_id = params["operationId"]
        if not any(op.get("id") == operation_id for op in operations):
            offered = ", ".join(op.get("id", "") for op in operations) or "none"
            raise RpcError(
                E.INVALID_PARAMS,
                f"Invalid params: operationId: {operation_id!r} is not an operation of "
                f"{channel} (offered: {offered})",
            )
        target = params.get("target")
        if target is not None:
            raise RpcError(
                E.INVALID_PARAMS,
                f"Invalid params: target: {operation_id!r} applies to the whole changeset; "
                "leave target out",
            )
        turn = session.turns.get(parsed[1])
        runtime = self.engine.sessions.chats.get(turn.chat) if turn is not None else None
        if turn is None or runtime is None:
            raise RpcError(E.NOT_FOUND, f"No such changeset: {channel} (its chat is gone)")
        return await self._undo(session, runtime, turn, channel)

    async def _undo(
        self, session: _Session, runtime: Chat, turn: _Turn, channel: str
    ) -> dict[str, Any]:
        if runtime.translator.active_turn_id is not None:
            raise RpcError(
                E.TURN_IN_PROGRESS,
                "A turn is running in this chat: undo a turn when the chat is idle",
            )
        turns = self.store.state(runtime.uri).get("turns") or []
        index = next((i for i, t in enumerate(turns) if t.get("id") == turn.id), None)
        item_id = runtime.translator.user_items.get(turn.id) or (
            turn.id if index is not None else None
        )
        if index is None or not item_id:
            raise RpcError(
                E.NOT_FOUND,
                f"Not found: turn {turn.id} is no longer in its chat, so it cannot be undone",
            )
        conversation = self.workers.conversation(runtime.uri)
        if conversation is None or not isinstance(conversation, agentapi.HistoryRewinder):
            raise RpcError(
                E.PERMISSION_DENIED, "Permission denied: the conversation cannot rewind now"
            )
        running = {"type": ActionType.CHANGESET_OPERATION_STATUS_CHANGED, "operationId": UNDO}
        self.shell.apply(channel, {**running, "status": "running"})
        try:
            with trio.fail_after(self.diff_timeout):
                result = await conversation.rewind(item_id, agentapi.REWIND_CONVERSATION_AND_FILES)
        except Exception as exc:
            message = (
                f"the provider did not answer within changes.diff_timeout_seconds = "
                f"{self.diff_timeout} s; the outcome is unknown"
                if isinstance(exc, trio.TooSlowError)
                else str(exc) or type(exc).__name__
            )
            error = {"errorType": type(exc).__name__, "message": message}
            if self.store.has(channel):
                self.shell.apply(channel, {**running, "status": "error", "error": error})
            raise RpcError(E.INTERNAL_ERROR, f"The turn could not be undone: {message}") from None
        # The chat loses the turn and every later one, as the conversation did.
        truncate: dict[str, Any] = {"type": ActionType.CHAT_TRUNCATED}
        if index > 0:
            truncate["turnId"] = turns[index - 1]["id"]
        self.shell.apply(runtime.uri, truncate)
        discarded = [t.get("id") for t in turns[index:]]
        for turn_id in discarded:
            gone = session.turns.pop(str(turn_id), None)
            if gone is not None and gone.channel is not None and self.store.has(gone.channel):
                self.shell.apply(gone.channel, {"type": ActionType.CHANGESET_CLEARED})
                self.shell.apply(
                    gone.channel,
                    {"type": ActionType.CHANGESET_OPERATIONS_CHANGED, "operations": []},
                )
        chat = self._chat(runtime)
        if chat is not None:
            self._request(chat)
        restored = len(result.restored_files) + result.restored_omitted
        skipped = len(result.skipped_files) + result.skipped_omitted
        message = f"Discarded {len(discarded)} turn(s); restored {restored} file(s)"
        if skipped:
            reasons = "; ".join(f"{s.path}: {s.reason}" for s in result.skipped_files[:5])
            message += f"; {skipped} file(s) were left as they are ({reasons})"
        return {"message": message + "."}


def _turn_of(uri: str) -> tuple[str, str] | None:
    """(session key, turn id) of a turn changeset URI of this host, else None."""
    if not uri.startswith(_PREFIX):
        return None
    parts = uri[len(_PREFIX) :].split("/")
    if len(parts) != 3 or parts[1] != "turn" or not parts[0] or not parts[2]:
        return None
    return parts[0], unquote(parts[2])


def _absolute(path: str, workdir: str) -> str:
    """A provider-reported path made absolute against the conversation's working directory."""
    if not path:
        return ""
    if path.startswith("file:"):
        path = unquote(urlsplit(path).path)
    if not os.path.isabs(path):
        if not os.path.isabs(workdir):
            return ""
        path = os.path.join(workdir, path)
    return os.path.normpath(path)
