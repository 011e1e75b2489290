#!/usr/bin/env bash
# Stop the gsmcpd on PORT (default GS_MCP_PORT, else 8000) by its pidfile: SIGTERM, then
# SIGKILL if it has not exited after 30 s, longer than the longest graceful stop (25 s;
# --timeout SECONDS to change).  Exit 0 when
# stopped, 1 when nothing was running there.  Relative paths in flags and
# the environment are the caller's; in a conf file, the conf file's directory's.
set -euo pipefail
# An exported CDPATH makes cd print the directory it found, into ROOT or our output.
unset CDPATH
# The checkout is the script's own directory, reached through any link to it (one on PATH).
script=$0
# `bash NAME` (no '/' in it) reads ./NAME, or when there is none the first readable file NAME
# on PATH, executable or not (an empty entry is the current directory), and leaves $0 the bare
# NAME: the file it read is found again here, by the same rule, to be followed (`type -P`
# took the first executable one, another checkout's link behind a plain copy read first).
# Read from stdin (`bash -s < NAME`), no file is named ($0 is the shell's): the caller's directory.
if [[ $script != */* && ! -e $script && -n ${BASH_SOURCE[0]-} ]]; then
    path_left=$PATH:
    while [[ -n $path_left ]]; do
        path_dir=${path_left%%:*}
        path_left=${path_left#*:}
        if [[ -f ${path_dir:-.}/$script && -r ${path_dir:-.}/$script ]]; then
            script=${path_dir:-.}/$script
            break
        fi
    done
fi
while [[ -L $script ]]; do
    target=$(readlink -- "$script")
    # A relative one from the link's own directory, as the system reads it: cd's '..' would
    # climb the words of a linked directory on the way (~/bin -> dotfiles/bin) instead.
    [[ $target == /* ]] || target=$(cd -P -- "$(dirname -- "$script")" && pwd)/$target
    script=$target
done
ROOT=$(cd "$(dirname "$script")" && pwd)
# A checkout path holding ':' cannot go on PYTHONPATH: refused, as run-server.sh says why
# (a link's name holding one, its target's path none: that path goes there).
[[ $ROOT != *:* ]] || ROOT=$(cd "$ROOT" && pwd -P)
if [[ $ROOT == *:* ]]; then
    echo "stop-server.sh: cannot run gsmcpd from '$ROOT': its path holds a ':', which PYTHONPATH cannot carry (Python splits it there); move the checkout, or clone it, to a path without one" >&2
    exit 2
fi
# Another account's .venv (or a link into a home this one cannot enter) is said as that,
# by install.sh's one check, not called missing.
if [[ ! -x $ROOT/.venv/bin/python ]] && problem=$("$ROOT/install.sh" --foreign-venv); then
    echo "stop-server.sh: $problem" >&2
    exit 1
fi
[[ -x $ROOT/.venv/bin/python ]] || { echo "stop-server.sh: no $ROOT/.venv; nothing was started from this checkout (run ./run-server.sh)" >&2; exit 1; }
# -P: this checkout's gsmcpd and its state dir, never a gsmcpd in the caller's directory.
export PYTHONPATH=$ROOT${PYTHONPATH:+:$PYTHONPATH}
exec "$ROOT/.venv/bin/python" -P -m gsmcpd stop "$@"
