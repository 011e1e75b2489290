"""The signals that break a call: the router sends them, the worker raises the breaks.

Two real-time signals, which no ordinary program sends itself: a SIGINT the user's
code sends itself (`os.kill(os.getpid(), SIGINT)`, `_thread.interrupt_main()`, a test of
a command line tool's Ctrl-C handling) is then its own KeyboardInterrupt, and its own
SIGUSR1 its own too, never taken for the router's break. A real-time signal's default
action is to end the process, so the spawner ignores both before it forks a worker
(gsmcpd.worker.spawner) and the worker handles them from its start
(gsmcpd.worker.main). Clear of SIGRTMIN itself, which code using POSIX timers often takes.
"""

import signal

__all__ = ["SOFT_BREAK_SIGNAL", "HARD_BREAK_SIGNAL", "BREAK_SIGNALS"]

SOFT_BREAK_SIGNAL = signal.SIGRTMIN + 6   # SoftBreak, a KeyboardInterrupt, in the tool
HARD_BREAK_SIGNAL = signal.SIGRTMIN + 7   # HardBreak
BREAK_SIGNALS = (SOFT_BREAK_SIGNAL, HARD_BREAK_SIGNAL)

