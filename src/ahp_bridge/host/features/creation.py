"""`createSession`'s waiting half: the engine checked the request; this resolves and records it.

What needs the filesystem or the provider happens here, in order, before the session exists:
its working directories are checked against `bridge.allowed_directories` (symlinks and `..`
resolved), its settings are resolved from the provider's schema (a value that does not fit is
refused, naming it), and the durable catalog records it (before anyone hears of it). Then the
engine creates and announces it and opens its default chat.
"""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import structlog

from ahp_bridge.engine import effects as fx
from ahp_bridge.engine.sessions import NewSession
from ahp_bridge.host.features.session_config import SessionConfig
from ahp_bridge.host.shell import ANSWERED, Shell
from ahp_bridge.host.workspace.paths import directory_path, within_any
from ahp_bridge.protocol import errors as E
from ahp_bridge.protocol.errors import RpcError
from ahp_bridge.translate.session_config import Settings

__all__ = ["SessionCreation"]

log = structlog.get_logger(__name__)

#: Records a new session and its settings values (the durable catalog); raises when it cannot.
Record = Callable[[NewSession, str, dict[str, Any] | None], Awaitable[None]]


class SessionCreation:
    def __init__(
        self,
        shell: Shell,
        *,
        workdir: str,
        allowed_directories: Sequence[str],
        config: SessionConfig | None,
    ) -> None:
        self.shell = shell
        self.workdir = workdir
        #: Where clients' working directories must lie (`bridge.allowed_directories`, or its
        #: default: the bridge's working directory and the user's home); empty: nowhere (`/`
        #: listed is anywhere).
        self.allowed_directories = [os.path.realpath(p) for p in allowed_directories]
        self.config = config
        self.record: Record | None = None

    def check_allowed(self, path: str) -> None:
        """Refuse a client's working directory outside `bridge.allowed_directories`."""
        if within_any(os.path.realpath(path), self.allowed_directories) is not None:
            return
        if not self.allowed_directories:
            raise RpcError(
                E.INVALID_PARAMS,
                f"Invalid params: workingDirectories: {path} is refused: this bridge runs in `/` "
                "with `/` as its user's home, so it lets sessions work nowhere by default: list "
                "the directories they may use in bridge.allowed_directories",
            )
        raise RpcError(
            E.INVALID_PARAMS,
            f"Invalid params: workingDirectories: {path} is outside the directories this host "
            f"lets sessions work in (bridge.allowed_directories): choose one inside "
            f"{', '.join(self.allowed_directories)}",
        )

    async def create(self, request: fx.Serve) -> Any:
        engine = self.shell.engine
        new = engine.new_session(request.peer, request.request_id)
        try:
            workdir, config_state, settings = await self._prepare(new)
        except RpcError as err:
            self.shell.execute(
                engine.session_prepared(
                    request.peer,
                    request.request_id,
                    workdir="",
                    config_state=None,
                    settings=Settings(),
                    error=err,
                )
            )
            return ANSWERED
        self.shell.execute(
            engine.session_prepared(
                request.peer,
                request.request_id,
                workdir=workdir,
                config_state=config_state,
                settings=settings,
            )
        )
        return ANSWERED

    async def _prepare(self, new: NewSession) -> tuple[str, dict[str, Any] | None, Settings]:
        dirs = list(new.working_directories)
        for directory in dirs:
            self.check_allowed(directory_path(directory))
        workdir = directory_path(dirs[0]) if dirs else self.workdir
        config_state: dict[str, Any] | None = None
        settings = Settings()
        if self.config is not None:  # a value that does not fit is refused before anything
            config_state, settings = await self.config.for_create(new.params, workdir)
        if self.record is not None:  # recorded before anyone hears of it
            try:
                await self.record(new, workdir, (config_state or {}).get("values"))
            except Exception as exc:
                log.error("session not recorded", session=new.uri, error=str(exc))
                raise RpcError(
                    E.INTERNAL_ERROR, f"Internal error: the session could not be recorded: {exc}"
                ) from None
        return workdir, config_state, settings
