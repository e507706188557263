"""``mcpserve.redis.errors``: a real ``redis-server`` stopped under a server that uses it, and
each failed Redis command counted by the part of mcpserve that sent it (the shared
handshake-era sessions, the subscription bus)."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader

from legacy_schema import initialize_message
from mcpserve import Server
from metric_points import values
from redis_server import RedisServer
from wire_helpers import TIMEOUT, asgi_client, post, request

pytestmark = pytest.mark.redis

HANDSHAKE = "2025-11-25"
LEGACY_HEADERS = {
    "content-type": "application/json",
    "accept": "application/json, text/event-stream",
}


def errors(reader: InMemoryMetricReader) -> dict[str, Any]:
    """Redis errors counted so far, by component."""
    counted = values(reader, "mcpserve.redis.errors")
    return {attrs["mcpserve.component"]: value for attrs, value in counted}


def shared_server(redis: RedisServer, reader: InMemoryMetricReader) -> Server:
    server = Server(
        "redis-measured", redis_url=redis.url, metrics=MeterProvider(metric_readers=[reader])
    )

    @server.tool
    def add(a: int, b: int) -> int:
        return a + b

    return server


async def test_a_redis_outage_under_shared_sessions_is_counted(own_redis: RedisServer) -> None:
    reader = InMemoryMetricReader()
    server = shared_server(own_redis, reader)
    async with server.running(), asgi_client(server.http_app()) as http:
        started = await http.post("/mcp", json=initialize_message(), headers=LEGACY_HEADERS)
        assert started.status_code == 200, started.text
        headers = {**LEGACY_HEADERS, "mcp-session-id": started.headers["mcp-session-id"],
                   "mcp-protocol-version": HANDSHAKE}  # fmt: skip
        message = {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                   "params": {"name": "add", "arguments": {"a": 1, "b": 2}}}  # fmt: skip
        assert (await http.post("/mcp", json=message, headers=headers)).status_code == 200
        assert "Shared sessions" not in errors(reader)
        own_redis.stop()
        refused = await http.post("/mcp", json={**message, "id": 3}, headers=headers)
        assert refused.status_code == 503, refused.text
        first = errors(reader).get("Shared sessions", 0)
        assert first >= 1
        await http.post("/mcp", json={**message, "id": 4}, headers=headers)
        assert errors(reader)["Shared sessions"] > first  # each failed command counts


async def test_a_redis_outage_under_the_subscription_bus_counts_once_and_each_failed_publish(
    own_redis: RedisServer,
) -> None:
    reader = InMemoryMetricReader()
    server = shared_server(own_redis, reader)
    async with server.running(), asgi_client(server.http_app()) as http:
        # Answering once decides where the server's metrics go.
        assert (await post(http, request(1, "tools/list"))).status == 200
        assert "Subscription bus" not in errors(reader)
        own_redis.stop()
        deadline = time.monotonic() + TIMEOUT
        while "Subscription bus" not in errors(reader):  # the reader lost its connection
            assert time.monotonic() < deadline, f"the bus's outage not counted: {errors(reader)}"
            await asyncio.sleep(0.02)
        await asyncio.sleep(0.5)  # the reader retries meanwhile: the outage counts once
        assert errors(reader)["Subscription bus"] == 1
        await server.notify_resource_updated("file:///shared/doc.txt")  # cannot reach Redis
        assert errors(reader)["Subscription bus"] == 2
