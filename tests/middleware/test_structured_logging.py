"""``StructuredLogging`` and ``Timing``: one JSON line per request on ``mcpserve.requests``,
and the duration on each result's ``_meta``; on every wire, then in process for what the
line leaves out unless asked."""

from __future__ import annotations

import asyncio
import json
import logging
import time
from pathlib import Path
from typing import Any

import pytest

from mcpserve import Server, ToolError
from mcpserve.middleware import StructuredLogging, Timing
from middleware_peers import WIRES, Peer, serving
from wire_helpers import TIMEOUT

pytestmark = pytest.mark.subprocess

TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"


async def lines(peer: Peer, count: int) -> list[dict[str, Any]]:
    """The first ``count`` request lines the server logged (bounded wait)."""
    deadline = time.monotonic() + TIMEOUT
    while True:
        logged = [
            json.loads(line.removeprefix("mcpserve.requests "))
            for line in peer.log().splitlines()
            if line.startswith("mcpserve.requests ")
        ]
        if len(logged) >= count or time.monotonic() > deadline:
            return logged
        await asyncio.sleep(0.02)


@pytest.mark.parametrize(("transport", "era"), WIRES)
async def test_each_request_is_one_json_line_with_its_outcome(
    transport: str, era: str, tmp_path: Path
) -> None:
    async with serving(transport, tmp_path, MCPSERVE_TEST_MIDDLEWARE="logging") as open_peer:
        peer = await open_peer(era)
        await peer.ask(
            "tools/call",
            {"name": "lookup", "arguments": {"key": "secret-argument"}},
            traceparent=f"00-{TRACE}-00f067aa0ba902b7-01",
        )
        await peer.call("fail")
        await peer.ask("prompts/get", {"name": "nope"})
        await peer.notify("notifications/cancelled", {"requestId": 99})
        await peer.ask("resources/read", {"uri": "doc://counter"})
        logged = await lines(peer, 4)
    requests = [line for line in logged if line["method"] != "initialize"]
    assert [(r["method"], r["target"], r["outcome"]) for r in requests] == [
        ("tools/call", "lookup", "ok"),
        ("tools/call", "fail", "tool_error"),
        ("prompts/get", "nope", "error"),
        ("resources/read", "doc://counter", "ok"),
    ]
    expected_era = "2026-07-28" if era == "2026-07-28" else "handshake"
    for line in requests:
        assert set(line) >= {"request_id", "trace_id", "principal", "era", "duration_ms"}
        assert line["era"] == expected_era
        assert line["principal"] is None
        assert isinstance(line["duration_ms"], float)
        assert line["duration_ms"] >= 0
    assert requests[2]["error_code"] == -32602
    assert requests[0]["trace_id"] == TRACE
    assert requests[1]["trace_id"] is None
    assert "secret-argument" not in json.dumps(logged)  # arguments only when asked
    assert "lookup #" not in json.dumps(logged)  # nor results


@pytest.mark.parametrize(("transport", "era"), WIRES)
async def test_timing_puts_the_duration_in_the_results_meta(
    transport: str, era: str, tmp_path: Path
) -> None:
    async with serving(transport, tmp_path, MCPSERVE_TEST_MIDDLEWARE="timing") as open_peer:
        peer = await open_peer(era)
        for answer in (
            await peer.call("lookup", key="t"),
            await peer.ask("tools/list"),
            await peer.ask("resources/read", {"uri": "doc://counter"}),
        ):
            duration = answer.result["_meta"]["mcpserve/durationMs"]
            assert isinstance(duration, float)
            assert 0 <= duration < TIMEOUT * 1000


# --------------------------------------------------------------------------- in process


async def test_arguments_and_results_are_logged_when_asked(
    connect: Any, caplog: pytest.LogCaptureFixture
) -> None:
    server = Server("logged")

    @server.tool
    def echo(text: str) -> str:
        return text

    @server.tool
    def broken() -> str:
        raise ToolError("no")

    server.middleware(StructuredLogging(arguments=True, results=True))
    with caplog.at_level(logging.INFO, logger="mcpserve.requests"):
        async with connect(server) as client:
            await client.call_tool("echo", {"text": "hi"})
    [line] = [json.loads(r.getMessage()) for r in caplog.records if r.name == "mcpserve.requests"]
    assert line["arguments"] == {"text": "hi"}
    assert line["result"]["content"] == [{"type": "text", "text": "hi"}]


async def test_a_logger_given_is_used_and_nothing_is_logged_below_info(
    connect: Any, caplog: pytest.LogCaptureFixture
) -> None:
    server = Server("logged")

    @server.tool
    def echo(text: str) -> str:
        return text

    mine = logging.getLogger("my.requests")
    server.middleware(StructuredLogging(mine))
    with caplog.at_level(logging.WARNING, logger="my.requests"):
        async with connect(server) as client:
            await client.call_tool("echo", {"text": "hi"})
    assert [r for r in caplog.records if r.name == "my.requests"] == []
    with caplog.at_level(logging.INFO, logger="my.requests"):
        async with connect(server) as client:
            await client.call_tool("echo", {"text": "hi"})
    [record] = [r for r in caplog.records if r.name == "my.requests"]
    assert json.loads(record.getMessage())["method"] == "tools/call"


async def test_timing_through_the_in_memory_client(connect: Any) -> None:
    server = Server("timed")

    @server.tool
    def work() -> str:
        return "done"

    server.middleware(Timing())
    async with connect(server) as client:
        result = await client.call_tool("work", {})
        assert result["_meta"]["mcpserve/durationMs"] >= 0
