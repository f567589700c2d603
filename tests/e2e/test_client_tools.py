"""Client tools end to end: real WebSockets, the real host, the fake provider calling them.

An AHP client offers tools it runs itself (`activeClient.tools`, as VS Code offers `usages`,
`rename`, `toolSearch`); the fake's `host_tool` steps (`scripts/client_tools.toml`) call them
as a model would. Each test checks what the clients see (the running tool call contributed by
the client, the `toolClientExecution` input request naming it, the completion), what the
provider got back (the scripted reply quotes the result's text), and that every client's
locally reduced state equals the host's. Clients validate every frame strictly in their own
version (0.7 and 1.0).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from ahp_bridge_fake import FakeProvider

from ahp_bridge import agentapi, providers
from ahp_bridge.config import Settings
from tests.e2e.conftest import Bridge, StartBridge, record_provider_calls
from tests.e2e.test_host_core import comparable, new_session_uri
from tests.support.ahp_client import AhpClient

ROOT = "ahp-root://"
SCRIPT = Path(__file__).parent / "scripts" / "client_tools.toml"
V1 = ("1.0.0", "0.9.0")
META = "ahpBridge.hostTools"

USAGES = {
    "name": "usages",
    "title": "List Code Usages",
    "description": "Find all usages of a code symbol across the workspace.",
    "inputSchema": {
        "type": "object",
        "properties": {"symbol": {"type": "string"}, "lineContent": {"type": "string"}},
        "required": ["symbol", "lineContent"],
    },
}
RESULT = {
    "success": True,
    "pastTenseMessage": "Found 2 usages",
    "content": [{"type": "text", "text": "main.py:1, app.py:7"}],
}


def tool_script(tmp_path: Path, extra: str = "") -> Path:
    path = tmp_path / "client_tools.toml"
    path.write_text(SCRIPT.read_text() + extra)
    return path


@pytest.fixture
def settings(make_settings: Callable[..., Settings], tmp_path: Path) -> Settings:
    settings = make_settings()
    settings.providers = {"fake": {"script": str(tool_script(tmp_path)), "time_scale": 0.0}}
    return settings


@pytest.fixture
async def bridge(start_bridge: StartBridge, settings: Settings) -> Bridge:
    return await start_bridge(settings)  # type: ignore[no-any-return]


class ToolSession:
    """A session whose creator offers `usages`, seen by its creator and other clients."""

    def __init__(self, owner: AhpClient) -> None:
        self.owner = owner
        self.session = new_session_uri()
        self.chat = ""
        self.clients = [owner]

    async def open(self, tools: list[dict[str, Any]] | None = None) -> None:
        params: dict[str, Any] = {"channel": self.session, "provider": "fake"}
        if tools is not None:
            params["activeClient"] = {"clientId": self.owner.client_id, "tools": tools}
        await self.owner.request("createSession", params)
        await self.owner.subscribe(self.session)
        owner = self.owner
        await owner.wait_for(lambda: owner.states[self.session].get("lifecycle") == "ready")
        self.chat = owner.states[self.session]["defaultChat"]
        await owner.subscribe(self.chat)

    async def join(self, client: AhpClient) -> AhpClient:
        await client.subscribe(self.session)
        await client.subscribe(self.chat)
        self.clients.append(client)
        return client

    def meta(self, client: AhpClient | None = None) -> Any:
        return ((client or self.owner).states[self.session].get("_meta") or {}).get(META)

    async def start(self, text: str, client: AhpClient | None = None) -> str:
        return await (client or self.owner).start_turn(self.chat, text)

    async def execution(self, client: AhpClient | None = None) -> dict[str, Any]:
        """The client-execution input request the session shows (waits for it)."""
        client = client or self.owner

        def find() -> dict[str, Any] | None:
            requests = client.states[self.session].get("inputNeeded") or []
            return next((r for r in requests if r["kind"] == "toolClientExecution"), None)

        request: dict[str, Any] = await client.wait_for(find)
        return request

    async def complete(
        self, client: AhpClient, turn_id: str, call_id: str, result: dict[str, Any]
    ) -> dict[str, Any]:
        action = {
            "type": "chat/toolCallComplete",
            "turnId": turn_id,
            "toolCallId": call_id,
            "result": result,
        }
        return await client.echo_of(await client.dispatch(self.chat, action))

    async def ended(self, turn_id: str, client: AhpClient | None = None) -> dict[str, Any]:
        client = client or self.owner

        def done() -> dict[str, Any] | None:
            state = client.states[self.chat]
            if state.get("activeTurn"):
                return None
            return next((t for t in state["turns"] if t["id"] == turn_id), None)

        turn: dict[str, Any] = await client.wait_for(done)
        assert await client.request("ping", {"channel": ROOT}) is None
        return turn

    async def settled(self) -> None:
        """Every client's reduced state equals the host's snapshot in that client's version."""
        for client in self.clients:
            assert await client.request("ping", {"channel": ROOT}) is None
            for channel in (self.session, self.chat):
                snapshot = await client.request("subscribe", {"channel": channel})
                host = snapshot["snapshot"]["state"]
                assert comparable(client.states[channel]) == comparable(host), (
                    client.client_id,
                    channel,
                )


def parts(turn: dict[str, Any], kind: str) -> list[dict[str, Any]]:
    return [p for p in turn["responseParts"] if p["kind"] == kind]


def text_of(turn: dict[str, Any]) -> str:
    return "".join(p["content"] for p in parts(turn, "markdown"))


def tool_calls(turn: dict[str, Any]) -> list[dict[str, Any]]:
    return [p["toolCall"] for p in parts(turn, "toolCall")]


def running_tool(client: AhpClient, chat: str) -> dict[str, Any] | None:
    active = client.states[chat].get("activeTurn") or {}
    calls = [p["toolCall"] for p in active.get("responseParts", []) if p["kind"] == "toolCall"]
    return next((c for c in calls if c["status"] == "running"), None)


# -- the flow ----------------------------------------------------------------------------------


@pytest.mark.parametrize("versions", [V1, ("0.7.0",)], ids=["1.0", "0.7"])
async def test_the_client_runs_its_tool_and_the_model_gets_the_result(
    bridge: Bridge, versions: tuple[str, ...]
) -> None:
    owner = await bridge.client("editor", versions=versions)
    flow = ToolSession(owner)
    await flow.open([USAGES])
    other = await flow.join(await bridge.client("other", versions=V1))
    assert flow.meta() == {"registered": [{"name": "usages", "clientId": "editor"}], "refused": []}

    turn_id = await flow.start("find usages")
    request = await flow.execution()
    call = request["toolCall"]
    assert request["clientId"] == "editor" and request["chat"] == flow.chat
    assert request["turnId"] == turn_id
    assert call["contributor"] == {"kind": "client", "clientId": "editor"}
    assert call["status"] == "running" and call["toolName"] == "usages"
    assert call["displayName"] == "List Code Usages"
    assert json.loads(call["toolInput"]) == {"symbol": "main", "lineContent": "def main():"}
    shown = await owner.wait_for(lambda: running_tool(owner, flow.chat))
    assert shown["toolCallId"] == call["toolCallId"] and shown["contributor"] == call["contributor"]
    # 1.0: the client's work is not the user's to give (the session stays idle); 0.7 counts
    # it as input needed (the lens shows 0.7's count).
    await owner.request("ping", {"channel": ROOT})
    expected = 24 if versions == ("0.7.0",) else 1
    assert owner.states[flow.session]["status"] & 0x1F == expected

    # Only the contributing client completes it.
    echo = await flow.complete(other, turn_id, call["toolCallId"], RESULT)
    assert echo["rejectionReason"] == f"tool call {call['toolCallId']} belongs to another client"
    echo = await flow.complete(owner, turn_id, call["toolCallId"], RESULT)
    assert "rejectionReason" not in echo

    turn = await flow.ended(turn_id)
    assert turn["state"] == "complete"
    [done] = tool_calls(turn)
    assert done["status"] == "completed" and done["success"] is True
    assert done["content"] == RESULT["content"] and done["pastTenseMessage"] == "Found 2 usages"
    assert done["contributor"] == {"kind": "client", "clientId": "editor"}
    # The provider got the text: its next output quotes it.
    assert text_of(turn) == "The client said: main.py:1, app.py:7"
    assert not owner.states[flow.session].get("inputNeeded")
    # The client's completion ended the call: the provider's own end of it changed nothing.
    completes = [a for a in other.actions(flow.chat) if a["type"] == "chat/toolCallComplete"]
    assert len(completes) == 1
    await flow.settled()


async def test_a_repeated_call_id_gets_the_first_result_without_asking_again(
    bridge: Bridge,
) -> None:
    owner = await bridge.client("editor", versions=V1)
    flow = ToolSession(owner)
    await flow.open([USAGES])
    turn_id = await flow.start("find usages twice")
    request = await flow.execution()
    assert request["toolCall"]["toolCallId"] == "h-repeated"
    echo = await flow.complete(owner, turn_id, "h-repeated", RESULT)
    assert "rejectionReason" not in echo
    turn = await flow.ended(turn_id)
    assert text_of(turn) == "first: main.py:1, app.py:7 second: main.py:1, app.py:7"
    executions = [
        a
        for a in owner.actions(flow.session)
        if a["type"] == "session/inputNeededSet" and a["request"]["kind"] == "toolClientExecution"
    ]
    assert len(executions) == 1
    await flow.settled()


# -- faults ------------------------------------------------------------------------------------


async def test_a_client_that_leaves_fails_its_call_after_the_grace_period(
    start_bridge: StartBridge, settings: Settings
) -> None:
    settings.bridge.active_client_grace = 0.2
    bridge = await start_bridge(settings)
    owner = await bridge.client("editor", versions=V1)
    flow = ToolSession(owner)
    await flow.open([USAGES])
    watcher = await flow.join(await bridge.client("watcher", versions=V1))
    turn_id = await flow.start("find usages")
    call_id = (await flow.execution(watcher))["toolCall"]["toolCallId"]
    await owner.close()
    flow.clients.remove(owner)

    turn = await flow.ended(turn_id, watcher)
    [failed] = tool_calls(turn)
    assert failed["toolCallId"] == call_id and failed["status"] == "completed"
    assert failed["success"] is False
    message = failed["error"]["message"]
    assert "editor" in message and "left the session" in message
    assert text_of(turn) == f"The client said: {message}"
    session = watcher.states[flow.session]
    assert not session.get("inputNeeded") and session["activeClients"] == []
    # The departed client's tools are no longer registered (the conversation reopened).
    await watcher.wait_for(lambda: flow.meta(watcher) is None)
    turn_id = await flow.start("find usages", watcher)
    turn = await flow.ended(turn_id, watcher)
    assert text_of(turn) == "The client said: There is no tool named usages."
    await flow.settled()


async def test_cancelling_the_turn_ends_the_call_and_tells_the_client(bridge: Bridge) -> None:
    owner = await bridge.client("editor", versions=V1)
    flow = ToolSession(owner)
    await flow.open([USAGES])
    turn_id = await flow.start("find usages")
    call_id = (await flow.execution())["toolCall"]["toolCallId"]
    cancel = {"type": "chat/turnCancelled", "turnId": turn_id, "duration": 1}
    echo = await owner.echo_of(await owner.dispatch(flow.chat, cancel))
    assert "rejectionReason" not in echo
    turn = await flow.ended(turn_id)
    assert turn["state"] == "cancelled"
    [call] = tool_calls(turn)
    assert call["toolCallId"] == call_id and call["status"] == "cancelled"
    assert not owner.states[flow.session].get("inputNeeded")
    # A late completion is refused: nothing waits for it.
    echo = await flow.complete(owner, turn_id, call_id, RESULT)
    assert echo["rejectionReason"] == "no turn is active"
    # The chat goes on: the next turn calls the tool again.
    turn_id = await flow.start("find usages")
    request = await flow.execution()
    echo = await flow.complete(owner, turn_id, request["toolCall"]["toolCallId"], RESULT)
    assert "rejectionReason" not in echo
    assert text_of(await flow.ended(turn_id)) == "The client said: main.py:1, app.py:7"
    await flow.settled()


async def test_a_client_that_never_answers_times_out(
    start_bridge: StartBridge, settings: Settings
) -> None:
    settings.client_tools.timeout = 0.3
    bridge = await start_bridge(settings)
    owner = await bridge.client("editor", versions=V1)
    flow = ToolSession(owner)
    await flow.open([USAGES])
    turn_id = await flow.start("find usages")
    await flow.execution()
    turn = await flow.ended(turn_id)
    [call] = tool_calls(turn)
    message = (
        "The client editor did not complete the usages tool call within 0.3 seconds "
        "(client_tools.timeout); the call failed."
    )
    assert call["success"] is False and call["error"] == {"message": message}
    assert text_of(turn) == f"The client said: {message}"
    assert not owner.states[flow.session].get("inputNeeded")
    await flow.settled()


async def test_a_malformed_result_is_refused_and_the_call_waits_for_a_good_one(
    start_bridge: StartBridge, settings: Settings
) -> None:
    settings.client_tools.max_result_bytes = 1024
    bridge = await start_bridge(settings)
    owner = await bridge.client("editor", versions=V1)
    flow = ToolSession(owner)
    await flow.open([USAGES])
    turn_id = await flow.start("find usages")
    call_id = (await flow.execution())["toolCall"]["toolCallId"]
    echo = await flow.complete(owner, turn_id, call_id, {"pastTenseMessage": "no success flag"})
    assert "success" in echo["rejectionReason"]
    assert running_tool(owner, flow.chat) is not None  # still waiting
    big = {
        "success": True,
        "pastTenseMessage": "Found many",
        "content": [{"type": "text", "text": "x" * 3000}],
    }
    echo = await flow.complete(owner, turn_id, call_id, big)
    assert "rejectionReason" not in echo
    turn = await flow.ended(turn_id)
    said = text_of(turn).removeprefix("The client said: ")
    assert said == (
        "x" * 1024 + "\n[The client's result was cut at 1024 of its 3000 bytes "
        "(client_tools.max_result_bytes).]"
    )
    [call] = tool_calls(turn)
    assert call["content"] == big["content"]  # the client's whole result is kept for display
    await flow.settled()


async def test_malformed_and_oversized_arguments_never_reach_the_client(
    start_bridge: StartBridge, settings: Settings, tmp_path: Path
) -> None:
    big = json.dumps({"symbol": "x" * agentapi.MAX_HOST_TOOL_ARGUMENTS})
    extra = (
        '\n[[conversations]]\nindex = 1\n[[conversations.prompts]]\ntext = "oversized"\n'
        "[[conversations.prompts.steps]]\n"
        f'kind = "host_tool"\nname = "usages"\narguments_json = {json.dumps(big)}\n'
        'reply = "The call failed: {text}"\n'
    )
    settings.providers["fake"]["script"] = str(tool_script(tmp_path, extra))
    bridge = await start_bridge(settings)
    owner = await bridge.client("editor", versions=V1)
    flow = ToolSession(owner)
    await flow.open([USAGES])
    turn = await flow.ended(await flow.start("malformed arguments"))
    assert text_of(turn) == (
        "The call failed: The arguments of the usages tool call are not a JSON object."
    )
    [call] = tool_calls(turn)
    assert call["success"] is False and call["contributor"]["clientId"] == "editor"
    turn = await flow.ended(await flow.start("oversized"))
    assert text_of(turn) == (
        f"The call failed: The call's arguments exceed {agentapi.MAX_HOST_TOOL_ARGUMENTS} bytes."
    )
    kinds = [
        a["request"]["kind"]
        for a in owner.actions(flow.session)
        if a["type"] == "session/inputNeededSet"
    ]
    assert "toolClientExecution" not in kinds
    await flow.settled()


async def test_the_host_refuses_oversized_arguments_a_provider_let_through(
    start_bridge: StartBridge, settings: Settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The contract makes adapters refuse them; the host does not rely on it."""
    import ahp_bridge_fake.turns

    monkeypatch.setattr(ahp_bridge_fake.turns, "MAX_HOST_TOOL_ARGUMENTS", 1 << 30)
    size = agentapi.MAX_HOST_TOOL_ARGUMENTS + 1
    arguments = json.dumps({"symbol": "x" * (size - len('{"symbol": ""}'))})
    assert len(arguments) == size
    extra = (
        '\n[[conversations]]\nindex = 1\n[[conversations.prompts]]\ntext = "oversized"\n'
        "[[conversations.prompts.steps]]\n"
        f'kind = "host_tool"\nname = "usages"\narguments_json = {json.dumps(arguments)}\n'
        'reply = "The call failed: {text}"\n'
    )
    settings.providers["fake"]["script"] = str(tool_script(tmp_path, extra))
    bridge = await start_bridge(settings)
    owner = await bridge.client("editor", versions=V1)
    flow = ToolSession(owner)
    await flow.open([USAGES])
    turn = await flow.ended(await flow.start("oversized"))
    assert text_of(turn) == (
        f"The call failed: The arguments of the usages tool call are {size} bytes; a client "
        f"tool takes at most {agentapi.MAX_HOST_TOOL_ARGUMENTS} bytes (MaxHostToolArguments)."
    )
    assert not any(a["type"] == "session/inputNeededSet" for a in owner.actions(flow.session))
    await flow.settled()


# -- which tools -------------------------------------------------------------------------------


async def test_active_client_set_and_removed_change_the_tools_and_keep_the_transcript(
    start_bridge: StartBridge, settings: Settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    record = record_provider_calls(monkeypatch, tmp_path / "calls.jsonl")
    bridge = await start_bridge(settings)
    owner = await bridge.client("editor", versions=V1)
    flow = ToolSession(owner)
    await flow.open()
    assert flow.meta() is None
    first = await flow.start("find usages")
    assert text_of(await flow.ended(first)) == "The client said: There is no tool named usages."

    set_client = {
        "type": "session/activeClientSet",
        "activeClient": {"clientId": "editor", "displayName": "Editor", "tools": [USAGES]},
    }
    echo = await owner.echo_of(await owner.dispatch(flow.session, set_client))
    assert "rejectionReason" not in echo
    await owner.wait_for(lambda: flow.meta() is not None)
    assert flow.meta()["registered"] == [{"name": "usages", "clientId": "editor"}]
    second = await flow.start("find usages")
    request = await flow.execution()
    await flow.complete(owner, second, request["toolCall"]["toolCallId"], RESULT)
    assert text_of(await flow.ended(second)) == "The client said: main.py:1, app.py:7"

    removed = {"type": "session/activeClientRemoved", "clientId": "editor"}
    echo = await owner.echo_of(await owner.dispatch(flow.session, removed))
    assert "rejectionReason" not in echo
    await owner.wait_for(lambda: flow.meta() is None)
    third = await flow.start("find usages")
    assert text_of(await flow.ended(third)) == "The client said: There is no tool named usages."

    # One conversation throughout, reopened by its id with the tools of the moment.
    lines = [json.loads(line) for line in record.read_text().splitlines()]
    opens = [line for line in lines if line.get("call") == "open"]
    requests = [o["args"]["request"] for o in opens]
    assert [[t["Name"] for t in r["Tools"] or []] for r in requests] == [[], ["usages"], []]
    conversation = requests[1]["ConversationID"]
    assert conversation and requests[2]["ConversationID"] == conversation
    assert [t["id"] for t in owner.states[flow.chat]["turns"]] == [first, second, third]
    await flow.settled()


async def test_refused_tools_are_named_with_their_reasons(bridge: Bridge) -> None:
    owner = await bridge.client("editor", versions=V1)
    flow = ToolSession(owner)
    shell = {"name": "shell", "description": "the client's own shell"}
    bad = {"name": "has space", "description": "not a model tool name"}
    await flow.open([USAGES, shell, bad, USAGES])
    meta = flow.meta()
    assert meta["registered"] == [{"name": "usages", "clientId": "editor"}]
    reasons = {r["name"]: r["reason"] for r in meta["refused"]}
    assert reasons["has space"] == "a tool name must be 1 to 64 letters, digits, '_' or '-'"
    assert reasons["usages"] == "this client already offers a tool of that name"
    assert reasons["shell"] == (
        "the provider refused it: host tools named like the fake script's own tools "
        "(or twice): shell"
    )
    # The conversation opened without them and works with the one it took.
    turn_id = await flow.start("find usages")
    request = await flow.execution()
    await flow.complete(owner, turn_id, request["toolCall"]["toolCallId"], RESULT)
    assert text_of(await flow.ended(turn_id)) == "The client said: main.py:1, app.py:7"
    turn = await flow.ended(await flow.start("run the shell"))
    [shell_call] = tool_calls(turn)
    assert "contributor" not in shell_call  # the provider's own shell tool
    await flow.settled()


async def test_a_provider_without_host_tools_gets_none_and_the_session_says_so(
    start_bridge: StartBridge, settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    class NoHostTools(FakeProvider):
        def capabilities(self) -> agentapi.Capabilities:
            return super().capabilities().model_copy(update={"host_tools": False})

    real = providers.create

    def create(name: str, options: Any = None) -> Any:
        fake = real(name, options)
        assert isinstance(fake, FakeProvider)
        return NoHostTools(fake.script, time_scale=0.0)

    monkeypatch.setattr(providers, "create", create)
    bridge = await start_bridge(settings)
    owner = await bridge.client("editor", versions=V1)
    flow = ToolSession(owner)
    await flow.open([USAGES])
    assert flow.meta() == {
        "registered": [],
        "refused": [
            {
                "name": "usages",
                "clientId": "editor",
                "reason": "the fake provider cannot register client tools (no host tools)",
            }
        ],
    }
    turn = await flow.ended(await flow.start("find usages"))
    assert text_of(turn) == "The client said: There is no tool named usages."
    await flow.settled()


async def test_a_result_awaiting_confirmation_reaches_the_model_only_once_confirmed(
    bridge: Bridge,
) -> None:
    owner = await bridge.client("editor", versions=V1)
    flow = ToolSession(owner)
    await flow.open([USAGES])
    reviewer = await flow.join(await bridge.client("reviewer", versions=V1))
    for approved, said in (
        (False, "The user rejected the result of the usages tool call."),
        (True, "main.py:1, app.py:7"),
    ):
        turn_id = await flow.start("find usages")
        call_id = (await flow.execution())["toolCall"]["toolCallId"]
        complete = {
            "type": "chat/toolCallComplete",
            "turnId": turn_id,
            "toolCallId": call_id,
            "result": RESULT,
            "requiresResultConfirmation": True,
        }
        assert "rejectionReason" not in await owner.echo_of(
            await owner.dispatch(flow.chat, complete)
        )
        await reviewer.wait_for(
            lambda: (
                (running := reviewer.states[flow.chat].get("activeTurn"))
                and any(
                    p["kind"] == "toolCall"
                    and p["toolCall"]["status"] == "pending-result-confirmation"
                    for p in running["responseParts"]
                )
            )
        )
        confirm = {
            "type": "chat/toolCallResultConfirmed",
            "turnId": turn_id,
            "toolCallId": call_id,
            "approved": approved,
        }
        echo = await reviewer.echo_of(await reviewer.dispatch(flow.chat, confirm))
        assert "rejectionReason" not in echo
        turn = await flow.ended(turn_id)
        assert text_of(turn) == f"The client said: {said}"
    await flow.settled()
