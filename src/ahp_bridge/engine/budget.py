"""The byte ledger: what each client id's accepted actions make the host keep, and its bounds.

Every other limit bounds one factor (a text's size, a count of queued messages, chats,
sessions); their product is what a client can pin, and it was far too much. The ledger bounds
the product: each kept thing is a *slot* of a channel (a chat's draft, one queued message,
an annotation, a session's title, a chat's turn history), charged to the client id whose action
made it, at the size of that action's canonical JSON. A slot's new value replaces its old size;
a slot is released when the state no longer holds what it charged (a queued message ran or was
removed, an annotation removed) and with its channel when the session or chat is disposed.

Two bounds: `limits.max_client_bytes` for one client id and `limits.max_host_bytes` for every
slot together. An action or request that would pass either is refused, with the key named.

Turn history: each chat is charged `limits.max_live_turn_bytes` when it is created (the
completed turns its live state keeps, eviction's bound), so the ledger bounds chats x history
too. What a client adds to a turn is charged as a slot of that turn until the turn is neither
running nor the newest completed one (the two eviction never takes); by then it lies within
the chat's history charge. The provider's own output is not a client's and is not charged.

Sans-IO: fed canonical actions and the store's states; it reads nothing else.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from ahp_bridge.protocol.action_types import ActionType as A
from ahp_bridge.state.envelope import Envelope
from ahp_bridge.state.limits import Limits, size_of
from ahp_bridge.state.store import Store

__all__ = ["HOST", "RELEASES", "Budget", "Slot", "slot_of"]

JSON = dict[str, Any]
#: A slot's name within its channel: ("draft",), ("queued", id), ("turn", turn id, ...).
Slot = tuple[str, ...]
#: The owner of what no client made (sessions restored from the catalog).
HOST = ""

CHAT = ("chat",)
RESERVE = ("reserve",)  # a new session's default chat, before it is published

#: Chat actions a client adds to a turn with (answers, tool results): slots of that turn.
TURN_PARTS = frozenset(
    {
        A.CHAT_INPUT_ANSWER_CHANGED,
        A.CHAT_INPUT_COMPLETED,
        A.CHAT_TOOL_CALL_COMPLETE,
        A.CHAT_TOOL_CALL_CONFIRMED,
        A.CHAT_TOOL_CALL_CONTENT_CHANGED,
        A.CHAT_TOOL_CALL_RESULT_CONFIRMED,
    }
)
#: Envelopes after which a chat's slots are checked against its state (anyone's actions).
CHAT_RELEASES = frozenset(
    {
        A.CHAT_TURN_STARTED,
        A.CHAT_TURN_COMPLETE,
        A.CHAT_TURN_CANCELLED,
        A.CHAT_ERROR,
        A.CHAT_TRUNCATED,
        A.CHAT_PENDING_MESSAGE_SET,
        A.CHAT_PENDING_MESSAGE_REMOVED,
        A.CHAT_WORKING_DIRECTORY_REMOVED,
        A.CHAT_DRAFT_CHANGED,
    }
)
SESSION_RELEASES = frozenset(
    {
        A.SESSION_ACTIVE_CLIENT_REMOVED,
        A.SESSION_WORKING_DIRECTORY_REMOVED,
        A.SESSION_WORKING_DIRECTORY_REPLACED,
    }
)
ANNOTATION_RELEASES = frozenset({A.ANNOTATIONS_REMOVED, A.ANNOTATIONS_ENTRY_REMOVED})
#: Every action type whose envelope may let a slot go.
RELEASES = CHAT_RELEASES | SESSION_RELEASES | ANNOTATION_RELEASES


def live_turn_bytes(limits: Limits) -> int:
    """What one chat's completed turns may hold (`limits.max_live_turn_bytes`)."""
    return limits.max_live_turn_bytes


def slot_of(kind: str, state: JSON, action: JSON) -> Slot | None:
    """The slot canonical client `action` on a `kind` channel in `state` fills (None: it
    keeps nothing that grows: a flag, a cancel, a removal)."""
    t = action.get("type")
    if kind == "chat":
        if t == A.CHAT_TURN_STARTED:
            return ("turn", str(action.get("turnId")))
        if t in TURN_PARTS:
            active = state.get("activeTurn") or {}
            turn = action.get("turnId") or active.get("id") or ""
            item = action.get("toolCallId") or action.get("requestId")
            return ("turn", str(turn), str(t), str(item), str(action.get("questionId", "")))
        if t == A.CHAT_DRAFT_CHANGED:
            return ("draft",)
        if t == A.CHAT_PENDING_MESSAGE_SET:
            if action.get("kind") == "steering":
                return ("steering",)
            return ("queued", str(action.get("id")))
        if t == A.CHAT_WORKING_DIRECTORY_SET:
            return ("dir", str(action.get("directory")))
        return None
    if kind == "session":
        if t == A.SESSION_TITLE_CHANGED:
            return ("title",)
        if t == A.SESSION_ACTIVE_CLIENT_SET:
            return ("activeClient", str((action.get("activeClient") or {}).get("clientId")))
        if t == A.SESSION_WORKING_DIRECTORY_SET:
            return ("dir", str(action.get("directory")))
        if t == A.SESSION_WORKING_DIRECTORY_REPLACED:
            return ("dir", str(action.get("replacement")))
        if t == A.SESSION_CONFIG_CHANGED:
            return ("config",)
        return None
    if kind == "annotations":
        if t == A.ANNOTATIONS_SET:
            return ("annotation", str((action.get("annotation") or {}).get("id")))
        if t == A.ANNOTATIONS_ENTRY_SET:
            entry = action.get("entry") or {}
            return ("annotation", str(action.get("annotationId")), str(entry.get("id")))
        if t == A.ANNOTATIONS_UPDATED:
            return ("annotation", str(action.get("annotationId")), "", "updated")
        return None
    return None


class Budget:
    """The ledger (see the module docstring)."""

    def __init__(self, limits: Limits) -> None:
        self.limits = limits
        #: channel -> slot -> (client id, bytes)
        self._slots: dict[str, dict[Slot, tuple[str, int]]] = {}
        self._clients: dict[str, int] = {}
        self.total = 0

    # -- reading -------------------------------------------------------------------------------

    def of(self, client_id: str) -> int:
        """Bytes charged to `client_id`."""
        return self._clients.get(client_id, 0)

    def charged(self, channel: str, slot: Slot) -> int | None:
        """The bytes of one slot, or None when it holds nothing."""
        held = self._slots.get(channel, {}).get(slot)
        return None if held is None else held[1]

    @property
    def chat_bytes(self) -> int:
        """What each chat is charged for its turn history."""
        return live_turn_bytes(self.limits)

    # -- charging ------------------------------------------------------------------------------

    def problem(self, client_id: str, channel: str, slot: Slot, size: int, what: str) -> str | None:
        """Why charging `size` bytes to `slot` for `client_id` would pass a bound, or None."""
        held = self._slots.get(channel, {}).get(slot)
        freed = held[1] if held is not None and held[0] == client_id else 0
        mine = self.of(client_id) - freed + size
        limit = self.limits.max_client_bytes
        if client_id != HOST and mine > limit:
            return (
                f"{what} needs {size:,} bytes and client {client_id!r} already has the host "
                f"keep {self.of(client_id):,} of the {limit:,} one client may "
                "(limits.max_client_bytes): remove drafts, queued messages, chats or sessions "
                "you no longer need"
            )
        freed = held[1] if held is not None else 0
        host_limit = self.limits.max_host_bytes
        if self.total - freed + size > host_limit:
            return (
                f"{what} needs {size:,} bytes and the host already keeps {self.total:,} of the "
                f"{host_limit:,} it keeps for all clients (limits.max_host_bytes): dispose of "
                "sessions you no longer need or ask the operator to raise it"
            )
        return None

    def charge(self, client_id: str, channel: str, slot: Slot, size: int) -> None:
        """Fill `slot` (replacing what it held) with `size` bytes of `client_id`'s."""
        self.release(channel, slot)
        self._slots.setdefault(channel, {})[slot] = (client_id, size)
        self._clients[client_id] = self._clients.get(client_id, 0) + size
        self.total += size

    def take(self, client_id: str, channel: str, slot: Slot, size: int, what: str) -> str | None:
        """Charge the slot unless a bound refuses it; returns the refusal (None: charged)."""
        problem = self.problem(client_id, channel, slot, size, what)
        if problem is None:
            self.charge(client_id, channel, slot, size)
        return problem

    def move(self, channel: str, slot: Slot, to_channel: str, to_slot: Slot) -> bool:
        """Hand a slot's charge to another slot (a queued message became the running turn)."""
        held = self._slots.get(channel, {}).get(slot)
        if held is None:
            return False
        self.release(channel, slot)
        self.charge(held[0], to_channel, to_slot, held[1])
        return True

    # -- releasing -----------------------------------------------------------------------------

    def release(self, channel: str, slot: Slot) -> None:
        slots = self._slots.get(channel)
        if slots is None:
            return
        held = slots.pop(slot, None)
        if held is not None:
            self._uncharge(*held)
        if not slots:
            del self._slots[channel]

    def release_channel(self, channel: str) -> None:
        """The channel is disposed: everything charged to it goes."""
        for held in (self._slots.pop(channel, None) or {}).values():
            self._uncharge(*held)

    def _uncharge(self, client_id: str, size: int) -> None:
        left = self._clients.get(client_id, 0) - size
        if left > 0:
            self._clients[client_id] = left
        else:
            self._clients.pop(client_id, None)
        self.total -= size

    def _release_where(self, channel: str, gone: Iterable[Slot]) -> None:
        for slot in list(gone):
            self.release(channel, slot)

    # -- following the state -------------------------------------------------------------------

    def admit(self, client_id: str, store: Store, channel: str, action: JSON) -> str | None:
        """Charge accepted client `action` (canonical) on `channel` to its slot, or say why a
        bound refuses it (nothing is charged then)."""
        kind = store.kind(channel)
        slot = None if kind is None else slot_of(kind, store.state(channel), action)
        if slot is None:
            return None
        return self.take(client_id, channel, slot, size_of(action), str(action.get("type")))

    def observe(self, store: Store) -> Callable[[Envelope], Iterable[Any]]:
        """The fan-out observer (for `RELEASES`) that releases what the state let go."""

        def observer(env: Envelope) -> tuple[()]:
            self.follow(store, env.channel, env.action)
            return ()

        return observer

    def follow(self, store: Store, channel: str, action: JSON, *, settle: bool = False) -> None:
        """After `action` on `channel`: release the slots its state no longer holds (every
        kind of slot of the channel when `settle`: a client's action that was a no-op)."""
        slots = self._slots.get(channel)
        t = action.get("type")
        if t == A.CHAT_TURN_STARTED and action.get("queuedMessageId"):
            queued = str(action["queuedMessageId"])  # the host ran a queued (or steering) one
            turn = ("turn", str(action.get("turnId")))
            if not self.move(channel, ("queued", queued), channel, turn):
                self.move(channel, ("steering",), channel, turn)
            slots = self._slots.get(channel)
        if not slots or not store.has(channel):
            return
        state = store.state(channel)
        kind = store.kind(channel)
        if kind == "chat" and (settle or t in CHAT_RELEASES):
            self._release_where(channel, _chat_gone(state, slots))
        elif kind == "session" and (settle or t in SESSION_RELEASES):
            self._release_where(channel, _session_gone(state, slots))
        elif kind == "annotations" and (settle or t in ANNOTATION_RELEASES):
            self._release_where(channel, _annotations_gone(state, slots))


def _chat_gone(state: JSON, slots: dict[Slot, Any]) -> list[Slot]:
    # Runs after every client action on a chat (usually with a draft's slot alone): each
    # kind of slot reads only its own part of the state, the first time one needs it.
    gone: list[Slot] = []
    turns_kept: set[str] | None = None
    queued: set[str] | None = None
    for slot in slots:
        head = slot[0]
        if head == "draft":
            if state.get("draft") is None:
                gone.append(slot)
        elif head == "turn":
            if turns_kept is None:
                active = state.get("activeTurn") or {}
                turns = state.get("turns") or []
                keep = {active.get("id"), turns[-1].get("id") if turns else None} - {None}
                turns_kept = {str(k) for k in keep}
            if slot[1] not in turns_kept:
                gone.append(slot)
        elif head == "queued":
            if queued is None:
                queued = {str(m.get("id")) for m in state.get("queuedMessages") or []}
            if slot[1] not in queued:
                gone.append(slot)
        elif head == "steering":
            if not state.get("steeringMessage"):
                gone.append(slot)
        elif head == "dir" and slot[1] not in (state.get("workingDirectories") or ()):
            gone.append(slot)
    return gone


def _session_gone(state: JSON, slots: dict[Slot, Any]) -> list[Slot]:
    active = {str((c or {}).get("clientId")) for c in state.get("activeClients") or []}
    dirs = set(state.get("workingDirectories") or [])
    return [
        slot
        for slot in slots
        if (slot[0] == "activeClient" and slot[1] not in active)
        or (slot[0] == "dir" and slot[1] not in dirs)
    ]


def _annotations_gone(state: JSON, slots: dict[Slot, Any]) -> list[Slot]:
    entries: dict[str, set[str]] = {
        str(a.get("id")): {str(e.get("id")) for e in a.get("entries") or []}
        for a in state.get("annotations") or []
        if isinstance(a, dict)
    }
    gone = []
    for slot in slots:
        if slot[0] != "annotation":
            continue
        if slot[1] not in entries or (len(slot) == 3 and slot[2] not in entries[slot[1]]):
            gone.append(slot)
    return gone
