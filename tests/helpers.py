"""Test helpers: start the real daemon on a free loopback port and talk HTTP to it.

Shared by every end-to-end test. The daemon runs as `python -m gsmcpd serve` in its
own process group, exactly as systemd runs it; clients are plain http.client or raw
sockets, so nothing in the way a request reaches the server is simulated.
"""

import contextlib
import fcntl
import functools
import gc
import grp
import http.client
import json
import os
import pickle
import pwd
import random
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PROTOCOL = "2025-11-25"
# The environment of a daemon a test stops with a call still running that no assertion
# waits on to finish: the stop's call grace (GS_MCP_BREAK_GRACE, default 2 s) would pass idle.
QUICK_STOP = {"GS_MCP_BREAK_GRACE": "0.2"}


# The ports daemons are handed lie outside the kernel's ephemeral range: a port bound at 0
# and released was the kernel's pick for outgoing connections too, and any process's
# connect() (to a daemon, to an identity provider) could take it before the daemon bound it
# ("address in use"). Each port handed out is claimed, for every test process of this
# account (another xdist process, another run of the suite beside this one), by a lock on
# its byte of one file (PORT_CLAIMS): a daemon is started some time after its port is
# handed out, and until it binds the port, a bind check alone would let another process
# hand the same port out too, its client then talking to the wrong daemon. A process holds
# its last CLAIMS_HELD claims (one daemon's start is long over by then); a port whose daemon
# still runs, the bind check passes over.
EPHEMERAL_RANGE = "/proc/sys/net/ipv4/ip_local_port_range"
LINUX_EPHEMERAL = (32768, 60999)   # the kernel's default, when the file cannot be read
FIRST_PORT = 1024                  # below it: the privileged ports of system services
PORT_CLAIMS = Path(tempfile.gettempdir()) / ("gsmcpd-test-ports-%d.lock" % os.getuid())
CLAIMS_HELD = 64


def ephemeral_range(path=EPHEMERAL_RANGE):
    """(first, last) of the ports the kernel gives outgoing connections."""
    try:
        first, last = map(int, Path(path).read_text().split())
    except (OSError, ValueError):
        return LINUX_EPHEMERAL
    return first, last


@functools.lru_cache(maxsize=None)
def handed_ports(ephemeral):
    """The ports free_port hands out: from FIRST_PORT up, outside the `ephemeral` range."""
    first, last = ephemeral
    return [port for port in range(FIRST_PORT, 65536) if not first <= port <= last]


class _PortClaims:
    """This process's claims: POSIX record locks on one byte each of PORT_CLAIMS, through
    one descriptor kept open (closing any descriptor of the file would drop them all). A
    forked child holds none of them: it opens the file again."""

    def __init__(self, path=PORT_CLAIMS, held=CLAIMS_HELD):
        self.path, self.held = path, held
        self.pid, self.fd, self.ports = None, None, []
        self.next = None   # where this process goes on looking: a random start, then in turn

    def own(self):
        """Make the claims this process's: a forked child's parent's locks are not its own."""
        if self.pid != os.getpid():
            self.pid, self.ports, self.next = os.getpid(), [], None
            self.fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)

    def claim(self, port):
        """Whether `port` is now this process's: no other process claims it."""
        if port in self.ports:
            return False
        try:
            fcntl.lockf(self.fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 1, port)
        except OSError:   # another process's
            return False
        self.ports.append(port)
        return True

    def release(self, port):
        self.ports.remove(port)
        fcntl.lockf(self.fd, fcntl.LOCK_UN, 1, port)

    def keep_last(self):
        while len(self.ports) > self.held:
            self.release(self.ports[0])


_claims = _PortClaims()


def free_port():
    """A loopback port outside the ephemeral range that no other test process has claimed
    and nothing holds now (a daemon left running, another program), for a daemon to bind:
    each call another, so the ports a test takes for several daemons differ."""
    ports = handed_ports(ephemeral_range())
    if not ports:   # an ephemeral range of every port: the kernel's pick, as before
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            return s.getsockname()[1]
    _claims.own()
    if _claims.next is None:
        _claims.next = random.randrange(len(ports))   # processes start apart: few collisions
    for step in range(len(ports)):
        port = ports[(_claims.next + step) % len(ports)]
        if not _claims.claim(port):
            continue
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                _claims.release(port)
                continue
        _claims.next += step + 1
        _claims.keep_last()
        return port
    raise RuntimeError("no port of the %d outside the ephemeral range is free" % len(ports))


def wait_for_port(port, timeout=20.0, proc=None, host="127.0.0.1"):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError("daemon exited with %s before listening" % proc.returncode)
        try:
            with socket.create_connection((host, port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.01)   # a refused loopback connect costs next to nothing
    raise TimeoutError("nothing listening on port %d after %ss" % (port, timeout))


class Daemon:
    """The real gsmcpd, foreground mode, in its own process group."""

    # Every one started in this pytest process, in order: conftest's check stops and
    # names any a test (or a fixture's failed set-up) left running.
    started = []
    # Their PYTHONPATH; conftest's daemons_fsync_skipped adds tests/no_fsync for a module's.
    pythonpath = str(REPO)

    def __init__(self, tmp_path, env=None, args=(), port=None, preexec=None):
        self.tmp = Path(tmp_path)
        self.state = self.tmp / "state"
        self.port = port or free_port()
        self.log_path = self.tmp / ("daemon-%d.log" % self.port)
        self.env = dict(os.environ)
        self.env.update({"GS_MCP_STATE_DIR": str(self.state), "PYTHONPATH": self.pythonpath})
        self.env.update(env or {})
        self.args = list(args)
        self.preexec = preexec  # run in the child before the daemon starts
        self.python = sys.executable   # the python serve runs as (another venv's)
        self.proc = None

    def start(self, wait=True):
        cmd = [self.python, "-m", "gsmcpd", "serve", "--port", str(self.port)] + self.args
        self._log = open(self.log_path, "ab")
        self.proc = subprocess.Popen(cmd, env=self.env, cwd=str(REPO), stdout=self._log,
                                     stderr=subprocess.STDOUT, start_new_session=True,
                                     preexec_fn=self.preexec)
        Daemon.started.append(self)
        if wait:
            try:
                wait_for_port(self.port, proc=self.proc)
            except BaseException:
                # No caller holds it yet (a `with` or a fixture calls stop only once
                # start returned): a daemon that never listened is ended here.
                self.kill()
                raise
        return self

    def running(self):
        return self.proc is not None and self.proc.poll() is None

    def kill(self):
        """End its whole process group at once (no clean stop to wait for)."""
        if self.running():
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(10)
        self._log.close()

    @property
    def url(self):
        return "http://127.0.0.1:%d/mcp" % self.port

    def log_text(self):
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def status(self):
        """`gsmcpd status --json` of this daemon, as an administrator runs it ({} if none answered)."""
        out = subprocess.run([sys.executable, "-m", "gsmcpd", "status", str(self.port), "--json",
                              "--state-dir", str(self.state)], capture_output=True, text=True,
                             env=self.env, cwd=str(self.tmp))
        return json.loads(out.stdout) if out.returncode == 0 else {}

    def stop(self, timeout=10):
        if self.proc is None or self.proc.poll() is not None:
            return self.proc.returncode if self.proc else None
        self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(5)
            raise
        finally:
            self._log.close()

    def refusal(self, timeout=30):
        """Start it expecting it to refuse: its exit status. One that serves after all
        is stopped, so it cannot outlive the test, and the test fails."""
        self.start(wait=False)
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.stop()
            raise AssertionError("gsmcpd started instead of refusing; log:\n" + self.log_text()) from None
        finally:
            self._log.close()

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()


class Response:
    def __init__(self, status, headers, body):
        self.status = status
        self.headers = {k.lower(): v for k, v in headers}
        self.body = body

    def json(self):
        return json.loads(self.body)

    def header(self, name):
        return self.headers.get(name.lower())

    def __repr__(self):
        return "<Response %d %r>" % (self.status, self.body[:200])


class Client:
    """One keep-alive HTTP connection speaking MCP, with the session id remembered."""

    def __init__(self, port, host="127.0.0.1", timeout=30):
        self.port = port
        self.conn = http.client.HTTPConnection(host, port, timeout=timeout)
        self.session = None
        self._ids = iter(range(1, 1 << 30))

    def close(self):
        self.conn.close()

    def request(self, method, body=None, headers=None, path="/mcp"):
        hdrs = {"Accept": "application/json, text/event-stream"}
        if body is not None:
            hdrs["Content-Type"] = "application/json"
        if self.session:
            hdrs["MCP-Session-Id"] = self.session
            hdrs["MCP-Protocol-Version"] = PROTOCOL
        hdrs.update(headers or {})
        hdrs = {k: v for k, v in hdrs.items() if v is not None}
        if isinstance(body, (dict, list)):
            body = json.dumps(body)
        self.conn.request(method, path, body=body, headers=hdrs)
        resp = self.conn.getresponse()
        return Response(resp.status, resp.getheaders(), resp.read())

    def post(self, message, headers=None):
        return self.request("POST", message, headers)

    def initialize(self, version=PROTOCOL):
        resp = self.post({"jsonrpc": "2.0", "id": next(self._ids), "method": "initialize",
                          "params": {"protocolVersion": version, "capabilities": {},
                                     "clientInfo": {"name": "gsmcpd-tests", "version": "0"}}})
        assert resp.status == 200, resp
        self.session = resp.header("mcp-session-id")
        assert self.session, resp.headers
        note = self.post({"jsonrpc": "2.0", "method": "notifications/initialized"})
        assert note.status == 202, note
        return resp.json()

    def call(self, method, params=None, headers=None):
        message = {"jsonrpc": "2.0", "id": next(self._ids), "method": method}
        if params is not None:
            message["params"] = params
        return self.post(message, headers)

    def tool(self, name, /, **arguments):
        """tools/call; returns the JSON-RPC result (asserting HTTP 200 and no JSON-RPC error).
        `name` is positional-only, so a tool's own argument may be called name too."""
        resp = self.call("tools/call", {"name": name, "arguments": arguments})
        assert resp.status == 200, resp
        reply = resp.json()
        assert "result" in reply, reply
        return reply["result"]

    def delete(self):
        return self.request("DELETE")


def tool_text(result):
    return "".join(item.get("text", "") for item in result["content"])


# The note a cut of a text ends with (gsmcpd.worker.toolset.sendable).
_CUT_NOTE = re.compile(r"\n\[\.\.\. ([\d,]+) more characters of [^\n]* cut: [^\n]* keeps the first ([\d,]+)\]")


def cut_notes(text):
    """Each cut's note in `text`, in order: (the characters it says it left out, those it kept);
    their sum, the length it says the text it cut had."""
    return [(int(more.replace(",", "")), int(kept.replace(",", ""))) for more, kept in _CUT_NOTE.findall(text)]


# Run in the spawned child, in a session of its own and so with no terminal: opening the
# pty it was given by name makes that its controlling terminal (/dev/tty), then it execs.
_TAKE_TERMINAL = "import os, sys; os.close(os.open(os.ttyname(0), os.O_RDWR)); os.execv(sys.argv[1], sys.argv[1:])"


def spawn_in_a_terminal(argv, env):
    """(process, pty master fd): argv run from the checkout with a new pty as its controlling
    terminal and its stdin, stdout and stderr, as an admin's shell runs it. Spawned, not
    pty.fork()ed: pytest runs threads, and forking a threaded process is unsafe (and
    deprecated from Python 3.12). The caller closes the master, a hang-up for the process."""
    master, slave = os.openpty()
    try:
        proc = subprocess.Popen([sys.executable, "-c", _TAKE_TERMINAL, *argv], cwd=str(REPO), env=env,
                                stdin=slave, stdout=slave, stderr=slave, start_new_session=True)
    except BaseException:
        os.close(master)
        raise
    finally:
        os.close(slave)   # the child's copies alone hold it: their last close is EIO at the master
    return proc, master


USER_BUSY = 8   # userdel's exit when a process still runs as the account


def _worth_retrying(argv, done):
    """A userdel refused while a process of the account is still ending (a per-user worker
    reaped just after its daemon stopped), or any of them finding /etc/passwd or /etc/group
    locked by another test process's (the suite runs in several at once)."""
    return ((done.returncode == USER_BUSY and argv[0] == "userdel")
            or (done.returncode != 0 and "try again later" in done.stderr))


def _account_tool(*argv, busy_for=10.0):
    """Run useradd, userdel, groupadd or groupdel; its own complaint is the error. A
    refusal worth retrying is tried again, for up to `busy_for` seconds."""
    deadline = time.monotonic() + busy_for
    done = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    while _worth_retrying(argv, done) and time.monotonic() < deadline:
        time.sleep(0.1)
        done = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    if done.returncode != 0:
        raise RuntimeError("%s failed (exit %d): %s" % (" ".join(argv), done.returncode, done.stderr.strip()))


def _group_exists(name):
    try:
        grp.getgrnam(name)
    except KeyError:
        return False
    return True


@contextlib.contextmanager
def local_account(group=None, groups=()):
    """A fresh login-less account (needs root), its pwd entry yielded; removed after, even
    when the test fails. Its primary group is `group` (a gid or name), else a private group
    of its own named as it (`useradd --user-group`), removed with it; `groups` are its
    supplementary ones. Its home, /nonexistent/<name>, exists nowhere but names the account
    (as a HOME taken from another entry would not)."""
    name = "gsm" + os.urandom(4).hex()
    primary = ["--user-group"] if group is None else ["--no-user-group", "--gid", str(group)]
    supplementary = ["--groups", ",".join(map(str, groups))] if groups else []
    _account_tool("useradd", "--no-create-home", "--home-dir", "/nonexistent/" + name, "--shell",
                  "/usr/sbin/nologin", *primary, *supplementary, name)
    try:
        yield pwd.getpwnam(name)
    finally:
        _account_tool("userdel", name)
        if group is None and _group_exists(name):   # userdel keeps it unless login.defs has USERGROUPS_ENAB
            _account_tool("groupdel", name)


@contextlib.contextmanager
def searchable_dir(prefix="gsmcpd-open-"):
    """A fresh directory under /tmp (mode 0755) every account may search, as pytest's
    tmp_path (0700) is not; removed after."""
    path = Path(tempfile.mkdtemp(prefix=prefix, dir="/tmp"))
    try:
        path.chmod(0o755)
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


@contextlib.contextmanager
def local_group(name=None):
    """A fresh group no account is in (needs root), named `name` or a fresh name, its grp
    entry yielded; removed after, even when the test fails."""
    name = name or "gsmg" + os.urandom(4).hex()
    _account_tool("groupadd", name)
    try:
        yield grp.getgrnam(name)
    finally:
        _account_tool("groupdel", name)


def as_account(uid, gid, work, groups=()):
    """`work()` run in a forked child switched to uid/gid and the supplementary `groups`
    (as a per-user worker is; needs root): ("returned", what it returned) or ("raised",
    "Type: message"). The child is this Python, already started, which the account itself
    may not be able to start (a pyenv build under /root); what `work` imports it may not
    read either, so import that first."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(read)
            os.setgroups(list(groups))
            os.setresgid(gid, gid, gid)
            os.setresuid(uid, uid, uid)
            try:
                outcome = ("returned", work())
            except BaseException as error:
                outcome = ("raised", "%s: %s" % (type(error).__name__, error))
            os.write(write, pickle.dumps(outcome))
        finally:
            os._exit(0)
    os.close(write)
    with os.fdopen(read, "rb") as reading:
        data = reading.read()
    os.waitpid(pid, 0)
    return pickle.loads(data)


def connect_as(uid, address, timeout=None):
    """A TCP connection whose socket a child running as account `uid` made and handed
    back (needs root): the kernel names `uid` as its owner, as for another account's
    client, while this process talks over it."""
    parent, child = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
    pid = os.fork()
    if pid == 0:   # the child: become the account, connect, pass the socket up
        try:
            os.setgroups([])
            os.setgid(uid)
            os.setuid(uid)
            # No name lookup: the account may not read the codecs it would import.
            with socket.socket(socket.AF_INET6 if ":" in address[0] else socket.AF_INET) as sock:
                sock.connect(address)
                socket.send_fds(child, [b"s"], [sock.fileno()])
        finally:
            os._exit(0)
    child.close()   # so a child that failed ends the wait below
    with parent:
        _, fds, _, _ = socket.recv_fds(parent, 1, 1)
    os.waitpid(pid, 0)
    if not fds:
        raise RuntimeError("no connection to %s:%d was made as uid %d" % (address[0], address[1], uid))
    sock = socket.socket(fileno=fds[0])
    sock.settimeout(timeout)
    return sock


def raw_exchange(port, data, timeout=10.0, account=None):
    """Send raw bytes, read until the server closes or goes quiet; return the bytes.
    `account`: a uid to connect as (connect_as)."""
    address = ("127.0.0.1", port)
    with (socket.create_connection(address, timeout=timeout) if account is None
          else connect_as(account, address, timeout)) as s:
        s.sendall(data)
        chunks = []
        s.settimeout(timeout)
        try:
            while True:
                chunk = s.recv(65536)
                if not chunk:
                    break
                chunks.append(chunk)
                if _complete_response(b"".join(chunks)):
                    break
        except socket.timeout:
            pass
    return b"".join(chunks)


def closed_by_peer(sock):
    """Whether the daemon has closed `sock`: on loopback its FIN is here once close() returned."""
    sock.setblocking(False)
    try:
        return sock.recv(1) == b""
    except BlockingIOError:
        return False
    except ConnectionResetError:
        return True


def recv_all(sock):
    """Everything the server sends until it closes the connection."""
    chunks = []
    while True:
        chunk = sock.recv(65536)
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)


def recv_response(sock):
    """One Content-Length response, read whole; the connection stays open."""
    data = b""
    while not _complete_response(data):
        chunk = sock.recv(65536)
        if not chunk:
            raise ConnectionError("closed before its response was whole: %r" % data[:200])
        data += chunk
    return data


def _complete_response(data):
    head, sep, body = data.partition(b"\r\n\r\n")
    if not sep:
        return False
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            return len(body) >= int(value.strip())
    return False


def status_of(raw):
    line = raw.split(b"\r\n", 1)[0]
    parts = line.split()
    return int(parts[1]) if len(parts) > 1 else None


def body_of(raw):
    return raw.partition(b"\r\n\r\n")[2]


def bodies_of(raw):
    """The bodies of the Content-Length responses in raw, in order."""
    out = []
    while raw:
        head, _, rest = raw.partition(b"\r\n\r\n")
        length = int([line.split(b":")[1] for line in head.split(b"\r\n")
                      if line.lower().startswith(b"content-length:")][0])
        out.append(rest[:length])
        raw = rest[length:]
    return out


def _children(pid):
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        if int(fields[1]) == pid and fields[0] != "Z":
            found.append(int(entry.name))
    return found


def worker_pids(daemon_pid):
    """Live worker processes of this daemon: the children of the spawner, which is
    the child of its forkserver."""
    pids = []
    for child in _children(daemon_pid):
        try:
            cmdline = Path("/proc/%d/cmdline" % child).read_bytes()
        except OSError:
            continue
        if b"forkserver" in cmdline:
            for spawner in _children(child):
                pids.extend(_children(spawner))
    return pids


def parent_of(pid):
    """The parent pid of a process (ValueError-free: None once it is gone)."""
    try:
        stat = Path("/proc/%d/stat" % pid).read_text()
    except OSError:
        return None
    return int(stat.rsplit(")", 1)[1].split()[1])


def signals_of(pid, field):
    """The signals a process's /proc status mask names: field "SigIgn" (ignored),
    "SigCgt" (handled), "SigBlk" (blocked)."""
    with open("/proc/%d/status" % pid) as status:
        mask = int(status.read().split(field + ":")[1].split()[0], 16)
    return {signum for signum in range(1, signal.NSIG) if mask & (1 << (signum - 1))}


def pid_alive(pid):
    try:
        stat = Path("/proc/%d/stat" % pid).read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


# How a "session ended" error names a worker killed by SIGKILL (gsmcpd.wire.worker_exit).
SIGKILL_WORDS = ("SIGKILL: kill -9, the kernel's OOM killer (see `journalctl -k` / dmesg), or a hard "
                 "CPU-time limit (RLIMIT_CPU) the session's code set")


def killed(pid):
    """The message of the error a call gets when its worker `pid` was killed by SIGKILL."""
    return "session ended: worker %d was killed by signal 9 (%s)" % (pid, SIGKILL_WORDS)


def call_in_thread(client, name, arguments):
    """Start a tools/call on a thread of its own: (the thread, the list its JSON answer goes to)."""
    answers = []
    caller = threading.Thread(target=lambda: answers.append(
        client.call("tools/call", {"name": name, "arguments": arguments}).json()), daemon=True)
    caller.start()
    return caller, answers


def runs_until(started, release, result="finished"):
    """execute_code source of a call that touches `started`, then runs until the test
    touches `release` (at most 20 s), so the test, not a sleep, decides when it ends;
    its value is `result`."""
    return ("import os, time\nopen(%r, 'w').close()\nend = time.monotonic() + 20\n"
            "while not os.path.exists(%r) and time.monotonic() < end:\n    time.sleep(0.02)\n%r"
            % (str(started), str(release), result))


# execute_code source whose value is [(fd, target), ...]: what a worker's code holds open
# (but the listing's own descriptor).
LIST_FDS = """
import os
fds = []
for fd in sorted(int(name) for name in os.listdir('/proc/self/fd')):
    try:
        fds.append((fd, os.readlink('/proc/self/fd/%d' % fd)))
    except FileNotFoundError:
        pass
fds
"""

# Python source: `regions_holding(head, tail)` lists the regions of the running process's
# memory that hold head + tail, a string it never builds itself (else it would find that).
SEARCH_OWN_MEMORY = """
import ctypes, re
def regions_holding(head, tail):
    found = []
    with open('/proc/self/maps') as maps:
        for line in maps:
            fields = line.split()
            low, high = (int(end, 16) for end in fields[0].split('-'))
            name = fields[5] if len(fields) > 5 else hex(low)
            if 'r' not in fields[1] or name.startswith(('[vvar', '[vsyscall')):
                continue
            memory = memoryview((ctypes.c_char * (high - low)).from_address(low)).cast('B')
            if any(memory[at.end():at.end() + len(tail)] == tail
                   for at in re.finditer(re.escape(head), memory)):
                found.append(name)
    return found
"""


def rss_kib(pid):
    with open("/proc/%d/status" % pid) as f:
        return int([line.split()[1] for line in f if line.startswith("VmRSS:")][0])


def peak_rss_kib(pid):
    """The most memory the process has held at once (VmHWM)."""
    with open("/proc/%d/status" % pid) as f:
        return int([line.split()[1] for line in f if line.startswith("VmHWM:")][0])


def rss_settles_under(daemon, before, kib):
    assert wait_until(lambda: rss_kib(daemon.proc.pid) - before < kib, timeout=10), rss_kib(daemon.proc.pid) - before


def wait_until(predicate, timeout=10.0, interval=None):
    """predicate's first true value, or its last false one at the timeout. Polled every
    `interval` s when given; else 5 ms apart at first, as most conditions hold within a
    few, doubling to 50 ms, so a long wait does not spin beside the daemon it waits on."""
    deadline = time.monotonic() + timeout
    pause = interval or 0.005
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(pause)
        pause = interval or min(pause * 2, 0.05)
    return predicate()


def exclusive_lock_free(image_dir):
    """Whether a commit could take the image's lock now, without waiting for it."""
    import fcntl
    fd = os.open(os.path.join(image_dir, ".gsmcpd", "lock"), os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return True
    except BlockingIOError:
        return False
    finally:
        os.close(fd)


@contextlib.contextmanager
def steady_descriptors():
    """For a test that counts this process's descriptors: what earlier tests left to the
    garbage collector (a socket or an epoll in a reference cycle) is collected first, and
    the collector kept off meanwhile. A collection tripping halfway through the count
    would close them then: descriptors freed that the test counted as taken."""
    gc.collect()
    was_on = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_on:
            gc.enable()


@contextlib.contextmanager
def unwritable_dir(path, fill):
    """`path`, made and filled by `fill(path)`, then unwritable for this account: mode 0555
    for an ordinary one; for root, whom modes do not stop, a read-only tmpfs (skipped
    where mounting is not allowed)."""
    import pytest
    path.mkdir()
    as_root = os.geteuid() == 0
    if as_root:
        mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(path)],
                                 capture_output=True, text=True)
        if mounted.returncode != 0:
            pytest.skip(f"root cannot mount a tmpfs here: {mounted.stderr.strip()}")
    try:
        fill(path)
        if as_root:
            subprocess.run(["mount", "-o", "remount,ro", str(path)], check=True)
        else:
            os.chmod(path, 0o555)
        yield path
    finally:
        if as_root:
            subprocess.run(["umount", "-l", str(path)], check=True)
        else:
            os.chmod(path, 0o755)


@contextlib.contextmanager
def chattr_flagged(path, flag):
    """`path` with the attribute `flag` ("i": immutable, "a": append-only) set, which even
    root may not write past; cleared after (skipped where the file system keeps none)."""
    import pytest
    flagged = subprocess.run(["chattr", "+" + flag, str(path)], capture_output=True, text=True)
    if flagged.returncode != 0:
        pytest.skip(f"cannot chattr +{flag} here: {flagged.stderr.strip()}")
    try:
        yield path
    finally:
        subprocess.run(["chattr", "-" + flag, str(path)], check=True)


def open_session(daemon):
    """A client with a session initialized on `daemon`."""
    client = Client(daemon.port)
    client.initialize()
    return client


def sweep_seeds(run_case, argv, path, detail=300):
    """A property test file run as a script: `python FILE FIRST COUNT` runs that many
    more seeds than the suite does, printing each failing seed and where it failed (the
    whole traceback when COUNT is 1)."""
    import traceback
    import pytest
    first, count = int(argv[1]), int(argv[2])
    failed = 0
    for seed in range(first, first + count):
        try:
            run_case(seed)
        except (Exception, pytest.fail.Exception) as error:
            failed += 1
            where = [f for f in traceback.extract_tb(error.__traceback__) if f.filename == path][-1]
            print(f"seed {seed}: line {where.lineno} {type(error).__name__}: {str(error)[:detail]!r}")
            if count == 1:
                traceback.print_exception(error)
    print(f"{failed} of {count} seeds failed")


def nested_packages(root, depth):
    """`root/p/p/.../p`, `depth` levels each a package; returns the deepest's path in `root`.
    Made one level at a time, each from its parent's descriptor: Path.mkdir(parents=True)
    recurses per level, and a path per level costs depth² name lookups. Remove it with
    remove_tree: shutil.rmtree (pytest's too) recurses per level as well."""
    fd = os.open(root, _DIRECTORY)
    try:
        for _ in range(depth):
            os.mkdir("p", dir_fd=fd)
            fd = _descend(fd, "p")
            os.close(os.open("__init__.py", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd))
    finally:
        os.close(fd)
    return "/".join(["p"] * depth)


def too_long_tree(root):
    """Packages p/p/.../p in `root`, the deepest whose __init__.py fits in PATH_MAX holding
    leaf.py and a module whose long name does not fit, and one package more, whose
    __init__.py does not fit either. Returns (deepest that fits, long module, package past)."""
    path_max = os.pathconf(root, "PC_PATH_MAX")
    depth = (path_max - 1 - len(os.fsencode(os.path.realpath(root))) - len("/__init__.py")) // 2
    nested_packages(root, depth + 1)
    deepest = "/".join(["p"] * depth)
    (Path(root) / deepest / "leaf.py").write_text("class Leaf:\n    pass\n")
    long_name = "m" * 60 + ".py"
    fd = os.open(os.path.join(root, deepest), os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.close(os.open(long_name, os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd))
    finally:
        os.close(fd)
    return deepest, f"{deepest}/{long_name}", f"{deepest}/p/"


_DIRECTORY = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW


def _descend(fd, name):
    """The descriptor of directory `name` in the one `fd` names, which is then closed."""
    child = os.open(name, _DIRECTORY, dir_fd=fd)
    os.close(fd)
    return child


def remove_tree(path):
    """Remove the directory `path` and all below it without recursing (no link followed).
    It walks by descriptor, one directory open at a time, so a step looks up one name, not
    a path as long as the tree is deep."""
    path = os.path.abspath(path)
    top = os.open(os.path.dirname(path), _DIRECTORY)
    fd, names = os.open(os.path.basename(path), _DIRECTORY, dir_fd=top), []
    try:
        while True:
            with os.scandir(fd) as scan:
                entries = list(scan)
            subdir = next((entry.name for entry in entries if entry.is_dir(follow_symlinks=False)), None)
            if subdir is not None:
                fd = _descend(fd, subdir)
                names.append(subdir)
                continue
            for entry in entries:
                os.unlink(entry.name, dir_fd=fd)
            if not names:
                break
            fd = _descend(fd, "..")
            os.rmdir(names.pop(), dir_fd=fd)
    finally:
        os.close(fd)
    try:
        os.rmdir(os.path.basename(path), dir_fd=top)
    finally:
        os.close(top)


def commit_left_half_applied(image, monkeypatch):
    """`image` (with a.py "A = 1" and b.py "B = 1") as a commit of both to 2 leaves it when
    killed past its commit point between its renames: a.py new, b.py old, the intent
    pending (the disk fails the second rename). Returns the ImageStore."""
    from gsmcpd.image import store as store_module
    from gsmcpd.image.store import CommitPending, ImageStore, sha256

    store = ImageStore(image)
    base = {rel: sha256(data) for rel, data in store.read_snapshot().files.items()}
    real_replace = os.replace

    def replace_all_but_b(src, dst, **dir_fds):
        if str(dst).endswith("b.py"):
            raise OSError("injected failure")
        real_replace(src, dst, **dir_fds)

    with monkeypatch.context() as patched:
        patched.setattr(store_module.os, "replace", replace_all_but_b)
        try:
            store.commit({"a.py": b"A = 2\n", "b.py": b"B = 2\n"}, base, user="u", session_id="s")
        except CommitPending:
            return store
    raise AssertionError("the commit was not left pending")
