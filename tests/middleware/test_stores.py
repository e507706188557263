"""Where the library middleware keeps its state: ``store=`` as a URL or an object, else
the server's shared Redis, else memory; a store it opened closes with the server."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

from mcpserve import Server
from mcpserve.backends.keyvalue import MemoryKeyValue
from mcpserve.backends.redis.keyvalue import RedisKeyValue
from mcpserve.backends.sqlite.keyvalue import SQLiteKeyValue
from mcpserve.middleware import RateLimit, ResponseCache
from mcpserve.middleware.stores import MiddlewareStore
from mcpserve.protocol.core import Auth
from redis_server import RedisServer
from wire_helpers import free_port

META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"},
    "io.modelcontextprotocol/clientCapabilities": {},
}


def limited(name: str, limit: RateLimit) -> Server:
    server = Server(name)

    @server.tool
    def work() -> str:
        return "done"

    server.middleware(limit)
    return server


async def work(server: Server) -> Any:
    message = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "work", "arguments": {}, "_meta": META},
    }
    answer = await server.handle(message, auth=Auth("ann"))
    assert answer is not None
    return answer.get("error", {}).get("code", "ok")


async def test_two_servers_on_one_sqlite_file_share_a_callers_bucket(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/limits.db"
    one = limited("shop", RateLimit(rate=0.01, burst=2, store=url))
    two = limited("shop", RateLimit(rate=0.01, burst=2, store=url))
    async with one.running(), two.running():
        assert [await work(one), await work(two), await work(one)] == ["ok", "ok", -32029]


async def test_a_store_opened_from_a_url_closes_when_the_server_stops(tmp_path: Path) -> None:
    limit = RateLimit(rate=1, store=f"sqlite:///{tmp_path}/limits.db")
    server = limited("shop", limit)
    async with server.running():
        await work(server)
        assert isinstance(limit.store, SQLiteKeyValue)
        assert "mcpserve-keyvalue" in store_threads()  # SQLite's own thread, while it serves
    assert "mcpserve-keyvalue" not in store_threads()


def store_threads() -> str:
    return " ".join(thread.name for thread in threading.enumerate())


def test_the_default_is_the_servers_redis_else_memory(redis: RedisServer) -> None:
    with_redis = MiddlewareStore(None, "RateLimit")
    with_redis.added_to(Server("shop", redis_url=redis.url))
    assert isinstance(with_redis.store, RedisKeyValue)
    assert with_redis.store.namespace == "shop"
    alone = MiddlewareStore(None, "RateLimit")
    alone.added_to(Server("shop"))
    assert isinstance(alone.store, MemoryKeyValue)
    given = MemoryKeyValue()
    chosen = MiddlewareStore(given, "RateLimit")
    chosen.added_to(Server("shop", redis_url=redis.url))
    assert chosen.store is given


async def test_a_store_that_cannot_be_reached_lets_requests_through_and_says_so_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    down = f"redis://127.0.0.1:{free_port()}/0"  # nobody listens
    limit = RateLimit(rate=0.01, burst=1, store=down)
    server = limited("shop", limit)
    cache = ResponseCache(ttl=60, store=down)
    server.middleware(cache)

    @server.tool(annotations={"readOnlyHint": True})
    def lookup() -> str:
        return "fresh"

    async with server.running():
        # Past the burst of one, every call is answered: the limit fails open, the cache
        # computes each result, and nothing a client sees tells of the outage.
        assert [await work(server) for _ in range(3)] == ["ok", "ok", "ok"]
        looked_up = [await call(server, "lookup") for _ in range(2)]
    assert looked_up == ["fresh", "fresh"]
    outages = [r.getMessage() for r in caplog.records if "is unavailable" in r.getMessage()]
    # Each store says so once for its outage (the limit's and the cache's), not per call.
    assert len(outages) == 2, outages
    assert "Traceback" not in caplog.text


async def call(server: Server, tool: str) -> Any:
    message = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": tool, "arguments": {}, "_meta": META},
    }
    answer = await server.handle(message, auth=Auth("ann"))
    assert answer is not None
    return answer["result"]["content"][0]["text"]
