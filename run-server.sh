#!/usr/bin/env bash
# Fork a detached gsmcpd on GS_MCP_PORT (default 8000) and return once it listens.
# Every GS_MCP_* / MCP_* setting in the environment passes through; extra arguments are
# `python -m gsmcpd start` ones (a lone PORT, --port, --host, --readonly, --trace, ...).  Relative
# paths in them are read from the caller's directory, wherever the script lives (those in
# a conf file, from the conf file's directory).
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
# Python splits PYTHONPATH at every ':' and has no escape for one: a checkout path holding
# one would become two wrong entries, one relative to the caller's directory (whose gsmcpd
# would then run). Refused, as install.sh refuses a path systemd cannot carry. A link's
# name holding one is no reason: its target's own path goes there, the one checked.
[[ $ROOT != *:* ]] || ROOT=$(cd "$ROOT" && pwd -P)
if [[ $ROOT == *:* ]]; then
    echo "run-server.sh: cannot run gsmcpd from '$ROOT': its path holds a ':', which PYTHONPATH cannot carry (Python splits it there); move the checkout, or clone it, to a path without one" >&2
    exit 2
fi
# install.sh writes its stamp only once pip succeeded: without it the install is missing
# or was cut short (no network, ^C), and gsmcpd would start without its dependencies.
# A stamp that no longer matches setup.cfg and pyproject.toml (a pull changed the
# dependencies; install.sh --stamp-ok compares them) is reinstalled over the same way.
if [[ ! -x $ROOT/.venv/bin/python ]]; then
    echo "no .venv this account can run yet: running ./install.sh first" >&2
    "$ROOT/install.sh"
elif [[ ! -f $ROOT/.venv/.gsmcpd-install-stamp ]]; then
    echo "the .venv install never completed: running ./install.sh first" >&2
    "$ROOT/install.sh"
elif ! "$ROOT/install.sh" --stamp-ok; then
    echo "setup.cfg or pyproject.toml changed since the last install: running ./install.sh first" >&2
    "$ROOT/install.sh"
elif [[ -w $ROOT/gsmcpd ]]; then
    # A pull that left setup.cfg alone may have changed gsmcpd's sources: the router, forkserver and
    # each trial import would compile them anew at every start (install.sh compiles them
    # otherwise). A no-op takes ~0.03 s; a checkout this account cannot write is left as
    # it is (README "systemd": install.sh after an update), a failure left to the imports.
    # -P, as for the start below: a compileall.py in the caller's directory ran instead.
    "$ROOT/.venv/bin/python" -P -m compileall -q "$ROOT/gsmcpd" >/dev/null 2>&1 || true
fi
# The checkout first on the path, as if run from it (its examples/ and its gsmcpd); -P keeps
# the caller's directory off it, where another checkout's gsmcpd (or any directory named
# gsmcpd) would otherwise be run instead of this one.
export PYTHONPATH=$ROOT${PYTHONPATH:+:$PYTHONPATH}
exec "$ROOT/.venv/bin/python" -P -m gsmcpd start "$@"
