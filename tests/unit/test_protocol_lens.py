"""The lens: each wire version's view of one canonical state stays consistent with what it sends.

The property, for every wire line: a client that starts from the host's snapshot in its
version and reduces the envelopes it is sent (with its version's reducers: `reduce_07` for 0.7,
the canonical ones for 0.9 and 1.0) ends where the host's snapshot in its version is, its 0.7
`modifiedAt` included (the host dates each action with its own clock, a distinct time per
action here, and 0.7 shows the time of the last one the 0.7.0 reducer stamps). Consistency
alone would pass a lens that drops a field from snapshots and actions alike, so each line's
final state is also checked against the canonical one: it holds every canonical field except
those the line is declared to omit (`OMITTED`), with the canonical value except where the line
is declared to reshape it (`RESHAPED`); and a fixture of a line's own version gives that line's
expected state outright. It is checked on every reducer fixture we hold, run as canonical
sequences (our 1.0 set as is; the 0.7.0 sets, ours and the release's, lifted as a 0.7 peer's
actions are; the `chat/turnsLoaded` ones as the store pages turns in, see
`converge_paged`), and on hand-made sequences of the actions whose older forms are rebuilt
(turnResume, workingDirectoryReplaced, chatsReordered) or need the 0.7 view of a session's
status. Every action sent validates, strictly, against its version's schema.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from ahp_bridge.engine.fanout import Fanout
from ahp_bridge.protocol import wire06, wire07, wire08
from ahp_bridge.protocol.lens import Wire, wires
from ahp_bridge.protocol.versions import V06, V07, V08, V09, V10, Line
from ahp_bridge.state.envelope import Envelope
from ahp_bridge.state.reducers import reduce
from ahp_bridge.state.store import Store
from tests.support.paths import FIXTURES
from tests.support.wire_schema import for_line

NOW = "2026-12-01T00:00:00.000Z"
#: The 0.7.0 fixtures' mocked reducer clock (their README): an expected `modifiedAt` of this
#: value says the 0.7.0 reducer stamped.
FIXTURE_CLOCK_07 = "1970-01-01T00:00:09.999Z"
URIS = {
    "chat": "ahp-chat:/c",
    "session": "copilot:/s",
    "annotations": "copilot:/s/annotations",
    "terminal": "ahp-terminal:/t",
    "root": "ahp-root://",
    "changeset": "ahp-changeset:/x",
    "resourceWatch": "ahp-resource-watch:/w",
}

#: The canonical state fields each line leaves out, by kind (what that line's schema lacks, or,
#: for 0.9, what only 1.0-only actions maintain: `wire09`'s table).
OMITTED: dict[Line, dict[str, frozenset[str]]] = {
    V10: {},
    V09: {"chat": frozenset({"backgroundWork", "changesets", "movable", "canvases"})},
    V08: {
        "chat": frozenset({"changes", "movable", "changesets", "backgroundWork", "canvases"}),
        "session": frozenset({"origin"}),
        "terminal": frozenset({"lifecycle"}),
    },
    V07: {
        "chat": frozenset({"changes", "movable", "changesets", "backgroundWork", "canvases"}),
        "session": frozenset({"origin"}),
        "terminal": frozenset({"lifecycle"}),
    },
    V06: {
        "chat": frozenset(
            {"changes", "movable", "changesets", "backgroundWork", "canvases", "workingDirectories"}
        ),
        "session": frozenset({"origin", "workingDirectories"}),
        "terminal": frozenset({"lifecycle", "isPty"}),
    },
}
#: Fields a line leaves out only where their value has no form in it (a side chat's origin).
DROPPABLE: dict[Line, dict[str, frozenset[str]]] = {V06: {"chat": frozenset({"origin"})}}
#: The fields each line carries in a shape of its own, by kind: every other field it holds has
#: the canonical value.
RESHAPED: dict[Line, dict[str, frozenset[str]]] = {
    V10: {"session": frozenset({"_meta"})},  # the background tasks' key is 0.7's and 0.9's
    V09: {"chat": frozenset({"status"}), "session": frozenset({"customizations"})},
    V08: {
        "chat": frozenset({"status", "turns", "activeTurn", "modifiedAt"}),
        "session": frozenset({"lifecycle", "chats", "customizations"}),
        "terminal": frozenset({"claim", "exitCode"}),  # the exited lifecycle's exitCode
        "annotations": frozenset({"annotations"}),
        "root": frozenset({"terminals"}),
        "changeset": frozenset({"status"}),
    },
    V07: {
        "chat": frozenset({"status", "turns", "activeTurn", "modifiedAt"}),
        "session": frozenset({"status", "lifecycle", "chats", "customizations", "activeClients"}),
        "terminal": frozenset({"claim", "exitCode"}),  # the exited lifecycle's exitCode
        "annotations": frozenset({"annotations"}),
        "root": frozenset({"terminals"}),
        "changeset": frozenset({"status"}),
    },
    V06: {
        "chat": frozenset(
            {
                "status",
                "turns",
                "activeTurn",
                "modifiedAt",
                "workingDirectory",  # the first of workingDirectories
                "steeringMessage",  # messages: chat attachments as simple ones
                "queuedMessages",
                "draft",
            }
        ),
        "session": frozenset(
            {
                "status",
                "lifecycle",
                "chats",
                "customizations",
                "activeClients",
                "workingDirectory",
                "inputNeeded",  # tool calls: no lazy input, terminal results
            }
        ),
        "terminal": frozenset({"claim", "exitCode"}),
        "annotations": frozenset({"annotations"}),
        "root": frozenset({"terminals", "agents"}),
        "changeset": frozenset({"status"}),
    },
}

_EPOCH = datetime(2030, 1, 1, tzinfo=UTC)


def host_time(index: int) -> str:
    """The host's clock when it applies the `index`th action: a distinct time per action."""
    return (_EPOCH + timedelta(seconds=index + 1)).strftime("%Y-%m-%dT%H:%M:%S.000Z")


class Host:
    """One channel in a store, written through the fan-out (the one writer, which feeds every
    line's own views), with the host's clock set by hand for each action."""

    def __init__(self, uri: str, kind: str, initial: dict[str, Any], **store: Any) -> None:
        self.uri, self.kind = uri, kind
        self.store = Store(**store)
        self.store.create(uri, kind, initial)
        self.now = NOW
        self.fanout = Fanout(self.store, clock=lambda: self.now)
        self.wires = self.fanout.wires

    def apply(self, action: dict[str, Any], at: str = NOW) -> Envelope:
        self.now = at
        return self.fanout.apply(self.uri, action)

    def snapshot(self, wire: Wire | None, last_turns: int | None = None) -> dict[str, Any]:
        """The state a subscriber of `wire`'s line is given (None: the canonical one)."""
        state = self.store.snapshot(self.uri, last_turns=last_turns)["state"]
        return state if wire is None else wire.state(self.kind, state, channel=self.uri)


def strip_none(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: strip_none(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [strip_none(v) for v in value]
    return value


def reduce_as(wire: Wire, kind: str, uri: str, state: Any, action: Any, now: str) -> Any:
    return wire.reduce(kind, state, action, now=now, canonical=reduce, channel=uri)


def check_action(wire: Wire, action: dict[str, Any], *, strict: bool) -> None:
    if wire.line != V10:  # 1.0 relays what it does not know; every older line drops it
        assert action["type"] in wire.actions.types, (wire.line, action["type"])
    if strict:
        for schema in for_line(wire.line):
            schema.check("StateAction", action)


def carried(line: Line, kind: str, canonical: dict[str, Any], shown: dict[str, Any]) -> None:
    """`shown` (a line's state) holds what the canonical state holds, as `OMITTED`/`RESHAPED`
    say: a field a lens loses from snapshots and actions alike shows up here."""
    canonical, shown = strip_none(canonical), strip_none(shown)
    omitted = OMITTED[line].get(kind, frozenset())
    reshaped = RESHAPED[line].get(kind, frozenset())
    droppable = DROPPABLE.get(line, {}).get(kind, frozenset())
    lacks = set(canonical) - omitted - set(shown) - droppable
    assert not sorted(lacks), f"{line} {kind} lacks these"
    assert not sorted(omitted & set(shown)), f"{line} {kind} holds fields it omits"
    assert not sorted(set(shown) - set(canonical) - reshaped), f"{line} {kind} holds extra"
    differ = [k for k in set(canonical) & set(shown) - reshaped if shown[k] != canonical[k]]
    assert not differ, f"{line} {kind} changed {differ}"


Sent = list[tuple[Any, str]]  # (envelope, the host time it was applied at)

#: What 0.6.0 cannot say (ahp-0.6-0.8-diff.md §8): a 0.6 peer's state differs from its next
#: snapshot in these fields only, wherever the fixtures below change them.
NOT_IN_0_6: dict[str, frozenset[str]] = {
    # No 0.6 action changes a working directory: the next snapshot shows the change.
    "workingDirectory": frozenset({"workingDirectory"}),
    # 0.6's chat/toolCallDelta requires `content`: a content-less one (with an invocation
    # message) is sent with "", which 0.6's reducer appends: "" where canonical holds none.
    "partialInput": frozenset({"partialInput"}),
    # 0.6's chat/toolCallReady has no contributor or intention: 0.7's refinement of a tool
    # call's provisional ones is not said.
    "contributor": frozenset({"contributor", "intention"}),
}
INEXPRESSIBLE: dict[Line, dict[str, str]] = {
    V06: {
        "ahp-1.0.0/reducers/017-toolcallready-keeps-client-ownership.json": "contributor",
        "ahp-1.0.0/reducers/019-toolcalldelta-without-content-keeps-input.json": "partialInput",
        "ahp-1.0.0/reducers/024-workingdirectoryreplaced-collapses-duplicates.json": (
            "workingDirectory"
        ),
        "ahp-0.7.0-release/reducers/220-toolcall-actions-update-meta.json": "partialInput",
        "ahp-0.7.0-release/reducers/257-toolcallready-refines-metadata-without-changing-"
        "client-ownership.json": "contributor",
        **{
            f"{folder}/reducers/{name}.json": "workingDirectory"
            for folder in ("ahp-0.7.0", "ahp-0.7.0-release")
            for name in (
                "241-session-workingdirectoryset-adds-to-empty-set",
                "244-session-workingdirectoryremoved-removes-existing",
                "247-chat-workingdirectoryset-adds-to-empty-set",
                "250-chat-workingdirectoryremoved-removes-existing",
            )
        },
    }
}


def not_said(name: str) -> dict[Line, str]:
    """What each line cannot say of the fixture `name` (`INEXPRESSIBLE`)."""
    return {line: table[name] for line, table in INEXPRESSIBLE.items() if name in table}


def differing(a: Any, b: Any) -> set[str]:
    """The innermost keys (at any depth) under which `a` and `b` differ ("." at the top)."""
    if isinstance(a, dict) and isinstance(b, dict):
        out: set[str] = set()
        for key in set(a) | set(b):
            if a.get(key) != b.get(key):
                out |= {k for k in differing(a.get(key), b.get(key)) if k != "."} or {key}
        return out
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        return set().union(*(differing(x, y) for x, y in zip(a, b, strict=True)))
    return set() if a == b else {"."}


def check_lines(
    host: Host,
    start: dict[Line, Any],
    sent: Sent,
    snapshot: Callable[[Wire | None], dict[str, Any]],
    *,
    strict: bool,
    inexpressible: dict[Line, str] | None = None,
) -> dict[Line, Any]:
    """Every line's client, from its `start`, reduces what it is `sent` to the line's
    `snapshot`, which carries the canonical state's fields; return what each line holds.

    `inexpressible`: a line whose client holds a different value in that one field (and only
    there: `NOT_IN_0_6`), since the line cannot say the change."""
    kind, uri = host.kind, host.uri
    canonical = snapshot(None)
    held: dict[Line, Any] = {}
    for line, wire in host.wires.items():
        local = start[line]
        for env, at in sent:
            for params in env.wires(wire):
                check_action(wire, params["action"], strict=strict)
                local = reduce_as(wire, kind, uri, local, params["action"], at)
        final = snapshot(wire)
        field = (inexpressible or {}).get(line)
        if field is None:
            assert strip_none(local) == strip_none(final), line
        else:
            found = differing(strip_none(local), strip_none(final))
            assert found and found <= NOT_IN_0_6[field], (line, field, found)
        carried(line, kind, canonical, final)
        held[line] = final
    return held


def converge(
    kind: str,
    initial: dict[str, Any],
    actions: list[dict[str, Any]],
    *,
    strict: bool = False,
    inexpressible: dict[Line, str] | None = None,
) -> dict[Line, Any]:
    """Apply canonical `actions`; assert every line converges; return what each line holds."""
    host = Host(URIS[kind], kind, initial)
    start = {line: host.snapshot(wire) for line, wire in host.wires.items()}
    sent = [(host.apply(a, host_time(i)), host_time(i)) for i, a in enumerate(actions)]
    expected = initial
    for action in actions:
        expected = reduce(kind, expected, action)
    assert host.store.state(host.uri) == expected  # the store holds what the reducers make
    return check_lines(host, start, sent, host.snapshot, strict=strict, inexpressible=inexpressible)


def converge_paged(initial: dict[str, Any], page: dict[str, Any]) -> dict[Line, Any]:
    """A fixture's `chat/turnsLoaded` as the host pages turns in, every line converging.

    The store holds every turn and a client sees a window of them (`initial`'s turns, behind
    the store's own cursor); the page is the store's (`load_older_turns`, applied by the store)
    and brings the turns of `page` the window lacks; a cursor on `page` means older turns remain,
    so the store holds one more. Each line then holds the store's window, through its lens.
    """
    uri = URIS["chat"]
    window = initial["turns"]
    shown = {t["id"] for t in window}
    brought = [t for t in page["turns"] if t["id"] not in shown]
    assert brought, "a page that brings no turn the window lacks is no page the host sends"
    older = [{**brought[0], "id": "older"}] if "turnsNextCursor" in page else []
    full = {k: v for k, v in initial.items() if k != "turnsNextCursor"}
    full["turns"] = older + brought + window
    host = Host(uri, "chat", full, turns_page_size=len(brought))

    def snapshot(wire: Wire | None) -> dict[str, Any]:
        return host.snapshot(wire, last_turns=len(window))

    start = {line: snapshot(wire) for line, wire in host.wires.items()}
    loaded = host.store.load_older_turns(uri, start[V10]["turnsNextCursor"])
    assert loaded["turns"] == brought
    sent = [(host.apply(loaded, host_time(0)), host_time(0))]
    held = check_lines(host, start, sent, snapshot, strict=False)
    assert [t["id"] for t in held[V10]["turns"]] == [t["id"] for t in brought + window]
    assert ("turnsNextCursor" in held[V10]) == bool(older)
    return held


Case = tuple[str, str, dict[str, Any], list[Any], Line, dict[str, Any], dict[str, Any]]


def _fixtures(folder: str, lift: bool) -> list[Case]:
    """(name, kind, canonical initial, canonical actions, the fixture's line, its initial and
    expected state in that line's shapes)."""
    out = []
    for path in sorted((FIXTURES / folder).glob("*.json")):
        fixture = json.loads(path.read_text())
        kind = fixture["reducer"]
        initial = own_initial = strip_none(fixture["initial"])
        actions = [strip_none(a) for a in fixture["actions"]]
        if lift:
            uri = URIS[kind]
            initial = wire07.up_state(kind, initial, channel=uri)
            actions = [wire07.up_action(kind, a, channel=uri) for a in actions]
        own = V07 if lift else V10
        expected = strip_none(fixture["expected"])
        out.append((f"{folder}/{path.name}", kind, initial, actions, own, own_initial, expected))
    return out


CORPUS = (
    _fixtures("ahp-1.0.0/reducers", lift=False)
    + _fixtures("ahp-0.7.0/reducers", lift=True)
    + _fixtures("ahp-0.7.0/forward-compat/reducers", lift=True)
    + _fixtures("ahp-0.7.0-release/reducers", lift=True)
)


def test_the_corpus_is_every_fixture() -> None:
    assert len(CORPUS) == 33 + 239 + 6 + 247
    assert sum(any(a["type"] == "chat/turnsLoaded" for a in c[3]) for c in CORPUS) == 4
    names = {c[0] for c in CORPUS}
    for table in INEXPRESSIBLE.values():
        assert set(table) <= names and set(table.values()) <= set(NOT_IN_0_6)
    assert len(INEXPRESSIBLE[V06]) == 13  # the only fixtures a 0.6 peer cannot follow exactly


@pytest.mark.parametrize("case", CORPUS, ids=[c[0] for c in CORPUS])
def test_every_line_converges_on_every_fixture(case: Case) -> None:
    name, kind, initial, actions, own, own_initial, expected = case
    if kind == "chat" and not isinstance(initial.get("turns"), list):
        pytest.fail(f"{name}: a chat fixture without turns")
    if any(a.get("type") == "chat/turnsLoaded" for a in actions):
        if len(actions) != 1:
            pytest.fail(f"{name}: the paging model takes one chat/turnsLoaded and nothing else")
        held = converge_paged(initial, actions[0])
        # The window's cursor is the store's own; the turns are the fixture's.
        assert held[own]["turns"] == expected["turns"]
        assert ("turnsNextCursor" in held[own]) == ("turnsNextCursor" in expected)
        return
    held = converge(kind, initial, actions, inexpressible=not_said(name))
    state = strip_none(held[own])
    stamped = expected.get("modifiedAt") == FIXTURE_CLOCK_07 != own_initial.get("modifiedAt")
    if own == V07 and kind == "chat" and stamped:  # the 0.7.0 reducer stamped its clock
        assert state.pop("modifiedAt") in {host_time(i) for i in range(len(actions))}
        expected = {k: v for k, v in expected.items() if k != "modifiedAt"}
    assert state == expected, name


# -- hand-made sequences: the rebuilt forms, checked strictly ----------------------------------

MSG = {"text": "go", "origin": {"kind": "user"}}
ERR = {"errorType": "providerExit", "message": "gone"}


def chat() -> dict[str, Any]:
    return {"resource": URIS["chat"], "title": "c", "status": 1, "modifiedAt": NOW, "turns": []}


def start(turn_id: str, at: str = "2026-12-01T00:00:00.000Z") -> dict[str, Any]:
    return {"type": "chat/turnStarted", "turnId": turn_id, "startedAt": at, "message": MSG}


def md(turn_id: str, part: str, text: str) -> list[dict[str, Any]]:
    return [
        {
            "type": "chat/responsePart",
            "turnId": turn_id,
            "part": {"kind": "markdown", "id": part, "content": ""},
        },
        {"type": "chat/delta", "turnId": turn_id, "partId": part, "content": text},
    ]


def test_a_resumed_turn_in_every_version() -> None:
    question = {"id": "r1", "message": "Sure?", "questions": []}
    actions = [
        start("t0"),
        *md("t0", "a", "first"),
        {"type": "chat/turnComplete", "turnId": "t0", "duration": 5},
        start("t1", "2026-12-01T00:01:00.000Z"),
        *md("t1", "b", "partial"),
        {"type": "chat/usage", "turnId": "t1", "usage": {"inputTokens": 3, "outputTokens": 4}},
        {"type": "chat/inputRequested", "request": question},
        {
            "type": "chat/error",
            "turnId": "t1",
            "duration": 10,
            "part": {"kind": "error", "error": ERR, "resumable": True},
        },
        {"type": "chat/turnResume", "turnId": "t1"},
        *md("t1", "c", " and the rest"),
        {"type": "chat/inputCompleted", "requestId": "r1", "response": "accept"},
        {"type": "chat/turnComplete", "turnId": "t1", "duration": 900},
        start("t1", "2026-12-01T00:09:00.000Z"),  # a retried start of a known turn: no-op
    ]
    held = converge("chat", chat(), actions, strict=True)
    assert [t["id"] for t in held[V07]["turns"]] == ["t0", "t1"]
    assert [p["kind"] for p in held[V07]["turns"][1]["responseParts"]] == [
        "markdown",
        "inputRequest",
        "markdown",
    ]
    assert [p["kind"] for p in held[V10]["turns"][1]["responseParts"]] == [
        "markdown",
        "inputRequest",
        "error",
        "markdown",
    ]
    assert held[V10]["modifiedAt"] == "2026-12-01T00:01:00.900Z"  # startedAt + duration
    # The host's time, as 0.7 always saw: of the turnComplete, the last action 0.7.0 stamps (the
    # retried start after it changes nothing and reaches no 0.7 peer).
    assert held[V07]["modifiedAt"] == host_time(len(actions) - 2)


def test_the_first_turn_resumed_truncates_everything_for_0_7() -> None:
    actions = [
        start("t1"),
        {
            "type": "chat/error",
            "turnId": "t1",
            "duration": 1,
            "part": {"kind": "error", "error": ERR, "resumable": True},
        },
        {"type": "chat/turnResume", "turnId": "t1"},
    ]
    host = Host(URIS["chat"], "chat", chat())
    envs = [host.apply(a) for a in actions]
    sent = [w["action"]["type"] for w in envs[-1].wires(host.wires[V07])]
    assert sent == ["chat/truncated", "chat/turnStarted"]
    assert "turnId" not in envs[-1].wires(host.wires[V07])[0]["action"]  # no earlier turn kept
    converge("chat", chat(), actions, strict=True)


def test_chat_only_1_0_fields_stay_out_of_older_lines() -> None:
    shell = {
        "id": "w1",
        "label": "npm test",
        "startedAt": NOW,
        "kind": "shell",
        "command": "npm test",
    }
    changeset = {"label": "Turn", "uriTemplate": "ahp-changeset:/{turnId}", "changeKind": "turn"}
    actions = [
        {"type": "chat/backgroundWorkSet", "work": shell},
        {"type": "chat/changesetsChanged", "changesets": [changeset]},
        {"type": "chat/isReadChanged", "isRead": True},
        {"type": "chat/isArchivedChanged", "isArchived": True},
        start("t1"),
        {"type": "chat/backgroundWorkRemoved", "id": "w1"},
        {"type": "chat/backgroundWorkSet", "work": {**shell, "id": "w2"}},
    ]
    held = converge("chat", chat(), actions, strict=True)
    assert held[V10]["backgroundWork"] == [{**shell, "id": "w2"}]
    assert held[V10]["status"] == 8 | 64  # turnStarted cleared IsRead
    for line in (V09, V07):
        assert {"backgroundWork", "changesets"}.isdisjoint(held[line])
        assert held[line]["status"] == 8


def session(**extra: Any) -> dict[str, Any]:
    base = {
        "provider": "copilot",
        "title": "s",
        "status": 1,
        "lifecycle": "ready",
        "activeClients": [],
        "chats": [],
    }
    return {**base, **extra}


def summary(uri: str) -> dict[str, Any]:
    return {"resource": uri, "title": uri, "status": 1, "modifiedAt": NOW}


def test_session_rebuilds_and_the_0_7_status() -> None:
    execution = {
        "id": "x1",
        "kind": "toolClientExecution",
        "chat": "ahp-chat:/a",
        "turnId": "t",
        "clientId": "vscode",
        "toolCall": {
            "status": "running",
            "toolCallId": "c",
            "toolName": "usages",
            "displayName": "Usages",
            "invocationMessage": "Find usages",
            "confirmed": "not-needed",
            "contributor": {"kind": "client", "clientId": "vscode"},
        },
    }
    plugin = {
        "type": "plugin",
        "id": "p1",
        "uri": "file:///p",
        "name": "P",
        "enablement": [{"kind": "global", "enabled": False}],
    }
    mcp = {
        "type": "mcpServer",
        "id": "m1",
        "uri": "mcp:/gh",
        "name": "gh",
        "state": {"kind": "starting", "blocking": True},
    }
    client = {
        "clientId": "vscode",
        "tools": [],
        "customizations": [{"type": "plugin", "id": "vs", "uri": "vs:/x", "name": "VS"}],
    }
    actions = [
        {"type": "session/chatAdded", "summary": summary("ahp-chat:/a")},
        {"type": "session/chatAdded", "summary": summary("ahp-chat:/b")},
        {"type": "session/chatAdded", "summary": summary("ahp-chat:/c")},
        {"type": "session/defaultChatChanged", "defaultChat": "ahp-chat:/a"},
        {"type": "session/chatsReordered", "chats": ["ahp-chat:/c", "ahp-chat:/a", "ahp-chat:/b"]},
        {"type": "session/chatsReordered", "chats": ["ahp-chat:/c"]},  # not a permutation
        *[{"type": "session/workingDirectorySet", "directory": f"file:///{d}"} for d in "abcd"],
        {
            "type": "session/workingDirectoryReplaced",
            "directory": "file:///b",
            "replacement": "file:///x",
        },
        {
            "type": "session/workingDirectoryReplaced",
            "directory": "file:///d",
            "replacement": "file:///a",
        },
        {"type": "session/inputNeededSet", "request": execution},
        {"type": "session/inputNeededRemoved", "id": "x1"},
        {"type": "session/customizationsChanged", "customizations": [plugin, mcp]},
        {
            "type": "session/customizationToggled",
            "id": "p1",
            "enablement": [{"kind": "session", "enabled": True}],
        },
        {"type": "session/mcpServerBackgroundRequested", "id": "m1"},
        {"type": "session/activeClientSet", "activeClient": client},
        {"type": "session/metaChanged", "_meta": {"ahpBridge.backgroundTasks": {"known": True}}},
        {"type": "session/creationFailed", "error": {"errorType": "x", "message": "y"}},
    ]
    # 0.6 cannot say the working directories change (its peer sees them in the next snapshot).
    held = converge(
        "session", session(), actions, strict=True, inexpressible={V06: "workingDirectory"}
    )
    assert [c["resource"] for c in held[V07]["chats"]] == [
        "ahp-chat:/c",
        "ahp-chat:/a",
        "ahp-chat:/b",
    ]
    assert held[V07]["defaultChat"] == "ahp-chat:/a"
    assert held[V07]["workingDirectories"] == ["file:///a", "file:///x", "file:///c"]
    assert held[V10]["workingDirectories"] == held[V07]["workingDirectories"]
    assert (held[V10]["lifecycle"], held[V07]["lifecycle"]) == ("failed", "creationFailed")
    # 0.7 counted the client execution as InputNeeded and so ends InProgress; 1.0 never did.
    assert (held[V10]["status"], held[V07]["status"]) == (1, 8)
    assert held[V07]["customizations"][0]["enabled"] is True
    assert "enablement" not in held[V07]["customizations"][0]
    assert held[V10]["customizations"][1]["state"] == {"kind": "starting", "blocking": False}
    assert "blocking" not in held[V09]["customizations"][1]["state"]
    assert "_meta" not in held[V10] or "ahpBridge.backgroundTasks" not in held[V10]["_meta"]
    assert held[V07]["_meta"]["ahpBridge.backgroundTasks"] == {"known": True}
    assert held[V07]["activeClients"][0]["customizations"][0]["enabled"] is True
    # 0.8 has 1.0's working-directory replacement, enablement and InputNeeded rule; 0.6 has
    # 0.7's rules, and one working directory.
    assert held[V08]["workingDirectories"] == held[V10]["workingDirectories"]
    assert held[V08]["status"] == 1 and held[V08]["lifecycle"] == "creationFailed"
    assert held[V08]["customizations"][0]["enablement"] == [{"kind": "session", "enabled": True}]
    assert "blocking" not in held[V08]["customizations"][1]["state"]
    assert held[V08]["_meta"]["ahpBridge.backgroundTasks"] == {"known": True}
    assert held[V06]["workingDirectory"] == "file:///a" and "workingDirectories" not in held[V06]
    assert (held[V06]["status"], held[V06]["customizations"][0]["enabled"]) == (8, True)
    assert [c["resource"] for c in held[V06]["chats"]] == [
        c["resource"] for c in held[V07]["chats"]
    ]


def test_a_0_7_peers_actions_are_lifted_and_come_back_unchanged() -> None:
    channel = URIS["annotations"]
    for kind, action in [
        ("session", {"type": "session/customizationToggled", "id": "p", "enabled": False}),
        (
            "session",
            {
                "type": "session/activeClientSet",
                "activeClient": {
                    "clientId": "vs",
                    "tools": [],
                    "customizations": [
                        {"type": "plugin", "id": "p", "uri": "u:/p", "name": "P", "enabled": True}
                    ],
                },
            },
        ),
        (
            "annotations",
            {
                "type": "annotations/set",
                "annotation": {
                    "id": "n",
                    "turnId": "t1",
                    "resource": "file:///a",
                    "resolved": False,
                    "entries": [],
                },
            },
        ),
        ("annotations", {"type": "annotations/updated", "annotationId": "n", "turnId": "t2"}),
    ]:
        lifted = wire07.up_action(kind, action, channel=channel)
        for_line(V10)[0].check("StateAction", lifted)
        assert wire07.down_actions(kind, lifted) == [action]


def test_a_terminal_and_annotations_in_every_version() -> None:
    terminal = {
        "title": "sh",
        "content": [],
        "lifecycle": {"status": "running"},
        "claim": {"kind": "client", "clientId": "vs"},
    }
    held = converge(
        "terminal",
        terminal,
        [
            {"type": "terminal/data", "data": "hi"},
            {
                "type": "terminal/claimed",
                "claim": {"kind": "session", "session": "copilot:/s", "chat": "ahp-chat:/a"},
            },
            {"type": "terminal/exited", "exitCode": 2},
        ],
        strict=True,
    )
    assert held[V07]["exitCode"] == 2 and "lifecycle" not in held[V07]
    assert "chat" not in held[V07]["claim"]
    annotation = {
        "id": "n",
        "origin": {"session": "copilot:/s", "turnId": "t1"},
        "resource": "file:///a",
        "resolved": False,
        "entries": [],
    }
    held = converge(
        "annotations",
        {"annotations": []},
        [
            {"type": "annotations/set", "annotation": annotation},
            {
                "type": "annotations/updated",
                "annotationId": "n",
                "origin": {"session": "copilot:/s", "chat": "ahp-chat:/a", "turnId": "t2"},
            },
        ],
        strict=True,
    )
    assert held[V07]["annotations"][0]["turnId"] == "t2"


TERMINAL_RESULT = {
    "type": "terminal",
    "resource": "ahp-terminal:/t1",
    "title": "sh",
    "isPty": True,
    "result": {"exitCode": 1, "preview": "boom", "truncated": False},
}


def test_0_6_tool_calls_messages_and_chats() -> None:
    """What 0.7.0 added to chats, said in 0.6.0: every frame valid in 0.6.0, strictly, and the
    0.6 peer converging. (Our 0.7.0 snapshot predates lazy tool input and the ready action's
    contributor, so the 0.7 frames are not checked strictly here: the host sends neither.)"""
    attachment = {"type": "chat", "label": "other chat", "resource": "ahp-chat:/o", "endTurn": "t0"}
    message = {"text": "see", "origin": {"kind": "user"}, "attachments": [attachment]}
    ref = {"uri": "ahp-content:/input/1", "contentType": "application/json"}
    contributor = {"kind": "client", "clientId": "vs"}
    actions = [
        {**start("t1"), "message": message},
        {
            "type": "chat/toolCallStart",
            "turnId": "t1",
            "toolCallId": "c1",
            "toolName": "run",
            "displayName": "Run",
            "contributor": contributor,
        },
        {"type": "chat/toolCallDelta", "turnId": "t1", "toolCallId": "c1", "content": "{"},
        {
            "type": "chat/toolCallReady",
            "turnId": "t1",
            "toolCallId": "c1",
            "invocationMessage": "Running",
            "toolInput": ref,
            "contributor": contributor,
            "confirmed": "not-needed",
        },
        {
            "type": "chat/toolCallContentChanged",
            "turnId": "t1",
            "toolCallId": "c1",
            "content": [{**TERMINAL_RESULT, "result": {"preview": "bo"}}],
        },
        {
            "type": "chat/toolCallComplete",
            "turnId": "t1",
            "toolCallId": "c1",
            "result": {"success": False, "pastTenseMessage": "Ran", "content": [TERMINAL_RESULT]},
        },
        {"type": "chat/pendingMessageSet", "kind": "queued", "id": "q1", "message": message},
        {"type": "chat/draftChanged", "draft": message},
        {"type": "chat/turnComplete", "turnId": "t1", "duration": 5},
    ]
    initial = {**chat(), "workingDirectories": ["file:///a", "file:///b"]}
    initial["origin"] = {"kind": "sideChat", "chat": "ahp-chat:/o", "turnId": "t0"}
    host = Host(URIS["chat"], "chat", initial)
    envs = [host.apply(a) for a in actions]
    sent = [w["action"] for env in envs for w in env.wires(host.wires[V06])]
    ready = next(a for a in sent if a["type"] == "chat/toolCallReady")
    assert {"toolInput", "contributor"}.isdisjoint(ready)
    complete = next(a for a in sent if a["type"] == "chat/toolCallComplete")
    assert complete["result"]["content"] == [
        {"type": "terminal", "resource": "ahp-terminal:/t1", "title": "sh"},
        {
            "type": "terminalComplete",
            "resource": "ahp-terminal:/t1",
            "exitCode": 1,
            "preview": "boom",
            "truncated": False,
        },
    ]
    assert sent[0]["message"]["attachments"] == [{"type": "simple", "label": "other chat"}]
    [schema06] = for_line(V06)
    for action in sent:
        schema06.check("StateAction", action)
    held = converge("chat", initial, actions)
    schema06.check("ChatState", held[V06])
    assert held[V06]["workingDirectory"] == "file:///a" and "origin" not in held[V06]
    assert held[V07]["origin"]["kind"] == "sideChat"
    [done] = held[V06]["turns"]
    assert done["message"]["attachments"] == [{"type": "simple", "label": "other chat"}]
    call = done["responseParts"][0]["toolCall"]
    assert call["status"] == "completed" and "toolInput" not in call
    assert [c["type"] for c in call["content"]] == ["terminal", "terminalComplete"]
    assert held[V07]["turns"][0]["responseParts"][0]["toolCall"]["toolInput"] == ref


def test_0_6_content_less_tool_call_deltas() -> None:
    """0.6 requires `content`: a delta that says nothing else is not sent, one that does is sent
    with "" (which 0.6's reducer appends: see `NOT_IN_0_6`)."""
    bare = {"type": "chat/toolCallDelta", "turnId": "t1", "toolCallId": "c1"}
    assert wire06.down_actions("chat", bare) == []
    said = {**bare, "invocationMessage": "Listing"}
    assert wire06.down_actions("chat", said) == [{**said, "content": ""}]
    for_line(V06)[0].check("StateAction", {**said, "content": ""})


def test_0_6_sessions_agents_and_terminals() -> None:
    side = {"kind": "sideChat", "chat": "ahp-chat:/a", "turnId": "t1"}
    entry = {**summary("ahp-chat:/b"), "origin": side, "workingDirectories": ["file:///w"]}
    held = converge(
        "session",
        session(workingDirectories=["file:///w", "file:///v"]),
        [
            {"type": "session/chatAdded", "summary": entry},
            {
                "type": "session/chatUpdated",
                "chat": "ahp-chat:/b",
                "changes": {"title": "b", "workingDirectories": ["file:///v"]},
            },
        ],
        strict=True,
    )
    assert held[V06]["workingDirectory"] == "file:///w"
    assert held[V06]["chats"] == [
        {**summary("ahp-chat:/b"), "title": "b", "workingDirectory": "file:///v"}
    ]
    agent = {
        "provider": "fake",
        "displayName": "Fake",
        "description": "d",
        "models": [],
        "capabilities": {
            "multipleChats": {"fork": True, "sideChat": True},
            "multipleWorkingDirectories": {},
        },
    }
    held = converge(
        "root",
        {"agents": [], "activeSessions": 0},
        [{"type": "root/agentsChanged", "agents": [agent]}],
        strict=True,
    )
    assert held[V06]["agents"][0]["capabilities"] == {"multipleChats": {"fork": True}}
    assert held[V07]["agents"][0]["capabilities"] == agent["capabilities"]
    terminal = {"title": "sh", "content": [], "lifecycle": {"status": "running"}, "isPty": True}
    terminal["claim"] = {"kind": "client", "clientId": "vs"}
    held = converge("terminal", terminal, [{"type": "terminal/exited", "exitCode": 0}], strict=True)
    assert "isPty" not in held[V06] and held[V06]["exitCode"] == 0 and held[V07]["isPty"]


def test_0_6_summaries_and_notifications() -> None:
    lines = wires()
    full = {**summary("copilot:/s"), "workingDirectories": ["file:///a", "file:///b"]}
    full |= {"defaultChat": "ahp-chat:/c", "chats": [{"resource": "ahp-chat:/c", "status": 1}]}
    assert lines[V06].summary(full) == {**summary("copilot:/s"), "workingDirectory": "file:///a"}
    assert lines[V08].summary(full) == {
        **summary("copilot:/s"),
        "workingDirectories": ["file:///a", "file:///b"],
    }
    changed = {
        "channel": "ahp-root://",
        "session": "copilot:/s",
        "changes": {"workingDirectories": []},
    }
    assert lines[V06].notification("root/sessionSummaryChanged", changed) is None
    auth = {
        "channel": "ahp-root://",
        "resource": {"resource": "https://api.example", "authorization_servers": ["https://id"]},
    }
    shown = lines[V06].notification("auth/required", auth)
    assert shown == {"channel": "ahp-root://", "resource": "https://api.example"}
    for_line(V06)[0].check("AuthRequiredParams", shown)
    assert lines[V08].notification("auth/required", auth) == auth
    for_line(V08)[0].check("AuthRequiredParams", auth)
    assert lines[V07].notification("auth/required", auth) is None  # our 0.7.0 has none


def test_0_6_input_is_lifted() -> None:
    wire = wires()[V06]
    params = {"channel": "copilot:/s", "provider": "copilot", "workingDirectory": "file:///a"}
    assert wire.params_in("createSession", params) == {
        "channel": "copilot:/s",
        "provider": "copilot",
        "workingDirectories": ["file:///a"],
    }
    fork = {
        "channel": "copilot:/s",
        "chat": "ahp-chat:/f",
        "source": {"chat": "ahp-chat:/c", "turnId": "t"},
    }
    assert wire.params_in("createChat", fork)["source"] == {
        "kind": "fork",
        "chat": "ahp-chat:/c",
        "turnId": "t",
    }
    terminal = {"type": "terminal", "resource": "ahp-terminal:/t1", "title": "sh"}
    complete = {
        "type": "chat/toolCallComplete",
        "turnId": "t1",
        "toolCallId": "c1",
        "result": {
            "success": True,
            "pastTenseMessage": "Ran",
            "content": [
                terminal,
                {"type": "text", "text": "out"},
                {
                    "type": "terminalComplete",
                    "resource": "ahp-terminal:/t1",
                    "exitCode": 0,
                    "cwd": "file:///",
                },
                {"type": "terminalComplete", "resource": "ahp-terminal:/other", "exitCode": 2},
            ],
        },
    }
    for_line(V06)[0].check("StateAction", complete)
    lifted = wire.action_in("chat", complete, URIS["chat"])
    assert lifted["result"]["content"] == [
        {**terminal, "result": {"exitCode": 0}},
        {"type": "text", "text": "out"},
    ]
    for_line(V10)[0].check("StateAction", lifted)
    toggle = {"type": "session/customizationToggled", "id": "p", "enabled": False}
    assert wire.action_in("session", toggle, URIS["session"])["enablement"] == [
        {"kind": "session", "enabled": False}
    ]


def test_an_envelope_is_encoded_once_per_line_and_shared_when_unchanged() -> None:
    host = Host(URIS["chat"], "chat", chat())
    env = host.apply(start("t1"))
    frames = {line: env.frames(wire) for line, wire in host.wires.items()}
    assert all(f == (env.frame,) for f in frames.values())
    assert all(f[0] is frames[V10][0] for f in frames.values())  # one encode for all five
    assert env.frames(host.wires[V07]) is frames[V07]  # cached
    error = host.apply(
        {
            "type": "chat/error",
            "turnId": "t1",
            "duration": 1,
            "part": {"kind": "error", "error": ERR},
        },
    )
    assert error.frames(host.wires[V07]) != error.frames(host.wires[V10])
    assert json.loads(error.frames(host.wires[V07])[0])["params"]["action"]["error"] == ERR
    # 0.8 says it otherwise, and 0.7 and 0.6 as 0.8 does: one more encode, shared by the three.
    older = [error.frames(host.wires[line])[0] for line in (V08, V07, V06)]
    assert older[0] is older[1] is older[2]
    assert error.frames(host.wires[V09])[0] is error.frames(host.wires[V10])[0]


def test_the_1_0_error_codes() -> None:
    lines = wires()
    assert lines[V10].error_code(-32006) == -32008  # ContentNotFound is gone in 1.0
    assert lines[V09].error_code(-32006) == -32008
    assert lines[V07].error_code(-32006) == -32006
    assert lines[V08].error_code(-32006) == lines[V06].error_code(-32006) == -32006
    assert lines[V10].error_code(-32011) == -32011


# -- the lines' own views: fed by the envelopes, forgotten with the channel --------------------

QUESTION = {"id": "r1", "message": "Sure?", "questions": []}


def test_0_7_views_start_from_the_created_state_and_follow_the_envelopes() -> None:
    host = Host(URIS["chat"], "chat", chat())
    v07 = host.wires[V07]
    assert host.snapshot(v07)["modifiedAt"] == NOW  # no envelope yet: as created
    host.apply({"type": "chat/titleChanged", "title": "t"}, "2030-01-01T00:00:01.000Z")
    assert host.snapshot(v07)["modifiedAt"] == NOW  # no activity: 0.7.0 stamps nothing
    host.apply(start("t1", "2026-12-01T00:05:00.000Z"), "2030-01-01T00:00:02.000Z")
    host.apply({"type": "chat/inputRequested", "request": QUESTION}, "2030-01-01T00:00:03.000Z")
    host.apply(start("t1"), "2030-01-01T00:00:04.000Z")  # 1.0's no-op: reaches no 0.7 peer
    assert host.snapshot(v07)["modifiedAt"] == "2030-01-01T00:00:03.000Z"
    assert host.snapshot(host.wires[V10])["modifiedAt"] == "2026-12-01T00:05:00.000Z"
    assert host.fanout.active_at(host.uri) == "2030-01-01T00:00:03.000Z"  # every line's list


def test_a_disposed_channel_takes_its_0_7_views_and_activity_with_it() -> None:
    execution = {"id": "x1", "kind": "toolClientExecution", "chat": "ahp-chat:/a", "turnId": "t"}
    host = Host(URIS["session"], "session", session())
    host.store.create(URIS["chat"], "chat", chat())
    host.apply({"type": "session/inputNeededSet", "request": execution})
    host.now = "2030-01-01T00:00:01.000Z"
    host.fanout.apply(URIS["chat"], start("t1"))
    v07 = host.wires[V07]
    assert host.snapshot(v07)["status"] == 24  # 0.7 counts the client execution
    assert host.fanout.active_at(URIS["chat"]) == "2030-01-01T00:00:01.000Z"
    for uri in (URIS["session"], URIS["chat"]):
        host.fanout.dispose(uri)
        assert not host.store.has(uri)
    with pytest.raises(KeyError, match="unknown channel"):
        host.fanout.active_at(URIS["chat"])
    # Made again under the same URIs, they start from their own state, not the old views.
    host.store.create(URIS["session"], "session", session(status=2))
    host.store.create(URIS["chat"], "chat", {**chat(), "modifiedAt": "2027-01-01T00:00:00.000Z"})
    assert host.snapshot(v07)["status"] == 2
    shown = v07.state("chat", host.store.state(URIS["chat"]), channel=URIS["chat"])
    assert shown["modifiedAt"] == "2027-01-01T00:00:00.000Z"
    host.apply({"type": "session/titleChanged", "title": "again"})
    assert host.snapshot(v07)["status"] == 2
    assert host.fanout.active_at(URIS["chat"]) == "2027-01-01T00:00:00.000Z"


def test_each_host_keeps_its_own_0_7_views() -> None:
    one, two = Host(URIS["chat"], "chat", chat()), Host(URIS["chat"], "chat", chat())
    assert one.wires[V07] is not two.wires[V07]
    one.apply(start("t1"), "2030-01-01T00:00:01.000Z")
    assert one.snapshot(one.wires[V07])["modifiedAt"] == "2030-01-01T00:00:01.000Z"
    assert two.snapshot(two.wires[V07])["modifiedAt"] == NOW


# -- 0.8 and 0.6 on the 0.7.0 fixtures their changes do not touch ------------------------------

_STATE_DEFS = {
    "root": "RootState",
    "session": "SessionState",
    "chat": "ChatState",
    "terminal": "TerminalState",
    "changeset": "ChangesetState",
    "annotations": "AnnotationsState",
    "resourceWatch": "ResourceWatchState",
}
#: 0.7.0 fixtures valid in a line's schema whose expected state that line's reducer does not
#: reach, because the line's semantics differ there (not its shapes).
SEMANTICS_DIFFER: dict[Line, dict[str, str]] = {
    V08: {
        f"{folder}/reducers/225-session-inputneededset-replaces-existing.json": (
            "from 0.8.0 a client execution does not count as InputNeeded"
        )
        for folder in ("ahp-0.7.0", "ahp-0.7.0-release")
    },
    V06: {},
}


def untouched(line: Line, case: Case) -> bool:
    """Whether a 0.7.0 fixture says nothing the line says otherwise: its initial state, its
    actions (bar the made-up types of the forward-compatibility ones, unknown to every version)
    and its expected state are valid in the line's schema, strictly, and the line's reducer
    semantics are 0.7.0's there."""
    name, kind, _, _, own, own_initial, expected = case
    if own != V07 or name in SEMANTICS_DIFFER[line]:
        return False
    [schema] = for_line(line)
    known = set(wires()[V10].actions.types)
    actions = json.loads((FIXTURES / name).read_text())["actions"]
    problems = [
        *schema.errors(_STATE_DEFS[kind], own_initial),
        *schema.errors(_STATE_DEFS[kind], expected),
        *(
            e
            for a in actions
            if a["type"] in known
            for e in schema.errors("StateAction", strip_none(a))
        ),
    ]
    return not problems


def _older_cases() -> list[tuple[Line, Case]]:
    """The (line, case) pairs `untouched` holds for (about half a second of strict validation
    per worker, with `wire_schema`'s narrowed `oneOf`)."""
    return [(line, c) for line in (V08, V06) for c in CORPUS if untouched(line, c)]


OLDER_CASES = _older_cases()


def test_the_untouched_fixtures_are_most_of_0_7_0s() -> None:
    counts = {line: sum(1 for held, _ in OLDER_CASES if held == line) for line in (V08, V06)}
    assert counts == {V08: 448, V06: 436}


@pytest.mark.parametrize(
    ("line", "case"), OLDER_CASES, ids=[f"{line}-{c[0]}" for line, c in OLDER_CASES]
)
def test_an_untouched_0_7_0_fixture_gives_its_expected_state_in_0_8_and_0_6(
    line: Line, case: Case
) -> None:
    """The line's reducer path (what its peers run) takes the fixture's initial state and
    actions as they are, valid in the line, to its expected state; and the host, fed the
    fixture as canonical actions, shows the line that state."""
    name, kind, initial, actions, _, own_initial, expected = case
    wire = wires()[line]
    raw = [strip_none(a) for a in json.loads((FIXTURES / name).read_text())["actions"]]
    state = own_initial
    for action in raw:
        state = wire.reduce(kind, state, action, now=FIXTURE_CLOCK_07, canonical=reduce)
    assert strip_none(state) == expected, name
    if any(a.get("type") == "chat/turnsLoaded" for a in actions):
        held = converge_paged(initial, actions[0])[line]
        assert held["turns"] == expected["turns"]
        return
    shown = strip_none(converge(kind, initial, actions, inexpressible=not_said(name))[line])
    stamped = expected.get("modifiedAt") == FIXTURE_CLOCK_07 != own_initial.get("modifiedAt")
    if kind == "chat" and stamped:  # the older reducers stamp their clock: the host's time
        assert shown.pop("modifiedAt") in {host_time(i) for i in range(len(actions))}
        expected = {k: v for k, v in expected.items() if k != "modifiedAt"}
    assert shown == expected, name


@pytest.mark.parametrize("line", [V08, V07, V06])
def test_a_step_is_skipped_only_for_the_types_it_passes(line: Line) -> None:
    """The lens skips a line's step for the types its module says it passes (`PASSED`): each of
    those is one the step has no case for, and every type the line knows is in one set."""
    module = {V08: wire08, V07: wire07, V06: wire06}[line]
    wire = wires()[line]
    assert wire.passes is module.PASSED  # type: ignore[attr-defined]
    assert not module.PASSED & module.STEPPED
    assert set(wire.actions.types) <= module.PASSED | module.STEPPED
    for kind in module.PASSED:
        action = {"type": kind}
        sent = module.step_actions(action)
        assert len(sent) == 1 and sent[0] is action, kind
