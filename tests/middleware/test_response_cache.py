"""``ResponseCache``: what it keeps, for whom, how long, and what drops it; on every wire,
then in process for whose entries are whose and how long they live."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from mcpserve import CachePolicy, Server
from mcpserve.middleware import ResponseCache
from mcpserve.protocol.core import Auth
from middleware_peers import WIRES, serving

pytestmark = pytest.mark.subprocess

CACHE = {"MCPSERVE_TEST_MIDDLEWARE": "cache"}


@pytest.mark.parametrize(("transport", "era"), WIRES)
async def test_read_only_tool_results_are_kept_and_others_computed_each_time(
    transport: str, era: str, tmp_path: Path
) -> None:
    async with serving(transport, tmp_path, **CACHE) as open_peer:
        peer = await open_peer(era)
        assert [(await peer.call("lookup", key="a")).text for _ in range(2)] == ["a #1", "a #1"]
        assert (await peer.call("lookup", key="b")).text == "b #1"  # other arguments: computed
        assert [(await peer.call("record", key="a")).text for _ in range(2)] == ["a #1", "a #2"]
        failed = [await peer.call("fail") for _ in range(2)]
        assert [(f.result["isError"], f.text) for f in failed] == [
            (True, "failed #1"),
            (True, "failed #2"),
        ]


@pytest.mark.parametrize(("transport", "era"), WIRES)
async def test_a_read_is_kept_until_its_resource_is_updated(
    transport: str, era: str, tmp_path: Path
) -> None:
    async with serving(transport, tmp_path, **CACHE) as open_peer:
        peer = await open_peer(era)

        async def read() -> str:
            answer = await peer.ask("resources/read", {"uri": "doc://counter"})
            return answer.result["contents"][0]["text"]  # type: ignore[no-any-return]

        assert [await read(), await read()] == ["read #1", "read #1"]
        assert (await peer.call("touch", uri="doc://other")).text == "touched"
        assert await read() == "read #1"  # another URI's update drops nothing here
        await peer.call("touch", uri="doc://counter")
        assert [await read(), await read()] == ["read #2", "read #2"]


@pytest.mark.parametrize(("transport", "era"), WIRES)
async def test_a_list_change_drops_that_kinds_lists_and_calls(
    transport: str, era: str, tmp_path: Path
) -> None:
    async with serving(transport, tmp_path, **CACHE) as open_peer:
        peer = await open_peer(era)

        async def tool_names() -> list[str]:
            answer = await peer.ask("tools/list")
            return [tool["name"] for tool in answer.result["tools"]]

        async def greeting() -> str:
            answer = await peer.ask("prompts/get", {"name": "greet", "arguments": {"name": "x"}})
            return answer.result["messages"][0]["content"]["text"]  # type: ignore[no-any-return]

        before = await tool_names()
        assert "extra" not in before
        assert [await greeting(), await greeting()] == ["Hello x #1", "Hello x #1"]
        assert (await peer.call("lookup", key="c")).text == "c #1"
        await peer.call("grow", name="extra")
        assert await tool_names() == [*before, "extra"]
        assert (await peer.call("lookup", key="c")).text == "c #2"  # tools changed: recomputed
        assert await greeting() == "Hello x #1"  # prompts did not change: still kept


# --------------------------------------------------------------------------- in process

META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"},
    "io.modelcontextprotocol/clientCapabilities": {},
}


def counting_server(middleware: ResponseCache, policy: CachePolicy, **resource: Any) -> Server:
    server = Server("cached", cache=policy)
    count = {"n": 0}

    @server.tool(annotations={"readOnlyHint": True})
    def lookup() -> str:
        count["n"] += 1
        return f"#{count['n']}"

    @server.resource("doc://a", **resource)
    def doc() -> str:
        count["n"] += 1
        return f"#{count['n']}"

    server.middleware(middleware)
    return server


async def ask(server: Server, method: str, params: dict[str, Any], who: str) -> str:
    message = {"jsonrpc": "2.0", "id": 1, "method": method, "params": {**params, "_meta": META}}
    answer = await server.handle(message, auth=Auth(who))
    assert answer is not None
    assert "result" in answer, answer
    result = answer["result"]
    blocks = result["content"] if "content" in result else result["contents"]
    return blocks[0]["text"]  # type: ignore[no-any-return]


async def test_entries_are_each_callers_own_unless_the_policy_is_public() -> None:
    private = counting_server(ResponseCache(), CachePolicy(30_000, "private"))
    seen = [await ask(private, "tools/call", {"name": "lookup"}, who) for who in "aba"]
    assert seen == ["#1", "#2", "#1"]
    public = counting_server(ResponseCache(), CachePolicy(30_000, "public"))
    seen = [await ask(public, "tools/call", {"name": "lookup"}, who) for who in "aba"]
    assert seen == ["#1", "#1", "#1"]


async def test_a_private_result_on_a_public_server_is_not_shared() -> None:
    server = counting_server(
        ResponseCache(), CachePolicy(30_000, "public"), cache=CachePolicy(30_000, "private")
    )
    seen = [await ask(server, "resources/read", {"uri": "doc://a"}, who) for who in "ab"]
    assert seen == ["#1", "#2"]


async def test_ttl_ms_zero_means_not_cached() -> None:
    server = counting_server(ResponseCache(), CachePolicy(30_000), cache=CachePolicy(0))
    seen = [await ask(server, "resources/read", {"uri": "doc://a"}, "a") for _ in range(2)]
    assert seen == ["#1", "#2"]


async def test_an_entry_lives_the_shorter_of_ttl_and_ttl_ms() -> None:
    server = counting_server(ResponseCache(ttl=60), CachePolicy(30_000), cache=CachePolicy(300))
    assert await ask(server, "resources/read", {"uri": "doc://a"}, "a") == "#1"
    assert await ask(server, "resources/read", {"uri": "doc://a"}, "a") == "#1"
    await asyncio.sleep(0.5)
    assert await ask(server, "resources/read", {"uri": "doc://a"}, "a") == "#2"
    short = counting_server(ResponseCache(ttl=0.3), CachePolicy(30_000))
    assert await ask(short, "tools/call", {"name": "lookup"}, "a") == "#1"
    assert await ask(short, "tools/call", {"name": "lookup"}, "a") == "#1"
    await asyncio.sleep(0.5)
    assert await ask(short, "tools/call", {"name": "lookup"}, "a") == "#2"


@pytest.mark.parametrize("ttl", [0, -1, float("nan"), "60"])
def test_a_ttl_that_is_not_a_positive_number_is_refused(ttl: Any) -> None:
    with pytest.raises(ValueError, match="ttl must be a positive number of seconds"):
        ResponseCache(ttl=ttl)
