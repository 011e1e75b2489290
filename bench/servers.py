"""The servers under test, each started by the harness as a child process group.

gsmcpd (the bench toolset, or `bench execution` for the isolation test), the floor,
the floor with one hop, the floor with the hop and the least protocol work
(floor-min), and the SDK peers in their venv. Each knows its router/main
pid (for CPU samples) and how to classify its process tree (for memory).
"""

import os
import resource
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench import procs

REPO = Path(__file__).resolve().parent.parent


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _raise_nofile():
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))


class Server:
    """A server process under test. Subclasses give `command()` and `env()`."""

    kind = "server"

    def __init__(self, name, workdir):
        self.name = name
        self.workdir = Path(workdir)
        self.port = free_port()
        self.proc = None
        self._log = None

    @property
    def url(self):
        return "http://127.0.0.1:%d/mcp" % self.port

    @property
    def pid(self):
        return self.proc.pid

    @property
    def log_path(self):
        return self.workdir / ("%s-%d.log" % (self.name, self.port))

    def env(self):
        return dict(os.environ)

    def command(self):
        raise NotImplementedError

    def start(self, timeout=60.0):
        self.launch()
        return self.wait_listening(timeout)

    def launch(self):
        """Start the process and return at once (wait_listening waits for its port), so
        several servers can start side by side."""
        self.workdir.mkdir(parents=True, exist_ok=True)
        self._log = open(self.log_path, "ab")
        self.proc = subprocess.Popen(self.command(), env=self.env(), cwd=str(REPO), stdout=self._log,
                                     stderr=subprocess.STDOUT, start_new_session=True,
                                     preexec_fn=_raise_nofile)
        return self

    def wait_listening(self, timeout=60.0):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError("%s exited with %s before listening; see %s"
                                   % (self.name, self.proc.returncode, self.log_path))
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.5):
                    return self
            except OSError:
                time.sleep(0.01)
        self.stop()
        raise TimeoutError("%s not listening after %ss" % (self.name, timeout))

    def stop(self, timeout=15.0):
        if self.proc is None:
            return
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                pass
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)  # stragglers (workers, forkserver)
        except ProcessLookupError:
            pass
        self.proc.wait(5)
        if self._log:
            self._log.close()
            self._log = None

    def cpu_seconds(self):
        """CPU of the main (router) process only."""
        return procs.cpu_seconds(self.pid)

    def tree_cpu_seconds(self):
        return sum(filter(None, (procs.cpu_seconds(p) for p in [self.pid] + procs.descendants(self.pid))))

    def memory(self):
        return procs.tree_memory(self.pid)


class Gsmcpd(Server):
    kind = "gsmcpd"

    def __init__(self, name, workdir, toolsets="bench", spare_workers=4, profile=None, extra_env=None):
        super().__init__(name, workdir)
        self.toolsets = toolsets
        self.spare_workers = spare_workers
        self.profile = profile  # path for a cProfile dump of the router, or None
        self.extra_env = dict(extra_env or {})
        # In the workdir, never the system's temp directory, where nothing removed it.
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.state = Path(tempfile.mkdtemp(prefix="gsmcpd-bench-", dir=str(self.workdir)))

    def env(self):
        env = dict(os.environ)
        env.update({
            "PYTHONPATH": str(REPO),
            "GS_MCP_STATE_DIR": str(self.state),
            "GS_MCP_TOOLSETS": self.toolsets,
            "GS_MCP_SPARE_WORKERS": str(self.spare_workers),
            "GS_MCP_MAX_SESSIONS": "5000",
            "GS_MCP_STREAMLESS_IDLE_TIMEOUT": "1800",  # hold idle sessions for the whole run
            "GS_MCP_LOG_LEVEL": "warning",
        })
        env.update(self.extra_env)
        return env

    def command(self):
        serve = ["-m", "gsmcpd", "serve", "--port", str(self.port)]
        if self.profile:
            return [sys.executable, "-m", "cProfile", "-o", str(self.profile)] + serve
        return [sys.executable] + serve

    def memory(self):
        return procs.tree_memory(self.pid, procs.gsmcpd_kind(self.pid))

    def worker_pids(self):
        kind = procs.gsmcpd_kind(self.pid)
        return [p for p in procs.descendants(self.pid) if kind(p) == "worker"]


class Floor(Server):
    kind = "floor"

    def __init__(self, name, workdir, hop=False, minimal=False):
        super().__init__(name, workdir)
        self.hop = hop  # the floor with gsmcpd's one hop per call (bench/floor.py)
        self.minimal = minimal  # the hop and the least protocol work (floor-min)

    def command(self):
        return [sys.executable, str(REPO / "bench" / "floor.py"), "--port", str(self.port)] + (
            ["--hop"] if self.hop else []) + (["--min"] if self.minimal else [])


class SdkPeer(Server):
    kind = "sdk"

    def __init__(self, name, workdir, python, mode="json", fast=False):
        super().__init__(name, workdir)
        self.python = python
        self.mode = mode
        self.fast = fast

    def command(self):
        cmd = [str(self.python), str(REPO / "bench" / "peer_sdk.py"), "--port", str(self.port),
               "--mode", self.mode]
        return cmd + (["--fast"] if self.fast else [])


SDK_CONFIGS = {
    "sdk-json": {"mode": "json", "fast": False},
    "sdk-sse": {"mode": "sse", "fast": False},
    "sdk-fast": {"mode": "json", "fast": True},
}


def make(name, workdir, peer_python=None, profile=None):
    if name == "gsmcpd":
        return Gsmcpd(name, workdir, profile=profile)
    if name == "gsmcpd-exec":
        return Gsmcpd(name, workdir, toolsets="bench,execution")
    if name == "floor":
        return Floor(name, workdir)
    if name == "floor-hop":
        return Floor(name, workdir, hop=True)
    if name == "floor-min":
        return Floor(name, workdir, minimal=True)
    if name in SDK_CONFIGS:
        if peer_python is None:
            raise ValueError("%s needs the peers venv" % name)
        return SdkPeer(name, workdir, peer_python, **SDK_CONFIGS[name])
    raise ValueError("unknown server %r" % name)
