"""The room a worker keeps for itself under a data limit (gsmcpd.worker.memory_limit)."""

import resource
import subprocess
import sys

from gsmcpd.worker.memory_limit import MemoryReserve, data_limit_note
from helpers import REPO


def test_without_a_limit_nothing_is_held_or_said():
    assert resource.getrlimit(resource.RLIMIT_DATA)[0] == resource.RLIM_INFINITY
    reserve = MemoryReserve()
    reserve.hold()
    assert reserve.size == 0 and reserve._held is None
    assert data_limit_note() is None


def test_the_room_held_while_code_fills_the_limit_is_there_once_released():
    # In a process of its own: the limit is for good there.
    code = ("import resource\n"
            "resource.setrlimit(resource.RLIMIT_DATA, (128 << 20, resource.RLIM_INFINITY))\n"
            "from gsmcpd.worker.memory_limit import MemoryReserve, data_limit_note\n"
            "reserve = MemoryReserve()\n"
            "reserve.hold()\n"
            "held = []\n"
            "try:\n"
            "    while True:\n"
            "        held.append(bytearray(1 << 16))\n"
            "except MemoryError:\n"
            "    pass\n"
            "reserve.release()\n"
            "room = bytearray(4 << 20)\n"          # as much as an answer and a receive take
            "reserve.hold()\n"                     # the workspace holds the rest: none to take
            "print(reserve._held is None, data_limit_note())\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                         cwd=str(REPO))
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == ("True (this worker may hold 128 MiB of data, its RLIMIT_DATA: "
                                  "GS_MCP_WORKER_MEMORY sets it; what the workspace holds counts, "
                                  "`del` what it no longer needs)")
