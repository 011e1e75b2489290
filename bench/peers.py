"""The throwaway venv the peer servers run in (bench/.venv-peers/, git-ignored).

Created on first use with `python -m venv` and pip; never touched by the test suite.
"""

import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parent
VENV = BENCH / ".venv-peers"
PACKAGES = ["mcp", "uvicorn", "uvloop", "httptools"]
OPTIONAL = ["py-spy"]  # for --profile; the run goes on without it


def python():
    return VENV / "bin" / "python"


def ensure(log=print):
    """The peers venv's python, creating the venv and installing the peers if needed."""
    py = python()
    marker = VENV / ".installed"
    if py.exists() and marker.exists():
        return py
    log("bench: creating %s (mcp, uvicorn, uvloop, httptools)" % VENV)
    subprocess.run([_base_python(), "-m", "venv", str(VENV)], check=True)
    _pip(py, PACKAGES, required=True)
    optional = _pip(py, OPTIONAL, required=False)
    if optional.returncode != 0:
        log("bench: py-spy could not be installed; --profile will use cProfile only")
    marker.write_text("\n".join(PACKAGES) + "\n")
    return py


def _pip(py, packages, required):
    # pip's output is noise on success; shown in full when an install fails
    done = subprocess.run([str(py), "-m", "pip", "install", "-q"] + packages, capture_output=True, text=True)
    if done.returncode != 0:
        sys.stderr.write(done.stdout + done.stderr)
        if required:
            raise SystemExit("bench: could not install %s into %s" % (" ".join(packages), VENV))
    return done


def versions(py=None):
    """Installed versions of the peer packages (for the report)."""
    py = py or python()
    code = ("import importlib.metadata as m, json\n"
            "out = {}\n"
            "for name in %r:\n"
            "    try: out[name] = m.version(name)\n"
            "    except m.PackageNotFoundError: out[name] = None\n"
            "print(json.dumps(out))" % (PACKAGES,))
    done = subprocess.run([str(py), "-c", code], capture_output=True, text=True)
    if done.returncode != 0:
        return {}
    import json
    return json.loads(done.stdout)


def py_spy():
    path = VENV / "bin" / "py-spy"
    return path if path.exists() else None


def _base_python():
    # sys.executable may itself be a venv's; venv creation works from it all the same.
    return getattr(sys, "_base_executable", None) or sys.executable
