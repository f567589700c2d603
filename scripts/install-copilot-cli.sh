#!/usr/bin/env bash
# Install the pinned GitHub Copilot CLI from npm into a project-local prefix (.tools/copilot).
# The copilot provider and its tests point the SDK at this binary explicitly, so the SDK never
# downloads a runtime itself. Idempotent: does nothing when the pinned version is already there.
# Prints the path of the native CLI binary on stdout.
#
# This script is the one place that says where the CLI goes: the tests ask it
# (`install-copilot-cli.sh --print-path` prints the binary's path and installs nothing).
set -euo pipefail
VERSION="${COPILOT_CLI_VERSION:-1.0.102}"
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
PREFIX="${COPILOT_CLI_PREFIX:-$ROOT/.tools/copilot}"
PKG_DIR="$PREFIX/node_modules/@github/copilot"

# npm installs the native binary as the optional dependency for this platform.
case "$(uname -s)" in
  Linux) PLATFORM=linux ;;
  Darwin) PLATFORM=darwin ;;
  *) PLATFORM="$(uname -s | tr '[:upper:]' '[:lower:]')" ;;
esac
case "$(uname -m)" in
  x86_64 | amd64) ARCH=x64 ;;
  aarch64 | arm64) ARCH=arm64 ;;
  *) ARCH="$(uname -m)" ;;
esac
BIN="$PREFIX/node_modules/@github/copilot-$PLATFORM-$ARCH/copilot"

if [ "${1:-}" = "--print-path" ]; then
  echo "$BIN"
  exit 0
fi

installed_version() {
  [ -f "$PKG_DIR/package.json" ] || return 0
  node -e 'process.stdout.write(require(process.argv[1]).version)' "$PKG_DIR/package.json"
}

if [ "$(installed_version)" != "$VERSION" ] || [ ! -x "$BIN" ]; then
  command -v npm >/dev/null || { echo "install-copilot-cli: npm is required" >&2; exit 1; }
  mkdir -p "$PREFIX"
  echo "install-copilot-cli: installing @github/copilot@$VERSION into $PREFIX" >&2
  npm install --prefix "$PREFIX" --no-audit --no-fund --loglevel=error \
    --save-exact "@github/copilot@$VERSION" >&2
fi
[ -x "$BIN" ] || { echo "install-copilot-cli: $BIN missing after install" >&2; exit 1; }
echo "$BIN"
