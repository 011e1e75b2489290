"""The sans-IO TLS layer: in-memory peers, a real socket pair, plaintext HTTP, certs."""
import datetime
import os
import selectors
import socket
import ssl
import stat
import threading

import pytest
from cryptography import x509

from gsmcpd.auth.tls import (PLAINTEXT_HTTP_RESPONSE, PlaintextHttpError, TlsConnection, TlsError,
                             key_readable_by_other_accounts, not_yet_valid_warning, pair_warnings,
                             server_context, write_self_signed)
from helpers import local_account, local_group, searchable_dir
from idp import CertAuthority


@pytest.fixture(scope="module")
def self_signed(tmp_path_factory):
    return write_self_signed(tmp_path_factory.mktemp("cert"))


@pytest.fixture(scope="module")
def server_ctx(self_signed):
    return server_context(*self_signed)


@pytest.fixture(scope="module")
def client_ctx(self_signed):
    return ssl.create_default_context(cafile=str(self_signed[0]))


def pump(a, b):
    """Move ciphertext between two in-memory peers until both are quiet; collect plaintext."""
    got = {a: b"", b: b""}
    while True:
        moved = False
        for src, dst in ((a, b), (b, a)):
            data = src.pending_output()
            if data:
                got[dst] += dst.receive(data)
                moved = True
        if not moved:
            return got[a], got[b]


def connected(server_ctx, client_ctx, hostname="localhost"):
    server = TlsConnection(server_ctx)
    client = TlsConnection(client_ctx, server_side=False, server_hostname=hostname)
    pump(client, server)
    return server, client


def test_handshake_and_exchange_in_memory(server_ctx, client_ctx):
    server, client = connected(server_ctx, client_ctx)
    assert server.handshake_done and client.handshake_done
    assert server.alpn_protocol is None          # the client offered no ALPN
    client.send(b"POST /mcp HTTP/1.1\r\n\r\n")
    server.send(b"HTTP/1.1 200 OK\r\n\r\n" + b"x" * 100_000)
    to_client, to_server = pump(client, server)
    assert to_server == b"POST /mcp HTTP/1.1\r\n\r\n"
    assert to_client == b"HTTP/1.1 200 OK\r\n\r\n" + b"x" * 100_000


def test_mid_record_is_true_exactly_while_a_record_is_cut_however_the_bytes_come(server_ctx, client_ctx):
    server, client = connected(server_ctx, client_ctx)
    assert not server.mid_record
    client.send(b"x" * 40_000)   # three records, the last a short one
    stream = client.pending_output()
    ends, at = set(), 0
    while at < len(stream):
        at += 5 + int.from_bytes(stream[at + 3:at + 5], "big")
        ends.add(at)
    assert len(ends) == 3 and at == len(stream)
    got = b""
    for at in range(len(stream)):
        got += server.receive(stream[at:at + 1])
        assert server.mid_record == (at + 1 not in ends), at
    assert got == b"x" * 40_000


@pytest.mark.parametrize("hostname", ["localhost", "127.0.0.1", "::1"])
def test_self_signed_cert_verifies_for_each_loopback_name(server_ctx, client_ctx, hostname):
    server, client = connected(server_ctx, client_ctx, hostname)
    assert client.handshake_done


def test_send_before_handshake_is_delivered_after_it(server_ctx, client_ctx):
    server = TlsConnection(server_ctx)
    client = TlsConnection(client_ctx, server_side=False, server_hostname="localhost")
    client.send(b"early")
    to_client, to_server = pump(client, server)
    assert to_server == b"early"


def test_close_notify_reaches_the_peer(server_ctx, client_ctx):
    server, client = connected(server_ctx, client_ctx)
    server.send(b"bye")
    server.close()
    server.close()                              # idempotent
    to_client, _ = pump(client, server)
    assert to_client == b"bye"
    assert client.peer_closed is True
    with pytest.raises(TlsError, match="send after close"):
        server.send(b"more")


def test_plaintext_http_is_detected(server_ctx):
    server = TlsConnection(server_ctx)
    assert server.receive(b"PO") == b""         # could still be a method: wait
    with pytest.raises(PlaintextHttpError) as info:
        server.receive(b"ST /mcp HTTP/1.1\r\nHost: x\r\n\r\n")
    assert info.value.response == PLAINTEXT_HTTP_RESPONSE
    assert PLAINTEXT_HTTP_RESPONSE.startswith(b"HTTP/1.1 400 Bad Request\r\n")
    assert PLAINTEXT_HTTP_RESPONSE.endswith(b"\r\n\r\nThis port speaks HTTPS: use https:// to connect.\n")


def test_garbage_fails_the_handshake(server_ctx):
    server = TlsConnection(server_ctx)
    with pytest.raises(TlsError, match="TLS handshake failed"):
        server.receive(b"\x00\x01\x02 not tls at all, not http either")


def test_untrusted_server_certificate_fails_on_both_sides(server_ctx, tmp_path):
    other_ca = CertAuthority(tmp_path)
    client = TlsConnection(ssl.create_default_context(cafile=str(other_ca.ca_file)),
                           server_side=False, server_hostname="localhost")
    server = TlsConnection(server_ctx)
    server.receive(client.pending_output())
    with pytest.raises(TlsError, match="CERTIFICATE_VERIFY_FAILED"):
        client.receive(server.pending_output())
    with pytest.raises(TlsError, match="TLS handshake failed"):
        server.receive(client.pending_output())


@pytest.mark.filterwarnings("ignore:ssl.TLSVersion.TLSv1_1 is deprecated:DeprecationWarning")
def test_tls_below_1_2_is_refused(server_ctx, self_signed):
    assert server_ctx.minimum_version == ssl.TLSVersion.TLSv1_2
    old = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    old.load_verify_locations(str(self_signed[0]))
    old.minimum_version = ssl.TLSVersion.MINIMUM_SUPPORTED
    old.maximum_version = ssl.TLSVersion.TLSv1_1
    with pytest.raises(TlsError):
        connected(server_ctx, old)


def test_server_context_reports_bad_files(tmp_path):
    with pytest.raises(TlsError, match="cannot load TLS certificate"):
        server_context(tmp_path / "missing.pem", tmp_path / "missing.key")


@pytest.mark.parametrize("fault, named", [
    ("cert missing", "tls_cert {cert}: No such file or directory"),
    ("key missing", "tls_key {key}: No such file or directory"),
    ("cert not PEM", "tls_cert {cert} holds no PEM certificate"),
    ("key not PEM", "tls_key {key} holds no PEM private key"),
    ("another's key", "tls_key {key} is not the key of tls_cert {cert} (KEY_VALUES_MISMATCH)"),
    ("cert expired", "tls_cert {cert} expired on "),
])
def test_a_pair_that_does_not_load_names_the_file_at_fault(tmp_path, fault, named):
    # OpenSSL says "PEM lib" or "No such file or directory" for either file, naming neither.
    ca = CertAuthority(tmp_path)
    cert, key = ca.issue("server", valid_for=-datetime.timedelta(minutes=30) if fault == "cert expired"
                         else datetime.timedelta(days=1))
    if fault == "another's key":
        _, key = ca.issue("other")
    elif fault.endswith("missing"):
        (cert if fault == "cert missing" else key).unlink()
    elif fault.endswith("not PEM"):
        (cert if fault == "cert not PEM" else key).write_text("half written\n")
    with pytest.raises(TlsError) as refused:
        server_context(cert, key)
    assert str(refused.value).startswith(f"cannot load TLS certificate {cert} / key {key}: "
                                         + named.format(cert=cert, key=key))
    if fault == "cert expired":
        assert str(refused.value).endswith(" UTC: clients refuse it; renew it")


def test_an_encrypted_key_is_refused_naming_its_passphrase_never_prompted_for(self_signed, tmp_path):
    from cryptography.hazmat.primitives import serialization
    cert_path, key_path = self_signed
    key = serialization.load_pem_private_key(key_path.read_bytes(), None)
    encrypted = tmp_path / "encrypted.key"
    encrypted.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                            serialization.BestAvailableEncryption(b"secret")))
    with pytest.raises(TlsError, match="the key is encrypted and gsmcpd cannot ask for its passphrase"):
        server_context(cert_path, encrypted)


def test_self_signed_files(self_signed):
    cert_path, key_path = self_signed
    assert stat.S_IMODE(key_path.stat().st_mode) == 0o600
    cert = x509.load_pem_x509_certificate(cert_path.read_bytes())
    sans = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert sans.get_values_for_type(x509.DNSName) == ["localhost"]
    assert [str(ip) for ip in sans.get_values_for_type(x509.IPAddress)] == ["127.0.0.1", "::1"]


def test_self_signed_tightens_an_existing_key_file(tmp_path):
    (tmp_path / "key.pem").write_text("old")
    (tmp_path / "key.pem").chmod(0o644)
    _, key_path = write_self_signed(tmp_path)
    assert stat.S_IMODE(key_path.stat().st_mode) == 0o600
    assert key_path.read_bytes().startswith(b"-----BEGIN PRIVATE KEY-----")


def test_real_socket_pair_with_a_real_ssl_client(server_ctx, client_ctx):
    server_sock, client_sock = socket.socketpair()
    server_sock.setblocking(False)
    replies = []

    def client():
        with client_ctx.wrap_socket(client_sock, server_hostname="localhost") as tls:
            tls.sendall(b"ping\n")
            replies.append(tls.recv(100))
            tls.unwrap()

    thread = threading.Thread(target=client, daemon=True)
    thread.start()
    conn = TlsConnection(server_ctx)
    received = b""
    with selectors.DefaultSelector() as selector:
        selector.register(server_sock, selectors.EVENT_READ)
        while not conn.peer_closed:
            assert selector.select(timeout=10), "client went silent"
            data = server_sock.recv(65536)
            if not data:
                break
            received += conn.receive(data)
            if received == b"ping\n":
                conn.send(b"pong\n")
                received = b""
            server_sock.sendall(conn.pending_output())
        conn.close()
        server_sock.sendall(conn.pending_output())
    thread.join(10)
    server_sock.close()
    assert replies == [b"pong\n"]
    assert conn.peer_closed is True


def _serves(context, cert):
    """Whether a client trusting exactly `cert` completes a handshake with `context`."""
    try:
        _, client = connected(context, ssl.create_default_context(cafile=str(cert)))
    except TlsError:
        return False
    return client.handshake_done


def test_a_reload_serves_a_pair_renewed_in_place_and_keeps_the_old_one_if_the_new_does_not_load(
        tmp_path, caplog):
    from gsmcpd.config import Config
    from gsmcpd.router.main import Router
    caplog.set_level("INFO", logger="gsmcpd.router")
    cert, key = write_self_signed(tmp_path)
    router = Router(Config(port=0, tls_cert=cert, tls_key=key))
    try:
        old_cert = cert.read_bytes()
        write_self_signed(tmp_path)                    # renewed under the same names
        router.reload_tls("SIGHUP")
        assert _serves(router.ssl_context, cert)
        assert "SIGHUP: TLS certificate and key reloaded (%s)" % cert in caplog.text
        renewed = router.ssl_context
        key.write_text("not a key\n")                  # a renewal caught half written
        router.reload_tls("SIGHUP")
        assert router.ssl_context is renewed
        assert "SIGHUP: tls_cert/tls_key: cannot load TLS certificate" in caplog.text
        assert "still serving the pair loaded before" in caplog.text
        (tmp_path / "old.pem").write_bytes(old_cert)
        assert not _serves(router.ssl_context, tmp_path / "old.pem")
    finally:
        router.close()


def test_a_key_every_account_may_read_is_named_with_its_mode():
    # Any local account's code (each mapped user's, with MCP_USER_MAP) could read a key any
    # account may read (0644 in searchable directories): the daemon loaded it silently.
    with searchable_dir("gsmcpd-key-") as top:
        key = top / "key.pem"
        key.write_text("not parsed here\n")
        key.chmod(0o644)
        assert key_readable_by_other_accounts(key) == (
            f"tls_key {key} is readable by every account (mode 0644): any local account's code "
            "(each mapped user's, with MCP_USER_MAP) can read the server's private key; make it 0600")
        key.chmod(0o600)
        assert key_readable_by_other_accounts(key) is None
        key.chmod(0o644)
        os.chmod(top, 0o750)                           # behind a directory others may not search
        assert key_readable_by_other_accounts(key) is None
        assert key_readable_by_other_accounts(top / "missing.pem") is None   # loading it says why


def test_a_key_its_group_may_read_is_named_unless_the_group_is_its_owner_s_private_one():
    # 0640 is the "ssl-cert" way: fine only when no other account is in the group.
    with searchable_dir("gsmcpd-key-") as top, local_account() as owner:
        key = top / "key.pem"
        key.write_text("not parsed here\n")
        key.chmod(0o640)
        os.chown(key, owner.pw_uid, owner.pw_gid)      # its user-private group: fine
        assert key_readable_by_other_accounts(key) is None
        with local_group() as shared:
            os.chown(key, owner.pw_uid, shared.gr_gid)
            assert key_readable_by_other_accounts(key) == (
                f"tls_key {key} is readable by group {shared.gr_name} (mode 0640), and group "
                f"{shared.gr_name} is not {owner.pw_name}'s primary group named as it: their code "
                "can read the server's private key; make it 0600")
            os.chmod(top, 0o700)                       # a directory its group may not search
            assert key_readable_by_other_accounts(key) is None
            os.chown(key, owner.pw_uid, owner.pw_gid)


def test_a_certificate_valid_only_from_later_loads_with_a_warning_naming_when(tmp_path):
    # Clients refuse it until then; refusing it would be wrong (it fixes itself, and a
    # freshly issued one may start a little ahead of this clock).
    ca = CertAuthority(tmp_path / "ca")
    cert, key = ca.issue("later", valid_from=datetime.timedelta(hours=2))
    server_context(cert, key)                          # loads
    begins = x509.load_pem_x509_certificate(cert.read_bytes()).not_valid_before_utc
    assert not_yet_valid_warning(cert) == (
        f"tls_cert {cert} is not valid until {begins:%Y-%m-%d %H:%M:%S} UTC: clients refuse it "
        "until then (is this host's clock right?)")
    assert pair_warnings(cert, key) == [not_yet_valid_warning(cert)]
    skewed, _ = ca.issue("skewed", valid_from=datetime.timedelta(minutes=1))
    assert not_yet_valid_warning(skewed) is None       # clock skew right after issuing
    valid, _ = ca.issue("valid")
    assert not_yet_valid_warning(valid) is None
    assert not_yet_valid_warning(tmp_path / "missing.pem") is None
