"""Where the library middleware keeps its state: ``store=`` as a URL or an object, else
the server's shared Redis, else memory; a store it opened closes with the server."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from mcpserve import Server
from mcpserve.backends.keyvalue import MemoryKeyValue
from mcpserve.backends.redis.keyvalue import RedisKeyValue
from mcpserve.backends.sqlite.keyvalue import SQLiteKeyValue
from mcpserve.middleware import RateLimit
from mcpserve.middleware.stores import MiddlewareStore
from mcpserve.protocol.core import Auth
from redis_server import RedisServer

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
