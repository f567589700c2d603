"""VS Code's agents window as a client: its captured request sequence, replayed over a socket.

`tests/fixtures/vscode/` holds what VS Code 1.131 sent a 0.7.0 host (README there). VS Code
mints session URIs in the provider's scheme (`<provider>:/<uuid>`) and subscribes to
`<session>/annotations`; it dispatches `root/configChanged` from clientSeq 0, probes `.vscode/`
files, lists `file:///`, creates the session with its own tools and customizations and a
progress token, names a model on its turn, opens a terminal on an `agenthost-terminal:` URI and
pings a lot. Replayed as `["0.7.0"]`, as `["1.0.0", "0.9.0"]` and as `["0.10.0"]` (VS Code's own
0.10.0 release, which shares the 0.9/1.0 wire contract: served on the 1.0 line, the string
echoed): every request gets a specific answer, none breaks the session, and the turn runs to
its end.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from ahp_bridge.config import Settings
from tests.e2e.conftest import Bridge, StartBridge
from tests.support.ahp_client import AhpClient, RpcFailure
from tests.support.paths import FIXTURES

ROOT = "ahp-root://"
SCRIPT = Path(__file__).parent / "scripts" / "bridge.toml"
CAPTURE = json.loads((FIXTURES / "vscode" / "vscode-1.131-client-requests.json").read_text())
REQUESTS: list[dict[str, Any]] = CAPTURE["requests"]
OLD_CLIENT = "0a78fdaa-f198-495d-a5dc-16a73546cf40"
OLD_SESSION = "echo:/af2d658f-61c0-4279-a549-ffb2d89517f2"
OLD_CHAT = "ahp-chat:/62b1c265-84b1-40b6-bba4-86b9cd404a84"


@pytest.fixture
async def bridge(start_bridge: StartBridge, make_settings: Callable[..., Settings]) -> Bridge:
    settings = make_settings()
    settings.providers = {"fake": {"script": str(SCRIPT), "time_scale": 0.0}}
    return await start_bridge(settings)  # type: ignore[no-any-return]


class Replay:
    """The capture, with the ids of this run: our client id, a fresh session, the real chat,
    and the bridge's working directory for the capture's `file:///` (a window without a folder;
    sessions may not be rooted at `/` unless `bridge.allowed_directories` lists it), so every
    path of the capture lies below it."""

    def __init__(self, client: AhpClient, workdir: Path) -> None:
        self.client = client
        self.workdir = workdir
        self.session = f"fake:/{uuid.uuid4()}"
        self.chat = ""

    def adapt(self, value: Any) -> Any:
        text = json.dumps(value)
        text = text.replace(OLD_SESSION, self.session).replace(OLD_CLIENT, self.client.client_id)
        text = text.replace('"echo"', '"fake"').replace('"echo-1"', '"fake-fast"')
        root = self.workdir.as_uri()
        text = re.sub(r'"file:///([^"]*)"', lambda m: f'"{root}/{m[1]}"'.replace('/"', '"'), text)
        if self.chat:
            text = text.replace(OLD_CHAT, self.chat)
        adapted = json.loads(text)
        if self.client.line != "0.7":
            adapted = _enablement(adapted)  # a 1.0 client sends 1.0's customization shape
        return adapted

    async def send(self, request: dict[str, Any]) -> tuple[str, Any]:
        """('result' | 'error' | 'echo' | 'none', what came back) for one captured request."""
        params = self.adapt(request["params"])
        method = request["method"]
        if method == "dispatchAction":
            seq = await self.client.dispatch(params["channel"], params["action"])
            if not self.client.states.get(params["channel"]) and params["channel"] != ROOT:
                return "none", None  # an unknown channel: ignored, as the spec says
            return "echo", await self.client.echo_of(seq)
        if method == "unsubscribe":
            await self.client.notify(method, params)
            return "none", None
        try:
            return "result", await self.client.request(method, params)
        except RpcFailure as failure:
            return "error", failure


def _enablement(value: Any) -> Any:
    """0.7's plugin `enabled` flag as 1.0's decision list, wherever it appears."""
    if isinstance(value, list):
        return [_enablement(v) for v in value]
    if not isinstance(value, dict):
        return value
    out = {k: _enablement(v) for k, v in value.items()}
    if out.get("type") == "plugin" and "enabled" in out:
        out["enablement"] = [{"kind": "global", "enabled": out.pop("enabled")}]
    return out


@pytest.mark.parametrize(
    "offer", [("0.7.0",), ("1.0.0", "0.9.0"), ("0.10.0",)], ids=["0.7.0", "1.0.0+0.9.0", "0.10.0"]
)
async def test_the_vscode_request_sequence(bridge: Bridge, offer: tuple[str, ...]) -> None:
    # 1. VS Code first tries to reconnect as the client of an earlier host run.
    stale = await bridge.client(OLD_CLIENT, initialize=False, versions=offer, check=True)
    reconnect = await stale.request("reconnect", REQUESTS[0]["params"])
    assert reconnect["type"] == "snapshot"  # not a replay: this host never saw that client
    assert [s["resource"] for s in reconnect["snapshots"]] == [ROOT]
    await stale.close()

    client = await bridge.client(
        f"vscode-{uuid.uuid4()}", initialize=False, versions=offer, check=True
    )
    assert bridge.settings.bridge.workdir is not None
    replay = Replay(client, bridge.settings.bridge.workdir)
    answers: dict[str, list[tuple[str, Any]]] = {}
    for request in REQUESTS[1:]:
        method = request["method"]
        if method == "initialize":
            params = replay.adapt(request["params"])
            params["protocolVersions"] = list(offer)
            answer: tuple[str, Any] = (
                "result",
                await client.initialize(params["initialSubscriptions"]),
            )
            assert answer[1]["protocolVersion"] == offer[0]  # the offered string, echoed
            assert client.line == ("0.7" if offer == ("0.7.0",) else "1.0")
        else:
            answer = await replay.send(request)
        answers.setdefault(method, []).append(answer)
        if method == "createSession":
            snap = await client.subscribe(replay.session)
            assert snap["resource"] == replay.session
            await client.wait_for(lambda: client.states[replay.session].get("lifecycle") == "ready")
            replay.chat = client.states[replay.session]["defaultChat"]
            await client.subscribe(replay.session + "/annotations")
            await client.subscribe(replay.chat)

    # Every request was answered, specifically (no internal errors), and the answers are these.
    for method, got in answers.items():
        for kind, value in got:
            if kind == "error":
                assert value.code != -32603, (method, value.message)
                assert value.message, method
    assert answers["listSessions"][0][0] == "result"
    assert answers["ping"] == [("result", None)]
    assert answers["resolveSessionConfig"][0][0] == "result"
    assert answers["createSession"] == [("result", None)]
    configured = answers["dispatchAction"][0]
    assert configured[0] == "echo" and "rejectionReason" not in configured[1]  # clientSeq 0
    for method in ("resourceRead", "resourceResolve"):
        kind, failure = answers[method][0]
        assert kind == "error" and failure.code == -32008, (method, failure)  # no such file
    assert answers["resourceList"][0][0] == "result", answers["resourceList"]
    for method in ("createTerminal", "disposeTerminal"):
        kind, failure = answers[method][0]
        assert kind == "error" and failure.code == -32009
        assert "does not offer terminals" in failure.message
    echoes = [value for kind, value in answers["dispatchAction"] if kind == "echo"]
    assert all("rejectionReason" not in e for e in echoes), echoes
    assert [k for k, _ in answers["dispatchAction"]].count("none") == 1  # terminal/resized
    # The session lives on its own URI, with its annotations channel, and the turn ran.
    session = client.states[replay.session]
    assert session["provider"] == "fake"
    assert session["activeClients"][0]["clientId"] == client.client_id
    assert [t["name"] for t in session["activeClients"][0]["tools"]] == [
        "usages",
        "rename",
        "toolSearch",
    ]
    assert client.states[replay.session + "/annotations"] == {"annotations": []}
    await client.wait_for(lambda: client.states[replay.chat]["turns"])
    [turn] = client.states[replay.chat]["turns"]
    assert turn["state"] == "complete"
    assert turn["message"]["model"] == {"id": "fake-fast"}
    assert [p["content"] for p in turn["responseParts"] if p["kind"] == "markdown"] == ["ok"]
    progress = [n for n in client.notifications if n["method"] == "root/progress"]
    assert progress and progress[-1]["params"]["progress"] == progress[-1]["params"]["total"]
    # VS Code pings often (over a thousand in one working session): every ping is answered.
    for _ in range(300):
        assert await client.request("ping", {"channel": ROOT}) is None
    assert client.closed is None


async def test_a_session_uri_in_use_is_refused_and_any_other_scheme_works(bridge: Bridge) -> None:
    client = await bridge.client("vs", versions=("1.0.0", "0.9.0"), check=True)
    for uri in (f"fake:/{uuid.uuid4()}", f"copilot:/{uuid.uuid4()}", "my-app:session-7"):
        assert await client.request("createSession", {"channel": uri, "provider": "fake"}) is None
        snap = await client.subscribe(uri)
        assert snap["state"]["provider"] == "fake"
        assert (await client.subscribe(uri + "/annotations"))["state"] == {"annotations": []}
    with pytest.raises(RpcFailure) as err:
        await client.request("createSession", {"channel": "my-app:session-7", "provider": "fake"})
    assert err.value.code == -32003
    with pytest.raises(RpcFailure) as err:
        await client.subscribe("fake:/never-created")
    assert err.value.code == -32001
