#!/usr/bin/env bash
# Fork a detached gsmcpd on GS_MCP_PORT (default 8000) and return once it listens.
# Every GS_MCP_* / MCP_* setting in the environment passes through; extra arguments are
# `python -m gsmcpd start` flags (--port, --host, --readonly, --trace, ...).
set -euo pipefail
cd "$(dirname "$0")"
if [[ ! -x .venv/bin/python ]]; then
    echo "no .venv yet: running ./install.sh first" >&2
    ./install.sh
fi
exec .venv/bin/python -m gsmcpd start "$@"
