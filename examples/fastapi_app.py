"""An MCP server inside a FastAPI app: the MCP endpoint beside ordinary routes.

``server.http_app()`` is a plain ASGI app, mounted here under ``/mcp-app``, so the MCP
endpoint is ``http://127.0.0.1:8000/mcp-app/mcp``; ``GET /health`` is FastAPI's own route.

FastAPI never sends a mounted app the ASGI lifespan events (Starlette gives them to the
outer app only), so FastAPI's own lifespan enters ``server.running()``: that runs the
server's lifespan (here it loads the glossary ``ctx.lifespan_state`` hands the tools) and
its background parts when the app starts, and stops them when it shuts down.

Run it with uvicorn (``pip install fastapi "mcpserve[http]"``)::

    uvicorn fastapi_app:app --app-dir examples --port 8000
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass

from fastapi import FastAPI
from pydantic import BaseModel

from mcpserve import Context, Server, ToolError
from mcpserve.transports.serve import end_listens_on_exit_signals

TERMS = {
    "asgi": "The Asynchronous Server Gateway Interface: how Python web servers call apps.",
    "lifespan": "Code an ASGI app runs once at startup and once at shutdown.",
    "mcp": "The Model Context Protocol: how AI applications talk to tool servers.",
}


@dataclass
class Glossary:
    """What the server's lifespan opens: a real app would connect to a database here."""

    terms: dict[str, str]
    loaded_at: float


class Definition(BaseModel):
    term: str
    definition: str
    loaded_at: float  # when the lifespan ran: proof the tool reached its state


@asynccontextmanager
async def open_glossary(server: Server) -> AsyncIterator[Glossary]:
    yield Glossary(dict(TERMS), time.time())


server = Server(
    "glossary",
    version="1.0.0",
    instructions="Defines web-development terms. Use list_terms to see which it knows.",
    lifespan=open_glossary,
)


def glossary_of(ctx: Context) -> Glossary:
    glossary: Glossary = ctx.lifespan_state
    return glossary


@server.tool(annotations={"readOnlyHint": True})
def define(term: str, ctx: Context) -> Definition:
    """Define a term.

    Args:
        term: The term, in any case (e.g. "ASGI").
    """
    glossary = glossary_of(ctx)
    definition = glossary.terms.get(term.lower())
    if definition is None:
        raise ToolError(f"No entry for {term!r}. Known terms: {', '.join(sorted(glossary.terms))}.")
    return Definition(term=term.lower(), definition=definition, loaded_at=glossary.loaded_at)


@server.tool(annotations={"readOnlyHint": True})
def list_terms(ctx: Context) -> list[str]:
    """Every term the glossary defines."""
    return sorted(glossary_of(ctx).terms)


@asynccontextmanager
async def lifespan(app: FastAPI) -> AsyncIterator[None]:
    # Under uvicorn this runs in the main thread once its signal handlers are installed:
    # let SIGTERM and Ctrl-C end open subscriptions/listen streams, or shutdown waits on them.
    end_listens_on_exit_signals(server)
    async with server.running():
        yield


app = FastAPI(title="Glossary", lifespan=lifespan)


@app.get("/health")
async def health() -> dict[str, str]:
    """For load balancers: this process serves HTTP."""
    return {"status": "ok"}


app.mount("/mcp-app", server.http_app())  # the MCP endpoint: /mcp-app/mcp
