#!/usr/bin/env bash
# Stop the gsmcpd on PORT (default GS_MCP_PORT, else 8000) by its pidfile: SIGTERM, then
# SIGKILL if it has not exited after 10 s (--timeout SECONDS to change).  Exit 0 when
# stopped, 1 when nothing was running there.
set -euo pipefail
cd "$(dirname "$0")"
exec .venv/bin/python -m gsmcpd stop "$@"
