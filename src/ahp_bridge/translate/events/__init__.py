"""agentapi Events -> AHP actions, as a small sans-IO state machine per chat.

The mapping needs memory (agentapi turns carry no id, deltas name items not parts, tool calls
and interactions are upserts), so ``EventTranslator`` keeps a mirror of exactly what it emitted:
the active turn, the open text part, every tool call's AHP status and the pending interactions.
It never reads a clock and never invents ids itself: the caller injects ``new_id`` and
``now_ms``. The host applies the returned ``(channel, action)`` pairs in order through the store,
and feeds every accepted client action to ``observe_client_action`` so the mirror stays true.

Every Event kind of the contract, and where it goes:

================  ==========================================================================
Event kind        AHP
================  ==========================================================================
turn working      ``chat/turnStarted`` (host-originated, ``_meta`` marks it) unless the host
                  already started the turn for a client (``turn_started_by_client``). Its
                  message is the main agent's user item, whether it came just before or after
                  ``working``; the start waits for it until the turn's first action in the chat
                  (content, a request, its end), else goes out with an empty message of origin
                  ``agent``. ``active_turn_id`` is set meanwhile: the host should treat the
                  chat as busy from ``working`` on
turn completed    ``chat/turnComplete`` ; cancelled: ``chat/turnCancelled`` ; failed:
                  ``chat/error`` with an error part ``{errorType:"turnFailed"}``; duration =
                  now - start in ms; the
                  reason, model and completion receipt in ``_meta``. Then
                  ``session/inputNeededRemoved`` for every interaction still pending and a
                  cleared ``chat/activityChanged`` when an activity was shown
item assistant    ``chat/responsePart`` markdown (first text), then ``chat/delta``
item reasoning    ``chat/responsePart`` reasoning, then ``chat/reasoning``
delta             as the item of its kind; only assistant and reasoning stream (tool, notice
                  and user deltas have no streaming form in AHP 0.7.0 and are dropped)
item tool         ``chat/toolCallStart`` once; ``chat/toolCallReady{confirmed:"not-needed"}``
                  when it runs; ``chat/toolCallComplete{result}`` when completed/failed (output
                  as text content, images as embedded content up to 1 MiB per result, exit code
                  as ``error.code``, file edits as ``fileEdit`` contents from the host's
                  ``file_edits`` hook, and also listed with omitted images in ``_meta``).
                  Progress and output tail updates of a running call are dropped (live only).
                  A call of a client's tool (``set_client_tools``) starts with ``contributor
                  {kind:"client"}`` and is ready only once the host waits for that client
                  (``client_call``: ready + ``session/inputNeededSet{kind:
                  "toolClientExecution"}``); the client's ``chat/toolCallComplete`` ends it
item notice       ``chat/responsePart`` systemNotification (once per item id)
item user         not a part: AHP carries the user's text as the turn's message (client turns)
                  and steering as pending messages the host manages. A main-agent user item
                  seen while no turn runs seeds the message of the next provider-started turn
interaction       permission pending: ``chat/toolCallStart`` when its tool call is unknown,
                  ``chat/toolCallReady`` without ``confirmed`` with the provider's options (an
                  assisted review as ``riskAssessment``: approve = safety 1, requireApproval =
                  0), then ``session/inputNeededSet{kind:"toolConfirmation"}``. question/plan review
                  pending: ``chat/inputRequested`` + ``session/inputNeededSet{kind:"chatInput"}``.
                  answered/rejected/expired: the resolution a client did not give here, then
                  ``session/inputNeededRemoved``. Questions: ``chat/inputCompleted`` accept /
                  decline / cancel. Permissions: ``chat/toolCallConfirmed`` approved (or denied
                  when rejected or the resolution names a reject option); expired says nothing
                  about the decision, so ``chat/toolCallReady{confirmed:"setting"}`` only
                  leaves pending-confirmation and the tool's own end settles it
subagent          ``subagent`` tool result content on its parent tool call:
                  ``chat/toolCallContentChanged`` while the call runs, else kept for its
                  ``chat/toolCallComplete``; once per subagent
exit              ``chat/error`` part ``{errorType:"providerExit"}``, ``resumable`` (the next
                  prompt or ``chat/turnResume`` reopens it), for a running turn (detached:
                  ``chat/turnCancelled``, the provider already ended it as cancelled)
title             ``session/titleChanged`` + ``session/chatUpdated{title}`` (cleaned, deduped)
usage             ``chat/usage`` with ``_meta["ahpBridge.aiUnits"]`` (the conversation's total)
                  while a turn runs, and always session ``_meta["ahpBridge.usage"]``
tokens            ``chat/usage``: the turn's token counts summed over its model calls
activity          ``chat/activityChanged`` + ``session/chatUpdated{activity}`` (intent, else a
                  retry note), only when the text changes
compaction        the same activity text, "Compacting conversation", while it holds the turn
background_tasks  session ``_meta`` ``ahpBridge.backgroundTasks`` (what 0.7 and 0.9 peers see),
                  and each running shell as ``chat/backgroundWorkSet{kind:"shell"}`` until it
                  stops (``chat/backgroundWorkRemoved``): its typed 1.0 home (the 1.0 wire drops
                  the ``_meta`` copy). Background subagents likewise, ``kind:"subagent"``
context, todos,   session ``_meta`` under ``ahpBridge.<name>`` via ``session/metaChanged``
background_tasks, (AHP 0.7.0 has no typed home for them; the translator owns the session's
schedules,        ``_meta`` and sends the whole object, since the reducer replaces it)
execution,
model_selection
mcp_status        dropped here: the host makes the servers typed session customizations
                  (``mcpServer``, ``session/mcpServerStateChanged``; host/customizations.py)
plan_path         dropped: a provider-private scratch path used for project-change exclusion,
                  never shown to a user and no read permission
skill             dropped: skill loads are not transcript items in agentapi, and AHP 0.7.0's
                  customizations belong to the session's configuration, not to a turn
================  ==========================================================================

Subagents: items, deltas and interactions whose ``agent_id`` is not empty never enter the main
transcript. The one exception is a permission a subagent asks for: it must be answerable, so it
becomes a tool call (id ``<agent_id>/<tool_call_id>``, ``_meta["ahpBridge.agentId"]``) that the
subagent's own tool item then completes. A subagent is visible in the main chat only as the
``subagent`` content of the tool call that spawned it, pointing at its read-only chat
``subagent_chat_uri(agent_id)``; that chat's live turns come from a translator in subagent mode
(below) and its recorded ones from ``history.turns_from_history(..., agent_id=...)``.

Subagent chats: ``EventTranslator(..., agent_id=X)`` builds the read-only chat of subagent X
from the same event stream (the host creates that chat at ``subagent_chat_uri(X)``, with origin
``{kind:"tool", toolCallId}`` of its parent tool call). It takes only X's items and deltas (the
same table as above), X's nested subagents (as content of X's tool calls) and ``exit``. X's runs
are its turns: subagent ``running`` starts one (its message is X's own user item, the prompt the
spawning agent gave it, origin ``agent``; ``user`` for a follow-up the user sent), ``completed``
or ``idle`` completes it, ``failed`` is ``chat/error`` part ``{errorType:"subagentFailed"}``,
``cancelled`` is ``chat/turnCancelled``. Main-agent turns, interactions (they are answered in
the main chat) and conversation-level events are not its business.

Content that arrives while no turn is active is dropped (AHP 0.7.0 has no place for response
parts outside a turn); providers report ``working`` first (see the Go contract). After a client
cancelled a turn, the provider's late end of that turn and its late content are recognised and
dropped until the provider reports ``working`` again, even when the client has started the next
turn meanwhile; when the client cancelled before the provider reported ``working``, that late
``working`` is the cancelled turn's own and is dropped too (the host calls ``turn_not_sent``
when it never sent it). After ``fail_turn`` (a send that failed), a provider that did start the turn
after all shows it as a provider-started turn.

The parts, composed by ``EventTranslator`` (``translator.py``), which dispatches by event kind:
``turns`` (``TurnLifecycle``: whether a turn runs, stale ends, the ghost start, the seed; and
``TurnEvents``: starts, ends, the announcement of provider-started turns), ``text`` (response
parts), ``tools`` (tool calls, client tools), ``interactions`` (permissions, questions),
``inputs`` (the open session input requests), ``subagents``, ``background`` (background work)
and ``session_meta`` (title, usage, tokens, activity, session ``_meta``).
"""

from .._parts import MAX_RESULT_IMAGE_BYTES
from .interactions import confirmation_options
from .translator import EventTranslator
from .turns import TurnLifecycle

__all__ = ["MAX_RESULT_IMAGE_BYTES", "EventTranslator", "TurnLifecycle", "confirmation_options"]
