"""Per-tool limits: ``timeout=`` (and ``Server(tool_timeout=...)``) and ``max_concurrency=``.

Over stdio and HTTP in both eras (``four_wires.py``): a call past its timeout is cancelled
and answered with a tool error naming the limit; the server's default bounds every awaited
tool and a tool's own overrides it; a plain function with a timeout runs in the thread
pool, is answered on time, and reads ``ctx.cancelled``; the tool's own ``TimeoutError`` is
not taken for the limit; calls past ``max_concurrency`` wait their turn; a task past its
timeout fails. Bad limits are refused at registration with one line.
"""

from __future__ import annotations

import asyncio
import math
import threading
import time
from typing import Any

import pytest

from four_wires import WIRES, wire
from mcpserve import Context, Server
from wire_helpers import TIMEOUT, asgi_client, post
from wire_helpers import call as modern_call

LIMIT = 0.3
TASKS_META = {
    "io.modelcontextprotocol/clientCapabilities": {
        "extensions": {"io.modelcontextprotocol/tasks": {}}
    }
}
#: Longer than any test waits: a call that sleeps this long is only ended by its limit.
FOREVER = 60.0


def limited_server(**options: Any) -> tuple[Server, dict[str, Any]]:
    server = Server("limits", **options)
    seen: dict[str, Any] = {"cancelled": [], "thread_saw_cancel": threading.Event()}

    @server.tool(timeout=LIMIT)
    async def slow(seconds: float = FOREVER) -> str:
        try:
            await asyncio.sleep(seconds)
        except asyncio.CancelledError:
            seen["cancelled"].append("slow")
            raise
        return "done"

    @server.tool(timeout=LIMIT)
    def plain_slow(ctx: Context) -> str:
        deadline = time.monotonic() + TIMEOUT
        while not ctx.cancelled and time.monotonic() < deadline:
            time.sleep(0.01)
        if ctx.cancelled:
            seen["thread_saw_cancel"].set()
        return "done"

    @server.tool
    async def unlimited(seconds: float) -> str:
        await asyncio.sleep(seconds)
        return "done"

    @server.tool(timeout=FOREVER)
    async def own_limit(seconds: float) -> str:
        await asyncio.sleep(seconds)
        return "done"

    @server.tool(timeout=FOREVER)
    async def raises_its_own_timeout() -> str:
        raise TimeoutError("the database did not answer")

    return server, seen


def text(result: dict[str, Any]) -> str:
    content: str = result["content"][0]["text"]
    return content


@pytest.mark.parametrize("kind", WIRES)
async def test_a_call_past_its_timeout_is_cancelled_and_answered_with_a_tool_error(
    kind: str,
) -> None:
    server, seen = limited_server()
    async with wire(kind, server) as connection:
        started = time.monotonic()
        result = await connection.call("slow", {})
        took = time.monotonic() - started
        assert result["isError"] is True
        assert text(result) == (
            "Tool slow did not finish within its timeout of 0.3 seconds and was cancelled"
        )
        assert LIMIT <= took < LIMIT + 3.0
        assert seen["cancelled"] == ["slow"]
        quick = await connection.call("slow", {"seconds": 0.01})
        assert "isError" not in quick
        assert text(quick) == "done"


@pytest.mark.parametrize("kind", WIRES)
async def test_a_plain_function_with_a_timeout_is_answered_on_time_and_told_to_stop(
    kind: str,
) -> None:
    server, seen = limited_server()
    async with wire(kind, server) as connection:
        started = time.monotonic()
        result = await connection.call("plain_slow", {})
        assert time.monotonic() - started < LIMIT + 3.0
        assert text(result) == (
            "Tool plain_slow did not finish within its timeout of 0.3 seconds and was cancelled"
        )
        assert await asyncio.to_thread(seen["thread_saw_cancel"].wait, TIMEOUT)


@pytest.mark.parametrize("kind", WIRES)
async def test_the_servers_tool_timeout_bounds_every_awaited_tool_unless_it_names_its_own(
    kind: str,
) -> None:
    server, _ = limited_server(tool_timeout=LIMIT)
    async with wire(kind, server) as connection:
        result = await connection.call("unlimited", {"seconds": FOREVER})
        assert text(result) == (
            "Tool unlimited did not finish within its timeout of 0.3 seconds and was cancelled"
        )
        assert text(await connection.call("unlimited", {"seconds": 0.01})) == "done"
        longer = await connection.call("own_limit", {"seconds": LIMIT * 2})
        assert "isError" not in longer
        assert text(longer) == "done"


async def test_without_a_limit_a_slow_tool_runs_to_its_end() -> None:
    server, _ = limited_server()
    async with wire("stdio-modern", server) as connection:
        assert text(await connection.call("unlimited", {"seconds": LIMIT * 2})) == "done"


async def test_a_timeout_error_of_the_tools_own_is_a_failure_not_the_limit() -> None:
    server, _ = limited_server()
    async with wire("stdio-modern", server) as connection:
        result = await connection.call("raises_its_own_timeout", {})
    assert result["isError"] is True
    assert text(result).startswith("Tool raises_its_own_timeout failed unexpectedly (ref ")


def counting_server(limit: int) -> tuple[Server, dict[str, int]]:
    server = Server("limits")
    counts = {"now": 0, "most": 0, "done": 0}

    @server.tool(max_concurrency=limit)
    async def narrow() -> str:
        counts["now"] += 1
        counts["most"] = max(counts["most"], counts["now"])
        await asyncio.sleep(0.05)
        counts["now"] -= 1
        counts["done"] += 1
        return "done"

    return server, counts


async def test_calls_past_max_concurrency_wait_their_turn_over_http() -> None:
    server, counts = counting_server(2)
    async with asgi_client(server.http_app()) as http:
        replies = await asyncio.gather(
            *(post(http, modern_call(n, "narrow", {})) for n in range(8))
        )
    assert [text(reply.result) for reply in replies] == ["done"] * 8
    assert counts == {"now": 0, "most": 2, "done": 8}


async def test_calls_past_max_concurrency_wait_their_turn_over_stdio() -> None:
    server, counts = counting_server(3)
    async with wire("stdio-modern", server) as connection:
        results = await asyncio.gather(*(connection.call("narrow") for _ in range(9)))
    assert [text(result) for result in results] == ["done"] * 9
    assert counts == {"now": 0, "most": 3, "done": 9}


async def test_without_max_concurrency_calls_overlap() -> None:
    server, counts = counting_server(100)
    async with asgi_client(server.http_app()) as http:
        await asyncio.gather(*(post(http, modern_call(n, "narrow", {})) for n in range(6)))
    assert counts["most"] == 6


async def test_a_task_past_its_timeout_fails_naming_the_limit() -> None:
    server = Server("limits")

    @server.tool(task="optional", timeout=LIMIT)
    async def long_job() -> str:
        await asyncio.sleep(FOREVER)
        return "done"

    async with server.running(), asgi_client(server.http_app()) as http:
        message = modern_call(1, "long_job", {})
        message["params"]["_meta"].update(TASKS_META)
        created = (await post(http, message)).result
        assert created["resultType"] == "task"
        task = await _task_end(http, created["taskId"])
    assert task["status"] == "failed"
    assert task["statusMessage"] == (
        "Tool long_job did not finish within its timeout of 0.3 seconds and was cancelled"
    )


async def test_tasks_past_max_concurrency_wait_their_turn() -> None:
    server = Server("limits")
    counts = {"now": 0, "most": 0}

    @server.tool(task="optional", max_concurrency=1)
    async def one_at_a_time(n: int) -> str:
        counts["now"] += 1
        counts["most"] = max(counts["most"], counts["now"])
        await asyncio.sleep(0.05)
        counts["now"] -= 1
        return f"job {n}"

    async with server.running(), asgi_client(server.http_app()) as http:
        created = []
        for n in range(3):
            message = modern_call(n, "one_at_a_time", {"n": n})
            message["params"]["_meta"].update(TASKS_META)
            created.append((await post(http, message)).result["taskId"])
        finished = [await _task_end(http, task_id) for task_id in created]
    assert [task["status"] for task in finished] == ["completed"] * 3
    assert [task["result"]["content"][0]["text"] for task in finished] == [
        "job 0",
        "job 1",
        "job 2",
    ]
    assert counts == {"now": 0, "most": 1}


async def _task_end(http: Any, task_id: str) -> dict[str, Any]:
    """tasks/get until the task is no longer working (bounded)."""
    deadline = time.monotonic() + TIMEOUT
    while True:
        get = modern_call(0, "unused", {})
        get["method"] = "tasks/get"
        get["params"] = {"taskId": task_id, "_meta": {**get["params"]["_meta"], **TASKS_META}}
        task: dict[str, Any] = (await post(http, get)).result
        if task["status"] != "working":
            return task
        assert time.monotonic() < deadline, task
        await asyncio.sleep(0.02)


@pytest.mark.parametrize("bad", [0, -1, math.nan, math.inf, "1", True])
def test_a_timeout_that_is_not_a_positive_number_of_seconds_is_refused(bad: Any) -> None:
    server = Server("limits")
    with pytest.raises(ValueError, match=r"^Tool 'f': a timeout is a positive number of seconds"):
        server.tool(timeout=bad)(_async_tool)
    with pytest.raises(ValueError, match=r"^Server\(tool_timeout=...\): a timeout is a positive"):
        Server("limits", tool_timeout=bad)


@pytest.mark.parametrize("bad", [0, -2, 1.5, True, "2"])
def test_a_max_concurrency_that_is_not_a_whole_number_of_calls_is_refused(bad: Any) -> None:
    with pytest.raises(ValueError, match=r"^Tool 'f': max_concurrency is a whole number of calls"):
        Server("limits").tool(max_concurrency=bad)(_async_tool)


def test_a_plain_function_kept_on_the_event_loop_cannot_have_a_timeout() -> None:
    def f() -> str:
        return "x"

    with pytest.raises(ValueError, match=r"^Tool 'f': a plain function run on the event loop"):
        Server("limits").tool(timeout=1, blocking=False)(f)


async def _async_tool() -> str:
    return "x"


_async_tool.__name__ = "f"


@pytest.mark.parametrize("kind", WIRES)
async def test_a_mounted_servers_tools_follow_its_own_tool_timeout_else_the_parents(
    kind: str,
) -> None:
    strict, _ = limited_server(tool_timeout=LIMIT)
    lenient, _ = limited_server()
    parent = Server("parent", tool_timeout=LIMIT * 2)
    parent.mount(strict, namespace="strict")
    parent.mount(lenient, namespace="lenient")
    async with wire(kind, parent) as connection:
        # The mounted server's own limit, although the parent's would let it finish.
        result = await connection.call("strict_unlimited", {"seconds": LIMIT * 1.5})
        assert text(result) == (
            "Tool strict_unlimited did not finish within its timeout of 0.3 seconds and was "
            "cancelled"
        )
        # A mounted server without one is bounded by the parent's.
        result = await connection.call("lenient_unlimited", {"seconds": FOREVER})
        assert text(result) == (
            "Tool lenient_unlimited did not finish within its timeout of 0.6 seconds and was "
            "cancelled"
        )
        assert text(await connection.call("lenient_unlimited", {"seconds": LIMIT * 1.5})) == (
            "done"
        )
