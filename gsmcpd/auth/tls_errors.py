"""The TLS layer's exceptions, apart from `tls` and so from `ssl`: every connection
catches them, and a router serving plain HTTP never imports `ssl` (~5 ms of its start)."""

from gsmcpd.wire import http

# Sent in the clear (no TLS) to a client that spoke plain HTTP to the TLS port, then close.
PLAINTEXT_HTTP_RESPONSE = http.response(400, [("Content-Type", "text/plain; charset=utf-8")],
                                        b"This port speaks HTTPS: use https:// to connect.\n",
                                        keep_alive=False)


class TlsError(Exception):
    """The TLS session failed (handshake or record layer); close the connection."""


class PlaintextHttpError(TlsError):
    """The peer sent plain HTTP; write `response` unencrypted, then close."""
    response = PLAINTEXT_HTTP_RESPONSE

    def __init__(self):
        super().__init__("plaintext HTTP request on the TLS port")
