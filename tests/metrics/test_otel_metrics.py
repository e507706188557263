"""OpenTelemetry metrics: every request a data point of ``mcp.server.operation.duration``
with the attributes the MCP semantic conventions name, read back through the SDK's
in-memory reader, in both eras, in process (ASGI) and over a real socket."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx2
import pytest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader

from http_serving import serve_asgi
from legacy_schema import initialize_message
from mcpserve import Server
from mcpserve.middleware import RateLimit
from metric_points import points
from servers.add_refuse import add_and_refuse
from wire_helpers import asgi_client, call, default_headers, encode, post, request

MODERN = "2026-07-28"
HANDSHAKE = "2025-11-25"
LEGACY_HEADERS = {
    "content-type": "application/json",
    "accept": "application/json, text/event-stream",
}


@pytest.fixture
def reader() -> InMemoryMetricReader:
    return InMemoryMetricReader()


def measured_server(reader: InMemoryMetricReader, **options: Any) -> Server:
    return add_and_refuse("measured", metrics=MeterProvider(metric_readers=[reader]), **options)


def durations(reader: InMemoryMetricReader) -> list[tuple[dict[str, Any], int]]:
    return [(attrs, p.count) for attrs, p in points(reader, "mcp.server.operation.duration")]


async def test_each_operation_is_a_data_point_with_the_conventions_attributes(
    reader: InMemoryMetricReader,
) -> None:
    server = measured_server(reader)
    async with asgi_client(server.http_app()) as http:
        assert (await post(http, call(1, "add", {"a": 1, "b": 2}))).result["structuredContent"] == 3
        assert (await post(http, call(2, "refuse", {}))).result["isError"] is True
        assert (await post(http, call(3, "missing", {}))).error["code"] == -32602
        await post(http, request(4, "tools/list"))
    assert durations(reader) == [
        ({"mcp.method.name": "tools/call", "error.type": "-32602",
          "mcp.protocol.version": MODERN}, 1),
        ({"mcp.method.name": "tools/call", "gen_ai.tool.name": "refuse",
          "error.type": "tool_error", "mcp.protocol.version": MODERN}, 1),
        ({"mcp.method.name": "tools/call", "gen_ai.tool.name": "add",
          "mcp.protocol.version": MODERN}, 1),
        ({"mcp.method.name": "tools/list", "mcp.protocol.version": MODERN}, 1),
    ]  # fmt: skip
    (_, add), *_ = [pair for pair in points(reader, "mcp.server.operation.duration")
                    if pair[0].get("gen_ai.tool.name") == "add"]  # fmt: skip
    assert 0 < add.sum < 5  # seconds, not milliseconds


async def test_handshake_era_operations_and_the_sessions_duration(
    reader: InMemoryMetricReader,
) -> None:
    server = measured_server(reader)
    async with asgi_client(server.http_app()) as http:
        started = await http.post("/mcp", json=initialize_message(), headers=LEGACY_HEADERS)
        session = started.headers["mcp-session-id"]
        headers = {**LEGACY_HEADERS, "mcp-session-id": session,
                   "mcp-protocol-version": HANDSHAKE}  # fmt: skip
        message = {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                   "params": {"name": "add", "arguments": {"a": 2, "b": 2}}}  # fmt: skip
        assert (await http.post("/mcp", json=message, headers=headers)).status_code == 200
        sessions = [(a, p.value) for a, p in points(reader, "mcpserve.sessions.active")]
        assert sessions == [({"mcp.protocol.version": HANDSHAKE}, 1)]
        assert points(reader, "mcp.server.session.duration") == []  # not over yet
        assert (await http.delete("/mcp", headers=headers)).status_code == 200
    assert durations(reader) == [
        ({"mcp.method.name": "tools/call", "gen_ai.tool.name": "add",
          "mcp.protocol.version": HANDSHAKE}, 1),
    ]  # fmt: skip
    ended = [(a, p.count) for a, p in points(reader, "mcp.server.session.duration")]
    assert ended == [({"mcp.protocol.version": HANDSHAKE}, 1)]
    sessions = [(a, p.value) for a, p in points(reader, "mcpserve.sessions.active")]
    assert sessions == [({"mcp.protocol.version": HANDSHAKE}, 0)]


async def test_a_request_is_in_flight_until_it_is_answered(reader: InMemoryMetricReader) -> None:
    server = measured_server(reader)
    entered, release = asyncio.Event(), asyncio.Event()

    @server.tool
    async def wait() -> str:
        entered.set()
        await release.wait()
        return "done"

    def in_flight() -> list[tuple[dict[str, Any], Any]]:
        return [(a, p.value) for a, p in points(reader, "mcpserve.requests.in_flight")]

    async with asgi_client(server.http_app()) as http:
        pending = asyncio.create_task(post(http, call(1, "wait", {})))
        await asyncio.wait_for(entered.wait(), 5)
        assert in_flight() == [({"mcp.method.name": "tools/call"}, 1)]
        release.set()
        assert (await asyncio.wait_for(pending, 5)).result["content"][0]["text"] == "done"
    assert in_flight() == [({"mcp.method.name": "tools/call"}, 0)]


def test_operations_over_a_real_socket_are_measured(reader: InMemoryMetricReader) -> None:
    server = measured_server(reader)
    message = call(1, "add", {"a": 20, "b": 22})
    with serve_asgi(server.http_app()) as url, httpx2.Client(timeout=10) as http:
        response = http.post(
            f"{url}/mcp", content=encode(message), headers=default_headers(message)
        )
    assert response.json()["result"]["structuredContent"] == 42
    assert durations(reader) == [
        ({"mcp.method.name": "tools/call", "gen_ai.tool.name": "add",
          "mcp.protocol.version": MODERN}, 1),
    ]  # fmt: skip


async def test_rate_limit_refusals_are_counted_by_method(reader: InMemoryMetricReader) -> None:
    server = measured_server(reader)
    server.middleware(RateLimit(rate=0.001, burst=1))
    async with asgi_client(server.http_app()) as http:
        assert (await post(http, call(1, "add", {"a": 1, "b": 1}))).result["structuredContent"] == 2
        assert (await post(http, call(2, "add", {"a": 1, "b": 1}))).error["code"] == -32029
    refusals = [(a, p.value) for a, p in points(reader, "mcpserve.rate_limit.refusals")]
    assert refusals == [({"mcp.method.name": "tools/call"}, 1)]
    assert [pair[0].get("error.type") for pair in durations(reader)] == ["-32029", None]


async def test_a_server_with_metrics_off_records_nothing(reader: InMemoryMetricReader) -> None:
    server = Server("quiet", metrics=False)

    @server.tool
    def add(a: int, b: int) -> int:
        return a + b

    async with asgi_client(server.http_app()) as http:
        await post(http, call(1, "add", {"a": 1, "b": 1}))
        assert (await http.get("/metrics")).status_code == 404
    assert server.runtime.metrics is None
