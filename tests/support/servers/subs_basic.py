"""A server for the ``subscriptions/listen`` wire tests (stdio and HTTP).

Run as a script it serves stdio. ``--port N`` serves Streamable HTTP on 127.0.0.1:N with
uvicorn (through ``Server.run("http")``, so SIGINT/SIGTERM end open listens gracefully);
``--keepalive S`` (or ``MCPSERVE_TEST_KEEPALIVE``) sets the SSE keep-alive period.

Tools let a test change the server from outside a listen stream (``change``, ``touch``) and
look inside it (``listeners``, ``keepalive_tasks``).
"""

from __future__ import annotations

import argparse
import asyncio
import os

from mcpserve import Server

server = Server("subs-wire", version="2.0.0")


def _extra_tool() -> str:
    return "extra"


def _extra_prompt() -> str:
    return "extra prompt"


def _extra_resource() -> str:
    return "extra resource"


@server.tool
def change(what: str, name: str) -> str:
    """Add a tool, prompt or resource named ``name`` (``what``: tools, prompts, resources)."""
    if what == "tools":
        server.add_tool(_extra_tool, name=name)
    elif what == "prompts":
        server.add_prompt(_extra_prompt, name=name)
    elif what == "resources":
        server.add_resource(f"file:///extra/{name}", _extra_resource, name=name)
    else:
        raise ValueError(f"unknown kind {what!r}")
    return f"added {what} {name}"


@server.tool
async def touch(uri: str) -> str:
    """Publish ``notifications/resources/updated`` for ``uri``."""
    await server.notify_resource_updated(uri)
    return f"touched {uri}"


@server.tool
def listeners() -> int:
    """How many ``subscriptions/listen`` streams are open in this process."""
    return len(server.subscriptions.listeners)


@server.tool
def keepalive_tasks() -> int:
    """How many SSE keep-alive tasks are running in this process."""
    return sum(
        1
        for task in asyncio.all_tasks()
        if not task.done() and "_keep_alive" in getattr(task.get_coro(), "__qualname__", "")
    )


@server.tool
async def sleepy(seconds: float, tag: str) -> str:
    """Sleep, then answer with the tag."""
    await asyncio.sleep(seconds)
    return f"slept {tag}"


@server.resource("file:///project/config.json", mime_type="application/json")
def config() -> str:
    """The project configuration."""
    return "{}"


@server.resource("notes://{note_id}", mime_type="text/plain")
def note(note_id: str) -> str:
    """A note by id."""
    return f"note {note_id}"


@server.prompt
def greet(who: str) -> str:
    """Greet someone."""
    return f"Hello, {who}!"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int)
    parser.add_argument(
        "--keepalive", type=float, default=float(os.environ.get("MCPSERVE_TEST_KEEPALIVE", "15"))
    )
    args = parser.parse_args()
    if args.port is None:
        server.run("stdio")
    else:
        server.run(
            "http",
            host="127.0.0.1",
            port=args.port,
            log_level="warning",
            keepalive_seconds=args.keepalive,
        )


if __name__ == "__main__":
    main()
