#!/usr/bin/env bash
# gsmcpd installer.
#   ./install.sh            create .venv if missing, install gsmcpd into it (editable)
#   ./install.sh --test     ...plus the test extra, then run the whole pytest suite
#   ./install.sh --check [PORT] [flags]  verify the environment (as `gsmcpd check`), change nothing, print OK or the problem
#   ./install.sh --systemd  install the gsmcpd@.service unit and a service user (root)
#   ./install.sh --systemd-unit  print the unit --systemd installs, pointed at this checkout
#   ./install.sh --stamp-ok exit 0 if the install is current (the stamp matches), else 1
#   ./install.sh --foreign-venv  exit 0 saying why if .venv is another account's, else 1
#   ./install.sh --check-service-user [USER]  can USER (default gsmcpd) run the unit, or a mapped account its trial imports? (root)
# Idempotent: pip is skipped while setup.cfg and pyproject.toml hash to the recorded stamp.
set -euo pipefail
# An exported CDPATH makes cd print the directory it found, into ROOT or our output.
unset CDPATH
CALLER=$PWD   # --check reads relative paths in settings from here, as run-server.sh does
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
cd "$(dirname "$script")"
ROOT=$PWD
# PYTHONPATH splits at every ':' (check_environment): a link's name holding one, its
# target's own path none, is run by that path, as run-server.sh does.
[[ $ROOT != *:* ]] || ROOT=$(pwd -P)
VENV=$ROOT/.venv
STAMP=$VENV/.gsmcpd-install-stamp
PYTHON_GIVEN=${PYTHON:+yes}   # PYTHON makes a missing .venv only: one kept is said so
PYTHON=${PYTHON:-python3}
SERVICE_USER=gsmcpd
UNIT_DIR=/etc/systemd/system
SITE_DIR=/etc/gsmcpd

die() { echo "install.sh: $*" >&2; exit 1; }

usage() { sed -n '2,11p' "$ROOT/$(basename "$script")" | sed 's/^# \{0,1\}//'; }   # $0 may be relative to the caller, or a link

# Whether link $1 leads past a directory this account cannot search (another account's
# home), not to nothing (a removed venv): the nearest of its target's directories that
# exists decides.
closed_link() {
    local path
    path=$(readlink -m -- "$1") || return 1
    while [[ ! -e $path && $path != / ]]; do path=$(dirname -- "$path"); done
    [[ ! -x $path ]]
}

# Another account's .venv (a checkout run by someone not its owner) whose python this one
# cannot run, often a link into its owner's home: never made again over, but said.
foreign_venv_problem() {
    [[ ! -x $VENV/bin/python && ! -O $VENV ]] || return 1
    [[ -e $VENV ]] || { [[ -L $VENV ]] && closed_link "$VENV"; } || return 1
    echo "$VENV/bin/python is another account's, and $(id -un) cannot run it: run this as" \
         "that account (or root), or from a checkout of your own"
}

python_version() { "$1" -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null; }

ensure_venv() {
    if [[ -x $VENV/bin/python ]]; then
        local have want
        have=$(python_version "$VENV/bin/python") || true
        want=$(python_version "$PYTHON") || true
        [[ -z $PYTHON_GIVEN || ( -n $have && $have == "$want" ) ]] ||
            echo "install.sh: keeping the existing $VENV (Python ${have:-unknown}): PYTHON=$PYTHON" \
                 "(${want:+Python }${want:-which does not run}) only makes a missing one; remove $VENV" \
                 "first to make it with that python" >&2
        return 0
    fi
    local foreign
    foreign=$(foreign_venv_problem) && die "$foreign"
    "$PYTHON" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null \
        || die "$PYTHON is missing or older than 3.11 (set PYTHON=/path/to/python3.11)"
    echo "creating $VENV"
    "$PYTHON" -m venv "$VENV"
}

package_hash() { cat setup.cfg pyproject.toml | sha256sum | cut -d' ' -f1; }

# $1: "base" or "test".  Whether the stamp records an install of these extras for the
# current setup.cfg and pyproject.toml; a test install also satisfies a base one.
stamp_ok() {
    local extras=$1 hash recorded=""
    hash=$(package_hash)
    [[ -f $STAMP ]] && recorded=$(cat "$STAMP")
    [[ $recorded == "$hash test" || ( $extras == base && $recorded == "$hash base" ) ]]
}

# Byte-compiled once here: a process that may not write __pycache__ (the service account,
# PYTHONDONTWRITEBYTECODE, a worker's -B, so each deletion's trial import) compiled every
# gsmcpd module anew at each start otherwise (a clean clone's suite ran a minute longer).
# Up-to-date files are skipped; a failure is never fatal (imports compile them then).
compile_sources() {
    "$VENV/bin/python" -m compileall -q "$ROOT/gsmcpd" >/dev/null ||
        echo "could not byte-compile $ROOT/gsmcpd; gsmcpd compiles its modules as it imports them" >&2
}

# $1: "base" or "test".
install_package() {
    local extras=$1 hash
    if stamp_ok "$extras"; then
        echo "gsmcpd package up to date (stamp $STAMP)"
        compile_sources   # a pull may have changed them
        return 0
    fi
    hash=$(package_hash)
    local spec=.
    [[ $extras == test ]] && spec=".[test]"
    echo "installing gsmcpd ($extras) into $VENV"
    local isolation=()
    # Build in the venv itself when it can (offline-friendly); otherwise pip's isolated
    # build fetches setuptools and wheel.
    "$VENV/bin/python" -c 'import setuptools, wheel' 2>/dev/null && isolation=(--no-build-isolation)
    "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check \
        "${isolation[@]}" -e "$spec"
    echo "$hash $extras" > "$STAMP"
    compile_sources
}

# The MCP conformance suite and the Node.js 22 it needs go into an ignored cache folder
# (.cache/conformance), pinned by tests/conformance/package.json; skipped when installed.
# Not fatal: without it tests/test_conformance.py fails and says why.
install_conformance_suite() {
    bash "$ROOT/tests/conformance/install.sh" "$ROOT/.cache/conformance" \
        || echo "install.sh: MCP conformance suite not installed; tests/test_conformance.py will fail" >&2
}

# --test: the suite needs nothing from the venv, so it installs (npm) while pip does; its
# output is held and said once pip is done, in the order a sequential install said it.
start_conformance_install() {
    CONFORMANCE_OUT=$(mktemp) CONFORMANCE_ERR=$(mktemp)
    # Its own process group (set -m), so that all of it can be killed: the job's shell
    # alone would leave the suite's install.sh and its npm running.
    set -m
    install_conformance_suite < /dev/null > "$CONFORMANCE_OUT" 2> "$CONFORMANCE_ERR" &
    CONFORMANCE_JOB=$!
    set +m
    # A failed pip exits before the suite's install is said: it is not left running behind.
    trap 'kill -- -"$CONFORMANCE_JOB" 2>/dev/null; rm -f "$CONFORMANCE_OUT" "$CONFORMANCE_ERR"' EXIT
}

finish_conformance_install() {
    wait "$CONFORMANCE_JOB" || true   # never fatal: install_conformance_suite said why
    cat "$CONFORMANCE_OUT"
    cat "$CONFORMANCE_ERR" >&2
    rm -f "$CONFORMANCE_OUT" "$CONFORMANCE_ERR"
}

run_tests() {
    finish_conformance_install
    echo "running the test suite"
    # Three processes, each test file whole in one (its module fixtures set up once): the
    # suite mostly waits on daemons, signals and graces, so on two cores three at once take
    # half the time one does.
    exec "$VENV/bin/python" -m pytest -q -n 3 --dist loadfile
}

check_environment() {
    local foreign
    if foreign=$(foreign_venv_problem); then
        echo "venv           $VENV   <-- $foreign"
        echo "PROBLEM: venv: $foreign"
        exit 1
    fi
    if [[ ! -x $VENV/bin/python ]]; then
        echo "venv           $VENV missing"
        echo "PROBLEM: no .venv; run ./install.sh"
        exit 1
    fi
    if [[ $ROOT == *:* ]]; then   # as run-server.sh refuses it: PYTHONPATH splits at every ':'
        echo "checkout       $ROOT   <-- its path holds a ':', which PYTHONPATH cannot carry"
        echo "PROBLEM: checkout: its path holds a ':', which PYTHONPATH cannot carry (Python splits it there); move the checkout, or clone it, to a path without one"
        exit 2
    fi
    cd "$CALLER"
    export PYTHONPATH=$ROOT${PYTHONPATH:+:$PYTHONPATH}
    # -P: not a gsmcpd in the caller's directory. A port or flags are check's (it ignored them).
    exec "$VENV/bin/python" -P -m gsmcpd check "$@"
}

# $1: a user, $2: a path. "PATH: why" for the first step on the way to running $2 that
# the user cannot take (a directory it cannot search, the file it cannot execute), each
# symbolic link followed as the kernel does; nothing when it can run it.
exec_blocker() {
    local user=$1 dir="" part links=0
    local -a rest parts
    IFS=/ read -ra rest <<< "$2"
    while (( ${#rest[@]} )); do
        part=${rest[0]}
        rest=("${rest[@]:1}")
        case $part in
            ""|.) continue ;;
            ..)   dir=${dir%/*}; continue ;;
        esac
        if [[ -L $dir/$part ]]; then
            (( ++links <= 40 )) || { echo "$dir/$part: too many levels of symbolic links"; return; }
            local target
            target=$(readlink "$dir/$part")
            [[ $target == /* ]] && dir=""
            IFS=/ read -ra parts <<< "$target"
            rest=("${parts[@]}" "${rest[@]}")
            continue
        fi
        dir=$dir/$part
        if [[ ! -e $dir ]]; then
            echo "$dir: missing"
            return
        fi
        if (( ${#rest[@]} )) && ! runuser -u "$user" -- test -x "$dir"; then
            echo "$dir: a directory $user cannot search"
            return
        fi
    done
    runuser -u "$user" -- test -x "$dir" || echo "$dir: not executable by $user"
}

# $1: the service user, or an account MCP_USER_MAP maps users to. Whether it can read the
# checkout and run .venv/bin/python (the unit's ExecStart; a deletion's trial import in a
# per-user session), saying what stops it on stderr. The venv's python is a link to the
# python that made it, often in a home directory only its owner may enter: the unit
# would fail at start with status 203/EXEC, naming nothing; a mapped account's sessions
# only note that the trial import was not tried.
check_service_user() {
    local user=$1 ok=0 blocker effect
    if ! id -u "$user" >/dev/null 2>&1; then
        # Checked before the unit was installed: say what makes the unit's account.
        if [[ $user == "$SERVICE_USER" ]]; then
            echo "warning: no user $user: sudo ./install.sh --systemd creates it" >&2
        else
            echo "warning: no user $user" >&2
        fi
        return 1
    fi
    if ! runuser -u "$user" -- test -r "$ROOT/gsmcpd/__init__.py"; then
        echo "warning: $user cannot read $ROOT; install the checkout somewhere it can (e.g. /opt/gsmcpd)" >&2
        ok=1
    fi
    if ! runuser -u "$user" -- test -x "$VENV/bin/python"; then
        blocker=$(exec_blocker "$user" "$VENV/bin/python")
        # The unit runs as $SERVICE_USER (root under the per-user drop-in): another account is
        # checked as one MCP_USER_MAP maps users to, whose sessions start that python for a
        # deletion's trial import.
        if [[ $user == "$SERVICE_USER" ]]; then
            effect="so the unit would fail at start (status 203/EXEC)"
        else
            effect="so a deletion's trial import in the sessions of users MCP_USER_MAP maps to $user is not"
            effect+=" tried (importNotTried; a unit run as $user would fail at start, status 203/EXEC)"
        fi
        echo "warning: $user cannot run $VENV/bin/python, $effect:" \
             "${blocker:-$VENV/bin/python: not executable by $user}. Let $user" \
             "reach it, or make the venv again from a python (3.11 or newer) it can run:" \
             "rm -r $VENV && PYTHON=/usr/bin/python3.11 $ROOT/install.sh --systemd" >&2
        ok=1
    fi
    (( ok == 0 )) && echo "$user can read $ROOT and run $VENV/bin/python"
    return $ok
}

# The unit with /opt/gsmcpd replaced by this checkout, written as systemd reads each
# line: `%` doubled (a specifier: `%i` in a path became the port), ExecStart's path
# quoted when it holds a space (words split there), its argv[0] apart with `$` doubled
# when it holds a `$` (a variable there: `${HOME}`), the Documentation URL
# percent-encoded. A bash substitution takes the replacement as written (sed's
# `s#...#$ROOT#` broke on `#`, `&` and `\`). systemd refuses to run a program whose
# path holds a quote or `\`, and no unit line holds a control character (a newline).
# systemd strips the spaces that end a line: WorkingDirectory= would name another directory.
systemd_unit() {
    [[ $ROOT != *[[:cntrl:]\\\"\']* ]] ||
        die "systemd cannot run a program under $(printf '%q' "$ROOT"): its path holds a quote, a backslash or a control character; move the checkout (to /opt/gsmcpd)"
    # systemd ignores a unit line that is not UTF-8 ("not UTF-8 clean"): no ExecStart=
    systemd_utf8 "$ROOT" ||
        die "systemd cannot run a program under $(printf '%q' "$ROOT"): its path is not UTF-8 as systemd reads it (a malformed byte sequence, a code point past U+10FFFF, a UTF-16 surrogate or a noncharacter such as U+FFFE), and systemd ignores a unit line that is not; move the checkout (to /opt/gsmcpd)"
    [[ $ROOT != *" " ]] ||
        die "systemd cannot run gsmcpd from '$ROOT': its path ends in a space, which systemd strips from the unit's WorkingDirectory= line; move the checkout (to /opt/gsmcpd)"
    local unit path=${ROOT//%/%%} program
    program=$path/.venv/bin/python
    [[ $ROOT == *[[:space:]]* ]] && program=\"$program\"
    # systemd expands `${NAME}` and `$$` in each word of the command, argv[0] too, though
    # not in the program's own path; and python finds its venv from argv[0]. So a path
    # holding `$` gets an argv[0] of its own (`@program argv0`), each `$` doubled there.
    [[ $ROOT == *\$* ]] && program="@$program ${program//\$/\$\$}"
    unit=$(<systemd/gsmcpd@.service)
    unit=${unit//\/opt\/gsmcpd\/.venv\/bin\/python/"$program"}
    unit=${unit//file:\/\/\/opt\/gsmcpd/"file://$(url_path)"}
    printf '%s\n' "${unit//\/opt\/gsmcpd/"$path"}"
}

# Whether $1 is UTF-8 as systemd reads a unit line (utf8_is_valid): each character in its
# shortest encoding, none past U+10FFFF, no UTF-16 surrogate, no noncharacter (U+FDD0 to
# U+FDEF, U+FFFE and U+FFFF of each plane). glibc's iconv took the last three, and ran only
# where installed. Bytes matched as bytes (LC_ALL=C); a NUL cannot be in a bash string.
systemd_utf8() {
    local LC_ALL=C one=$'[\x01-\x7f]' c=$'[\x80-\xbf]' two three four
    two=$'[\xc2-\xdf]'$c
    three=$'\xe0[\xa0-\xbf]'$c$'|[\xe1-\xec\xee]'$c$c$'|\xed[\x80-\x9f]'$c$'|\xef[\x80-\xb6\xb8-\xbe]'$c
    three+=$'|\xef\xb7[\x80-\x8f\xb0-\xbf]|\xef\xbf[\x80-\xbd]'   # not U+FDD0..U+FDEF, U+FFFE, U+FFFF
    # Four bytes: U+10000..U+10FFFF; the plane's last two (second byte 0x8f, 0x9f, 0xaf or
    # 0xbf, then 0xbf 0xbe or 0xbf 0xbf) are noncharacters.
    four=$'(\xf0[\x90-\x9e\xa0-\xae\xb0-\xbe]|[\xf1-\xf3][\x80-\x8e\x90-\x9e\xa0-\xae\xb0-\xbe]|\xf4[\x80-\x8e])'$c$c
    four+=$'|(\xf0[\x9f\xaf\xbf]|[\xf1-\xf3][\x8f\x9f\xaf\xbf]|\xf4\x8f)([\x80-\xbe]'$c$'|\xbf[\x80-\xbd])'
    [[ $1 =~ ^($one|$two|$three|$four)*$ ]]   # each part unquoted: a quoted one matches literally
}

# The checkout's path as a URL's (RFC 3986: each byte but an unreserved one or `/`
# percent-encoded), its `%` doubled for systemd's specifiers.
url_path() {
    local LC_ALL=C i byte encoded=
    for (( i = 0; i < ${#ROOT}; i++ )); do
        byte=${ROOT:i:1}
        case $byte in
            [A-Za-z0-9/._~-]) encoded+=$byte ;;
            *) encoded+=$(printf '%%%%%02X' "'$byte") ;;
        esac
    done
    printf '%s' "$encoded"
}

install_systemd() {
    [[ $(id -u) -eq 0 ]] || die "--systemd needs root: it creates the '$SERVICE_USER' user and installs $UNIT_DIR/gsmcpd@.service"
    command -v systemctl >/dev/null || die "systemctl not found: this host does not run systemd"
    local unit
    unit=$(systemd_unit)   # first: a checkout systemd cannot run from changes nothing
    ensure_venv
    install_package base
    if ! id -u "$SERVICE_USER" >/dev/null 2>&1; then
        useradd --system --home-dir /var/lib/gsmcpd --no-create-home \
            --shell /usr/sbin/nologin "$SERVICE_USER"
        echo "created system user $SERVICE_USER"
    fi
    if [[ ! -f $UNIT_DIR/gsmcpd@.service || $(cat "$UNIT_DIR/gsmcpd@.service") != "$unit" ]]; then
        printf '%s\n' "$unit" > "$UNIT_DIR/gsmcpd@.service"
        echo "installed $UNIT_DIR/gsmcpd@.service"
    fi
    install -d -m 0755 "$SITE_DIR"
    if [[ ! -f $SITE_DIR/gsmcpd.env ]]; then
        printf '%s\n' "# Site settings for gsmcpd@.service: GS_MCP_*=value / MCP_*=value lines." \
            "# Every knob is documented in $ROOT/etc/gsmcpd.conf (its env name is given there)." \
            > "$SITE_DIR/gsmcpd.env"
        chmod 0640 "$SITE_DIR/gsmcpd.env"
        chgrp "$SERVICE_USER" "$SITE_DIR/gsmcpd.env"
        echo "created $SITE_DIR/gsmcpd.env"
    fi
    check_service_user "$SERVICE_USER" || true   # said; the unit is installed all the same
    # sd_booted(): a container or chroot may have systemctl with no systemd to reload.
    if [[ -d /run/systemd/system ]]; then
        systemctl daemon-reload
        echo "start it with: systemctl enable --now gsmcpd@8000   (the instance is the port)"
    else
        echo "systemd is not running here (no /run/systemd/system), so nothing was reloaded: the unit" \
             "is read when it starts; then: systemctl enable --now gsmcpd@8000   (the instance is the port)"
    fi
}

case "${1:-}" in
    "")        ensure_venv; install_package base ;;
    --test)    ensure_venv; start_conformance_install; install_package test; run_tests ;;
    --check)   shift; check_environment "$@" ;;
    --systemd) install_systemd ;;
    --systemd-unit) systemd_unit ;;
    --stamp-ok) [[ -x $VENV/bin/python ]] && stamp_ok base ;;
    --foreign-venv) foreign_venv_problem ;;   # stop-server.sh asks, having no python to ask
    --check-service-user)
        [[ $(id -u) -eq 0 ]] || die "--check-service-user needs root: it runs checks as that user"
        check_service_user "${2:-$SERVICE_USER}" ;;
    -h|--help) usage ;;
    *)         usage >&2; die "unknown option: $1" ;;
esac
