"""A server for ``test_wire_features.py``: a round trip, pages, client logging and results
spelled out as ``ToolResult``, over stdio by default or HTTP with
``MCPSERVE_TEST_HTTP_PORT``."""

from __future__ import annotations

from pydantic import BaseModel

from mcpserve import Context, Server, ToolResult

server = Server("features", version="1.0.0", page_size=2, client_logging=True)


class Name(BaseModel):
    name: str


class Measurement(BaseModel):
    mm: int


@server.tool
async def greet(ctx: Context) -> str:
    """Ask for a name, then greet."""
    answer = await ctx.elicit("What is your name?", Name, key="name")
    return f"Hello, {answer.data.name}!" if answer.accepted else f"No name ({answer.action})"


@server.tool
async def chatty(ctx: Context) -> str:
    """Log at three levels; the request's log level decides what the client hears."""
    await ctx.log("debug", "a detail")
    await ctx.log("info", {"step": 1})
    await ctx.log("warning", "careful", logger="chatty")
    return "said"


@server.tool
def measure(fits: bool) -> Measurement:
    """A result spelled out in full: its structured part must still fit the output schema."""
    structured = {"mm": 3} if fits else {"inches": "three"}
    return ToolResult(content=["3 mm"], structured=structured)  # type: ignore[return-value]


for number in range(3):
    server.add_tool(lambda: "filler", name=f"filler_{number}", description="Fills a page.")


if __name__ == "__main__":
    from _serve import serve  # beside this script

    serve(server)
