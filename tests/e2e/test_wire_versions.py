"""Five wire versions on one canonical state: a 1.0, a 0.9, a 0.8, a 0.7 and a 0.6 client on one
session.

Real sockets, the real host, the fake provider. Every client checks every frame it receives
against its negotiated version's schema, strictly (`AhpClient(check=True)`: no field the version
does not define, and before 1.0 no action type it does not know), reduces what it receives with
its version's reducers, and must end equal to a fresh host snapshot taken in its own version.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from ahp_bridge.config import Settings
from ahp_bridge.protocol.actions_v1 import ONLY_1_0
from ahp_bridge.protocol.lens import wires
from tests.e2e.conftest import Bridge, StartBridge
from tests.e2e.test_host_core import comparable
from tests.support.ahp_client import AhpClient, RpcFailure

ROOT = "ahp-root://"
SCRIPT = Path(__file__).parent / "scripts" / "bridge.toml"
V10 = ("1.0.0", "0.9.0")  # what today's clients offer
V09 = ("0.9.0",)
V08 = ("0.8.0",)  # the TS MultiHostClient of npm 0.8.0, VS Code builds synced to 0.8
V07 = ("0.7.0",)
V06 = ("0.6.0",)  # late-July clients
LINES = wires()


class Trio:
    """A session seen by a 1.0, a 0.9, a 0.8, a 0.7 and a 0.6 client at once."""

    def __init__(self, bridge: Bridge, *clients: AhpClient) -> None:
        self.bridge = bridge
        self.c10, self.c09, self.c08, self.c07, self.c06 = clients
        self.clients = list(clients)
        #: The lines before 0.9: no turn resume, errors on the turn, a known turn id refused.
        self.older = [self.c08, self.c07, self.c06]
        self.session = ""
        self.chat = ""

    async def open(self, by: AhpClient | None = None, **params: Any) -> None:
        """A session made by `by` (the 1.0 client unless told) with `params`, every client
        subscribed to it and its default chat."""
        self.session = f"ahp-session:/{uuid.uuid4()}"
        maker = by or self.c10
        await maker.request(
            "createSession", {"channel": self.session, "provider": "fake", **params}
        )
        for client in self.clients:
            await client.subscribe(self.session)
        await self.c10.wait_for(lambda: self.c10.states[self.session].get("lifecycle") == "ready")
        self.chat = self.c10.states[self.session]["defaultChat"]
        for client in self.clients:
            await client.subscribe(self.chat)

    async def start(self, text: str, client: AhpClient) -> str:
        return await client.start_turn(self.chat, text)

    async def dispatch(self, client: AhpClient, action: dict[str, Any]) -> dict[str, Any]:
        return await client.echo_of(await client.dispatch(self.chat, action))

    async def ended(self, turn_id: str) -> None:
        for client in self.clients:

            def done(client: AhpClient = client) -> bool:
                state = client.states[self.chat]
                return not state.get("activeTurn") and any(
                    t["id"] == turn_id for t in state["turns"]
                )

            await client.wait_for(done)

    async def settled(self) -> None:
        """Each client equals a fresh host snapshot in its own version."""
        for client in self.clients:
            assert await client.request("ping", {"channel": ROOT}) is None
        for client in self.clients:
            for channel in (self.session, self.chat, ROOT):
                snap = await client.request("subscribe", {"channel": channel})
                assert comparable(client.states[channel]) == comparable(
                    snap["snapshot"]["state"]
                ), (client.line, channel)

    def last_turn(self, client: AhpClient) -> dict[str, Any]:
        return client.states[self.chat]["turns"][-1]  # type: ignore[no-any-return]

    def pending(self, client: AhpClient) -> Callable[[], Any]:
        def find() -> Any:
            for part in (client.states[self.chat].get("activeTurn") or {}).get("responseParts", []):
                if part.get("kind") == "inputRequest" and "response" not in part:
                    return part
                call = part.get("toolCall") or {}
                if call.get("status") == "pending-confirmation":
                    return part
            return None

        return find


@pytest.fixture
async def trio_bridge(start_bridge: StartBridge, make_settings: Callable[..., Settings]) -> Bridge:
    settings = make_settings()
    settings.providers = {"fake": {"script": str(SCRIPT), "time_scale": 1.0}}
    return await start_bridge(settings)  # type: ignore[no-any-return]


async def three(bridge: Bridge, maker: str = "1.0", **params: Any) -> Trio:
    """A 1.0, a 0.9, a 0.8, a 0.7 and a 0.6 client on one fresh session, which the client of
    line `maker` creates with `params`."""
    clients = []
    for name, offer in (("10", V10), ("09", V09), ("08", V08), ("07", V07), ("06", V06)):
        clients.append(await bridge.client(f"client-{name}", versions=offer, check=True))
    assert [c.line for c in clients] == ["1.0", "0.9", "0.8", "0.7", "0.6"]
    t = Trio(bridge, *clients)
    await t.open(next(c for c in clients if c.line == maker), **params)
    return t


def text_of(turn: dict[str, Any]) -> str:
    return "".join(p.get("content", "") for p in turn["responseParts"] if p["kind"] == "markdown")


def types(client: AhpClient, channel: str) -> list[str]:
    """Types of the actions `client` received on `channel` (its own refused ones left out)."""
    return [
        e["action"]["type"]
        for e in client.envelopes
        if e["channel"] == channel and e.get("rejectionReason") is None
    ]


# -- the demo tour -----------------------------------------------------------------------------


async def test_the_demo_tour_on_five_versions(
    start_bridge: StartBridge, make_settings: Callable[..., Settings]
) -> None:
    settings = make_settings()  # the packaged demo script: every flow a client has to handle
    bridge = await start_bridge(settings)
    t = await three(bridge)
    turn = await t.start("show me", t.c06)  # a 0.6 client starts it
    permission = await t.c08.wait_for(t.pending(t.c08))
    call = permission["toolCall"]
    options = {o["kind"]: o["id"] for o in call["options"]}
    echo = await t.dispatch(
        t.c08,  # a 0.8 client approves
        {
            "type": "chat/toolCallConfirmed",
            "turnId": turn,
            "toolCallId": call["toolCallId"],
            "approved": True,
            "confirmed": "user-action",
            "selectedOptionId": options["approve"],
        },
    )
    assert "rejectionReason" not in echo, echo
    question = await t.c10.wait_for(
        lambda: next(
            (
                p
                for p in t.c10.states[t.chat]["activeTurn"]["responseParts"]
                if p["kind"] == "inputRequest" and "response" not in p
            ),
            None,
        )
    )
    request = question["request"]
    echo = await t.dispatch(
        t.c10,  # and a 1.0 client answers
        {
            "type": "chat/inputCompleted",
            "requestId": request["id"],
            "response": "accept",
            "answers": {
                request["questions"][0]["id"]: {
                    "state": "submitted",
                    "value": {"kind": "selected", "value": "Go"},
                }
            },
        },
    )
    assert "rejectionReason" not in echo, echo
    await t.ended(turn)
    await t.settled()
    for client in t.clients:
        done = t.last_turn(client)
        assert done["state"] == "complete"
        assert "whole tour" in text_of(done)
        assert client.states[t.session]["title"] == "Tour of the fake agent"
    # The same envelopes in the same order, each in its version's shape (no action translated
    # for this flow): serverSeqs agree across the five.
    seqs = [[e["serverSeq"] for e in c.envelopes if e["channel"] == t.chat] for c in t.clients]
    assert all(s == seqs[0] for s in seqs)


# -- errors, resumable errors ------------------------------------------------------------------


async def test_a_failing_turn_in_each_version(trio_bridge: Bridge) -> None:
    t = await three(trio_bridge)
    turn = await t.start("fail", t.c10)
    await t.ended(turn)
    await t.settled()
    for client in (t.c10, t.c09):  # 1.0 and 0.9: the error is the turn's last response part
        done = t.last_turn(client)
        assert done["state"] == "error" and "error" not in done
        last = done["responseParts"][-1]
        assert (last["kind"], last["error"]["errorType"]) == ("error", "turnFailed")
        assert "resumable" not in last  # a failed turn is not resumable
        [env] = [e for e in client.envelopes if e["action"]["type"] == "chat/error"]
        assert env["action"]["part"]["error"]["message"] == "scripted failure"
    for client in t.older:  # 0.8, 0.7, 0.6: Turn.error, and no error part
        done = t.last_turn(client)
        assert done["error"] == {"errorType": "turnFailed", "message": "scripted failure"}
        assert all(p["kind"] != "error" for p in done["responseParts"])
        [env] = [e for e in client.envelopes if e["action"]["type"] == "chat/error"]
        assert "part" not in env["action"] and env["action"]["error"]["errorType"] == "turnFailed"
    # The older lines cannot resume; a 1.0 client is told this error is not resumable.
    echo = await t.dispatch(t.c10, {"type": "chat/turnResume", "turnId": turn})
    assert "did not end in a resumable error" in echo["rejectionReason"]
    for client in t.older:
        echo = await t.dispatch(client, {"type": "chat/turnResume", "turnId": turn})
        version = LINES[client.line].version
        assert echo["rejectionReason"] == (
            f"action.type: unknown action type 'chat/turnResume' in AHP {version}"
        )


async def test_a_provider_exit_is_resumed_for_every_version(trio_bridge: Bridge) -> None:
    t = await three(trio_bridge)
    turn = await t.start("exit", t.c07)
    await t.ended(turn)
    errored = t.last_turn(t.c10)
    assert errored["responseParts"][-1]["resumable"] is True
    for client in t.older:
        assert t.last_turn(client)["error"]["errorType"] == "providerExit"
    echo = await t.dispatch(t.c09, {"type": "chat/turnResume", "turnId": turn})  # 0.9 has it
    assert "rejectionReason" not in echo, echo
    await t.ended(turn)
    await t.settled()
    for client in t.clients:
        state = client.states[t.chat]
        assert [x["id"] for x in state["turns"]] == [turn]  # the same turn, resumed in place
        done = state["turns"][-1]
        assert done["state"] == "complete"
        assert text_of(done) == "Exiting.resumed where it stopped"
    kinds = [p["kind"] for p in t.last_turn(t.c10)["responseParts"]]
    assert kinds == ["markdown", "error", "markdown"]  # 1.0 keeps the error where it was
    for client in t.older:
        assert [p["kind"] for p in t.last_turn(client)["responseParts"]] == ["markdown"] * 2
        # The older lines saw the reopening as a truncation and a restart of the same turn id.
        after = types(client, t.chat)
        resumed = after.index("chat/truncated")
        assert after[resumed : resumed + 3] == [
            "chat/truncated",
            "chat/turnStarted",
            "chat/responsePart",
        ]
    assert "chat/turnResume" in types(t.c10, t.chat)
    assert "chat/turnResume" in types(t.c09, t.chat)


# -- cancel, steering, idempotent turn starts, 1.0-only actions ---------------------------------


async def test_cancel_and_steering_across_versions(trio_bridge: Bridge) -> None:
    t = await three(trio_bridge)
    slow = await t.start("stream: slow", t.c09)
    await t.c07.wait_for(
        lambda: (t.c07.states[t.chat].get("activeTurn") or {}).get("responseParts")
    )
    echo = await t.dispatch(t.c07, {"type": "chat/turnCancelled", "turnId": slow, "duration": 0})
    assert "rejectionReason" not in echo, echo.get("rejectionReason")
    await t.ended(slow)
    assert {t.last_turn(c)["state"] for c in t.clients} == {"cancelled"}
    gate = await t.start("gate", t.c10)
    request = await t.c07.wait_for(t.pending(t.c07))
    steer = {
        "type": "chat/pendingMessageSet",
        "kind": "steering",
        "id": "s1",
        "message": {"text": "also check the tests", "origin": {"kind": "user"}},
    }
    assert "rejectionReason" not in await t.dispatch(t.c06, steer)  # a 0.6 client steers
    await t.c10.wait_for(lambda: "steeringMessage" not in t.c10.states[t.chat])
    answer = {
        "type": "chat/inputCompleted",
        "requestId": request["request"]["id"],
        "response": "accept",
        "answers": {"q0": {"state": "submitted", "value": {"kind": "selected", "value": "yes"}}},
    }
    assert "rejectionReason" not in await t.dispatch(t.c08, answer)  # and a 0.8 client answers
    await t.ended(gate)
    await t.settled()
    assert {text_of(t.last_turn(c)) for c in t.clients} == {"continued"}


async def test_a_known_turn_id_is_a_no_op_for_1_0_and_refused_before_0_9(
    trio_bridge: Bridge,
) -> None:
    t = await three(trio_bridge)
    turn = await t.start("stream", t.c10)
    await t.ended(turn)
    again = {
        "type": "chat/turnStarted",
        "turnId": turn,
        "startedAt": "2026-01-01T00:00:01.000Z",
        "message": {"text": "stream", "origin": {"kind": "user"}},
    }
    echo = await t.dispatch(t.c10, again)  # 1.0: idempotent, accepted, nothing happens
    assert "rejectionReason" not in echo
    for client in t.older:  # their reducers would restart the turn: refused
        echo = await t.dispatch(client, again)
        assert echo["rejectionReason"] == f"turn {turn} already exists: start a turn with a new id"
    await t.settled()
    for client in t.clients:
        assert [x["id"] for x in client.states[t.chat]["turns"]] == [turn]
    # The older lines never saw the no-op start of a finished turn; 1.0 saw its own echo.
    for client in t.older:
        assert types(client, t.chat).count("chat/turnStarted") == 1


async def test_1_0_only_actions_never_reach_the_older_lines(trio_bridge: Bridge) -> None:
    t = await three(trio_bridge)
    turn = await t.start("stream", t.c10)
    await t.ended(turn)
    for action in (
        {"type": "chat/isReadChanged", "isRead": True},
        {"type": "chat/isArchivedChanged", "isArchived": True},
    ):
        assert "rejectionReason" not in await t.dispatch(t.c10, action)
    # 0.9 does not know them: refused to it as unknown, and never sent to it.
    echo = await t.dispatch(t.c09, {"type": "chat/isReadChanged", "isRead": False})
    assert "unknown action type 'chat/isReadChanged' in AHP 0.9.0" in echo["rejectionReason"]
    for client in t.older:
        echo = await t.dispatch(client, {"type": "chat/isReadChanged", "isRead": False})
        version = LINES[client.line].version
        assert (
            f"unknown action type 'chat/isReadChanged' in AHP {version}" in echo["rejectionReason"]
        )
    await t.settled()
    assert t.c10.states[t.chat]["status"] & (32 | 64) == 32 | 64
    for client in t.clients[1:]:
        assert client.states[t.chat]["status"] & (32 | 64) == 0
        assert set(types(client, t.chat)).isdisjoint(ONLY_1_0)
        assert set(types(client, t.chat)) <= set(LINES[client.line].actions.types)
    # Automations are not offered: a reason, nothing created.
    automation = {"type": "automation/createRequested", "definition": {}}
    seq = await t.c10.dispatch("ahp-automations://", automation)
    echo = await t.c10.echo_of(seq)
    assert echo["rejectionReason"] == "automations are not offered by this host"
    params = {"channel": "ahp-automations://", "automation": "ahp-automation:/a", "requestId": "r"}
    with pytest.raises(RpcFailure, match="automations are not offered") as err:
        await t.c10.request("runAutomation", params)
    assert err.value.code == -32601
    for client in t.older:  # the older lines have no such method at all
        with pytest.raises(RpcFailure) as err:
            await client.request("runAutomation", params)
        assert err.value.code == -32601
    automation_08 = await t.c08.echo_of(await t.c08.dispatch("ahp-automations://", automation))
    assert automation_08["rejectionReason"] == "automations are not offered by this host"


async def test_background_work_has_its_typed_home_for_1_0_only(trio_bridge: Bridge) -> None:
    t = await three(trio_bridge)
    turn = await t.start("background subagent", t.c10)
    await t.ended(turn)
    await t.settled()
    set_ = [e["action"] for e in t.c10.envelopes if e["action"]["type"] == "chat/backgroundWorkSet"]
    assert set_ and set_[0]["work"]["kind"] == "subagent"
    assert set_[0]["work"]["label"] == "indexer"
    assert "chat/backgroundWorkRemoved" in types(t.c10, t.chat)  # it finished
    for client in t.clients[1:]:
        assert {"chat/backgroundWorkSet", "chat/backgroundWorkRemoved"}.isdisjoint(
            types(client, t.chat)
        )
        assert "backgroundWork" not in client.states[t.chat]


async def test_every_command_takes_meta_from_0_8(trio_bridge: Bridge) -> None:
    t = await three(trio_bridge)
    meta = {"_meta": {"example.trace": "abc"}}
    for client in (t.c10, t.c09, t.c08):
        assert await client.request("ping", {"channel": ROOT, **meta}) is None
        listed = await client.request("listSessions", {"channel": ROOT, **meta})
        assert t.session in [s["resource"] for s in listed["items"]]
        uri = f"ahp-session:/{uuid.uuid4()}"
        assert (
            await client.request("createSession", {"channel": uri, "provider": "fake", **meta})
            is None
        )


# -- summaries ---------------------------------------------------------------------------------


async def test_the_session_list_carries_chats_from_1_0_and_one_directory_for_0_6(
    trio_bridge: Bridge, tmp_path: Path
) -> None:
    # A 0.6 client makes the session with its one `workingDirectory`.
    t = await three(trio_bridge, "0.6", workingDirectory=tmp_path.as_uri())
    turn = await t.start("question", t.c10)
    await t.c10.wait_for(t.pending(t.c10))
    listed = {}
    for client in t.clients:
        [item] = (await client.request("listSessions", {"channel": ROOT}))["items"]
        listed[client.line] = item
    for line in ("1.0", "0.9"):
        assert listed[line]["defaultChat"] == t.chat
        [chat] = listed[line]["chats"]
        assert chat["resource"] == t.chat and chat["status"] & 24 == 24  # InputNeeded
    for line in ("0.8", "0.7", "0.6"):
        assert "chats" not in listed[line] and "defaultChat" not in listed[line]
    dirs = listed["1.0"]["workingDirectories"]
    assert dirs == [tmp_path.as_uri()] == t.c10.states[t.session]["workingDirectories"]
    assert listed["0.8"]["workingDirectories"] == listed["0.7"]["workingDirectories"] == dirs
    assert (
        listed["0.6"]["workingDirectory"] == dirs[0] and "workingDirectories" not in listed["0.6"]
    )
    assert t.c06.states[t.session]["workingDirectory"] == dirs[0]
    # root/sessionSummaryChanged projected the chat's status into SessionSummary.chats
    changed = [
        n["params"]["changes"]
        for n in t.c10.notifications
        if n["method"] == "root/sessionSummaryChanged" and "chats" in n["params"]["changes"]
    ]
    assert any(c["chats"][0]["status"] & 24 == 24 for c in changed)
    for client in t.older:
        assert not any(
            "chats" in n["params"]["changes"]
            for n in client.notifications
            if n["method"] == "root/sessionSummaryChanged"
        )
    await t.dispatch(
        t.c10, {"type": "chat/turnCancelled", "turnId": turn, "duration": 0}
    )  # leave the session idle
    await t.ended(turn)
    await t.settled()


# -- reconnect and paging ----------------------------------------------------------------------


async def test_reconnect_replays_each_client_in_its_own_version(trio_bridge: Bridge) -> None:
    t = await three(trio_bridge)
    first = await t.start("stream", t.c10)
    await t.ended(first)
    seen = {c.client_id: c.last_seq for c in t.clients}
    kept = {c.client_id: dict(c.states) for c in t.clients}
    lines = {c.client_id: c.line for c in t.clients}
    for client in t.clients[1:]:
        await client.close()
    second = await t.start("fail", t.c10)  # what the others miss: an error, in two shapes
    await t.c10.wait_for(lambda: not t.c10.states[t.chat].get("activeTurn"))
    for old in t.clients[1:]:
        back = await t.bridge.client(
            old.client_id, initialize=False, versions=old.versions, check=True
        )
        result = await back.request(
            "reconnect",
            {
                "channel": ROOT,
                "clientId": old.client_id,
                "lastSeenServerSeq": seen[old.client_id],
                "subscriptions": [ROOT, t.session, t.chat],
            },
        )
        assert result["type"] == "replay"
        assert back.line == lines[old.client_id]
        states = kept[old.client_id]
        for env in result["actions"]:
            states[env["channel"]] = back.reduce(
                env["channel"], states[env["channel"]], env["action"]
            )
        errors = [e["action"] for e in result["actions"] if e["action"]["type"] == "chat/error"]
        [error] = errors
        if back.line in ("0.8", "0.7", "0.6"):
            assert error["error"]["errorType"] == "turnFailed" and "part" not in error
        else:
            assert error["part"]["kind"] == "error"
        for channel in (t.session, t.chat):
            snap = await back.request("subscribe", {"channel": channel})
            assert comparable(states[channel]) == comparable(snap["snapshot"]["state"])
        assert states[t.chat]["turns"][-1]["id"] == second


async def test_fetch_turns_pages_in_each_version(trio_bridge: Bridge) -> None:
    t = await three(trio_bridge)
    turns = []
    for text in ("stream", "fail", "stream"):
        turns.append(await t.start(text, t.c10))
        await t.ended(turns[-1])
    watchers = []
    for client in t.clients:
        late = await t.bridge.client(f"late-{client.line}", versions=client.versions, check=True)
        snap = await late.subscribe(t.chat, view={"turns": 1})
        assert [x["id"] for x in snap["state"]["turns"]] == turns[-1:]
        watchers.append(late)
    cursor = watchers[0].states[t.chat]["turnsNextCursor"]
    while cursor:
        await watchers[0].request("fetchTurns", {"channel": t.chat, "cursor": cursor})
        await watchers[0].request("ping", {"channel": ROOT})
        cursor = watchers[0].states[t.chat].get("turnsNextCursor")
    for late in watchers:
        await late.request("ping", {"channel": ROOT})
        assert [x["id"] for x in late.states[t.chat]["turns"]] == turns
        snap = await late.request("subscribe", {"channel": t.chat})
        assert comparable(late.states[t.chat]) == comparable(snap["snapshot"]["state"])
    for late in watchers[2:]:  # loaded turns are in the older shape too
        assert late.states[t.chat]["turns"][1]["error"]["errorType"] == "turnFailed"
    assert watchers[0].states[t.chat]["turns"][1]["responseParts"][-1]["kind"] == "error"


async def test_a_new_1_x_client_speaks_1_0(trio_bridge: Bridge) -> None:
    client = await trio_bridge.client("future", initialize=False, versions=("1.1.0",), check=True)
    result = await client.initialize([ROOT])
    assert result["protocolVersion"] == "1.1.0"
    assert client.line == "1.0"
    assert result["_meta"]["ahpBridge.supportedVersions"][0] == ">=1.0.0 <2.0.0"


async def test_command_results_are_each_versions(trio_bridge: Bridge, tmp_path: Path) -> None:
    """Results other than snapshots, for every line: each client checks each against its own
    version's schema, strictly (`AhpClient(check=True)`)."""
    (tmp_path / "notes.txt").write_text("hi\n")  # before the session indexes its directory
    t = await three(trio_bridge, "0.8", workingDirectories=[tmp_path.as_uri()])
    for client in t.clients:
        config = await client.request(
            "resolveSessionConfig",
            {"channel": ROOT, "provider": "fake", "workingDirectory": tmp_path.as_uri()},
        )
        assert "schema" in config, client.line
        listed = await client.request("resourceList", {"channel": ROOT, "uri": tmp_path.as_uri()})
        assert "notes.txt" in [e["name"] for e in listed["entries"]], client.line
        text = "@no"
        params = {"channel": t.chat, "kind": "userMessage", "text": text, "offset": len(text)}
        items = (await client.request("completions", params))["items"]
        assert any("notes.txt" in i["insertText"] for i in items), (client.line, items)
        with pytest.raises(RpcFailure) as err:
            await client.request("resourceRead", {"channel": ROOT, "uri": f"{tmp_path.as_uri()}/x"})
        assert err.value.code == -32008, client.line
