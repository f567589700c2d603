"""host/runtime/auth.py `SignInWatch`: noticing a runtime that lost its sign-in while the bridge
runs.

Small recording providers stand in for runtimes here (the real path, a fake runtime whose
sign-in expires mid-turn over real WebSockets, is tests/e2e/test_sign_in.py): they count
`account()` and `check()` calls and answer what each case needs. The engine and the shell are
real (no sockets): a suspicion is the engine's (`suspect_sign_in`, as after a failed turn), the
check is the shell's job, and the peers are the engine's own records, one per wire line.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from types import TracebackType
from typing import Any, Self

import orjson
import pytest
import trio
import trio.testing

from ahp_bridge import agentapi
from ahp_bridge.engine.core import Engine, EngineConfig
from ahp_bridge.engine.peers import Peer
from ahp_bridge.engine.timeouts import Timeouts
from ahp_bridge.host.runtime import auth
from ahp_bridge.host.runtime.providers import Providers
from ahp_bridge.host.shell import Shell
from ahp_bridge.protocol import errors as E
from ahp_bridge.protocol.errors import RpcError
from ahp_bridge.protocol.uris import ROOT
from ahp_bridge.protocol.versions import V07, V09, V10
from ahp_bridge.state.store import Store
from tests.support import wire_schema

HINT = "signed out: run `rec login`"


class Recording:
    """A provider runtime that counts sign-in questions; `account()` answers `signed_in`."""

    def __init__(self, *, account_capability: bool = True) -> None:
        self.account_capability = account_capability
        self.signed_in = True
        self.check_signed_out = True
        self.account_calls = 0
        self.check_calls = 0
        self.account_error: Exception | None = None
        self.hang = False
        self.release = trio.Event()

    def name(self) -> str:
        return "rec"

    def display_name(self) -> str:
        return "Recording"

    def capabilities(self) -> agentapi.Capabilities:
        return agentapi.Capabilities(account=self.account_capability)

    async def check(self) -> None:
        self.check_calls += 1
        await trio.lowlevel.checkpoint()
        if not self.signed_in and self.check_signed_out:
            raise agentapi.SignedOut(HINT)

    async def models(self) -> list[agentapi.Model]:
        await trio.lowlevel.checkpoint()
        return [agentapi.Model(id="m", name="M")]

    async def open(self, req: agentapi.OpenRequest) -> agentapi.Conversation:
        raise agentapi.Unsupported("no conversations here")

    async def shutdown(self) -> None:
        pass

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        return None

    # Half of an AccountManager: enough to be asked, were the host careless.
    async def account(self) -> agentapi.Account:
        self.account_calls += 1
        signed_in = self.signed_in  # as it was when asked (a slow answer may be stale)
        if self.hang:
            await self.release.wait()
        await trio.lowlevel.checkpoint()
        if self.account_error is not None:
            raise self.account_error
        return agentapi.Account(signed_in=signed_in, message="token revoked")


class AccountRecording(Recording):
    """A whole AccountManager."""

    async def sign_in(self, token: str) -> agentapi.Account:
        if self.hang:
            await self.release.wait()
        self.signed_in = True
        return agentapi.Account(signed_in=True)

    async def sign_out(self) -> agentapi.Account:
        self.signed_in = False
        return agentapi.Account(signed_in=False)


class Host:
    """A running engine and shell with the one provider, and the watch under test."""

    def __init__(self, providers: Providers, nursery: trio.Nursery) -> None:
        self.providers = providers
        self.engine = Engine(
            Store(), providers.infos, EngineConfig(), now_ms=lambda: 0, new_id=lambda: "x"
        )
        self.engine.start()
        self.shell = Shell(self.engine, nursery)
        self.watch = auth.SignInWatch(self.shell, providers)
        self.shell.jobs[auth.CHECK] = self.watch.check
        self.timeouts = providers.timeouts
        self.store = self.engine.store

    def suspect(self) -> None:
        """What a failed turn does: the engine asks for a check."""
        self.engine.suspect_sign_in("rec")
        self.shell.settle()

    def peer(self, line: Any) -> Peer:
        peer = self.engine.open_peer(0)
        peer.client_id, peer.wire = f"client-{line}", self.engine.fanout.wires[line]
        self.engine.connected(peer)
        return peer


def frames(peer: Peer) -> list[dict[str, Any]]:
    return [orjson.loads(frame) for frame in peer.outbox]


@pytest.fixture
async def managed(request: pytest.FixtureRequest, nursery: trio.Nursery) -> AsyncIterator[Any]:
    """(provider, host, its info), running."""
    provider = request.param
    providers = Providers(["rec"], {}, instances={"rec": provider}, timeouts=Timeouts())
    async with providers.running():
        yield provider, Host(providers, nursery), providers.infos["rec"]


def _agents(host: Host) -> list[dict[str, Any]]:
    agents: list[dict[str, Any]] = host.store.state(ROOT)["agents"]
    return agents


@pytest.mark.parametrize(
    "managed",
    [Recording(account_capability=True), AccountRecording(account_capability=False)],
    ids=["account-capability-without-AccountManager", "AccountManager-without-capability"],
    indirect=True,
)
async def test_a_provider_that_cannot_be_signed_in_is_never_asked(managed: Any) -> None:
    provider, sessions, entry = managed
    provider.signed_in = False  # it would say signed out, if it were asked
    for _ in range(3):
        sessions.suspect()
    await trio.testing.wait_all_tasks_blocked()
    assert (provider.account_calls, provider.check_calls) == (0, 0)
    assert entry.signed_out == ""
    assert "protectedResources" not in _agents(sessions)[0]


@pytest.mark.parametrize("managed", [AccountRecording()], indirect=True)
async def test_a_runtime_still_signed_in_changes_nothing(managed: Any) -> None:
    provider, sessions, entry = managed
    seq = sessions.store.server_seq
    sessions.suspect()
    await trio.testing.wait_all_tasks_blocked()
    assert (provider.account_calls, provider.check_calls) == (1, 0)
    assert entry.signed_out == "" and sessions.store.server_seq == seq


@pytest.mark.parametrize("managed", [AccountRecording()], indirect=True)
async def test_a_lost_sign_in_is_announced_and_each_line_hears_it_in_its_shape(
    managed: Any,
) -> None:
    provider, sessions, entry = managed
    peers = {line: sessions.peer(line) for line in (V10, V09, V07)}
    provider.signed_in = False
    sessions.suspect()
    await trio.testing.wait_all_tasks_blocked()
    # The check() sentence says what to do, as the startup warning would.
    assert entry.signed_out == HINT
    [agent] = _agents(sessions)
    resource = {
        "resource": auth.GITHUB_RESOURCE,
        "resource_name": "Recording",
        "authorization_servers": ["https://github.com/login/oauth"],
        "scopes_supported": ["read:user", "user:email"],
        "required": True,
    }
    assert agent["protectedResources"] == [resource]
    expected = {
        "jsonrpc": "2.0",
        "method": "auth/required",
        "params": {"channel": ROOT, "resource": resource, "reason": "expired"},
    }
    assert frames(peers[V10]) == [expected]
    assert frames(peers[V09]) == [expected]
    wire_schema.v1_0().check("AuthRequiredParams", expected["params"])
    assert frames(peers[V07]) == []  # our 0.7.0 defines no auth/required
    # Known lost: later failures ask nothing and send nothing until a sign-in clears it.
    sessions.suspect()
    await trio.testing.wait_all_tasks_blocked()
    assert provider.account_calls == 1 and len(frames(peers[V10])) == 1


@pytest.mark.parametrize("managed", [AccountRecording()], indirect=True)
async def test_signed_out_but_working_without_a_sign_in_is_not_marked(managed: Any) -> None:
    """Copilot with its own model: no GitHub account, but check() passes."""
    provider, sessions, entry = managed
    provider.signed_in = False
    provider.check_signed_out = False
    sessions.suspect()
    await trio.testing.wait_all_tasks_blocked()
    assert (provider.account_calls, provider.check_calls) == (1, 1)
    assert entry.signed_out == ""


@pytest.mark.parametrize("managed", [AccountRecording()], indirect=True)
async def test_one_check_at_a_time_and_one_more_when_suspected_meanwhile(managed: Any) -> None:
    provider, sessions, entry = managed
    provider.hang = True
    for _ in range(5):
        sessions.suspect()
    await trio.testing.wait_all_tasks_blocked()
    assert provider.account_calls == 1  # the others wait for this one
    provider.signed_in = False  # lost while the first check was out: its answer is stale
    provider.hang = False
    provider.release.set()
    await trio.testing.wait_all_tasks_blocked()
    assert provider.account_calls == 2  # one more, not four
    assert entry.signed_out == HINT


@pytest.mark.parametrize("managed", [AccountRecording()], indirect=True)
async def test_a_check_that_fails_or_hangs_changes_nothing(
    managed: Any, autojump_clock: trio.testing.MockClock
) -> None:
    provider, sessions, entry = managed
    provider.signed_in = False
    provider.account_error = agentapi.AgentAPIError("could not read the sign-in state")
    sessions.suspect()
    await trio.testing.wait_all_tasks_blocked()
    assert provider.account_calls == 1 and entry.signed_out == ""
    provider.account_error = None
    provider.hang = True
    started = trio.current_time()
    sessions.suspect()
    await trio.sleep(sessions.timeouts.provider_read + 1)
    assert provider.account_calls == 2 and entry.signed_out == ""
    assert trio.current_time() - started >= sessions.timeouts.provider_read
    # The timed-out check is over: the next failure asks again.
    provider.hang = False
    sessions.suspect()
    await trio.testing.wait_all_tasks_blocked()
    assert provider.account_calls == 3 and entry.signed_out == HINT


@pytest.mark.parametrize("managed", [AccountRecording()], indirect=True)
async def test_a_sign_in_that_takes_too_long_names_the_timeout_to_raise(
    managed: Any, autojump_clock: trio.testing.MockClock
) -> None:
    provider, sessions, entry = managed
    entry.signed_out = HINT
    provider.hang = True
    started = trio.current_time()
    with pytest.raises(RpcError) as caught:
        await auth.SignIn(sessions.shell, sessions.providers).authenticate(
            sessions.peer(V10), {"resource": auth.GITHUB_RESOURCE, "token": "t0ken"}
        )
    assert trio.current_time() - started == pytest.approx(sessions.timeouts.sign_in)
    assert caught.value.code == E.AUTH_REQUIRED
    assert caught.value.message.endswith(
        "did not finish signing in within 60 s (timeouts.sign_in); try again"
    )
    assert entry.signed_out == HINT  # still signed out: nothing claimed otherwise
