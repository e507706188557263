"""What ``Client(x)`` drives in memory: a ``Server``, anything of its shape, or a bare async
handle function; every message crosses the JSON encoder both ways."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest

from mcpserve import Client, MCPError, Server
from mcpserve._types import JSONDict

Send = Callable[[JSONDict], Awaitable[None]]


def answering(result: JSONDict, heard: list[JSONDict]) -> Callable[..., Awaitable[JSONDict | None]]:
    """A handle function that keeps what it receives, reports progress, and answers."""

    async def handle(message: JSONDict, *, send: Send) -> JSONDict | None:
        heard.append(message)
        if "id" not in message:
            return None
        progress = {"progressToken": "p", "progress": 1, "total": (2,)}  # a tuple: not JSON
        await send({"jsonrpc": "2.0", "method": "notifications/progress", "params": progress})
        return {"jsonrpc": "2.0", "id": message["id"], "result": result}

    return handle


async def test_a_bare_async_handle_function_is_driven_through_the_json_encoder() -> None:
    heard: list[JSONDict] = []
    notes: list[JSONDict] = []
    handle = answering({"content": [{"type": "text", "text": "hi"}], "rows": (1, 2)}, heard)
    async with Client(handle, on_notification=notes.append) as client:
        result = await client.call_tool("greet", {"who": "Ada"})
        await client.notify("notifications/roots/list_changed")
    assert result == {"content": [{"type": "text", "text": "hi"}], "rows": [1, 2]}
    assert [m["method"] for m in heard] == ["tools/call", "notifications/roots/list_changed"]
    assert heard[0]["params"]["arguments"] == {"who": "Ada"}
    assert heard[0]["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"] == "2026-07-28"
    assert [n["params"]["total"] for n in notes] == [[2]]


async def test_a_server_shaped_object_runs_its_lifespan_while_the_client_is_open() -> None:
    events: list[str] = []

    class Endpoint:
        def __init__(self) -> None:
            self.handle = answering({"tools": []}, [])

        @contextlib.asynccontextmanager
        async def running(self) -> AsyncIterator[Endpoint]:
            events.append("started")
            yield self
            events.append("stopped")

    async with Client(Endpoint()) as client:
        assert events == ["started"]
        assert await client.list_tools() == []
    assert events == ["started", "stopped"]


async def test_a_servers_own_handle_is_a_handle_function() -> None:
    server = Server("bound")

    @server.tool
    def add(a: int, b: int) -> int:
        return a + b

    async with Client(server.handle) as client:
        result = await client.call_tool("add", {"a": 1, "b": 2})
    assert result["content"] == [{"type": "text", "text": "3"}]


def plain_handle(message: JSONDict, *, send: Send) -> JSONDict:
    return {"jsonrpc": "2.0", "id": message.get("id"), "result": {}}


@pytest.mark.parametrize("target", [42, plain_handle, object()], ids=["int", "plain", "object"])
def test_what_is_neither_server_nor_handle_function_is_refused_in_one_line(target: Any) -> None:
    with pytest.raises(TypeError) as caught:
        Client(target)
    message = str(caught.value)
    assert message.startswith(f"Client() cannot talk to {target!r}: give it a Server, ")
    assert "\n" not in message


async def test_a_request_answered_with_nothing_says_so() -> None:
    async def silent(message: JSONDict, *, send: Send) -> JSONDict | None:
        return None

    async with Client(silent) as client:
        with pytest.raises(TypeError, match=r"answered tools/list with None, not a response"):
            await client.list_tools()


async def test_a_handshake_era_initialize_is_still_refused_in_memory() -> None:
    params = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t"}}
    async with Client(Server("modern only")) as client:
        with pytest.raises(MCPError, match="does not support the initialize handshake") as caught:
            await client.send_raw("initialize", params)
    assert caught.value.code == -32022


async def test_a_client_pinned_to_the_handshake_era_is_refused_in_memory() -> None:
    async with Client(Server("modern only"), protocol_version="2025-11-25") as client:
        with pytest.raises(MCPError, match="2025-11-25 requires the initialize handshake"):
            await client.list_tools()
