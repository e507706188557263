"""Dependencies on the wire: stdio and Streamable HTTP, the 2026-07-28 wire and the
handshake era, against ``tests/support/servers/dependencies.py`` in a subprocess.

Each transport answers ``lookup`` before the teardown of its dependency has run (the
teardown waits for the test's release, then leaves a mark), hides the dependency from the
published schema, and answers ``broken`` with an error that names the failing dependency
and nothing of its exception.
"""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest

from legacy_schema import (
    LegacyHTTPClient,
    initialize_message,
    legacy_call,
    legacy_request,
    legacy_stdio,
    notification,
)
from wire_helpers import (
    SERVERS,
    TIMEOUT,
    HTTPServerProcess,
    call,
    http_server_process,
    post,
    request,
    stdio_server,
    wait_for_file,
)

pytestmark = pytest.mark.subprocess

SERVER = SERVERS / "dependencies.py"
#: Sends one message and returns the response to it.
Exchange = Callable[[dict[str, Any]], Awaitable[dict[str, Any]]]


async def answers_before_the_teardown(exchange: Exchange, make_call: Any, marks: Path) -> None:
    response = await exchange(make_call(7, "lookup", {"key": "k"}))
    assert response["result"]["content"] == [{"type": "text", "text": "value of k"}]
    assert not (marks / "closed-7").exists()  # the response came first
    (marks / "release-7").write_text("go")
    assert await wait_for_file(marks / "closed-7") == "closed"


async def names_the_failing_dependency(exchange: Exchange, make_call: Any) -> None:
    response = await exchange(make_call(8, "broken", {}))
    error = response["error"]
    assert error["code"] == -32603
    assert error["message"].startswith("Dependency unreachable failed (ref ")
    assert "6379" not in str(response)


async def hides_the_dependency(exchange: Exchange, make_request: Any) -> None:
    response = await exchange(make_request(9, "tools/list"))
    lookup = next(t for t in response["result"]["tools"] if t["name"] == "lookup")
    assert list(lookup["inputSchema"]["properties"]) == ["key"]


# -- stdio ------------------------------------------------------------------------------------


async def test_stdio_on_the_2026_wire(tmp_path: Path) -> None:
    env = {"MCPSERVE_TEST_MARKER_DIR": str(tmp_path)}
    async with stdio_server([sys.executable, str(SERVER)], env=env) as proc:

        async def exchange(message: dict[str, Any]) -> dict[str, Any]:
            await proc.send(message)
            response, _ = await proc.read_until(message["id"])
            return response

        await answers_before_the_teardown(exchange, call, tmp_path)
        await names_the_failing_dependency(exchange, call)
        await hides_the_dependency(exchange, request)


async def test_stdio_tears_down_a_cancelled_requests_dependency_at_once(tmp_path: Path) -> None:
    env = {"MCPSERVE_TEST_MARKER_DIR": str(tmp_path)}
    async with stdio_server([sys.executable, str(SERVER)], env=env) as proc:
        await proc.send(call(11, "hang", {}))
        await wait_for_file(tmp_path / "started-11")
        cancel = {"requestId": 11, "reason": "changed my mind"}
        await proc.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": cancel})
        assert await wait_for_file(tmp_path / "ended-11") == "CancelledError"


async def test_stdio_in_the_handshake_era(tmp_path: Path) -> None:
    env = {"MCPSERVE_TEST_MARKER_DIR": str(tmp_path)}
    async with legacy_stdio([sys.executable, str(SERVER)], env=env) as proc:

        async def exchange(message: dict[str, Any]) -> dict[str, Any]:
            await proc.send(message)
            response, _ = await proc.read_until(message["id"])
            return response

        hello = await exchange(initialize_message(0))
        assert hello["result"]["protocolVersion"] == "2025-11-25"
        await proc.send(notification("notifications/initialized"))
        await answers_before_the_teardown(exchange, legacy_call, tmp_path)
        await names_the_failing_dependency(exchange, legacy_call)
        await hides_the_dependency(exchange, legacy_request)


# -- Streamable HTTP ----------------------------------------------------------------------------


@pytest.fixture
def served(tmp_path: Path) -> Iterator[HTTPServerProcess]:
    with http_server_process(tmp_path, args=[sys.executable, str(SERVER)]) as server:
        yield server


@pytest.fixture
async def http(served: HTTPServerProcess) -> AsyncIterator[httpx2.AsyncClient]:
    base = f"http://127.0.0.1:{served.port}"
    async with httpx2.AsyncClient(base_url=base, timeout=TIMEOUT) as client:
        yield client


async def test_http_on_the_2026_wire(served: HTTPServerProcess, http: httpx2.AsyncClient) -> None:
    async def exchange(message: dict[str, Any]) -> dict[str, Any]:
        reply = await post(http, message)
        return reply.message

    await answers_before_the_teardown(exchange, call, served.marker_dir)
    await names_the_failing_dependency(exchange, call)
    await hides_the_dependency(exchange, request)


async def test_http_in_the_handshake_era(
    served: HTTPServerProcess, http: httpx2.AsyncClient
) -> None:
    client = LegacyHTTPClient.over_httpx(http)
    try:
        await client.initialize()

        async def exchange(message: dict[str, Any]) -> dict[str, Any]:
            reply = await client.post(message)
            response: dict[str, Any] = reply.message
            return response

        await answers_before_the_teardown(exchange, legacy_call, served.marker_dir)
        await names_the_failing_dependency(exchange, legacy_call)
        await hides_the_dependency(exchange, legacy_request)
    finally:
        await client.close()
