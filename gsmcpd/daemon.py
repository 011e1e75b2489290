"""Process plumbing: serve in the foreground, start detached, stop by pidfile, check.

Also the pieces the router loop calls back into: logging setup and SIGHUP log reopen,
the startup line, and systemd notification (READY=1 / STOPPING=1 over $NOTIFY_SOCKET).
"""

from __future__ import annotations

import errno
import functools
import logging
import os
import select
import shlex
import signal
import socket
import stat
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Callable, TextIO

from gsmcpd import __version__, procstat
from gsmcpd.accounts import account_and_uid, private_group_problem
from gsmcpd.config import (CHECKOUT, DEFAULT_STATE_DIR, Config, control_socket_path, parse_int,
                           pidfile_path)
from gsmcpd.exitcodes import FAILED, OK, REFUSED, StartRefused, of_os_error
from gsmcpd.image.default import link_loop
from gsmcpd.logfile import PrivateFileHandler, RefusesWrites, no_space_left, open_for_appending, open_private
from gsmcpd.router import trace

# stop and status import this module too: what only serve, start and check use (the
# ready pipe, the workers' temp dirs and environment, the wire's framing) is imported
# in the functions that use it.

log = logging.getLogger("gsmcpd.daemon")

START_TIMEOUT = 60.0      # how long `start` waits for the daemon to listen
# How long `stop` waits after SIGTERM before SIGKILL: longer than the longest graceful stop
# (router.shutdown.longest_stop, 25 s), whose end, the image tidied, a SIGKILL would lose.
STOP_TIMEOUT = 30.0
LOG_FORMAT = "%(asctime)s %(levelname)s %(message)s"


class AlreadyRunning(Exception):
    """A live gsmcpd already owns this port's pidfile, or the port is taken."""


class PidfileError(Exception):
    """A pidfile that cannot be read at all (a directory, no permission): never guessed at."""


# --- startup line ------------------------------------------------------------------

def browser_origins(config: Config) -> str:
    """What the startup line and `check` say of GS_MCP_ALLOWED_ORIGINS."""
    return " ".join(config.allowed_origins) + " (CORS)" if config.allowed_origins else "loopback only, no CORS"


def toolsets_served(config: Config) -> str:
    """The toolsets as tools/list serves them: in read-only mode those it keeps, naming those it
    hides (one with no read-only safe tool), as the startup line and `check` say them."""
    if not config.readonly:
        return " ".join(config.toolsets)
    from gsmcpd.worker.toolsets import read_only_surface
    kept = read_only_surface(config.toolsets)[0]
    dropped = [name for name in config.toolsets if name not in kept]
    return (" ".join(kept) or "none") + (f" (read-only hides {', '.join(dropped)})" if dropped else "")


def startup_line(config: Config) -> str:
    """The one line that says what this server is: the router logs it once listening."""
    return (f"gsmcpd {__version__} listening on {config.url} "
            f"(host {config.host}, port {config.port}, pid {os.getpid()}); "
            f"image {config.image}; read-only {'yes' if config.readonly else 'no'}; "
            f"toolsets {toolsets_served(config)}; auth {'on' if config.auth else 'off'}; "
            f"browser origins {browser_origins(config)}; "
            f"{trace.startup_line(config.trace, config.trace_limit)}")


# --- logging -------------------------------------------------------------------------

class _LogState:
    handler: logging.Handler | None = None
    path: Path | None = None
    redirect_stdio = False


_log_state = _LogState()


def make_private_dir(path: Path) -> None:
    """The state directory (or a log's), created 0700 when missing: it holds the log,
    the pidfile and the control socket. One that exists keeps its mode, unless another
    account may write in it: then PermissionError, saying so."""
    path = Path(path)
    try:
        _make_missing_parents(path)
        _make_dir(path, 0o700, parents=True)
    except FileExistsError:
        if link_loop(path):    # not "Not a directory": it may be meant to lead to one
            raise OSError(errno.ELOOP, os.strerror(errno.ELOOP), str(path)) from None
        if not path.is_dir():   # a file in its place: "File exists" would not say what is wrong
            raise NotADirectoryError(errno.ENOTDIR, os.strerror(errno.ENOTDIR), str(path)) from None
    problem = _shared_dir_problem(os.stat(path))
    if problem:
        raise PermissionError(errno.EPERM, problem, str(path))


def _make_missing_parents(path: Path) -> None:
    """The missing directories above `path`, made 0755 at most (pathlib's parents=True makes
    them 0777 less the umask: under umask 000 any account could then swap the private
    directory below for one of its own)."""
    missing = []
    for parent in path.parents:
        if parent.exists():
            break
        missing.append(parent)
    for parent in reversed(missing):
        try:
            _make_dir(parent, 0o755)
        except FileExistsError:   # made meanwhile, or a dangling link: the caller's mkdir says
            pass


def _make_dir(path: Path, mode: int, parents: bool = False) -> None:
    """`path` made with exactly `mode` (mkdir's mode is cut by the umask: under umask 0277
    0700 came out 0500); FileExistsError if something is there already. By path, not
    descriptor: a directory made 0000 (umask 0777) could not be opened to fchmod."""
    path.mkdir(mode=mode, parents=parents)
    os.chmod(path, mode)


def make_file_dir(path: Path) -> None:
    """make_private_dir for the directory of the file `path` (the log, the pidfile): a
    refusal names that directory, since its caller names the file and its mode is not the file's."""
    try:
        make_private_dir(path.parent)
    except OSError as exc:
        raise type(exc)(exc.errno, f"its directory {path.parent}: {exc.strerror}", exc.filename) from None


def _private_dir_problem(directory: Path) -> str | None:
    """What make_private_dir refuses in `directory`, for check; None if it is not there
    yet (it is then made 0700). Root may be checking for the service account (the
    README's `sudo ... check --state-dir /var/lib/gsmcpd`): its owner is then no problem."""
    try:
        problem = _shared_dir_problem(os.stat(directory), any_owner=os.geteuid() == 0)
    except OSError:
        return None
    return f"{directory}: {problem}" if problem else None


def _shared_dir_problem(st: os.stat_result, any_owner: bool = False) -> str | None:
    """Why another account could plant files in a directory (a link at the log's name,
    which the daemon would then append to), or None: its owner is neither this account
    nor root (unless `any_owner`), or its mode lets every account write, or its group
    when that is not its owner's private group (a umask-002 user's own directory is fine)."""
    if not any_owner and st.st_uid not in (os.geteuid(), 0):
        return (f"it is owned by another account, {account_and_uid(st.st_uid)}, who may let anyone "
                "write in it: use a directory of this account's")
    everyone = st.st_mode & stat.S_IWOTH
    group_problem = (not everyone and st.st_mode & stat.S_IWGRP
                     and private_group_problem(st.st_uid, st.st_gid))
    if everyone or group_problem:
        why = (f"; its group may write only if it is its owner's private group, and {group_problem}"
               if group_problem else "")
        return (f"other accounts may write in it (mode {stat.S_IMODE(st.st_mode):04o}), and so plant a "
                f"link where gsmcpd writes its log or pidfile: make it private (chmod go-w){why}")
    return None


def configure_logging(level: str, path: Path | None, *, redirect_stdio: bool = False) -> None:
    """Log to `path` (append) or stderr, one line per event with time and level.

    redirect_stdio: also point fds 1 and 2 at the log file (a detached daemon), and
    keep doing so on every reopen, so a stray traceback lands in the current file.
    """
    root = logging.getLogger()
    if _log_state.handler is not None:
        root.removeHandler(_log_state.handler)
        _log_state.handler.close()
    if path is None:
        handler: logging.Handler = logging.StreamHandler(sys.stderr)
    else:
        make_file_dir(path)
        handler = PrivateFileHandler(path, encoding="utf-8")
    handler.setFormatter(logging.Formatter(LOG_FORMAT))
    root.addHandler(handler)
    root.setLevel(level.upper())
    _log_state.handler, _log_state.path, _log_state.redirect_stdio = handler, path, redirect_stdio
    if path is not None and redirect_stdio:
        _point_stdio_at(path)


def _point_stdio_at(path: Path) -> None:
    fd = open_private(path, os.O_WRONLY | os.O_APPEND)
    try:
        os.dup2(fd, 1)
        os.dup2(fd, 2)
    finally:
        os.close(fd)


def reopen_log(signame: str = "SIGHUP") -> bool:
    """SIGHUP or SIGUSR1 (logrotate): close and reopen the log file by name, and say so
    in a line naming `signame`. True when the server should stop instead: it logs to a terminal that hung up (a `serve` whose
    terminal or ssh session closed), where it would serve on with every line lost.

    Call it from the loop, not from inside a signal handler: it takes the handler lock.
    """
    handler, path = _log_state.handler, _log_state.path
    if not isinstance(handler, logging.FileHandler) or path is None:
        if hung_up_terminal(sys.stderr.fileno()):
            log.warning("%s: the terminal this server logs to hung up; stopping", signame)
            return True
        log.info("%s: logging to stderr, nothing to reopen", signame)
        return False
    # The new file first: one that cannot be opened (its directory gone, a directory in
    # its place) leaves logging where it was, and says so there, not nowhere.
    try:
        stream = handler._open()
    except OSError as error:
        log.error("%s: cannot reopen the log file %s (%s); still writing to the old one",
                  signame, path, error.strerror or error)
        return False
    handler.acquire()
    try:
        old, handler.stream = handler.stream, stream
        if old is not None:
            old.close()
    finally:
        handler.release()
    if _log_state.redirect_stdio:
        _point_stdio_at(path)
    log.info("%s: log file reopened (%s)", signame, path)
    return False


def hung_up_terminal(fd: int) -> bool:
    """Whether `fd` is a terminal that hung up. A `kill -HUP` leaves a live terminal (and
    a journal's socket, a pipe or a file) alone: only a tty polls as hung up."""
    try:
        if not stat.S_ISCHR(os.fstat(fd).st_mode):
            return False
        poller = select.poll()
        poller.register(fd, select.POLLOUT)
        return any(events & select.POLLHUP for _, events in poller.poll(0))
    except (OSError, ValueError):
        return False


# --- systemd notify ------------------------------------------------------------------

def sd_notify(message: str, environ: dict | None = None) -> bool:
    """Send `message` to $NOTIFY_SOCKET; False when not under systemd (or it failed).

    An address starting with '@' is in the abstract namespace (a leading NUL).
    """
    address = (os.environ if environ is None else environ).get("NOTIFY_SOCKET")
    if not address:
        return False
    if address.startswith("@"):
        address = "\0" + address[1:]
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC) as sock:
            sock.connect(address)
            sock.sendall(message.encode("utf-8"))
    except OSError as exc:
        log.warning("systemd notify failed (%s): %s", message.split("\n")[0], exc)
        return False
    return True


# --- pidfiles ------------------------------------------------------------------------

def read_pidfile(path: Path) -> int | None:
    """The pid a pidfile names; None when there is none or it holds no pid (garbage,
    binary). Raises PidfileError when it cannot be read."""
    try:
        text = Path(path).read_bytes().decode("ascii").strip()
    except FileNotFoundError:
        return None
    except UnicodeDecodeError:
        return None
    except OSError as error:
        raise PidfileError(f"cannot read the pidfile {path}: {error.strerror or error}") from None
    return int(text) if text.isdigit() and int(text) > 0 else None


def process_cmdline(pid: int) -> list[str] | None:
    """argv of a live process, None if there is none (or it is a zombie)."""
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return None
    if not raw:
        return None
    return raw.rstrip(b"\0").decode("utf-8", errors="replace").split("\0")


def _names_gsmcpd(argv: list[str] | None) -> bool:
    return bool(argv) and any(arg == "gsmcpd" or arg.endswith("/gsmcpd") for arg in argv)


def _flag_values(argv: list[str], flag: str) -> list[str]:
    """The values a command line gives `flag`, as `--flag V` or `--flag=V`, in order."""
    return [argv[i + 1] if arg == flag else arg[len(flag) + 1:]
            for i, arg in enumerate(argv)
            if (arg == flag and i + 1 < len(argv)) or arg.startswith(flag + "=")]


def _ports_named(argv: list[str]) -> list[str]:
    """The ports a command line names: a serve's as serve reads them (`serve 8000` too,
    which named none here: stop then left a serve that did not answer on its control
    socket running); else its --port flags."""
    for at, arg in enumerate(argv[:-1]):
        if (arg == "gsmcpd" or arg.endswith("/gsmcpd")) and argv[at + 1] == "serve":
            from gsmcpd.__main__ import serve_ports
            return serve_ports(argv[at + 2:])
    return _flag_values(argv, "--port")


def _port_served(ports: list[str]) -> int | None:
    """The port a command line's --port flags make it serve: the last one, as argparse
    takes it, read as the config reads a port (`--port 08000` serves 8000)."""
    try:
        return parse_int(ports[-1], lo=1, hi=65535)
    except ValueError:
        return None   # such a serve refuses to start: it serves no port


def is_gsmcpd(pid: int, port: int, state_dir: Path | None = None) -> bool:
    """True only if `pid` is a gsmcpd serving `port`: its command line names gsmcpd and
    the port; or, when it names no port (a `serve` that took it from GS_MCP_PORT or a
    config file), the port's control socket in `state_dir` answers with that pid."""
    argv = process_cmdline(pid)
    if not _names_gsmcpd(argv):
        return False
    ports = _ports_named(argv)
    if ports:
        return _port_served(ports) == port
    return state_dir is not None and _control_pid(state_dir, port) == pid


def _control_pid(state_dir: Path, port: int) -> int | None:
    from gsmcpd.router import control   # the router's package, only for this question
    try:
        return control.query(state_dir, port, timeout=2.0).get("pid")
    except control.ControlError:
        return None


def serving_elsewhere(port: int, state_dir: Path) -> str | None:
    """A sentence naming the live gsmcpd that serves `port` though `state_dir` holds no
    pidfile of it (started with another --state-dir or conf file, or its files removed),
    and how to stop it; None when there is none. Found by the listening socket it holds,
    however it was given the port (--port, GS_MCP_PORT, a conf file)."""
    listening = _listening_sockets(port)
    if listening == set():
        return None   # the table lists every account's sockets: nothing serves the port
    for entry in Path("/proc").iterdir():
        argv = process_cmdline(int(entry.name)) if entry.name.isdigit() else None
        if not (_names_gsmcpd(argv) and "serve" in argv and _serves(entry, argv, port, listening)):
            continue
        theirs = [_as_seen_by(entry, path) for path in _flag_values(argv, "--state-dir")]
        if not theirs and _control_socket_dir(entry, port) == state_dir:
            theirs = [state_dir]   # given it otherwise (GS_MCP_STATE_DIR, a conf file): this one
        if theirs and theirs[-1] != state_dir:
            return (f"pid {entry.name}, a gsmcpd serving port {port} from the state directory "
                    f"{theirs[-1]}, is running: stop it with {_stop_command(port, theirs[-1])}")
        if theirs:   # its own state directory, but its pidfile and socket are gone
            return (f"pid {entry.name}, a gsmcpd serving port {port}, is running without its "
                    f"pidfile and control socket in {state_dir} (removed?): stop it with "
                    f"kill {entry.name}")
        return (f"pid {entry.name}, a gsmcpd serving port {port}, is running: give the "
                f"--state-dir or --config it was started with, or kill {entry.name}")
    return None


def _control_socket_dir(process: Path, port: int) -> Path | None:
    """The directory of the control socket for `port` that `process` listens on, as it
    bound it: /proc/net/unix keeps that path when the file is removed. None when it holds
    none that tells it (one bound through /proc/self/fd, its path past sun_path's length)."""
    try:
        rows = Path("/proc/net/unix").read_text(errors="surrogateescape").splitlines()[1:]
    except OSError:
        return None
    for row in rows:
        # Num RefCount Protocol Flags Type St Inode Path
        fields = row.split(maxsplit=7)
        if (len(fields) == 8 and fields[7].endswith(f"/gsmcpd-{port}.ctl")
                and not fields[7].startswith("/proc/") and _holds_any(process, {f"socket:[{fields[6]}]"})):
            return Path(os.path.normpath(fields[7])).parent
    return None


def _listening_sockets(port: int) -> set[str] | None:
    """The TCP sockets listening on `port` (any address, IPv4 or IPv6), named as a
    /proc/PID/fd link names them (`socket:[INODE]`); None when /proc/net cannot be read."""
    found, read = set(), False
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            rows = Path(table).read_text().splitlines()[1:]
        except OSError:   # a kernel without IPv6, say
            continue
        read = True
        for row in rows:
            # sl local_address rem_address st ... inode; the address ends :PORT in hex, st 0A is LISTEN
            fields = row.split()
            if len(fields) > 9 and fields[3] == "0A" and fields[1].endswith(f":{port:04X}"):
                found.add(f"socket:[{fields[9]}]")
    return found if read else None


def _serves(process: Path, argv: list[str], port: int, listening: set[str] | None) -> bool:
    """Whether `process` holds one of the `listening` sockets. Where its descriptors are
    not this account's to read (or /proc/net was not), its command line's --port decides."""
    held = None if listening is None else _holds_any(process, listening)
    if held is None:
        return _port_served(_ports_named(argv) or ["0"]) == port
    return held


def _holds_any(process: Path, sockets: set[str]) -> bool | None:
    """Whether `process` has one of `sockets` open; None when that cannot be told."""
    unreadable = False
    try:
        with os.scandir(process / "fd") as descriptors:
            for fd in descriptors:
                try:
                    if os.readlink(fd.path) in sockets:
                        return True
                except PermissionError:
                    unreadable = True
                except OSError:   # closed meanwhile
                    continue
    except PermissionError:
        return None
    except OSError:   # it has exited
        return False
    return None if unreadable else False


def _as_seen_by(process: Path, path: str) -> Path:
    """`path` from a process's command line, read from the directory it runs in."""
    try:
        return Path(os.path.normpath(Path(os.readlink(process / "cwd")) / path))
    except OSError:   # gone, or another account's: the path as written
        return Path(path)


def running_pid(state_dir: Path, port: int) -> int | None:
    """The pid of the live gsmcpd serving `port` per its pidfile (or, that lost, per its
    control socket), else None."""
    pid = read_pidfile(pidfile_path(state_dir, port))
    if pid is None:
        pid = _control_pid(state_dir, port)
    return pid if pid is not None and is_gsmcpd(pid, port, state_dir) else None


def _found_by(pidfile: Path, pid: int) -> str:
    """How `pid` was found: by its pidfile, or (that lost) by the port's control socket,
    so a deleted or emptied pidfile is not named as if it were there."""
    if read_pidfile(pidfile) == pid:
        return f"pidfile {pidfile}"
    return f"named by the port's control socket; its pidfile {pidfile} is lost"


def stale_pid(pid: int, port: int) -> str:
    """Why a pidfile naming `pid` is stale: most often its gsmcpd was killed (kill -9, a
    crash), its pid gone; else the pid was reused by another process."""
    stat = procstat.fields(pid)
    if stat is not None and procstat.gone(stat) or stat is None and not _pid_exists(pid):
        return f"pid {pid} is not running"   # a zombie too: killed, not yet reaped by init
    return f"pid {pid} is not a gsmcpd serving port {port}"


def _pid_exists(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:   # another account's, hidden from /proc (hidepid)
        pass
    return True


def claim_pidfile(path: Path, port: int) -> str | None:
    """Write our pid to `path` exclusively; returns a note if a stale file was replaced.

    Raises AlreadyRunning when the file names another live gsmcpd on this port.
    """
    path = Path(path)
    make_file_dir(path)
    note = None
    existing = read_pidfile(path)
    if existing is not None and existing != os.getpid() and is_gsmcpd(existing, port, path.parent):
        raise AlreadyRunning(f"a gsmcpd (pid {existing}) is already running on port {port} "
                             f"(pidfile {path})")
    if path.exists():
        why = "it named no pid" if existing is None else stale_pid(existing, port)
        note = f"removed stale pidfile {path} ({why})"
        path.unlink()
    temp = path.with_name(f".{path.name}.{os.getpid()}")
    _write_pid(temp)
    try:
        os.link(temp, path)  # atomic and exclusive: of two racing starts, one wins
    except FileExistsError:
        raise AlreadyRunning(f"another gsmcpd claimed port {port} at the same moment "
                             f"(pidfile {path})") from None
    finally:
        temp.unlink()
    return note


PIDFILE_MODE = 0o644


def _write_pid(path: Path) -> None:
    """Our pid into `path`, mode 0644 whatever the umask: under umask 000 any account could
    rewrite a pidfile that root's logrotate postrotate then signals unchecked."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, PIDFILE_MODE)
    try:
        os.fchmod(fd, PIDFILE_MODE)
        os.write(fd, f"{os.getpid()}\n".encode())
    finally:
        os.close(fd)


def release_pidfile(path: Path, pid: int | None = None) -> None:
    """Remove `path` if it still names `pid` (default: us)."""
    if read_pidfile(path) == (os.getpid() if pid is None else pid):
        Path(path).unlink(missing_ok=True)


def port_in_use(host: str, port: int) -> bool:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except OSError as exc:
            if exc.errno == errno.EADDRINUSE:
                return True
            raise
    return False


# --- serve (foreground) ----------------------------------------------------------------

def serve_main(config: Config, *, ready_fd: int | None = None, detached: bool = False,
               serve: Callable | None = None) -> int:
    """Run the router in this process until SIGTERM/SIGINT; the exit code.

    Writes the pidfile, tells systemd (and a waiting `start`, via ready_fd) once
    listening, reopens the log on SIGHUP.  detached: started by `start`, so fds 1 and 2
    follow the log file too.  `serve` defaults to gsmcpd.router.main.serve.
    """
    with _HeldStop() as held:
        return _serve_main(config, ready_fd, detached, serve, held)


def _serve_main(config: Config, ready_fd: int | None, detached: bool, serve: Callable | None,
                held: "_HeldStop") -> int:
    from gsmcpd.raised import raised
    from gsmcpd.readypipe import Reporter
    reporter = Reporter(ready_fd)

    # A failure is reported before it is logged: start says it as the last line, not
    # also as an error logged on the way.
    def refused(message: str, status: int) -> int:
        reporter.error(message, status)
        log.error("%s", message)
        return status

    try:
        configure_logging(config.log_level, config.log_file, redirect_stdio=detached)
    except OSError as exc:   # nowhere to log yet: say it where start or the terminal reads
        verb = "write to" if isinstance(exc, RefusesWrites) else "open"
        message = f"cannot {verb} the log file {config.log_file}: {exc.strerror or exc}"
        reporter.error(message, of_os_error(exc))
        try:
            print(f"gsmcpd: {message}", file=sys.stderr)
        except OSError:   # detached, stderr is that file: it may open yet refuse writes (/proc)
            pass
        return of_os_error(exc)
    reporter.forward_warnings(config.log_file)   # detached, they reach the log file alone: start prints them
    try:
        note = claim_pidfile(config.pidfile, config.port)
    except AlreadyRunning as exc:   # it may stop: a retry may then pass
        return refused(str(exc), FAILED)
    except PidfileError as exc:     # a directory in its place, not ours to read
        return refused(str(exc), REFUSED)
    except OSError as exc:   # the state directory cannot be made or written
        return refused(f"cannot write the pidfile {config.pidfile}: {exc.strerror or exc} "
                       f"(state dir {config.state_dir})", of_os_error(exc))
    if note:
        log.warning("%s", note)

    def on_ready() -> None:
        sd_notify(f"READY=1\nSTATUS=listening on {config.url}\nMAINPID={os.getpid()}")
        reporter.ready(config.url)

    def on_stopping() -> None:
        sd_notify("STOPPING=1")
        log.info("stopping (pid %d, port %d)", os.getpid(), config.port)

    code = FAILED
    try:
        if serve is None:
            from gsmcpd.router.main import serve
        code = serve(config, on_ready=on_ready, on_stopping=on_stopping, on_reload=reopen_log,
                     stop_requested=held.requested, reload_requested=held.reload_requested)
    except OSError as exc:
        code = of_os_error(exc)   # EADDRINUSE, and EADDRNOTAVAIL at boot, may pass
        if exc.errno == errno.EADDRINUSE:
            message = f"port {config.port} on {config.host} is already in use"
        elif exc.filename is not None:   # a file it needs, not the address
            message = f"cannot serve: {exc.filename}: {exc.strerror or exc}"
        else:
            message = f"cannot serve on {config.host}:{config.port}: {exc.strerror or exc}"
        reporter.error(message, code)
        log.error("%s", message)
    except StartRefused as exc:  # serve()'s own refusal, e.g. a missing image directory
        code = exc.status
        reporter.error(str(exc), code)   # start says "gsmcpd failed to start: "
        log.error("gsmcpd: %s", exc)
    except Exception as exc:  # the daemon's last word: reported, logged, exit 1
        reporter.error(f"gsmcpd failed: {raised(exc)}", FAILED)
        log.exception("gsmcpd failed")
    finally:
        release_pidfile(config.pidfile)
        if not reporter.sent and held.requested():
            reporter.error(f"stopped by {signal.Signals(held.signum).name} before it was ready", FAILED)
        elif not reporter.sent:
            reporter.error(f"gsmcpd exited with status {code} before it was ready", FAILED)
    log.info("exited with status %d", code)
    return code


class _HeldStop:
    """SIGTERM/SIGINT from before the pidfile is written until the router's loop takes
    them over: remembered instead of killing us, so the pidfile is still released and
    the spawner stopped; the router stops as soon as its loop runs. A SIGHUP/SIGUSR1
    (logrotate) then is remembered too, its log reopen done once the loop runs (their
    default action ended the server). On leaving, the handlers it set are put back as
    they were, unless something took them over since."""

    SIGNALS = (signal.SIGTERM, signal.SIGINT)
    RELOADS = (signal.SIGHUP, signal.SIGUSR1)

    def __init__(self):
        self.signum: int | None = None
        self.reload_signame: str | None = None
        self._previous: dict[int, object] = {}

    def requested(self) -> bool:
        return self.signum is not None

    def reload_requested(self) -> str | None:
        return self.reload_signame

    def _hold(self, signum: int, frame: object) -> None:
        if signum in self.RELOADS:
            self.reload_signame = signal.Signals(signum).name
        else:
            self.signum = signum

    def __enter__(self) -> "_HeldStop":
        self._previous = {signum: signal.signal(signum, self._hold)
                          for signum in self.SIGNALS + self.RELOADS}
        return self

    def __exit__(self, *exc: object) -> None:
        for signum, previous in self._previous.items():
            if signal.getsignal(signum) == self._hold:
                signal.signal(signum, previous)


# --- start (detached) ----------------------------------------------------------------

def start(config: Config, serve_args: list[str], out: TextIO = sys.stdout,
          timeout: float = START_TIMEOUT, err: TextIO = sys.stderr) -> int:
    """Fork a detached `serve`, return once it listens.  serve_args: flags to pass on.
    The warnings and errors logged as it starts (by serve, the forkserver, the spawner)
    are printed to `err`.

    Double fork + setsid; the grandchild execs `python -m gsmcpd serve --port N ...`
    so its command line names gsmcpd and the port (what `stop` checks).
    """
    from gsmcpd.readypipe import read_outcome
    try:
        environ = _serve_environ()
    except StartRefused as exc:
        print(exc, file=out)
        return exc.status
    try:
        make_private_dir(config.state_dir)
    except OSError as exc:
        print(f"cannot use the state directory {config.state_dir}: {exc.strerror or exc}", file=out)
        return of_os_error(exc)
    pid = running_pid(config.state_dir, config.port)
    if pid is not None:
        print(f"gsmcpd is already running on port {config.port} (pid {pid}, "
              f"{_found_by(config.pidfile, pid)}); stop it with {stop_command(config)}", file=out)
        return FAILED
    try:
        busy = port_in_use(config.host, config.port)
    except OSError as exc:   # a port below 1024 unprivileged, an address not up (yet)
        print(f"cannot serve on {config.host}:{config.port}: {exc.strerror or exc}", file=out)
        return of_os_error(exc)
    if busy:
        elsewhere = serving_elsewhere(config.port, config.state_dir)
        print(f"port {config.port} on {config.host} is already in use: {elsewhere}" if elsewhere
              else f"port {config.port} on {config.host} is already in use by another process "
              f"(not a gsmcpd with a pidfile in {config.state_dir})", file=out)
        return FAILED
    log_path = config.log_file or config.default_log_file
    argv = [sys.executable, "-P", "-m", "gsmcpd", "serve", "--port", str(config.port),
            "--log-file", str(log_path), *serve_args]
    read_end, write_end = os.pipe()
    child = os.fork()
    if child == 0:
        _detach_and_exec(argv, environ, read_end, write_end, log_path)
    os.close(write_end)
    os.waitpid(child, 0)
    line = read_outcome(read_end, timeout, lambda level, text: print(f"gsmcpd: {level.lower()}: {text}",
                                                                     file=err, flush=True))
    os.close(read_end)
    return _report_start(config, line, log_path, timeout, out)


def stop_command(config: Config) -> str:
    """The stop command as the user can paste it here: the script by a path that works
    from this directory, and the state dir when it is not the default one."""
    return _stop_command(config.port, config.state_dir)


def _stop_command(port: int, state_dir: Path) -> str:
    script = CHECKOUT / "stop-server.sh"
    try:
        here = Path.cwd()
    except FileNotFoundError:   # run in a directory deleted since
        here = None
    argv = ["./stop-server.sh" if here == CHECKOUT else str(script), str(port)]
    if state_dir != DEFAULT_STATE_DIR:
        argv += ["--state-dir", str(state_dir)]
    return shlex.join(argv)


def _detach_and_exec(argv: list[str], environ: dict[str, str], read_end: int, write_end: int,
                     log_path: Path) -> None:
    from gsmcpd.readypipe import failure_line   # start has imported it: no import after the fork
    try:
        os.close(read_end)
        os.setsid()                     # own session: no controlling terminal, no SIGHUP
        if os.fork() != 0:
            os._exit(0)                 # the grandchild is reparented; never a session leader
        devnull = os.open(os.devnull, os.O_RDONLY)
        os.dup2(devnull, 0)
        os.close(devnull)
        try:
            make_file_dir(log_path)
            _point_stdio_at(log_path)   # anything before logging starts lands in the log
        except OSError as exc:          # the starter reads this line instead of "see <log>"
            message = f"cannot open the log file {log_path}: {exc.strerror or exc}"
            os.write(write_end, (failure_line(message, of_os_error(exc)) + "\n").encode())
            os._exit(1)
        os.set_inheritable(write_end, True)
        os.execve(argv[0], [*argv, "--ready-fd", str(write_end)], environ)
    finally:
        os._exit(127)                   # exec failed: the starter sees EOF and says so


def _serve_environ() -> dict[str, str]:
    """The detached serve's environment. It runs `python -P`, so the caller's directory
    is not on its path: a gsmcpd there (another checkout, any directory of that name)
    would be run instead of this one. This gsmcpd's own directory goes first on
    PYTHONPATH when only the caller's directory made it importable: StartRefused when
    its path holds a ':', as run-server.sh refuses it (Python splits PYTHONPATH there, and
    another gsmcpd, an installed one, then ran)."""
    import gsmcpd
    root = Path(gsmcpd.__file__).resolve().parent.parent
    environ = dict(os.environ)
    # sys.path[0] is the caller's directory, unless -P (safe_path) left it out
    searched = sys.path if sys.flags.safe_path else sys.path[1:]
    if root not in {Path(entry).resolve() for entry in searched if entry}:
        if os.pathsep in str(root):
            raise StartRefused(f"cannot run gsmcpd from {root}: its path holds a '{os.pathsep}', which "
                               "PYTHONPATH cannot carry (Python splits it there); move the checkout, "
                               "or clone it, to a path without one")
        environ["PYTHONPATH"] = os.pathsep.join(filter(None, (str(root), environ.get("PYTHONPATH"))))
    return environ


def _report_start(config: Config, line: str | None, log_path: Path, timeout: float,
                  out: TextIO) -> int:
    if line is None:
        print(f"gsmcpd did not start listening within {timeout:g}s; see {log_path}", file=out)
        pid = running_pid(config.state_dir, config.port)
        if pid is not None:
            os.kill(pid, signal.SIGTERM)
            print(f"sent SIGTERM to pid {pid}", file=out)
        return FAILED
    failure, _, message = line.partition(" ")
    if failure in ("ERROR", "REFUSED"):
        print(f"gsmcpd failed to start: {message} (log: {log_path})", file=out)
        return REFUSED if failure == "REFUSED" else FAILED
    if not line.startswith("READY "):
        print(f"gsmcpd exited during startup; see {log_path}", file=out)
        return FAILED
    _, pid, url = line.split(" ", 2)
    with socket.create_connection((config.host, config.port), timeout=5):
        pass  # READY is sent once listening; this just proves it to the user
    print(f"gsmcpd listening on {url} (pid {pid})\n"
          f"log: {log_path}\n"
          f"stop it with: {stop_command(config)}   or: kill {pid}", file=out)
    return 0


# --- stop ----------------------------------------------------------------------------

def stop(state_dir: Path, port: int, timeout: float = STOP_TIMEOUT,
         out: TextIO = sys.stdout) -> int:
    """SIGTERM the gsmcpd named by the port's pidfile, SIGKILL after `timeout`."""
    path = pidfile_path(state_dir, port)
    pid = read_pidfile(path)
    if pid is None:
        lost = path.exists()
        if lost:
            path.unlink()
        # A pidfile gone (deleted by hand, a tmp cleaner) while its server runs: the port's
        # control socket still names it, and it is confirmed as any pid is before a signal.
        pid = _control_pid(state_dir, port)
        if pid is None or not is_gsmcpd(pid, port, state_dir):
            elsewhere = serving_elsewhere(port, state_dir)
            if elsewhere:
                print(f"no gsmcpd of {state_dir} runs on port {port} (no pidfile at {path}); "
                      f"but {elsewhere}", file=out)
            else:
                print(f"removed unreadable pidfile {path}; nothing was running on port {port}"
                      if lost else f"no gsmcpd running on port {port} (no pidfile at {path})", file=out)
            return 1
        print(f"{'removed unreadable' if lost else 'no'} pidfile {path}, but the port's control "
              f"socket names pid {pid}, its gsmcpd", file=out)
    if not is_gsmcpd(pid, port, state_dir):
        argv = process_cmdline(pid)
        if _names_gsmcpd(argv) and not _ports_named(argv):
            # A gsmcpd that took its port from the environment or a config file, and whose
            # control socket did not say (stopped, or busy): never ours to judge stale.
            print(f"pid {pid} in {path} is a gsmcpd whose port could not be confirmed (its "
                  f"control socket did not answer); left it and its pidfile alone", file=out)
            return 1
        path.unlink(missing_ok=True)
        elsewhere = serving_elsewhere(port, state_dir)   # named, never signalled: not the pidfile's
        print(f"stale pidfile {path}: {stale_pid(pid, port)}; "
              f"removed it without signalling anything. "
              + (f"But {elsewhere}" if elsewhere else f"Nothing was running on port {port}."),
              file=out)
        return 1
    print(f"stopping gsmcpd on port {port} (pid {pid}): SIGTERM, SIGKILL if still running "
          f"after {timeout:g}s", file=out)
    try:
        os.kill(pid, signal.SIGTERM)
    except PermissionError:
        print(f"not permitted to signal pid {pid} (gsmcpd on port {port} runs as another "
              f"user); stop it as that user or as root", file=out)
        return 1
    if not _wait_gone(pid, timeout):
        print(f"pid {pid} did not exit within {timeout:g}s; sent SIGKILL", file=out)
        os.kill(pid, signal.SIGKILL)
        _wait_gone(pid, 5.0)
    release_pidfile(path, pid)
    ctl = control_socket_path(state_dir, port)
    if ctl.exists() and not _names_gsmcpd(process_cmdline(pid)):
        try:
            ctl.unlink(missing_ok=True)
        except OSError:   # not a socket of ours after all (a directory): never a traceback
            pass
    print(f"stopped gsmcpd on port {port} (pid {pid})", file=out)
    return 0


def _wait_gone(pid: int, timeout: float) -> bool:
    # Judged by name alone: it was confirmed ours, and its control socket goes first.
    deadline = time.monotonic() + timeout
    while _names_gsmcpd(process_cmdline(pid)):
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.05)
    return True


# --- check ---------------------------------------------------------------------------

def _shown_path(path: Path | str) -> str:
    """A path as given (made whole), and the file it names now when `..` or a link make
    that another path. The given one is what is opened again (SIGHUP, a refresh): a link
    renewed in place (certbot's live/) is followed then, so it is not replaced here."""
    real = os.path.realpath(path)   # never raises, unlike Path.resolve() on a link loop
    return str(path) if real == str(path) else f"{path} (resolved {real})"


def check(config: Config, out: TextIO = sys.stdout) -> int:
    """Verify the environment without changing anything; print findings, then OK or the
    first problem. Exit FAILED when each problem may pass on a retry (the port in use, a
    full filesystem), else REFUSED."""
    from gsmcpd.image.default import not_setgid_warning
    from gsmcpd.worker.environment import unused_list_warning
    from gsmcpd.worker.tmpdirs import passed_over_warning, unreachable_warnings
    problems: list[str] = []
    warnings: list[str] = []
    status = OK

    def report(label: str, value: str, problem: str | None = None, may_pass: bool = False) -> None:
        nonlocal status
        print(f"{label:<14} {value}{'   <-- ' + problem if problem else ''}", file=out)
        if problem:
            problems.append(f"{label}: {problem}")
            status = max(status, FAILED if may_pass else REFUSED)

    def warn(text: str) -> None:   # serve runs, but something will be refused at use
        print(f"{'  warning':<14} {text}", file=out)
        warnings.append(text)

    version = sys.version.split()[0]
    report("python", f"{version} ({sys.executable})",
           None if sys.version_info >= (3, 11) else "Python 3.11 or newer is required")
    for module in ("jwt", "cryptography", "gsmcpd.wire.http", "gsmcpd.router.main",
                   "gsmcpd.worker.server", "gsmcpd.image"):
        report("import", module, _import_problem(module))
    per_user = bool(config.auth and config.user_map and os.geteuid() == 0)   # serve reads the map only as root
    report("image", _shown_path(config.image), _unreachable(functools.partial(_image_problem, per_user=per_user), config))
    shut_out = not_setgid_warning(config.image) if per_user else None
    if shut_out:
        warn(shut_out)
    report("state dir", _shown_path(config.state_dir), _unreachable(_state_dir_problem, config.state_dir))
    if config.log_file is not None:
        problem = _unreachable(_log_file_problem, config.log_file)
        report("log file", _shown_path(config.log_file), problem,
               may_pass=bool(problem and problem.endswith(os.strerror(errno.ENOSPC))))   # space may be freed
    temp_dir, temp_dir_problem = _temp_dir_finding()
    report("temp dir", temp_dir, temp_dir_problem)
    passed_over = None if temp_dir_problem else passed_over_warning(temp_dir)
    if passed_over:
        warn(passed_over)
    try:
        busy = port_in_use(config.host, config.port)
    except OSError as exc:
        report("port", f"{config.host}:{config.port}", f"cannot bind: {exc.strerror or exc}",
               may_pass=of_os_error(exc) == FAILED)
    else:
        # Checking a running deployment (after editing its config, before a restart)
        # finds its own server on the port: that is no problem.
        serving, problem, may_pass = None, "already in use" if busy else None, True
        try:
            serving = running_pid(config.state_dir, config.port) if busy else None
        except PidfileError as exc:   # whose server it is cannot be told
            problem, may_pass = f"already in use; {exc}", False
        report("port", f"{config.host}:{config.port}" + (
            f" (served by this deployment's gsmcpd, pid {serving})" if serving else ""),
               None if serving else problem, may_pass)
    if config.tls_cert is not None and config.tls_key is not None:
        report("tls cert", f"{_shown_path(config.tls_cert)} (key {_shown_path(config.tls_key)})",
               _tls_problem(config))
        from gsmcpd.auth.tls import pair_warnings
        for warning in pair_warnings(config.tls_cert, config.tls_key):
            warn(warning)
    if config.jwks_file is not None:
        report("jwks file", _shown_path(config.jwks_file), _jwks_file_problem(config.jwks_file, config.jwks_timeout))
    if per_user:
        from gsmcpd.auth.usermap import IDENTITY_MAP, accounts_served, never_served_warnings, read_user_map_setting
        user_map, problem = read_user_map_setting(config.user_map)
        shown = config.user_map if config.user_map == IDENTITY_MAP else _shown_path(config.user_map)
        report("user map", shown, f"user_map: {problem}" if problem else None)
        for warning in never_served_warnings(user_map):
            warn(warning)
        if not problem and not temp_dir_problem:
            for warning in unreachable_warnings(temp_dir, accounts_served(user_map)):
                warn(warning)
        if not problem:
            from gsmcpd.worker.python_reach import unrunnable_python_warnings
            for warning in unrunnable_python_warnings(sys.executable, accounts_served(user_map)):
                warn(warning)
    try:
        _serve_environ()
    except StartRefused as exc:   # serve, in the foreground, runs from there
        warn(f"start: {exc}")
    unused = unused_list_warning(config.worker_env, per_user)
    if unused:
        warn(unused)
    report("auth", "on" if config.auth else "off (loopback only)")
    report("read-only", "yes" if config.readonly else "no")
    report("toolsets", toolsets_served(config))
    if config.readonly:   # as tools/list answers: the tools read-only mode hides, named
        from gsmcpd.worker.toolsets import read_only_surface
        _, served, hidden = read_only_surface(config.toolsets)
        report("hidden tools", (" ".join(hidden) or "none") + f" (read-only; tools/list serves {len(served)})")
    report("origins", browser_origins(config))
    if problems:
        print(f"PROBLEM: {problems[0]}", file=out)
        return status
    noted = f" ({len(warnings)} warning{'s' if len(warnings) > 1 else ''} above)" if warnings else ""
    print(f"OK: ready to serve {config.url}{noted}", file=out)
    return 0


def _unreachable(problem: Callable, subject) -> str | None:
    """`problem(subject)`, or the OSError it met on the way (a directory of another
    account's that this one may not enter) as the problem."""
    try:
        return problem(subject)
    except OSError as exc:
        return f"{exc.filename or subject}: {exc.strerror or exc}"


def _temp_dir_finding() -> tuple[str, str | None]:
    """The directory serve makes the workers' temporary one in (TMPDIR when usable, as
    Python picks it), and the problem serve would meet there, if any."""
    from gsmcpd.worker.tmpdirs import check_temp_dir
    try:
        path = tempfile.gettempdir()
        check_temp_dir(path)
    except OSError as exc:
        return str(exc.filename or os.environ.get("TMPDIR") or "none usable"), f"TMPDIR: {exc.strerror or exc}"
    return path, None


def _import_problem(module: str) -> str | None:
    import importlib

    from gsmcpd.raised import raised_importing
    try:
        importlib.import_module(module)
    except Exception as exc:  # any import failure is the finding itself
        return f"cannot import: {raised_importing(exc, module)}"
    return None


def _tls_problem(config: Config) -> str | None:
    """What `serve` would meet loading the certificate and key."""
    for knob, path in (("tls_cert", config.tls_cert), ("tls_key", config.tls_key)):
        if not os.access(path, os.R_OK):
            return f"{knob}: {path} is not readable"
    from gsmcpd.auth.tls import TlsError, server_context
    try:
        server_context(config.tls_cert, config.tls_key)
    except TlsError as exc:
        return f"tls_cert/tls_key: {exc}"
    return None


def _jwks_file_problem(path: Path, timeout: float) -> str | None:
    """What `serve` would meet loading the keys (there a warning: the file may be fixed later).
    Read on a thread given `timeout`, as serve gives its fetch: a FIFO no one writes to,
    or a file on a hung mount, held check for ever."""
    from gsmcpd.auth.jwks import JwksError, KeySource
    found = [f"jwks_file: reading {path} did not finish within {timeout:g} s "
             f"(MCP_JWKS_TIMEOUT; a FIFO no one writes to, a hung mount)"]

    def load():
        try:
            KeySource(post=lambda fn: None, jwks_file=str(path)).load_now()
            found[0] = None
        except JwksError as exc:
            found[0] = f"jwks_file: {exc}"
    loading = threading.Thread(target=load, name="gsmcpd-check-jwks", daemon=True)   # left stuck at exit
    loading.start()
    loading.join(timeout)
    return found[0]


def _image_problem(config: Config, per_user: bool) -> str | None:
    from gsmcpd.image.default import image_dir_problem
    if not config.image.exists() and config.image == config.state_dir / "image":
        return None  # the default image is created on first start
    return image_dir_problem(config.image, per_user=per_user)


def _log_file_problem(path: Path) -> str | None:
    """What serve would meet opening GS_MCP_LOG_FILE for appending (created if missing)."""
    if path.is_dir():
        return f"log_file: {path} is a directory"
    shared = _private_dir_problem(path.parent)
    if shared:
        return f"log_file: {shared}"
    if path.exists() or link_loop(path):
        return _append_problem(path)
    problem = _writable_problem(path.parent)
    if problem is None and no_space_left(_nearest_existing(path.parent)):
        problem = f"cannot write to {path}: {os.strerror(errno.ENOSPC)}"
    return f"log_file: {problem}" if problem else None


def _append_problem(path: Path) -> str | None:
    """Whether the file opens for appending as the log handler opens it, writing nothing.
    Permission is not all: a file under /proc may open and then refuse the seek to its
    end, and /dev/full or a file on a full filesystem opens and then refuses every line."""
    try:
        os.close(open_for_appending(path, create=False, nonblocking=True))   # a FIFO: no wait for a reader
    except RefusesWrites as exc:
        return f"log_file: cannot write to {path}: {exc.strerror}"
    except OSError as exc:
        if exc.errno == errno.ENXIO and stat.S_ISFIFO(path.stat().st_mode):
            return f"log_file: {path} is a FIFO with no reader: serve would wait for one to open it"
        return f"log_file: cannot open {path} for appending: {exc.strerror or exc}"
    return None


def _nearest_existing(path: Path) -> Path:
    while not path.exists() and not link_loop(path):
        path = path.parent   # would be created: the nearest existing parent decides
    return path


def _writable_problem(directory: Path) -> str | None:
    probe = _nearest_existing(directory)
    if link_loop(probe):
        return f"{probe}: {os.strerror(errno.ELOOP)}"
    if not probe.is_dir():
        return f"{probe} is not a directory"
    if not os.access(probe, os.W_OK | os.X_OK):
        return f"{probe} is not writable"
    return None


def _state_dir_problem(directory: Path) -> str | None:
    return _writable_problem(directory) or _private_dir_problem(directory)
