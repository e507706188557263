"""A server for the health and drain wire tests (``tests/transports/test_health.py``,
``test_drain.py``), served by ``server.run("http")`` on 127.0.0.1:``--port``.

``server.run`` reads ``MCPSERVE_DRAIN_SECONDS`` itself (and ``MCPSERVE_REDIS_URL`` and
``MCPSERVE_TASK_STORE`` through ``Server``); ``--shutdown-grace S`` is passed on. ``--auth``
protects the endpoint with ``auth=``, a verifier that accepts no token at all, so a probe
answered 200 was answered without one. ``--health-path P`` and ``--ready-path P`` move the
probes (``-`` turns one off). ``mcpserve run drain_app.py`` serves :data:`server` (no auth).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import time
from typing import Any

from mcpserve import Context, Server
from mcpserve.auth import ResourceServer
from mcpserve.auth.tokens import AccessToken, InvalidToken


class NoTokenIsValid:
    async def verify(self, token: str) -> AccessToken:
        raise InvalidToken("no token is valid here")


def build(auth: bool) -> Server:
    protected = (
        ResourceServer(
            NoTokenIsValid(),
            resource="http://127.0.0.1/mcp",
            authorization_servers=["https://issuer.invalid"],
        )
        if auth
        else None
    )
    server = Server("drain", version="1.0.0", auth=protected, blocking_warning_seconds=None)

    @server.tool
    async def slow(seconds: float) -> str:
        """Sleep ``seconds``, then answer with this process's id."""
        await asyncio.sleep(seconds)
        return f"slept {seconds} in {os.getpid()}"

    @server.tool
    async def announce_then_sleep(seconds: float, ctx: Context) -> str:
        """Send a notification (the answer becomes an SSE stream), then sleep ``seconds``."""
        await ctx.notify("test/sleeping", {"seconds": seconds})
        await asyncio.sleep(seconds)
        return "woke up"

    @server.tool(task="optional")
    async def long_job(seconds: float) -> str:
        """A task that sleeps ``seconds`` (its store: ``MCPSERVE_TASK_STORE``)."""
        await asyncio.sleep(seconds)
        return f"done after {seconds}"

    @server.tool
    def whoami() -> str:
        """This process's id."""
        return str(os.getpid())

    @server.tool
    def hold(seconds: float) -> str:
        """Hold this process's event loop ``seconds`` (a call sent meanwhile to a server of
        several workers goes to another), then answer with its id."""
        time.sleep(seconds)
        return str(os.getpid())

    return server


#: What ``mcpserve run drain_app.py`` serves (``--workers``): no auth.
server = build(auth=False)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--shutdown-grace", type=float)
    parser.add_argument("--auth", action="store_true")
    parser.add_argument("--health-path", default="/healthz")
    parser.add_argument("--ready-path", default="/readyz")
    args = parser.parse_args()
    options: dict[str, Any] = {
        "health_path": None if args.health_path == "-" else args.health_path,
        "ready_path": None if args.ready_path == "-" else args.ready_path,
    }
    if args.shutdown_grace is not None:
        options["shutdown_grace"] = args.shutdown_grace
    build(args.auth).run("http", port=args.port, log_level="info", **options)


if __name__ == "__main__":
    main()
