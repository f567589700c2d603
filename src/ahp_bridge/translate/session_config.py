"""Session settings: the `resolveSessionConfig` schema built from a provider, and how a value
given at `createSession` or changed later (`session/configChanged`) reaches it (pure).

=====================  ===================================  ================================
property               offered when                         reaches the provider as
=====================  ===================================  ================================
``model``              the provider lists models            ``OpenRequest.model``; later
                                                            ``SetModel``
``effort``             the selected model has efforts       with the model (``SetModel``)
``contextSize``        the selected model has context       with the model (``SetModel``)
                       sizes and the provider offers tiers
``agent``              the provider has custom agents       ``OpenRequest.agent``; later
                       (``custom_agents``) and lists some   ``SelectAgent``
``mode``               the provider has execution modes     nothing: agentapi has no call
                       (``execution_modes``)                that switches it, so only
                                                            ``interactive`` is accepted
``workingDirectory``   always                               ``OpenRequest.workdir`` (fixed
                                                            once the session exists)
=====================  ===================================  ================================

Values a client sends for other properties are left out (VS Code sends its own, such as
``autoApprove``). A value that does not fit its property is refused with the reason, at
``createSession`` (an error) and in ``session/configChanged`` (a rejection); a change the
provider cannot take while a turn runs is refused too, and nothing reaches the provider.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ahp_bridge.agentapi import Capabilities, ConfigurationDefinition, Model

from .commands import MODEL_CONFIG_CONTEXT_SIZE, MODEL_CONFIG_EFFORT, find_model, option_problem

__all__ = [
    "AGENT",
    "CONTEXT_SIZE",
    "EFFORT",
    "MODE",
    "MODEL",
    "WORKING_DIRECTORY",
    "ConfigError",
    "Settings",
    "change_settings",
    "complete_setting",
    "resolve",
]

MODEL = "model"
EFFORT = MODEL_CONFIG_EFFORT
CONTEXT_SIZE = MODEL_CONFIG_CONTEXT_SIZE
AGENT = "agent"
MODE = "mode"
WORKING_DIRECTORY = "workingDirectory"
_MODES = ("interactive", "autopilot")
_NO_MODES = (
    "the execution mode cannot be switched through agentapi (it has no such call); "
    "sessions run interactive"
)


class ConfigError(ValueError):
    """A setting value that cannot be used, with the reason (names the property)."""


@dataclass(frozen=True)
class Settings:
    """What a session's settings are, in agentapi terms."""

    model: str = ""
    effort: str = ""
    context_size: str = ""
    agent: str = ""
    working_directory: str = ""


def _enum(
    title: str, values: list[str], labels: list[str], default: str, *, description: str = ""
) -> dict[str, Any]:
    prop: dict[str, Any] = {
        "type": "string",
        "title": title,
        "enum": values,
        "enumLabels": labels,
        "default": default,
        "sessionMutable": True,
    }
    if description:
        prop["description"] = description
    return prop


def resolve(
    config: Mapping[str, Any],
    *,
    models: Sequence[Model],
    capabilities: Capabilities,
    agents: Sequence[ConfigurationDefinition],
    working_directory: str,
    strict: bool = False,
) -> tuple[dict[str, Any], dict[str, Any]]:
    """(schema, values) for the values a client has filled in so far.

    Values that do not fit are replaced by the defaults, or with ``strict`` (createSession)
    refused with ``ConfigError``.
    """
    properties: dict[str, Any] = {}
    values: dict[str, Any] = {}

    def take(key: str, allowed: list[str], default: str) -> str:
        given = config.get(key)
        if given is None or given == default:
            return default
        if isinstance(given, str) and given in allowed:
            return given
        if strict:
            shown = ", ".join(repr(a) for a in allowed if a) or "none"
            raise ConfigError(f"config.{key}: {given!r} is not one of {shown}")
        return default

    model: Model | None = None
    if models:
        ids = [m.id for m in models]
        chosen = take(MODEL, ids, ids[0])
        model = find_model(models, chosen)
        properties[MODEL] = _enum("Model", ids, [m.name or m.id for m in models], ids[0])
        values[MODEL] = chosen
    # Efforts and sizes of every model: the schema stays valid when the model changes (no
    # action replaces a session's schema); each value is checked against the model chosen.
    all_efforts = list(dict.fromkeys(e for m in models for e in m.efforts))
    if all_efforts:
        efforts = ["", *all_efforts]
        properties[EFFORT] = _enum(
            "Reasoning effort",
            efforts,
            ["Default", *all_efforts],
            "",
            description="How hard the model thinks; the model decides which it offers",
        )
        values[EFFORT] = _fits(model, EFFORT, take(EFFORT, efforts, ""), strict)
    all_sizes = list(dict.fromkeys(c.id for m in models for c in m.context_sizes))
    if all_sizes and capabilities.context_size:
        sizes = ["", *all_sizes]
        properties[CONTEXT_SIZE] = _enum(
            "Context size",
            sizes,
            ["Default", *all_sizes],
            "",
            description="The context tier; the model decides which it offers",
        )
        values[CONTEXT_SIZE] = _fits(model, CONTEXT_SIZE, take(CONTEXT_SIZE, sizes, ""), strict)
    if capabilities.custom_agents and agents:
        ids = ["", *(a.id for a in agents)]
        labels = ["Default agent", *(a.display_name or a.name or a.id for a in agents)]
        descriptions = ["The provider's own agent", *(a.description for a in agents)]
        prop = _enum("Agent", ids, labels, "")
        prop["enumDescriptions"] = descriptions
        properties[AGENT] = prop
        values[AGENT] = take(AGENT, ids, "")
    if capabilities.execution_modes:
        prop = _enum("Mode", list(_MODES), ["Interactive", "Autopilot"], "interactive")
        prop["description"] = _NO_MODES
        prop["readOnly"] = True
        prop["sessionMutable"] = False
        properties[MODE] = prop
        values[MODE] = "interactive"
    mode = config.get(MODE)
    if strict and mode not in (None, "interactive"):
        raise ConfigError(f"config.{MODE}: {mode!r} cannot be used: {_NO_MODES}")
    directory = config.get(WORKING_DIRECTORY)
    properties[WORKING_DIRECTORY] = {
        "type": "string",
        "title": "Working directory",
        "description": "The directory the agent works in; fixed once the session exists",
        "default": working_directory,
    }
    values[WORKING_DIRECTORY] = directory if isinstance(directory, str) else working_directory
    return {"type": "object", "properties": properties}, values


def _fits(model: Model | None, key: str, value: str, strict: bool) -> str:
    """An effort or context size the chosen model has ("" when it has not, or refused)."""
    if not value or model is None:
        return value
    option = {"effort": value} if key == EFFORT else {"context_size": value}
    problem = option_problem(model, **option)
    if not problem:
        return value
    if strict:
        raise ConfigError(f"config.{key}: {problem}")
    return ""


def settings_of(values: Mapping[str, Any]) -> Settings:
    """The agentapi view of resolved values."""
    return Settings(
        model=str(values.get(MODEL) or ""),
        effort=str(values.get(EFFORT) or ""),
        context_size=str(values.get(CONTEXT_SIZE) or ""),
        agent=str(values.get(AGENT) or ""),
        working_directory=str(values.get(WORKING_DIRECTORY) or ""),
    )


@dataclass(frozen=True)
class Change:
    """A `session/configChanged` that can be honoured: the new values and what to call."""

    values: dict[str, Any]
    set_model: tuple[str, str, str] | None = None
    select_agent: str | None = None


def change_settings(
    state: Mapping[str, Any],
    changed: Mapping[str, Any],
    *,
    replace: bool,
    models: Sequence[Model],
    busy: bool,
) -> Change:
    """Check a client's `session/configChanged` against the session's schema; ConfigError
    says why it cannot be honoured."""
    schema = (state.get("schema") or {}).get("properties") or {}
    current = dict(state.get("values") or {})
    for key, value in changed.items():
        prop = schema.get(key)
        if prop is None:
            raise ConfigError(f"config.{key}: not a setting of this session")
        if current.get(key) == value:
            continue
        if not prop.get("sessionMutable") or prop.get("readOnly"):
            reason = (
                prop.get("description") if key == MODE else "it is fixed once the session exists"
            )
            raise ConfigError(f"config.{key}: cannot be changed: {reason}")
        allowed = prop.get("enum")
        if allowed is not None and value not in allowed:
            shown = ", ".join(repr(a) for a in allowed if a)
            raise ConfigError(f"config.{key}: {value!r} is not one of {shown}")
    new = {**({} if replace else current), **changed}
    if replace:
        for key in (WORKING_DIRECTORY, MODE):
            if key in current:
                new.setdefault(key, current[key])
    set_model = None
    model_keys = (MODEL, EFFORT, CONTEXT_SIZE)
    if any(new.get(k, "") != current.get(k, "") for k in model_keys):
        model = find_model(models, str(new.get(MODEL) or ""))
        if model is None:
            raise ConfigError(f"config.{MODEL}: {new.get(MODEL)!r} is not a model of this provider")
        if model.id != current.get(MODEL):
            # Another model: its own defaults unless the change names them.
            for key in (EFFORT, CONTEXT_SIZE):
                if key not in changed and key in schema:
                    new[key] = ""
        effort = str(new.get(EFFORT) or "")
        size = str(new.get(CONTEXT_SIZE) or "")
        for key, option in ((EFFORT, {"effort": effort}), (CONTEXT_SIZE, {"context_size": size})):
            problem = option_problem(model, **option)
            if problem:
                raise ConfigError(f"config.{key}: {problem}")
        set_model = (model.id, effort, size)
    select_agent = None
    if new.get(AGENT, "") != current.get(AGENT, ""):
        select_agent = str(new.get(AGENT) or "")
    if busy and (set_model is not None or select_agent is not None):
        raise ConfigError("a turn is running; change the model or agent when it has ended")
    return Change(new, set_model, select_agent)


def complete_setting(
    schema: Mapping[str, Any], prop_id: str, query: str
) -> list[dict[str, str]] | None:
    """`sessionConfigCompletions` items for an enumerated property (None: no such property)."""
    prop = (schema.get("properties") or {}).get(prop_id)
    if prop is None:
        return None
    values = [str(v) for v in prop.get("enum") or []]
    labels = list(prop.get("enumLabels") or values)
    descriptions = list(prop.get("enumDescriptions") or [])
    wanted = query.strip().lower()
    items = []
    for index, value in enumerate(values):
        label = labels[index] if index < len(labels) else value
        if wanted and wanted not in value.lower() and wanted not in label.lower():
            continue
        item = {"value": value, "label": label}
        if index < len(descriptions) and descriptions[index]:
            item["description"] = descriptions[index]
        items.append(item)
    return items
