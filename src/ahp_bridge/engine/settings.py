"""`session/configChanged`: a client changes a session's settings (model, effort, agent, ...).

The change is checked against the session's schema (`translate.session_config.
change_settings`: a value that does not fit, or a model or agent change while a turn runs, is
refused with the reason), applied at once, and its provider calls (`SetModel`, `SelectAgent`)
run on the default chat's queue. When one fails, the settings it claimed are put back, in the
state and in what the next reopen asks for. What the change implies besides (a new model's
defaults) follows as a host action.
"""

from __future__ import annotations

from typing import Any

from ahp_bridge.engine.decision import Accepted, Refused
from ahp_bridge.engine.effects import Log
from ahp_bridge.engine.fanout import Fanout
from ahp_bridge.engine.sessions import Session, Sessions
from ahp_bridge.protocol.action_types import ActionType as A
from ahp_bridge.translate.commands import Call, SelectAgent, SetModel
from ahp_bridge.translate.session_config import ConfigError, change_settings, settings_of

__all__ = ["SessionSettings"]


class SessionSettings:
    def __init__(self, fanout: Fanout, sessions: Sessions) -> None:
        self.fanout = fanout
        self.sessions = sessions

    def decide(self, session: Session, action: dict[str, Any]) -> Accepted | Refused:
        fanout = self.fanout
        store = fanout.store
        state = store.state(session.uri).get("config")
        chat = self.sessions.default_chat(session)
        if not isinstance(state, dict) or chat is None:
            return Refused("this session has no settings yet")
        try:
            change = change_settings(
                state,
                action.get("config") or {},
                replace=bool(action.get("replace")),
                models=chat.provider.models,
                busy=chat.translator.active_turn_id is not None,
            )
        except ConfigError as exc:
            return Refused(str(exc))
        calls: list[Call] = []
        if change.set_model is not None:
            calls.append(SetModel(*change.set_model))
        if change.select_agent is not None:
            calls.append(SelectAgent(change.select_agent))
        if calls and not chat.has_room():
            return Refused(chat.queue_full())
        previous = dict(state.get("values") or {})

        def failed(exc: BaseException) -> None:
            fanout.effects.append(
                Log(
                    "info",
                    "setting not applied",
                    {"session": session.uri, "error": type(exc).__name__},
                )
            )
            session.settings = settings_of(previous)  # the next reopen asks for what holds
            if store.has(session.uri):
                back = {"type": A.SESSION_CONFIG_CHANGED, "config": previous, "replace": True}
                fanout.apply(session.uri, back)

        def then() -> None:
            if calls:
                chat.enqueue_calls(list(calls), failed)
            after = store.state(session.uri).get("config", {}).get("values")
            if after != change.values:  # what the change implies besides (a new model's defaults)
                fixed = {"type": A.SESSION_CONFIG_CHANGED, "config": change.values, "replace": True}
                fanout.apply(session.uri, fixed)
            session.settings = settings_of(change.values)

        return Accepted(session.uri, action, then=[then])
