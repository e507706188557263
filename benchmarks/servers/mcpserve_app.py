"""The benchmark server written with mcpserve, in its default configuration.

Every check stays on: argument validation, header validation and ``_meta`` validation.
"""

from __future__ import annotations

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
from pydantic import BaseModel, Field

from mcpserve import Context, Server

server = Server("bench", version="1.0.0")


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


@server.tool
def echo(text: str) -> str:
    """Return the text unchanged."""
    return text


@server.tool
def place_order(order: Order) -> Receipt:
    """Price an order."""
    total = round(order.quantity * order.unit_price, 2)
    return Receipt(sku=order.sku, quantity=order.quantity, total=total, tags=order.tags)


@server.tool
async def progress(ctx: Context, steps: int = PROGRESS_STEPS) -> str:
    """Report progress ``steps`` times, then finish."""
    for done in range(1, steps + 1):
        await ctx.progress(done, total=steps)
    return "done"


@server.tool
async def greet(ctx: Context) -> str:
    """Ask the user for their name (an input_required round trip), then greet them."""
    answer = await ctx.elicit(GREET_QUESTION, UserName)
    return greeting(answer.data.name) if answer.accepted else "Hello, stranger!"


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
    transport, port, _sse = parse_cli()
    if transport == "stdio":
        server.run()
    else:
        serve_http(server.http_app(), port)  # SSE is chosen per request by mcpserve itself
