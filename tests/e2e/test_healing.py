"""Self-healing chats, reproduced as an operator meets them: `ahp-bridge --provider remote` in
front of an `ahp-bridge serve-provider` that keeps no data directory.

Every process is real (the CLI, twice over: the bridge and the provider server), on a unix
socket and 127.0.0.1. SIGKILL and restart the provider: it no longer knows the chat's
conversation, so the bridge opens a new one, says so in the chat, records the new id, and the
same chat runs turns again; after a bridge restart too. A 1.0 client drives, a 0.7 client
watches the chat, and both check every frame against their version's schema.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
import trio
from ahp_bridge_fake import CONFORMANCE_SCRIPT

from ahp_bridge import agentapi, providers
from ahp_bridge.config import Settings
from ahp_bridge.engine.chats import META_KEY, NOTICE
from ahp_bridge.host.durable.catalog import Catalog
from tests.e2e.conftest import Bridge, StartBridge
from tests.e2e.test_remote_helpers import socket_address
from tests.support.ahp_client import AhpClient, open_client, strip_none

ROOT = "ahp-root://"
REPO = Path(__file__).resolve().parents[2]
V1 = ("1.0.0", "0.9.0")


@asynccontextmanager
async def process(argv: list[str], prefix: str, env: dict[str, str]) -> AsyncIterator[Any]:
    """Start `argv`; yield (process, the rest of its first stdout line after `prefix`)."""
    proc = await trio.lowlevel.open_process(
        argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env
    )
    try:
        assert proc.stdout is not None
        buffer = b""
        with trio.fail_after(30):
            while b"\n" not in buffer:
                chunk = await proc.stdout.receive_some(4096)
                assert chunk, f"{argv[3:5]} exited before it listened"
                buffer += chunk
        line = buffer.split(b"\n", 1)[0].decode().strip()
        assert line.startswith(prefix), line
        yield proc, line[len(prefix) :]
    finally:
        if proc.returncode is None:
            proc.send_signal(signal.SIGTERM)
            with trio.move_on_after(20):
                await proc.wait()
        if proc.returncode is None:
            proc.kill()
        with trio.CancelScope(shield=True):
            await proc.wait()
            if proc.stdout is not None:
                await proc.stdout.aclose()


def env() -> dict[str, str]:
    out = {k: v for k, v in os.environ.items() if not k.startswith("AHP_BRIDGE__")}
    out["PYTHONPATH"] = os.pathsep.join(str(REPO / d) for d in ("src", "adapters", "."))
    return out


def provider(listen: str) -> Any:
    """The fake served over gRPC with no data directory: it forgets everything when it dies."""
    argv = [
        sys.executable, "-m", "ahp_bridge.cli", "serve-provider", "--provider", "fake",
        "--listen", listen,
        "--option", f"script={CONFORMANCE_SCRIPT}",
        "--option", "time_scale=0.2",
    ]  # fmt: skip
    return process(argv, "ahp-bridge serving provider fake on ", env())


def bridge(listen: str, data_dir: Path) -> Any:
    argv = [
        sys.executable, "-m", "ahp_bridge.cli", "--provider", "remote",
        "--listen", "127.0.0.1:0", "--data-dir", str(data_dir), "--log-level", "warning",
    ]  # fmt: skip
    environ = {**env(), "AHP_BRIDGE__PROVIDERS__REMOTE__ADDRESS": listen}
    return process(argv, "ahp-bridge listening on ", environ)


async def connect(nursery: trio.Nursery, url: str, name: str, **kw: Any) -> AhpClient:
    client = await open_client(nursery, url, name, **kw)
    await client.initialize([ROOT])
    return client


async def start_turn(client: AhpClient, chat: str, text: str) -> str:
    return await client.start_turn(chat, text)


async def finished(client: AhpClient, chat: str, turn_id: str) -> dict[str, Any]:
    def find() -> dict[str, Any] | None:
        state = client.states[chat]
        if (state.get("activeTurn") or {}).get("id") == turn_id:
            return None
        return next((t for t in state["turns"] if t["id"] == turn_id), None)

    return await client.wait_for(find, timeout=30)  # type: ignore[no-any-return]


def parts(turn: dict[str, Any], kind: str) -> list[dict[str, Any]]:
    return [p for p in turn["responseParts"] if p["kind"] == kind]


def recorded_conversation(data_dir: Path, chat: str) -> str:
    catalog = Catalog.open(data_dir, read_only=True)
    try:
        return next(c.conversation_id for r in catalog.sessions() for c in r.chats if c.uri == chat)
    finally:
        catalog.close()


async def until_recorded(data_dir: Path, chat: str, conversation: str) -> None:
    with trio.fail_after(10):
        while recorded_conversation(data_dir, chat) != conversation:
            await trio.sleep(0.02)


async def test_a_chat_heals_when_its_remote_provider_restarts_without_its_data(
    tmp_path: Path, nursery: trio.Nursery
) -> None:
    listen, data_dir = socket_address(), tmp_path / "data"
    async with provider(listen) as (first, _), bridge(listen, data_dir) as (b1, url):
        client = await connect(nursery, url, "driver", versions=V1)
        session = f"ahp-session:/{uuid.uuid4()}"
        await client.request("createSession", {"channel": session, "provider": "remote"})
        await client.subscribe(session)
        await client.wait_for(lambda: client.states[session].get("lifecycle") == "ready")
        chat = client.states[session]["defaultChat"]
        await client.subscribe(chat)
        watcher = await connect(nursery, url, "watcher")  # 0.7
        await watcher.subscribe(chat)

        done = await finished(client, chat, await start_turn(client, chat, "conformance: plain"))
        assert done["state"] == "complete"
        lost = recorded_conversation(data_dir, chat)

        # SIGKILL the provider mid-turn: the turn ends with the provider's exit.
        slow = await start_turn(client, chat, "conformance: slow")
        await client.wait_for(
            lambda: (client.states[chat].get("activeTurn") or {}).get("responseParts")
        )
        first.kill()
        cut = await finished(client, chat, slow)
        assert cut["state"] == "error"
        async with provider(listen):  # back, with no memory of the conversation
            again = await start_turn(client, chat, "conformance: plain")
            healed = await finished(client, chat, again)
            assert healed["state"] == "complete", healed
            notice, *rest = healed["responseParts"]
            assert notice["kind"] == "systemNotification" and notice["content"] == NOTICE
            assert notice["_meta"][META_KEY]["lost"] == lost
            new_id = notice["_meta"][META_KEY]["conversation"]
            assert new_id and new_id != lost
            assert "Hello from the conformance script." in "".join(
                p["content"] for p in rest if p["kind"] == "markdown"
            )
            await until_recorded(data_dir, chat, new_id)  # durable: the new id is the chat's
            # the 0.7 watcher saw it all, and holds what a fresh snapshot holds
            assert await watcher.request("ping", {"channel": ROOT}) is None
            fresh = (await watcher.request("subscribe", {"channel": chat}))["snapshot"]["state"]
            assert [t["id"] for t in watcher.states[chat]["turns"]] == [
                t["id"] for t in fresh["turns"]
            ]
            assert strip_none(watcher.states[chat]["turns"]) == strip_none(fresh["turns"])
            await client.close()
            await watcher.close()
            b1.send_signal(signal.SIGTERM)
            with trio.fail_after(20):
                await b1.wait()

            # The bridge restarts while the provider still has the new conversation: the
            # recorded id reopens it, with the turn it ran.
            async with bridge(listen, data_dir) as (_, url2):
                client = await connect(nursery, url2, "driver", versions=V1)
                turns = (await client.subscribe(chat))["state"]["turns"]
                assert [t["message"]["text"] for t in turns] == ["conformance: plain"]
                assert parts(turns[0], "systemNotification") == []
                await client.close()

        # Both restart and the provider has forgotten again: the restored chat heals at once,
        # with the notice as a turn of its own, and runs the next prompt.
        async with provider(listen), bridge(listen, data_dir) as (_, url3):
            client = await connect(nursery, url3, "driver", versions=V1)
            state = (await client.subscribe(session))["state"]
            assert state["lifecycle"] == "ready"
            (notice_turn,) = (await client.subscribe(chat))["state"]["turns"]
            assert notice_turn["message"]["origin"] == {"kind": "systemNotification"}
            (notice,) = parts(notice_turn, "systemNotification")
            assert notice["content"] == NOTICE and notice["_meta"][META_KEY]["lost"] == new_id
            newest = notice["_meta"][META_KEY]["conversation"]
            await until_recorded(data_dir, chat, newest)
            turn = await finished(
                client, chat, await start_turn(client, chat, "conformance: plain")
            )
            assert turn["state"] == "complete"
            assert parts(turn, "systemNotification") == []  # told once, not on every turn
            await client.close()


# -- in-process: ConversationNotFound from a call on the open conversation -----------------------


class Forgetful:
    """Wraps the real fake: conversations in `forgotten` raise ConversationNotFound on every call
    and cannot be reopened, as a provider whose store lost them behaves (a fault the fake cannot
    produce on demand while a conversation is open)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.forgotten: set[str] = set()
        self.opened: list[str] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    async def __aenter__(self) -> Forgetful:
        await self.inner.__aenter__()
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.inner.__aexit__(*exc)

    async def open(self, request: agentapi.OpenRequest) -> Any:
        if request.conversation_id in self.forgotten:
            raise agentapi.ConversationNotFound(f"no conversation {request.conversation_id!r}")
        conversation = ForgetfulConversation(await self.inner.open(request), self)
        self.opened.append(conversation.id())
        return conversation


class ForgetfulConversation:
    def __init__(self, inner: Any, provider: Forgetful) -> None:
        self.inner = inner
        self.provider = provider

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self.inner, name)
        if name in ("send", "respond", "steer", "set_model", "set_title", "history"):

            async def call(*args: Any) -> Any:
                if self.inner.id() in self.provider.forgotten:
                    raise agentapi.ConversationNotFound(f"no conversation {self.inner.id()!r}")
                return await attr(*args)

            return call
        return attr


@pytest.fixture
def forgetful(monkeypatch: pytest.MonkeyPatch) -> list[Forgetful]:
    made: list[Forgetful] = []
    real = providers.create

    def create(name: str, options: Any = None) -> Any:
        made.append(Forgetful(real(name, options)))
        return made[-1]

    monkeypatch.setattr(providers, "create", create)
    return made


async def in_process(start_bridge: StartBridge, make_settings: Any) -> tuple[Bridge, AhpClient]:
    settings: Settings = make_settings()
    settings.providers = {"fake": {"script": str(CONFORMANCE_SCRIPT), "time_scale": 0.0}}
    bridge_ = await start_bridge(settings)
    return bridge_, await bridge_.client("driver", versions=V1)


async def ready(client: AhpClient) -> tuple[str, str]:
    session = f"ahp-session:/{uuid.uuid4()}"
    await client.request("createSession", {"channel": session})
    await client.subscribe(session)
    await client.wait_for(lambda: client.states[session].get("lifecycle") == "ready")
    chat = client.states[session]["defaultChat"]
    await client.subscribe(chat)
    return session, chat


async def test_a_send_that_finds_the_conversation_gone_runs_on_a_new_one(
    start_bridge: StartBridge, make_settings: Any, forgetful: list[Forgetful]
) -> None:
    bridge_, client = await in_process(start_bridge, make_settings)
    _, chat = await ready(client)
    watcher = await bridge_.client("watcher")  # 0.7
    await watcher.subscribe(chat)
    first = await finished(client, chat, await start_turn(client, chat, "conformance: plain"))
    assert first["state"] == "complete"
    (provider,) = forgetful
    (lost,) = provider.opened
    provider.forgotten.add(lost)
    turn = await finished(client, chat, await start_turn(client, chat, "conformance: plain"))
    assert turn["state"] == "complete", turn
    assert [p["kind"] for p in turn["responseParts"]][:2] == ["systemNotification", "markdown"]
    notice = turn["responseParts"][0]
    assert notice["content"] == NOTICE
    assert notice["_meta"][META_KEY] == {"lost": lost, "conversation": provider.opened[-1]}
    assert len(provider.opened) == 2
    await until_recorded(bridge_.settings.data_dir(), chat, provider.opened[-1])
    # the next prompt goes to the new conversation without another notice
    later = await finished(client, chat, await start_turn(client, chat, "conformance: plain"))
    assert later["state"] == "complete" and parts(later, "systemNotification") == []
    assert await watcher.request("ping", {"channel": ROOT}) is None
    fresh = (await watcher.request("subscribe", {"channel": chat}))["snapshot"]["state"]
    assert strip_none(watcher.states[chat]["turns"]) == strip_none(fresh["turns"])


async def test_an_answer_that_finds_the_conversation_gone_ends_its_turn_and_heals_the_chat(
    start_bridge: StartBridge, make_settings: Any, forgetful: list[Forgetful]
) -> None:
    _, client = await in_process(start_bridge, make_settings)
    session, chat = await ready(client)
    turn_id = await start_turn(client, chat, "conformance: permission")
    (request,) = await client.wait_for(lambda: client.states[session].get("inputNeeded"))
    (provider,) = forgetful
    (lost,) = provider.opened
    provider.forgotten.add(lost)
    tool = request["toolCall"]
    answer = {
        "type": "chat/toolCallConfirmed",
        "turnId": turn_id,
        "toolCallId": tool["toolCallId"],
        "approved": True,
        "confirmed": "user-action",
        "selectedOptionId": "allow-once",
    }
    assert "rejectionReason" not in await client.echo_of(await client.dispatch(chat, answer))
    ended = await finished(client, chat, turn_id)
    assert ended["state"] == "error"
    (error,) = parts(ended, "error")  # what the lost conversation ran is over
    assert error["error"]["errorType"] == "conversationLost"
    notice_turn = await client.wait_for(
        lambda: next(
            (t for t in client.states[chat]["turns"] if t["message"]["origin"]["kind"] != "user"),
            None,
        )
    )
    assert notice_turn["message"] == {"text": NOTICE, "origin": {"kind": "systemNotification"}}
    assert parts(notice_turn, "systemNotification")[0]["_meta"][META_KEY]["lost"] == lost
    assert not client.states[session].get("inputNeeded")  # nothing left waiting
    turn = await finished(client, chat, await start_turn(client, chat, "conformance: plain"))
    assert turn["state"] == "complete" and parts(turn, "systemNotification") == []
