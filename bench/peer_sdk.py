"""The official MCP Python SDK as a benchmark peer (runs in the bench peers venv).

Its high-level server (MCPServer, formerly FastMCP) over Streamable HTTP, stateful
sessions, with the same trivial `echo` tool as gsmcpd's bench toolset and a `sleep`
tool for the isolation test. Modes:
  --mode json  JSON responses; --mode sse  SSE responses (the SDK default);
  --fast       uvloop + httptools and an `async def` echo (its fastest configuration).
Without --fast uvicorn is pinned to asyncio + h11, what a plain `pip install mcp` runs.
"""

import argparse
import time

import uvicorn
from mcp.server.mcpserver import MCPServer


def build(fast):
    server = MCPServer("bench-peer")
    if fast:
        @server.tool(structured_output=False)
        async def echo(text: str) -> str:
            """Answer the given text unchanged."""
            return text
    else:
        @server.tool(structured_output=False)
        def echo(text: str) -> str:
            """Answer the given text unchanged."""
            return text

    @server.tool(structured_output=False)
    def sleep(seconds: float) -> str:
        """Block for the given seconds (isolation test)."""
        time.sleep(seconds)
        return "slept"
    return server


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--mode", choices=("json", "sse"), default="json")
    parser.add_argument("--fast", action="store_true")
    args = parser.parse_args()
    app = build(args.fast).streamable_http_app(json_response=args.mode == "json",
                                               session_idle_timeout=None, max_sessions=None)
    uvicorn.run(app, host="127.0.0.1", port=args.port, log_level="warning", access_log=False,
                loop="uvloop" if args.fast else "asyncio", http="httptools" if args.fast else "h11")


if __name__ == "__main__":
    main()
