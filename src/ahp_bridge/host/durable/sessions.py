"""Durable sessions, the waiting half: recording new ones, and restoring those of an earlier run.

The engine decides what is recorded (`engine.durable`) and when a dormant session must come back
(a request names it: `effects.Restore`); this room does the I/O. Each session is recorded (with
its settings values) before it is announced and each chat's provider conversation before the
chat is published (see `catalog.py` for the store). Restoring a session first rebuilds its
settings (the schema from the provider as at createSession, the recorded values checked
loosely: one the provider no longer offers becomes the default, and the default chat's
conversation is switched to it), so every reopen's OpenRequest carries them; then it reopens
each chat's conversation by id, reads its record (whole, through a HistoryPager when the
provider has one), rebuilds the completed turns (`translate.history`), ends the turn that was
running when the bridge stopped as interrupted, and hands it all to the engine
(`Sessions.restored`). A chat whose conversation the provider no longer has gets a new one,
recorded and announced in the chat. A session that cannot be restored stays listed, in
creationFailed with the reason.
"""

from __future__ import annotations

from functools import partial
from typing import Any

import structlog
import trio

from ahp_bridge import agentapi
from ahp_bridge.engine.chats import Chat
from ahp_bridge.engine.jobs import ArchiveTurns, OpenConversation, Persist, ReadTurns
from ahp_bridge.engine.records import ChatRecord, SessionRecord
from ahp_bridge.engine.sessions import (
    IMPORT_CONFIG_KEY,
    NewSession,
    ReopenedChat,
    Session,
    Sessions,
)
from ahp_bridge.host.durable.catalog import AsyncCatalog, Catalog
from ahp_bridge.host.features.session_config import SessionConfig
from ahp_bridge.host.runtime.providers import Providers
from ahp_bridge.host.runtime.timeouts import gave_up
from ahp_bridge.host.runtime.workers import Workers
from ahp_bridge.host.shell import Shell
from ahp_bridge.host.workspace.paths import directory_path
from ahp_bridge.translate._wire import clean_line
from ahp_bridge.translate.history import mark_interrupted, turns_from_history

__all__ = ["HISTORY_PAGE", "IMPORT_CONFIG_KEY", "DurableSessions", "read_history"]

log = structlog.get_logger(__name__)

#: Items read per HistoryPager window when a reopened chat's record is read.
HISTORY_PAGE = 200


class DurableSessions:
    """What the host asks of the catalog: record, list, offer imports and restore."""

    def __init__(
        self,
        catalog: AsyncCatalog,
        shell: Shell,
        providers: Providers,
        workers: Workers,
        config: SessionConfig | None,
    ) -> None:
        self.catalog = catalog
        self.shell = shell
        self.engine = shell.engine
        self.providers = providers
        self.workers = workers
        self.config = config
        self._restoring: dict[str, trio.Event] = {}

    async def load(self) -> dict[str, str]:
        """The sessions of earlier runs (dormant), and each client's wire line (for reconnect)."""
        self.engine.sessions.dormant.load(await self.catalog.call(Catalog.sessions))
        return await self.catalog.call(Catalog.client_lines)

    def persist(self, job: Persist) -> None:
        self.catalog.submit(getattr(Catalog, job.op), *job.args, **job.fields)

    def archive(self, job: ArchiveTurns) -> None:
        """Turns a chat evicted from the live state: into the catalog's `turns`, in order."""
        self.catalog.submit(Catalog.store_turns, job.chat, job.start, list(job.turns))

    async def read_turns(self, job: ReadTurns) -> list[dict[str, Any]]:
        """Archived turns back (after every archive job submitted before)."""
        return await self.catalog.call(Catalog.read_turns, job.chat, job.start, job.stop)

    # -- recording -----------------------------------------------------------------------------

    async def session_created(
        self, new: NewSession, workdir: str, settings: dict[str, Any] | None = None
    ) -> None:
        """Record a new session and its settings values before it is announced (raises when it
        cannot be)."""
        await self.catalog.call(
            Catalog.add_session,
            SessionRecord(
                uri=new.uri,
                provider=new.provider,
                workdir=workdir,
                created_at=new.created_at,
                modified_at=new.created_at,
                working_directories=list(new.working_directories),
                import_conversation=new.import_conversation,
                settings=settings,
            ),
        )

    async def chat_opened(
        self,
        chat_uri: str,
        conversation_id: str,
        default: bool,
        conversation: agentapi.Conversation,
    ) -> list[dict[str, Any]] | None:
        """Record a chat's conversation before it is published; for a conversation that
        already has a record (an imported one), also the turns it holds."""
        chat = self.engine.sessions.opening.get(chat_uri)
        if chat is None:
            return None
        session = self.engine.sessions.sessions.get(chat.session.uri)
        now = self.engine.now_iso()
        record = ChatRecord(chat_uri, conversation_id, now, now)
        await self.catalog.call(Catalog.add_chat, chat.session.uri, record, default=default)
        if default and session is not None and session.import_conversation:
            provider = self.providers.providers[chat.provider.name]
            history = await read_history(provider, conversation, session.workdir)
            return turns_from_history(history)
        return None

    # -- importing -----------------------------------------------------------------------------

    async def offer_imports(self, params: dict[str, Any], result: dict[str, Any]) -> dict[str, Any]:
        """resolveSessionConfig: offer the provider's own earlier conversations for the working
        directory (Importer) as `ahpBridge.importConversation`, a createSession config value.

        Conversations that are already sessions, or held open by another process, are left out;
        a provider without Importer, or one that fails to answer, adds nothing.
        """
        name = params.get("provider") or next(iter(self.providers.providers), "")
        provider = self.providers.providers.get(name)
        if provider is None or not isinstance(provider, agentapi.Importer):
            return result
        sessions = self.engine.sessions
        directory = params.get("workingDirectory")
        workdir = directory_path(directory) if isinstance(directory, str) else sessions.workdir
        timeouts = self.providers.timeouts
        try:
            with trio.fail_after(timeouts.provider_read):
                previous = await provider.previous(workdir)
                ids = [p.id for p in previous]
                busy = set(await provider.in_use(ids)) if ids else set()
        except Exception as exc:
            error = gave_up(exc, timeouts, "provider_read")
            log.warning("importable conversations not listed", provider=name, error=error)
            return result
        dormant = sessions.dormant.records.values()
        known = {chat.conversation_id for chat in sessions.chats.values()}
        known |= {c.conversation_id for r in dormant for c in r.chats}
        known |= {r.import_conversation for r in dormant}
        offered = [p for p in previous if p.id not in known and p.id not in busy]
        if offered:
            result["schema"]["properties"][IMPORT_CONFIG_KEY] = {
                "type": "string",
                "title": "Continue a conversation",
                "description": f"Open one of {name}'s earlier conversations in this directory "
                "as the new session, with its turns",
                "enum": [p.id for p in offered],
                "enumLabels": [clean_line(p.title) or p.id for p in offered],
            }
        return result

    # -- restoring -----------------------------------------------------------------------------

    async def restore(self, uris: tuple[str, ...]) -> None:
        """Bring the named dormant sessions into the store (each once; concurrent callers wait)."""
        for uri in uris:
            await self._restore_once(uri)

    async def _restore_once(self, uri: str) -> None:
        pending = self._restoring.get(uri)
        if pending is not None:
            await pending.wait()
            return
        record = self.engine.sessions.dormant.records.get(uri)
        if record is None:
            return
        done = self._restoring[uri] = trio.Event()
        try:
            await self._restore(record)
        except Exception as exc:
            log.exception("session restore failed", session=uri)
            broke = partial(Sessions.restore_broke, record=record, exc=exc)
            self.shell.settle_with(lambda engine: broke(engine.sessions))
        finally:
            del self._restoring[uri]
            done.set()

    async def _restore(self, record: SessionRecord) -> None:
        sessions = self.engine.sessions
        session = sessions.restoring(record)
        opened: list[ReopenedChat] = []
        error = sessions.restore_problem(record)
        config, dropped = await self._settings(session, record) if error is None else (None, {})
        for chat_record in record.chats if error is None else []:
            try:
                try:
                    reopened = await self._reopen(session, chat_record)
                except agentapi.ConversationNotFound:  # forgotten: a new one
                    reopened = await self._replace(session, chat_record)
            except agentapi.ConversationNotFound as exc:
                message = (
                    f"the provider no longer has conversation {chat_record.conversation_id!r} "
                    f"({exc}); the session cannot be reopened"
                )
                if chat_record.uri != record.default_chat:
                    log.warning("chat not restored", chat=chat_record.uri, error=str(exc))
                    continue
                error = {"errorType": "conversationNotFound", "message": message}
            except Exception as exc:
                message = f"reopening the provider conversation failed: {exc or type(exc)}"
                if chat_record.uri != record.default_chat:
                    log.warning("chat not restored", chat=chat_record.uri, error=str(exc))
                    continue
                error = {"errorType": type(exc).__name__, "message": message}
            else:
                opened.append(reopened)
                continue
            break
        if error is not None:
            for reopened in opened:
                await self._let_go(reopened.chat)
            opened = []
        chats = opened
        self.shell.settle_with(
            lambda engine: engine.sessions.restored(
                record, session, config=config, dropped=dropped, chats=chats, error=error
            )
        )

    async def _settings(
        self, session: Session, record: SessionRecord
    ) -> tuple[dict[str, Any] | None, dict[str, Any]]:
        """The session's `config` state rebuilt from its recorded values, and the values that
        did not survive; sets `session.settings` (so each reopen's OpenRequest carries them)."""
        served = self.config
        if served is None:
            return None, {}
        config, session.settings, dropped = await served.for_restore(
            record.provider, record.settings, session.workdir
        )
        if dropped:
            log.info(
                "settings no longer offered, defaults used",
                session=record.uri,
                recorded=dropped,
                now={k: config["values"].get(k) for k in dropped},
            )
        if config["values"] != record.settings:
            self.catalog.submit(Catalog.update_session, record.uri, settings=config["values"])
        return config, dropped

    async def _open(
        self, session: Session, chat: Chat, conversation_id: str
    ) -> agentapi.Conversation:
        plan = chat.wanted_tools()
        job = OpenConversation(chat.uri, chat.open_request(conversation_id, plan))
        worker = self.workers.worker(chat.uri, chat.provider.name)
        opened = await worker.open(job)
        chat.opened(plan, opened)
        assert worker.conversation is not None
        return worker.conversation

    async def _let_go(self, chat: Chat) -> None:
        worker = self.workers.get(chat.uri)
        if worker is not None:
            await worker.let_go("close")
            self.workers.forget(worker)

    async def _reopen(self, session: Session, record: ChatRecord) -> ReopenedChat:
        chat = self.engine.new_chat(session, record.uri)
        # the request that named the session waits this long at most, then sees creationFailed
        reopen = self.providers.timeouts.reopen
        provider = self.providers.providers[session.provider]
        try:
            with trio.fail_after(reopen):
                conversation = await self._open(session, chat, record.conversation_id)
                history = await read_history(provider, conversation, session.workdir)
        except trio.TooSlowError:
            await self._let_go(chat)
            raise TimeoutError(
                f"the provider did not reopen the conversation within {reopen:g} s "
                "(timeouts.reopen)"
            ) from None
        except BaseException:
            await self._let_go(chat)
            raise
        turns = mark_interrupted(turns_from_history(history), record.running_turn())
        return ReopenedChat(chat, record, turns)

    async def _replace(self, session: Session, record: ChatRecord) -> ReopenedChat:
        """A new conversation for a chat whose provider no longer has its own; recorded now,
        announced in the chat once it is published."""
        chat = self.engine.new_chat(session, record.uri)
        try:
            with trio.fail_after(self.providers.timeouts.reopen):
                await self._open(session, chat, "")
        except BaseException:
            await self._let_go(chat)
            raise
        log.warning(
            "conversation replaced",
            chat=record.uri,
            lost=record.conversation_id,
            conversation=chat.conversation_id,
        )
        self.catalog.submit(Catalog.update_chat, chat.uri, conversation_id=chat.conversation_id)
        return ReopenedChat(chat, record, [], replaced=True)


async def read_history(
    provider: agentapi.Provider, conversation: agentapi.Conversation, workdir: str
) -> agentapi.History:
    """A conversation's record; the main agent's items read whole through a HistoryPager
    when the provider has one (a plain read may shorten a large record)."""
    history = await conversation.history()
    if not isinstance(provider, agentapi.HistoryPager):
        return history
    items: list[agentapi.Item] = []
    anchor = ""
    while True:
        window = await provider.read_history_window(
            agentapi.WindowRequest(
                conversation_id=conversation.id(),
                workdir=workdir,
                item_id=anchor,
                before=HISTORY_PAGE,
            )
        )
        chunk = window.items[: window.at] if anchor else window.items
        items[:0] = chunk
        if window.start or not chunk:
            break
        anchor = chunk[0].id
    others = [item for item in history.items if item.agent_id]
    return history.model_copy(update={"items": items + others, "truncated": False})
