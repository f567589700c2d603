#!/usr/bin/env bash
# Install the pinned ACP agent the acp provider's real-agent tests drive: Claude Code's ACP agent
# (npm @zed-industries/claude-code-acp, which brings Claude Code itself as
# @anthropic-ai/claude-agent-sdk) into a project-local prefix (.tools/acp). The tests run it with
# `node` against a scripted Anthropic API on 127.0.0.1, so it never needs an account or network.
# Idempotent: does nothing when the pinned version is already there. Prints the entry script.
set -euo pipefail
VERSION="${CLAUDE_CODE_ACP_VERSION:-0.16.2}"
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
PREFIX="${ACP_AGENTS_PREFIX:-$ROOT/.tools/acp}"
PKG_DIR="$PREFIX/node_modules/@zed-industries/claude-code-acp"
ENTRY="$PKG_DIR/dist/index.js"

installed_version() {
  [ -f "$PKG_DIR/package.json" ] || return 0
  node -e 'process.stdout.write(require(process.argv[1]).version)' "$PKG_DIR/package.json"
}

if [ "$(installed_version)" != "$VERSION" ] || [ ! -f "$ENTRY" ]; then
  command -v npm >/dev/null || { echo "install-acp-agents: npm is required" >&2; exit 1; }
  mkdir -p "$PREFIX"
  echo "install-acp-agents: installing @zed-industries/claude-code-acp@$VERSION into $PREFIX" >&2
  npm install --prefix "$PREFIX" --no-audit --no-fund --loglevel=error \
    --save-exact "@zed-industries/claude-code-acp@$VERSION" >&2
fi
[ -f "$ENTRY" ] || { echo "install-acp-agents: $ENTRY missing after install" >&2; exit 1; }
echo "$ENTRY"
