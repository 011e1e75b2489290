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

from gsmcpd.accounts import group_name, private_group_problem
from gsmcpd.auth.tls_errors import PLAINTEXT_HTTP_RESPONSE, PlaintextHttpError, TlsError  # noqa: F401  (named here too)

_HTTP_METHODS = tuple(m.encode() + b" " for m in
                      ("GET", "POST", "PUT", "HEAD", "DELETE", "OPTIONS", "PATCH", "CONNECT", "TRACE", "PRI"))
_TLS_HANDSHAKE_RECORD = 0x16
_RECORD_HEADER = 5   # type, version (2), length (2): RFC 8446 5.1


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


def _leaf_certificate(cert):
    """The first certificate in `cert`, or None if it cannot be read or parsed now."""
    from cryptography import x509

    try:
        return x509.load_pem_x509_certificates(Path(cert).read_bytes())[0]
    except (OSError, ValueError):   # changed since it loaded: the next load's business
        return None


def _utc(leaf, name: str) -> datetime.datetime:
    # cryptography < 42 has only the naive (UTC) attributes
    return getattr(leaf, f"{name}_utc", None) or getattr(leaf, name).replace(tzinfo=datetime.timezone.utc)


def _expiry_problem(cert) -> str | None:
    """A certificate past its notAfter loads, yet every client refuses it: at start, or
    renewed by SIGHUP with the old one copied back, it must not replace a valid one."""
    leaf = _leaf_certificate(cert)
    if leaf is None:
        return None
    not_after = _utc(leaf, "not_valid_after")
    if not_after > datetime.datetime.now(datetime.timezone.utc):
        return None
    return f"tls_cert {cert} expired on {not_after:%Y-%m-%d %H:%M:%S} UTC: clients refuse it; renew it"


# A certificate issued moments ago may start a little ahead of this host's clock.
CLOCK_SKEW_ALLOWED = datetime.timedelta(minutes=5)


def not_yet_valid_warning(cert: str | os.PathLike) -> str | None:
    """A warning if the certificate's notBefore is further ahead than clock skew explains:
    clients refuse it until then. Not a refusal: it becomes valid by itself."""
    leaf = _leaf_certificate(cert)
    if leaf is None:
        return None
    not_before = _utc(leaf, "not_valid_before")
    if not_before <= datetime.datetime.now(datetime.timezone.utc) + CLOCK_SKEW_ALLOWED:
        return None
    return (f"tls_cert {cert} is not valid until {not_before:%Y-%m-%d %H:%M:%S} UTC: clients "
            f"refuse it until then (is this host's clock right?)")


def key_readable_by_other_accounts(key: str | os.PathLike) -> str | None:
    """A warning if accounts other than its owner's may read the TLS key: it is
    other-readable, or group-readable by a group that is not its owner's private group,
    and each directory on its path lets them through. Any local account's code (a mapped
    user's, with MCP_USER_MAP) could then read the server's private key."""
    path = Path(os.path.abspath(key))
    try:
        st = path.stat()
        parents = [d.stat() for d in path.parents]
    except OSError:
        return None   # what cannot be read is tls_key's own problem, named where it is loaded
    mode = stat.S_IMODE(st.st_mode)
    if mode & stat.S_IROTH and all(d.st_mode & stat.S_IXOTH for d in parents):
        return (f"tls_key {key} is readable by every account (mode {mode:04o}): any local account's "
                f"code (each mapped user's, with MCP_USER_MAP) can read the server's private key; "
                f"make it 0600")
    if not mode & stat.S_IRGRP or not all(
            d.st_mode & stat.S_IXOTH or (d.st_mode & stat.S_IXGRP and d.st_gid == st.st_gid)
            for d in parents):
        return None
    not_private = private_group_problem(st.st_uid, st.st_gid)
    if not not_private:
        return None
    return (f"tls_key {key} is readable by group {group_name(st.st_gid)} (mode {mode:04o}), and "
            f"{not_private}: their code can read the server's private key; make it 0600")


def pair_warnings(cert: str | os.PathLike, key: str | os.PathLike) -> list[str]:
    """What a TLS pair that loads should still be warned of, at start, check and SIGHUP."""
    return [w for w in (key_readable_by_other_accounts(key), not_yet_valid_warning(cert)) if w]


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
        self._record_header = b""            # a record header's bytes received so far
        self._record_left = 0                # bytes of the record being received still to come
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
            self._walk_records(data)
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
    def mid_record(self) -> bool:
        """Whether part of a record has come and the rest not yet: OpenSSL holds it and
        gives nothing of it, so only the framing, walked here, tells a client that began
        sending (a request's first record, cut) from one that sent nothing."""
        return bool(self._record_header or self._record_left)

    def _walk_records(self, data: bytes) -> None:
        at = 0
        while at < len(data):
            if self._record_left:
                taken = min(self._record_left, len(data) - at)
                self._record_left -= taken
                at += taken
                continue
            wanted = _RECORD_HEADER - len(self._record_header)
            self._record_header += data[at:at + wanted]
            at += wanted
            if len(self._record_header) == _RECORD_HEADER:
                self._record_left = int.from_bytes(self._record_header[3:5], "big")
                self._record_header = b""

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
