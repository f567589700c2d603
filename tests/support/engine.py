"""A sans-IO engine driven by function calls, and a scripted shell that answers its effects.

`Harness` builds an `Engine` with a fixed clock (`NOW_MS`) and counted ids (`id-1`, `id-2`,
...), feeds it inputs and carries out what it returns the way `host.shell.Shell` would, only
synchronously: a job's outcome is fed back once the effects of the input that asked for it are
all carried out (as a worker would report it later), in the order the jobs were handed out.

* `OpenConversation` -> `Opened("conv-1")` (then "conv-2", ...); `CallChat` and
  `CloseConversation` -> None. `fail(key, exc)` makes the next job of `key` (a job class, or the
  class of a `CallChat`'s call: `Send`, `SetModel`, ...) raise `exc`; `hold(key)` keeps its jobs
  in `held` until `finish(...)` answers one.
* `Serve` for `createSession` -> `engine.session_prepared(...)` with the settings resolved from
  the provider's models (what `host.features.creation` does), at once or, with
  `defer_creations`, when the test calls `prepare`; other served requests wait in `served` for
  the test to answer (`Answered`).
* `ArchiveTurns` keeps the evicted turns in `archive` (by chat and index), `ReadTurns` reads
  them back from it (what the catalog does).
* Timers wait in `timers` until `fire(key)`; host tool results go to `resolved`; closes to
  `closed`.

Everything the engine returned is kept in order (`effects`, `jobs`), so a test can assert
exactly what it decided.
"""

from __future__ import annotations

import itertools
from collections import deque
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import orjson

from ahp_bridge import agentapi
from ahp_bridge.engine.core import Engine, EngineConfig
from ahp_bridge.engine.effects import (
    CancelTimer,
    ClosePeer,
    Effect,
    Flush,
    Log,
    ResolveHostTool,
    Restore,
    Run,
    Serve,
    SetTimer,
)
from ahp_bridge.engine.inputs import Input, JobDone, ProviderEvents, Received, TimerFired
from ahp_bridge.engine.jobs import ArchiveTurns, CallChat, Job, OpenConversation, Opened, ReadTurns
from ahp_bridge.engine.peers import Peer
from ahp_bridge.engine.providers import ProviderInfo
from ahp_bridge.protocol.errors import RpcError
from ahp_bridge.protocol.uris import ROOT
from ahp_bridge.state.store import Store
from ahp_bridge.translate.session_config import Settings, resolve, settings_of

__all__ = [
    "NOW_ISO",
    "NOW_MS",
    "ROOT",
    "Harness",
    "config",
    "event",
    "fake_provider",
    "turn_event",
]

#: The engine's clock in every test (2025-01-01T00:00:00Z).
NOW_MS = 1_735_689_600_000
NOW_ISO = "2025-01-01T00:00:00.000Z"
WORKDIR = "/work/project"


def config(**overrides: Any) -> EngineConfig:
    """The harness's engine config (its working directory) with `overrides`."""
    return EngineConfig(**{"workdir": WORKDIR, **overrides})


def fake_provider(name: str = "fake", **capabilities: bool) -> ProviderInfo:
    """A provider with two models (the first with efforts) and the capabilities named."""
    caps = {"cancel": True, "titles": True, **capabilities}
    return ProviderInfo(
        name=name,
        display_name=name.capitalize(),
        capabilities=agentapi.Capabilities(**caps),
        models=[
            agentapi.Model(id="m1", name="Model One", efforts=["low", "high"]),
            agentapi.Model(id="m2", name="Model Two"),
        ],
    )


def event(kind: agentapi.EventKind, **payload: Any) -> agentapi.Event:
    return agentapi.Event(kind=kind, **payload)


def turn_event(state: agentapi.TurnState, **fields: Any) -> agentapi.Event:
    return agentapi.Event(kind=agentapi.EventKind.TURN, turn=agentapi.Turn(state=state, **fields))


@dataclass
class Pending:
    """A job the shell holds (`Harness.hold`) until the test finishes it."""

    job: Job
    ticket: int | None


@dataclass
class Harness:
    """One engine and its scripted shell (see the module docstring)."""

    providers: list[ProviderInfo] = field(default_factory=lambda: [fake_provider()])
    config: EngineConfig = field(default_factory=lambda: config())
    store: Store = field(default_factory=Store)
    #: `createSession` waits in `served` until `prepare` (else it is prepared at once).
    defer_creations: bool = False

    def __post_init__(self) -> None:
        ids = itertools.count(1)
        #: How often the engine read its clock.
        self.clock_reads = 0

        def now_ms() -> int:
            self.clock_reads += 1
            return NOW_MS

        self.engine = Engine(
            self.store,
            {p.name: p for p in self.providers},
            self.config,
            now_ms=now_ms,
            new_id=lambda: f"id-{next(ids)}",
        )
        self.effects: list[Effect] = []
        self.jobs: list[Job] = []
        self.timers: dict[tuple[Any, ...], float] = {}
        self.served: list[Serve] = []
        self.restores: list[Restore] = []
        self.resolved: list[ResolveHostTool] = []
        self.closed: list[ClosePeer] = []
        self.flushes: list[tuple[Peer, ...]] = []
        self.held: list[Pending] = []
        self._holding: set[type] = set()
        self._failures: dict[type, deque[BaseException]] = {}
        self._conversations = itertools.count(1)
        self._peers = itertools.count(1)
        self._request_ids = itertools.count(1)
        self._done: deque[Input] = deque()
        self._feeding = False
        #: Evicted turns by (chat, index), as the catalog keeps them.
        self.archive: dict[tuple[str, int], dict[str, Any]] = {}
        self.engine.start()
        self.execute(self.engine.take_effects())

    # -- feeding -------------------------------------------------------------------------------

    def feed(self, event: Input) -> list[Effect]:
        """Hand `event` to the engine, carry out its effects, then feed the outcomes of the jobs
        it handed out (and theirs, until nothing is left); returns `event`'s own effects."""
        effects = self.engine.handle(event)
        self.feed_all(effects)
        return effects

    def feed_all(self, effects: Iterable[Effect]) -> None:
        """Carry out effects decided outside `handle`, then the outcomes of their jobs."""
        self.execute(effects)
        if not self._feeding:
            self._feeding = True
            try:
                while self._done:
                    self.execute(self.engine.handle(self._done.popleft()))
            finally:
                self._feeding = False

    def execute(self, effects: Iterable[Effect]) -> None:
        creations: list[Serve] = []  # served once the rest is done, as the shell awaits them
        for effect in effects:
            self.effects.append(effect)
            match effect:
                case Flush(peers=peers):
                    self.flushes.append(peers)
                case ClosePeer():
                    self.closed.append(effect)
                case Serve(method="createSession") if not self.defer_creations:
                    creations.append(effect)
                case Serve():
                    self.served.append(effect)
                case Restore():
                    self.restores.append(effect)
                case Run(job=job, ticket=ticket):
                    self._run(job, ticket)
                case SetTimer(key=key, seconds=seconds):
                    self.timers[key] = seconds
                case CancelTimer(key=key):
                    self.timers.pop(key, None)
                case ResolveHostTool():
                    self.resolved.append(effect)
                case Log():
                    pass
        for request in creations:
            self.prepare(request)

    # -- jobs ----------------------------------------------------------------------------------

    @staticmethod
    def key(job: Job) -> type:
        """What `fail` and `hold` name a job by: a call's class, else the job's."""
        return type(job.call) if isinstance(job, CallChat) else type(job)

    def fail(self, key: type, error: BaseException) -> None:
        """The next job of `key` raises `error`."""
        self._failures.setdefault(key, deque()).append(error)

    def hold(self, *keys: type) -> None:
        """Jobs of these keys wait in `held` until `finish` answers them."""
        self._holding.update(keys)

    def release(self, *keys: type) -> None:
        self._holding.difference_update(keys)

    def finish(
        self, pending: Pending, result: Any = None, error: BaseException | None = None
    ) -> list[Effect]:
        """Answer a held job (its `JobDone`); returns the engine's effects for it."""
        self.held.remove(pending)
        if pending.ticket is None:
            return []
        if result is None and error is None and isinstance(pending.job, OpenConversation):
            result = self._opened()
        return self.feed(JobDone(pending.ticket, result, error))

    def _run(self, job: Job, ticket: int | None) -> None:
        self.jobs.append(job)
        if isinstance(job, ArchiveTurns):
            for offset, turn in enumerate(job.turns):
                self.archive[(job.chat, job.start + offset)] = turn
        key = self.key(job)
        if key in self._holding:
            self.held.append(Pending(job, ticket))
            return
        if ticket is None:
            return
        failures = self._failures.get(key)
        if failures:
            self._done.append(JobDone(ticket, error=failures.popleft()))
        elif isinstance(job, OpenConversation):
            self._done.append(JobDone(ticket, self._opened()))
        elif isinstance(job, ReadTurns):
            self._done.append(JobDone(ticket, self.read_archive(job)))
        else:
            self._done.append(JobDone(ticket))

    def read_archive(self, job: ReadTurns) -> list[dict[str, Any]]:
        wanted = range(job.start, job.stop)
        return [self.archive[(job.chat, i)] for i in wanted if (job.chat, i) in self.archive]

    def _opened(self) -> Opened:
        return Opened(f"conv-{next(self._conversations)}")

    def calls(self, chat: str | None = None) -> list[Any]:
        """The calls handed out on chats' conversations (of `chat` only, when named)."""
        return [
            j.call
            for j in self.jobs
            if isinstance(j, CallChat) and (chat is None or j.chat == chat)
        ]

    # -- the shell's half of createSession -----------------------------------------------------

    def prepare(self, request: Serve, error: RpcError | None = None) -> list[Effect]:
        """What `host.features.creation` does: resolve the settings (or refuse with `error`),
        then hand the session back; returns the engine's effects for it."""
        if request in self.served:
            self.served.remove(request)
        if error is not None:
            effects = self.engine.session_prepared(
                request.peer,
                request.request_id,
                workdir="",
                config_state=None,
                settings=Settings(),
                error=error,
            )
            self.execute(effects)
            return effects
        new = self.engine.new_session(request.peer, request.request_id)
        info = self.engine.sessions.providers[new.provider]
        schema, values = resolve(
            new.params.get("config") or {},
            models=info.models,
            capabilities=info.capabilities,
            agents=[],
            working_directory=f"file://{WORKDIR}",
        )
        effects = self.engine.session_prepared(
            request.peer,
            request.request_id,
            workdir=WORKDIR,
            config_state={"schema": schema, "values": values},
            settings=settings_of(values),
        )
        self.feed_all(effects)
        return effects

    # -- timers --------------------------------------------------------------------------------

    def fire(self, key: tuple[Any, ...]) -> list[Effect]:
        """The timer `key` (set, not cancelled) fires."""
        del self.timers[key]
        return self.feed(TimerFired(key))

    # -- peers and frames ----------------------------------------------------------------------

    def peer(self) -> Peer:
        return self.engine.open_peer(next(self._peers))

    def send_raw(self, peer: Peer, text: str | None) -> list[Effect]:
        return self.feed(Received(peer, text))

    def send(
        self,
        peer: Peer,
        method: str,
        params: Any = None,
        *,
        id: int | str | None = None,
        notify: bool = False,
    ) -> list[Effect]:
        """A JSON-RPC request (with `id`, or the next number) or, with `notify`, a notification."""
        frame: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            frame["params"] = params
        if not notify:
            frame["id"] = id if id is not None else next(self._request_ids)
        return self.send_raw(peer, orjson.dumps(frame).decode())

    def request(
        self, peer: Peer, method: str, params: Mapping[str, Any] | None = None
    ) -> dict[str, Any]:
        """Send a request and return its answer frame (the other frames stay in the outbox)."""
        request_id = f"r{next(self._request_ids)}"
        self.send(peer, method, {"channel": ROOT, **(params or {})}, id=request_id)
        answers = [
            (raw, frame)
            for raw in peer.outbox
            if (frame := orjson.loads(raw)).get("id") == request_id and "method" not in frame
        ]
        assert len(answers) == 1, answers
        peer.outbox.remove(answers[0][0])
        answer: dict[str, Any] = answers[0][1]
        return answer

    def result(self, peer: Peer, method: str, params: Mapping[str, Any] | None = None) -> Any:
        answer = self.request(peer, method, params)
        assert "error" not in answer, answer
        return answer["result"]

    def error(
        self, peer: Peer, method: str, params: Mapping[str, Any] | None = None
    ) -> dict[str, Any]:
        answer = self.request(peer, method, params)
        assert "error" in answer, answer
        error: dict[str, Any] = answer["error"]
        return error

    @staticmethod
    def frames(peer: Peer, *, keep: bool = False) -> list[dict[str, Any]]:
        """The peer's outbox, parsed (and drained unless `keep`)."""
        out = [orjson.loads(f) for f in peer.outbox]
        if not keep:
            peer.outbox.clear()
        return out

    @classmethod
    def envelopes(cls, peer: Peer, channel: str | None = None) -> list[dict[str, Any]]:
        """The action envelopes in the peer's outbox (drained), of `channel` when named."""
        return [
            f["params"]
            for f in cls.frames(peer)
            if f.get("method") == "action"
            and (channel is None or f["params"]["channel"] == channel)
        ]

    @classmethod
    def actions(cls, peer: Peer, channel: str | None = None) -> list[dict[str, Any]]:
        return [e["action"] for e in cls.envelopes(peer, channel)]

    # -- the usual steps -----------------------------------------------------------------------

    def connect(
        self, client_id: str = "c1", version: str = "1.0.0", *, subscriptions: Iterable[str] = ()
    ) -> Peer:
        """A peer that initialized with `version` (its outbox drained)."""
        peer = self.peer()
        params = {
            "protocolVersions": [version],
            "clientId": client_id,
            "initialSubscriptions": list(subscriptions),
        }
        self.result(peer, "initialize", params)
        peer.outbox.clear()
        return peer

    def subscribe(self, peer: Peer, channel: str) -> dict[str, Any]:
        snapshot: dict[str, Any] = self.result(peer, "subscribe", {"channel": channel})["snapshot"]
        return snapshot

    def create_session(self, peer: Peer, uri: str = "ahp-session:/s1", **params: Any) -> str:
        """A session made ready by the scripted shell; returns its default chat's URI."""
        self.result(peer, "createSession", {"channel": uri, "provider": "fake", **params})
        return str(self.store.state(uri)["defaultChat"])

    def dispatch(
        self, peer: Peer, channel: str, action: Mapping[str, Any], client_seq: int = 1
    ) -> list[Effect]:
        params = {"channel": channel, "clientSeq": client_seq, "action": dict(action)}
        return self.send(peer, "dispatchAction", params, notify=True)

    def start_turn(
        self, peer: Peer, chat: str, turn_id: str = "t1", text: str = "hello", seq: int = 1
    ) -> list[Effect]:
        action = {
            "type": "chat/turnStarted",
            "turnId": turn_id,
            "startedAt": NOW_ISO,
            "message": {"text": text, "origin": {"kind": "user"}},
        }
        return self.dispatch(peer, chat, action, seq)

    def provider(self, chat: str, *events: agentapi.Event) -> list[Effect]:
        return self.feed(ProviderEvents(chat, list(events)))
