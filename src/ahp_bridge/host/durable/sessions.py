"""Durable sessions in the running host: what the session manager records and restores.

The session manager records each session (with its settings values) before it is announced
and each chat's provider conversation before the chat is published; this module observes
applied actions to keep titles, modification times, settings values and each chat's running
turn recorded (see `catalog.py` for the store). After a restart, sessions from the catalog stay
*dormant*: listed from their record, not in the store, until a request names them or one of
their chats. Restoring one first rebuilds its settings (the schema from the provider as at
createSession, the recorded values checked loosely: one the provider no longer offers becomes
the default, and the default chat's conversation is switched to it), so every reopen's
OpenRequest carries them; then it reopens each chat's conversation by id, reads its record
(whole, through a HistoryPager when the provider has one), rebuilds the completed turns
(`translate.history`), ends the turn that was running when the bridge stopped as interrupted,
and puts session and chats in the store. A chat whose conversation the provider no longer has
gets a new one, recorded and announced in the chat (host/healing.py). A session that cannot be
restored stays listed, in creationFailed with the reason.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import structlog
import trio

from ahp_bridge import agentapi
from ahp_bridge.host.catalog import (
    FAILED,
    READY,
    AsyncCatalog,
    Catalog,
    ChatRecord,
    SessionRecord,
)
from ahp_bridge.host.healing import announce
from ahp_bridge.host.timeouts import gave_up
from ahp_bridge.host.workspace_paths import directory_path
from ahp_bridge.protocol.action_types import ActionType
from ahp_bridge.state import status as st
from ahp_bridge.state.envelope import Envelope
from ahp_bridge.translate._wire import clean_line
from ahp_bridge.translate.history import mark_interrupted, turns_from_history
from ahp_bridge.translate.session_config import CONTEXT_SIZE, EFFORT, MODEL

if TYPE_CHECKING:
    from ahp_bridge.host.chat import ChatRuntime
    from ahp_bridge.host.sessions import Session, SessionManager

log = structlog.get_logger(__name__)

#: `createSession` config key naming a provider conversation to open as the new session.
IMPORT_CONFIG_KEY = "ahpBridge.importConversation"

#: Items read per HistoryPager window when a reopened chat's record is read.
HISTORY_PAGE = 200

_TURN_ENDS = frozenset(
    {ActionType.CHAT_TURN_COMPLETE, ActionType.CHAT_TURN_CANCELLED, ActionType.CHAT_ERROR}
)
#: Lifecycle channels a request may name, by method: params keys holding one URI or a list.
_NAMED_CHANNELS: dict[str, tuple[str, ...]] = {
    "subscribe": ("channel",),
    "fetchTurns": ("channel",),
    "completions": ("channel",),
    "createChat": ("channel",),
    "disposeChat": ("channel",),
    "initialize": ("initialSubscriptions",),
    "reconnect": ("subscriptions",),
}


class SessionCatalog:
    """What the session manager asks of the catalog: record, observe, list and restore.

    Sessions from an earlier run stay *dormant* (listed from their record, not in the store)
    until a request names them or one of their chats; `restore` then reopens each chat's
    conversation by id, rebuilds its turns from the provider's history (a turn that was
    running when the record was written ends as interrupted) and puts them in the store.
    """

    def __init__(self, catalog: AsyncCatalog, manager: SessionManager) -> None:
        self.catalog = catalog
        self.manager = manager
        self.dormant: dict[str, SessionRecord] = {}
        self._chat_owner: dict[str, str] = {}
        self._restoring: dict[str, trio.Event] = {}
        manager.hub.observers.append(self.observe)

    async def load(self) -> None:
        for record in await self.catalog.call(Catalog.sessions):
            self.dormant[record.uri] = record
            for chat in record.chats:
                self._chat_owner[chat.uri] = record.uri

    async def client_lines(self) -> dict[str, str]:
        """The wire line each client negotiated in earlier runs (for its `reconnect`)."""
        return await self.catalog.call(Catalog.client_lines)

    def remember_client(self, client_id: str, line: str) -> None:
        self.catalog.submit(Catalog.remember_client, client_id, line, self.manager.clock.now_ms())

    def known(self, uri: str) -> bool:
        """A session or chat URI the catalog holds that is not restored yet."""
        return uri in self.dormant or uri in self._chat_owner

    # -- recording -----------------------------------------------------------------------------

    async def session_created(
        self, session: Session, settings: dict[str, Any] | None = None
    ) -> None:
        """Record a new session and its settings values before it is announced (raises when it
        cannot be)."""
        await self.catalog.call(
            Catalog.add_session,
            SessionRecord(
                uri=session.uri,
                provider=session.provider,
                workdir=session.workdir,
                created_at=session.created_at,
                modified_at=session.created_at,
                working_directories=list(session.working_directories),
                import_conversation=session.import_conversation,
                settings=settings,
            ),
        )

    async def chat_opened(
        self, session: Session, chat: ChatRuntime, *, default: bool
    ) -> list[dict[str, Any]] | None:
        """Record a chat's conversation before it is published; for a conversation that
        already has a record (an imported one), also the turns it holds."""
        now = self.manager.clock.now_iso()
        record = ChatRecord(chat.uri, chat.conversation_id, now, now)
        await self.catalog.call(Catalog.add_chat, session.uri, record, default=default)
        if default and session.import_conversation and chat.conversation is not None:
            history = await read_history(chat.entry.provider, chat.conversation, session.workdir)
            return turns_from_history(history)
        return None

    def creation_failed(self, uri: str, message: str) -> None:
        self.catalog.submit(Catalog.update_session, uri, status=FAILED, error=message)

    def session_disposed(self, uri: str) -> None:
        self.catalog.submit(Catalog.forget, uri)

    def chat_disposed(self, uri: str) -> None:
        self.catalog.submit(Catalog.remove_chat, uri)

    def conversation_replaced(self, chat: ChatRuntime) -> None:
        """The chat has a new provider conversation (host/healing.py): reopen that one."""
        self.catalog.submit(Catalog.update_chat, chat.uri, conversation_id=chat.conversation_id)

    def observe(self, envelope: Envelope) -> None:
        """Keep titles, modification times and the running turn of each chat recorded."""
        action = envelope.action
        kind = action.get("type")
        chat = self.manager.chats.get(envelope.channel)
        if chat is not None:
            if kind == ActionType.CHAT_TURN_STARTED:
                running = {
                    "id": action.get("turnId"),
                    "startedAt": action.get("startedAt"),
                    "text": (action.get("message") or {}).get("text", ""),
                }
                self._chat_touched(chat, active_turn=json.dumps(running))
            elif kind in _TURN_ENDS:
                self._chat_touched(chat, active_turn="")
            elif kind == "chat/titleChanged":
                self._chat_touched(chat, title=str(action.get("title") or ""))
            return
        changes = action.get("changes")
        if (
            kind == ActionType.SESSION_CHAT_UPDATED
            and isinstance(changes, dict)
            and "title" in changes
        ):
            chat_uri = action.get("chat")
            if isinstance(chat_uri, str) and chat_uri in self.manager.chats:
                self.catalog.submit(Catalog.update_chat, chat_uri, title=str(changes["title"]))
            return
        if kind == ActionType.SESSION_CONFIG_CHANGED and envelope.channel in self.manager.sessions:
            config = self.manager.hub.store.state(envelope.channel).get("config")
            if isinstance(config, dict):  # accepted, completed or put back: what it holds now
                values = dict(config.get("values") or {})
                self.catalog.submit(Catalog.update_session, envelope.channel, settings=values)
            return
        if kind == ActionType.SESSION_TITLE_CHANGED and envelope.channel in self.manager.sessions:
            now = self.manager.clock.now_iso()
            self.catalog.submit(
                Catalog.update_session,
                envelope.channel,
                title=str(action.get("title") or ""),
                modified_at=now,
            )

    def _chat_touched(self, chat: ChatRuntime, **fields: Any) -> None:
        now = self.manager.clock.now_iso()
        self.catalog.submit(Catalog.update_chat, chat.uri, modified_at=now, **fields)
        self.catalog.submit(Catalog.update_session, chat.session.uri, modified_at=now)

    # -- importing -----------------------------------------------------------------------------

    async def offer_imports(self, params: dict[str, Any], result: dict[str, Any]) -> dict[str, Any]:
        """resolveSessionConfig: offer the provider's own earlier conversations for the working
        directory (Importer) as `ahpBridge.importConversation`, a createSession config value.

        Conversations that are already sessions, or held open by another process, are left out;
        a provider without Importer, or one that fails to answer, adds nothing.
        """
        manager = self.manager
        name = params.get("provider") or next(iter(manager.providers), "")
        entry = manager.providers.get(name)
        if entry is None or not isinstance(entry.provider, agentapi.Importer):
            return result
        directory = params.get("workingDirectory")
        workdir = directory_path(directory) if isinstance(directory, str) else manager.workdir
        try:
            with trio.fail_after(manager.timeouts.provider_read):
                previous = await entry.provider.previous(workdir)
                ids = [p.id for p in previous]
                busy = set(await entry.provider.in_use(ids)) if ids else set()
        except Exception as exc:
            error = gave_up(exc, manager.timeouts, "provider_read")
            log.warning("importable conversations not listed", provider=name, error=error)
            return result
        known = {chat.conversation_id for chat in manager.chats.values()}
        known |= {c.conversation_id for r in self.dormant.values() for c in r.chats}
        known |= {r.import_conversation for r in self.dormant.values()}
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

    # -- listing -------------------------------------------------------------------------------

    def summaries(self) -> list[dict[str, Any]]:
        """Session summaries of the dormant sessions (what listSessions shows for them)."""
        out = []
        for record in self.dormant.values():
            if record.uri in self.manager.sessions:
                continue
            failed = record.status != READY
            newest = max([record.modified_at, *(c.modified_at for c in record.chats)])
            summary: dict[str, Any] = {
                "resource": record.uri,
                "provider": record.provider,
                "title": record.title,
                "status": st.ERROR if failed else st.IDLE,
                "createdAt": record.created_at,
                "modifiedAt": newest,
            }
            if record.working_directories:
                summary["workingDirectories"] = list(record.working_directories)
            summary["chats"] = [
                {"resource": c.uri, "title": c.title, "status": summary["status"]}
                for c in record.chats
            ]
            if record.default_chat:
                summary["defaultChat"] = record.default_chat
            out.append(summary)
        return out

    # -- restoring -----------------------------------------------------------------------------

    async def restore_named(self, method: str, params: Any) -> None:
        """Restore the dormant sessions a request names (by session or chat URI)."""
        if not self.dormant or not isinstance(params, dict):
            return
        for key in _NAMED_CHANNELS.get(method, ()):
            value = params.get(key)
            for uri in value if isinstance(value, list) else [value]:
                if isinstance(uri, str) and self.known(uri):
                    await self.restore(self._chat_owner.get(uri, uri))

    async def restore(self, uri: str) -> None:
        """Bring one dormant session into the store (once; concurrent callers wait for it)."""
        pending = self._restoring.get(uri)
        if pending is not None:
            await pending.wait()
            return
        record = self.dormant.get(uri)
        if record is None:
            return
        done = self._restoring[uri] = trio.Event()
        try:
            await self._restore(record)
        except Exception as exc:
            log.exception("session restore failed", session=uri)
            self._show_failed(record, exc)
        finally:
            self.dormant.pop(uri, None)
            for chat in record.chats:
                self._chat_owner.pop(chat.uri, None)
            del self._restoring[uri]
            done.set()

    def forget_dormant(self, uri: str) -> bool:
        """disposeSession of a session that was never restored: forget it without reopening."""
        record = self.dormant.pop(uri, None)
        if record is None:
            return False
        for chat in record.chats:
            self._chat_owner.pop(chat.uri, None)
        self.session_disposed(uri)
        return True

    async def _restore(self, record: SessionRecord) -> None:
        from ahp_bridge.host.sessions import Session

        manager = self.manager
        session = Session(
            record.uri,
            record.provider,
            record.created_at,
            list(record.working_directories),
            record.workdir,
        )
        session.import_conversation = record.import_conversation
        opened: list[tuple[ChatRuntime, ChatRecord, list[dict[str, Any]]]] = []
        replaced: list[ChatRuntime] = []
        error = self._unrestorable(record)
        config, dropped = await self._settings(session, record) if error is None else (None, {})
        for chat_record in record.chats if error is None else []:
            try:
                try:
                    chat, turns = await self._reopen(session, chat_record)
                except agentapi.ConversationNotFound:  # forgotten: a new one (host/healing.py)
                    chat, turns = await self._replace(session, chat_record), []
                    replaced.append(chat)
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
                opened.append((chat, chat_record, turns))
                continue
            break
        if error is not None:
            for chat, _, _ in opened:
                await chat.close()
            opened = []
        state: dict[str, Any] = {
            "provider": record.provider,
            "title": record.title,
            "status": st.ERROR if error is not None else st.IDLE,
            "lifecycle": "ready" if error is None else "failed",
            "activeClients": [],
            "chats": [],
        }
        if error is not None:
            state["creationError"] = error
        if config is not None:
            state["config"] = config
        if record.working_directories:
            state["workingDirectories"] = list(record.working_directories)
        manager.add_session_channels(record.uri, state)
        manager.sessions[record.uri] = session
        session.announced = next(
            (s for s in self.summaries() if s["resource"] == record.uri), manager.summary(session)
        )
        for chat, chat_record, turns in opened:
            manager._publish_chat(
                session,
                chat,
                turns=turns,
                title=chat_record.title,
                modified_at=chat_record.modified_at,
            )
            if chat_record.uri == record.default_chat:
                manager.hub.apply(
                    record.uri,
                    {"type": ActionType.SESSION_DEFAULT_CHAT_CHANGED, "defaultChat": chat.uri},
                )
                if chat not in replaced:  # a new conversation was opened with the settings
                    self._fall_back(chat, dropped)
            if chat_record.active_turn:
                self.catalog.submit(Catalog.update_chat, chat.uri, active_turn="")
            if chat in replaced:
                announce(chat, chat_record.conversation_id)
        manager._active_sessions_changed()
        log.info("session restored", session=record.uri, chats=len(opened), failed=bool(error))

    async def _settings(
        self, session: Session, record: SessionRecord
    ) -> tuple[dict[str, Any] | None, dict[str, Any]]:
        """The session's `config` state rebuilt from its recorded values, and the values that
        did not survive; sets `session.settings` (so each reopen's OpenRequest carries them)."""
        served = self.manager.config
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

    def _fall_back(self, chat: ChatRuntime, dropped: dict[str, Any]) -> None:
        """A reopened conversation keeps its own model (OpenRequest.model does not switch it):
        when the recorded one is no longer offered, switch it to the default the state shows."""
        chosen = chat.session.settings
        if not chosen.model or not dropped.keys() & {MODEL, EFFORT, CONTEXT_SIZE}:
            return

        def failed(exc: Exception) -> None:
            log.warning("default model not applied", chat=chat.uri, error=type(exc).__name__)

        calls = [lambda c: c.set_model(chosen.model, chosen.effort, chosen.context_size)]
        if not chat.enqueue_calls(calls, failed):
            log.warning("default model not applied", chat=chat.uri, error="queue full")

    def _show_failed(self, record: SessionRecord, exc: Exception) -> None:
        """A restore that broke unexpectedly: the session stays listed, with the error."""
        from ahp_bridge.host.sessions import Session

        manager = self.manager
        if record.uri in manager.sessions or manager.hub.store.has(record.uri):
            return
        state: dict[str, Any] = {
            "provider": record.provider,
            "title": record.title,
            "status": st.ERROR,
            "lifecycle": "failed",
            "creationError": {
                "errorType": type(exc).__name__,
                "message": f"the session could not be restored: {exc or type(exc).__name__}",
            },
            "activeClients": [],
            "chats": [],
        }
        manager.add_session_channels(record.uri, state)
        session = Session(
            record.uri,
            record.provider,
            record.created_at,
            list(record.working_directories),
            record.workdir,
        )
        manager.sessions[record.uri] = session
        session.announced = manager.summary(session)
        manager._active_sessions_changed()

    def _unrestorable(self, record: SessionRecord) -> dict[str, Any] | None:
        if record.provider not in self.manager.providers:
            return {
                "errorType": "providerNotFound",
                "message": f"provider {record.provider!r} is not served by this bridge",
            }
        if record.status == FAILED:
            return {"errorType": "creationFailed", "message": record.error or "creation failed"}
        if not record.chats or not record.default_chat:
            return {
                "errorType": "interrupted",
                "message": "the bridge stopped before this session's conversation was opened",
            }
        return None

    async def _reopen(
        self, session: Session, record: ChatRecord
    ) -> tuple[ChatRuntime, list[dict[str, Any]]]:
        chat = self.manager._new_chat(session, record.uri, title=record.title)
        # the request that named the session waits this long at most, then sees creationFailed
        reopen = self.manager.timeouts.reopen
        try:
            with trio.fail_after(reopen):
                await chat.open(conversation_id=record.conversation_id)
                assert chat.conversation is not None
                history = await read_history(
                    chat.entry.provider, chat.conversation, session.workdir
                )
        except trio.TooSlowError:
            await chat.close()
            raise TimeoutError(
                f"the provider did not reopen the conversation within {reopen:g} s "
                "(timeouts.reopen)"
            ) from None
        except BaseException:
            await chat.close()
            raise
        turns = mark_interrupted(turns_from_history(history), record.running_turn())
        return chat, turns

    async def _replace(self, session: Session, record: ChatRecord) -> ChatRuntime:
        """A new conversation for a chat whose provider no longer has its own; recorded now,
        announced in the chat once it is published."""
        chat = self.manager._new_chat(session, record.uri, title=record.title)
        try:
            with trio.fail_after(self.manager.timeouts.reopen):
                await chat.open(conversation_id="")
        except BaseException:
            await chat.close()
            raise
        log.warning(
            "conversation replaced",
            chat=record.uri,
            lost=record.conversation_id,
            conversation=chat.conversation_id,
        )
        self.conversation_replaced(chat)
        return chat


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
