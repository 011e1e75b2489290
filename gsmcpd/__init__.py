"""gsmcpd: an MCP server daemon giving each client an isolated worker process on a Python image."""

import sys

# Here, the first module `python -m gsmcpd` runs, before one written for 3.11 is read
# (python3.9 met a TypeError in an `X | None` annotation, older ones a SyntaxError): this
# file stays readable by any Python, 2.7 too.
if sys.version_info < (3, 11):
    raise SystemExit("gsmcpd needs Python 3.11 or newer, not %d.%d (%s): run it with python3.11 "
                     "or newer, or through ./run-server.sh and the checkout's .venv"
                     % (sys.version_info[0], sys.version_info[1], sys.executable))

__version__ = "0.1.0"
