"""Cancellation: a cancelled request's task, its handler, and what it may still send.

Progress and logging themselves are ``test_context.py``'s.

Cancellation is driven in memory: the request runs as ``asyncio.create_task(server.handle(...))``
and the test cancels that task, as a transport does on ``notifications/cancelled`` or a
closed stream. Handlers signal the test through events; every wait is bounded.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections.abc import AsyncIterator
from typing import Any

import pytest

from mcpserve import Context, Server
from mcpserve._types import JSONDict
from mcpserve.protocol import constants as c

WAIT = 5.0  # upper bound for every wait on another task or thread, in seconds


def tools_call(name: str, arguments: dict[str, Any] | None = None) -> JSONDict:
    return {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {
            "name": name,
            "arguments": arguments or {},
            "_meta": {c.META_PROTOCOL_VERSION: c.LATEST_VERSION, c.META_CLIENT_CAPABILITIES: {}},
        },
    }


class Sink:
    """A ``send`` callable that keeps what the server sends on the request's stream."""

    def __init__(self) -> None:
        self.messages: list[JSONDict] = []

    async def __call__(self, message: JSONDict) -> None:
        self.messages.append(message)


@contextlib.asynccontextmanager
async def in_flight(server: Server, name: str) -> AsyncIterator[asyncio.Task[Any]]:
    """Run one ``tools/call`` as a task; make sure it is over when the block ends."""
    task = asyncio.create_task(server.handle(tools_call(name), send=Sink()))
    try:
        yield task
    finally:
        task.cancel()
        await asyncio.wait({task}, timeout=WAIT)


async def cancel(task: asyncio.Task[Any]) -> None:
    task.cancel()
    await asyncio.wait({task}, timeout=WAIT)
    assert task.cancelled()


# --------------------------------------------------------------------------- cancellation


def waiting_server(started: asyncio.Event, seen: list[bool]) -> Server:
    server = Server("cancel")

    @server.tool
    async def wait_forever(ctx: Context) -> str:
        started.set()
        try:
            await asyncio.Event().wait()
            return "woke up"
        finally:
            seen.append(ctx.cancelled)

    return server


async def test_cancelled_tool_runs_its_finally_block():
    started, seen = asyncio.Event(), []
    async with in_flight(waiting_server(started, seen), "wait_forever") as task:
        await asyncio.wait_for(started.wait(), WAIT)
        await cancel(task)
    assert len(seen) == 1


async def test_ctx_cancelled_is_true_inside_the_finally_block_of_a_cancelled_tool():
    started, seen = asyncio.Event(), []
    async with in_flight(waiting_server(started, seen), "wait_forever") as task:
        await asyncio.wait_for(started.wait(), WAIT)
        await cancel(task)
    assert seen == [True]


async def test_cancelled_request_produces_no_response_and_no_notification():
    started, seen = asyncio.Event(), []
    sink = Sink()
    server = waiting_server(started, seen)
    task = asyncio.create_task(server.handle(tools_call("wait_forever"), send=sink))
    await asyncio.wait_for(started.wait(), WAIT)
    await cancel(task)
    assert sink.messages == []
    with pytest.raises(asyncio.CancelledError):
        task.result()


async def test_ctx_cancelled_is_false_while_a_request_runs_normally(connect):
    server = Server("cancel")

    @server.tool
    async def status(ctx: Context) -> str:
        return f"cancelled={ctx.cancelled}"

    async with connect(server) as client:
        result = await client.call_tool("status", {})
    assert result["content"][0]["text"] == "cancelled=False"


def polling_server(started: threading.Event, saw: threading.Event, first: list[bool]) -> Server:
    server = Server("cancel")

    @server.tool(blocking=True)
    def poll(ctx: Context) -> str:
        first.append(ctx.cancelled)
        started.set()
        deadline = time.monotonic() + 4 * WAIT  # a bound, so a broken flag cannot hang a thread
        while time.monotonic() < deadline:
            if ctx.cancelled:
                saw.set()
                return "stopped"
            time.sleep(0.005)
        return "gave up"

    return server


async def test_blocking_tool_polling_ctx_cancelled_sees_it_become_true():
    started, saw, first = threading.Event(), threading.Event(), []
    async with in_flight(polling_server(started, saw, first), "poll") as task:
        assert await asyncio.to_thread(started.wait, WAIT)
        await cancel(task)
        assert await asyncio.to_thread(saw.wait, WAIT)


async def test_blocking_tool_sees_ctx_cancelled_false_before_cancellation():
    started, saw, first = threading.Event(), threading.Event(), []
    async with in_flight(polling_server(started, saw, first), "poll") as task:
        assert await asyncio.to_thread(started.wait, WAIT)
        assert not saw.is_set()
        await cancel(task)
        await asyncio.to_thread(saw.wait, WAIT)  # let the worker thread finish
    assert first == [False]


def watching_server(
    started: asyncio.Event, woke: asyncio.Event, helpers: list[asyncio.Task[None]]
) -> Server:
    server = Server("cancel")

    @server.tool
    async def watched(ctx: Context) -> str:
        async def watch() -> None:
            await ctx.wait_cancelled()
            woke.set()

        helpers.append(asyncio.create_task(watch()))
        started.set()
        await asyncio.Event().wait()
        return "woke up"

    return server


async def test_wait_cancelled_returns_in_a_helper_task_once_the_request_is_cancelled():
    started, woke, helpers = asyncio.Event(), asyncio.Event(), []
    async with in_flight(watching_server(started, woke, helpers), "watched") as task:
        await asyncio.wait_for(started.wait(), WAIT)
        await cancel(task)
        await asyncio.wait_for(woke.wait(), WAIT)
    await asyncio.wait_for(helpers[0], WAIT)


async def test_wait_cancelled_does_not_return_before_cancellation():
    started, woke, helpers = asyncio.Event(), asyncio.Event(), []
    async with in_flight(watching_server(started, woke, helpers), "watched") as task:
        await asyncio.wait_for(started.wait(), WAIT)
        for _ in range(10):
            await asyncio.sleep(0)  # give the helper every chance to run
        assert not woke.is_set()
        await cancel(task)
        await asyncio.wait_for(woke.wait(), WAIT)


async def test_progress_and_log_from_a_cancelled_request_are_not_sent():
    # Once a request is cancelled nothing more goes out for it, not even from its cleanup
    # code, whatever transport carries the stream.
    started, outcome = asyncio.Event(), []
    server = Server("cancel", client_logging=True)

    @server.tool
    async def tidy(ctx: Context) -> str:
        started.set()
        try:
            await asyncio.Event().wait()
            return "woke up"
        finally:
            outcome.append(await ctx.progress(99, message="cleaning up"))
            outcome.append(await ctx.log("info", "cleaning up"))

    message = tools_call("tidy")
    message["params"]["_meta"].update({"progressToken": "t", c.META_LOG_LEVEL: "debug"})
    sink = Sink()
    task = asyncio.create_task(server.handle(message, send=sink))
    await asyncio.wait_for(started.wait(), WAIT)
    await cancel(task)
    assert sink.messages == []
    assert outcome == [False, False]
