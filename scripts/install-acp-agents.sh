#!/usr/bin/env bash
# Install the pinned ACP agents the acp provider's real-agent tests drive into a project-local
# prefix (.tools/acp). Claude Agent (npm @zed-industries/claude-agent-acp, which brings Claude
# Code itself as @anthropic-ai/claude-agent-sdk): the tests run it with `node` against a scripted
# Anthropic API on 127.0.0.1, so it never needs an account or network. Codex's (the block below
# it) likewise. Idempotent: does nothing when the pinned versions are already there. Prints each
# agent's entry, one a line.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
PREFIX="${ACP_AGENTS_PREFIX:-$ROOT/.tools/acp}"
command -v node >/dev/null || { echo "install-acp-agents: node is required" >&2; exit 1; }

# --- Claude Agent: @zed-industries/claude-agent-acp ------------------------------------------------
CLAUDE_VERSION="${CLAUDE_AGENT_ACP_VERSION:-0.23.1}"
CLAUDE_DIR="$PREFIX/node_modules/@zed-industries/claude-agent-acp"
CLAUDE_ENTRY="$CLAUDE_DIR/dist/index.js"

claude_installed_version() {
  [ -f "$CLAUDE_DIR/package.json" ] || return 0
  node -e 'process.stdout.write(require(process.argv[1]).version)' "$CLAUDE_DIR/package.json"
}

if [ "$(claude_installed_version)" != "$CLAUDE_VERSION" ] || [ ! -f "$CLAUDE_ENTRY" ]; then
  command -v npm >/dev/null || { echo "install-acp-agents: npm is required" >&2; exit 1; }
  mkdir -p "$PREFIX"
  echo "install-acp-agents: installing @zed-industries/claude-agent-acp@$CLAUDE_VERSION into $PREFIX" >&2
  npm install --prefix "$PREFIX" --no-audit --no-fund --loglevel=error \
    --save-exact "@zed-industries/claude-agent-acp@$CLAUDE_VERSION" >&2
fi
[ -f "$CLAUDE_ENTRY" ] || { echo "install-acp-agents: $CLAUDE_ENTRY missing after install" >&2; exit 1; }
echo "$CLAUDE_ENTRY"
# --- end Claude Agent ------------------------------------------------------------------------------

# --- Codex: @zed-industries/codex-acp ------------------------------------------------------------
# A native binary (Rust, Codex itself built in) from the platform package npm picks among its
# optionalDependencies (@zed-industries/codex-acp-linux-x64 on Linux x86-64). The tests run it directly
# against a scripted OpenAI Responses API on 127.0.0.1, with CODEX_HOME in a scratch directory.
CODEX_VERSION="${CODEX_ACP_VERSION:-0.16.0}"
CODEX_DIR="$PREFIX/node_modules/@zed-industries/codex-acp"
CODEX_PLATFORM="$(node -p 'process.platform + "-" + process.arch')"
CODEX_BIN="$PREFIX/node_modules/@zed-industries/codex-acp-$CODEX_PLATFORM/bin/codex-acp"

codex_installed_version() {
  [ -f "$CODEX_DIR/package.json" ] || return 0
  node -e 'process.stdout.write(require(process.argv[1]).version)' "$CODEX_DIR/package.json"
}

if [ "$(codex_installed_version)" != "$CODEX_VERSION" ] || [ ! -x "$CODEX_BIN" ]; then
  command -v npm >/dev/null || { echo "install-acp-agents: npm is required" >&2; exit 1; }
  mkdir -p "$PREFIX"
  echo "install-acp-agents: installing @zed-industries/codex-acp@$CODEX_VERSION into $PREFIX" >&2
  npm install --prefix "$PREFIX" --no-audit --no-fund --loglevel=error \
    --save-exact "@zed-industries/codex-acp@$CODEX_VERSION" >&2
fi
[ -x "$CODEX_BIN" ] || { echo "install-acp-agents: $CODEX_BIN missing after install" >&2; exit 1; }
echo "$CODEX_BIN"
# --- end Codex -------------------------------------------------------------------------------------
# --- Gemini CLI (npm @google/gemini-cli), run as `gemini --acp` -----------------------------------
# Its ACP mode is the same CLI started with --acp; the tests run its bundled entry with `node`
# against a scripted Gemini API on 127.0.0.1 (GOOGLE_GEMINI_BASE_URL), settings in a scratch HOME.
GEMINI_VERSION="${GEMINI_CLI_VERSION:-0.61.0}"
GEMINI_DIR="$PREFIX/node_modules/@google/gemini-cli"
GEMINI_PKG_JSON="$GEMINI_DIR/package.json"
gemini_installed_version() {
  [ -f "$GEMINI_PKG_JSON" ] || return 0
  node -e 'process.stdout.write(require(process.argv[1]).version)' "$GEMINI_PKG_JSON"
}
gemini_entry() {
  node -e 'const p=require(process.argv[1]); const b=typeof p.bin==="string"?p.bin:p.bin.gemini;
    process.stdout.write(require("path").resolve(require("path").dirname(process.argv[1]), b))' \
    "$GEMINI_PKG_JSON"
}
if [ "$(gemini_installed_version)" != "$GEMINI_VERSION" ] || [ ! -f "$(gemini_entry 2>/dev/null)" ]; then
  command -v npm >/dev/null || { echo "install-acp-agents: npm is required" >&2; exit 1; }
  mkdir -p "$PREFIX"
  echo "install-acp-agents: installing @google/gemini-cli@$GEMINI_VERSION into $PREFIX" >&2
  npm install --prefix "$PREFIX" --no-audit --no-fund --loglevel=error \
    --save-exact "@google/gemini-cli@$GEMINI_VERSION" >&2
fi
[ -f "$(gemini_entry)" ] || { echo "install-acp-agents: gemini-cli's entry missing after install" >&2; exit 1; }
# --- end Gemini CLI --------------------------------------------------------------------------------
