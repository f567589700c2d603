"""What real ACP agents say and replay, read their way by the adapter (their own wire data).

Which answers to a reopen of an unknown session are "not found", and only those: a not-found
answer makes the host report ConversationNotFound and heal the chat, so an agent's other
failures must not read as one. And what a replay (session/load) gives back as the user's words.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from acp import schema as S
from acp.exceptions import RequestError
from ahp_bridge_acp.mapping import SessionMapper, fold_history
from ahp_bridge_acp.provider import _not_found

from ahp_bridge.agentapi import ItemKind

GEMINI_DETAILS = (
    'Invalid session identifier "ahp-no-such".\n'
    "  Searched for sessions in /home/u/.gemini/tmp/work/chats.\n"
    "  Use --list-sessions to see available sessions, then use --resume {number}, --resume"
    " {uuid}, or --resume latest."
)


@pytest.mark.parametrize(
    "error",
    [
        RequestError(-32002, "Resource not found", {"uri": "ahp-no-such"}),  # ACP's own code
        RequestError(-32603, "Internal error", {"details": "Session not found"}),
        RequestError(-32602, "no session ahp-no-such", None),
        # Gemini CLI 0.61: session/load's SessionError, wrapped by its SDK as an internal error.
        RequestError(-32603, "Internal error", {"details": GEMINI_DETAILS}),
        # ... and while the working directory has no session at all.
        RequestError(
            -32603, "Internal error", {"details": "No previous sessions found for this project."}
        ),
    ],
    ids=[
        "acp-32002",
        "not-found-words",
        "no-session-words",
        "gemini-invalid-identifier",
        "gemini-no-sessions",
    ],
)
def test_an_agents_unknown_session_answer_is_not_found(error: RequestError) -> None:
    assert _not_found(error)


@pytest.mark.parametrize(
    "error",
    [
        RequestError(-32603, "Internal error", {"details": "Failed to load session data"}),
        RequestError(-32603, "Internal error", {"details": "Invalid custom base URL: x"}),
        RequestError(-32000, "Authentication required.", None),
    ],
    ids=["load-failure", "other-invalid", "auth"],
)
def test_other_failures_are_not_not_found(error: RequestError) -> None:
    assert not _not_found(error)


GEMINI_PREAMBLE = (
    "<session_context>\nThis is the Gemini CLI. We are setting up the context for our chat.\n"
    "My operating system is: linux\n- **Workspace Directories:**\n  - /home/u/work\n"
    "</session_context>"
)


def replay(*updates: tuple[str, str]) -> list[tuple[ItemKind, str]]:
    """The history items a session/load replay of (``user``|``agent``, text) chunks gives."""
    m = SessionMapper(lambda: datetime(2026, 1, 1, tzinfo=UTC), lambda _: None, text_limit=4096)
    m.replaying = True
    events = []
    for who, text in updates:
        block = S.TextContentBlock(type="text", text=text)
        if who == "user":
            update: Any = S.UserMessageChunk(session_update="user_message_chunk", content=block)
        else:
            update = S.AgentMessageChunk(session_update="agent_message_chunk", content=block)
        events += m.update(update)
    return [(i.kind, i.text) for i in fold_history(events)]


def test_gemini_clis_replay_is_what_the_user_and_the_model_wrote() -> None:
    """Gemini CLI 0.61's replay of a turn that edited a file, as it sends it."""
    assert replay(
        ("user", GEMINI_PREAMBLE),
        ("user", "fix the <session_context> tag in README"),
        ("agent", "Let me fix it.[Function Call: write_file]"),
        ("user", "[Function Response: write_file]"),
        ("agent", "Fixed."),
        ("user", "and again"),
        ("agent", "[Function Call: replace][Function Call: run_shell_command]"),
        ("user", "[Function Response: replace][Function Response: run_shell_command]"),
        ("agent", "Done."),
    ) == [
        (ItemKind.USER, "fix the <session_context> tag in README"),
        (ItemKind.ASSISTANT, "Let me fix it."),
        (ItemKind.ASSISTANT, "Fixed."),
        (ItemKind.USER, "and again"),
        (ItemKind.ASSISTANT, "Done."),
    ]


def test_the_same_words_the_user_wrote_are_kept() -> None:
    texts = [
        "explain <session_context>x</session_context> please",
        "what does [Function Response: x] mean in a log?",
    ]
    updates = [step for t in texts for step in (("user", t), ("agent", "ok"))]
    assert replay(*updates) == [
        (ItemKind.USER, texts[0]),
        (ItemKind.ASSISTANT, "ok"),
        (ItemKind.USER, texts[1]),
        (ItemKind.ASSISTANT, "ok"),
    ]
