"""What a tool call's code prints: a text stream that stands in for sys.stdout and
sys.stderr while execute_code or the testing tools run it, as a terminal's would."""

from __future__ import annotations

import codecs
import io


# Code asking for the stream's descriptor (faulthandler.enable(), a subprocess given
# stdout=sys.stdout) is told why there is none and what to pass instead. The worker's
# real stderr is no answer: raw writes there would bypass the log's escaping and rate
# limit (a per-user worker's is /dev/null for that reason).
NO_FILENO = ("fileno: this call's sys.stdout and sys.stderr are kept in memory for its answer, "
             "so they have no file descriptor; give code that needs one a file of its own: "
             "faulthandler.enable(file=open(path, 'a')) with a path outside the worker's TMPDIR "
             "(which goes with the worker), or subprocess.run(..., capture_output=True) and print "
             "what it returns")


class Capture(io.StringIO):
    """Keeps the first `cap` characters written and counts the rest, so
    code printing gigabytes does not fill the worker's memory. Every thread's writes are
    the call's while it runs, as a notebook's running cell takes them: a thread pool or
    consumer an earlier call made does this call's work."""

    encoding = "utf-8"   # as a terminal's stream says (StringIO's is None: `.encoding.lower()` fails)

    def __init__(self, cap: int):
        super().__init__()
        self.cap = cap
        self.cut = 0
        self.buffer = BytesOutput(self)
        # What the call's fds 1 and 2 hold is taken first (descriptors.DescriptorCapture):
        # an os.write and a print after it come in that order.
        self.before_write = None

    def write(self, text: str) -> int:
        if self.before_write is not None:
            self.before_write()
        return self.keep(text)

    def keep(self, text: str) -> int:
        """Write `text`, to the cap."""
        room = max(0, self.cap - self.tell())
        self.cut += max(0, len(text) - room)
        return super().write(text[:room]) + max(0, len(text) - room)

    def text(self) -> str:
        """All it kept, bytes the buffer held back (a cut UTF-8 sequence) included."""
        self.buffer.finish()
        return self.getvalue()

    def fileno(self) -> int:
        raise io.UnsupportedOperation(NO_FILENO)

    def close(self) -> None:
        """Nothing: code that closes sys.stdout (as a script may, at its end) must not
        lose what it printed, nor the call its answer."""


class BytesOutput(io.RawIOBase):
    """The stream's `buffer`: bytes written to it are shown as UTF-8 text, in order with
    what was printed, and a byte that is not UTF-8 as its escape (`\\xff`). A raw binary
    stream, so `io.TextIOWrapper(sys.stdout.buffer, ...)` (re-encoding) works on it."""

    def __init__(self, text_stream: Capture):
        super().__init__()
        self._text = text_stream
        self._decode = codecs.getincrementaldecoder("utf-8")("backslashreplace").decode

    def write(self, data) -> int:
        data = bytes(data)
        self._text.write(self._decode(data))
        return len(data)

    def finish(self) -> None:
        self._text.write(self._decode(b"", final=True))

    def writable(self) -> bool:
        return True

    def fileno(self) -> int:
        raise io.UnsupportedOperation(NO_FILENO)

    def close(self) -> None:
        """Nothing, as for the text stream (a TextIOWrapper closes its buffer with it)."""
