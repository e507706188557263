"""Middleware around every request, and the server lifespan around serving."""

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest

from mcpserve import CallNext, Context, InvalidParams, MCPError, Server

META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"},
    "io.modelcontextprotocol/clientCapabilities": {},
}


def server_with_everything() -> Server:
    server = Server("t")

    @server.tool
    def echo(text: str) -> str:
        return text

    @server.resource("mem://x")
    def x() -> str:
        return "x"

    @server.prompt
    def hello() -> str:
        return "hello"

    @server.completion(prompt="hello", argument="name")
    def names(value: str) -> list[str]:
        return [value]

    @server.method("acme/ping")
    def ping() -> None:
        return None

    return server


# --------------------------------------------------------------------------- middleware


async def test_first_registered_middleware_is_outermost(connect: Any) -> None:
    events: list[str] = []
    server = Server("t")

    @server.middleware
    async def outer(ctx: Context, call_next: CallNext) -> dict[str, Any]:
        events.append("outer in")
        result = await call_next()
        events.append("outer out")
        return result

    @server.middleware
    async def inner(ctx: Context, call_next: CallNext) -> dict[str, Any]:
        events.append("inner in")
        result = await call_next()
        events.append("inner out")
        return result

    @server.tool
    def work() -> str:
        events.append("handler")
        return ""

    async with connect(server) as client:
        await client.call_tool("work", {})
    assert events == ["outer in", "inner in", "handler", "inner out", "outer out"]


async def test_middleware_wraps_every_method_and_sees_its_name(connect: Any) -> None:
    seen: list[str] = []
    server = server_with_everything()

    @server.middleware
    async def record(ctx: Context, call_next: CallNext) -> dict[str, Any]:
        seen.append(ctx.method)
        return await call_next()

    async with connect(server) as client:
        await client.discover()
        await client.list_tools()
        await client.call_tool("echo", {"text": "a"})
        await client.list_resources()
        await client.list_resource_templates()
        await client.read_resource("mem://x")
        await client.list_prompts()
        await client.get_prompt("hello")
        await client.complete({"type": "ref/prompt", "name": "hello"}, "name", "a")
        await client.request("acme/ping")
    assert seen == [
        "server/discover",
        "tools/list",
        "tools/call",
        "resources/list",
        "resources/templates/list",
        "resources/read",
        "prompts/list",
        "prompts/get",
        "completion/complete",
        "acme/ping",
    ]


async def test_middleware_can_short_circuit_with_a_result(connect: Any) -> None:
    calls: list[str] = []
    server = Server("t")

    @server.middleware
    async def cached(ctx: Context, call_next: CallNext) -> dict[str, Any]:
        if ctx.method == "tools/call":
            return {"content": [{"type": "text", "text": "from cache"}]}
        return await call_next()

    @server.tool
    def slow() -> str:
        calls.append("slow")
        return "computed"

    async with connect(server) as client:
        result = await client.call_tool("slow", {})
    assert calls == []
    assert result["content"] == [{"type": "text", "text": "from cache"}]
    assert result["resultType"] == "complete"


async def test_middleware_can_reject_a_request_by_raising_an_mcp_error(connect: Any) -> None:
    calls: list[str] = []
    server = Server("t")

    @server.middleware
    async def guard(ctx: Context, call_next: CallNext) -> dict[str, Any]:
        if ctx.request.params.get("name") == "admin":
            raise InvalidParams("Tool admin is not available to you")
        return await call_next()

    @server.tool
    def admin() -> str:
        calls.append("admin")
        return ""

    async with connect(server) as client:
        with pytest.raises(MCPError) as info:
            await client.call_tool("admin", {})
    assert (info.value.code, info.value.message) == (-32602, "Tool admin is not available to you")
    assert calls == []


async def test_middleware_can_change_the_result_on_its_way_out(connect: Any) -> None:
    server = Server("t")

    @server.middleware
    async def stamp(ctx: Context, call_next: CallNext) -> dict[str, Any]:
        result = await call_next()
        result.setdefault("_meta", {})["com.example/stamped"] = True
        return result

    @server.tool
    def echo() -> str:
        return "x"

    async with connect(server) as client:
        result = await client.call_tool("echo", {})
    assert result["_meta"]["com.example/stamped"] is True
    assert "io.modelcontextprotocol/serverInfo" in result["_meta"]


async def test_unexpected_middleware_exception_is_a_masked_internal_error(connect: Any) -> None:
    server = Server("t")

    @server.middleware
    async def broken(ctx: Context, call_next: CallNext) -> dict[str, Any]:
        raise RuntimeError("middleware secret")

    async with connect(server) as client:
        with pytest.raises(MCPError) as info:
            await client.discover()
    assert info.value.code == -32603
    assert "secret" not in info.value.message


async def test_middleware_added_while_serving_applies_to_later_requests(connect: Any) -> None:
    seen: list[str] = []
    server = Server("t")

    async with connect(server) as client:
        await client.discover()

        @server.middleware
        async def record(ctx: Context, call_next: CallNext) -> dict[str, Any]:
            seen.append(ctx.method)
            return await call_next()

        await client.discover()
    assert seen == ["server/discover"]


def test_middleware_decorator_returns_the_function_unchanged() -> None:
    server = Server("t")

    async def passthrough(ctx: Context, call_next: CallNext) -> dict[str, Any]:
        return await call_next()

    assert server.middleware(passthrough) is passthrough


async def test_middleware_for_some_methods_wraps_those_only(connect: Any) -> None:
    seen: list[str] = []
    server = server_with_everything()

    @server.middleware(methods=["tools/call", "prompts/get"])
    async def record(ctx: Context, call_next: CallNext) -> dict[str, Any]:
        seen.append(ctx.method)
        return await call_next()

    async def tag(ctx: Context, call_next: CallNext) -> dict[str, Any]:
        result = await call_next()
        result.setdefault("_meta", {})["com.example/tagged"] = True
        return result

    assert server.middleware(tag, methods="resources/read") is tag  # one name, as a string

    async with connect(server) as client:
        await client.discover()
        await client.list_tools()
        await client.call_tool("echo", {"text": "a"})
        read = await client.read_resource("mem://x")
        await client.get_prompt("hello")
        listed = await client.request("resources/list")
    assert seen == ["tools/call", "prompts/get"]
    assert read["_meta"]["com.example/tagged"] is True
    assert "com.example/tagged" not in listed.get("_meta", {})


def test_methods_a_middleware_wraps_stay_inline_only_where_none_wraps() -> None:
    """A plain-def tool is answered inline unless some middleware wraps tools/call."""
    server = server_with_everything()

    @server.middleware(methods=["resources/read"])
    async def reads(ctx: Context, call_next: CallNext) -> dict[str, Any]:
        return await call_next()

    def prepared(method: str, params: dict[str, Any]) -> Any:
        message = {"jsonrpc": "2.0", "id": 1, "method": method,
                   "params": {**params, "_meta": META}}  # fmt: skip
        return server.pipeline.dispatcher().prepare(message)

    assert prepared("tools/call", {"name": "echo", "arguments": {"text": "a"}}).inline is True
    assert prepared("resources/read", {"uri": "mem://x"}).inline is False

    @server.middleware(methods=["tools/call"])
    async def calls(ctx: Context, call_next: CallNext) -> dict[str, Any]:
        return await call_next()

    assert prepared("tools/call", {"name": "echo", "arguments": {"text": "a"}}).inline is False


def test_middleware_methods_must_name_methods() -> None:
    server = Server("t")

    async def passthrough(ctx: Context, call_next: CallNext) -> dict[str, Any]:
        return await call_next()

    with pytest.raises(ValueError, match="at least one method"):
        server.middleware(passthrough, methods=[])
    with pytest.raises(ValueError, match="at least one method"):
        server.middleware(passthrough, methods=["tools/call", ""])
    with pytest.raises(TypeError, match="needs a function"):
        server.middleware()  # type: ignore[call-overload]


async def test_a_mounted_servers_method_middleware_wraps_its_entries_for_those_methods(
    connect: Any,
) -> None:
    seen: list[str] = []
    child = server_with_everything()

    @child.middleware(methods=["tools/call"])
    async def record(ctx: Context, call_next: CallNext) -> dict[str, Any]:
        seen.append(f"{ctx.method} {ctx.request.params.get('name') or ''}".strip())
        return await call_next()

    parent = Server("parent")
    parent.mount(child, namespace="kid")
    async with connect(parent) as client:
        assert (await client.call_tool("kid_echo", {"text": "a"}))["content"][0]["text"] == "a"
        await client.get_prompt("kid_hello")
        await client.read_resource("kid+mem://x")
    assert seen == ["tools/call kid_echo"]


# --------------------------------------------------------------------------- lifespan


def recording_lifespan(events: list[str], state: Any) -> Any:
    @asynccontextmanager
    async def lifespan(server: Server) -> AsyncIterator[Any]:
        events.append(f"start {server.name}")
        try:
            yield state
        finally:
            events.append("stop")

    return lifespan


async def test_lifespan_starts_when_the_client_connects_and_stops_when_it_closes(
    connect: Any,
) -> None:
    events: list[str] = []
    server = Server("db", lifespan=recording_lifespan(events, {"pool": "ready"}))

    assert events == []
    async with connect(server) as client:
        assert events == ["start db"]
        await client.discover()
        await client.discover()
        assert events == ["start db"]
    assert events == ["start db", "stop"]


async def test_lifespan_state_is_visible_as_context_lifespan_state(connect: Any) -> None:
    state = {"pool": "ready"}
    server = Server("db", lifespan=recording_lifespan([], state))

    @server.tool
    def pool(ctx: Context) -> str:
        return str(ctx.lifespan_state["pool"])

    async with connect(server) as client:
        result = await client.call_tool("pool", {})
    assert result["content"] == [{"type": "text", "text": "ready"}]


async def test_lifespan_runs_once_for_nested_clients(connect: Any) -> None:
    events: list[str] = []
    server = Server("db", lifespan=recording_lifespan(events, None))

    async with connect(server) as first:
        async with connect(server) as second:
            await first.discover()
            await second.discover()
        assert events == ["start db"]
    assert events == ["start db", "stop"]


async def test_lifespan_state_is_cleared_after_cleanup(connect: Any) -> None:
    server = Server("db", lifespan=recording_lifespan([], "state"))

    async with connect(server):
        assert server.lifespan_state == "state"
    assert server.lifespan_state is None


async def test_lifespan_cleanup_runs_even_when_the_client_block_raises(connect: Any) -> None:
    events: list[str] = []
    server = Server("db", lifespan=recording_lifespan(events, None))

    with pytest.raises(RuntimeError, match="boom"):
        async with connect(server):
            raise RuntimeError("boom")
    assert events == ["start db", "stop"]


async def test_lifespan_state_is_none_without_a_lifespan(connect: Any) -> None:
    server = Server("t")

    @server.tool
    def state(ctx: Context) -> str:
        return repr(ctx.lifespan_state)

    async with connect(server) as client:
        result = await client.call_tool("state", {})
    assert result["content"] == [{"type": "text", "text": "None"}]
