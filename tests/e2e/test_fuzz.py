"""Property-based robustness: fuzzed frames and fuzzed actions against a real bridge process.

The bridge is the real CLI (`python -m ahp_bridge.cli serve`, the fake provider) in its own
process on 127.0.0.1, started once for the module; every example talks to it over a fresh
WebSocket. Frames come from hypothesis (garbage text and bytes, JSON of any shape, JSON-RPC
requests to every method with params drawn from the version's schema, deep nesting, frames over
`max_frame_bytes`); actions from hypothesis-jsonschema over the client-dispatchable action defs
of AHP 0.7.0 (`proto/ahp/0.7.0`) and 1.0.0 (`proto/ahp/1.0.0`), valid ones and ones with a field
swapped for arbitrary JSON. Each example asserts the invariants:

* every request is answered (a result or an error with its id), or the connection is closed
  with a proper close code (1009 for a frame over the bound) — never silence;
* every dispatched action is applied or rejected with a reason (an echo to its sender);
* a second client, of the other version, reduces what it is sent to the state a fresh
  snapshot shows (and every frame it gets is valid in its version's schema, strictly);
* the host still serves a new connection afterwards.

Bounded for CI: a fixed number of examples per test (well under a minute for the module on the
2-core machine). Outcome counts are printed (`pytest -s`) for the robustness figures.
"""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import uuid
from collections import Counter
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

import hypothesis.strategies as st
import orjson
import pytest
import trio
from ahp_bridge_fake import CONFORMANCE_SCRIPT
from hypothesis import HealthCheck, given, settings
from trio_websocket import ConnectionClosed

from ahp_bridge.protocol.actions import CLIENT_DISPATCHABLE
from ahp_bridge.protocol.actions_v1 import CLIENT_DISPATCHABLE_1_0
from ahp_bridge.protocol.uris import ANNOTATIONS_SUFFIX
from tests.e2e.test_host_core import comparable
from tests.support import schema_strategies
from tests.support.ahp_client import AhpClient, connect, open_client

REPO = Path(__file__).resolve().parents[2]
ROOT = "ahp-root://"
V07 = ("0.7.0",)
V1 = ("1.0.0", "0.9.0")
MAX_FRAME = 64 * 1024
#: Close codes a fuzzed connection may legitimately end with.
PROPER_CLOSES = {1000, 1002, 1008, 1009}
#: Examples per test (each one or more connections to the bridge; frame examples are cheap,
#: action examples wait for the host to go quiet and take fresh snapshots). Raise them with
#: AHP_FUZZ_EXAMPLES=N for a longer run.
EXAMPLES = int(os.environ.get("AHP_FUZZ_EXAMPLES", "20"))
OUTCOMES: dict[str, Counter[str]] = {}

#: The health checks suppressed are about generation cost, not about what is found: the
#: schema-derived strategies (hypothesis-jsonschema) reject some drawn values internally
#: (patterns, `not`, unique items), and on some seeds that trips `filter_too_much` before the
#: first example runs.
FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=None,
    database=None,
    suppress_health_check=[
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
        HealthCheck.filter_too_much,
    ],
    print_blob=True,
)


# -- the bridge under test ---------------------------------------------------------------------


class Target:
    def __init__(self, url: str) -> None:
        self.url = url
        self.session = ""
        self.chat = ""

    @property
    def annotations(self) -> str:
        return self.session + ANNOTATIONS_SUFFIX


@contextmanager
def bridge_process(base: Path, *, log: Path | None = None) -> Iterator[str]:
    """The real CLI (`serve`, the fake provider) in its own process on 127.0.0.1, its files
    under `base`; yields its URL. Its log (JSON lines, errors only) goes to `log`, or nowhere."""
    config = base / "bridge.toml"
    config.write_text(
        "\n".join(
            [
                "[server]",
                'host = "127.0.0.1"',
                "port = 0",
                f"max_frame_bytes = {MAX_FRAME}",
                "[bridge]",
                'providers = ["fake"]',
                f"data_dir = {json.dumps(str(base / 'data'))}",
                f"workdir = {json.dumps(str(base))}",
                "[providers.fake]",
                f"script = {json.dumps(str(CONFORMANCE_SCRIPT))}",
                "time_scale = 0.0",
            ]
        )
        + "\n"
    )
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("AHP_BRIDGE__") and k != "PYTHONTRACEMALLOC"
    }
    # This checkout's code, not whichever copy the environment has installed.
    env["PYTHONPATH"] = os.pathsep.join(str(REPO / d) for d in ("src", "adapters", "."))
    argv = [sys.executable, "-m", "ahp_bridge.cli", "serve", "--config", str(config)]
    with ExitStack() as stack:
        stderr = stack.enter_context(log.open("wb")) if log is not None else subprocess.DEVNULL
        proc = subprocess.Popen(
            [*argv, "--log-level", "error", "--log-format", "json"],
            stdout=subprocess.PIPE,
            stderr=stderr,
            stdin=subprocess.DEVNULL,
            env=env,
        )
        try:
            assert proc.stdout is not None
            ready, _, _ = select.select([proc.stdout], [], [], 30)
            assert ready, "the bridge did not start listening within 30 s"
            line = proc.stdout.readline().decode().strip()
            assert line.startswith("ahp-bridge listening on "), line
            yield line.rsplit(" ", 1)[1]  # as printed: with its connection token
            assert proc.poll() is None, "the bridge died during the fuzzing"
        finally:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
                try:
                    proc.wait(20)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
            if proc.stdout is not None:
                proc.stdout.close()


@pytest.fixture(scope="module")
def target(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Target]:
    """One real bridge process for the module."""
    try:
        with bridge_process(tmp_path_factory.mktemp("fuzz")) as url:
            yield Target(url)
    finally:
        for name, counts in OUTCOMES.items():
            print(f"\nfuzz {name}: {sum(counts.values())} total, {dict(sorted(counts.items()))}")


async def new_session(client: AhpClient, found: Target) -> None:
    found.session = f"ahp-session:/{uuid.uuid4()}"
    await client.request("createSession", {"channel": found.session})
    await client.subscribe(found.session)
    await client.wait_for(lambda: client.states[found.session].get("lifecycle") == "ready")
    found.chat = client.states[found.session]["defaultChat"]


async def still_serving(url: str) -> None:
    """A new connection is answered: the host survived whatever came before."""
    async with trio.open_nursery() as nursery:
        client = await open_client(nursery, url, f"probe-{uuid.uuid4()}", versions=V1)
        await client.initialize([ROOT])
        assert await client.request("ping", {"channel": ROOT}) is None
        await client.close()


# -- strategies --------------------------------------------------------------------------------


def schema_defs(version: str) -> dict[str, Any]:
    """The version's `$defs`, their descriptions dropped (annotations, which draw nothing, but
    long: canonicalising a def's schema costs about twice as much with them)."""
    schema = json.loads((REPO / "proto" / "ahp" / version / "ahp.schema.json").read_text())
    return _lean(schema["$defs"])  # type: ignore[no-any-return]


def _lean(node: Any) -> Any:
    if isinstance(node, dict):
        return {
            k: _lean(v)
            for k, v in node.items()
            if not (k == "description" and isinstance(v, str))  # not a property named so
        }
    if isinstance(node, list):
        return [_lean(v) for v in node]
    return node


def _action_defs(defs: dict[str, Any], dispatchable: frozenset[str]) -> dict[str, str]:
    out = {}
    for name, node in defs.items():
        const = ((node.get("properties") or {}).get("type") or {}).get("const")
        if name.endswith("Action") and const in dispatchable:
            out[const] = name
    return out


JSON_SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**53), max_value=2**53)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=40)
)
JSON_VALUES = st.recursive(
    JSON_SCALARS,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)


def _with_a_field_swapped(action: dict[str, Any]) -> st.SearchStrategy[dict[str, Any]]:
    keys = sorted(action)
    return st.tuples(st.sampled_from(keys), JSON_VALUES).map(lambda kv: {**action, kv[0]: kv[1]})


def actions_for(version: str) -> st.SearchStrategy[dict[str, Any]]:
    dispatchable = CLIENT_DISPATCHABLE if version == "0.7.0" else CLIENT_DISPATCHABLE_1_0
    defs = schema_defs(version)
    valid = st.one_of(
        [from_def(defs, name) for _, name in sorted(_action_defs(defs, dispatchable).items())]
    )
    return (valid | valid.flatmap(_with_a_field_swapped)).map(in_64_bits)


def in_64_bits(value: Any) -> Any:
    """Integers clamped to what one JSON encoder sends (frames past that are the frame
    fuzzer's business: the host answers them with a parse error)."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int):
        return max(-(2**63), min(2**63 - 1, value))
    if isinstance(value, list):
        return [in_64_bits(v) for v in value]
    if isinstance(value, dict):
        return {k: in_64_bits(v) for k, v in value.items()}
    return value


METHODS = [
    "initialize",
    "reconnect",
    "ping",
    "subscribe",
    "createSession",
    "disposeSession",
    "createChat",
    "disposeChat",
    "listSessions",
    "fetchTurns",
    "completions",
    "resolveSessionConfig",
    "authenticate",
    "resourceRead",
    "resourceList",
    "resourceResolve",
    "createResourceWatch",
    "createTerminal",
    "invokeChangesetOperation",
    "runAutomation",
    "moveChat",
    "dispatchAction",
    "unsubscribe",
]


#: Params defs hypothesis-jsonschema cannot draw from (they nest actions and states recursively).
_RECURSIVE_PARAMS = frozenset({"dispatchAction", "reconnect"})


def _params_strategy(defs: dict[str, Any], method: str) -> st.SearchStrategy[Any]:
    name = method[0].upper() + method[1:] + "Params"
    if name not in defs or method in _RECURSIVE_PARAMS:
        return JSON_VALUES
    return from_def(defs, name) | JSON_VALUES


def from_def(defs: dict[str, Any], name: str) -> st.SearchStrategy[Any]:
    """hypothesis-jsonschema's strategy for one def, its refs inlined (schema_strategies)."""
    return schema_strategies.strategy(defs, name)


def _dumps(value: Any) -> str:
    """Any value as JSON text (the stdlib, so integers past 64 bits reach the host too)."""
    return json.dumps(value, separators=(",", ":"))


class Oversize(int):
    """A frame of this many bytes, past `max_frame_bytes` (built when sent: a short repr)."""

    def frame(self) -> str:
        head = '{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":"'
        return head + "x" * (int(self) - len(head) - 3) + '"}}'


Frame = str | bytes | Oversize


def frames_for(version: str) -> st.SearchStrategy[Frame]:
    defs = schema_defs(version)
    ids = st.integers(min_value=1, max_value=50) | st.text(min_size=1, max_size=6)

    def request(method: str) -> st.SearchStrategy[str]:
        return st.tuples(ids, _params_strategy(defs, method)).map(
            lambda p: _dumps({"jsonrpc": "2.0", "id": p[0], "method": method, "params": p[1]})
        )

    requests = st.one_of([request(method) for method in METHODS])  # compiled once each
    notifications = st.tuples(st.sampled_from(METHODS), JSON_VALUES).map(
        lambda p: _dumps({"jsonrpc": "2.0", "method": p[0], "params": p[1]})
    )
    shaped = st.dictionaries(
        st.sampled_from(["jsonrpc", "id", "method", "params", "result", "error"]),
        JSON_VALUES,
        max_size=5,
    ).map(_dumps)
    deep = st.integers(min_value=60, max_value=3000).map(lambda n: "[" * n + "]" * n)
    oversize = st.integers(min_value=MAX_FRAME + 1, max_value=MAX_FRAME + 4096).map(Oversize)
    return st.one_of(
        requests,
        requests,
        notifications,
        shaped,
        JSON_VALUES.map(_dumps),
        st.text(max_size=200),
        st.binary(max_size=200),
        deep,
        oversize,
    )


def expected_ids(frame: Frame) -> list[Any]:
    """The id a frame obliges the host to answer, when it is a well-formed request."""
    if isinstance(frame, bytes | Oversize):
        return []
    try:
        message = orjson.loads(frame)
    except orjson.JSONDecodeError:
        return []
    if (
        isinstance(message, dict)
        and message.get("jsonrpc") == "2.0"
        and isinstance(message.get("method"), str)
        and isinstance(message.get("id"), int | str)
        and not isinstance(message.get("id"), bool)
        and len(frame.encode()) <= MAX_FRAME
    ):
        return [message["id"]]
    return []


# -- frames ------------------------------------------------------------------------------------


async def _frames_example(url: str, versions: tuple[str, ...], frames: list[Frame]) -> None:
    counts = OUTCOMES.setdefault(f"frames {versions[0]}", Counter())
    answered: Counter[Any] = Counter()
    owed: Counter[Any] = Counter()
    closed: int | None = None
    async with trio.open_nursery() as nursery:
        ws = await connect(nursery, url, "fuzz", max_message_size=16 * 1024 * 1024)
        init = {
            "jsonrpc": "2.0",
            "id": "init",
            "method": "initialize",
            "params": {"channel": ROOT, "protocolVersions": list(versions), "clientId": "fuzz"},
        }
        await ws.send_message(orjson.dumps(init).decode())
        try:
            for frame in frames:
                counts["frames sent"] += 1
                owed.update(expected_ids(frame))
                await ws.send_message(frame.frame() if isinstance(frame, Oversize) else frame)
            await ws.send_message('{"jsonrpc":"2.0","id":"final","method":"ping"}')
            with trio.fail_after(20):
                while True:
                    message = orjson.loads(await ws.get_message())
                    if "id" in message and ("result" in message or "error" in message):
                        if message["id"] == "final":
                            break
                        if message["id"] != "init":
                            answered[message["id"]] += 1
                            counts["error" if "error" in message else "result"] += 1
                    elif message.get("method") == "action":
                        counts["action envelope"] += 1
                    else:
                        counts["notification"] += 1
        except ConnectionClosed as exc:
            closed = exc.reason.code
            counts[f"closed {closed}"] += 1
        finally:
            with trio.move_on_after(2):
                await ws.aclose()
            await trio.aclose_forcefully(ws._stream)
    if closed is not None:
        # 1006: the host closed (1009) while the oversized frame was still arriving, and the
        # reset beat its close frame; a TCP race, allowed only after an oversized frame.
        oversized = any(isinstance(f, Oversize) for f in frames)
        assert closed in PROPER_CLOSES or (closed == 1006 and oversized), f"closed with {closed}"
    else:
        for msg_id, count in owed.items():
            assert answered[msg_id] >= count, f"request {msg_id!r} went unanswered"
    await still_serving(url)


@pytest.mark.parametrize("versions", [V07, V1], ids=["0.7", "1.0"])
def test_fuzzed_frames_are_answered_or_closed_properly(
    target: Target, versions: tuple[str, ...]
) -> None:
    strategy = st.lists(
        frames_for("0.7.0" if versions == V07 else "1.0.0"), min_size=4, max_size=16
    )

    @settings(FUZZ, max_examples=2 * EXAMPLES)
    @given(strategy)
    def run(frames: list[Frame]) -> None:
        trio.run(_frames_example, target.url, versions, frames)

    run()


# -- actions -----------------------------------------------------------------------------------


def _channel(target: Target, action: dict[str, Any]) -> str:
    kind = str(action.get("type", ""))
    if kind.startswith("chat/"):
        return target.chat
    if kind.startswith("annotations/"):
        return target.annotations
    if kind.startswith("root/"):
        return ROOT
    return target.session  # session/*, and a wrong channel for terminal/, changeset/, ...


async def _quiet(clients: list[AhpClient]) -> None:
    """Wait until the host has sent nothing for a while (turns the fuzz started have run)."""
    with trio.fail_after(20):
        while True:
            before = [len(c.frames) for c in clients]
            await trio.sleep(0.05)
            for client in clients:
                assert await client.request("ping", {"channel": ROOT}) is None
            if [len(c.frames) for c in clients] == [b + 1 for b in before]:
                return


async def _actions_example(
    url: str, versions: tuple[str, ...], actions: list[dict[str, Any]]
) -> None:
    """One example on a session of its own (so a failure reproduces from its actions alone),
    disposed of at the end."""
    counts = OUTCOMES.setdefault(f"actions {versions[0]}", Counter())
    other = V1 if versions == V07 else V07
    target = Target(url)
    async with trio.open_nursery() as nursery:
        client = await open_client(nursery, url, f"fuzz-{uuid.uuid4()}", versions=versions)
        watcher = await open_client(nursery, url, f"watch-{uuid.uuid4()}", versions=other)
        try:
            await client.initialize([ROOT])
            await new_session(client, target)
            channels = [target.session, target.chat, target.annotations]
            await watcher.initialize([ROOT])
            for peer in (client, watcher):
                for channel in channels:
                    await peer.subscribe(channel)
            seqs = [await client.dispatch(_channel(target, a), a) for a in actions]
            assert await client.request("ping", {"channel": ROOT}) is None
            for seq in seqs:
                with trio.fail_after(5):
                    echo = await client.echo_of(seq)
                reason = echo.get("rejectionReason")
                assert reason is None or (isinstance(reason, str) and reason), echo
                counts["rejected" if reason else "applied"] += 1
            assert client.errors == [], client.errors  # none went unanswered as an error
            await _quiet([client, watcher])
            for peer in (client, watcher):
                for channel in channels:
                    fresh = await peer.request("subscribe", {"channel": channel})
                    assert comparable(peer.states[channel]) == comparable(
                        fresh["snapshot"]["state"]
                    ), (peer.line, channel)
            await client.request("disposeSession", {"channel": target.session})
        finally:
            await client.close()
            await watcher.close()
    await still_serving(url)


@pytest.mark.parametrize("versions", [V07, V1], ids=["0.7", "1.0"])
def test_fuzzed_actions_are_applied_or_refused_and_every_client_agrees(
    target: Target, versions: tuple[str, ...]
) -> None:
    strategy = st.lists(
        actions_for("0.7.0" if versions == V07 else "1.0.0"), min_size=3, max_size=12
    )

    @FUZZ
    @given(strategy)
    def run(actions: list[dict[str, Any]]) -> None:
        trio.run(_actions_example, target.url, versions, actions)

    run()
