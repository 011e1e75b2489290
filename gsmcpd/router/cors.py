"""CORS for the browser origins listed in GS_MCP_ALLOWED_ORIGINS.

A page of another origin may read a reply only if the reply names its origin, and may
send a JSON POST, a DELETE, or an MCP or Authorization header only after a preflight
OPTIONS says so. Only listed origins are granted either: a loopback page passes the
Origin gate, as the spec has it, but is not granted CORS unless listed, since any page
served from this machine could otherwise drive every tool of an unauthenticated server.
A listed origin matches exactly; a listed bare host matches its every scheme and port.
"""

import re

from gsmcpd.wire import hosts

# What a browser client must read off a reply: the session id after initialize, the
# auth challenge (its resource_metadata), when to retry a 503.
EXPOSED = "Mcp-Session-Id, WWW-Authenticate, Retry-After"
# What an MCP client sends; any other requested headers are granted as asked (the
# gates, not CORS, decide what a request may do).
ALLOWED_HEADERS = "Authorization, Content-Type, Accept, Mcp-Session-Id, MCP-Protocol-Version, Last-Event-ID"
VARY = (("Vary", "Origin"),)
MAX_AGE = "600"   # seconds a browser may reuse a preflight's answer: a config change shows soon
_HEADER_LIST = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+(?:[ \t]*,[ \t]*[!#$%&'*+\-.^_`|~0-9A-Za-z]+)*")


class Cors:
    def __init__(self, allowed_origins):
        """`allowed_origins`: the config's entries, as parse_allowed_origins gives them."""
        self._origins = frozenset(hosts.origin_key(entry) for entry in allowed_origins if "://" in entry)
        self._hosts = frozenset(entry for entry in allowed_origins if "://" not in entry)
        # Every host the list names: the Origin gate lets their pages in (by host alone).
        self.listed_hosts = self._hosts | {key[1] for key in self._origins}

    def __bool__(self):
        return bool(self._origins or self._hosts)

    def allows(self, origin):
        """Whether a page of this Origin value is granted CORS. (origin_key keeps the
        parses: a client repeats its Origin.)"""
        key = hosts.origin_key(origin)
        return key is not None and (key in self._origins or key[1] in self._hosts)

    def reply_headers(self, origin):
        """The headers every reply to a request with this Origin (None: none) carries.
        Vary on every reply, granted or not: a cache in between (the metadata document
        may be kept an hour) must not hand one origin's answer to another."""
        if origin is None or not self.allows(origin):
            return VARY
        return (("Access-Control-Allow-Origin", origin), ("Access-Control-Expose-Headers", EXPOSED)) + VARY

    @staticmethod
    def preflight_headers(methods, requested_headers, private_network=False):
        """A granted preflight's own headers, besides reply_headers(). `private_network`:
        it asked, as Chrome's Private Network Access does for a public page calling a
        server on this machine, and a listed origin is granted that too."""
        headers = requested_headers.strip() if requested_headers else ""
        if not _HEADER_LIST.fullmatch(headers):
            headers = ALLOWED_HEADERS
        granted = [("Access-Control-Allow-Methods", methods), ("Access-Control-Allow-Headers", headers),
                   ("Access-Control-Max-Age", MAX_AGE)]
        if private_network:
            granted.append(("Access-Control-Allow-Private-Network", "true"))
        return granted
