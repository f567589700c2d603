"""plan_command: client actions -> Conversation call plans or rejections."""

from __future__ import annotations

import base64
import json
from dataclasses import replace
from typing import Any

import pytest

from ahp_bridge.agentapi import (
    Answer,
    Blob,
    ContextSize,
    Elicitation,
    Field,
    File,
    InteractionKind,
    Media,
    Model,
    PlanAnswer,
    PlanReview,
    Prompt,
    Question,
)
from ahp_bridge.protocol import wire07
from ahp_bridge.protocol.actions import ACTIONS_07, CLIENT_DISPATCHABLE
from ahp_bridge.protocol.actions_v1 import CLIENT_DISPATCHABLE_1_0
from ahp_bridge.state.reducers import reduce
from ahp_bridge.translate._wire import iso_from_ms
from ahp_bridge.translate.commands import (
    CALL_ACTIONS,
    CLIENT_TOOL_ACTIONS,
    NO_CALL_ACTIONS,
    RESUME_PROMPT,
    UNSUPPORTED_ACTIONS,
    CallPlan,
    Cancel,
    CommandContext,
    Rejection,
    Respond,
    RunCommand,
    SelectAgent,
    Send,
    SetModel,
    SetTitle,
    Steer,
    next_queued_turn,
    plan_command,
    synced_answers,
)
from tests.support.paths import CONFORMANCE, FIXTURES

from .test_translate_support import (
    CHAT,
    T0,
    Harness,
    ev_interaction,
    new_chat,
    permission,
    question,
    strict,
    user_turn,
)

MODELS = [
    Model(id="gpt-x", name="GPT X", efforts=["low", "high"], context_sizes=[ContextSize(id="1m")]),
    Model(id="vision-less", media=Media(images=False, pdf=True)),
    Model(id="two-images", media=Media(images=True, pdf=False, max_images=2)),
]
IDLE = CommandContext(models=MODELS)
RUNNING = CommandContext(models=MODELS, active_turn_id="turn-1")
PNG = base64.b64encode(b"\x89PNG fake").decode()


def plan(action: dict[str, Any], ctx: CommandContext = IDLE) -> CallPlan | Rejection:
    strict(action)  # every action used here is a valid client action
    return plan_command(action, ctx)


def rejected(action: dict[str, Any], ctx: CommandContext = IDLE) -> str:
    result = plan(action, ctx)
    assert isinstance(result, Rejection), result
    return result.reason


# ------------------------------------------------------------------ starting turns


def test_user_turn_sends_the_prompt() -> None:
    assert plan(user_turn("t1", "hello")) == CallPlan((Send(Prompt(text="hello")),))


def test_named_model_is_selected_before_sending() -> None:
    action = user_turn(
        "t1", "hi", model={"id": "gpt-x", "config": {"effort": "high", "contextSize": "1m"}}
    )
    assert plan(action) == CallPlan((SetModel("gpt-x", "high", "1m"), Send(Prompt(text="hi"))))


@pytest.mark.parametrize(
    ("model", "reason"),
    [
        ({"id": "nope"}, "unknown model 'nope'"),
        ({"id": "gpt-x", "config": {"effort": "max"}}, "no effort 'max'"),
        ({"id": "gpt-x", "config": {"contextSize": "2m"}}, "no context size '2m'"),
        ({"id": "gpt-x", "config": {"effort": 3}}, "must be strings"),
        ({"id": "gpt-x", "config": {"temperature": "hot"}}, "'temperature' is not supported"),
    ],
)
def test_bad_model_selection_is_rejected(model: dict[str, Any], reason: str) -> None:
    assert reason in rejected(user_turn("t1", "hi", model=model))


def test_named_custom_agent_is_selected_before_sending() -> None:
    ctx = CommandContext(agents={"agent:/reviewer": "reviewer"})
    action = user_turn("t1", "review", agent={"uri": "agent:/reviewer"})
    assert plan(action, ctx) == CallPlan((SelectAgent("reviewer"), Send(Prompt(text="review"))))
    assert rejected(action) == "custom agent 'agent:/reviewer' is not available"


COMMANDS = CommandContext(models=MODELS, commands={"review": "review", "rv": "review"})


def test_a_message_that_names_a_command_runs_it() -> None:
    typed = user_turn("t1", "/review src/app.py")
    assert plan(typed, COMMANDS) == CallPlan((RunCommand("review", Prompt(text="src/app.py")),))
    alias = user_turn("t1", "  /rv")
    assert plan(alias, COMMANDS) == CallPlan((RunCommand("review", Prompt(text="")),))
    # Not a known command, or not at the start: sent as typed.
    assert plan(user_turn("t1", "/other x"), COMMANDS) == CallPlan((Send(Prompt(text="/other x")),))
    assert plan(user_turn("t1", "see /review"), COMMANDS) == CallPlan(
        (Send(Prompt(text="see /review")),)
    )
    assert plan(typed) == CallPlan((Send(Prompt(text="/review src/app.py")),))  # none known


def test_a_completed_command_attachment_runs_its_command() -> None:
    attachment = {
        "type": "simple",
        "label": "/review",
        "_meta": {"ahpBridge.command": "review"},
    }
    action = user_turn("t1", "/review all of it", attachments=[attachment])
    assert plan(action, COMMANDS) == CallPlan((RunCommand("review", Prompt(text="all of it")),))
    gone = {**attachment, "_meta": {"ahpBridge.command": "deploy"}}
    refused = rejected(user_turn("t1", "/deploy", attachments=[gone]), COMMANDS)
    assert refused == "/deploy is not a command of this provider"
    model = {"id": "gpt-x"}
    with_model = user_turn("t1", "/review", model=model, attachments=[attachment])
    assert plan(with_model, COMMANDS) == CallPlan(
        (SetModel("gpt-x"), RunCommand("review", Prompt(text="")))
    )


def test_turn_start_needs_a_ready_session_and_something_to_send() -> None:
    """The planner decides only what the provider can take: whether a turn runs and whether
    the message is a user's are the state rules' (state/validate.py), checked once, before."""
    not_ready = CommandContext(session_ready=False)
    assert rejected(user_turn("t1", "hi"), not_ready) == "the session is not ready"
    assert rejected(user_turn("t1", "   ")) == "the message is empty"
    assert plan(user_turn("t2", "hi"), RUNNING) == CallPlan((Send(Prompt(text="hi")),))


def test_attachments_become_files_and_uploads() -> None:
    attachments = [
        {"type": "resource", "label": "src/app.py", "uri": "file:///work/p/src/app.py"},
        {
            "type": "resource",
            "label": "docs",
            "uri": "file:///work/p/my%20docs",
            "displayKind": "directory",
        },
        {"type": "embeddedResource", "label": "shot.png", "data": PNG, "contentType": "image/png"},
        {"type": "simple", "label": "selection", "modelRepresentation": "def f(): ..."},
    ]
    result = plan(user_turn("t1", "look", attachments=attachments))
    assert result == CallPlan(
        (
            Send(
                Prompt(
                    text="look",
                    files=[
                        File(path="/work/p/src/app.py", rel="src/app.py"),
                        File(path="/work/p/my docs", rel="docs", dir=True),
                    ],
                    attachments=[
                        Blob(name="shot.png", mime="image/png", data=b"\x89PNG fake"),
                        Blob(name="selection", mime="text/plain", data=b"def f(): ..."),
                    ],
                )
            ),
        )
    )


def test_attached_files_are_confined_to_the_working_directory() -> None:
    ctx = CommandContext(workdir="/work/p")
    inside = {"type": "resource", "label": "x", "uri": "file:///work/p/src/../lib/a.py"}
    result = plan(user_turn("t1", "see", attachments=[inside]), ctx)
    assert result == CallPlan(
        (Send(Prompt(text="see", files=[File(path="/work/p/lib/a.py", rel="lib/a.py")])),)
    )
    for uri in ("file:///work/p/../secrets", "file:///etc/passwd", "file:///work/pp/a"):
        outside = {"type": "resource", "label": "x", "uri": uri}
        reason = rejected(user_turn("t1", "see", attachments=[outside]), ctx)
        assert reason.endswith("files outside the working directory cannot be attached")


@pytest.mark.parametrize(
    ("attachment", "prompt"),
    [
        (
            {"type": "resource", "label": "a", "uri": "file:///work/p/a.py"},
            Prompt(text="", files=[File(path="/work/p/a.py", rel="a.py")]),
        ),
        (
            {"type": "embeddedResource", "label": "s.png", "data": PNG, "contentType": "image/png"},
            Prompt(
                text="", attachments=[Blob(name="s.png", mime="image/png", data=b"\x89PNG fake")]
            ),
        ),
    ],
    ids=["file", "blob"],
)
def test_attachment_only_message_is_not_empty(attachment: dict[str, Any], prompt: Prompt) -> None:
    """A message of attachments alone is sent, and the attachment reaches the prompt."""
    ctx = CommandContext(models=MODELS, workdir="/work/p")
    assert plan(user_turn("t1", "", attachments=[attachment]), ctx) == CallPlan((Send(prompt),))


@pytest.mark.parametrize(
    ("attachment", "reason"),
    [
        ({"type": "resource", "label": "x", "uri": "https://e.test/x"}, "only file: URIs"),
        ({"type": "resource", "label": "x", "uri": "file://other-host/x"}, "only file: URIs"),
        (
            {"type": "embeddedResource", "label": "x", "data": "!!", "contentType": "image/png"},
            "not valid base64",
        ),
        (
            {"type": "embeddedResource", "label": "x", "data": PNG, "contentType": "video/mp4"},
            "'video/mp4' cannot be uploaded",
        ),
        ({"type": "simple", "label": "x"}, "needs its modelRepresentation"),
        (
            {"type": "chat", "label": "x", "resource": "ahp-chat:/c", "endTurn": "t0"},
            "'chat' attachments",
        ),
    ],
)
def test_unusable_attachments_are_rejected(attachment: dict[str, Any], reason: str) -> None:
    message = rejected(user_turn("t1", "hi", attachments=[attachment]))
    assert reason in message
    assert "attachment 0 ('x')" in message


def test_uploads_are_gated_by_the_named_models_media() -> None:
    image = {"type": "embeddedResource", "label": "i", "data": PNG, "contentType": "image/png"}
    no_images = user_turn("t1", "hi", model={"id": "vision-less"}, attachments=[image])
    assert "does not accept images" in rejected(no_images)
    three = user_turn("t1", "hi", model={"id": "two-images"}, attachments=[image] * 3)
    assert "at most 2 images" in rejected(three)
    two = user_turn("t1", "hi", model={"id": "two-images"}, attachments=[image] * 2)
    assert isinstance(plan(two), CallPlan)


# ------------------------------------------------------------------ cancel, steer, title


def test_a_cancel_is_a_cancel_call() -> None:
    """Only the running turn may be cancelled: a state rule (state/validate.py)."""
    action = {"type": "chat/turnCancelled", "turnId": "turn-1", "duration": 1}
    assert plan(action, RUNNING) == CallPlan((Cancel(),))


def test_steering_goes_to_the_running_turn_and_queued_waits() -> None:
    steering = {
        "type": "chat/pendingMessageSet",
        "kind": "steering",
        "id": "p1",
        "message": {"text": "also add tests", "origin": {"kind": "user"}},
    }
    assert plan(steering, RUNNING) == CallPlan((Steer(Prompt(text="also add tests")),))
    queued = {**steering, "kind": "queued"}
    assert plan(queued, RUNNING) == CallPlan()
    assert plan(queued) == CallPlan()
    bad = {**queued, "message": {"text": "x", "origin": {"kind": "user"}, "attachments": [{}]}}
    assert isinstance(plan_command(bad, RUNNING), Rejection)


def test_title_change_sets_the_provider_title_when_it_can() -> None:
    action = {"type": "session/titleChanged", "title": " New\nname "}
    assert plan(action) == CallPlan((SetTitle("New name"),))
    assert plan(action, CommandContext(can_set_title=False)) == CallPlan()
    assert rejected({"type": "session/titleChanged", "title": "  "}) == "the title is empty"


def _fixture_examples() -> dict[str, dict[str, Any]]:
    """One real action per type, in its canonical form: from our 1.0 reducer fixtures, then
    from the AHP 0.7.0 conformance fixtures lifted as a 0.7 peer's action is."""
    examples: dict[str, dict[str, Any]] = {}
    for path in sorted((FIXTURES / "ahp-1.0.0" / "reducers").glob("*.json")):
        if "-is-no-op" in path.name:
            continue
        for action in json.loads(path.read_text())["actions"]:
            examples.setdefault(action["type"], action)
    for path in sorted(CONFORMANCE.glob("*.json")):
        for action in json.loads(path.read_text())["actions"]:
            kind = ACTIONS_07.types[action["type"]]
            examples.setdefault(action["type"], wire07.up_action(kind, action))
    return examples


CONFORMANCE = CONFORMANCE / "reducers"
EXAMPLES = _fixture_examples()
#: Canonical client actions arrive from every line: 0.7's dispatchable set and 1.0's.
CHAT_AND_SESSION = sorted(
    t for t in CLIENT_DISPATCHABLE | CLIENT_DISPATCHABLE_1_0 if t.startswith(("chat/", "session/"))
)


def test_every_client_dispatchable_chat_and_session_action_has_one_decision() -> None:
    tables = [CALL_ACTIONS, NO_CALL_ACTIONS, CLIENT_TOOL_ACTIONS, frozenset(UNSUPPORTED_ACTIONS)]
    assert sum(len(t) for t in tables) == len(frozenset().union(*tables))
    assert frozenset().union(*tables) == frozenset(CHAT_AND_SESSION)


@pytest.mark.parametrize("kind", sorted(NO_CALL_ACTIONS))
def test_state_only_actions_need_no_call(kind: str) -> None:
    assert plan(EXAMPLES[kind], RUNNING) == CallPlan()


@pytest.mark.parametrize("kind", sorted(UNSUPPORTED_ACTIONS))
def test_actions_the_provider_cannot_honour_are_rejected_with_a_reason(kind: str) -> None:
    assert rejected(EXAMPLES[kind], RUNNING) == UNSUPPORTED_ACTIONS[kind]


def test_a_resumable_turn_is_resumed_with_a_continuation_prompt() -> None:
    resume = {"type": "chat/turnResume", "turnId": "t1"}
    ctx = CommandContext(resumable_turn_id="t1")
    assert plan(resume, ctx) == CallPlan((Send(Prompt(text=RESUME_PROMPT)),))
    # which turn may be resumed, and not while one runs: state rules (state/validate.py)
    assert rejected(resume, replace(ctx, session_ready=False)) == "the session is not ready"


def test_automation_actions_are_not_offered() -> None:
    action = {"type": "automationRun/cancelRequested", "run": "ahp-automation-run:/r"}
    assert plan_command(action, IDLE) == Rejection("automations are not offered by this host")


def test_actions_of_other_channels_are_not_planned() -> None:
    reason = rejected({"type": "terminal/input", "data": "ls"})
    assert reason == "terminal/input is not a chat or session action this bridge plans"


# ------------------------------------------------------------------ tool confirmation


PERMISSIONS = CommandContext(active_turn_id="turn-1", permissions={"call-1": permission()})


def confirmed(**fields: Any) -> dict[str, Any]:
    base = {"type": "chat/toolCallConfirmed", "turnId": "turn-1", "toolCallId": "call-1"}
    return {**base, **fields}


def test_approval_without_option_uses_allow_once() -> None:
    action = confirmed(approved=True, confirmed="user-action")
    assert plan(action, PERMISSIONS) == CallPlan((Respond("perm-1", Answer(decision="once")),))


def test_approval_keeps_allow_for_session_distinct() -> None:
    action = confirmed(approved=True, confirmed="user-action", selectedOptionId="session")
    assert plan(action, PERMISSIONS) == CallPlan((Respond("perm-1", Answer(decision="session")),))


def test_denial_uses_the_reject_option_and_steers_the_suggestion() -> None:
    suggestion = {"text": "use git status instead", "origin": {"kind": "user"}}
    action = confirmed(approved=False, reason="denied", userSuggestion=suggestion)
    assert plan(action, PERMISSIONS) == CallPlan(
        (
            Respond("perm-1", Answer(decision="deny")),
            Steer(Prompt(text="use git status instead")),
        )
    )


@pytest.mark.parametrize(
    ("action", "reason"),
    [
        (
            confirmed(approved=True, confirmed="user-action", selectedOptionId="deny"),
            "option 'deny' does not approve",
        ),
        (confirmed(approved=False, reason="denied", selectedOptionId="once"), "does not deny"),
        (
            confirmed(approved=True, confirmed="user-action", selectedOptionId="x"),
            "unknown option 'x'",
        ),
        (
            confirmed(approved=True, confirmed="user-action", editedToolInput="rm -rf /"),
            "edited tool input",
        ),
        (
            confirmed(approved=True, confirmed="user-action", toolCallId="call-2"),
            "not waiting for confirmation",
        ),
    ],
)
def test_bad_confirmations_are_rejected(action: dict[str, Any], reason: str) -> None:
    assert reason in rejected(action, PERMISSIONS)


def test_provider_without_an_approve_option_cannot_be_approved() -> None:
    ctx = CommandContext(
        active_turn_id="turn-1",
        permissions={"call-1": permission(options=[PERMISSION_DENY_ONLY])},
    )
    reason = rejected(confirmed(approved=True, confirmed="user-action"), ctx)
    assert reason == "the provider offered no option to approve"


PERMISSION_DENY_ONLY = permission().options[2]


# ------------------------------------------------------------------ input completion


def inputs(interaction: Any, answers: dict[str, Any] | None = None) -> CommandContext:
    synced = {interaction.id: answers} if answers is not None else {}
    return CommandContext(
        active_turn_id="turn-1", inputs={interaction.id: interaction}, input_answers=synced
    )


def submitted(kind: str, value: Any, **extra: Any) -> dict[str, Any]:
    return {"state": "submitted", "value": {"kind": kind, "value": value, **extra}}


def completed(response: str = "accept", **answers: Any) -> dict[str, Any]:
    action: dict[str, Any] = {
        "type": "chat/inputCompleted",
        "requestId": "ask-1",
        "response": response,
    }
    if answers:
        action["answers"] = answers
    return action


FORM = question(
    "ask-1",
    [
        Question(text="Name", field=Field(name="name", type="string", required=True)),
        Question(text="Age", field=Field(name="age", type="integer", minimum=0, maximum=150)),
        Question(
            text="Sure?",
            choices=["Yes", "No"],
            field=Field(name="ok", type="boolean", values=["true", "false"]),
        ),
        Question(
            text="Size",
            choices=["Small", "Large"],
            field=Field(name="size", type="string", values=["s", "l"]),
        ),
        Question(
            text="Pick",
            choices=["A", "B", "C"],
            field=Field(name="p", type="array", values=["a", "b", "c"], max_items=2),
        ),
    ],
    elicitation=Elicitation(mode="form", source="mcp-server"),
)


def test_accepted_form_answers_become_one_list_per_question() -> None:
    action = completed(
        q0=submitted("text", "Ada"),
        q1=submitted("number", 36),
        q2=submitted("boolean", False),
        q3=submitted("selected", "l"),
        q4=submitted("selected-many", ["a", "c"]),
    )
    result = plan(action, inputs(FORM))
    expected = Answer(answers=[["Ada"], ["36"], ["No"], ["Large"], ["A", "C"]])
    assert result == CallPlan((Respond("ask-1", expected),))
    # The provider's own field check accepts what we send.
    for q, values in zip(FORM.questions, expected.answers, strict=True):
        assert q.field_value(values)[1] is True


def test_enumerated_number_field_answers_with_the_choice_text() -> None:
    level = Question(
        text="Level",
        choices=["Low", "High"],
        field=Field(name="lvl", type="integer", values=["1", "9"]),
    )
    ask = question("ask-1", [level])
    result = plan(completed(q0=submitted("selected", "9")), inputs(ask))
    assert result == CallPlan((Respond("ask-1", Answer(answers=[["High"]])),))
    assert level.field_value(["High"]) == (9, True)


def test_synced_draft_answers_are_merged_under_the_final_ones() -> None:
    drafts = {"q0": {"state": "draft", "value": {"kind": "text", "value": "Draft"}}}
    result = plan(completed(), inputs(FORM, drafts))
    assert isinstance(result, CallPlan)
    (respond,) = result.calls
    assert isinstance(respond, Respond)
    assert respond.answer.answers == [["Draft"], [], [], [], []]
    override = plan(completed(q0=submitted("text", "Final")), inputs(FORM, drafts))
    assert isinstance(override, CallPlan)
    assert override.calls[0] == Respond("ask-1", Answer(answers=[["Final"], [], [], [], []]))


@pytest.mark.parametrize(
    ("answers", "reason"),
    [
        ({}, "q0: the answer is required"),
        ({"q0": submitted("text", "A"), "q1": submitted("number", 200)}, "at most 150"),
        ({"q0": submitted("text", "A"), "q1": submitted("number", 1.5)}, "whole number"),
        ({"q0": submitted("text", "A"), "q3": submitted("selected", "m")}, "'m' is not one of"),
        (
            {"q0": submitted("text", "A"), "q4": submitted("selected-many", ["a", "b", "c"])},
            "at most 2 choices",
        ),
        ({"q0": submitted("number", 3)}, "q0: expected a 'text' answer, not 'number'"),
        ({"q0": submitted("text", "A"), "q2": submitted("text", "yes")}, "expected a 'boolean'"),
        ({"q0": submitted("text", "A"), "q9": submitted("text", "x")}, "no question 'q9'"),
        ({"q0": submitted("text", "A"), "q1": submitted("number", True)}, "finite number"),
    ],
)
def test_answers_that_do_not_fit_are_rejected(answers: dict[str, Any], reason: str) -> None:
    action = {**completed(), "answers": answers} if answers else completed()
    assert reason in rejected(action, inputs(FORM))


def test_skipped_optional_questions_send_empty_answers() -> None:
    skipped = {"state": "skipped"}
    action = completed(q0=submitted("text", "A"), q1=skipped, q2=skipped)
    assert plan(action, inputs(FORM)) == CallPlan(
        (Respond("ask-1", Answer(answers=[["A"], [], [], [], []])),)
    )


PLAIN = question(
    "ask-1",
    [
        Question(text="Colour?", choices=["red", "blue"], custom=True),
        Question(text="Toppings?", choices=["ham", "egg"], multiple=True),
    ],
)


def test_plain_question_answers_with_choices_and_free_text() -> None:
    action = completed(
        q0=submitted("selected", "", freeformValues=["green"]),
        q1=submitted("selected-many", ["ham", "egg"]),
    )
    assert plan(action, inputs(PLAIN)) == CallPlan(
        (Respond("ask-1", Answer(answers=[["green"], ["ham", "egg"]])),)
    )


def test_a_text_value_answers_a_free_form_single_select_as_its_free_text() -> None:
    """Clients answer "type your own" with a text value: taken as the free-form answer."""
    action = completed(q0=submitted("text", "green"), q1=submitted("selected-many", ["egg"]))
    assert plan(action, inputs(PLAIN)) == CallPlan(
        (Respond("ask-1", Answer(answers=[["green"], ["egg"]])),)
    )
    closed = question("ask-1", [Question(text="Colour?", choices=["red", "blue"])])
    assert "expected a 'selected' answer" in rejected(
        completed(q0=submitted("text", "green")), inputs(closed)
    )


def test_plain_question_rejects_free_text_it_does_not_allow_and_missing_answers() -> None:
    extra = completed(
        q0=submitted("selected", "red"),
        q1=submitted("selected-many", ["ham"], freeformValues=["cheese"]),
    )
    assert "takes no free-form text" in rejected(extra, inputs(PLAIN))
    missing = completed(q0=submitted("selected", "red"))
    assert "q1: an answer is required" in rejected(missing, inputs(PLAIN))


@pytest.mark.parametrize(
    ("interaction", "response", "answer"),
    [
        (FORM, "decline", Answer(reject=True)),
        (FORM, "cancel", Answer(cancel=True)),
        (PLAIN, "cancel", Answer(reject=True)),
    ],
)
def test_decline_and_cancel(interaction: Any, response: str, answer: Answer) -> None:
    assert plan(completed(response), inputs(interaction)) == CallPlan((Respond("ask-1", answer),))


def test_completion_of_an_unknown_request_is_rejected() -> None:
    assert rejected(completed("decline")) == "no such input request is open"


PLAN_REVIEW = question(
    "ask-1",
    [],
    kind=InteractionKind.PLAN_REVIEW,
    plan=PlanReview(request_id="ask-1", actions=["interactive", "autopilot"]),
)


def test_plan_review_takes_an_action_or_feedback() -> None:
    action = completed(action=submitted("selected", "autopilot"))
    assert plan(action, inputs(PLAN_REVIEW)) == CallPlan(
        (Respond("ask-1", Answer(plan=PlanAnswer(action="autopilot"))),)
    )
    feedback = completed(feedback=submitted("text", " split step 2 "))
    assert plan(feedback, inputs(PLAN_REVIEW)) == CallPlan(
        (Respond("ask-1", Answer(plan=PlanAnswer(feedback="split step 2"))),)
    )
    both = completed(action=submitted("selected", "autopilot"), feedback=submitted("text", "x"))
    assert "exactly one" in rejected(both, inputs(PLAN_REVIEW))
    assert "must select one of" in rejected(
        completed(action=submitted("selected", "exit_only")), inputs(PLAN_REVIEW)
    )


# ------------------------------------------------------------------ both tables together


def test_question_round_trip_through_both_tables() -> None:
    """What the event table asks is exactly what the command table can answer."""
    h = Harness()
    h.start_turn()
    h.feed(ev_interaction(FORM))
    h.client(
        {
            "type": "chat/inputAnswerChanged",
            "requestId": "ask-1",
            "questionId": "q0",
            "answer": submitted("text", "Grace"),
        }
    )
    ctx = CommandContext(
        active_turn_id=h.tr.active_turn_id,
        inputs=h.tr.pending_inputs(),
        input_answers={"ask-1": synced_answers(h.chat, "ask-1")},
    )
    action = completed(q4=submitted("selected-many", ["b"]))
    result = plan(action, ctx)
    assert result == CallPlan((Respond("ask-1", Answer(answers=[["Grace"], [], [], [], ["B"]])),))
    follow = h.client(action)
    assert [a["type"] for _, a in follow] == ["session/inputNeededRemoved"]
    assert h.tr.pending_inputs() == {}


def test_permission_round_trip_through_both_tables() -> None:
    h = Harness()
    h.start_turn()
    h.feed(ev_interaction(permission(tool_call_id="call-1")))
    ctx = CommandContext(active_turn_id="turn-1", permissions=h.tr.pending_permissions())
    action = confirmed(approved=True, confirmed="user-action")
    assert plan(action, ctx) == CallPlan((Respond("perm-1", Answer(decision="once")),))


# ------------------------------------------------------------------ queued messages


def test_next_queued_turn_starts_the_first_queued_message() -> None:
    chat = new_chat()
    message = {"text": "next", "origin": {"kind": "user"}}
    for pid in ("p1", "p2"):
        set_action = {"type": "chat/pendingMessageSet", "kind": "queued", "id": pid}
        chat = reduce("chat", chat, {**set_action, "message": message})
    action = next_queued_turn(chat, "turn-9", T0)
    assert action == {
        "type": "chat/turnStarted",
        "turnId": "turn-9",
        "startedAt": iso_from_ms(T0),
        "message": message,
        "queuedMessageId": "p1",
    }
    strict(action)
    assert plan(action) == CallPlan((Send(Prompt(text="next")),))
    chat = reduce("chat", chat, action)
    assert [m["id"] for m in chat["queuedMessages"]] == ["p2"]
    assert chat["activeTurn"]["id"] == "turn-9"
    assert next_queued_turn(chat, "turn-10", T0) is None
    assert next_queued_turn(new_chat(), "turn-10", T0) is None


def test_synced_answers_reads_the_open_request() -> None:
    assert synced_answers(new_chat(), "ask-1") == {}
    h = Harness()
    h.start_turn()
    h.feed(ev_interaction(question("ask-1")))
    assert h.chat["resource"] == CHAT
    h.client(
        {
            "type": "chat/inputAnswerChanged",
            "requestId": "ask-1",
            "questionId": "q0",
            "answer": submitted("text", "x"),
        }
    )
    assert synced_answers(h.chat, "ask-1") == {"q0": submitted("text", "x")}


@pytest.mark.parametrize("kind", sorted(CLIENT_TOOL_ACTIONS))
def test_client_tool_answers_need_a_call_the_provider_waits_on(kind: str) -> None:
    action = {"type": kind, "turnId": "t1", "toolCallId": "call-1"}
    waiting = CommandContext(active_turn_id="t1", client_calls=frozenset({"call-1"}))
    assert plan_command(action, waiting) == CallPlan()  # the host resolves the call itself
    # A client tool call nothing waits for (the host restarted, or it already ended) is refused.
    other = CommandContext(active_turn_id="t1", client_calls=frozenset({"call-2"}))
    refused = plan_command(action, other)
    assert isinstance(refused, Rejection)
    assert refused.reason == "no client tool call call-1 is waiting for its client"
