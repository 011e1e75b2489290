"""A worked third-party toolset: Acme's label printer, as a vendor would ship it.

Run it alone, or composed with core toolsets:

    PYTHONPATH=examples GS_MCP_TOOLSETS="acme_toolset:AcmeLabelsToolset browsing" \\
        python -m gsmcpd serve

and relabel the server (server name/version/title in the config) when it is a
product of its own. The toolset owns its handlers and vouches
for its own read-only safety: `list_labels` only reads, so it stays in a
read-only session; `print_label` changes state, so it is gated there.
"""

from gsmcpd.worker.registry import Tool
from gsmcpd.worker.toolset import (
    ToolError, Toolset, integer_prop, object_schema, string_prop,
)


class AcmeLabelsToolset(Toolset):
    name = "acme-labels"
    tool_names = ("list_labels", "print_label")
    read_only_safe = frozenset({"list_labels"})
    idempotent = frozenset({"list_labels"})

    def __init__(self, server=None):
        super().__init__(server)
        self.printed: list[str] = []

    def register(self, registry):
        registry.add(Tool(
            "list_labels", "Labels printed so far in this session, oldest first.",
            object_schema(), self.list_labels,
        ))
        registry.add(Tool(
            "print_label", "Print a label (queues it on this session's printer).",
            object_schema({
                "text": string_prop("what the label says"),
                "copies": integer_prop("how many copies (1-10, default 1)"),
            }, required=["text"]),
            self.print_label,
        ))

    def list_labels(self, arguments):
        return {"text": "\n".join(self.printed) or "(no labels)",
                "structured": {"labels": list(self.printed)}}

    def print_label(self, arguments):
        copies = arguments.get("copies", 1)
        if not 1 <= copies <= 10:
            raise ToolError("invalidParams", f"copies must be 1-10, got {copies}")
        self.printed.extend([arguments["text"]] * copies)
        return f"printed {copies} x {arguments['text']!r}"
