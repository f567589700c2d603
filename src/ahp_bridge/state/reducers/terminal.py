"""Reducer for TerminalState (AHP 1.0: an exit is an explicit `lifecycle`, not an `exitCode`)."""

from __future__ import annotations

from ._util import JSON, put, put_many


def _append_data(state: JSON, data: str) -> JSON:
    """Append output to the open tail part, or start a new unclassified part."""
    content = list(state.get("content", []))
    tail = content[-1] if content else None
    if isinstance(tail, dict) and tail.get("type") == "command" and not tail.get("isComplete"):
        content[-1] = {**tail, "output": tail.get("output", "") + data}
    elif isinstance(tail, dict) and tail.get("type") == "unclassified":
        content[-1] = {**tail, "value": tail.get("value", "") + data}
    else:
        content.append({"type": "unclassified", "value": data})
    return {**state, "content": content}


def _finish_command(state: JSON, action: JSON) -> JSON:
    changed = False
    content = []
    for part in state.get("content", []):
        if (
            isinstance(part, dict)
            and part.get("type") == "command"
            and part.get("commandId") == action.get("commandId")
        ):
            part = put_many(
                part,
                {
                    "isComplete": True,
                    "exitCode": action.get("exitCode"),
                    "durationMs": action.get("durationMs"),
                },
            )
            changed = True
        content.append(part)
    return {**state, "content": content} if changed else state


def reduce_terminal(state: JSON, action: JSON) -> JSON:
    """Pure reducer for terminal channels; `terminal/input` is side-effect only."""
    match action.get("type"):
        case "terminal/data":
            data = action.get("data")
            return _append_data(state, data) if isinstance(data, str) and data else state
        case "terminal/resized":
            return put_many(state, {"cols": action.get("cols"), "rows": action.get("rows")})
        case "terminal/claimed":
            return put(state, "claim", action.get("claim"))
        case "terminal/titleChanged":
            return put(state, "title", action.get("title"))
        case "terminal/cwdChanged":
            return put(state, "cwd", action.get("cwd"))
        case "terminal/exited":
            lifecycle = put({"status": "exited"}, "exitCode", action.get("exitCode"))
            return {**state, "lifecycle": lifecycle}
        case "terminal/cleared":
            return state if state.get("content") == [] else {**state, "content": []}
        case "terminal/commandDetectionAvailable":
            return put(state, "supportsCommandDetection", True)
        case "terminal/commandExecuted":
            part = {
                "type": "command",
                "commandId": action.get("commandId"),
                "commandLine": action.get("commandLine"),
                "output": "",
                "timestamp": action.get("timestamp"),
                "isComplete": False,
            }
            return {
                **state,
                "content": [*state.get("content", []), part],
                "supportsCommandDetection": True,
            }
        case "terminal/commandFinished":
            return _finish_command(state, action)
        case _:  # includes terminal/input
            return state
