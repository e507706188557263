"""An upstream written with the official SDK's ``MCPServer`` (mcp 2.x), for the proxy tests.

stdio by default; with ``MCPSERVE_TEST_HTTP_PORT``, Streamable HTTP on 127.0.0.1 (stateful,
SSE answers: the handshake era's questions and progress need both). It speaks both eras,
as the official SDK does: the client's first message decides.

``greet`` asks the user's name through a ``Resolve`` dependency, which the SDK turns into
an ``input_required`` round on 2026-07-28 and an ``elicitation/create`` request in the
handshake era; ``progress`` reports progress; ``grow`` adds a tool and says the list
changed, in both eras; ``wait`` waits to be cancelled (``<tag>.cancelled`` under
``MCPSERVE_TEST_MARKER_DIR``).
"""

from __future__ import annotations

import os
import warnings
from pathlib import Path
from typing import Annotated

import anyio
from mcp.server.mcpserver import Context, Elicit, MCPServer, Resolve
from pydantic import BaseModel

server = MCPServer("official-upstream", version="2.0.0", instructions="Official SDK upstream.",
                   log_level="WARNING")  # fmt: skip


class UserName(BaseModel):
    name: str


def ask_name() -> Elicit[UserName]:
    return Elicit("What is your name?", UserName)


@server.tool()
def echo(text: str) -> str:
    """Return the text unchanged."""
    return text


@server.tool()
def greet(user: Annotated[UserName, Resolve(ask_name)]) -> str:
    """Ask the user's name, then greet them."""
    return f"Hello, {user.name}!"


@server.tool()
async def progress(ctx: Context, steps: int = 3) -> str:
    """Report progress ``steps`` times."""
    for done in range(1, steps + 1):
        await ctx.report_progress(done, total=steps, message=f"step {done}")
    return f"{steps} steps"


@server.tool()
async def grow(name: str, ctx: Context) -> str:
    """Add a tool named ``name`` and tell the client the list changed."""
    server.add_tool(lambda: f"I am {name}", name=name, description=f"Grown: {name}")
    await ctx.notify_tools_changed()  # subscriptions/listen (2026-07-28)
    if ctx.protocol_version != "2026-07-28":
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            await ctx.session.send_tool_list_changed()  # the session (handshake era)
    return f"grew {name}"


@server.tool()
async def wait(tag: str) -> str:
    """Wait until cancelled."""
    directory = os.environ.get("MCPSERVE_TEST_MARKER_DIR")
    try:
        await anyio.sleep(60)
    except anyio.get_cancelled_exc_class():
        if directory:
            (Path(directory) / f"{tag}.cancelled").write_text("cancelled")
        raise
    return "waited"


@server.resource("file:///motd.txt", mime_type="text/plain")
def motd() -> str:
    """The message of the day."""
    return "official message of the day"


@server.prompt()
def welcome(who: str) -> str:
    """Welcome someone."""
    return f"Welcome, {who}!"


if __name__ == "__main__":
    port = os.environ.get("MCPSERVE_TEST_HTTP_PORT")
    if port:
        import uvicorn

        app = server.streamable_http_app(stateless_http=False, json_response=False)
        uvicorn.run(app, host="127.0.0.1", port=int(port), log_level="warning")
    else:
        server.run()
