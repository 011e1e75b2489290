"""MCP protocol constants shared by the router and the worker (the one place for them)."""

# Newest first. The single source of truth for initialize negotiation *and* the
# MCP-Protocol-Version header check, so the two cannot drift.
SUPPORTED_VERSIONS = ("2025-11-25", "2025-06-18")
LATEST_VERSION = SUPPORTED_VERSIONS[0]


def negotiate_version(requested):
    """Echo a supported client version, otherwise answer our latest."""
    return requested if requested in SUPPORTED_VERSIONS else LATEST_VERSION
