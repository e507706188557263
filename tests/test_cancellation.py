"""Cancellation, progress and client logging (CHECKLIST §9 L02-L06, §10, §11).

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

from mcpserve import Context, MCPError, Server
from mcpserve.protocol import constants as c
from mcpserve.protocol.jsonrpc import JSONDict

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
    # CHECKLIST X03/N03: once a request is cancelled nothing more goes out for it, not even
    # from its cleanup code, whatever transport carries the stream.
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


# --------------------------------------------------------------------------- progress


def progress_server(steps: list[tuple[float, float | None, str | None]]) -> Server:
    server = Server("progress")

    @server.tool
    async def work(ctx: Context) -> str:
        sent = [await ctx.progress(p, total=t, message=m) for p, t, m in steps]
        return ",".join(str(flag) for flag in sent)

    return server


async def test_progress_without_a_token_sends_nothing(connect):
    async with connect(progress_server([(1, 2, "half"), (2, 2, "done")])) as client:
        result = await client.call_tool("work", {})
    assert result["content"][0]["text"] == "False,False"
    assert client.notifications == []


@pytest.mark.parametrize("token", ["abc123", 7], ids=["string", "integer"])
async def test_progress_notifications_echo_the_request_token(connect, token):
    async with connect(progress_server([(1, None, None)])) as client:
        await client.call_tool("work", {}, progress_token=token)
    assert [n["params"]["progressToken"] for n in client.notifications] == [token]


async def test_progress_carries_total_and_message_when_given(connect):
    async with connect(
        progress_server([(50, 100, "Reticulating splines..."), (60, None, None)])
    ) as client:
        await client.call_tool("work", {}, progress_token="t")
    assert [n["params"] for n in client.notifications] == [
        {"progressToken": "t", "progress": 50, "total": 100, "message": "Reticulating splines..."},
        {"progressToken": "t", "progress": 60},
    ]


async def test_progress_that_does_not_increase_is_not_sent(connect):
    steps = [(1, None, None), (1, None, None), (0.5, None, None), (2.5, 3, None), (3, 3, None)]
    async with connect(progress_server(steps)) as client:
        result = await client.call_tool("work", {}, progress_token="t")
    assert result["content"][0]["text"] == "True,False,False,True,True"
    assert [n["params"]["progress"] for n in client.notifications] == [1, 2.5, 3]


async def test_progress_without_a_stream_to_send_on_is_a_no_op():
    server = progress_server([(1, None, None)])
    message = tools_call("work")
    message["params"]["_meta"]["progressToken"] = "t"
    response = await server.handle(message)  # no send callable
    assert response is not None
    assert response["result"]["content"][0]["text"] == "False"


# --------------------------------------------------------------------------- client logging


def logging_server(*, client_logging: bool = True) -> Server:
    server = Server("logs", client_logging=client_logging)

    @server.tool
    async def chatter(ctx: Context) -> str:
        sent = [await ctx.log(level, {"level": level}) for level in c.LOG_LEVELS]
        return ",".join(str(flag) for flag in sent)

    return server


def log_levels(notifications: list[JSONDict]) -> list[str]:
    return [n["params"]["level"] for n in notifications if n["method"] == "notifications/message"]


@pytest.mark.parametrize("requested", c.LOG_LEVELS)
async def test_log_messages_below_the_requested_level_are_filtered(connect, requested):
    async with connect(logging_server()) as client:
        result = await client.call_tool("chatter", {}, log_level=requested)
    expected = list(c.LOG_LEVELS[c.LOG_LEVEL_RANK[requested] :])
    assert log_levels(client.notifications) == expected
    flags = result["content"][0]["text"].split(",")
    assert [level for level, flag in zip(c.LOG_LEVELS, flags, strict=True) if flag == "True"] == (
        expected
    )


async def test_log_notification_carries_the_data_and_logger_name(connect):
    server = Server("logs", client_logging=True)

    @server.tool
    async def one(ctx: Context) -> str:
        await ctx.log("warning", {"disk": "almost full"}, logger="storage")
        return "ok"

    async with connect(server) as client:
        await client.call_tool("one", {}, log_level="info")
    assert [n["params"] for n in client.notifications] == [
        {"level": "warning", "data": {"disk": "almost full"}, "logger": "storage"}
    ]


async def test_no_log_notifications_without_a_requested_log_level(connect):
    async with connect(logging_server()) as client:
        result = await client.call_tool("chatter", {})
    assert client.notifications == []
    assert set(result["content"][0]["text"].split(",")) == {"False"}


async def test_no_log_notifications_when_client_logging_is_off(connect):
    async with connect(logging_server(client_logging=False)) as client:
        await client.call_tool("chatter", {}, log_level="debug")
    assert client.notifications == []


async def test_logging_capability_is_declared_only_with_client_logging(connect):
    async with (
        connect(logging_server()) as on,
        connect(logging_server(client_logging=False)) as off,
    ):
        assert "logging" in (await on.discover())["capabilities"]
        assert "logging" not in (await off.discover())["capabilities"]


async def test_unknown_log_level_in_a_handler_raises_value_error(connect):
    server = Server("logs", client_logging=True)

    @server.tool
    async def typo(ctx: Context) -> str:
        try:
            await ctx.log("verbose", "x")
        except ValueError:
            return "refused"
        return "sent"

    async with connect(server) as client:
        result = await client.call_tool("typo", {}, log_level="debug")
    assert result["content"][0]["text"] == "refused"
    assert client.notifications == []


async def test_unknown_requested_log_level_is_invalid_params(connect):
    async with connect(logging_server()) as client:
        with pytest.raises(MCPError) as raised:
            await client.call_tool("chatter", {}, log_level="verbose")
    assert raised.value.code == -32602
