"""The series besides the operation duration, each recorded where its thing happens: open
``subscriptions/listen`` streams over HTTP, tasks by status, and the operation duration over
stdio in both eras; read back through the SDK's in-memory reader."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import httpx2
import pytest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader

from four_wires import HANDSHAKE_VERSION, wire
from http_serving import serve_asgi_here
from listens import open_stream
from mcpserve import Server
from metric_points import points, values
from servers import tasks as task_app
from wire_helpers import META, TIMEOUT, Reply, asgi_client, post

MODERN = "2026-07-28"
TASKS_EXTENSION = "io.modelcontextprotocol/tasks"


@pytest.fixture
def reader() -> InMemoryMetricReader:
    return InMemoryMetricReader()


async def until(condition: Any, what: str) -> None:
    """Wait (bounded) until ``condition()`` is true."""
    deadline = time.monotonic() + TIMEOUT
    while not condition():
        assert time.monotonic() < deadline, f"not within {TIMEOUT} s: {what}"
        await asyncio.sleep(0.01)


async def test_an_open_listen_stream_is_counted_until_its_client_closes_it(
    reader: InMemoryMetricReader,
) -> None:
    server = Server("listened", metrics=MeterProvider(metric_readers=[reader]))

    def streams() -> list[tuple[dict[str, Any], Any]]:
        return values(reader, "mcpserve.listen.streams")

    async with (
        serve_asgi_here(server.http_app()) as base,
        httpx2.AsyncClient(base_url=base, timeout=TIMEOUT) as http,
    ):
        async with open_stream(http, "counted", {"toolsListChanged": True}) as stream:
            await stream.ack()
            assert streams() == [({}, 1)]
        # The client closed its connection: the server ends the listen, and stops counting it.
        await until(lambda: streams() == [({}, 0)], "the closed stream uncounted")


def task_call(request_id: int, method: str, params: dict[str, Any]) -> dict[str, Any]:
    """A 2026-07-28 request from a client that declares the tasks extension."""
    meta = {**META, "io.modelcontextprotocol/clientCapabilities": {
        "extensions": {TASKS_EXTENSION: {}}}}  # fmt: skip
    return {"jsonrpc": "2.0", "id": request_id, "method": method,
            "params": {**params, "_meta": meta}}  # fmt: skip


async def test_tasks_are_counted_by_status_as_they_move(reader: InMemoryMetricReader) -> None:
    task_app.GATES.clear()
    server = task_app.build(metrics=MeterProvider(metric_readers=[reader]))
    ids = iter(range(1, 1000))

    async def send(method: str, params: dict[str, Any]) -> Reply:
        reply = await post(http, task_call(next(ids), method, params))
        assert reply.status == 200, reply
        return reply

    async def start(tool: str, arguments: dict[str, Any]) -> str:
        created = (await send("tools/call", {"name": tool, "arguments": arguments})).result
        assert created["resultType"] == "task", created
        task_id: str = created["taskId"]
        return task_id

    async def reaches(task_id: str, status: str) -> None:
        deadline = time.monotonic() + TIMEOUT
        while (await send("tasks/get", {"taskId": task_id})).result["status"] != status:
            assert time.monotonic() < deadline, f"task {task_id} never became {status}"
            await asyncio.sleep(0.005)

    def by_status() -> dict[str, Any]:
        return {attrs["mcp.task.status"]: value
                for attrs, value in values(reader, "mcpserve.tasks")}  # fmt: skip

    async with server.running(), asgi_client(server.http_app()) as http:
        held = await start("gated", {"tag": "held"})
        await reaches(held, "working")
        assert by_status() == {"working": 1}
        task_app.GATES["held"].set()
        await reaches(held, "completed")
        assert by_status() == {"working": 0, "completed": 1}

        crashed = await start("protocol_error", {})
        await reaches(crashed, "failed")
        assert by_status() == {"working": 0, "completed": 1, "failed": 1}

        stopped = await start("gated", {"tag": "never"})
        await reaches(stopped, "working")
        assert by_status() == {"working": 1, "completed": 1, "failed": 1}
        await send("tasks/cancel", {"taskId": stopped})
        await reaches(stopped, "cancelled")
    assert by_status() == {"working": 0, "completed": 1, "failed": 1, "cancelled": 1}


@pytest.mark.parametrize(
    ("kind", "version"), [("stdio-modern", MODERN), ("stdio-handshake", HANDSHAKE_VERSION)]
)
async def test_operations_over_stdio_are_measured_with_their_era(
    reader: InMemoryMetricReader, kind: str, version: str
) -> None:
    server = Server("over-stdio", metrics=MeterProvider(metric_readers=[reader]))

    @server.tool
    def add(a: int, b: int) -> int:
        return a + b

    async with wire(kind, server) as stdio:
        assert (await stdio.call("add", {"a": 2, "b": 3}))["content"][0]["text"] == "5"
        assert (await stdio.answer("missing", {}))["error"]["code"] == -32602
    measured = [(attrs, point.count)
                for attrs, point in points(reader, "mcp.server.operation.duration")]  # fmt: skip
    assert measured == [
        ({"mcp.method.name": "tools/call", "error.type": "-32602",
          "mcp.protocol.version": version}, 1),
        ({"mcp.method.name": "tools/call", "gen_ai.tool.name": "add",
          "mcp.protocol.version": version}, 1),
    ]  # fmt: skip


async def test_a_handshake_session_over_stdio_is_counted_then_timed(
    reader: InMemoryMetricReader,
) -> None:
    server = Server("session-over-stdio", metrics=MeterProvider(metric_readers=[reader]))

    @server.tool
    def add(a: int, b: int) -> int:
        return a + b

    async with wire("stdio-handshake", server) as stdio:
        await stdio.call("add", {"a": 1, "b": 1})
        assert values(reader, "mcpserve.sessions.active") == [
            ({"mcp.protocol.version": HANDSHAKE_VERSION}, 1)
        ]
        assert points(reader, "mcp.server.session.duration") == []
    # stdin closed: the session is over, and timed.
    assert values(reader, "mcpserve.sessions.active") == [
        ({"mcp.protocol.version": HANDSHAKE_VERSION}, 0)
    ]
    ended = [(attrs, point.count) for attrs, point in points(reader, "mcp.server.session.duration")]
    assert ended == [({"mcp.protocol.version": HANDSHAKE_VERSION}, 1)]
