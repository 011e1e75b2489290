"""Words of the knobs that the workers' side names too, apart from the config: the
forkserver imports them without the config's parsing (~40M instructions of each start)."""

CORE_TOOLSETS = ("execution", "session", "listing", "browsing", "search", "mutation", "testing")
# MCP_USER_MAP=identity: the claim value itself names the local account (no map file).
IDENTITY_MAP = "identity"
