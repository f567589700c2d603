"""Each check can fail: a toy provider with one fault fails exactly that check.

A clean toy passes everything, in both contract-allowed ways of treating a send during a
turn (Busy and queueing) and with every optional feature absent (Unsupported, N/A).
"""

from __future__ import annotations

import dataclasses

import pytest

from ahp_bridge.conformance import CHECKS, Outcome, Prompts, Report, run
from tests.conformance.targets import toy_target
from tests.conformance.toy import PROMPTS, Faults, Options

FAULT_BREAKS = {
    "host_call_wrong_id": ("cap_host_tools", "no tool item has the call's id 'x"),
    "utility_task_id": ("host_tools_utility", "carried task id 'toy-task', expected ''"),
    "empty_display_name": ("provider_basics", "display_name() is empty"),
    "delta_kind_mismatch": ("transcript", "delta of kind reasoning for assistant item"),
    "dangling_tool_call": ("transcript", "names tool call 't-missing', which is no tool item"),
    "leak_to_sibling": ("conversation_isolation", "sent 6 events to another's sink"),
    "double_terminal": ("turn_lifecycle", "second terminal state completed"),
    "output_after_end": ("turn_lifecycle", "main-agent item assistant id='late1' after its turn"),
    "event_after_close": ("events_after_close", "events after close returned: event title"),
    "blocking_emit": ("emit_nonblocking", "trio.from_thread"),
    "fold_send": ("busy_or_queued", "queued during the running turn to start its own turn"),
    "busy_but_queued": ("busy_or_queued", "a prompt refused with Busy started a turn after all"),
    "cancel_answers": ("respond_gone", "of a cancelled turn was reported answered, not expired"),
    "cancel_completes": ("cancel", "the cancelled turn ended completed, not cancelled"),
    "answer_lost_after_cancel": (
        "turn_after_cancel",
        "the turn after the cancel completed without an answer",
    ),
    "respond_again": ("respond_gone", "second respond to an answered permission returned"),
    "close_answers": ("close_expires", "close answered the pending permission on its own"),
    "reopen_creates": ("reopen_unknown", "open of an unknown conversation id succeeded"),
    "usable_after_close": ("closed_conversation", "send after close returned normally"),
    "exit_keeps_open": ("exit_closes", "send after the exit event returned normally"),
    "history_drops_answer": ("cap_history", "has no assistant item"),
    "read_unknown_empty": ("history_reader", "read_history of an unknown conversation id returned"),
    "titles_refused": ("cap_set_title", "although Titles is true"),
    "diff_unadvertised": ("cap_diff", "diff without SessionDiff returned normally"),
    "diff_misses_edit": ("cap_file_edits", "edited files the diff does not list: README.md"),
    "rewind_keeps_history": ("cap_rewind", "still holds the user item the rewind discarded"),
    "run_command_any": ("cap_commands", "run_command of a command the provider does not list"),
    "set_model_refused": ("cap_set_model", "with a listed model raised Unsupported"),
    "steer_wrong_error": ("cap_steer", "steer during a running turn raised Busy"),
    "steer_dropped": ("cap_steer", "waiting for the accepted steer to be used or reported"),
    "subagent_accepts_unknown": (
        "cap_subagents",
        "cancel_subagent of an unknown agent returned normally",
    ),
}


#: Faults that break a second check as well (a cancelled turn reported completed is no
#: cancelled end to go on from either).
ALSO_BREAKS = {"cancel_completes": {"turn_after_cancel"}}


def failed(report: Report) -> dict[str, str]:
    return {r.check: r.reason for r in report.failures()}


def test_every_fault_and_every_check_is_covered() -> None:
    faults = {f.name for f in dataclasses.fields(Faults)}
    assert faults == set(FAULT_BREAKS) | {"run_command_unsupported_lie"}
    broken = {check for check, _ in FAULT_BREAKS.values()} | {"cap_commands"}
    assert broken == {check.name for check in CHECKS}


async def test_a_correct_provider_passes_every_check() -> None:
    report = await run(toy_target())
    assert report.passed, report.format()
    assert report.count(Outcome.PASS) == len(CHECKS)
    assert [r.check for r in report.results] == [c.name for c in CHECKS]


async def test_queueing_a_send_during_a_turn_is_allowed() -> None:
    report = await run(toy_target(Options(queue_sends=True)))
    assert report.passed, report.format()
    busy = next(r for r in report.results if r.check == "busy_or_queued")
    assert busy.reason == "queued and run after the turn"


async def test_absent_features_raise_unsupported_or_do_not_apply() -> None:
    report = await run(toy_target(Options(supported=False)))
    assert report.passed, report.format()
    not_applicable = {r.check for r in report.results if r.outcome is Outcome.NOT_APPLICABLE}
    assert not_applicable == {
        "exit_closes",
        "busy_or_queued",
        "cancel",
        "turn_after_cancel",
        "respond_gone",
        "close_expires",
        "cap_steer",
        "cap_host_tools",
        "host_tools_utility",
        "cap_file_edits",
        "cap_rewind",
    }
    reasons = {r.check: r.reason for r in report.results}
    assert reasons["cap_set_title"] == "unsupported, as advertised"
    assert reasons["cap_commands"] == "unsupported"


@pytest.mark.parametrize("fault", sorted(FAULT_BREAKS))
async def test_one_fault_fails_exactly_its_check(fault: str) -> None:
    check, reason = FAULT_BREAKS[fault]
    options = Options(faults=dataclasses.replace(Faults(), **{fault: True}))
    report = await run(toy_target(options))
    failures = failed(report)
    assert set(failures) == {check} | ALSO_BREAKS.get(fault, set()), report.format()
    assert reason in failures[check]


async def test_run_command_without_commands_must_be_unsupported() -> None:
    options = Options(supported=False, faults=Faults(run_command_unsupported_lie=True))
    failures = failed(await run(toy_target(options)))
    assert set(failures) == {"cap_commands"}
    assert (
        "run_command on a provider whose commands are unsupported returned"
        in failures["cap_commands"]
    )


async def test_a_missing_prompt_fails_when_the_capability_is_advertised() -> None:
    prompts = Prompts(
        answer=PROMPTS["answer"],
        long=PROMPTS["long"],
        question=PROMPTS["question"],
        host_tool=PROMPTS["host_tool"],
    )
    failures = failed(await run(toy_target(prompts=prompts)))
    expected = "Capabilities.permissions is true but the target gives no permission prompt"
    edit = "Capabilities.session_diff is true but the target gives no edit prompt"
    assert failures == {"respond_gone": expected, "close_expires": expected, "cap_file_edits": edit}
    prompts = dataclasses.replace(prompts, permission=PROMPTS["permission"], host_tool=None)
    failures = failed(await run(toy_target(prompts=prompts)))
    expected = "Capabilities.host_tools is true but the target gives no host_tool prompt"
    assert failures == {
        "cap_host_tools": expected,
        "host_tools_utility": expected,
        "cap_file_edits": edit,
    }


async def test_without_an_answer_prompt_the_turn_checks_fail() -> None:
    failures = failed(await run(toy_target(prompts=Prompts())))
    assert failures["transcript"] == "the target gives no answer prompt"
    assert "cancel" in failures
    assert "cap_set_title" not in failures
