"""ahp-bridge provider for any Agent Client Protocol agent (Claude Code, Codex, Gemini CLI, ...).

The bridge is the ACP *client*: it starts the agent command (``command``, ``env``) as a
subprocess and speaks ACP (JSON-RPC over stdio) to it with the official SDK
(``agent-client-protocol``: its schema types and its ``Connection``), on one asyncio thread
bridged to trio (``loop``). One process serves all conversations of a provider instance; each
conversation is one ACP session. Several agents run side by side as named instances
(``[providers.claude] kind = "acp"``), each its own AHP agent.

The mapping, both ways:

=============================  ==================================================================
ACP                            agentapi
=============================  ==================================================================
``initialize``                 sent once per process: protocol 1, client capabilities fs read and
                               write and terminal. ``agentInfo`` gives display_name;
                               ``loadSession`` gives Capabilities.history; ``promptCapabilities``
                               gate image and embedded-text attachments; ``authMethods`` become
                               the sign-in hint of SignedOut (auth required, -32000) and doctor's
                               report; ``auth_method`` calls ``authenticate`` with that id
``session/new``                Provider.open without conversation_id (cwd = workdir); its
                               ``sessionId`` is the conversation id; ``modes`` -> EXECUTION;
                               ``configOptions`` (category model) / ``models`` -> Provider.models
                               and MODEL_SELECTION
``session/load``               Provider.open with conversation_id (needs ``loadSession``); the
                               replayed updates become Conversation.history (durable sessions)
                               and HistoryReader.read_history (complete after one round trip:
                               ``_ahp_bridge/sync``); a session this process holds is
                               reattached instead;
                               an unknown id (-32002, or words such as "not found" or "invalid
                               session identifier") -> ConversationNotFound
``session/list``               Importer.previous (``sessionCapabilities.list`` and loadSession
                               give Capabilities.import); Importer.in_use knows of no other user
``session/close``              where offered: the model probe's scratch session, and sessions
                               past the 64 kept reattachable
``session/prompt``             Conversation.send / run_command ("/name args"): TURN working and
                               the USER item, then the prompt's text, files as
                               ``resource_link``, images as ``image``, text uploads as embedded
                               ``resource``. Its result: stopReason end_turn, max_tokens,
                               max_turn_requests -> TURN completed (the last two with a notice),
                               cancelled -> cancelled, refusal -> failed; a JSON-RPC error ->
                               failed with its message; ``usage`` -> TOKENS. A prompt during a
                               turn -> Busy
``agent_message_chunk``        DELTA assistant (item id from messageId, else one per text run)
``agent_thought_chunk``        DELTA reasoning
``user_message_chunk``         USER items, only while a session/load replays
``tool_call`` / ``_update``    ITEM tool, merged per toolCallId: kind -> name, title, status
                               (pending, in_progress -> running, completed, failed), rawInput and
                               locations (path:line) -> input, content text / rawOutput ->
                               output, ``diff`` content -> file_edits (and, once the call
                               completed, Conversation.diff: before = the first oldText, after =
                               the latest newText per path), ``terminal`` content -> the
                               bridge's own terminal: tail while running, output and exit_code
                               when ended. Calls still open when the turn ends -> failed
``plan``                       TODOS (pending, in_progress, completed -> done); the unstable
                               ``plan_update`` (item plans) and ``plan_removed`` too
``available_commands_update``  Conversation.commands (kind prompt, input hint)
``current_mode_update``        EXECUTION{mode}
``config_option_update``       MODEL_SELECTION (category model) / EXECUTION (category mode)
``session_info_update``        TITLE
``usage_update``               CONTEXT{used, limit}
``session/request_permission`` INTERACTION permission pending (options: allow_once ->
                               allow_once, reject_* -> reject; tool_call_id names the tool item,
                               created first when unseen); Conversation.respond(decision = an
                               option id) answers ``selected`` with that option (ANSWERED, or
                               REJECTED for a reject option); cancel, close and exit answer
                               ``cancelled`` (EXPIRED)
``session/cancel``             Conversation.cancel (and close of a running turn); the turn ends
                               with the agent's ``cancelled``
``session/set_mode``           the ``mode`` option, applied on every new and reopened session
``session/set_config_option``  Conversation.set_model, with the model config option; agents that
``session/set_model``          report only ``models`` get the unstable ``session/set_model``
``fs/read_text_file``          read inside the session's working directory (``workspace``)
``fs/write_text_file``         written inside it; ``..``, relative paths and symlinks out refused
``terminal/*``                 real subprocesses in the working directory (``terminals``), output
                               bounded, killed after ``terminal_timeout``
process exit                   EXIT (the running turn failed, pending permissions expired) for
                               every open conversation; the next open starts the agent again
malformed / unexpected         dropped with a JSON-RPC error, logged by kind, never by content
=============================  ==================================================================

Not offered (Unsupported, as Capabilities say): steer, subagents, set_title, custom agents;
nor the unstable elicitation/create (answered "method not found") or MCP servers for sessions.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .options import OPTION_KEYS, AcpOptions, OptionsError
from .provider import AcpProvider

__all__ = ["OPTION_KEYS", "AcpOptions", "AcpProvider", "OptionsError", "create_provider"]


def create_provider(options: Mapping[str, Any]) -> AcpProvider:
    """The entry point (group ``ahp_bridge.providers``, name ``acp``)."""
    return AcpProvider(AcpOptions.parse(options))
