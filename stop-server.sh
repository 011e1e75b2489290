#!/usr/bin/env bash
# Stop the gsmcpd on PORT (default GS_MCP_PORT, else 8000) by its pidfile: SIGTERM, then
# SIGKILL if it has not exited after 10 s (--timeout SECONDS to change).  Exit 0 when
# stopped, 1 when nothing was running there.  Relative paths in flags and
# the environment are the caller's; in a conf file, the conf file's directory's.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")" && pwd)
# As install.sh's foreign_venv_problem (this script runs no python to share it): the .venv
# itself may be a link into a home this account cannot enter (not a link to nothing: the
# nearest of its target's directories that exists is one this account cannot search).
closed_link() {
    local path
    path=$(readlink -m -- "$1") || return 1
    while [[ ! -e $path && $path != / ]]; do path=$(dirname -- "$path"); done
    [[ ! -x $path ]]
}
if [[ ! -x $ROOT/.venv/bin/python && ! -O $ROOT/.venv ]] \
        && { [[ -e $ROOT/.venv ]] || { [[ -L $ROOT/.venv ]] && closed_link "$ROOT/.venv"; }; }; then
    echo "stop-server.sh: $ROOT/.venv/bin/python is another account's, and $(id -un) cannot run it:" \
         "run this as that account (or root), or from a checkout of your own" >&2
    exit 1
fi
[[ -x $ROOT/.venv/bin/python ]] || { echo "stop-server.sh: no $ROOT/.venv; nothing was started from this checkout (run ./run-server.sh)" >&2; exit 1; }
# -P: this checkout's gsmcpd and its state dir, never a gsmcpd in the caller's directory.
export PYTHONPATH=$ROOT${PYTHONPATH:+:$PYTHONPATH}
exec "$ROOT/.venv/bin/python" -P -m gsmcpd stop "$@"
