"""Self-healing chats: a chat whose provider no longer knows its conversation gets a new one.

A provider forgets a conversation when its store is gone: a remote provider restarted without
its data directory, a record deleted by hand, a runtime reinstalled. Every later call then
fails with `ConversationNotFound`, so without healing the chat would be dead for good. Instead
the host opens a fresh conversation for the chat, records its id (durable sessions reopen that
one from then on), tells the user in the chat with a `systemNotification` and goes on: the
prompt that found out runs on the new conversation, and so does every later one.

agentapi's rule that "the caller must not create a replacement" is about silent replacements:
this one is the host's explicit decision, announced in the transcript and recorded, and the old
id is never passed off as the new. The new conversation starts empty: the contract has no way
to hand a provider a transcript (Importer only lists a provider's own earlier conversations),
so no provider can be seeded from the bridge's copy; the notice says the agent does not
remember the earlier turns, which stay visible in the chat while the bridge runs.

The notice goes where the state rules allow: into the running turn as a response part when a
turn is active (the prompt that found out), otherwise as a host turn of its own, whose message
has origin `systemNotification` (at restore, or after a call outside a turn).
"""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING, Any

import structlog

from ahp_bridge import agentapi
from ahp_bridge.protocol.action_types import ActionType
from ahp_bridge.translate.commands import SelectAgent, Send, SetModel, SetTitle

if TYPE_CHECKING:
    from ahp_bridge.host.chat import ChatRuntime

log = structlog.get_logger(__name__)

__all__ = ["CARRIED", "NOTICE", "announce", "recover", "replace_conversation"]

NOTICE = (
    "The agent no longer had this chat's conversation (its provider lost it, for example when "
    "it restarted without its data), so a new conversation was started. It does not remember "
    "the earlier turns of this chat: repeat what it needs to know."
)
#: The `_meta` key that marks the notice (clients may style it; tests find it).
META_KEY = "ahpBridge.conversationReplaced"
#: Calls that mean the same on the new conversation, so the one that found out runs again
#: there (the provider did not have the conversation, so it accepted nothing). Answers,
#: steering and cancels concern what the lost conversation was doing: they fail as they did.
CARRIED = (Send, SetModel, SetTitle, SelectAgent)
#: Why a turn the lost conversation was running ended.
LOST = "the provider no longer has this chat's conversation; a new one was started"
_STARTS = frozenset({ActionType.CHAT_TURN_STARTED, ActionType.CHAT_TURN_RESUME})


async def recover(chat: ChatRuntime, action: dict[str, Any]) -> agentapi.Conversation:
    """A call on `chat`'s open conversation raised ConversationNotFound: end the turn it was
    running (unless that turn is the one `action` is starting), then replace it."""
    running = chat.translator.active_turn_id
    own = action.get("type") in _STARTS and action.get("turnId") == running
    if running is not None and not own:
        chat._apply_all(chat.translator.fail_turn("conversationLost", LOST))
    return await replace_conversation(chat, chat.conversation_id)


async def replace_conversation(chat: ChatRuntime, lost: str) -> agentapi.Conversation:
    """Open a new conversation for `chat` in place of `lost`, record it and tell the user.

    Raises what `Provider.open` raises (the chat then fails the call as it would have).
    """
    await chat.let_go("closing a lost conversation")  # it is gone already: only tidiness
    await chat.open(conversation_id="")
    conversation = _conversation(chat)
    log.warning(
        "conversation replaced", chat=chat.uri, lost=lost, conversation=chat.conversation_id
    )
    durable = chat.manager.durable
    if durable is not None:
        durable.conversation_replaced(chat)
    announce(chat, lost)
    return conversation


def _conversation(chat: ChatRuntime) -> agentapi.Conversation:
    assert chat.conversation is not None, "open sets the conversation"
    return chat.conversation


def announce(chat: ChatRuntime, lost: str) -> None:
    """Put the notice in the chat: in its running turn, or as a host turn of its own."""
    store = chat.hub.store
    if not store.has(chat.uri):
        return  # not published yet (a restore): the caller announces once it is
    part: dict[str, Any] = {
        "kind": "systemNotification",
        "content": NOTICE,
        "_meta": {META_KEY: {"lost": lost, "conversation": chat.conversation_id}},
    }
    active = store.state(chat.uri).get("activeTurn")
    turn_id = active.get("id") if isinstance(active, dict) else None
    if turn_id is not None:
        # The turn that found out: its provider content comes after the notice (a turn the
        # lost conversation was running has ended before a replacement is made).
        chat.hub.apply(
            chat.uri, {"type": ActionType.CHAT_RESPONSE_PART, "turnId": turn_id, "part": part}
        )
        return
    host_turn = str(uuid.uuid4())
    now = chat.manager.clock.now_iso()
    message = {"text": NOTICE, "origin": {"kind": "systemNotification"}}
    chat.hub.apply(
        chat.uri,
        {
            "type": ActionType.CHAT_TURN_STARTED,
            "turnId": host_turn,
            "startedAt": now,
            "message": message,
        },
    )
    chat.hub.apply(
        chat.uri, {"type": ActionType.CHAT_RESPONSE_PART, "turnId": host_turn, "part": part}
    )
    chat.hub.apply(
        chat.uri, {"type": ActionType.CHAT_TURN_COMPLETE, "turnId": host_turn, "duration": 0}
    )
