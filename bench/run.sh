#!/bin/sh
# Run the whole benchmark (python -m bench) with the project's venv; extra args pass through.
cd "$(dirname "$0")/.." || exit 1
PY=.venv/bin/python
[ -x "$PY" ] || PY=python3
exec "$PY" -m bench "$@"
