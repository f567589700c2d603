"""host/auth.py `SignInWatch`: noticing a runtime that lost its sign-in while the bridge runs.

Small recording providers stand in for runtimes here (the real path, a fake runtime whose
sign-in expires mid-turn over real WebSockets, is tests/e2e/test_sign_in.py): they count
`account()` and `check()` calls and answer what each case needs, and the peers are recording
stand-ins of connections with a real `Wire` of each line.
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
from ahp_bridge.host.runtime import auth
from ahp_bridge.host.hub import Hub
from ahp_bridge.host.sessions import SessionManager
from ahp_bridge.protocol import errors as E
from ahp_bridge.protocol.errors import RpcError
from ahp_bridge.protocol.lens import WIRES, Wire
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


class Peer:
    """A connection as the watch sees one: its wire line and what it was sent."""

    def __init__(self, wire: Wire) -> None:
        self.wire = wire
        self.frames: list[dict[str, Any]] = []

    def send(self, frame: str) -> None:
        self.frames.append(orjson.loads(frame))


@pytest.fixture
async def managed(request: pytest.FixtureRequest) -> AsyncIterator[Any]:
    """(provider, session manager, its entry), running."""
    provider = request.param
    sessions = SessionManager(
        Hub(Store()), provider_names=["rec"], provider_instances={"rec": provider}
    )
    async with sessions.running():
        yield provider, sessions, sessions.providers["rec"]


def _agents(sessions: SessionManager) -> list[dict[str, Any]]:
    agents: list[dict[str, Any]] = sessions.hub.store.state(ROOT)["agents"]
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
        sessions.sign_in_watch.suspect(entry)
    await trio.testing.wait_all_tasks_blocked()
    assert (provider.account_calls, provider.check_calls) == (0, 0)
    assert entry.signed_out == ""
    assert "protectedResources" not in _agents(sessions)[0]


@pytest.mark.parametrize("managed", [AccountRecording()], indirect=True)
async def test_a_runtime_still_signed_in_changes_nothing(managed: Any) -> None:
    provider, sessions, entry = managed
    seq = sessions.hub.store.server_seq
    sessions.sign_in_watch.suspect(entry)
    await trio.testing.wait_all_tasks_blocked()
    assert (provider.account_calls, provider.check_calls) == (1, 0)
    assert entry.signed_out == "" and sessions.hub.store.server_seq == seq


@pytest.mark.parametrize("managed", [AccountRecording()], indirect=True)
async def test_a_lost_sign_in_is_announced_and_each_line_hears_it_in_its_shape(
    managed: Any,
) -> None:
    provider, sessions, entry = managed
    peers = {line: Peer(WIRES[line]) for line in (V10, V09, V07)}
    sessions.sign_in_watch.peers = set(peers.values())
    provider.signed_in = False
    sessions.sign_in_watch.suspect(entry)
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
    assert peers[V10].frames == [expected]
    assert peers[V09].frames == [expected]
    wire_schema.v1_0().check("AuthRequiredParams", expected["params"])
    assert peers[V07].frames == []  # our 0.7.0 defines no auth/required
    # Known lost: later failures ask nothing and send nothing until a sign-in clears it.
    sessions.sign_in_watch.suspect(entry)
    await trio.testing.wait_all_tasks_blocked()
    assert provider.account_calls == 1 and len(peers[V10].frames) == 1


@pytest.mark.parametrize("managed", [AccountRecording()], indirect=True)
async def test_signed_out_but_working_without_a_sign_in_is_not_marked(managed: Any) -> None:
    """Copilot with its own model: no GitHub account, but check() passes."""
    provider, sessions, entry = managed
    provider.signed_in = False
    provider.check_signed_out = False
    sessions.sign_in_watch.suspect(entry)
    await trio.testing.wait_all_tasks_blocked()
    assert (provider.account_calls, provider.check_calls) == (1, 1)
    assert entry.signed_out == ""


@pytest.mark.parametrize("managed", [AccountRecording()], indirect=True)
async def test_one_check_at_a_time_and_one_more_when_suspected_meanwhile(managed: Any) -> None:
    provider, sessions, entry = managed
    provider.hang = True
    for _ in range(5):
        sessions.sign_in_watch.suspect(entry)
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
    sessions.sign_in_watch.suspect(entry)
    await trio.testing.wait_all_tasks_blocked()
    assert provider.account_calls == 1 and entry.signed_out == ""
    provider.account_error = None
    provider.hang = True
    started = trio.current_time()
    sessions.sign_in_watch.suspect(entry)
    await trio.sleep(sessions.timeouts.provider_read + 1)
    assert provider.account_calls == 2 and entry.signed_out == ""
    assert trio.current_time() - started >= sessions.timeouts.provider_read
    # The timed-out check is over: the next failure asks again.
    provider.hang = False
    sessions.sign_in_watch.suspect(entry)
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
        await auth.SignIn(sessions).authenticate(
            Peer(Wire()), {"resource": auth.GITHUB_RESOURCE, "token": "t0ken"}
        )
    assert trio.current_time() - started == pytest.approx(sessions.timeouts.sign_in)
    assert caught.value.code == E.AUTH_REQUIRED
    assert caught.value.message.endswith(
        "did not finish signing in within 60 s (timeouts.sign_in); try again"
    )
    assert entry.signed_out == HINT  # still signed out: nothing claimed otherwise
