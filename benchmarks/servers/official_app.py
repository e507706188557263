"""The benchmark server written with the official SDK's high-level ``MCPServer`` (mcp 2.x).

HTTP: ``streamable_http_app(stateless_http=True, json_response=True)`` (``--sse`` turns
JSON responses off so progress notifications can stream); stdio: ``MCPServer.run()``.
"""

from __future__ import annotations

from typing import Annotated

from _shared import (
    BIG_TEXT,
    BIG_URI,
    FILLER_NAMES,
    GREET_QUESTION,
    PROGRESS_STEPS,
    filler_description,
    filler_result,
    greeting,
    parse_cli,
    serve_http,
)
from mcp.server.mcpserver import Context, Elicit, MCPServer, Resolve
from pydantic import BaseModel, Field

server = MCPServer("bench", version="1.0.0", log_level="WARNING")


class Order(BaseModel):
    sku: str = Field(min_length=1)
    quantity: int = Field(ge=1)
    unit_price: float = Field(gt=0)
    tags: list[str] = []


class Receipt(BaseModel):
    sku: str
    quantity: int
    total: float
    tags: list[str]


class UserName(BaseModel):
    name: str


@server.tool()
def echo(text: str) -> str:
    """Return the text unchanged."""
    return text


@server.tool()
def place_order(order: Order) -> Receipt:
    """Price an order."""
    total = round(order.quantity * order.unit_price, 2)
    return Receipt(sku=order.sku, quantity=order.quantity, total=total, tags=order.tags)


@server.tool()
async def progress(ctx: Context, steps: int = PROGRESS_STEPS) -> str:
    """Report progress ``steps`` times, then finish."""
    for done in range(1, steps + 1):
        await ctx.report_progress(done, total=steps)
    return "done"


def ask_name() -> Elicit[UserName]:
    return Elicit(GREET_QUESTION, UserName)


@server.tool()
def greet(user: Annotated[UserName, Resolve(ask_name)]) -> str:
    """Ask the user for their name (an input_required round trip), then greet them."""
    return greeting(user.name)


def _make_filler(name: str) -> None:
    def filler(a: int, b: str = "x") -> str:
        return filler_result(name, a, b)

    server.add_tool(filler, name=name, description=filler_description(name))


for _name in FILLER_NAMES:
    _make_filler(_name)


@server.resource(BIG_URI, mime_type="text/plain")
def big() -> str:
    """A 1 MiB text document."""
    return BIG_TEXT


if __name__ == "__main__":
    transport, port, sse = parse_cli()
    if transport == "stdio":
        server.run()
    else:
        app = server.streamable_http_app(stateless_http=True, json_response=not sse)
        serve_http(app, port)
