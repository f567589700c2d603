"""`ahp-bridge sessions list|forget|import`: the operator's view of the session catalog.

`list` reads the catalog without taking the bridge's lock (it works while a bridge runs);
`forget URI` and `import` take the lock, so they refuse while a bridge serves the same data
directory. Forgetting removes the bridge's record only: the provider's conversation is left
alone. `import --provider NAME --workdir DIR` asks a provider that implements
`agentapi.Importer` for its own earlier conversations recorded with exactly that working
directory and adds each (not already a session, not held open by another process) as a
session; the bridge lists them at its next start and, like any session of an earlier run,
reopens the conversation and rebuilds its turns from the provider's history when a client
subscribes. (Clients can do the same live: `resolveSessionConfig` offers the importable
conversations as the `ahpBridge.importConversation` config value of `createSession`.)
"""

from __future__ import annotations

import argparse
import sys
import uuid
from datetime import datetime
from pathlib import Path
from typing import TextIO

import trio

from ahp_bridge import agentapi, providers
from ahp_bridge.config import Settings
from ahp_bridge.host.durable.catalog import READY, Catalog, CatalogError, ChatRecord, SessionRecord
from ahp_bridge.translate._wire import clean_line, iso_from_ms


def run_sessions_command(
    args: argparse.Namespace, settings: Settings, *, out: TextIO | None = None
) -> int:
    """Run `sessions list` or `sessions forget URI`; the process exit code."""
    out = out or sys.stdout
    data_dir = settings.data_dir()
    try:
        if args.sessions_command == "list":
            catalog = Catalog.open(data_dir, read_only=True)
            try:
                records = catalog.sessions()
            finally:
                catalog.close()
            out.write(format_sessions(records))
            return 0
        if args.sessions_command == "forget":
            catalog = Catalog.open(data_dir)
            try:
                forgotten = catalog.forget(args.uri)
            finally:
                catalog.close()
            if not forgotten:
                print(
                    f"ahp-bridge: no session {args.uri} in the catalog {catalog.path}",
                    file=sys.stderr,
                )
                return 1
            out.write(f"forgot {args.uri} (the provider's conversation is kept)\n")
            return 0
        if args.sessions_command == "import":
            return _import(args, settings, out)
    except CatalogError as exc:
        print(f"ahp-bridge: {exc}", file=sys.stderr)
        return 1
    print(f"ahp-bridge: unknown sessions command {args.sessions_command!r}", file=sys.stderr)
    return 2


def format_sessions(records: list[SessionRecord]) -> str:
    """One block per session, newest first: URI, provider, status, times, title, chats."""
    if not records:
        return "no sessions\n"
    lines = [f"{len(records)} session{'s' if len(records) != 1 else ''}"]
    for record in records:
        status = record.status + (f": {record.error}" if record.error else "")
        lines += [
            "",
            record.uri,
            f"  title:     {record.title or '(untitled)'}",
            f"  provider:  {record.provider}",
            f"  status:    {status}",
            f"  workdir:   {record.workdir}",
            f"  created:   {record.created_at}",
            f"  modified:  {record.modified_at}",
        ]
        if record.import_conversation:
            lines.append(f"  imported:  {record.import_conversation}")
        for chat in record.chats:
            marks = []
            if chat.uri == record.default_chat:
                marks.append("default")
            if chat.active_turn:
                marks.append("a turn was running when the bridge stopped")
            suffix = f" ({', '.join(marks)})" if marks else ""
            lines.append(f"  chat:      {chat.uri} -> conversation {chat.conversation_id}{suffix}")
    return "\n".join(lines) + "\n"


def _import(args: argparse.Namespace, settings: Settings, out: TextIO) -> int:
    from ahp_bridge.config import provider_options

    name = args.provider
    settings.bridge.providers = [name]
    try:
        provider = providers.create(name, provider_options(settings)[name])
    except providers.UnknownProvider as exc:
        print(f"ahp-bridge: {exc}", file=sys.stderr)
        return 2 if exc.name == name else 1  # named on the command line, or a table's kind
    except ValueError as exc:
        print(f"ahp-bridge: {exc}", file=sys.stderr)
        return 1
    if not isinstance(provider, agentapi.Importer):
        print(
            f"ahp-bridge: provider {name!r} cannot list its earlier conversations, so there is "
            "nothing to import from it (copilot can)",
            file=sys.stderr,
        )
        return 1
    workdir = str(Path(args.workdir).resolve())
    catalog = Catalog.open(settings.data_dir())
    try:

        async def work() -> tuple[list[SessionRecord], list[str]]:
            async with provider:
                return await import_conversations(
                    catalog, provider, name, workdir, only=args.conversation, now=_now()
                )

        try:
            added, skipped = trio.run(work)
        except Exception as exc:  # the provider's own failure: one line, never a traceback
            cause = _leaf(exc)
            if not isinstance(cause, agentapi.AgentAPIError | CatalogError | OSError):
                raise
            print(f"ahp-bridge: importing from {name!r} failed: {cause}", file=sys.stderr)
            return 1
    finally:
        catalog.close()
    for line in skipped:
        out.write(f"skipped {line}\n")
    if not added:
        out.write(f"no conversations to import for {workdir}\n")
        return 1 if args.conversation else 0
    out.write(f"imported {len(added)} conversation{'s' if len(added) != 1 else ''}\n")
    for record in added:
        title = f"  {record.title}" if record.title else ""
        out.write(f"{record.uri} <- {record.import_conversation}{title}\n")
    return 0


def _leaf(exc: BaseException) -> BaseException:
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc


async def import_conversations(
    catalog: Catalog,
    provider: agentapi.Provider,
    name: str,
    workdir: str,
    *,
    only: str | None = None,
    now: str,
) -> tuple[list[SessionRecord], list[str]]:
    """Record the provider's earlier conversations for `workdir` as sessions.

    Returns the sessions added and a line per conversation skipped (already a session, or
    held open by another process). CatalogError when the provider cannot list them.
    """
    if not isinstance(provider, agentapi.Importer):
        raise CatalogError(
            f"provider {name!r} cannot list its earlier conversations (no Importer capability)"
        )
    previous = await provider.previous(workdir)
    in_use = set(await provider.in_use([p.id for p in previous])) if previous else set()
    known = {
        conversation
        for record in catalog.sessions()
        for conversation in [record.import_conversation, *(c.conversation_id for c in record.chats)]
        if conversation
    }
    added: list[SessionRecord] = []
    skipped: list[str] = []
    for conversation in previous:
        if only is not None and conversation.id != only:
            continue
        if conversation.id in known:
            skipped.append(f"{conversation.id}: already a session")
            continue
        if conversation.id in in_use:
            skipped.append(f"{conversation.id}: held open by another process")
            continue
        created = _iso(conversation.created_at) or now
        chat = ChatRecord(
            uri=f"ahp-chat:/{uuid.uuid4()}",
            conversation_id=conversation.id,
            created_at=created,
            modified_at=_iso(conversation.updated_at) or created,
        )
        record = SessionRecord(
            uri=f"ahp-session:/{uuid.uuid4()}",
            provider=name,
            workdir=conversation.workdir or workdir,
            created_at=created,
            modified_at=chat.modified_at,
            working_directories=[Path(conversation.workdir or workdir).as_uri()],
            title=clean_line(conversation.title),
            status=READY,
            default_chat=chat.uri,
            import_conversation=conversation.id,
            chats=[chat],
        )
        catalog.add_session(record)
        added.append(record)
    return added, skipped


def _iso(moment: datetime | None) -> str:
    return iso_from_ms(int(moment.timestamp() * 1000)) if moment is not None else ""


def _now() -> str:
    return iso_from_ms(int(datetime.now().timestamp() * 1000))
