"""A per-user worker's environment: the allow-list, and the scrub that wipes the rest."""

import json
import os
import subprocess
import sys

from gsmcpd.worker.environment import unused_list_warning, worker_environ
from helpers import REPO, SEARCH_OWN_MEMORY

DAEMONS = {
    "PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "LC_TIME": "C", "TZ": "UTC", "TMPDIR": "/tmp",
    "PYTHONPATH": "/srv/app", "PYTHONHASHSEED": "0",
    "GS_MCP_PORT": "8123", "MCP_ISSUER": "https://idp.example", "NOTIFY_SOCKET": "/run/systemd/notify",
    "HOME": "/root", "USER": "root", "LOGNAME": "root",
    "AWS_SECRET_ACCESS_KEY": "wJalrXUtnFEMI", "HTTPS_PROXY": "http://user:pass@proxy:3128",
    "PYTHON_API_TOKEN": "not one of CPython's",
}


def test_a_per_user_worker_keeps_only_what_python_code_runs_by():
    kept = worker_environ(DAEMONS)
    assert kept == {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "LC_TIME": "C", "TZ": "UTC",
                    "TMPDIR": "/tmp", "PYTHONPATH": "/srv/app", "PYTHONHASHSEED": "0"}


def test_the_names_listed_are_kept_too_the_daemons_settings_only_if_listed():
    kept = worker_environ(DAEMONS, ["HTTPS_PROXY", "GS_MCP_PORT", "NOT_SET_AT_ALL"])
    assert kept["HTTPS_PROXY"] == "http://user:pass@proxy:3128" and kept["GS_MCP_PORT"] == "8123"
    assert "NOT_SET_AT_ALL" not in kept and "MCP_ISSUER" not in kept
    assert "AWS_SECRET_ACCESS_KEY" not in kept


SCRUB = SEARCH_OWN_MEMORY + """
import json, os, posix, subprocess, sys
from gsmcpd.worker.environment import scrub
head, tail = sys.argv[1].encode(), sys.argv[2].encode()
before = regions_holding(head, tail)
decoded = []   # whether each value os.environ decoded to a str held the secret
decode = os.environ.decodevalue
os.environ.decodevalue = lambda value: decoded.append(head in value) or decode(value)
scrub(['LISTED'])
with open('/proc/self/environ', 'rb') as block:
    exec_block = block.read()
print(json.dumps({
    'before': before, 'after': regions_holding(head, tail), 'environ': dict(os.environ),
    'posix': sorted(os.fsdecode(name) for name in posix.environ),
    'child': sorted(subprocess.run(['env'], capture_output=True, text=True).stdout.splitlines()),
    'secret_decoded': any(decoded),
    'exec_block_wiped': exec_block.count(0) == len(exec_block)}))
"""


def test_a_list_is_said_to_do_nothing_only_where_no_worker_is_scrubbed():
    assert unused_list_warning(("FOO",), per_user=False).startswith("GS_MCP_WORKER_ENV is set, but")
    assert unused_list_warning(("FOO",), per_user=True) is None
    assert unused_list_warning((), per_user=False) is None


def test_scrub_leaves_the_kept_names_and_no_trace_of_the_rest_in_memory():
    # unsetenv alone leaves every value where the kernel put it at exec (what
    # /proc/self/environ reads, and ctypes can), and Python keeps its copies in posix.environ.
    head, tail = "site-credential-", os.urandom(8).hex()
    # LANG set: else Python coerces the C locale, adding LC_CTYPE (PEP 538). The value
    # outgrows pymalloc's blocks: a freed copy then stays in the heap as it was.
    environ = {"PATH": os.environ["PATH"], "PYTHONPATH": str(REPO), "LANG": "C.UTF-8", "LC_TIME": "C",
               "LISTED": "kept-value", "GS_MCP_PORT": "8123", "SITE_TOKEN": "x" * 600 + head + tail}
    done = subprocess.run([sys.executable, "-c", SCRUB, head, tail], env=environ,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout)
    assert seen["before"], "the search does not find the value where it is"
    assert seen["after"] == []
    # A str made of a dropped value is freed unwiped, where the allocator may leave it
    # whole (Python 3.13's did, though 3.11's happened to reuse it): none is made.
    assert not seen["secret_decoded"]
    kept = {"PATH": os.environ["PATH"], "PYTHONPATH": str(REPO), "LANG": "C.UTF-8", "LC_TIME": "C",
            "LISTED": "kept-value"}
    assert seen["environ"] == kept
    assert seen["posix"] == sorted(kept)
    assert seen["child"] == sorted("%s=%s" % item for item in kept.items())
    assert seen["exec_block_wiped"]


def test_only_workers_switched_to_users_accounts_have_it_theirs_keep_the_daemons(tmp_path):
    # A worker that runs as the daemon's own account could read all the daemon can anyway.
    from gsmcpd.config import Config
    from gsmcpd.router.main import Router

    users = tmp_path / "users.map"
    users.write_text("ann nobody\n")
    listed = ("AWS_REGION",)
    auth = dict(auth=True, issuer="https://idp.test", audience="http://127.0.0.1:8000/mcp",
                jwks_file=tmp_path / "jwks.json", worker_env=listed)
    per_user = listed if os.geteuid() == 0 else None      # only a root daemon switches accounts
    for config, passed in ((Config(worker_env=listed), None), (Config(**auth), None),
                           (Config(user_map=str(users), **auth), per_user)):
        router = Router(config)
        try:
            assert router.pool.spawner.worker_env == passed, config
        finally:
            router.close()
