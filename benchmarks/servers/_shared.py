"""What every benchmark server offers, so that the four implementations stay equivalent.

Each server exposes exactly 50 tools: the four scenario tools (``echo``, ``place_order``,
``progress``, ``greet``) and 46 filler tools ``tool_04`` ... ``tool_49``; one 1 MiB text
resource; and runs over stdio or Streamable HTTP under one uvicorn worker configured
identically for everyone (``serve_http``).

Standard library only (plus uvicorn, imported lazily): each framework runs in its own venv.
"""

from __future__ import annotations

import os
import sys
from typing import Any

ECHO_TEXT = "hello world"
BIG_URI = "bench://big"
BIG_SIZE = 1024 * 1024
BIG_TEXT = ("The quick brown fox jumps over the lazy dog. 0123456789\n" * 20000)[:BIG_SIZE]
TOOL_COUNT = 50
SCENARIO_TOOLS = ("echo", "place_order", "progress", "greet")
FILLER_NAMES = [f"tool_{i:02d}" for i in range(len(SCENARIO_TOOLS), TOOL_COUNT)]
PROGRESS_STEPS = 10
GREET_QUESTION = "What is your name?"

#: uvicorn settings shared by every HTTP server (one worker, no access log, no proxy
#: headers).
UVICORN_HTTP = os.environ.get("BENCH_UVICORN_HTTP", "httptools")
UVICORN_LOOP = os.environ.get("BENCH_UVICORN_LOOP", "uvloop")


def filler_description(name: str) -> str:
    return f"Filler tool {name}: joins a number and a label."


def filler_result(name: str, a: int, b: str) -> str:
    return f"{name}:{a}:{b}"


def receipt_of(order: dict[str, Any]) -> dict[str, Any]:
    """The structured result of ``place_order`` for an order dict."""
    return {
        "sku": order["sku"],
        "quantity": order["quantity"],
        "total": round(order["quantity"] * order["unit_price"], 2),
        "tags": list(order.get("tags", [])),
    }


def greeting(name: str) -> str:
    return f"Hello, {name}!"


def serve_http(app: Any, port: int) -> None:
    """Serve an ASGI app on 127.0.0.1 with the one uvicorn configuration all servers share."""
    import uvicorn

    uvicorn.run(
        app,
        host="127.0.0.1",
        port=port,
        http=UVICORN_HTTP,
        loop=UVICORN_LOOP,
        lifespan="on",
        log_level="warning",
        access_log=False,
        # What server.run("http") does by default: no rewriting of client addresses from
        # X-Forwarded-* (none of the servers reads them). The same for every framework.
        proxy_headers=False,
        workers=None,
    )


def parse_cli(argv: list[str] | None = None) -> tuple[str, int, bool]:
    """``stdio`` | ``http PORT [--sse]`` -> (transport, port, sse)."""
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] not in ("stdio", "http"):
        raise SystemExit("usage: APP.py stdio | APP.py http PORT [--sse]")
    if args[0] == "stdio":
        return "stdio", 0, False
    return "http", int(args[1]), "--sse" in args[2:]
