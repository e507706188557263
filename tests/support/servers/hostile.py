"""The server ``test_hostile_input.py`` attacks: stdio by default, HTTP when
``MCPSERVE_TEST_HTTP_PORT`` is set. Both eras are served."""

from __future__ import annotations

from typing import Annotated, Any

from mcpserve import Context, Header, Server

server = Server("hostile", version="1.0.0")

CONFIRM = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}


@server.tool
def echo(text: str) -> str:
    """Return the text."""
    return text


@server.tool
def exact(n: Annotated[int, Header("N")]) -> str:
    """The integer as received, digit for digit (mirrored in ``Mcp-Param-N``)."""
    return str(n)


@server.tool
async def confirm(ctx: Context, what: str = "it") -> str:
    """Ask the user to confirm ``what`` (other arguments are ignored)."""
    answer = await ctx.elicit(f"Sure about {what}?", CONFIRM)
    content: dict[str, Any] = answer.content or {}
    return f"{answer.action} ok={content.get('ok')}"


if __name__ == "__main__":
    from _serve import serve  # beside this script

    serve(server)
