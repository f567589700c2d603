"""The README's commands are valid as written: each names the virtualenv's `ahp-bridge` (it is
not on PATH on a fresh machine) and parses with the real command line."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

from ahp_bridge import cli

README = Path(__file__).resolve().parents[2] / "README.md"


def commands() -> list[list[str]]:
    blocks = re.findall(r"```sh\n(.*?)```", README.read_text(), re.S)
    out = []
    for block in blocks:
        for line in block.splitlines():
            words = shlex.split(line, comments=True)
            while words and re.fullmatch(r"[A-Z_]+=.*", words[0]):
                words.pop(0)  # VAR=value before the command
            if words[-1:] == ["&"]:
                words.pop()  # run in the background
            if words and words[0].endswith("ahp-bridge"):
                out.append(words)
    return out


def test_every_readme_command_uses_the_virtualenv_and_parses() -> None:
    found = commands()
    assert len(found) >= 8
    parser = cli.build_parser()
    for words in found:
        assert words[0] == ".venv/bin/ahp-bridge", words
        argv, _ = cli._route(words[1:], parser)
        if argv and argv[0] == "conformance":
            continue  # its own parser (tests/unit/test_conformance_cli.py)
        if "--help" in argv:
            continue
        parser.parse_args(argv)  # UsageError (exit 2) on any mistake
