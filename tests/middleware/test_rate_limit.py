"""``RateLimit``: a token bucket per caller, refusing with -32029 (HTTP 429, Retry-After),
on every wire, and in process for what the key is and what costs nothing."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest

from mcpserve import CallNext, Context, MCPError, Server
from mcpserve.backends.keyvalue import MemoryKeyValue
from mcpserve.middleware import RateLimit
from middleware_peers import WIRES, serving

pytestmark = pytest.mark.subprocess


@pytest.mark.parametrize(("transport", "era"), WIRES)
async def test_the_request_past_the_burst_is_refused_with_when_to_retry(
    transport: str, era: str, tmp_path: Path
) -> None:
    async with serving(transport, tmp_path, MCPSERVE_TEST_MIDDLEWARE="rate") as open_peer:
        peer = await open_peer(era)
        first, second = await peer.call("record", key="a"), await peer.call("record", key="a")
        assert (first.text, second.text) == ("a #1", "a #2")
        refused = await peer.call("record", key="a")
        error = refused.error
        assert error["code"] == -32029
        wait = error["data"]["retryAfterSeconds"]
        assert 4 < wait <= 5  # a token every 5 s, and the burst is spent
        assert error["message"] == f"Rate limit exceeded: try again in {wait:g} seconds"
        if transport == "http":
            assert refused.status == 429
            assert refused.headers is not None
            assert refused.headers["retry-after"] == str(math.ceil(wait))
            assert refused.headers["content-type"].startswith("application/json")


@pytest.mark.parametrize(("transport", "era"), WIRES)
async def test_notifications_and_the_handshake_cost_nothing(
    transport: str, era: str, tmp_path: Path
) -> None:
    async with serving(transport, tmp_path, MCPSERVE_TEST_MIDDLEWARE="rate") as open_peer:
        peer = await open_peer(era)  # a handshake-era peer has initialized: free
        for _ in range(3):  # notifications: free
            await peer.notify("notifications/cancelled", {"requestId": 99})
        assert (await peer.call("record", key="b")).text == "b #1"
        assert (await peer.call("record", key="b")).text == "b #2"
        assert (await peer.call("record", key="b")).error["code"] == -32029


async def test_over_stdio_each_process_is_its_own_client(tmp_path: Path) -> None:
    async with serving("stdio", tmp_path, MCPSERVE_TEST_MIDDLEWARE="rate") as open_peer:
        one, two = await open_peer("2026-07-28"), await open_peer("2026-07-28")
        for _ in range(2):
            await one.call("record", key="c")
        assert (await one.call("record", key="c")).error["code"] == -32029
        assert (await two.call("record", key="c")).text == "c #1"


# --------------------------------------------------------------------------- in process


def server_with(limit: RateLimit) -> Server:
    server = Server("limited")

    @server.tool
    def work() -> str:
        return "done"

    server.middleware(limit)
    return server


async def test_principal_key_gives_each_principal_a_bucket() -> None:
    from mcpserve.protocol.core import Auth

    server = server_with(RateLimit(rate=0.01, burst=1))
    answers = []
    for principal in ("ann", "bob", "ann"):
        message = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {"name": "work", "arguments": {}, "_meta": META},
        }
        answers.append(await server.handle(message, auth=Auth(principal)))
    assert [("result" in a, a.get("error", {}).get("code")) for a in answers] == [
        (True, None),
        (True, None),
        (False, -32029),
    ]


META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"},
    "io.modelcontextprotocol/clientCapabilities": {},
}


async def test_a_key_function_chooses_the_bucket(connect: Any) -> None:
    server = server_with(RateLimit(rate=0.01, burst=1, key=lambda ctx: "everyone"))
    async with connect(server) as client:
        assert (await client.call_tool("work", {}))["content"][0]["text"] == "done"
        with pytest.raises(MCPError, match="Rate limit exceeded") as refused:
            await client.call_tool("work", {})
        assert refused.value.code == -32029


async def test_a_store_object_is_used_as_given(connect: Any) -> None:
    store = MemoryKeyValue()
    server = server_with(RateLimit(rate=0.01, burst=1, key=lambda ctx: "k", store=store))
    async with connect(server) as client:
        await client.call_tool("work", {})
    assert await store.get("rate:k") is not None


@pytest.mark.parametrize(
    ("options", "says"),
    [
        ({"rate": 0}, "rate must be a positive"),
        ({"rate": 1, "burst": 0}, "burst must be"),
        ({"rate": 1, "key": "ip"}, 'key must be "principal", "client"'),
        ({"rate": 1, "store": 42}, "store= must be a key-value store or a URL"),
    ],
)
def test_bad_options_say_what_to_give(options: dict[str, Any], says: str) -> None:
    with pytest.raises((ValueError, TypeError), match=says):
        RateLimit(**options)


async def test_a_plain_middleware_function_still_needs_no_added_to(connect: Any) -> None:
    server = Server("plain")

    @server.middleware
    async def passthrough(ctx: Context, call_next: CallNext) -> dict[str, Any]:
        return await call_next()

    @server.tool
    def work() -> str:
        return "done"

    async with connect(server) as client:
        assert (await client.call_tool("work", {}))["content"][0]["text"] == "done"


@pytest.mark.parametrize("era", ["2026-07-28", "2025-11-25"])
async def test_key_client_gives_each_client_address_its_own_bucket(
    era: str, tmp_path: Path
) -> None:
    async with serving("http", tmp_path, MCPSERVE_TEST_MIDDLEWARE="rate-client") as open_peer:
        here, there = await open_peer(era, "127.0.0.1"), await open_peer(era, "127.0.0.2")
        assert [(await here.call("record", key="d")).text for _ in range(2)] == ["d #1", "d #2"]
        refused = await here.call("record", key="d")
        assert refused.status == 429
        assert refused.error["code"] == -32029
        # Another address: a bucket of its own, full.
        assert [(await there.call("record", key="d")).text for _ in range(2)] == ["d #3", "d #4"]
        assert (await there.call("record", key="d")).error["code"] == -32029
