"""The contract's untyped constants. Field values that take them are plain ``str`` as in Go."""

from __future__ import annotations

from typing import Final

PROVIDER_COPILOT: Final = "copilot"
"""Provider names match the agent names used in persisted sessions."""

UPLOADS_DIR: Final = "web-attachments"
"""The directory the web service keeps uploads in."""

# Account sources: how a signed-in runtime gets its credential.
ACCOUNT_STORED: Final = "stored"
"""A sign-in the runtime stored, by its own login command or by AccountManager.sign_in."""
ACCOUNT_ENV: Final = "env"
"""A token in a service environment variable (Account.env_var)."""
ACCOUNT_GITHUB_CLI: Final = "gh-cli"
"""The GitHub CLI's own sign-in."""
ACCOUNT_OTHER: Final = "other"
"""Any other source the runtime reports."""

# Quota units.
QUOTA_UNIT_CREDITS: Final = "ai_credits"
QUOTA_UNIT_REQUESTS: Final = "requests"

# Relative model cost tiers, cheapest first.
COST_LOW: Final = "low"
COST_MEDIUM: Final = "medium"
COST_HIGH: Final = "high"
COST_VERY_HIGH: Final = "very_high"

MAX_TURN_CHANGE_FILES: Final = 32
MAX_TURN_CHANGE_PATH_BYTES: Final = 16 << 10
MAX_TURN_CHANGE_COUNT: Final = 1_000_000_000

# Rewind modes and bounds.
REWIND_CONVERSATION: Final = "conversation"
REWIND_CONVERSATION_AND_FILES: Final = "conversation-and-files"
MAX_REWIND_DISCARDED: Final = 2000
MAX_REWIND_RESULT_FILES: Final = 256

# Command kinds.
COMMAND_SKILL: Final = "skill"
COMMAND_PROMPT: Final = "command"

# Item.steer_status values.
STEER_ACCEPTED: Final = "accepted"
STEER_NOT_DELIVERED: Final = "not_delivered"

# Who started a subagent run.
SUBAGENT_TRIGGER_SPAWN: Final = "spawn"
"""The first run, started by the spawning tool call."""
SUBAGENT_TRIGGER_AGENT: Final = "agent"
"""A reuse the main agent started."""
SUBAGENT_TRIGGER_USER: Final = "user"
"""A follow-up sent by the user."""
MAX_SUBAGENT_RUNS: Final = 50
SUBAGENT_RUN_BYTES: Final = 144
"""Bounds one run's JSON size, for byte budgets."""

# Todo statuses.
TODO_PENDING: Final = "pending"
TODO_IN_PROGRESS: Final = "in_progress"
TODO_DONE: Final = "done"
TODO_BLOCKED: Final = "blocked"

# Elicitation modes.
ELICITATION_FORM: Final = "form"
ELICITATION_URL: Final = "url"

# Field types.
FIELD_STRING: Final = "string"
FIELD_NUMBER: Final = "number"
FIELD_INTEGER: Final = "integer"
FIELD_BOOLEAN: Final = "boolean"
FIELD_ARRAY: Final = "array"
"""Takes several of its question's choices."""

# Field formats a string field may require.
FORMAT_EMAIL: Final = "email"
FORMAT_URI: Final = "uri"
FORMAT_DATE: Final = "date"
FORMAT_DATE_TIME: Final = "date-time"

# MCP server transports.
MCP_STDIO: Final = "stdio"
MCP_HTTP: Final = "http"
MCP_SSE: Final = "sse"

# MCP server states in one conversation: MCPStatus.status is one of them.
MCP_CONNECTED: Final = "connected"
MCP_FAILED: Final = "failed"
MCP_NEEDS_AUTH: Final = "needs-auth"
MCP_PENDING: Final = "pending"
MCP_DISABLED: Final = "disabled"
MCP_STOPPED: Final = "stopped"
MCP_NOT_CONFIGURED: Final = "not_configured"

DELIVERY_AUTOPILOT: Final = "autopilot"
"""Marks a provider-generated continuation of the same turn."""
DELIVERY_STEER: Final = "steer"
"""Marks a user item that arrived as a steer."""

MAX_EDIT_PATCH_BYTES: Final = (1 << 20) - 256
"""The browser's separate 2 MiB cache charges UTF-16 text and entry overhead."""
MAX_FILE_EDIT_PATH_BYTES: Final = 4096
MAX_FILE_EDIT_PATHS_BYTES: Final = 16 << 10
MAX_FILE_EDITS: Final = 32
MAX_HOST_TOOL_ARGUMENTS: Final = 64 << 10
"""Bounds a host tool call's JSON arguments; adapters refuse larger calls without CallTool."""
MAX_MCP_STATUS_SERVERS: Final = 128
"""Bounds live MCP metadata independently of tool bodies."""
MAX_PLAN_FEEDBACK_BYTES: Final = 64 << 10
MAX_SCHEDULES: Final = 32
"""Bounds a schedule snapshot's rows."""
