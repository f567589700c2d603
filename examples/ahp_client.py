"""A small AHP client: connect, list the agents, create a session, stream a turn, approve a
tool call and answer a question. Standard library plus `websockets` (`pip install websockets`).

    python3 examples/ahp_client.py 'ws://127.0.0.1:8765/?tkn=TOKEN' "show me what you can do"
    python3 examples/ahp_client.py URL "hello" --provider copilot --deny --answer Go

What a client needs to know, in the order it meets it (AHP 1.0, one JSON-RPC message per
WebSocket text frame):

- Requests have an `id` and get an answer: `initialize` (the versions offered, a client id,
  channels to subscribe at once; `ahp-root://` holds the agents), `createSession` (a session
  URI the client chooses; the answer is `null`), `subscribe` (the channel's state as a
  snapshot).
- Everything that changes arrives as `action` notifications: `{channel, action, serverSeq}`,
  the same for every client, in the same order. A session is usable at `session/ready`; its
  chat URI comes with `session/defaultChatChanged` (or in the snapshot's `defaultChat`).
- A client changes state with the `dispatchAction` *notification* (no answer): `{channel,
  clientSeq, action}`. It sees its action come back as an `action` whose `origin` carries its
  client id and `clientSeq`, or, when refused, with `rejectionReason`.
- A turn: dispatch `chat/turnStarted` (a `turnId` the client chooses and a message) on the chat.
  The answer streams as `chat/responsePart` (a new markdown or reasoning part) then `chat/delta`
  and `chat/reasoning` (text for a part), tools as `chat/toolCallStart`/`Complete`; the turn
  ends with `chat/turnComplete`, `chat/turnCancelled` or `chat/error`.
- The agent waiting on the user shows on the session as `session/inputNeededSet`: kind
  `toolConfirmation` (approve or deny with `chat/toolCallConfirmed` and one of the tool call's
  `options`), kind `chatInput` (answer with `chat/inputCompleted`).
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import sys
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import websockets

ROOT = "ahp-root://"


class AhpError(Exception):
    """A JSON-RPC error answer, a refused action or a session that could not be created."""


@dataclass
class Event:
    """One thing that happened in a turn, as a client shows it.

    kind: "text" and "reasoning" (``text``), "tool" (``text`` is its title, ``done`` once it
    finished), "permission" (``options``: the choices), "question" (``text``, ``choices``), and
    the end: "complete", "cancelled" or "error" (``text``: the message).
    """

    kind: str
    text: str = ""
    done: bool = False
    options: list[dict[str, Any]] = field(default_factory=list)
    choices: list[str] = field(default_factory=list)
    raw: dict[str, Any] = field(default_factory=dict)


def now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


class Client:
    """One connection. Use `connect(url)`; every method is a coroutine."""

    def __init__(self, ws: Any, client_id: str) -> None:
        self.ws = ws
        self.client_id = client_id
        self._ids = itertools.count(1)
        self._seqs = itertools.count(1)
        self._answers: dict[int, asyncio.Future[Any]] = {}
        self._actions: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        self.snapshots: dict[str, dict[str, Any]] = {}

    async def _read(self) -> None:
        async for text in self.ws:
            message = json.loads(text)
            if "id" in message and message["id"] in self._answers:
                future = self._answers.pop(message["id"])
                if "error" in message:
                    error = message["error"]
                    future.set_exception(AhpError(f"{error['code']}: {error['message']}"))
                else:
                    future.set_result(message.get("result"))
            elif message.get("method") == "action":
                await self._actions.put(message["params"])

    async def request(self, method: str, params: dict[str, Any]) -> Any:
        """A JSON-RPC request; its result (an error answer raises AhpError)."""
        msg_id = next(self._ids)
        future = asyncio.get_running_loop().create_future()
        self._answers[msg_id] = future
        await self.ws.send(
            json.dumps({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params})
        )
        return await future

    async def dispatch(self, channel: str, action: dict[str, Any]) -> int:
        """`dispatchAction`, a notification: the host answers with the action itself."""
        seq = next(self._seqs)
        params = {"channel": channel, "clientSeq": seq, "action": action}
        await self.ws.send(
            json.dumps({"jsonrpc": "2.0", "method": "dispatchAction", "params": params})
        )
        return seq

    async def subscribe(self, channel: str) -> dict[str, Any]:
        state: dict[str, Any] = (await self.request("subscribe", {"channel": channel}))["snapshot"][
            "state"
        ]
        self.snapshots[channel] = state
        return state

    async def next_action(self) -> dict[str, Any]:
        """The next `action` envelope; one refusing an action of ours raises AhpError."""
        envelope = await self._actions.get()
        origin = envelope.get("origin") or {}
        if envelope.get("rejectionReason") is not None and origin.get("clientId") == self.client_id:
            raise AhpError(f"{envelope['action']['type']} refused: {envelope['rejectionReason']}")
        return envelope

    # -- the steps of a session ----------------------------------------------------------------

    async def initialize(self) -> dict[str, Any]:
        result: dict[str, Any] = await self.request(
            "initialize",
            {
                "channel": ROOT,
                "protocolVersions": ["1.0.0"],
                "clientId": self.client_id,
                "initialSubscriptions": [ROOT],
            },
        )
        for snapshot in result["snapshots"]:
            self.snapshots[snapshot["resource"]] = snapshot["state"]
        return result

    async def agents(self) -> list[dict[str, Any]]:
        """The agents (one per provider the bridge serves), each with its models."""
        agents: list[dict[str, Any]] = self.snapshots[ROOT]["agents"]
        return agents

    async def create_session(self, provider: str, workdir: str = "") -> str:
        """A new session of `provider`; its default chat's URI once the session is ready."""
        session = f"ahp-session:/{uuid.uuid4()}"
        params: dict[str, Any] = {"channel": session, "provider": provider}
        if workdir:
            params["workingDirectories"] = [Path(workdir).resolve().as_uri()]
        await self.request("createSession", params)  # answers null: the state says the rest
        state = await self.subscribe(session)
        ready, chat = state.get("lifecycle") == "ready", state.get("defaultChat", "")
        while not (ready and chat):
            envelope = await self.next_action()
            if envelope["channel"] != session:
                continue
            action = envelope["action"]
            if action["type"] == "session/ready":
                ready = True
            elif action["type"] == "session/defaultChatChanged":
                chat = action["defaultChat"]
            elif action["type"] == "session/creationFailed":
                raise AhpError(f"the session could not be created: {action['error']['message']}")
        await self.subscribe(chat)
        return str(chat)

    async def turn(self, chat: str, text: str) -> AsyncIterator[Event]:
        """Start a turn on `chat` and yield what happens until it ends."""
        turn_id = str(uuid.uuid4())
        message = {"text": text, "origin": {"kind": "user"}}
        await self.dispatch(
            chat,
            {"type": "chat/turnStarted", "turnId": turn_id, "startedAt": now(), "message": message},
        )
        kinds: dict[str, str] = {}  # part id -> "text" or "reasoning"
        tools: dict[str, str] = {}  # tool call id -> its title
        while True:
            action = (await self.next_action())["action"]
            kind = action["type"]
            if action.get("turnId", turn_id) != turn_id:
                continue
            if kind == "chat/responsePart" and action["part"]["kind"] in ("markdown", "reasoning"):
                part = action["part"]
                kinds[part["id"]] = "text" if part["kind"] == "markdown" else "reasoning"
                yield Event(kinds[part["id"]], part.get("content", ""), raw=action)
            elif kind in ("chat/delta", "chat/reasoning"):
                yield Event(kinds.get(action["partId"], "text"), action["content"], raw=action)
            elif kind == "chat/toolCallStart":
                tools[action["toolCallId"]] = action.get("displayName") or action["toolName"]
                yield Event("tool", tools[action["toolCallId"]], raw=action)
            elif kind == "chat/toolCallComplete":
                yield Event("tool", tools.get(action["toolCallId"], ""), done=True, raw=action)
            elif (
                kind == "session/inputNeededSet" and action["request"]["kind"] == "toolConfirmation"
            ):
                call = action["request"]["toolCall"]
                title = call.get("confirmationTitle") or call.get("displayName") or ""
                yield Event(
                    "permission", title, options=call.get("options", []), raw=action["request"]
                )
            elif kind == "session/inputNeededSet" and action["request"]["kind"] == "chatInput":
                question = action["request"]["request"]["questions"][0]
                choices = [o["id"] for o in question.get("options", [])]
                yield Event("question", question["message"], choices=choices, raw=action["request"])
            elif kind == "chat/turnComplete":
                yield Event("complete", raw=action)
                return
            elif kind == "chat/turnCancelled":
                yield Event("cancelled", raw=action)
                return
            elif kind == "chat/error":
                yield Event("error", action["part"]["error"]["message"], raw=action)
                return

    async def approve(self, event: Event, approved: bool = True) -> None:
        """Answer a "permission" event with its first approve (or deny) option."""
        request = event.raw
        call = request["toolCall"]
        wanted = "approve" if approved else "deny"
        option = next((o["id"] for o in event.options if o.get("kind") == wanted), None)
        action: dict[str, Any] = {
            "type": "chat/toolCallConfirmed",
            "turnId": request["turnId"],
            "toolCallId": call["toolCallId"],
            "approved": approved,
        }
        action.update({"confirmed": "user-action"} if approved else {"reason": "denied"})
        if option is not None:
            action["selectedOptionId"] = option
        await self.dispatch(request["chat"], action)

    async def answer(self, event: Event, value: str) -> None:
        """Answer a "question" event: one of its choices, or free text."""
        request = event.raw["request"]
        question = request["questions"][0]
        chosen = (
            {"kind": "selected", "value": value}
            if value in event.choices
            else {"kind": "text", "value": value}
        )
        answers = {question["id"]: {"state": "submitted", "value": chosen}}
        await self.dispatch(
            event.raw["chat"],
            {
                "type": "chat/inputCompleted",
                "requestId": request["id"],
                "response": "accept",
                "answers": answers,
            },
        )


@asynccontextmanager
async def connect(url: str, client_id: str = "") -> AsyncIterator[Client]:
    """An initialized client for the bridge at `url` (as `ahp-bridge` prints it)."""
    async with websockets.connect(url, max_size=None) as ws:
        client = Client(ws, client_id or f"example-{uuid.uuid4()}")
        reader = asyncio.create_task(client._read())
        try:
            await client.initialize()
            yield client
        finally:
            reader.cancel()


async def run(url: str, prompt: str, provider: str, approve: bool, answer: str) -> int:
    async with connect(url) as ahp:
        agents = await ahp.agents()
        print("agents:", ", ".join(a["provider"] for a in agents))
        chat = await ahp.create_session(provider or agents[0]["provider"])
        async for event in ahp.turn(chat, prompt):
            if event.kind == "text":
                print(event.text, end="", flush=True)
            elif event.kind == "tool":
                print(f"\n[tool] {event.text}: {'done' if event.done else 'running'}")
            elif event.kind == "permission":
                print(f"\n[permission] {event.text}: {'approved' if approve else 'denied'}")
                await ahp.approve(event, approve)
            elif event.kind == "question":
                reply = answer or (event.choices[0] if event.choices else "yes")
                print(f"\n[question] {event.text} -> {reply}")
                await ahp.answer(event, reply)
            elif event.kind in ("complete", "cancelled", "error"):
                print(f"\n[turn {event.kind}]{f': {event.text}' if event.text else ''}")
                return 0 if event.kind == "complete" else 1
    return 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Run one turn against an AHP host and print it.")
    parser.add_argument(
        "url", help="the URL `ahp-bridge` prints, with its token: ws://127.0.0.1:8765/?tkn=…"
    )
    parser.add_argument("prompt", help="the message to send")
    parser.add_argument("--provider", default="", help="the agent to use (default: the first)")
    parser.add_argument("--deny", action="store_true", help="deny tool calls instead of approving")
    parser.add_argument(
        "--answer", default="", help="the answer to questions (default: the first choice)"
    )
    args = parser.parse_args(argv)
    try:
        return asyncio.run(run(args.url, args.prompt, args.provider, not args.deny, args.answer))
    except websockets.exceptions.InvalidStatus as exc:
        if exc.response.status_code != 403:
            raise
        print(
            "ahp_client: the host refused the connection (HTTP 403): use the URL ahp-bridge "
            "printed, with its ?tkn= connection token",
            file=sys.stderr,
        )
        return 1
    except (AhpError, OSError, websockets.exceptions.WebSocketException) as exc:
        print(f"ahp_client: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    raise SystemExit(main())
