"""Where user functions run: awaited, inline on the loop, or in the worker thread pool."""

import asyncio
import contextvars
import threading
from typing import Any

import pytest

from mcpserve import Context, Server, blocking

request_tag: contextvars.ContextVar[str] = contextvars.ContextVar("request_tag", default="unset")


def structured(result: dict[str, Any]) -> Any:
    return result["structuredContent"]


def text(result: dict[str, Any]) -> str:
    [block] = result["content"]
    return str(block["text"])


async def test_async_tool_is_awaited(connect: Any) -> None:
    server = Server("t")

    @server.tool
    async def slow_add(a: int, b: int) -> int:
        await asyncio.sleep(0)
        return a + b

    async with connect(server) as client:
        assert structured(await client.call_tool("slow_add", {"a": 2, "b": 3})) == 5


async def test_async_tool_runs_on_the_event_loop_thread(connect: Any) -> None:
    server = Server("t")

    @server.tool
    async def where() -> int:
        return threading.get_ident()

    async with connect(server) as client:
        assert structured(await client.call_tool("where", {})) == threading.get_ident()


async def test_plain_function_runs_inline_on_the_event_loop_thread(connect: Any) -> None:
    server = Server("t")

    @server.tool
    def where() -> int:
        asyncio.get_running_loop()  # raises RuntimeError outside the loop thread
        return threading.get_ident()

    async with connect(server) as client:
        assert structured(await client.call_tool("where", {})) == threading.get_ident()


async def test_blocking_option_runs_the_function_in_a_worker_thread(connect: Any) -> None:
    server = Server("t")

    @server.tool(blocking=True)
    def where() -> int:
        return threading.get_ident()

    async with connect(server) as client:
        assert structured(await client.call_tool("where", {})) != threading.get_ident()


async def test_blocking_decorator_runs_the_function_in_a_worker_thread(connect: Any) -> None:
    server = Server("t")

    @server.tool
    @blocking
    def where() -> str:
        return threading.current_thread().name

    async with connect(server) as client:
        name = text(await client.call_tool("where", {}))
    assert name != threading.current_thread().name
    assert name.startswith("mcpserve")


async def test_blocking_false_overrides_the_blocking_decorator(connect: Any) -> None:
    server = Server("t")

    @server.tool(blocking=False)
    @blocking
    def where() -> int:
        return threading.get_ident()

    async with connect(server) as client:
        assert structured(await client.call_tool("where", {})) == threading.get_ident()


async def test_context_variables_of_the_request_reach_a_blocking_function(connect: Any) -> None:
    server = Server("t")

    @server.middleware
    async def tag_request(ctx: Context, call_next: Any) -> dict[str, Any]:
        request_tag.set(f"request-{ctx.request_id}")
        return await call_next()

    @server.tool(blocking=True)
    def tag() -> list[Any]:
        return [request_tag.get(), threading.get_ident()]

    async with connect(server) as client:
        result = structured(await client.call_tool("tag", {}))
    value, ident = result
    assert value.startswith("request-")
    assert ident != threading.get_ident()


async def test_context_object_is_passed_to_a_blocking_function(connect: Any) -> None:
    server = Server("t")

    @server.tool(blocking=True)
    def method(ctx: Context) -> str:
        return ctx.method

    async with connect(server) as client:
        assert text(await client.call_tool("method", {})) == "tools/call"


def test_blocking_option_on_an_async_function_raises_type_error() -> None:
    server = Server("t")
    with pytest.raises(TypeError, match="async"):

        @server.tool(blocking=True)
        async def nope() -> str:
            return ""


def test_blocking_decorator_on_an_async_function_raises_type_error() -> None:
    # blocking=True refuses coroutine functions; the decorator that means the same thing
    # should not silently run the coroutine on the event loop instead.
    server = Server("t")
    with pytest.raises(TypeError, match="async"):

        @server.tool
        @blocking
        async def nope() -> str:
            return ""


async def test_slow_blocking_tool_does_not_stall_a_concurrent_fast_tool(connect: Any) -> None:
    fast_ran = threading.Event()
    slow_started = asyncio.Event()
    server = Server("t")
    loop = asyncio.get_running_loop()

    @server.tool(blocking=True)
    def slow() -> bool:
        loop.call_soon_threadsafe(slow_started.set)
        # Waits until the fast tool has run; if this ran on the loop the fast tool could not.
        return fast_ran.wait(timeout=10)

    @server.tool
    async def fast() -> str:
        await asyncio.wait_for(slow_started.wait(), timeout=10)
        fast_ran.set()
        return "done"

    async with connect(server) as client:
        slow_result, fast_result = await asyncio.gather(
            client.call_tool("slow", {}), client.call_tool("fast", {})
        )
    assert structured(slow_result) is True
    assert fast_result["content"] == [{"type": "text", "text": "done"}]


async def test_async_callable_object_is_awaited(connect: Any) -> None:
    class Greeter:
        async def __call__(self, name: str) -> str:
            await asyncio.sleep(0)
            return f"hi {name}"

    server = Server("t")
    server.add_tool(Greeter(), name="greet")

    async with connect(server) as client:
        result = await client.call_tool("greet", {"name": "Ada"})
    assert result["content"] == [{"type": "text", "text": "hi Ada"}]


async def test_blocking_resource_runs_in_a_worker_thread(connect: Any) -> None:
    server = Server("t")

    @server.resource("mem://where", blocking=True)
    def where() -> str:
        return str(threading.get_ident())

    async with connect(server) as client:
        result = await client.read_resource("mem://where")
    assert result["contents"][0]["text"] != str(threading.get_ident())


async def test_blocking_prompt_runs_in_a_worker_thread(connect: Any) -> None:
    server = Server("t")

    @server.prompt(blocking=True)
    def where() -> str:
        return str(threading.get_ident())

    async with connect(server) as client:
        result = await client.get_prompt("where")
    assert result["messages"][0]["content"]["text"] != str(threading.get_ident())
