"""End-to-end: the network-facing daemon over TLS, and the startup refusals that guard it.

The certificate comes from `python -m gsmcpd cert --self-signed DIR`, as an operator
would make one; the MCP flow runs through the official MCP Python SDK client with an
httpx client that trusts exactly that certificate.
"""

import contextlib
import datetime
import http.client
import os
import select
import signal
import socket
import ssl
import subprocess
import sys
import time

import anyio
import httpx2
import pytest
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client

from helpers import (REPO, Daemon, free_port, recv_all, recv_response, rss_kib, searchable_dir,
                     spawn_in_a_terminal, wait_for_port, wait_until)
from idp import CertAuthority, Idp, JwksServer
from test_e2e_auth import WRITTEN_ON, AuthClient

READ_TIMEOUT = 0.5


def self_signed(directory):
    out = subprocess.run([sys.executable, "-m", "gsmcpd", "cert", "--self-signed", str(directory)],
                         cwd=str(REPO), capture_output=True, text=True, timeout=60, check=True)
    assert "certificate:" in out.stdout
    return directory / "cert.pem", directory / "key.pem"


def start_tls_daemon(tmp, **extra):
    """A JWKS server and an HTTPS daemon trusting it: (daemon, idp, cert, server); the caller
    stops the daemon and closes the server."""
    cert, key = self_signed(tmp / "cert")
    server = JwksServer(tmp / "idp")
    port = free_port()
    audience = "https://127.0.0.1:%d/mcp" % port
    server.idp = Idp(issuer=server.url, audience=audience)
    # Keys from MCP_JWKS_URI here (test_e2e_auth discovers them from the issuer instead).
    env = {"GS_MCP_AUTH": "1", "MCP_ISSUER": server.url, "MCP_AUDIENCE": audience,
           "MCP_JWKS_URI": server.jwks_url,
           "SSL_CERT_FILE": server.ca_file, "MCP_REQUIRED_SCOPES": "mcp:use", "MCP_WRITE_SCOPE": "mcp:write",
           "GS_MCP_TLS_CERT": str(cert), "GS_MCP_TLS_KEY": str(key),
           "GS_MCP_READ_TIMEOUT": str(READ_TIMEOUT), "GS_MCP_SPARE_WORKERS": "1", **extra}
    daemon = Daemon(tmp, env=env, port=port)
    try:
        daemon.start()
    except Exception:
        server.close()
        raise
    return daemon, server.idp, cert, server


@pytest.fixture(scope="module")
def tls_env(tmp_path_factory):
    daemon, idp, cert, server = start_tls_daemon(tmp_path_factory.mktemp("tls"))
    yield daemon, idp, cert, server
    daemon.stop()
    server.close()


def trusting(cert):
    context = ssl.create_default_context(cafile=str(cert))
    return context


async def sdk_session_flow(url, token, cert):
    client = httpx2.AsyncClient(verify=trusting(cert), headers={"Authorization": "Bearer " + token},
                                timeout=httpx2.Timeout(30.0))
    async with client:
        async with streamable_http_client(url, http_client=client) as (read, write):
            async with ClientSession(read, write) as session:
                init = await session.initialize()
                tools = await session.list_tools()
                await session.send_ping()
                result = await session.call_tool("execute_code", {"code": "6 * 7"})
                return init, tools, result


def test_the_mcp_sdk_speaks_to_the_daemon_over_https(tls_env):
    daemon, idp, cert, _ = tls_env
    url = "https://127.0.0.1:%d/mcp" % daemon.port
    init, tools, result = anyio.run(sdk_session_flow, url, idp.mint(), cert)
    assert init.server_info.name == "gsmcpd"
    names = {tool.name for tool in tools.tools}
    assert {"execute_code", "status", "commit"} <= names
    assert not result.is_error
    assert "42" in result.content[0].text
    assert "https://127.0.0.1:%d/mcp" % daemon.port in daemon.log_text()


def test_keys_come_from_the_configured_jwks_uri_without_discovery(tls_env):
    server = tls_env[3]
    assert server.fetches[server.JWKS_PATH] >= 1
    assert server.fetches[server.CONFIG_PATH] == 0


def test_https_without_a_token_gets_the_https_challenge(tls_env):
    daemon, idp, cert, _ = tls_env
    with httpx2.Client(verify=trusting(cert)) as client:
        resp = client.post("https://127.0.0.1:%d/mcp" % daemon.port, json={"jsonrpc": "2.0", "id": 1,
                                                                           "method": "ping"})
        meta = client.get("https://127.0.0.1:%d/.well-known/oauth-protected-resource/mcp" % daemon.port)
    assert resp.status_code == 401
    assert resp.headers["www-authenticate"] == (
        'Bearer resource_metadata="https://127.0.0.1:%d/.well-known/oauth-protected-resource/mcp", '
        'scope="mcp:use mcp:write"' % daemon.port)
    assert meta.json()["resource"] == "https://127.0.0.1:%d/mcp" % daemon.port


def test_https_a_big_body_without_a_token_is_written_whole_and_its_401_read(tls_env):
    # The lingering close over TLS: the 401's records, a close_notify and the FIN, then the
    # rest of the body is dropped as it comes, undecrypted. Without it: a reset.
    daemon, _, cert, _ = tls_env
    body = b" " * WRITTEN_ON
    head = (b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            b"Content-Length: %d\r\n\r\n" % len(body))
    with socket.create_connection(("127.0.0.1", daemon.port), timeout=30) as raw, \
            trusting(cert).wrap_socket(raw, server_hostname="127.0.0.1", suppress_ragged_eofs=False) as tls:
        tls.sendall(head + body)
        reply = recv_all(tls)   # an EOF without close_notify would raise SSLEOFError
    assert reply.startswith(b"HTTP/1.1 401 ") and b"\r\nWWW-Authenticate: Bearer resource_metadata=" in reply


def test_a_client_that_does_not_trust_the_cert_fails_the_handshake(tls_env):
    daemon, idp, cert, _ = tls_env
    with pytest.raises(httpx2.ConnectError, match="CERTIFICATE_VERIFY_FAILED"):
        with httpx2.Client() as client:   # the system store does not hold our self-signed cert
            client.get("https://127.0.0.1:%d/.well-known/oauth-protected-resource" % daemon.port)


def test_plaintext_http_on_the_tls_port_is_a_clear_400(tls_env):
    daemon, _, _, _ = tls_env
    with socket.create_connection(("127.0.0.1", daemon.port), timeout=10) as sock:
        sock.sendall(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 2\r\n\r\n{}")
        raw = recv_all(sock)
    head, _, body = raw.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 400 "), raw
    assert body == b"This port speaks HTTPS: use https:// to connect.\n"


def test_plaintext_http_with_a_big_body_on_the_tls_port_reads_its_400_not_a_broken_pipe(tls_env):
    # Closed at once with the body unread, the router reset a client still writing it.
    daemon, _, _, _ = tls_env
    conn = http.client.HTTPConnection("127.0.0.1", daemon.port, timeout=30)
    try:
        conn.request("POST", "/mcp", body=b" " * WRITTEN_ON, headers={"Content-Type": "application/json"})
        resp = conn.getresponse()
        assert (resp.status, resp.read()) == (400, b"This port speaks HTTPS: use https:// to connect.\n")
    finally:
        conn.close()


def _handshake_with(port, context):
    with socket.create_connection(("127.0.0.1", port), timeout=10) as raw:
        context.wrap_socket(raw, server_hostname="localhost").close()


@pytest.mark.filterwarnings("ignore:ssl.TLSVersion.TLSv1_1 is deprecated:DeprecationWarning")
@pytest.mark.parametrize("offer, alert", [
    ("TLS 1.1", "ALERT_PROTOCOL_VERSION"),
    ("no shared cipher", "ALERT_HANDSHAKE_FAILURE"),
])
def test_a_refused_handshake_tells_the_client_why_in_its_alert(tls_env, offer, alert):
    # The alert was dropped with the connection: the client read "unexpected eof".
    daemon, _, cert, _ = tls_env
    context = trusting(cert)
    if offer == "TLS 1.1":
        context.minimum_version, context.maximum_version = (ssl.TLSVersion.MINIMUM_SUPPORTED,
                                                            ssl.TLSVersion.TLSv1_1)
        context.set_ciphers("ALL:@SECLEVEL=0")
    else:   # RSA key exchange only, against an ECDSA certificate
        context.maximum_version = ssl.TLSVersion.TLSv1_2
        context.set_ciphers("AES128-SHA")
    with pytest.raises(ssl.SSLError, match=alert):
        _handshake_with(daemon.port, context)


METADATA_GET = b"GET /.well-known/oauth-protected-resource/mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n"


@pytest.mark.parametrize("request_line", [
    METADATA_GET + b"Connection: close\r\n\r\n",
    METADATA_GET.replace(b"HTTP/1.1", b"HTTP/1.0") + b"\r\n",
], ids=["connection-close", "http-1.0"])
def test_a_reply_that_ends_its_connection_ends_with_a_close_notify(tls_env, request_line):
    # The router closed the socket without one: a reply ended by the close could not be
    # told from one cut short, and a strict client read "unexpected eof".
    daemon, _, cert, _ = tls_env
    with socket.create_connection(("127.0.0.1", daemon.port), timeout=10) as raw, \
            trusting(cert).wrap_socket(raw, server_hostname="127.0.0.1", suppress_ragged_eofs=False) as tls:
        tls.sendall(request_line)
        reply = recv_all(tls)   # an EOF without close_notify raises SSLEOFError
    assert reply.startswith((b"HTTP/1.1 200 ", b"HTTP/1.0 200 ")), reply


def test_a_client_s_close_notify_gets_the_router_s_in_return(tls_env):
    # It was ignored: the connection sat idle for 300 s while the client waited for ours.
    daemon, _, cert, _ = tls_env
    with socket.create_connection(("127.0.0.1", daemon.port), timeout=10) as raw:
        tls = trusting(cert).wrap_socket(raw, server_hostname="127.0.0.1")
        tls.sendall(METADATA_GET + b"\r\n")
        assert recv_response(tls).startswith(b"HTTP/1.1 200 ")
        plain = tls.unwrap()   # our close_notify, then wait for the router's (TimeoutError if none)
        assert plain.recv(1) == b""


def session_with_a_stream_deleted(daemon, token, cert):
    """Open a session over HTTPS, open its GET stream with `token`, DELETE the session."""
    client = AuthClient(daemon.port, token)
    client.conn = http.client.HTTPSConnection("127.0.0.1", daemon.port, context=trusting(cert), timeout=30)
    stream = http.client.HTTPSConnection("127.0.0.1", daemon.port, context=trusting(cert), timeout=30)
    try:
        client.initialize()
        stream.request("GET", "/mcp", headers={"Accept": "text/event-stream", "MCP-Session-Id": client.session,
                                               "Authorization": "Bearer " + token})
        opened = stream.getresponse()
        assert opened.status == 200
        assert client.delete().status == 200
        assert opened.read() == b""   # the DELETE ended the stream
    finally:
        client.close()
        stream.close()


def test_a_deleted_session_s_stream_is_not_held_until_its_token_expires(tmp_path):
    # The timer ending a GET stream at its token's expiry was never cancelled: it held the
    # session, its stream's TLS connection and its worker's objects until the token ran out
    # (an hour, a day with some IdPs), about 40 KiB a session: 8 MiB for these 200.
    daemon, idp, cert, server = start_tls_daemon(tmp_path, GS_MCP_KEEPALIVE_INTERVAL="0.2")
    try:
        token = idp.mint(sub="erin", exp=int(time.time()) + 3600)
        for _ in range(50):   # the router's memory grown to what serving such sessions takes
            session_with_a_stream_deleted(daemon, token, cert)
        before = rss_kib(daemon.proc.pid)
        for _ in range(200):
            session_with_a_stream_deleted(daemon, token, cert)
        # 0.8-0.9 MiB with the timer cancelled (the rest of serving them), 7.9 without
        assert rss_kib(daemon.proc.pid) - before < 4096
    finally:
        daemon.stop()
        server.close()


INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}}


def _mcp_post(cert, port, token, message, session=None):
    headers = {"Authorization": "Bearer " + token, "Accept": "application/json, text/event-stream"}
    if session:
        headers["MCP-Session-Id"] = session
    with httpx2.Client(verify=trusting(cert), timeout=30) as client:
        return client.post("https://127.0.0.1:%d/mcp" % port, headers=headers, json=message)


def _half_client_hello():
    """The first half of a real ClientHello, from a memory-BIO TLS client."""
    incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
    context = ssl.create_default_context()
    tls = context.wrap_bio(incoming, outgoing, server_hostname="localhost")
    with pytest.raises(ssl.SSLWantReadError):
        tls.do_handshake()
    hello = outgoing.read()
    assert hello[:1] == b"\x16"          # a TLS handshake record
    return hello[:len(hello) // 2]


def test_a_stalled_handshake_blocks_nobody_and_is_dropped_after_the_read_timeout(tls_env):
    daemon, idp, cert, _ = tls_env
    with socket.create_connection(("127.0.0.1", daemon.port), timeout=10) as stalled:
        stalled.sendall(_half_client_hello())
        # Meanwhile a whole HTTPS request from another client is answered.
        resp = _mcp_post(cert, daemon.port, idp.mint(), INITIALIZE)
        assert resp.status_code == 200, resp.text
        # The stalled peer gets nothing but the close, once the read timeout passes.
        stalled.settimeout(READ_TIMEOUT * 10)
        assert recv_all(stalled) == b""


@contextlib.contextmanager
def _tls_through_memory(daemon, cert):
    """A TLS connection to `daemon` driven through memory BIOs, its handshake done: the
    socket, the TLS object and its two BIOs, so a test sends the records' bytes as it
    chooses (cut, a byte at a time)."""
    tls = ssl.create_default_context(cafile=str(cert)).wrap_bio(
        incoming := ssl.MemoryBIO(), outgoing := ssl.MemoryBIO(), server_hostname="127.0.0.1")
    with socket.create_connection(("127.0.0.1", daemon.port), timeout=10) as raw:
        while True:
            try:
                tls.do_handshake()
                break
            except ssl.SSLWantReadError:
                raw.sendall(outgoing.read())
                incoming.write(raw.recv(65536))
        yield raw, tls, incoming, outgoing


@pytest.mark.parametrize("first", [b"POST /mcp HTTP/1.1\r\nHo", b""])
def test_a_request_trickled_in_parts_of_tls_records_is_dropped_at_the_read_timeout(tls_env, first):
    # Each part of a record decrypted to nothing and set the connection idle (300 s), so a
    # client sending a byte of a record now and then held a request half read for good.
    # So did the request's first record cut, with nothing of it decrypted yet (found by
    # fuzzing the router): a plain head's first byte starts the read timeout.
    daemon, _, cert, _ = tls_env
    with _tls_through_memory(daemon, cert) as (raw, tls, incoming, outgoing):
        raw.sendall(outgoing.read())
        if first:
            tls.write(first)
            raw.sendall(outgoing.read())        # a head half sent: the read timeout runs
        tls.write(b"st: 127.0.0.1\r\n" * 20)
        trickle = outgoing.read()               # then a record a byte at a time
        raw.setblocking(False)
        closed_at = None
        for at in range(min(len(trickle), int(READ_TIMEOUT * 10 / 0.1))):
            try:
                raw.send(trickle[at:at + 1])
                if raw.recv(1) == b"":
                    closed_at = at
                    break
            except BlockingIOError:
                pass
            except OSError:   # reset: closed too
                closed_at = at
                break
            time.sleep(0.1)
        assert closed_at is not None, "a trickled request outlived ten read timeouts"


def test_the_next_requests_tls_record_cut_behind_a_reply_is_dropped_at_the_read_timeout(tls_env):
    # A request, then the next one's first record cut: the reply's end armed the 300 s
    # keep-alive wait (the cut record decrypts to nothing), not the read timeout.
    daemon, _, cert, _ = tls_env
    with _tls_through_memory(daemon, cert) as (raw, tls, incoming, outgoing):
        tls.write(METADATA_GET + b"\r\n")
        first = outgoing.read()
        tls.write(METADATA_GET + b"\r\n")
        raw.sendall(first + outgoing.read()[:20])
        reply = b""
        raw.settimeout(READ_TIMEOUT * 10)
        while True:   # the first reply, then the close (or, as before, nothing for 300 s)
            try:
                chunk = raw.recv(65536)
            except socket.timeout:
                break
            if not chunk:
                break
            incoming.write(chunk)
            try:
                reply += tls.read(65536)
            except (ssl.SSLWantReadError, ssl.SSLZeroReturnError):
                pass
        assert reply.startswith(b"HTTP/1.1 200 ") and reply.count(b"HTTP/1.1 ") == 1
        assert not chunk, "a cut record behind a reply outlived ten read timeouts"


def test_at_the_connection_cap_silent_connections_make_room_for_a_https_client(tmp_path):
    # Read timeout long, so that only closing one for room can admit the client in time.
    daemon, idp, cert, server = start_tls_daemon(tmp_path, GS_MCP_MAX_CONNECTIONS="4",
                                                 GS_MCP_READ_TIMEOUT="120")
    silent = []
    try:
        for _ in range(4):    # connected, and sent nothing (not even a ClientHello)
            silent.append(socket.create_connection(("127.0.0.1", daemon.port), timeout=10))
        resp = _mcp_post(cert, daemon.port, idp.mint(), INITIALIZE)
        assert resp.status_code == 200, resp.text
        closed, _, _ = select.select(silent, [], [], 10)   # closed for room, unanswered
        assert closed and all(recv_all(s) == b"" for s in closed)
    finally:
        for s in silent:
            s.close()
        daemon.stop()
        server.close()


def test_at_the_connection_cap_handshakes_begun_and_held_make_room_for_a_https_client(tmp_path):
    # A byte of a ClientHello on each connection the cap allows held every place, no
    # credential asked, and a reconnect renewed each read timeout.
    daemon, idp, cert, server = start_tls_daemon(tmp_path, GS_MCP_MAX_CONNECTIONS="4",
                                                 GS_MCP_READ_TIMEOUT="120")
    begun = []
    try:
        for _ in range(4):
            begun.append(socket.create_connection(("127.0.0.1", daemon.port), timeout=10))
            begun[-1].sendall(b"\x16\x03\x01")   # the start of a ClientHello record
            select.select([], [], [], 0.05)   # read by the loop: its handshake is under way
        resp = _mcp_post(cert, daemon.port, idp.mint(), INITIALIZE)
        assert resp.status_code == 200, resp.text
        closed, _, _ = select.select(begun, [], [], 10)   # closed for room: no TLS to say why in
        assert closed and all(recv_all(s) == b"" for s in closed)
        assert "mid-request" in daemon.log_text()
    finally:
        for s in begun:
            s.close()
        daemon.stop()
        server.close()


def _served_certificate(port):
    """The certificate (DER) a new connection to `port` is shown."""
    context = ssl.create_default_context()
    context.check_hostname, context.verify_mode = False, ssl.CERT_NONE
    with socket.create_connection(("127.0.0.1", port), timeout=10) as raw, context.wrap_socket(raw) as tls:
        return tls.getpeercert(binary_form=True)


def test_sighup_serves_a_certificate_renewed_in_place_to_new_connections_and_sessions_serve_on(tls_env):
    # On the module's daemon: its pair is renewed in place (the file its clients trust says
    # what it serves all along), and the renewed key is put back whole after.
    daemon, idp, cert, _ = tls_env
    opened = _mcp_post(cert, daemon.port, idp.mint(), INITIALIZE)
    session = opened.headers["mcp-session-id"]
    cert, key = self_signed(cert.parent)           # renewed under the same names
    renewed, renewed_key = ssl.PEM_cert_to_DER_cert(cert.read_text()), key.read_text()
    try:
        assert _served_certificate(daemon.port) != renewed
        daemon.proc.send_signal(signal.SIGHUP)         # `systemctl reload`, the unit's ExecReload
        assert wait_until(lambda: _served_certificate(daemon.port) == renewed)
        assert "SIGHUP: TLS certificate and key reloaded" in daemon.log_text()
        ping = {"jsonrpc": "2.0", "id": 2, "method": "ping"}
        assert _mcp_post(cert, daemon.port, idp.mint(), ping, session).status_code == 200   # its session serves on

        key.write_text("not a key\n")                 # a renewal caught half written
        daemon.proc.send_signal(signal.SIGHUP)
        assert wait_until(lambda: "still serving the pair loaded before" in daemon.log_text())
        assert _served_certificate(daemon.port) == renewed
        assert _mcp_post(cert, daemon.port, idp.mint(), ping, session).status_code == 200
    finally:
        key.write_text(renewed_key)


def _tls_only(cert, key):
    """A loopback daemon's environment serving HTTPS with this pair, no auth."""
    return {"GS_MCP_TLS_CERT": str(cert), "GS_MCP_TLS_KEY": str(key), "GS_MCP_SPARE_WORKERS": "1"}


def test_sighup_with_an_expired_certificate_keeps_serving_the_one_loaded_and_says_why(tmp_path):
    # An expired certificate loads: a renewal that copied the old one back replaced a valid
    # certificate with one every client refuses, and the log said "reloaded".
    ca = CertAuthority(tmp_path / "ca")
    cert, key = ca.issue("server")
    with Daemon(tmp_path, env=_tls_only(cert, key)) as daemon:
        served = _served_certificate(daemon.port)
        expired_cert, expired_key = ca.issue("expired", valid_for=-datetime.timedelta(minutes=30))
        os.replace(expired_key, key)
        os.replace(expired_cert, cert)
        daemon.proc.send_signal(signal.SIGHUP)
        assert wait_until(lambda: "still serving the pair loaded before" in daemon.log_text())
        assert "SIGHUP: tls_cert/tls_key: cannot load TLS certificate %s / key %s: tls_cert %s expired on " % (
            cert, key, cert) in daemon.log_text()
        assert _served_certificate(daemon.port) == served


def test_serve_refuses_an_expired_certificate_naming_it(tmp_path):
    cert, key = CertAuthority(tmp_path / "ca").issue("server", valid_for=-datetime.timedelta(minutes=30))
    daemon = Daemon(tmp_path, env=_tls_only(cert, key))
    assert daemon.refusal() == 2
    assert "gsmcpd: tls_cert/tls_key: cannot load TLS certificate %s / key %s: tls_cert %s expired on " % (
        cert, key, cert) in daemon.log_text()


def test_serve_warns_of_a_key_every_account_may_read_without_a_user_map_and_serves(tmp_path):
    # Any local account's code could read it; the warning came only with MCP_USER_MAP.
    with searchable_dir("gsmcpd-key-") as keys:
        cert, key = CertAuthority(keys).issue("server")
        key.chmod(0o644)
        with Daemon(tmp_path, env=_tls_only(cert, key)) as daemon:
            assert _served_certificate(daemon.port) == ssl.PEM_cert_to_DER_cert(cert.read_text())
            assert (" WARNING tls_key %s is readable by every account (mode 0644): any local account's "
                    "code (each mapped user's, with MCP_USER_MAP) can read the server's private key; "
                    "make it 0600" % key) in daemon.log_text()


def test_a_certificate_not_yet_valid_is_served_with_a_warning_at_start_and_on_sighup(tmp_path):
    # Not refused (it becomes valid by itself; clock skew right after issuing), but clients
    # refuse it until then, and the log said nothing.
    ca = CertAuthority(tmp_path / "ca")
    cert, key = ca.issue("server", valid_from=datetime.timedelta(hours=2))
    begins = _not_before(cert)
    with Daemon(tmp_path, env=_tls_only(cert, key)) as daemon:
        assert (" WARNING tls_cert %s is not valid until %s UTC: clients refuse it until then"
                % (cert, begins)) in daemon.log_text()
        valid_cert, valid_key = ca.issue("valid")
        os.replace(valid_key, key)
        os.replace(valid_cert, cert)
        daemon.proc.send_signal(signal.SIGHUP)
        assert wait_until(lambda: "SIGHUP: TLS certificate and key reloaded" in daemon.log_text())
        later_cert, later_key = ca.issue("later", valid_from=datetime.timedelta(days=1))
        os.replace(later_key, key)
        os.replace(later_cert, cert)
        renewed = ssl.PEM_cert_to_DER_cert(cert.read_text())
        daemon.proc.send_signal(signal.SIGHUP)
        assert wait_until(lambda: _served_certificate(daemon.port) == renewed)   # served, not refused
        assert wait_until(lambda: " WARNING SIGHUP: tls_cert %s is not valid until %s UTC" % (
            cert, _not_before(cert)) in daemon.log_text())


def _not_before(cert):
    from cryptography import x509
    return f"{x509.load_pem_x509_certificate(cert.read_bytes()).not_valid_before_utc:%Y-%m-%d %H:%M:%S}"


# -- startup refusals -------------------------------------------------------------------

def _serve(tmp_path, env, *args):
    cmd = [sys.executable, "-m", "gsmcpd", "serve", "--port", str(free_port())] + list(args)
    full_env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(REPO), "GS_MCP_STATE_DIR": str(tmp_path / "state")}
    full_env.update(env)
    return subprocess.run(cmd, cwd=str(REPO), env=full_env, capture_output=True, text=True, timeout=60)


AUTH = {"GS_MCP_AUTH": "1", "MCP_ISSUER": "https://idp.test", "MCP_AUDIENCE": "https://mcp.test/mcp"}


def test_a_network_facing_host_without_auth_is_refused(tmp_path):
    done = _serve(tmp_path, {}, "--host", "0.0.0.0")
    assert done.returncode != 0
    assert "host: 0.0.0.0 is not a loopback address" in done.stderr
    assert "GS_MCP_AUTH" in done.stderr


def test_behind_a_tls_proxy_still_needs_auth(tmp_path):
    done = _serve(tmp_path, {}, "--host", "0.0.0.0", "--behind-tls-proxy")
    assert done.returncode != 0
    assert "needs auth (GS_MCP_AUTH=1)" in done.stderr


def test_a_network_facing_host_with_auth_but_no_tls_is_refused(tmp_path):
    done = _serve(tmp_path, AUTH, "--host", "0.0.0.0")
    assert done.returncode != 0
    assert "host: 0.0.0.0 is not a loopback address" in done.stderr
    assert "tls_cert/tls_key" in done.stderr and "behind_tls_proxy" in done.stderr


def test_behind_a_tls_proxy_a_network_facing_host_with_auth_starts(tmp_path):
    jwks = tmp_path / "jwks.json"
    Idp().write_jwks(jwks)
    daemon = Daemon(tmp_path, env=dict(AUTH, MCP_JWKS_FILE=str(jwks)),
                    args=["--host", "0.0.0.0", "--behind-tls-proxy"])
    with daemon:
        wait_for_port(daemon.port)
        with socket.create_connection(("127.0.0.1", daemon.port), timeout=10) as sock:
            sock.sendall(b"GET /.well-known/oauth-protected-resource/mcp HTTP/1.1\r\nHost: mcp.test\r\n"
                         b"Connection: close\r\n\r\n")
            raw = recv_all(sock)
    assert raw.startswith(b"HTTP/1.1 200 "), raw
    # Behind the proxy the public name is the audience, so that is what the metadata names.
    assert b'"resource":"https://mcp.test/mcp"' in raw


def test_behind_a_tls_proxy_a_resource_derived_from_the_bind_address_is_warned_of_at_start(tmp_path):
    jwks = tmp_path / "jwks.json"
    Idp().write_jwks(jwks)
    daemon = Daemon(tmp_path, env=dict(AUTH, MCP_AUDIENCE="api://gsmcpd", MCP_JWKS_FILE=str(jwks)),
                    args=["--host", "0.0.0.0", "--behind-tls-proxy"])
    with daemon:
        with socket.create_connection(("127.0.0.1", daemon.port), timeout=10) as sock:
            sock.sendall(b"GET /.well-known/oauth-protected-resource/mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                         b"Connection: close\r\n\r\n")
            raw = recv_all(sock)
    resource = "http://0.0.0.0:%d/mcp" % daemon.port
    assert b'"resource":"%s"' % resource.encode() in raw   # what no client behind the proxy uses
    assert ("WARNING the resource published in the RFC 9728 metadata and the WWW-Authenticate challenge is "
            "%s, derived from the bind address, which names no URL clients reach: behind a TLS proxy clients "
            "use the proxy's https URL; set MCP_RESOURCE_URL" % resource) in daemon.log_text()


def _in_a_terminal(argv, env, timeout=30):
    """Run argv with a pty as its controlling terminal (as an admin's shell runs it):
    (exit status, or None if it still ran at the deadline and was killed; its output)."""
    proc, fd = spawn_in_a_terminal(argv, env)
    output, deadline = b"", time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            if select.select([fd], [], [], 0.2)[0]:
                try:
                    chunk = os.read(fd, 4096)
                except OSError:   # EIO: the child closed the terminal
                    break
                if not chunk:
                    break
                output += chunk
        try:   # its terminal closes as it exits
            return proc.wait(max(0, deadline - time.monotonic())), output.decode(errors="replace")
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            return None, output.decode(errors="replace")
    finally:
        os.close(fd)


@pytest.mark.parametrize("command", ["serve", "check"])
def test_an_encrypted_key_is_refused_in_a_terminal_without_a_passphrase_prompt(tmp_path, command):
    # OpenSSL asked for the passphrase on /dev/tty: serve and check hung at the prompt.
    from cryptography.hazmat.primitives import serialization
    from gsmcpd.auth.tls import write_self_signed
    cert, key = write_self_signed(tmp_path / "tls")
    encrypted = tmp_path / "tls" / "encrypted.key"
    encrypted.write_bytes(serialization.load_pem_private_key(key.read_bytes(), None).private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
        serialization.BestAvailableEncryption(b"secret")))
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(REPO), "GS_MCP_STATE_DIR": str(tmp_path / "state"),
           "GS_MCP_TLS_CERT": str(cert), "GS_MCP_TLS_KEY": str(encrypted), "GS_MCP_SPARE_WORKERS": "1"}
    status, output = _in_a_terminal([sys.executable, "-m", "gsmcpd", command, "--port", str(free_port())],
                                    env, timeout=20)
    assert status == 2, output
    assert "pass phrase" not in output.lower()
    assert "tls_cert/tls_key" in output and "the key is encrypted and gsmcpd cannot ask for its passphrase" in output
