"""Cross-checks ahp_bridge.agentapi against the Go contract text (spec/agentapi.txt).

Every Go struct, interface, typed enum, constant and sentinel error in the spec must have
its Python mirror, with the field names, JSON keys, omit rules and sync/async split the
shared contract decisions require.
"""

from __future__ import annotations

import ast
import inspect
import operator
import re
from dataclasses import dataclass, field
from enum import StrEnum

import pytest

import ahp_bridge.agentapi as api
from ahp_bridge.agentapi import constants, errors
from ahp_bridge.agentapi._base import GoModel, GoStruct, is_empty, is_nil, is_zero
from tests.support.paths import AGENTAPI_SPEC

SPEC = AGENTAPI_SPEC


def snake(go: str) -> str:
    """snake_case of a Go identifier, acronyms kept whole (ItemID -> item_id)."""
    go = go.replace("GitHub", "Github").replace("MCPHTTP", "MCPHttp").replace("MCPSSE", "MCPSse")
    go = re.sub(r"([A-Z]+)([A-Z][a-z])", r"\1_\2", go)
    go = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", go)
    return go.lower()


def py_attr(go: str) -> str:
    name = snake(go)
    return name + "_" if name in {"import"} else name


@dataclass
class GoField:
    name: str
    type: str
    tag: str | None
    opts: tuple[str, ...]


@dataclass
class GoStructDef:
    name: str
    fields: list[GoField] = field(default_factory=list)
    embedded: list[str] = field(default_factory=list)


@dataclass
class GoMethod:
    name: str
    takes_ctx: bool


_FIELD = re.compile(
    r"^(?P<names>\w+(?:, \w+)*)\s+(?P<type>[^`/]+?)\s*(?:`json:\"(?P<tag>[^\"]*)\"`)?\s*(?://.*)?$"
)


def _spec_text() -> str:
    return SPEC.read_text(encoding="utf-8")


def parse_structs(text: str) -> dict[str, GoStructDef]:
    out: dict[str, GoStructDef] = {}
    for m in re.finditer(r"^type (\w+) struct \{\n(.*?)^\}", text, re.M | re.S):
        sd = GoStructDef(m.group(1))
        for raw in m.group(2).splitlines():
            line = raw.strip()
            if not line or line.startswith("//"):
                continue
            if re.fullmatch(r"\w+", line):
                sd.embedded.append(line)
                continue
            fm = _FIELD.match(line)
            assert fm, f"cannot parse field line {line!r} of {sd.name}"
            tag = fm.group("tag")
            key, *opts = tag.split(",") if tag is not None else (None,)
            for name in fm.group("names").split(", "):
                sd.fields.append(GoField(name, fm.group("type").strip(), key, tuple(opts)))
        out[sd.name] = sd
    return out


def parse_interfaces(text: str) -> dict[str, list[GoMethod]]:
    out: dict[str, list[GoMethod]] = {}
    for m in re.finditer(r"^type (\w+) interface \{\n(.*?)^\}", text, re.M | re.S):
        methods = []
        for raw in m.group(2).splitlines():
            line = raw.strip()
            mm = re.match(r"^(\w+)\((.*?)\)", line)
            if mm and not line.startswith("//"):
                params = mm.group(2)
                ctx = params.startswith("ctx context.Context") or params.startswith(
                    "context.Context"
                )
                methods.append(GoMethod(mm.group(1), ctx))
        out[m.group(1)] = methods
    return out


def parse_const_blocks(text: str) -> list[str]:
    blocks = [m.group(1) for m in re.finditer(r"^const \(\n(.*?)^\)", text, re.M | re.S)]
    blocks += [m.group(1) for m in re.finditer(r"^const (\w+ = .+)$", text, re.M)]
    return blocks


_OPS = {ast.LShift: operator.lshift, ast.Sub: operator.sub, ast.Add: operator.add}


def _eval_int(expr: str) -> int:
    def ev(node: ast.AST) -> int:
        if isinstance(node, ast.Constant) and isinstance(node.value, int):
            return node.value
        if isinstance(node, ast.BinOp) and type(node.op) in _OPS:
            return _OPS[type(node.op)](ev(node.left), ev(node.right))
        raise AssertionError(f"unexpected constant expression {expr!r}")

    return ev(ast.parse(expr, mode="eval").body)


def parse_consts(text: str) -> tuple[dict[str, object], dict[str, dict[str, str]]]:
    """(untyped constants by Go name, typed string constants by type then Go name)."""
    untyped: dict[str, object] = {}
    typed: dict[str, dict[str, str]] = {}
    for block in parse_const_blocks(text):
        for raw in block.splitlines():
            line = raw.split("//")[0].strip()
            if not line:
                continue
            m = re.fullmatch(r"(\w+)(?:\s+(\w+))?\s*=\s*(.+)", line)
            assert m, f"cannot parse constant {line!r}"
            name, typ, value = m.groups()
            if value.startswith('"'):
                text_value = value.strip('"')
                if typ is None:
                    untyped[name] = text_value
                else:
                    typed.setdefault(typ, {})[name] = text_value
            else:
                untyped[name] = _eval_int(value)
    return untyped, typed


# --- structs ------------------------------------------------------------------------------


def _go_model_classes() -> dict[str, type[GoModel]]:
    return {
        name: obj
        for name in api.__all__
        if inspect.isclass(obj := getattr(api, name)) and issubclass(obj, GoModel)
        if obj not in (GoModel, GoStruct)
    }


def test_every_go_struct_has_a_model_and_every_model_a_go_struct() -> None:
    structs = parse_structs(_spec_text())
    assert len(structs) > 90
    models = _go_model_classes()
    assert sorted(set(structs) - set(models)) == []
    assert sorted(set(models) - set(structs)) == []


def _all_go_fields(structs: dict[str, GoStructDef], name: str) -> list[GoField]:
    sd = structs[name]
    fields = list(sd.fields)
    for emb in sd.embedded:
        fields += _all_go_fields(structs, emb)
    return fields


NOT_SERIALISED = {("OpenRequest", "Events"), ("OpenRequest", "Hooks")}


@pytest.mark.parametrize("name", sorted(parse_structs(_spec_text()) if SPEC.exists() else []))
def test_struct_fields_names_keys_and_omit_rules(name: str) -> None:
    structs = parse_structs(_spec_text())
    cls = getattr(api, name)
    for emb in structs[name].embedded:
        assert issubclass(cls, getattr(api, emb)), f"{name} must embed {emb} by inheritance"
    go_fields = _all_go_fields(structs, name)
    expected = {py_attr(f.name) for f in go_fields}
    assert set(cls.model_fields) == expected
    for f in go_fields:
        attr = py_attr(f.name)
        info = cls.model_fields[attr]
        where = f"{name}.{f.name}"
        internal = f.tag == "-" or f.type.startswith("func") or (name, f.name) in NOT_SERIALISED
        if internal:
            assert info.exclude is True, f"{where} must never be serialised"
            continue
        assert info.exclude is not True, f"{where} must be serialised"
        if f.tag is None:
            assert info.alias == f.name, f"{where}: JSON key must be the Go field name"
            assert info.exclude_if is None, f"{where}: untagged fields are never omitted"
            continue
        assert (info.alias or attr) == f.tag, f"{where}: JSON key must be {f.tag!r}"
        if "omitempty" in f.opts:
            want = is_nil if f.type.startswith("*") else is_empty
            assert info.exclude_if is want, f"{where}: omitempty on {f.type}"
        elif "omitzero" in f.opts:
            assert info.exclude_if is is_zero, f"{where}: omitzero"
        else:
            assert info.exclude_if is None, f"{where} has no omit option"
        if f.type.startswith("*"):
            assert info.default is None, f"{where}: a Go pointer is None when nil"


# --- interfaces ---------------------------------------------------------------------------


def _protocol_methods(proto: type) -> dict[str, object]:
    skip = {"__aenter__", "__aexit__"}
    return {
        name: member
        for name, member in vars(proto).items()
        if inspect.isfunction(member) and not name.startswith("_") and name not in skip
    }


def test_every_go_interface_is_a_runtime_checkable_protocol() -> None:
    interfaces = parse_interfaces(_spec_text())
    assert len(interfaces) > 35
    for name, methods in interfaces.items():
        proto = getattr(api, name)
        assert getattr(proto, "_is_protocol", False), f"{name} must be a Protocol"
        assert getattr(proto, "_is_runtime_protocol", False), f"{name} must be runtime-checkable"
        got = _protocol_methods(proto)
        assert set(got) == {snake(m.name) for m in methods}, name
        for m in methods:
            fn = got[snake(m.name)]
            # Go's ctx becomes trio cancellation: exactly the ctx-taking methods are async.
            assert inspect.iscoroutinefunction(fn) == m.takes_ctx, f"{name}.{m.name}"


def test_provider_is_an_async_context_manager_protocol() -> None:
    assert inspect.iscoroutinefunction(api.Provider.__aenter__)
    assert inspect.iscoroutinefunction(api.Provider.__aexit__)


# --- enums, constants, errors ------------------------------------------------------------


def test_typed_string_constants_are_str_enums_with_the_same_values() -> None:
    _, typed = parse_consts(_spec_text())
    assert {"EventKind", "ItemKind", "TurnState", "SubagentStatus", "PlanAction"} <= set(typed)
    for type_name, values in typed.items():
        enum = getattr(api, type_name)
        assert issubclass(enum, StrEnum), type_name
        assert {m.value for m in enum} == set(values.values()), type_name
        prefix = {"PlanAction": "Plan", "CompletionDecision": "Completion"}.get(
            type_name, type_name.removesuffix("Kind").removesuffix("State").removesuffix("Status")
        )
        for go_name, value in values.items():
            member = snake(go_name.removeprefix(prefix)).upper()
            assert enum[member].value == value, f"{type_name}.{member}"


def test_untyped_constants_match() -> None:
    untyped, _ = parse_consts(_spec_text())
    assert len(untyped) > 60
    for go_name, value in untyped.items():
        py = snake(go_name).upper()
        assert getattr(constants, py) == value, go_name
        assert getattr(api, py) == value, go_name


def test_every_sentinel_error_is_a_class_with_the_go_text() -> None:
    found = re.findall(r"\bErr(\w+) = errors\.New\(\"([^\"]*)\"\)", _spec_text())
    assert len(found) == 17
    for name, text in found:
        cls = getattr(api, name)
        assert issubclass(cls, errors.AgentAPIError)
        assert cls.default_message == text.replace("this uam", "this bridge")
        assert cls.reason == snake(name)
        assert errors.ERRORS_BY_REASON[cls.reason] is cls
