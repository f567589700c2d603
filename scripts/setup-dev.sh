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
# Byte-compile the project once: where the environment forbids writing bytecode
# (PYTHONDONTWRITEBYTECODE), every bridge, agent and test process would otherwise compile
# these sources again (about 0.25 s of CPU each, hundreds of processes in a test run).
.venv/bin/python -m compileall -q src adapters tests bench scripts >/dev/null
if [ -f scripts/install-copilot-cli.sh ]; then
  bash scripts/install-copilot-cli.sh
fi
if [ -f scripts/install-acp-agents.sh ]; then
  bash scripts/install-acp-agents.sh
fi
