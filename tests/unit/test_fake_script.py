"""The fake provider's script parser: valid scripts parse; each mistake names file:line:field."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from ahp_bridge_fake.script import (
    HostToolStep,
    PermissionStep,
    QuestionStep,
    ScriptError,
    SubagentStep,
    TextStep,
    ToolStep,
    ValueStep,
    load_script,
    parse_script,
)

PACKAGE = Path(__file__).resolve().parents[2] / "adapters" / "ahp_bridge_fake"

GOOD = """\
display_name = "Test"
default_model = "m2"

[defaults]
chunk_size = 3
delay = 0.5

[[models]]
id = "m1"
efforts = ["low"]

[[models]]
id = "m2"
name = "Model Two"
context_sizes = [{ id = "default", tokens = 1000 }]

[[prompts]]
text = "hi"
[[prompts.steps]]
kind = "text"
text = "hello"

[[prompts]]
pattern = "^run (\\\\w+)$"
[[prompts.steps]]
kind = "permission"
title = "Run it?"
tool = { name = "shell", output = "done", exit_code = 0 }
[[prompts.steps.on.allow-once]]
kind = "tool"
name = "extra"
status = "failed"
[[prompts.steps.on.reject]]
kind = "stop"

[[prompts]]
order = 3
[[prompts.steps]]
kind = "subagent"
name = "helper"
[[prompts.steps.steps]]
kind = "reasoning"
text = "thinking"
chunk_size = 1

[[conversations]]
title = "special"
[[conversations.prompts]]
[[conversations.prompts.steps]]
kind = "notice"
text = "special conversation"
"""


def test_good_script_parses_with_defaults_applied() -> None:
    script = parse_script(GOOD, "good.toml")
    assert script.display_name == "Test"
    assert [m.id for m in script.models] == ["m1", "m2"]
    assert script.models[1].context_sizes == (("default", 1000),)
    assert script.default_model == "m2"
    text = script.prompts[0].steps[0]
    assert isinstance(text, TextStep)
    assert (text.text, text.chunk_size, text.delay) == ("hello", 3, 0.5)
    perm = script.prompts[1].steps[0]
    assert isinstance(perm, PermissionStep)
    assert [o.id for o in perm.options] == ["allow-once", "allow-session", "reject"]
    assert perm.options[0].allow_once and not perm.options[1].allow_once
    assert perm.options[2].reject
    assert isinstance(perm.tool, ToolStep) and perm.tool.exit_code == 0
    extra = perm.on["allow-once"][0]
    assert isinstance(extra, ToolStep) and extra.status == "failed"
    sub = script.prompts[2].steps[0]
    assert isinstance(sub, SubagentStep)
    assert isinstance(sub.steps[0], TextStep) and sub.steps[0].kind == "reasoning"


def test_a_sign_out_step_carries_its_message_even_inside_a_branch() -> None:
    script = parse_script(
        '[[prompts]]\ntext = "expire"\n[[prompts.steps]]\nkind = "sign_out"\n'
        'message = "token expired"\n'
        '[[prompts]]\ntext = "ask"\n[[prompts.steps]]\nkind = "permission"\ntitle = "t"\n'
        '[[prompts.steps.on.reject]]\nkind = "sign_out"\nmessage = "revoked"\n',
        "s.toml",
    )
    step = script.prompts[0].steps[0]
    assert isinstance(step, ValueStep) and (step.kind, step.value) == ("sign_out", "token expired")
    perm = script.prompts[1].steps[0]
    assert isinstance(perm, PermissionStep)
    [branch] = perm.on["reject"]
    assert isinstance(branch, ValueStep) and (branch.kind, branch.value) == ("sign_out", "revoked")


def test_rule_selection_by_text_pattern_order_and_conversation() -> None:
    script = parse_script(GOOD, "good.toml")
    assert script.rule_for("hi", 1) is script.prompts[0]
    assert script.rule_for("run tests", 2) is script.prompts[1]
    assert script.rule_for("run two words", 2) is None
    assert script.rule_for("anything", 3) is script.prompts[2]
    assert script.rule_for("anything", 4) is None
    special = script.rule_for("hi", 1, title="special")
    assert special is script.conversations[0].prompts[0]


def test_packaged_scripts_are_valid() -> None:
    demo = load_script(PACKAGE / "demo.toml")
    kinds = {step.kind for step in demo.prompts[0].steps}
    assert {"reasoning", "text", "tool", "permission", "question", "title", "usage"} <= kinds
    conformance = load_script(PACKAGE / "conformance.toml")
    texts = {rule.text for rule in conformance.prompts}
    assert {"conformance: plain", "conformance: slow", "conformance: permission"} <= texts
    assert "conformance: question" in texts


def _error(source: str) -> ScriptError:
    with pytest.raises(ScriptError) as info:
        parse_script(source, "bad.toml")
    return info.value


def _line_of(source: str, needle: str) -> int:
    for number, line in enumerate(source.splitlines(), start=1):
        if needle in line:
            return number
    raise AssertionError(needle)


BASE = '[[prompts]]\ntext = "a"\n[[prompts.steps]]\nkind = "text"\ntext = "x"\n\n'

MISTAKES = [
    # (name, source, expected field path, needle for the expected line, message fragment)
    (
        "unknown step kind",
        BASE + '[[prompts]]\n[[prompts.steps]]\nkind = "text"\ntext = "y"\n'
        '[[prompts.steps]]\nkind = "tool_cal"\n',
        "prompts[1].steps[1].kind",
        'kind = "tool_cal"',
        'unknown step kind "tool_cal"',
    ),
    (
        "missing kind",
        BASE + '[[prompts]]\n[[prompts.steps]]\ntext = "y"\n',
        "prompts[1].steps[0]",
        None,
        'missing required field "kind"',
    ),
    (
        "unknown field in a step",
        BASE.replace('text = "x"', 'text = "x"\nchunks = 4'),
        "prompts[0].steps[0].chunks",
        "chunks = 4",
        "unknown field",
    ),
    (
        "wrong type",
        BASE.replace('text = "x"', "text = 42"),
        "prompts[0].steps[0].text",
        "text = 42",
        "expected a string, got int",
    ),
    (
        "negative delay",
        BASE.replace('text = "x"', 'text = "x"\ndelay = -1'),
        "prompts[0].steps[0].delay",
        "delay = -1",
        "must be at least",
    ),
    (
        "zero chunk size",
        BASE.replace('text = "x"', 'text = "x"\nchunk_size = 0'),
        "prompts[0].steps[0].chunk_size",
        "chunk_size = 0",
        "must be at least 1",
    ),
    (
        "bad regex",
        '[[prompts]]\npattern = "(unclosed"\n[[prompts.steps]]\nkind = "stop"\n',
        "prompts[0].pattern",
        "pattern =",
        "invalid regular expression",
    ),
    (
        "rule without steps",
        BASE + '[[prompts]]\ntext = "b"\n',
        "prompts[1]",
        None,
        'missing required field "steps"',
    ),
    (
        "unknown tool status",
        BASE + '[[prompts]]\n[[prompts.steps]]\nkind = "tool"\nname = "sh"\nstatus = "done"\n',
        "prompts[1].steps[0].status",
        'status = "done"',
        '"done" is not one of',
    ),
    (
        "branch on an unknown option",
        BASE + '[[prompts]]\n[[prompts.steps]]\nkind = "permission"\ntitle = "t"\n'
        '[[prompts.steps.on.allow-twice]]\nkind = "stop"\n',
        "prompts[1].steps[0].on.allow-twice",
        "[[prompts.steps.on.allow-twice]]",
        'unknown branch "allow-twice"',
    ),
    (
        "mistake inside a branch",
        BASE + '[[prompts]]\n[[prompts.steps]]\nkind = "permission"\ntitle = "t"\n'
        '[[prompts.steps.on.reject]]\nkind = "text"\n',
        "prompts[1].steps[0].on.reject[0]",
        "[[prompts.steps.on.reject]]",
        'missing required field "text"',
    ),
    (
        "duplicate option id",
        BASE + '[[prompts]]\n[[prompts.steps]]\nkind = "permission"\ntitle = "t"\n'
        '[[prompts.steps.options]]\nid = "ok"\n[[prompts.steps.options]]\nid = "ok"\n',
        "prompts[1].steps[0].options[1].id",
        None,
        'duplicate option id "ok"',
    ),
    (
        "option both allow-once and session",
        BASE + '[[prompts]]\n[[prompts.steps]]\nkind = "permission"\ntitle = "t"\n'
        '[[prompts.steps.options]]\nid = "ok"\nallow_once = true\nsession = true\n',
        "prompts[1].steps[0].options[0]",
        "[[prompts.steps.options]]",
        "at most one of reject, allow_once, session",
    ),
    (
        "form question without a field",
        BASE + '[[prompts]]\n[[prompts.steps]]\nkind = "form"\ntitle = "t"\n'
        '[[prompts.steps.questions]]\ntext = "q"\n',
        "prompts[1].steps[0].questions[0]",
        "[[prompts.steps.questions]]",
        'missing required field "field"',
    ),
    (
        "field bounds upside down",
        BASE + '[[prompts]]\n[[prompts.steps]]\nkind = "form"\ntitle = "t"\n'
        '[[prompts.steps.questions]]\ntext = "q"\n'
        'field = { name = "n", type = "integer", minimum = 5, maximum = 1 }\n',
        "prompts[1].steps[0].questions[0].field.maximum",
        "field = {",
        "maximum 1.0 is below minimum 5.0",
    ),
    (
        "unknown field type",
        BASE + '[[prompts]]\n[[prompts.steps]]\nkind = "form"\ntitle = "t"\n'
        '[[prompts.steps.questions]]\ntext = "q"\nfield = { name = "n", type = "date" }\n',
        "prompts[1].steps[0].questions[0].field.type",
        "field = {",
        '"date" is not one of',
    ),
    (
        "boolean field with three choices and no values",
        BASE + '[[prompts]]\n[[prompts.steps]]\nkind = "form"\ntitle = "t"\n'
        '[[prompts.steps.questions]]\ntext = "q"\nchoices = ["a", "b", "c"]\n'
        'field = { name = "n", type = "boolean" }\n',
        "prompts[1].steps[0].questions[0].field.values",
        "field = {",
        "needs values",
    ),
    (
        "values that do not pair with choices",
        BASE + '[[prompts]]\n[[prompts.steps]]\nkind = "form"\ntitle = "t"\n'
        '[[prompts.steps.questions]]\ntext = "q"\nchoices = ["a", "b"]\n'
        'field = { name = "n", type = "string", values = ["1"] }\n',
        "prompts[1].steps[0].questions[0].field.values",
        "field = {",
        "1 values for 2 choices",
    ),
    (
        "question without questions",
        BASE + '[[prompts]]\n[[prompts.steps]]\nkind = "question"\ntitle = "t"\n',
        "prompts[1].steps[0]",
        None,
        'missing required field "questions"',
    ),
    (
        "subagent running an exit",
        BASE + '[[prompts]]\n[[prompts.steps]]\nkind = "subagent"\nname = "s"\n'
        '[[prompts.steps.steps]]\nkind = "exit"\nmessage = "m"\n',
        "prompts[1].steps[0].steps[0].kind",
        'kind = "exit"',
        'a subagent cannot run a "exit" step',
    ),
    (
        "subagent running a sign_out",
        BASE + '[[prompts]]\n[[prompts.steps]]\nkind = "subagent"\nname = "s"\n'
        '[[prompts.steps.steps]]\nkind = "sign_out"\nmessage = "m"\n',
        "prompts[1].steps[0].steps[0].kind",
        'kind = "sign_out"',
        'a subagent cannot run a "sign_out" step',
    ),
    (
        "sign_out without its message",
        BASE + '[[prompts]]\n[[prompts.steps]]\nkind = "sign_out"\n',
        "prompts[1].steps[0]",
        None,
        'missing required field "message"',
    ),
    (
        "sign_out with an unknown key",
        BASE + '[[prompts]]\n[[prompts.steps]]\nkind = "sign_out"\nmessage = "m"\nreason = "x"\n',
        "prompts[1].steps[0].reason",
        'reason = "x"',
        "unknown field",
    ),
    (
        "unknown top-level key",
        'name = "x"\n' + BASE,
        "name",
        'name = "x"',
        "unknown field",
    ),
    (
        "default model not listed",
        'default_model = "nope"\n[[models]]\nid = "m"\n' + BASE,
        "default_model",
        "default_model",
        '"nope" is not a model id',
    ),
    (
        "rule naming an unknown model",
        BASE.replace('text = "a"', 'text = "a"\nmodel = "gpt-9"'),
        "prompts[0].model",
        'model = "gpt-9"',
        '"gpt-9" is not a model id',
    ),
    (
        "duplicate model id",
        '[[models]]\nid = "m"\n[[models]]\nid = "m"\n' + BASE,
        "models[1].id",
        None,
        'duplicate model id "m"',
    ),
    (
        "conversation selector of the wrong type",
        BASE + '[[conversations]]\nindex = "two"\n',
        "conversations[0].index",
        'index = "two"',
        "expected an integer",
    ),
    (
        "usage without units",
        BASE + '[[prompts]]\n[[prompts.steps]]\nkind = "usage"\n',
        "prompts[1].steps[0]",
        None,
        'missing required field "ai_units"',
    ),
    (
        "a table expected",
        '[defaults]\n[[prompts]]\ntext = "a"\nsteps = [1]\n',
        "prompts[0].steps[0]",
        "steps = [1]",
        "expected a table, got int",
    ),
    (
        "empty required text",
        BASE.replace('text = "x"', 'text = ""'),
        "prompts[0].steps[0].text",
        'text = ""',
        "must not be empty",
    ),
    (
        "boolean of the wrong type",
        BASE.replace('text = "a"', 'text = "a"\nsteer = "no"'),
        "prompts[0].steer",
        'steer = "no"',
        "expected true or false, got a string",
    ),
    (
        "number of the wrong type",
        BASE + '[[prompts]]\n[[prompts.steps]]\nkind = "delay"\nseconds = "5"\n',
        "prompts[1].steps[0].seconds",
        'seconds = "5"',
        "expected a number, got a string",
    ),
    (
        "choices that are not strings",
        BASE + '[[prompts]]\n[[prompts.steps]]\nkind = "question"\ntitle = "t"\n'
        '[[prompts.steps.questions]]\ntext = "q"\nchoices = [1, 2]\n',
        "prompts[1].steps[0].questions[0].choices",
        "choices = [1, 2]",
        "expected an array of strings",
    ),
    (
        "empty model list",
        "models = []\n" + BASE,
        "models",
        "models = []",
        "must list at least one model",
    ),
    (
        "empty option list",
        BASE + '[[prompts]]\n[[prompts.steps]]\nkind = "permission"\ntitle = "t"\noptions = []\n',
        "prompts[1].steps[0].options",
        "options = []",
        "must list at least one option",
    ),
    (
        "empty question list",
        BASE + '[[prompts]]\n[[prompts.steps]]\nkind = "question"\ntitle = "t"\nquestions = []\n',
        "prompts[1].steps[0].questions",
        "questions = []",
        "must list at least one question",
    ),
    (
        "mistake under a quoted branch key",
        BASE + '[[prompts]]\n[[prompts.steps]]\nkind = "question"\ntitle = "t"\n'
        '[[prompts.steps.questions]]\ntext = "q"\n'
        '[[prompts.steps.on."dark blue"]]\nkind = "text"\n"text" = 5\n',
        'prompts[1].steps[0].on."dark blue"[0].text',
        '"text" = 5',
        "expected a string",
    ),
    (
        "steps not an array of tables",
        '[[prompts]]\nsteps = "go"\n',
        "prompts[0].steps",
        'steps = "go"',
        "expected an array of tables",
    ),
    (
        "host tool arguments twice",
        BASE + '[[prompts]]\n[[prompts.steps]]\nkind = "host_tool"\nname = "usages"\n'
        'arguments = { a = 1 }\narguments_json = "{}"\n',
        "prompts[1].steps[0].arguments_json",
        "arguments_json",
        "give arguments or arguments_json, not both",
    ),
    (
        "host tool branch",
        BASE + '[[prompts]]\n[[prompts.steps]]\nkind = "host_tool"\nname = "usages"\n'
        '[[prompts.steps.on.maybe]]\nkind = "stop"\n',
        "prompts[1].steps[0].on.maybe",
        None,
        'unknown branch "maybe" (expected ok, failed, missing or default)',
    ),
]


@pytest.mark.parametrize(
    ("source", "field", "needle", "fragment"),
    [m[1:] for m in MISTAKES],
    ids=[m[0] for m in MISTAKES],
)
def test_mistakes_name_file_line_and_field(
    source: str, field: str, needle: str | None, fragment: str
) -> None:
    error = _error(source)
    assert error.file == "bad.toml"
    assert error.path == field
    assert fragment in error.message
    if needle is not None:
        assert error.line == _line_of(source, needle)
    assert str(error).startswith(f"bad.toml:{error.line}: {field}: ")


def test_line_of_repeated_arrays_points_at_the_right_element() -> None:
    source = BASE * 3 + '[[prompts]]\n[[prompts.steps]]\nkind = "text"\ntext = 1\n'
    error = _error(source)
    assert error.path == "prompts[3].steps[0].text"
    assert error.line == len(source.splitlines())


def test_missing_field_points_at_its_table_header() -> None:
    source = BASE + '[[prompts]]\n[[prompts.steps]]\nkind = "tool"\n'
    error = _error(source)
    assert error.path == "prompts[1].steps[0]"
    assert error.line == len(source.splitlines()) - 1
    assert 'missing required field "name"' in error.message


def test_invalid_toml_reports_its_line() -> None:
    error = _error('[[prompts]]\ntext = "a\n')
    assert error.line == 2
    assert "invalid TOML" in error.message


def test_unreadable_file_is_named(tmp_path: Path) -> None:
    with pytest.raises(ScriptError) as info:
        load_script(tmp_path / "missing.toml")
    assert str(info.value).startswith("missing.toml:1: cannot read script")


def test_boolean_fields_get_yes_and_no() -> None:
    source = (
        '[[prompts]]\n[[prompts.steps]]\nkind = "form"\ntitle = "t"\n'
        '[[prompts.steps.questions]]\ntext = "q"\nfield = { name = "ok", type = "boolean" }\n'
    )
    step = parse_script(source).prompts[0].steps[0]
    assert isinstance(step, QuestionStep)
    question = step.questions[0]
    assert question.choices == ("Yes", "No")
    assert question.field is not None and question.field.values == ("true", "false")


def test_question_branches_accept_answer_texts() -> None:
    source = (
        '[[prompts]]\n[[prompts.steps]]\nkind = "question"\ntitle = "t"\n'
        '[[prompts.steps.questions]]\ntext = "q"\nchoices = ["Blue"]\n'
        '[[prompts.steps.on.Blue]]\nkind = "stop"\n[[prompts.steps.on.cancel]]\nkind = "stop"\n'
    )
    step = parse_script(source).prompts[0].steps[0]
    assert isinstance(step, QuestionStep)
    assert set(step.on) == {"Blue", "cancel"}


def test_host_tool_steps_carry_their_json_arguments_and_the_script_names_its_own_tools() -> None:
    script = parse_script(
        GOOD + '[[prompts]]\ntext = "ht"\n[[prompts.steps]]\nkind = "host_tool"\nname = "usages"\n'
        'arguments = { symbol = "main", n = 2 }\ncall_id = "h1"\nreply = "said {text}"\n'
        '[[prompts.steps.on.missing]]\nkind = "tool"\nname = "grep"\n',
        "ok.toml",
    )
    step = script.rule_for("ht", 1).steps[0]  # type: ignore[union-attr]
    assert isinstance(step, HostToolStep)
    assert json.loads(step.arguments) == {"symbol": "main", "n": 2}
    assert (step.call_id, step.reply) == ("h1", "said {text}")
    # Tool steps anywhere (branches, permissions, subagents as "task"); host tools are not its own.
    assert script.tool_names() == {"shell", "extra", "task", "grep"} | {
        s.name for r in script.prompts for s in r.steps if isinstance(s, ToolStep)
    }
    assert "usages" not in script.tool_names()
