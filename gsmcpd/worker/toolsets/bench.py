"""bench: a trivial tool for measuring the transport, never in the default surface."""

from gsmcpd.worker.registry import Tool
from gsmcpd.worker.toolset import Toolset, object_schema, string_prop


class BenchToolset(Toolset):
    name = "bench"
    tool_names = ("echo",)
    read_only_safe = frozenset({"echo"})
    idempotent = frozenset({"echo"})

    def register(self, registry):
        registry.add(Tool(
            "echo", "Answer the given text unchanged (for transport benchmarks).",
            object_schema({"text": string_prop("text to echo back")}, required=["text"]),
            self.echo,
        ))

    def echo(self, arguments):
        return arguments["text"]
