"""Runtime-discovered customizations (skills, agents, hooks, instructions): metadata only."""

from __future__ import annotations

from pydantic import Field

from ._base import GoModel, GoStruct, OmitEmpty, OmitNil


class ConfigurationDefinition(GoModel):
    """One runtime-discovered customization.

    Never authored prompts, tool catalogs or MCP configuration; its path grants no
    permission to read or write a file.
    """

    id: str
    name: str
    display_name: OmitEmpty[str] = ""
    description: OmitEmpty[str] = ""
    source: str = ""
    path: OmitEmpty[str] = ""
    enabled: OmitNil[bool | None] = None
    user_invocable: OmitNil[bool | None] = None


class ConfigurationCatalog(GoStruct):
    """Discovered definitions; warnings mean discovery was incomplete."""

    definitions: list[ConfigurationDefinition] = Field(default_factory=list)
    warnings: list[str] = Field(default_factory=list)
