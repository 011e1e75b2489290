"""A trial import apart: whether a module, with a text the session is about to give it,
still imports in a new session.

The static rules (live.py, splice.py) see only reads they can be sure of; a module reading
through an instance (`_inst = Random(); randint = _inst.randint`), a decorator
(`functools.total_ordering` needs one ordering method) or a metaclass fails in no way they
see. So a deletion they let through is tried: the module is imported in a fresh
interpreter (`sys.executable -I` with the worker's sys.path and interpreter options; its
environment, account, working directory and limits inherited) from the view's texts with
the new one in place, the session's other uncommitted changes included, as a new session
would import it once committed; the modules the worker's kernel shadows are left to the
kernel there too. The worker's own live classes stay as they are (re-importing the module here would
replace them). Only a failure the old text does not have is one the
deletion makes. A trial that does not finish within TIMEOUT (or cannot run), with either
text, decides nothing: the deletion goes ahead, with a note saying the import was not tried.
The trial is a process group of its own, killed once it answers, times out or ends: what the
module starts as it imports does not outlive it nor, forked, hold its answer's pipe open, nor,
killed, stay a zombie below the worker. What leaves the group (setsid, a double fork) the
trial, a subreaper, kills and reaps itself once it has answered; one killed first leaves it.
"""

from __future__ import annotations

import contextlib
import json
import os
import pickle
import select
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass

from gsmcpd.image import own
from gsmcpd.raised import STR_FAILED
from gsmcpd.wire.frames import carried, cut_log_message
from gsmcpd.worker import reaper

TIMEOUT = 10.0   # seconds a trial may take; a module's import taking longer is not judged
REAP_WAIT = 1.0  # seconds for the processes of the trial's group, killed, to end and be reaped, at most
# Bytes read past the deadline at most: what a pipe holds (1 MiB, Linux's pipe-max-size), not
# what a thread the module started goes on writing there, which would hold the call forever.
LATE_READ = 1024 * 1024
# Bytes of an answer at most: a line of JSON, its message the module's exception text (cut to
# MESSAGE_MAX), never what a thread the module started writes into the pipe until the
# deadline, held in the worker's memory: past it, the trial decides nothing.
ANSWER_MAX = 16 * 1024 * 1024
# Characters of the exception's message the answer carries, the rest cut: JSON escapes a
# character in 12 bytes at most (an astral one, two \u escapes), so a failure's answer
# stays within ANSWER_MAX and decides, however long the message the module raised.
MESSAGE_MAX = ANSWER_MAX // 16
# Characters of the exception's type name the answer carries (as a test's report keeps of
# one): a class the module made with a 1 MB __name__ went whole into the refusal, twice.
KIND_MAX = 10_000


class _AnswerTooLong(Exception):
    """More than ANSWER_MAX bytes came where the trial's answer goes."""
# The child reads its payload first, with the worker's sys.path (-I leaves PYTHONPATH out).
_BOOT = ("import pickle, sys; payload = pickle.load(sys.stdin.buffer); sys.path[:] = payload['path']; "
         "from gsmcpd.image import trial; trial.child(payload)")
# A failure of the child's resources, not of the module's text: never a refusal. Not
# RecursionError: every new session has Python's default limit, as the child has, and
# imports from a deeper stack than its; one the old text does not meet is the new text's.
_UNDECIDED = {"MemoryError": "ran out of memory (MemoryError)"}


@dataclass
class Failure:
    kind: str          # the exception's type name
    message: str
    line: int | None   # the line of the module's (new) text the import failed on
    top: int | None    # the module-level statement's line that ran it (== line but in a def it called)
    uncut_length: int | None = None   # the message's length where MESSAGE_MAX cut it
    kind_uncut_length: int | None = None   # the type name's length where KIND_MAX cut it

    @property
    def cut_out(self) -> int:
        """Characters the trial's cuts left out of the type name and the message, together."""
        return sum(uncut - len(cut) for uncut, cut in ((self.uncut_length, self.message),
                                                        (self.kind_uncut_length, self.kind)) if uncut is not None)


@dataclass
class Undecided:
    why: str           # what the trial did, read after "the trial import of M apart": "timed out after 10 s"


def try_import(view, module: str, text: str) -> Failure | Undecided | None:
    """How `module` imports in a new session with `text` as its text: None when it does."""
    rel = view.relpath(module)
    texts = {**view.texts, rel: text}
    shadowed = [name for name in view.module_names() if view.shadowed(name)]
    payload = {"path": [entry for entry in sys.path if isinstance(entry, str)],
               "root": view.store.root, "texts": texts, "shadowed": shadowed, "module": module, "rel": rel}
    try:
        with _payload_file(payload) as sent:
            # A group of its own: what the module starts is ended with it (child(), and _end).
            trying = subprocess.Popen([sys.executable, *_flags(), "-I", "-c", _BOOT], stdin=sent,
                                      stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, start_new_session=True)
    except OSError as error:
        return Undecided(f"could not start ({error})")
    with trying:
        try:
            out = _answer(trying.stdout, TIMEOUT)
        except _AnswerTooLong:
            return Undecided(f"wrote over {ANSWER_MAX:,} bytes where its answer goes")
        finally:   # answered, timed out, too long, or a break: not held up by the import
            _end(trying)
    if out is None:
        return Undecided(f"timed out after {TIMEOUT:g} s")
    try:
        said = json.loads(out)   # JSON, not pickle: the module's code could write there too
    except ValueError:
        return Undecided(f"gave no answer (exit status {trying.returncode})")
    if said is None:
        return None
    if not isinstance(said, dict) or not {"kind", "message", "line", "top"} <= said.keys():
        return Undecided("gave an answer that could not be read")
    if isinstance(said["kind"], str) and said["kind"] in _UNDECIDED:
        return Undecided(_UNDECIDED[said["kind"]])
    return Failure(said["kind"], carried(said["message"]), said["line"], said["top"], said.get("length"),
                   said.get("kind_length"))


def _payload_file(payload: dict):
    """The pickled payload in a file of memory (else a temporary one), the trial's stdin: written
    whole before it starts, so nothing but its answer is waited for (Popen.communicate would
    reap it too)."""
    try:
        sent = open(os.memfd_create("gsmcpd-trial"), "w+b")
    except (AttributeError, OSError):   # no memfd_create (a libc or kernel before it, a seccomp filter)
        sent = tempfile.TemporaryFile()   # unnamed too where the system can (O_TMPFILE), and 0600
    try:
        sent.write(pickle.dumps(payload))
        sent.flush()
        sent.seek(0)
    except BaseException:
        sent.close()
        raise
    return sent


def _answer(stdout, seconds: float) -> bytes | None:
    """All the trial writes on `stdout`, until it is closed; None if that takes over `seconds`,
    unless its answer has come whole (its last line ended): the trial, still killing what the
    module started, answered in time. _AnswerTooLong past ANSWER_MAX bytes."""
    deadline = time.monotonic() + seconds
    waiting = select.poll()
    waiting.register(stdout, select.POLLIN)
    chunks = []
    read = late = 0   # bytes read, and of them past the deadline
    while True:
        left = max(deadline - time.monotonic(), 0)   # at the deadline, what is waiting still read
        if late > LATE_READ or not waiting.poll(left * 1000):
            answer = b"".join(chunks)
            return answer if answer.endswith(b"\n") and late <= LATE_READ else None
        chunk = os.read(stdout.fileno(), 65536)
        if not chunk:
            return b"".join(chunks)
        read += len(chunk)
        if read > ANSWER_MAX:
            raise _AnswerTooLong
        chunks.append(chunk)
        if not left:
            late += len(chunk)


def _end(trying: subprocess.Popen) -> None:
    """Kill the trial's group (its own, the trial not reaped yet) and reap the trial, and what
    of the group is the worker's by then: killed, a process the module forked is reparented
    to the worker (a child subreaper, gsmcpd.worker.reaper) and would stay a zombie till it
    ends. Never another child of the worker's, which the session's code may wait for."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(trying.pid, signal.SIGKILL)
    killed = reaper.open_group(trying.pid)
    try:
        trying.wait()
    finally:   # a break landing in the wait: the pidfds are closed all the same
        reaper.reap_those(killed, REAP_WAIT)


def _flags() -> list[str]:
    """The worker's interpreter options, which -I would otherwise drop with the environment
    they came from (PYTHONOPTIMIZE: a new session's import skips a top-level `assert`), as
    multiprocessing passes them on to the forkserver the workers come from."""
    flags = subprocess._args_from_interpreter_flags()
    if sys.flags.utf8_mode and "utf8" not in sys._xoptions:   # PYTHONUTF8: open()'s default encoding
        flags += ["-X", "utf8"]
    if sys.flags.int_max_str_digits != -1:
        flags += ["-X", f"int_max_str_digits={sys.flags.int_max_str_digits}"]
    return flags


def failure_made(view, module: str, old_text: str, new_text: str) -> Failure | Undecided | None:
    """The failure `new_text` makes `module` import with in a new session, or why that is
    undecided (with either text); None when it imports, or failed there with `old_text`
    already (not this change's doing), or failed outside its own code: in its package's
    `__init__` or an importer that runs first (`from .parts import Wheel`), which the
    deletion's re-import names, as for any importer."""
    new = try_import(view, module, new_text)
    if not isinstance(new, Failure) or new.line is None:
        return None if isinstance(new, Failure) else new
    old = try_import(view, module, old_text)
    # Undecided with the old text (a slow import timing out), whose failure it is is not known.
    return old if isinstance(old, Undecided) else new if old is None else None


def child(payload: dict) -> None:
    """The trial's interpreter: import the module from the texts, answer on stdout, exit."""
    from types import SimpleNamespace

    from gsmcpd.image.view import View
    answer = os.fdopen(os.dup(1), "wb")
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):   # what the module prints goes nowhere, as a new session's import is not shown
        os.dup2(null, fd)
    # A process the module forks (a daemon it starts, left its session too) does not hold
    # the answer's pipe open: the answer ends when this process does.
    os.register_at_fork(after_in_child=lambda: os.dup2(null, answer.fileno(), inheritable=False))
    # A daemon the module starts (setsid, a double fork) leaves the group, not this process's
    # descendants: below a subreaper, they are ended with the trial, not left to the worker.
    reaper.become_subreaper()
    view = View(SimpleNamespace(root=payload["root"]), user="", session_id="")
    view.texts = payload["texts"]
    shadowed = frozenset(payload["shadowed"])
    view.shadowed = shadowed.__contains__
    view.install()
    filename = view.filename(payload["rel"])
    try:
        __import__(payload["module"])
        said = None
    except BaseException as error:
        lines, tb = [], error.__traceback__
        while tb is not None:   # the frames of the module's own code, outermost first
            if tb.tb_frame.f_code.co_filename == filename:
                lines.append(tb.tb_lineno)
            tb = tb.tb_next
        try:
            message = str(error)
        except BaseException:
            message = STR_FAILED   # as raised() and Python's traceback say it
        kind = own.NAME(type(error))   # not a metaclass's __name__
        said = {"kind": cut_log_message(kind, KIND_MAX), "message": cut_log_message(message, MESSAGE_MAX),
                "line": lines[-1] if lines else None, "top": lines[0] if lines else None,
                "length": len(message) if len(message) > MESSAGE_MAX else None,
                "kind_length": len(kind) if len(kind) > KIND_MAX else None}
    answer.write(json.dumps(said).encode() + b"\n")   # its end: whole, though the pipe stays open a while
    answer.flush()
    # No atexit hooks nor threads the module started, nor processes it started: below this
    # one (killed and reaped here) or left in its group.
    reaper.kill_descendants(REAP_WAIT)
    if os.getpgrp() == os.getpid():   # the group try_import made, never a caller's
        os.killpg(0, signal.SIGKILL)
    os._exit(0)
