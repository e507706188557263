"""A server with the library's middleware (``mcpserve.middleware``), for its wire tests.

``MCPSERVE_TEST_MIDDLEWARE`` names the middleware, comma-separated, outermost first:
``rate`` (RateLimit, 2 requests at once then one every 5 s per caller; ``rate-client``: the
same per client address), ``cache``
(ResponseCache, 60 s), ``logging`` (StructuredLogging, its lines on stderr), ``timing``
(Timing), ``size`` (ResponseSizeLimit of 200 bytes). ``MCPSERVE_TEST_CACHE_SCOPE`` is the
server's cache scope (``private`` unless set; its ``ttlMs`` is 30 s). Every tool and the
resource count their calls, so a test sees whether an answer was computed or cached.
Served over HTTP when ``MCPSERVE_TEST_HTTP_PORT`` is set, else over stdio; every process
serves both eras.
"""

from __future__ import annotations

import logging
import os
import sys
from collections import Counter
from typing import Any

from _serve import serve

from mcpserve import CachePolicy, Context, Server
from mcpserve.middleware import (
    RateLimit,
    ResponseCache,
    ResponseSizeLimit,
    StructuredLogging,
    Timing,
)

scope: Any = os.environ.get("MCPSERVE_TEST_CACHE_SCOPE", "private")
server = Server("middleware", cache=CachePolicy(ttl_ms=30_000, scope=scope))
calls: Counter[str] = Counter()


@server.tool(annotations={"readOnlyHint": True})
def lookup(key: str) -> str:
    """A read-only lookup: the key, and how many times this process computed it."""
    calls[f"lookup {key}"] += 1
    return f"{key} #{calls[f'lookup {key}']}"


@server.tool
def record(key: str) -> str:
    """Not read-only: never cached."""
    calls[f"record {key}"] += 1
    return f"{key} #{calls[f'record {key}']}"


@server.tool(annotations={"readOnlyHint": True})
def fail() -> str:
    """A read-only tool that fails: a tool error, never cached."""
    from mcpserve import ToolError

    calls["fail"] += 1
    raise ToolError(f"failed #{calls['fail']}")


@server.tool
async def touch(uri: str) -> str:
    """Tell everyone that ``uri`` changed."""
    await server.notify_resource_updated(uri)
    return "touched"


@server.tool
def grow(name: str) -> str:
    """Add a tool: the tool list changes."""
    server.add_tool(lambda: name, name=name)
    return f"grew {name}"


@server.tool
def sized(size: int) -> str:
    """A text of ``size`` letters."""
    return "x" * size


@server.resource("doc://counter", mime_type="text/plain")
def counter() -> str:
    """How many times this process read it."""
    calls["counter"] += 1
    return f"read #{calls['counter']}"


@server.prompt
def greet(name: str) -> str:
    """A greeting, counted."""
    calls["greet"] += 1
    return f"Hello {name} #{calls['greet']}"


@server.tool
def whoami(ctx: Context) -> str:
    """The caller's principal."""
    return str(ctx.principal)


def middleware(name: str) -> Any:
    if name == "rate":
        return RateLimit(rate=0.2, burst=2)
    if name == "rate-client":
        return RateLimit(rate=0.2, burst=2, key="client")
    if name == "cache":
        return ResponseCache(ttl=60)
    if name == "logging":
        return StructuredLogging()
    if name == "timing":
        return Timing()
    if name == "size":
        return ResponseSizeLimit(max_bytes=200)
    raise SystemExit(f"unknown middleware {name!r}")


for chosen in filter(None, os.environ.get("MCPSERVE_TEST_MIDDLEWARE", "").split(",")):
    server.middleware(middleware(chosen))


if __name__ == "__main__":
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr, format="%(name)s %(message)s")
    logging.getLogger("mcpserve.requests").setLevel(logging.INFO)
    serve(server)
