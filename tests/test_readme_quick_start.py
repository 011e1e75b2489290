"""README.md's examples work as written. The Quick start's curl session (initialize, the
session id echoed back, tools/list, a tools/call on the default image) and the
stop-server.sh that ends it, each command run by bash as a reader would paste it, with only
the port and the session id filled in; and each `SETTING=value ./run-server.sh` line's
settings, which `check` takes (or, for a placeholder module, refuses naming it)."""

import json
import os
import re
import shlex
import subprocess
import sys

from helpers import REPO, Daemon, free_port


def quick_start_commands():
    """The Quick start's sh block that holds the curl session, one command per entry
    (backslash-continued lines joined, comments dropped)."""
    section = (REPO / "README.md").read_text().split("\n## Quick start\n", 1)[1].split("\n## ", 1)[0]
    block = next(block for block in re.findall(r"```sh\n(.*?)```", section, re.S) if "curl" in block)
    joined = block.replace("\\\n", " ")
    return [line.strip() for line in joined.splitlines() if line.strip() and not line.lstrip().startswith("#")]


def run(command, daemon):
    done = subprocess.run(["bash", "-c", command], cwd=str(REPO), env=daemon.env, capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0, f"{command}\n{done.stdout}{done.stderr}"
    return done.stdout


def test_the_quick_start_curl_session_and_its_stop_work_as_written(tmp_path):
    commands = quick_start_commands()
    assert [command.split()[0] for command in commands] == ["curl", "curl", "curl", "./stop-server.sh"]
    initialize, listing, call, stop = commands
    with Daemon(tmp_path) as daemon:
        fill = lambda command: command.replace("8000", str(daemon.port))   # noqa: E731
        head = run(fill(initialize), daemon)
        assert head.startswith("HTTP/1.1 200 ")
        session = re.search(r"^MCP-Session-Id: (\w+)\r?$", head, re.M | re.I).group(1)
        tools = json.loads(run(fill(listing).replace("<id>", session), daemon))["result"]["tools"]
        assert "list_classes" in [tool["name"] for tool in tools]
        answer = json.loads(run(fill(call).replace("<id>", session), daemon))["result"]
        assert "isError" not in answer and "Product" in answer["structuredContent"]["classes"]
        assert "stopped gsmcpd on port %d" % daemon.port in run(fill(stop), daemon)
        assert daemon.proc.wait(10) == 0
    assert not os.path.exists(daemon.state / ("gsmcpd-%d.pid" % daemon.port))


def run_server_examples():
    """Every `SETTING=value ... ./run-server.sh` line of the README's sh blocks: its settings."""
    readme = (REPO / "README.md").read_text()
    for block in re.findall(r"```sh\n(.*?)```", readme, re.S):
        for line in block.replace("\\\n", " ").splitlines():
            code = line.split(" #", 1)[0].strip()
            if re.match(r'(\w+=("[^"]*"|\S+)\s+)+\./run-server\.sh$', code):
                yield code, dict(word.split("=", 1) for word in shlex.split(code)[:-1])


def test_each_run_server_example_s_settings_pass_check_as_written(tmp_path):
    # Placeholders a reader replaces: mypkg's modules are refused naming them, as the README
    # says, and the TLS pair's paths are given a throwaway pair.
    pair = tmp_path / "tls"
    subprocess.run([sys.executable, "-m", "gsmcpd", "cert", "--self-signed", str(pair)], cwd=str(REPO),
                   check=True, capture_output=True)
    base = {k: v for k, v in os.environ.items() if not k.startswith(("GS_MCP_", "MCP_"))}
    examples = list(run_server_examples())
    assert len(examples) >= 8
    for code, settings in examples:
        settings = {name: value.replace("/etc/gsmcpd/", f"{pair}/") for name, value in settings.items()}
        checked = subprocess.run([sys.executable, "-m", "gsmcpd", "check", "--port", str(free_port()),
                                  "--state-dir", str(tmp_path / "state")], cwd=str(REPO), timeout=60,
                                 env={**base, "PYTHONPATH": str(REPO), **settings}, capture_output=True, text=True)
        last = checked.stdout.splitlines()[-1] if checked.stdout else checked.stderr
        if "mypkg" in code:
            assert checked.returncode == 2 and "No module named 'mypkg'" in last, f"{code}: {last}"
        else:
            assert checked.returncode == 0 and last.startswith("OK: ready to serve"), f"{code}: {last}"
    assert not (tmp_path / "state").exists()   # check writes nothing
