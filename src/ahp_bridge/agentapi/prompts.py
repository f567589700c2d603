"""What the user sends: prompts with files and uploads, and slash commands."""

from __future__ import annotations

from pydantic import Field

from ._base import GoBytes, GoModel, GoStruct, OmitEmpty


class File(GoStruct):
    """A project file or directory the user referenced.

    ``path`` is absolute; ``rel`` is relative to the working directory, shown to the user.
    """

    path: str
    rel: str = ""
    dir: bool = False


class Blob(GoStruct):
    """Uploaded content sent inline (``data`` is base64 in JSON).

    ``mime`` is image/png, image/jpeg, image/gif, image/webp, application/pdf or text/plain.
    ``path``, set for a PDF, is the absolute path of a copy of data under the file's own
    name (UPLOADS_DIR/<task>/<id>.d/<name>), for a provider that reads documents from disk.
    """

    name: str = ""
    mime: str = ""
    data: GoBytes = b""
    path: str = ""


class Prompt(GoStruct):
    """One user message: text as typed, plus files and uploads the host already checked."""

    text: str = ""
    files: list[File] = Field(default_factory=list)
    attachments: list[Blob] = Field(default_factory=list)


class CommandOption(GoModel):
    """One choice a command offers for its input."""

    name: str
    description: str = ""
    group: OmitEmpty[str] = ""


class Command(GoModel):
    """One slash command; ``kind`` is COMMAND_SKILL or COMMAND_PROMPT."""

    name: str
    description: str = ""
    kind: str
    input_hint: str = ""
    aliases: OmitEmpty[list[str]] = Field(default_factory=list)
    allow_during_turn: OmitEmpty[bool] = False
    disabled_reason: OmitEmpty[str] = ""
    input_choices: OmitEmpty[list[CommandOption]] = Field(default_factory=list)
    input_required: OmitEmpty[bool] = False


class CommandResult(GoModel):
    """The typed result of a command that did not submit an agent prompt."""

    kind: str
    text: OmitEmpty[str] = ""
    markdown: OmitEmpty[bool] = False
    prefill_input: OmitEmpty[str] = ""
    title: OmitEmpty[str] = ""
    command: OmitEmpty[str] = ""
    options: OmitEmpty[list[CommandOption]] = Field(default_factory=list)
    action: OmitEmpty[str] = ""
