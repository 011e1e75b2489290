"""The forkserver's preload: its rehearsal runs real sessions and leaves nothing behind."""

import json
import os
import subprocess
import sys

from helpers import REPO

PROBE = """
import json, sys, tempfile, os
before = set(os.listdir(tempfile.gettempdir()))
import gsmcpd.worker.preload as preload
rounds = preload.rehearse(3)
print(json.dumps({
    "rounds": rounds,
    "loaders": [type(f).__module__ for f in sys.meta_path],
    "image_modules": [m for m in sys.modules if m == "shop" or m.startswith("shop.")],
    "left_in_tmp": [n for n in set(os.listdir(tempfile.gettempdir())) - before if "rehearsal" in n],
}))
"""


def test_the_rehearsal_plays_whole_sessions_and_undoes_them(tmp_path):
    # Its own TMPDIR: other tests' rehearsals (daemons starting) may run meanwhile.
    out = subprocess.run([sys.executable, "-c", PROBE], cwd=str(REPO), capture_output=True,
                         text=True, timeout=120, env={**os.environ, "TMPDIR": str(tmp_path)})
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout)
    assert report["rounds"] == 3
    assert "gsmcpd.image.view" not in report["loaders"]
    assert report["image_modules"] == []
    assert report["left_in_tmp"] == []


def test_the_forkserver_preload_imports_no_config():
    # Workers name the knobs' words from knob_words: the config's parsing (its knobs, the
    # lifetime policy) was ~40M instructions of every forkserver's start, for no worker.
    probe = ("import sys, gsmcpd.worker.forkserver_reaper, gsmcpd.worker.preload\n"
             "print([m for m in ('gsmcpd.config', 'gsmcpd.router.lifetime') if m in sys.modules])\n")
    out = subprocess.run([sys.executable, "-c", probe], cwd=str(REPO), capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


def test_a_rehearsal_that_goes_wrong_says_so():
    probe = ("import gsmcpd.worker.preload as p\n"
             "p._CALLS.append(('tools/call', {'name': 'no_such_tool', 'arguments': {}}))\n"
             "p.rehearse(1)\n")
    out = subprocess.run([sys.executable, "-c", probe], cwd=str(REPO), capture_output=True,
                         text=True, timeout=120)
    assert out.returncode != 0
    assert "the worker rehearsal went wrong" in out.stderr


def test_a_rehearsal_failing_before_its_view_is_closed_leaves_no_import_hook_behind():
    # The forkserver goes on to fork every worker from this process: a view's finder or
    # path hook left in sys.meta_path or sys.path_hooks would be in each of them.
    probe = ("import json, sys\n"
             "import gsmcpd.worker.main as main, gsmcpd.worker.preload as p\n"
             "serve = main.WorkerLoop.serve\n"
             "def failing(self):\n"
             "    serve(self)\n"
             "    raise RuntimeError('after the session, before its view is closed')\n"
             "main.WorkerLoop.serve = failing\n"
             "try:\n"
             "    p.rehearse(1)\n"
             "except RuntimeError as error:\n"
             "    print(json.dumps({'raised': str(error),\n"
             "        'loaders': [type(f).__module__ for f in sys.meta_path],\n"
             "        'hooks': [getattr(h, '__module__', None) for h in sys.path_hooks]}))\n")
    out = subprocess.run([sys.executable, "-c", probe], cwd=str(REPO), capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout)
    assert report["raised"] == "after the session, before its view is closed"
    assert "gsmcpd.image.view" not in report["loaders"]
    assert "gsmcpd.image.view" not in report["hooks"]


PLANS_PROBE = """
import json
import gsmcpd.worker.preload as preload
from gsmcpd.worker import tool_plans
from gsmcpd.worker.server import build_server
from gsmcpd.worker.toolsets import CORE_TOOLSETS, resolve_toolsets
builtin = resolve_toolsets(preload._TOOLSETS)
planned = [toolset for toolset in builtin if toolset in tool_plans._plans]
# the rehearsal's forty sessions built their servers from the plans: unchanged by them
unchanged = [repr(tool_plans._plans[t]) == repr(tool_plans.make_plan(t)) for t in planned]
def refused(self, registry):
    raise AssertionError("registered anew")
for toolset in builtin:
    toolset.register = refused
server = build_server({"read_only": False, "toolsets": list(CORE_TOOLSETS)})
print(json.dumps({"builtin": len(builtin), "planned": len(planned), "unchanged": unchanged,
                  "tools": len(server.registry)}))
"""


def test_the_preload_makes_every_builtin_toolsets_tools_once_for_every_worker(tmp_path):
    out = subprocess.run([sys.executable, "-c", PLANS_PROBE], cwd=str(REPO), capture_output=True,
                         text=True, timeout=120, env={**os.environ, "TMPDIR": str(tmp_path)})
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout)
    assert report["builtin"] == 8 and report["planned"] == 8
    assert report["unchanged"] == [True] * 8
    assert report["tools"] == 31   # built with no register() run
