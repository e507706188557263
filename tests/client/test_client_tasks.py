"""The client's tasks: ``client.call_tool(..., task=True)`` and the :class:`TaskHandle` it
returns, against ``tests/support/servers/tasks.py`` (2026-07-28, the tasks extension).

Every behaviour runs in memory and over real HTTP (the server as a subprocess on
127.0.0.1), with the tasks kept in memory and in Redis (the run's ``redis`` fixture). The
server's ``pollIntervalMs`` is 10 ms here so that polling takes no time; the tests of
``result(listen=True)`` use a server that asks for a minute between polls, so only its
notifications can bring the end in time.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import Any

import pytest

from mcpserve import Client, MCPError, MethodNotFound, Server, TaskCancelled, TaskHandle
from redis_server import REDIS_PARAM, RedisServer
from servers import tasks as app
from wire_helpers import SERVERS, TIMEOUT, HTTPServerProcess, http_server_process

Connect = Callable[..., AbstractAsyncContextManager[Client]]
FAST_POLL_MS = 10
SLOW_POLL_MS = 60_000


@pytest.fixture(scope="module", params=["memory", REDIS_PARAM])
def store(request: pytest.FixtureRequest) -> str:
    if request.param == "memory":
        return "memory://"
    server: RedisServer = request.getfixturevalue("redis")
    return server.url


def served_tasks(tmp_path: Path, store: str, poll_ms: int) -> Any:
    env = {"MCPSERVE_TASK_STORE": store, "MCPSERVE_TEST_TASK_POLL_MS": str(poll_ms)}
    return http_server_process(tmp_path, args=[sys.executable, str(SERVERS / "tasks.py")],
                               env=env)  # fmt: skip


@pytest.fixture(scope="module")
def http_server(
    store: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[HTTPServerProcess]:
    with served_tasks(tmp_path_factory.mktemp("client-tasks"), store, FAST_POLL_MS) as srv:
        yield srv


def in_memory(store: str, poll_ms: int) -> Connect:
    @contextlib.asynccontextmanager
    async def connect(**options: Any) -> AsyncIterator[Client]:
        app.GATES.clear()
        server = app.build(task_store=store)
        server.tasks.poll_interval_ms = poll_ms
        async with Client(server, timeout=TIMEOUT, **options) as client:
            yield client
        app.GATES.clear()

    return connect


def over_http(url: str) -> Connect:
    @contextlib.asynccontextmanager
    async def connect(**options: Any) -> AsyncIterator[Client]:
        async with Client(url, timeout=TIMEOUT, **options) as client:
            yield client

    return connect


@pytest.fixture(params=["memory", pytest.param("http", marks=pytest.mark.subprocess)])
def connect(request: pytest.FixtureRequest, store: str) -> Connect:
    """``async with connect(**client_options) as client``: the server in memory, or over HTTP."""
    if request.param == "memory":
        return in_memory(store, FAST_POLL_MS)
    server: HTTPServerProcess = request.getfixturevalue("http_server")
    return over_http(server.url)


def text(result: dict[str, Any]) -> str:
    (block,) = result["content"]
    return block["text"]  # type: ignore[no-any-return]


def answer_questions(params: dict[str, Any]) -> dict[str, Any]:
    """The user, as the tasks server's questions need: yes, and the name Ada."""
    if params["message"] in ("Who?", "Your name?"):
        return {"action": "accept", "content": {"name": "Ada"}}
    return {"action": "accept", "content": {"confirm": True}}


async def until(handle: TaskHandle, **expected: str) -> dict[str, Any]:
    """The task, once ``status()`` shows the ``expected`` fields (bounded)."""
    async with asyncio.timeout(TIMEOUT):
        while True:
            task = await handle.status()
            if all(task.get(key) == value for key, value in expected.items()):
                return task
            await asyncio.sleep(0.01)


# -- the result ------------------------------------------------------------------------------


async def test_a_task_gives_a_handle_whose_result_is_the_calls(connect: Connect) -> None:
    async with connect() as client:
        handle = await client.call_tool("sleepy", {"seconds": 0.05}, task=True)
        assert isinstance(handle, TaskHandle)
        assert isinstance(handle.task_id, str)
        assert len(handle.task_id) == 48
        result = await handle.result()
    assert text(result) == "slept 0.05"
    assert result["resultType"] == "complete"


async def test_a_tool_error_is_the_result_as_a_call_returns_it(connect: Connect) -> None:
    async with connect() as client:
        handle = await client.call_tool("tool_error", task=True)
        result = await handle.result()
    assert result["isError"] is True
    assert text(result) == "could not do it"


async def test_a_failed_task_raises_its_error_as_a_failed_call_does(connect: Connect) -> None:
    async with connect() as client:
        handle = await client.call_tool("protocol_error", task=True)
        with pytest.raises(MCPError) as raised:
            await handle.result()
    assert (raised.value.code, raised.value.message) == (-32603, "The job crashed")
    assert raised.value.data == {"why": "testing"}


async def test_a_tool_that_never_becomes_a_task_gives_a_finished_handle(connect: Connect) -> None:
    async with connect() as client:
        handle = await client.call_tool("plain", {"text": "now"}, task=True)
        assert handle.task_id is None
        assert text(await handle.result()) == "plain now"
        assert (await handle.status())["status"] == "completed"
        await handle.cancel()  # nothing to cancel: it ended
        assert text(await handle.result()) == "plain now"


async def test_an_error_before_any_task_is_raised_by_the_call(connect: Connect) -> None:
    async with connect() as client:
        with pytest.raises(MCPError) as raised:
            await client.call_tool("no_such_tool", task=True)
    assert raised.value.code == -32602


# -- status and cancel -----------------------------------------------------------------------


async def test_status_while_working_then_cancel(connect: Connect) -> None:
    async with connect() as client:
        handle = await client.call_tool("gated", {"tag": "held"}, task=True)
        working = await until(handle, status="working", statusMessage="waiting for held")
        assert working["taskId"] == handle.task_id
        waiting = asyncio.create_task(handle.result())
        await asyncio.sleep(0.05)
        assert not waiting.done()
        await handle.cancel()
        with pytest.raises(TaskCancelled) as raised:
            await waiting
        assert raised.value.task_id == handle.task_id
        assert str(raised.value) == f"Task {handle.task_id} was cancelled: waiting for held"
        assert (await handle.status())["status"] == "cancelled"


async def test_cancelling_a_task_that_ended_changes_nothing(connect: Connect) -> None:
    async with connect() as client:
        handle = await client.call_tool("sleepy", task=True)
        assert text(await handle.result()) == "slept 0"
        await handle.cancel()
        assert (await handle.status())["status"] == "completed"
        assert text(await handle.result()) == "slept 0"


# -- questions -------------------------------------------------------------------------------


async def test_a_question_is_answered_with_the_clients_handler(connect: Connect) -> None:
    asked: list[dict[str, Any]] = []

    def confirm(params: dict[str, Any]) -> dict[str, Any]:
        asked.append(params)
        return answer_questions(params)

    async with connect(on_elicit=confirm) as client:
        handle = await client.call_tool("confirm", task=True)
        assert text(await handle.result()) == "confirmed"
    assert [params["message"] for params in asked] == ["Go ahead?"]


async def test_questions_asked_at_once_are_answered_together(connect: Connect) -> None:
    async with connect(on_elicit=answer_questions) as client:
        handle = await client.call_tool("two_questions", task=True)
        assert text(await handle.result()) == "Ada sure=True"


async def test_without_handlers_a_question_waits_for_update(connect: Connect) -> None:
    async with connect(capabilities={"elicitation": {"form": {}}}) as client:
        handle = await client.call_tool("confirm", task=True)
        waiting = asyncio.create_task(handle.result())
        parked = await until(handle, status="input_required")
        await asyncio.sleep(0.05)  # several polls: none of them answers
        assert not waiting.done()
        assert (await handle.status())["status"] == "input_required"
        (key,) = parked["inputRequests"]
        await handle.update({key: {"action": "accept", "content": {"confirm": False}}})
        assert text(await waiting) == "declined"


async def test_questions_before_the_task_are_rounds_of_the_call(connect: Connect) -> None:
    async with connect(on_elicit=answer_questions) as client:
        handle = await client.call_tool("ask_then_work", task=True)
        assert handle.task_id is not None
        assert text(await handle.result()) == "done for Ada"


async def test_questions_before_the_task_without_handlers_say_what_to_do(connect: Connect) -> None:
    async with connect(capabilities={"elicitation": {"form": {}}}) as client:
        with pytest.raises(MethodNotFound) as raised:
            await client.call_tool("ask_then_work", task=True)
    assert raised.value.message == (
        "The server asks elicitation/create before it starts the task, and this client has "
        "no handler to answer: give the Client on_elicit, on_sample, on_list_roots or on_input"
    )


async def test_questions_the_client_did_not_declare_are_the_servers_32021(connect: Connect) -> None:
    async with connect() as client:
        with pytest.raises(MCPError) as raised:
            await client.call_tool("ask_then_work", task=True)
    assert raised.value.code == -32021
    assert raised.value.data == {"requiredCapabilities": {"elicitation": {"form": {}}}}


# -- following notifications ---------------------------------------------------------------


@pytest.fixture(scope="module")
def slow_polling_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HTTPServerProcess]:
    with served_tasks(tmp_path_factory.mktemp("slow-poll"), "memory://", SLOW_POLL_MS) as srv:
        yield srv


@pytest.fixture(params=["memory", pytest.param("http", marks=pytest.mark.subprocess)])
def connect_slow(request: pytest.FixtureRequest) -> Connect:
    """A server whose tasks ask for a minute between polls."""
    if request.param == "memory":
        return in_memory("memory://", SLOW_POLL_MS)
    server: HTTPServerProcess = request.getfixturevalue("slow_polling_server")
    return over_http(server.url)


async def test_listening_follows_the_tasks_notifications(connect_slow: Connect) -> None:
    async with connect_slow(on_elicit=answer_questions) as client:
        handle = await client.call_tool("confirm", task=True)
        async with asyncio.timeout(5):  # a poll would wait a minute
            assert text(await handle.result(listen=True)) == "confirmed"
        handle = await client.call_tool("sleepy", {"seconds": 0.05}, task=True)
        async with asyncio.timeout(5):
            assert text(await handle.result(listen=True)) == "slept 0.05"


async def test_listening_sees_a_cancellation(connect_slow: Connect) -> None:
    async with connect_slow() as client:
        handle = await client.call_tool("gated", {"tag": "listened"}, task=True)
        waiting = asyncio.create_task(handle.result(listen=True))
        await until(handle, status="working")
        await handle.cancel()
        async with asyncio.timeout(5):
            with pytest.raises(TaskCancelled):
                await waiting


# -- servers that offer no task ---------------------------------------------------------------


async def test_a_server_without_the_extension_answers_the_call() -> None:
    server = Server("no-tasks")

    @server.tool
    def echo(text: str) -> str:
        return text

    async with Client(server) as client:
        handle = await client.call_tool("echo", {"text": "hi"}, task=True)
        assert handle.task_id is None
        assert text(await handle.result()) == "hi"


@pytest.mark.subprocess
async def test_a_handshake_era_client_of_an_mcpserve_server_gets_the_answer(tmp_path: Path) -> None:
    """mcpserve offers no 2025-11-25 tasks, so the call goes as an ordinary one."""
    with served_tasks(tmp_path, "memory://", FAST_POLL_MS) as server:
        async with Client(server.url, protocol_version="2025-11-25", timeout=TIMEOUT) as client:
            assert client.legacy
            handle = await client.call_tool("sleepy", {"seconds": 0.01}, task=True)
            assert handle.task_id is None
            assert text(await handle.result()) == "slept 0.01"
