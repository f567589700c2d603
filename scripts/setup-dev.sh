#!/usr/bin/env bash
# Set up a development environment from scratch: a virtualenv with the project and its dev
# extras, the pinned Copilot CLI from npm (used by the copilot provider's tests) and the pinned
# ACP agents from npm (Claude Agent, Codex, Gemini CLI: used by the acp provider's tests).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$PY" -m venv .venv
.venv/bin/python -m pip install -q --upgrade pip
.venv/bin/python -m pip install -q -e '.[dev]'
if [ -f scripts/install-copilot-cli.sh ]; then
  bash scripts/install-copilot-cli.sh
fi
if [ -f scripts/install-acp-agents.sh ]; then
  bash scripts/install-acp-agents.sh
fi
# Byte-compile the project once: where the environment forbids writing bytecode
# (PYTHONDONTWRITEBYTECODE), every bridge, agent and test process would otherwise compile
# these sources again (about 0.25 s of CPU each, hundreds of processes in a test run).
.venv/bin/python -m compileall -q src adapters tests bench scripts >/dev/null
# And pytest's rewritten test modules (its assertion rewriting is cached beside them only when
# bytecode may be written): one collection here spares every test worker rewriting them all.
env -u PYTHONDONTWRITEBYTECODE .venv/bin/python -m pytest --collect-only -q -p no:cacheprovider \
  >/dev/null
