"""MCP servers: the provider's user-wide configuration and a conversation's view of them."""

from __future__ import annotations

from pydantic import Field

from ._base import GoModel, GoStruct, Internal, OmitEmpty


class MCPServerConfig(GoModel):
    """One server of the provider's user-wide MCP configuration.

    A command it runs (MCP_STDIO) or a remote endpoint (MCP_HTTP, MCP_SSE). ``env`` and
    ``headers`` carry real values: never serialised, never returned to a client.
    """

    name: str
    type: str
    command: OmitEmpty[str] = ""
    args: OmitEmpty[list[str]] = Field(default_factory=list)
    cwd: OmitEmpty[str] = ""
    env: Internal[dict[str, str]] = Field(default_factory=dict)
    url: OmitEmpty[str] = ""
    headers: Internal[dict[str, str]] = Field(default_factory=dict)


class MCPServer(MCPServerConfig):
    """A configured server (embeds MCPServerConfig) and whether new conversations start it.

    ``source`` is where it is configured: "user" servers are the ones MCPConfigurer edits;
    others (a plugin, built in) are read-only.
    """

    enabled: bool = False
    source: str = ""


class MCPTool(GoModel):
    """One tool an MCP server offers."""

    name: str
    description: OmitEmpty[str] = ""


class MCPStatus(GoModel):
    """One MCP server as a conversation sees it; tools are listed only while connected.

    ``sign_in`` marks a server that uses a sign-in (OAuth client configured, or it waited).
    """

    name: str
    status: str
    """One of the MCP_* state constants."""
    error: OmitEmpty[str] = ""
    source: OmitEmpty[str] = ""
    remote: OmitEmpty[bool] = False
    sign_in: OmitEmpty[bool] = False
    tools: OmitEmpty[list[MCPTool]] = Field(default_factory=list)


class MCPCallbackSignIn(GoStruct):
    """An SDK-owned authorization waiting at a fixed HTTPS callback.

    An empty ``url`` means kept credentials already connected the server.
    """

    authorization_id: str = ""
    url: str = ""
