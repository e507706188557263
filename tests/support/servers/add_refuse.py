"""Two tools the tracing and metrics tests measure: ``add`` answers, ``refuse`` answers a
tool error (``isError``), each a plain function."""

from __future__ import annotations

from typing import Any

from mcpserve import Server, ToolError


def add_and_refuse(name: str, **options: Any) -> Server:
    """A server named ``name`` (``options`` as ``Server`` takes them) with the two tools."""
    server = Server(name, **options)

    @server.tool
    def add(a: int, b: int) -> int:
        return a + b

    @server.tool
    def refuse() -> str:
        raise ToolError("No.")

    return server
