"""A server that remembers through ``ctx.store``: what the state tests call, in process and
as a script (``MCPSERVE_TEST_STORE``: the store's URL; HTTP when a port is given)."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path
from typing import Any, Literal

from mcpserve import Context, Server

Scope = Literal["principal", "session", "server"]


def state_server(name: str = "state", **options: Any) -> Server:
    server = Server(name, **options)

    @server.tool
    async def remember(
        ctx: Context, key: str, value: Any, scope: Scope = "principal", ttl: float | None = None
    ) -> str:
        await ctx.store_for(scope).set(key, value, ttl=ttl)
        return "kept"

    @server.tool
    async def recall(ctx: Context, key: str, scope: Scope = "principal") -> dict[str, Any]:
        return {"value": await ctx.store_for(scope).get(key, default="nothing")}

    @server.tool
    async def forget(ctx: Context, key: str) -> str:
        await ctx.store.delete(key)
        return "forgotten"

    @server.tool(timeout=0.3)
    async def slow() -> str:
        await asyncio.sleep(60)
        return "done"

    @server.tool
    def pid() -> int:
        return os.getpid()

    return server


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from _serve import serve

    name = os.environ.get("MCPSERVE_TEST_STATE_NAME", "state")
    serve(state_server(name, store=os.environ.get("MCPSERVE_TEST_STORE") or None))
