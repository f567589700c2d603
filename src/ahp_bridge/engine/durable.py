"""What the durable catalog is told as the state changes (the catalog itself is the shell's).

Sessions and chats are recorded when they are made (`createSession`, a chat's first open); this
observer keeps titles, modification times, settings values and each chat's running turn
recorded, as `Persist` jobs in serverSeq order.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from typing import Any

from ahp_bridge.engine.effects import Run
from ahp_bridge.engine.fanout import Fanout, Reaction
from ahp_bridge.engine.jobs import Persist
from ahp_bridge.engine.sessions import Sessions
from ahp_bridge.protocol.action_types import ActionType as A
from ahp_bridge.state.envelope import Envelope

__all__ = ["DurableRecords"]

_TURN_ENDS = frozenset({A.CHAT_TURN_COMPLETE, A.CHAT_TURN_CANCELLED, A.CHAT_ERROR})


class DurableRecords:
    def __init__(self, fanout: Fanout, sessions: Sessions, now_iso: Callable[[], str]) -> None:
        self.store = fanout.store
        self.sessions = sessions
        self.now_iso = now_iso
        fanout.observe(
            self.observe,
            [
                A.CHAT_TURN_STARTED,
                *_TURN_ENDS,
                A.SESSION_CHAT_UPDATED,
                A.SESSION_CONFIG_CHANGED,
                A.SESSION_TITLE_CHANGED,
            ],
        )

    def observe(self, envelope: Envelope) -> Iterable[Reaction]:
        """Keep titles, modification times and the running turn of each chat recorded."""
        action = envelope.action
        kind = action.get("type")
        sessions = self.sessions
        chat = sessions.chats.get(envelope.channel)
        if chat is not None:
            if not envelope.changed:
                return ()  # a no-op (a 1.0 retry of a turn the chat knows): nothing to record
            if kind == A.CHAT_TURN_STARTED:
                running = {
                    "id": action.get("turnId"),
                    "startedAt": action.get("startedAt"),
                    "text": (action.get("message") or {}).get("text", ""),
                }
                return self._chat_touched(
                    chat.uri, chat.session.uri, active_turn=json.dumps(running)
                )
            if kind in _TURN_ENDS:
                return self._chat_touched(chat.uri, chat.session.uri, active_turn="")
            return ()
        changes = action.get("changes")
        if kind == A.SESSION_CHAT_UPDATED and isinstance(changes, dict) and "title" in changes:
            chat_uri = action.get("chat")
            if isinstance(chat_uri, str) and chat_uri in sessions.chats:
                return (_persist("update_chat", chat_uri, title=str(changes["title"])),)
            return ()
        if kind == A.SESSION_CONFIG_CHANGED and envelope.channel in sessions.sessions:
            config = self.store.state(envelope.channel).get("config")
            if isinstance(config, dict):  # accepted, completed or put back: what it holds now
                values = dict(config.get("values") or {})
                return (_persist("update_session", envelope.channel, settings=values),)
            return ()
        if kind == A.SESSION_TITLE_CHANGED and envelope.channel in sessions.sessions:
            return (
                _persist(
                    "update_session",
                    envelope.channel,
                    title=str(action.get("title") or ""),
                    modified_at=self.now_iso(),
                ),
            )
        return ()

    def _chat_touched(self, chat: str, session: str, **fields: Any) -> tuple[Reaction, ...]:
        now = self.now_iso()
        return (
            _persist("update_chat", chat, modified_at=now, **fields),
            _persist("update_session", session, modified_at=now),
        )


def _persist(op: str, *args: Any, **fields: Any) -> Run:
    return Run(Persist(op, args, fields))
