"""An upstream written with the official SDK's ``MCPServer`` (mcp 2.x), for the proxy tests.

stdio by default; with ``MCPSERVE_TEST_HTTP_PORT``, Streamable HTTP on 127.0.0.1 (stateful,
SSE answers: the handshake era's questions and progress need both). It speaks both eras,
as the official SDK does: the client's first message decides.

``greet`` asks the user's name through a ``Resolve`` dependency, which the SDK turns into
an ``input_required`` round on 2026-07-28 and an ``elicitation/create`` request in the
handshake era. ``ask``, ``sample`` and ``roots`` ask the client with requests of the
server's own (``ctx.elicit``, ``create_message``, ``list_roots``), which only the handshake
era carries: on 2026-07-28 the SDK fails them ("no back-channel"). ``ask`` also logs and
reports progress while it asks; ``roots`` asks without naming its request, so over HTTP the
question comes on the session's standalone stream. ``progress`` reports progress;
``grow`` adds a tool and says the list changed, in both eras; ``wait`` waits to be
cancelled (``<tag>.cancelled`` under ``MCPSERVE_TEST_MARKER_DIR``).
"""

from __future__ import annotations

import os
import warnings
from pathlib import Path
from typing import Annotated

import anyio
from mcp.server.mcpserver import Context, Elicit, MCPServer, Resolve
from mcp.types import SamplingMessage, TextContent
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
async def ask(ctx: Context) -> str:
    """Log, report progress, ask the user's name with ``ctx.elicit``, report progress again."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # logging is deprecated on 2026-07-28, not here
        await ctx.info("about to ask for a name")
    await ctx.report_progress(1, total=2, message="asking")
    answer = await ctx.elicit("Who is there?", UserName)
    await ctx.report_progress(2, total=2, message="answered")
    if answer.action != "accept":
        return f"Nobody ({answer.action})"
    return f"Hello, {answer.data.name}!"


@server.tool()
async def sample(ctx: Context, prompt: str) -> str:
    """Ask the client's model with ``sampling/createMessage``."""
    message = SamplingMessage(role="user", content=TextContent(type="text", text=prompt))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # sampling is deprecated on 2026-07-28, not here
        result = await ctx.session.create_message([message], max_tokens=50,
                                                  related_request_id=ctx.request_id)  # fmt: skip
    content = result.content
    said = content.text if isinstance(content, TextContent) else content.type
    return f"{result.model} said: {said}"


@server.tool()
async def roots(ctx: Context) -> str:
    """List the client's roots with ``roots/list`` (no related request: over HTTP it goes on
    the standalone stream)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # roots are deprecated on 2026-07-28, not here
        listed = await ctx.session.list_roots()
    return "Roots: " + ", ".join(str(root.uri) for root in listed.roots)


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
