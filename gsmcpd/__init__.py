"""gsmcpd: an MCP server daemon giving each client an isolated worker process on a Python image."""

__version__ = "0.1.0"
