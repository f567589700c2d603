"""`ahp-bridge sessions list|forget`: the operator's view of the session catalog.

`list` reads the catalog without taking the bridge's lock (it works while a bridge runs);
`forget URI` takes the lock, so it refuses while a bridge serves the same data directory
(that bridge would keep announcing the session). Forgetting removes the bridge's record only:
the provider's conversation is left alone.
"""

from __future__ import annotations

import argparse
import sys
from typing import TextIO

from ahp_bridge.config import Settings
from ahp_bridge.host.catalog import Catalog, CatalogError, SessionRecord


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
