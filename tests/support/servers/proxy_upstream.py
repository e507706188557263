"""The mcpserve server the proxy tests put behind a proxy: stdio, or HTTP with
``MCPSERVE_TEST_HTTP_PORT``; it speaks both eras, so a proxy pinned to a handshake-era
version meets a handshake-era upstream.

Tools ask the client (``greet``, ``ask_twice``, ``summarize``, ``roots``), report progress
and log (``steps``), wait to be cancelled (``wait``: ``<tag>.started`` and
``<tag>.cancelled`` under ``MCPSERVE_TEST_MARKER_DIR``), change the tool list (``grow``),
update a resource (``touch``), show the HTTP headers they came with (``seen_headers``)
and exit on the spot (``exit_now``).
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Annotated

from pydantic import BaseModel

from mcpserve import Context, Header, Server

server = Server("proxied", version="3.1.4", instructions="The server behind the proxy.",
                client_logging=True)  # fmt: skip


def _marker(tag: str, event: str) -> None:
    directory = os.environ.get("MCPSERVE_TEST_MARKER_DIR")
    if directory:
        (Path(directory) / f"{tag}.{event}").write_text(event)


class Name(BaseModel):
    name: str


@server.tool
def echo(text: str) -> str:
    """Echo the text back."""
    return text


@server.tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@server.tool
def region_echo(region: Annotated[str, Header("Region")], text: str) -> str:
    """Echo with the region, which 2026-07-28 clients mirror into Mcp-Param-Region."""
    return f"{region}: {text}"


@server.tool
async def greet(ctx: Context) -> str:
    """Ask the user's name, then greet them."""
    answer = await ctx.elicit("What is your name?", Name)
    return f"Hello, {answer.data.name}!" if answer.accepted else f"No name ({answer.action})"


@server.tool
async def ask_twice(ctx: Context) -> str:
    """Ask two questions, one after the other."""
    first = await ctx.elicit("First?", Name)
    second = await ctx.elicit("Second?", Name)
    return f"{first.data.name}+{second.data.name}"


@server.tool
async def summarize(text: str, ctx: Context) -> str:
    """Ask the client's model."""
    reply = await ctx.sample(f"Summarize: {text}", max_tokens=20)
    return f"model said: {reply.text}"


@server.tool
async def roots(ctx: Context) -> str:
    """The client's roots."""
    return ",".join(root.uri for root in await ctx.list_roots())


@server.tool
async def steps(n: int, ctx: Context) -> str:
    """Report progress and log at each of n steps."""
    for done in range(1, n + 1):
        await ctx.log("info", f"step {done}")
        await ctx.progress(done, total=n, message=f"step {done}")
    return f"{n} steps"


@server.tool
async def wait(tag: str) -> str:
    """Wait until cancelled."""
    _marker(tag, "started")
    try:
        await asyncio.sleep(60)
    except asyncio.CancelledError:
        _marker(tag, "cancelled")
        raise
    return "waited"


@server.tool
def grow(name: str) -> str:
    """Add a tool named ``name`` (the tool list changes)."""
    server.add_tool(lambda: f"I am {name}", name=name, description=f"Grown: {name}")
    return f"grew {name}"


@server.tool
async def touch(uri: str) -> str:
    """Tell subscribers that ``uri`` was updated."""
    await server.notify_resource_updated(uri)
    return f"touched {uri}"


@server.tool
def seen_headers(ctx: Context) -> dict[str, str]:
    """The HTTP headers this call arrived with (over HTTP), names lowercased."""
    request = ctx.http
    return dict(request.headers.items()) if request is not None else {}


@server.tool
def exit_now() -> str:
    """Exit the process at once, as a crash would."""
    os._exit(3)


@server.resource("file:///a.txt", mime_type="text/plain")
def a_txt() -> str:
    return "hello from a.txt"


@server.resource("notes://{note_id}")
def note(note_id: str) -> str:
    return f"note {note_id}"


@server.prompt
def welcome(who: str) -> str:
    """Welcome someone."""
    return f"Welcome, {who}!"


@server.completion(prompt="welcome", argument="who")
def complete_who(value: str) -> list[str]:
    return [who for who in ("ada", "alan", "grace") if who.startswith(value)]


if __name__ == "__main__":
    from _serve import serve  # beside this script

    serve(server)
