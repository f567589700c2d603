"""The two pure mappings between agentapi and AHP.

``events``: agentapi Events -> AHP actions (``EventTranslator``, one per chat).
``commands``: client actions -> Conversation call plans (``plan_command``).
``questions``: the shared question/answer mapping both directions use.
``models``: agentapi Models -> AHP ``SessionModelInfo`` (config keys the planner reads back).
``history``: a provider-recorded History -> AHP Turns for a chat reopened after a restart.
"""

from ._wire import iso_from_ms, ms_from_iso
from .commands import (
    Call,
    CallPlan,
    Cancel,
    CommandContext,
    Rejection,
    Respond,
    SelectAgent,
    Send,
    SetModel,
    SetTitle,
    Steer,
    message_prompt,
    next_queued_turn,
    plan_command,
    synced_answers,
)
from .events import EventTranslator, confirmation_options
from .history import turns_from_history
from .models import model_info
from .questions import AnswerError, answer_from_input, input_request

__all__ = [
    "AnswerError",
    "Call",
    "CallPlan",
    "Cancel",
    "CommandContext",
    "EventTranslator",
    "Rejection",
    "Respond",
    "SelectAgent",
    "Send",
    "SetModel",
    "SetTitle",
    "Steer",
    "answer_from_input",
    "confirmation_options",
    "input_request",
    "iso_from_ms",
    "message_prompt",
    "model_info",
    "ms_from_iso",
    "next_queued_turn",
    "plan_command",
    "synced_answers",
    "turns_from_history",
]
