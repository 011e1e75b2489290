"""A test identity provider: real keys, pyjwt-minted tokens, a JWKS over HTTPS.

Reusable by any test that needs bearer tokens:

    idp = Idp(issuer="https://idp.test", audience="https://127.0.0.1:8443/mcp")
    token = idp.mint(scope="mcp:use")                  # RS256, kid "rsa-1"
    idp.write_jwks(tmp_path / "jwks.json")

    with JwksServer(tmp_path) as server:               # HTTPS on loopback, own test CA
        idp = Idp(issuer=server.url, audience=...)
        server.idp = idp                               # serves discovery + idp.jwks(), live
        server.ca_file                                 # verify against this
        server.fetches["/jwks.json"]                   # how often the keys were fetched
        server.jwks_gate.clear()                       # hold JWKS answers (a slow IdP) …
        server.jwks_gate.set()                         # … until released
"""
from __future__ import annotations

import base64
import collections
import datetime
import hashlib
import hmac
import http.server
import ipaddress
import json
import ssl
import threading
import time
from pathlib import Path

import jwt
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa
from cryptography.x509.oid import NameOID

KINDS = {"rsa": "RS256", "ps": "PS256", "ec": "ES256", "ed": "EdDSA"}
_PRIVATE_KEYS: dict[str, object] = {}   # kid → key, shared so RSA generation runs once per kid


def _generate(kind: str):
    if kind in ("rsa", "ps"):
        return rsa.generate_private_key(public_exponent=65537, key_size=2048)
    if kind == "ec":
        return ec.generate_private_key(ec.SECP256R1())
    if kind == "ed":
        return ed25519.Ed25519PrivateKey.generate()
    raise ValueError(kind)


def _private_key(kid: str, kind: str):
    if kid not in _PRIVATE_KEYS:
        _PRIVATE_KEYS[kid] = _generate(kind)
    return _PRIVATE_KEYS[kid]


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _public_jwk(kid: str, alg: str, private_key) -> dict:
    algorithm = jwt.get_algorithm_by_name(alg)
    jwk = algorithm.to_jwk(private_key.public_key(), as_dict=True)
    return {**jwk, "kid": kid, "alg": alg, "use": "sig"}


class Clock:
    """A settable clock for KeySource/authenticate: `clock.now += 11` moves time."""

    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now


class Idp:
    """Keys (kid → alg, private key) and a token mint. Default kids: rsa-1 ps-1 ec-1 ed-1."""

    def __init__(self, issuer: str = "https://idp.test", audience: str = "https://127.0.0.1/mcp",
                 kinds=("rsa", "ps", "ec", "ed")):
        self.issuer, self.audience = issuer, audience
        self.keys: dict[str, tuple[str, object]] = {}
        for kind in kinds:
            self.add_key(kind, f"{kind}-1")

    # -- keys ---------------------------------------------------------------------
    def add_key(self, kind: str, kid: str) -> str:
        self.keys[kid] = (KINDS[kind], _private_key(kid, kind))
        return kid

    def remove_key(self, kid: str) -> None:
        del self.keys[kid]

    def jwks(self) -> dict:
        return {"keys": [_public_jwk(kid, alg, key) for kid, (alg, key) in self.keys.items()]}

    def write_jwks(self, path) -> Path:
        path = Path(path)
        path.write_text(json.dumps(self.jwks()))
        return path

    def public_pem(self, kid: str) -> bytes:
        return self.keys[kid][1].public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)

    # -- tokens -------------------------------------------------------------------
    def claims(self, **overrides) -> dict:
        now = int(time.time())
        claims = {"iss": self.issuer, "aud": self.audience, "sub": "alice", "iat": now,
                  "exp": now + 300, "scope": "mcp:use mcp:write"}
        claims.update(overrides)
        return {k: v for k, v in claims.items() if v is not None}   # None removes a claim

    def mint(self, kid: str = "rsa-1", *, alg: str | None = None, headers: dict | None = None,
             **claims) -> str:
        key_alg, key = self.keys[kid] if kid in self.keys else (KINDS[kid.split("-")[0]], _private_key(kid, kid.split("-")[0]))
        return jwt.encode(self.claims(**claims), key, algorithm=alg or key_alg,
                          headers={"kid": kid, **(headers or {})})

    def mint_null(self, *names: str, **claims) -> str:
        """A token whose claims `names` are JSON null (mint's None removes a claim)."""
        key_alg, key = self.keys["rsa-1"]
        return jwt.encode({**self.claims(**claims), **dict.fromkeys(names)}, key, algorithm=key_alg,
                          headers={"kid": "rsa-1"})

    def expired(self, **claims) -> str:
        now = int(time.time())
        return self.mint(exp=now - 3600, iat=now - 7200, **claims)

    def not_yet_valid(self, **claims) -> str:
        return self.mint(nbf=int(time.time()) + 3600, **claims)

    def wrong_issuer(self, **claims) -> str:
        return self.mint(iss="https://evil.test", **claims)

    def wrong_audience(self, **claims) -> str:
        return self.mint(aud="https://other.test/mcp", **claims)

    def unknown_kid(self, kid: str = "rsa-ghost", **claims) -> str:
        """Signed by a real key that is not (yet) in the JWKS."""
        return self.mint(kid, **claims)

    def unsigned(self, header: dict, claims: dict, signature: bytes = b"") -> str:
        head = _b64(json.dumps(header).encode())
        body = _b64(json.dumps(claims).encode())
        return f"{head}.{body}.{_b64(signature)}"

    def hs256_with_public_key(self, kid: str = "rsa-1", **claims) -> str:
        """The classic confusion attack: HMAC keyed with the server's public key PEM."""
        head = _b64(json.dumps({"alg": "HS256", "typ": "JWT", "kid": kid}).encode())
        body = _b64(json.dumps(self.claims(**claims)).encode())
        mac = hmac.new(self.public_pem(kid), f"{head}.{body}".encode(), hashlib.sha256).digest()
        return f"{head}.{body}.{_b64(mac)}"

    def alg_none(self, kid: str = "rsa-1", **claims) -> str:
        return self.unsigned({"alg": "none", "typ": "JWT", "kid": kid}, self.claims(**claims))


# -- a test CA and certificates ------------------------------------------------------
class CertAuthority:
    """A throwaway CA; `issue()` writes a server certificate signed by it. The key
    identifiers are there because Python 3.13's default client context verifies strictly
    (VERIFY_X509_STRICT) and refuses a chain without them ("Missing Authority Key Identifier")."""

    def __init__(self, directory):
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        self.key = ec.generate_private_key(ec.SECP256R1())
        name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "gsmcpd test CA")])
        now = datetime.datetime.now(datetime.timezone.utc)
        self.cert = (
            x509.CertificateBuilder().subject_name(name).issuer_name(name)
            .public_key(self.key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(hours=1))
            .not_valid_after(now + datetime.timedelta(days=2))
            .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
            .add_extension(x509.SubjectKeyIdentifier.from_public_key(self.key.public_key()), critical=False)
            .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True,
                                         content_commitment=False, key_encipherment=False,
                                         data_encipherment=False, key_agreement=False,
                                         encipher_only=False, decipher_only=False), critical=True)
            .sign(self.key, hashes.SHA256()))
        self.ca_file = self.directory / "test-ca.pem"
        self.ca_file.write_bytes(self.cert.public_bytes(serialization.Encoding.PEM))

    def issue(self, name: str = "server", hosts=("localhost", "127.0.0.1", "::1"),
              valid_for=datetime.timedelta(days=1),
              valid_from=-datetime.timedelta(hours=1)) -> tuple[Path, Path]:
        """A certificate valid from now + `valid_from` (positive: not yet valid) until
        now + `valid_for` (negative: expired)."""
        key = ec.generate_private_key(ec.SECP256R1())
        now = datetime.datetime.now(datetime.timezone.utc)
        sans = []
        for host in hosts:
            try:
                sans.append(x509.IPAddress(ipaddress.ip_address(host)))
            except ValueError:
                sans.append(x509.DNSName(host))
        cert = (
            x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, hosts[0])]))
            .issuer_name(self.cert.subject).public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now + valid_from)
            .not_valid_after(now + valid_for)
            .add_extension(x509.SubjectAlternativeName(sans), critical=False)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(self.key.public_key()),
                           critical=False)
            .sign(self.key, hashes.SHA256()))
        cert_path, key_path = self.directory / f"{name}.pem", self.directory / f"{name}.key"
        cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
        key_path.write_bytes(key.private_bytes(serialization.Encoding.PEM,
                                               serialization.PrivateFormat.PKCS8,
                                               serialization.NoEncryption()))
        key_path.chmod(0o600)
        return cert_path, key_path


# -- HTTPS JWKS / discovery server ---------------------------------------------------
class JwksServer:
    """Threaded HTTPS server on 127.0.0.1 serving discovery and `idp.jwks()` (live)."""

    JWKS_PATH = "/jwks.json"
    CONFIG_PATH = "/.well-known/openid-configuration"

    def __init__(self, directory, idp: Idp | None = None):
        self.ca = CertAuthority(directory)
        self.ca_file = str(self.ca.ca_file)
        cert, key = self.ca.issue("jwks-server")
        self.idp = idp
        self.fetches: collections.Counter = collections.Counter()
        self.fail_with: int | None = None          # answer every request with this status
        self.config_issuer: str | None = None      # override `issuer` in the openid-configuration
        self.raw_answer: bytes | None = None       # sent instead of an HTTP answer to JWKS requests
        self.drip = False                          # True: JWKS answers send a header line every 0.2 s, forever
        # Cleared: JWKS requests are counted, then held until it is set again (a slow IdP).
        self.jwks_gate = threading.Event()
        self.jwks_gate.set()
        self._lock = threading.Lock()
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(cert, key)
        self._httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._httpd.daemon_threads = True
        self._httpd.socket = context.wrap_socket(self._httpd.socket, server_side=True)
        self.url = f"https://127.0.0.1:{self._httpd.server_address[1]}"
        self.jwks_url = self.url + self.JWKS_PATH
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05},
                                        daemon=True)
        self._thread.start()

    def _handler(self):
        server = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                with server._lock:
                    server.fetches[self.path] += 1
                if self.path == server.JWKS_PATH:
                    server.jwks_gate.wait(30)
                    if server.raw_answer is not None:
                        self.close_connection = True
                        return self.wfile.write(server.raw_answer)
                    if server.drip:
                        return self._drip()
                if server.fail_with:
                    return self._send(server.fail_with, {"error": "failing on purpose"})
                if self.path == server.CONFIG_PATH:
                    issuer = server.config_issuer or (server.idp.issuer if server.idp else server.url)
                    return self._send(200, {"issuer": issuer, "jwks_uri": server.jwks_url})
                if self.path == server.JWKS_PATH and server.idp is not None:
                    return self._send(200, server.idp.jwks())
                return self._send(404, {"error": "not found"})

            def _drip(self):
                self.close_connection = True
                self.wfile.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n")
                try:
                    while server.drip:             # until the client gives up (the write fails)
                        time.sleep(0.2)
                        self.wfile.write(b"X-Drip: 1\r\n")
                except OSError:
                    pass

            def _send(self, status, document):
                body = json.dumps(document).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):   # keep test output quiet
                return None

        return Handler

    def close(self) -> None:
        self.jwks_gate.set()
        self.drip = False
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(5)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
