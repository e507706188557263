"""One ``mcpserve.middleware`` object in front of the echo tool, served the way the README
says: ``server.run("http", host="127.0.0.1", port=P)`` and nothing else.

``benchmarks/middleware.py --http`` starts one of these per configuration. The tool is the
suite's ``echo(text: str) -> str``, annotated read-only so that ``ResponseCache`` keeps its
answers (wrk sends one request over and over: after the first, every call is a hit).
Configured by the environment:

* ``BENCH_MIDDLEWARE``: ``none``, ``passthrough`` (a function that calls the next one: the
  chain itself), ``rate-limit``, ``cache``, ``logging``, ``timing`` or ``size-limit``;
* ``BENCH_MIDDLEWARE_STORE``: the store of ``RateLimit`` and ``ResponseCache`` (a URL;
  default ``memory://``).

``StructuredLogging`` writes its line per request through a handler at INFO to
``/dev/null``: the record and its JSON are made as they would be for a real log file.
"""

from __future__ import annotations

import logging
import os
from typing import Any

from _shared import parse_cli

from mcpserve import CachePolicy, CallNext, Context, Server
from mcpserve.middleware import (
    RateLimit,
    ResponseCache,
    ResponseSizeLimit,
    StructuredLogging,
    Timing,
)

MODES = ("none", "passthrough", "rate-limit", "cache", "logging", "timing", "size-limit")


async def passthrough(ctx: Context, call_next: CallNext) -> dict[str, Any]:
    return await call_next()


def middleware(mode: str, store: str) -> Any:
    """The middleware object ``mode`` names (None for ``none``)."""
    if mode == "none":
        return None
    if mode == "passthrough":
        return passthrough
    if mode == "logging":
        requests = logging.getLogger("bench.requests")
        requests.addHandler(logging.FileHandler(os.devnull))
        requests.setLevel(logging.INFO)
        requests.propagate = False
        return StructuredLogging(requests)
    if mode == "rate-limit":
        return RateLimit(rate=1e9, burst=10**9, store=store)
    if mode == "cache":
        return ResponseCache(ttl=600, store=store)
    if mode == "timing":
        return Timing()
    if mode == "size-limit":
        return ResponseSizeLimit(max_bytes=1_000_000)
    raise SystemExit(f"BENCH_MIDDLEWARE must be one of {', '.join(MODES)}, not {mode!r}")


server = Server("bench", cache=CachePolicy(600_000))


@server.tool(annotations={"readOnlyHint": True})
def echo(text: str) -> str:
    """Echo the text back."""
    return text


if __name__ == "__main__":
    transport, port, _sse = parse_cli()
    if transport != "http":
        raise SystemExit("mcpserve_middleware_app.py serves HTTP only")
    chosen = middleware(
        os.environ.get("BENCH_MIDDLEWARE", "none"),
        os.environ.get("BENCH_MIDDLEWARE_STORE", "memory://"),
    )
    if chosen is not None:
        server.middleware(chosen)
    server.run("http", host="127.0.0.1", port=port)
