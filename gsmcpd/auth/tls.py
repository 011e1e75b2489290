"""TLS for the router: a server context, a sans-IO connection, a self-signed cert.

`TlsConnection` never touches a socket: the loop feeds it ciphertext with
`receive()`, writes out whatever `pending_output()` returns, and gets/sends
plaintext. It works the same for a non-blocking socket and for tests that
wire two connections to each other in memory.
"""
from __future__ import annotations

import datetime
import ipaddress
import os
import ssl
import stat
from pathlib import Path

from gsmcpd.wire import http

# Sent in the clear (no TLS) to a client that spoke plain HTTP to the TLS port, then close.
PLAINTEXT_HTTP_RESPONSE = http.response(400, [("Content-Type", "text/plain; charset=utf-8")],
                                        b"This port speaks HTTPS: use https:// to connect.\n",
                                        keep_alive=False)

_HTTP_METHODS = tuple(m.encode() + b" " for m in
                      ("GET", "POST", "PUT", "HEAD", "DELETE", "OPTIONS", "PATCH", "CONNECT", "TRACE", "PRI"))
_TLS_HANDSHAKE_RECORD = 0x16


class TlsError(Exception):
    """The TLS session failed (handshake or record layer); close the connection."""


class PlaintextHttpError(TlsError):
    """The peer sent plain HTTP; write `response` unencrypted, then close."""
    response = PLAINTEXT_HTTP_RESPONSE

    def __init__(self):
        super().__init__("plaintext HTTP request on the TLS port")


def server_context(cert: str | os.PathLike, key: str | os.PathLike) -> ssl.SSLContext:
    """A server-side context: TLS 1.2 minimum, HTTP/1.1 ALPN."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.set_alpn_protocols(["http/1.1"])

    def no_passphrase():
        # Without this OpenSSL asks on /dev/tty: `serve` and `check` in a terminal hang
        # at a prompt, and with no terminal (start, systemd) fail with "Invalid argument".
        raise TlsError("the key is encrypted and gsmcpd cannot ask for its passphrase: give "
                       "it an unencrypted key, readable only by the daemon's account")

    try:
        context.load_cert_chain(os.fspath(cert), os.fspath(key), password=no_passphrase)
    except TlsError as exc:
        raise TlsError(f"cannot load TLS certificate {cert} / key {key}: {exc}") from None
    except (OSError, ssl.SSLError) as exc:
        raise TlsError(f"cannot load TLS certificate {cert} / key {key}: "
                       f"{_file_at_fault(cert, key, exc) or exc}") from None
    expired = _expiry_problem(cert)
    if expired:
        raise TlsError(f"cannot load TLS certificate {cert} / key {key}: {expired}")
    return context


def _file_at_fault(cert, key, exc) -> str | None:
    """Which file OpenSSL failed on, and how: it says "No such file" or "PEM lib" for either."""
    if getattr(exc, "reason", None) == "KEY_VALUES_MISMATCH":
        return f"tls_key {key} is not the key of tls_cert {cert} ({exc.reason})"
    from cryptography import x509
    from cryptography.hazmat.primitives import serialization

    contents = {}
    for knob, path in (("tls_cert", cert), ("tls_key", key)):
        try:
            contents[knob] = Path(path).read_bytes()
        except OSError as unreadable:
            return f"{knob} {path}: {unreadable.strerror or unreadable}"
    try:
        x509.load_pem_x509_certificates(contents["tls_cert"])
    except ValueError:
        return f"tls_cert {cert} holds no PEM certificate"
    try:
        serialization.load_pem_private_key(contents["tls_key"], None)
    except ValueError:
        return f"tls_key {key} holds no PEM private key"
    except TypeError:   # encrypted: the passphrase callback has said so
        return None
    return None


def _expiry_problem(cert) -> str | None:
    """A certificate past its notAfter loads, yet every client refuses it: at start, or
    renewed by SIGHUP with the old one copied back, it must not replace a valid one."""
    from cryptography import x509

    try:
        leaf = x509.load_pem_x509_certificates(Path(cert).read_bytes())[0]
    except (OSError, ValueError):   # changed since it loaded: the next load's business
        return None
    not_after = getattr(leaf, "not_valid_after_utc", None) or leaf.not_valid_after.replace(
        tzinfo=datetime.timezone.utc)
    if not_after > datetime.datetime.now(datetime.timezone.utc):
        return None
    return f"tls_cert {cert} expired on {not_after:%Y-%m-%d %H:%M:%S} UTC: clients refuse it; renew it"


def key_readable_by_every_account(key: str | os.PathLike) -> str | None:
    """A warning if any account may read the TLS key (other-readable, each directory on
    its path other-searchable): with per-user workers each mapped user's code could read it."""
    path = Path(os.path.abspath(key))
    try:
        mode = path.stat().st_mode
        if not mode & stat.S_IROTH or not all(d.stat().st_mode & stat.S_IXOTH for d in path.parents):
            return None
    except OSError:
        return None   # what cannot be read is tls_key's own problem, named where it is loaded
    return (f"tls_key {key} is readable by every account (mode {stat.S_IMODE(mode):04o}): each mapped "
            f"user's code (MCP_USER_MAP) can read the server's private key; make it 0600")


def _classify(data: bytes) -> str | None:
    """'tls', 'http', or None while the first bytes could still be either."""
    if not data:
        return None
    if data[0] == _TLS_HANDSHAKE_RECORD:
        return "tls"
    for method in _HTTP_METHODS:
        if data.startswith(method):
            return "http"
        if method.startswith(data):
            return None
    return "tls"   # neither: let the TLS layer refuse it


class TlsConnection:
    """One TLS session over memory buffers."""

    def __init__(self, context: ssl.SSLContext, *, server_side: bool = True,
                 server_hostname: str | None = None):
        self._incoming, self._outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
        self._tls = context.wrap_bio(self._incoming, self._outgoing, server_side=server_side,
                                     server_hostname=server_hostname)
        self.handshake_done = False
        self.peer_closed = False            # the peer sent close_notify
        self._closed = False
        self._unsent = bytearray()           # plaintext sent before the handshake finished
        self._sniffed: bytes | None = b"" if server_side else None
        if not server_side:
            self._handshake()                 # the client speaks first

    def receive(self, data: bytes) -> bytes:
        """Feed ciphertext; return the plaintext it completes (maybe b"")."""
        if self._sniffed is not None:
            data = self._sniffed + data
            verdict = _classify(data)
            if verdict is None:
                self._sniffed = data
                return b""
            self._sniffed = None
            if verdict == "http":
                raise PlaintextHttpError()
        if data:
            self._incoming.write(data)
        if not self.handshake_done:
            self._handshake()
            if not self.handshake_done:
                return b""
        return self._read_plaintext()

    def send(self, plaintext: bytes) -> None:
        """Queue plaintext; its ciphertext appears in `pending_output()`."""
        if self._closed:
            raise TlsError("send after close")
        if not self.handshake_done:
            self._unsent += plaintext
            return
        self._write(plaintext)

    def pending_output(self) -> bytes:
        """Ciphertext to write to the peer (handshake, records, close_notify)."""
        return self._outgoing.read()

    def close(self) -> None:
        """Queue a close_notify (idempotent); write `pending_output()` before closing the socket."""
        if self._closed:
            return
        self._closed = True
        if not self.handshake_done:
            return
        try:
            self._tls.unwrap()
        except ssl.SSLWantReadError:
            return   # our close_notify is queued; the peer's need not be awaited
        except ssl.SSLError as exc:
            raise TlsError(f"TLS close failed: {exc.reason or exc}") from None

    @property
    def alpn_protocol(self) -> str | None:
        return self._tls.selected_alpn_protocol()

    def _handshake(self) -> None:
        try:
            self._tls.do_handshake()
        except ssl.SSLWantReadError:
            return
        except ssl.SSLError as exc:
            raise TlsError(f"TLS handshake failed: {exc.reason or exc}") from None
        self.handshake_done = True
        if self._unsent:
            unsent, self._unsent = bytes(self._unsent), bytearray()
            self._write(unsent)

    def _write(self, plaintext: bytes) -> None:
        view = memoryview(plaintext)
        try:
            while view:
                view = view[self._tls.write(view):]
        except ssl.SSLError as exc:
            raise TlsError(f"TLS write failed: {exc.reason or exc}") from None

    def _read_plaintext(self) -> bytes:
        chunks = []
        while not self.peer_closed:
            try:
                chunk = self._tls.read(65536)
            except ssl.SSLWantReadError:
                break
            except ssl.SSLZeroReturnError:
                self.peer_closed = True
                break
            except ssl.SSLError as exc:
                raise TlsError(f"TLS record error: {exc.reason or exc}") from None
            if not chunk:
                self.peer_closed = True
                break
            chunks.append(chunk)
        return b"".join(chunks)


def write_self_signed(directory: str | os.PathLike, *, days: int = 365) -> tuple[Path, Path]:
    """Write `cert.pem` and `key.pem` (mode 0600) for localhost, 127.0.0.1, ::1."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name).issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=days))
        .add_extension(x509.SubjectAlternativeName([
            x509.DNSName("localhost"),
            x509.IPAddress(ipaddress.ip_address("127.0.0.1")),
            x509.IPAddress(ipaddress.ip_address("::1")),
        ]), critical=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = directory / "cert.pem", directory / "key.pem"
    key_pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                serialization.NoEncryption())
    fd = os.open(key_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as fh:
        os.fchmod(fh.fileno(), 0o600)   # an existing file keeps its old mode otherwise
        fh.write(key_pem)
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    return cert_path, key_path
