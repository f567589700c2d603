"""The most memory clients can make the host hold, with the default limits: RSS before and after.

Run: python bench/abuse.py [--clients 1,100] [--sessions-per-client N]

The bridge (`ahp-bridge serve`, the fake provider playing the conformance script, default
`[limits]`) runs in its own process. Each abusive client (its own client id, AHP 1.0) tries
the worst each per-factor limit allows, and counts what was accepted and what refused (the
byte ledger, `limits.max_client_bytes` and `limits.max_host_bytes`, refuses the product):

* `limits.max_sessions_per_client` sessions (or `--sessions-per-client`), each with
  `limits.max_chats_per_session` chats, a title of `limits.max_title_bytes`, an active client
  whose tool list makes the action `limits.max_action_bytes`, and `limits.max_annotations`
  annotations and entries of that size;
* in every chat, a turn that waits for a permission (so it stays open) whose message is
  `max_action_bytes`, `limits.max_queued_messages` queued messages and a draft of that size.

A client stops making sessions at the first refused createSession. Then the bridge's RSS
(/proc) is read again, after the host has gone quiet. Printed: RSS before and after, the client
text the host accepted to keep (each accepted action's canonical JSON), what was refused and
why, and the bounds of docs/limits.md the figures must stay under (64 MiB for one client id,
1 GiB for the host). `--clients 100` (one session each) tries ~1.4 GiB of text: the host bound
stops it. Figures only; nothing is asserted about speed or size.
"""

from __future__ import annotations

import argparse
import tempfile
import uuid
from pathlib import Path
from typing import Any

import orjson
import trio
from _common import (
    STEP_TIMEOUT,
    BenchClient,
    bridge_argv,
    child_process,
    clients,
    machine_note,
    ready_session,
    table,
    write_config,
)
from ahp_bridge_fake import CONFORMANCE_SCRIPT

from ahp_bridge.state.limits import Limits

LIMITS = Limits()
V1 = ("1.0.0", "0.9.0")
MIB = 1024 * 1024


def rss_bytes(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    return 0


def padded(make: Any, size: int) -> dict[str, Any]:
    """`make(padding)` with padding chosen so the action is exactly `size` bytes of JSON."""
    base = len(orjson.dumps(make("")))
    action: dict[str, Any] = make("x" * (size - base))
    assert len(orjson.dumps(action)) == size
    return action


def user(text: str, pad: str | None = None) -> dict[str, Any]:
    message: dict[str, Any] = {"text": text, "origin": {"kind": "user"}}
    if pad is not None:
        message["_meta"] = {"pad": pad}
    return message


class Abuser:
    """One client id doing the worst it is allowed; counts what the host accepted."""

    def __init__(self, client: BenchClient) -> None:
        self.client = client
        self.kept = 0
        self.sessions = 0
        self.accepted = 0
        self.rejected: list[str] = []
        self.refused_requests: list[str] = []
        client.keep = False
        client.on_envelope = self._on_envelope
        self._sizes: dict[int, int] = {}

    def _on_envelope(self, env: dict[str, Any], _: int) -> None:
        origin = env.get("origin") or {}
        if origin.get("clientId") != self.client.client_id:
            return
        size = self._sizes.pop(origin.get("clientSeq"), 0)
        if env.get("rejectionReason") is not None:
            self.rejected.append(env["rejectionReason"])
        else:
            self.accepted += 1
            self.kept += size

    async def dispatch(self, channel: str, action: dict[str, Any]) -> None:
        frame = self.client.dispatch_frame(channel, action)
        seq = orjson.loads(frame)["params"]["clientSeq"]
        self._sizes[seq] = len(orjson.dumps(action))
        await self.client.ws.send_message(frame)

    async def session(self) -> bool:
        """One session filled as far as the host allows; False: the session was refused."""
        client, size = self.client, LIMITS.max_action_bytes
        try:
            session, default_chat = await ready_session(client)
        except RuntimeError as exc:
            self.refused_requests.append(str(exc))
            return False
        self.sessions += 1
        chats = [default_chat]
        for _ in range(LIMITS.max_chats_per_session - 1):
            chat = f"ahp-chat:/{uuid.uuid4()}"
            try:
                await client.request("createChat", {"channel": session, "chat": chat})
            except RuntimeError as exc:
                self.refused_requests.append(str(exc))
                break
            chats.append(chat)
        for chat in chats:  # wait until each is published (createChat answers before that)
            with trio.fail_after(STEP_TIMEOUT):
                while True:
                    try:
                        await client.request("subscribe", {"channel": chat})
                        break
                    except RuntimeError:
                        await trio.sleep(0.02)
        for channel in (session, session + "/annotations"):  # to see every echo
            await client.request("subscribe", {"channel": channel})
        await self.dispatch(
            session, {"type": "session/titleChanged", "title": "t" * LIMITS.max_title_bytes}
        )
        tool = {"name": "t", "description": ""}
        active = padded(
            lambda pad: {
                "type": "session/activeClientSet",
                "activeClient": {
                    "clientId": client.client_id,
                    "tools": [{**tool, "description": pad}],
                },
            },
            size,
        )
        await self.dispatch(session, active)
        annotations = session + "/annotations"
        for i in range(LIMITS.max_annotations // 2):  # an annotation and one entry each
            await self.dispatch(
                annotations,
                padded(
                    lambda pad, i=i: {
                        "type": "annotations/set",
                        "annotation": {
                            "id": f"a{i}",
                            "origin": {"session": session},
                            "resource": "file:///x",
                            "resolved": False,
                            "entries": [{"id": "e", "text": pad}],
                        },
                    },
                    size,
                ),
            )
        for chat in chats:
            turn = {
                "type": "chat/turnStarted",
                "turnId": str(uuid.uuid4()),
                "startedAt": "2026-01-01T00:00:00.000Z",
            }
            await self.dispatch(
                chat,
                padded(
                    lambda pad, turn=turn: {
                        **turn,
                        "message": user("conformance: permission", pad),
                    },
                    size,
                ),
            )
            for q in range(LIMITS.max_queued_messages):
                queued = {"type": "chat/pendingMessageSet", "kind": "queued", "id": f"q{q}"}
                await self.dispatch(
                    chat,
                    padded(lambda pad, q=queued: {**q, "message": user("later", pad)}, size),
                )
            await self.dispatch(
                chat, padded(lambda pad: {"type": "chat/draftChanged", "draft": user(pad)}, size)
            )
        assert await client.request("ping", {"channel": "ahp-root://"}) is None
        with trio.fail_after(STEP_TIMEOUT):  # echoes of what the chats' runtimes planned
            while self._sizes:
                await trio.sleep(0.02)
        return True


async def quiet_rss(pid: int) -> int:
    """RSS once it has stopped moving (the host has applied everything)."""
    last = rss_bytes(pid)
    for _ in range(40):
        await trio.sleep(0.25)
        now = rss_bytes(pid)
        if abs(now - last) < MIB:
            return now
        last = now
    return last


async def run(n_clients: int, sessions_each: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        config = write_config(
            Path(tmp), fake={"script": str(CONFORMANCE_SCRIPT), "time_scale": 0.0}
        )
        async with child_process(bridge_argv(config), "ahp-bridge listening") as bridge:
            async with clients(bridge.url, 1, "idle") as (idle,):
                await idle.initialize(versions=V1)
                before = await quiet_rss(bridge.pid)
            async with clients(bridge.url, n_clients, "abuser") as opened:
                abusers = [Abuser(c) for c in opened]
                for abuser in abusers:
                    await abuser.client.initialize(versions=V1)

                async def one(abuser: Abuser) -> None:
                    for _ in range(sessions_each):
                        if not await abuser.session():
                            break

                async with trio.open_nursery() as nursery:
                    for abuser in abusers:
                        nursery.start_soon(one, abuser)
                after = await quiet_rss(bridge.pid)
                rejected = [r for a in abusers for r in a.rejected + a.refused_requests]
                return {
                    "clients": n_clients,
                    "sessions": sum(a.sessions for a in abusers),
                    "most_kept": max(a.kept for a in abusers),
                    "accepted": sum(a.accepted for a in abusers),
                    "rejected": rejected,
                    "kept": sum(a.kept for a in abusers),
                    "before": before,
                    "after": after,
                }


def refusal_kinds(reasons: list[str]) -> str:
    """How many refusals named each config key."""
    keys: dict[str, int] = {}
    for reason in reasons:
        key = next((w.strip("():,") for w in reason.split() if w.startswith("(limits.")), "other")
        keys[key] = keys.get(key, 0) + 1
    return ", ".join(f"{key} {count:,}" for key, count in sorted(keys.items())) or "none"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--clients", default="1,100", help="comma-separated client counts")
    parser.add_argument(
        "--sessions-per-client",
        type=int,
        default=0,
        help="sessions each client tries (default: max_sessions_per_client for one client, "
        "1 each for more)",
    )
    args = parser.parse_args()
    print(machine_note())
    print(
        f"limits: max_action_bytes {LIMITS.max_action_bytes:,}, max_title_bytes "
        f"{LIMITS.max_title_bytes:,}, max_queued_messages {LIMITS.max_queued_messages}, "
        f"max_annotations {LIMITS.max_annotations}, max_sessions {LIMITS.max_sessions}, "
        f"max_sessions_per_client {LIMITS.max_sessions_per_client}, max_chats_per_session "
        f"{LIMITS.max_chats_per_session}, max_client_bytes {LIMITS.max_client_bytes:,}, "
        f"max_host_bytes {LIMITS.max_host_bytes:,}"
    )
    print("bounds (docs/limits.md): one client id 64 MiB, the host 1 GiB")
    rows = []
    for n in [int(x) for x in args.clients.split(",")]:
        each = args.sessions_per_client or (LIMITS.max_sessions_per_client if n == 1 else 1)
        result = trio.run(run, n, each)
        growth = result["after"] - result["before"]
        rows.append(
            [
                n,
                result["sessions"],
                result["accepted"],
                len(result["rejected"]),
                f"{result['most_kept'] / MIB:,.1f}",
                f"{result['kept'] / MIB:,.1f}",
                f"{result['before'] / MIB:,.0f}",
                f"{result['after'] / MIB:,.0f}",
                f"{growth / MIB:,.0f}",
                f"{growth / MIB / n:,.1f}",
            ]
        )
        print(f"{n} clients: refused by key: {refusal_kinds(result['rejected'])}")
    print(
        table(
            [
                "clients",
                "sessions made",
                "actions kept",
                "refused",
                "text kept, one client MiB",
                "text kept, host MiB",
                "RSS before MiB",
                "RSS after MiB",
                "growth MiB",
                "growth / client MiB",
            ],
            rows,
        )
    )


if __name__ == "__main__":
    main()
