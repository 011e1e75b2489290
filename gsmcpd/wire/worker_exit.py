"""How a worker's end is told to its session's client: the status a worker exits with
when its channel to the router fails, and the words for any exit status.

The spawner, the workers' parent, reaps each and reports its status (waitstatus_to_exitcode:
negative for a signal) to the router, which words it here for the -32003 "session ended"
error, its `data` and its log line.
"""

import signal

__all__ = ["CHANNEL_LOST", "described"]

# What a worker exits with when it cannot read or answer the router: the session's code
# closed its channel's descriptor (os.closerange). Only the worker can tell: its watchdog
# thread, polling the socket, holds it open, so the router sees no EOF before the exit.
# Any other status is the code's, or a signal's.
CHANNEL_LOST = 113

_SIGNAL_CAUSES = {
    signal.SIGKILL: ("kill -9, the kernel's OOM killer (see `journalctl -k` / dmesg), or a hard "
                     "CPU-time limit (RLIMIT_CPU) the session's code set"),
    signal.SIGALRM: "an alarm the session's code set (signal.alarm, setitimer) with no handler",
    signal.SIGVTALRM: "a timer the session's code set (setitimer) with no handler",
    signal.SIGPROF: "a timer the session's code set (setitimer) with no handler",
    signal.SIGXCPU: "the CPU-time limit (RLIMIT_CPU) the session's code set ran out",
    signal.SIGXFSZ: "the file-size limit (RLIMIT_FSIZE) the session's code set was passed",
    signal.SIGSEGV: "a crash in native code: an extension module, ctypes, or a stack overflow",
    signal.SIGBUS: "a crash in native code, or a mapped file that shrank",
    signal.SIGFPE: "a crash in native code",
    signal.SIGILL: "a crash in native code",
    signal.SIGABRT: "abort(): a fatal error in native code or in Python itself",
    signal.SIGPIPE: "a write to a closed pipe, with the default action the session's code restored",
}
_SENT = "sent by another process (kill), or by the session's code (os.kill)"
_CHANNEL = ("it could not answer the router (the session's code closed its channel, "
            "a descriptor of the worker's own, e.g. with os.closerange or os.close)")


def described(pid, code=None, stopped_for=None):
    """(text, data) telling how worker `pid` ended: the text follows "session ended: ", the
    data is the error's (None when nothing is known). `code`: its exit code as
    os.waitstatus_to_exitcode gives it (a signal's negated), None if it could not be had;
    `stopped_for`: why the router killed it (the status is then its kill)."""
    if stopped_for:
        return "worker %d was stopped by the server: %s" % (pid, stopped_for), {"exit": {"stopped": stopped_for}}
    if code == CHANNEL_LOST:
        return "worker %d exited: %s" % (pid, _CHANNEL), {"exit": {"channelClosed": True}}
    if code is None:
        return "worker %d exited" % pid, None
    if code >= 0:
        return ("worker %d exited with status %d (the session's code ended its process, "
                "e.g. with os._exit(%d))" % (pid, code, code), {"exit": {"status": code}})
    number = -code
    try:
        name = signal.Signals(number).name
    except ValueError:
        name = "signal %d" % number
    verb = "was killed" if number == signal.SIGKILL else "ended"
    return ("worker %d %s by signal %d (%s: %s)" % (pid, verb, number, name, _SIGNAL_CAUSES.get(number, _SENT)),
            {"exit": {"signal": number, "name": name}})
