"""The client's tasks against a 2025-11-25 server: the handshake era's own tasks
(``task`` on ``tools/call``, ``tasks/get``, ``tasks/result``, ``tasks/cancel``).

The peer is the official TypeScript SDK's server (``tests/support/ts_legacy_tasks``: the SDK pinned
in ``package.json`` and its lock file, installed once with ``npm ci`` into
``$MCPSERVE_TS_LEGACY_TASKS_HOME`` or ``~/.cache/mcpserve/ts-legacy-tasks``), which
implements that era's tasks, run over stdio and over Streamable HTTP on 127.0.0.1. Its tasks
ask for 10 ms between polls. Without node or npm these tests fail, naming what to install.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import socket
import subprocess
import time
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import Any

import pytest

import npm_cache
from mcpserve import Client, TaskCancelled, TaskHandle
from wire_helpers import SUPPORT, TIMEOUT, free_port, stop_process

pytestmark = [pytest.mark.subprocess, pytest.mark.node]

SOURCE = SUPPORT / "ts_legacy_tasks"
Connect = Callable[..., AbstractAsyncContextManager[Client]]
RELATED_TASK = "io.modelcontextprotocol/related-task"


def home() -> Path:
    configured = os.environ.get("MCPSERVE_TS_LEGACY_TASKS_HOME")
    return Path(configured) if configured else Path.home() / ".cache/mcpserve/ts-legacy-tasks"


@pytest.fixture(scope="module")
def server_script() -> Path:
    """``server.mjs`` beside the installed SDK, where ESM resolves it."""
    node = npm_cache.node_binary(20, "the 2025-11-25 tasks tests")
    assert node
    installed = npm_cache.npm_ci(SOURCE, home(), needed_by="the 2025-11-25 tasks tests",
                                 installed=Path("node_modules/@modelcontextprotocol/sdk/package.json"),
                                 extra_files=("server.mjs",))  # fmt: skip
    return installed / "server.mjs"


@pytest.fixture(scope="module")
def http_url(server_script: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    node = shutil.which("node")
    assert node is not None
    port = free_port()
    log = tmp_path_factory.mktemp("ts-legacy-tasks") / "server.log"
    with log.open("wb") as output:
        process = subprocess.Popen([node, str(server_script), "--http", str(port)],
                                   stdin=subprocess.DEVNULL, stdout=output,
                                   stderr=subprocess.STDOUT)  # fmt: skip
    try:
        deadline = time.monotonic() + TIMEOUT
        while True:
            assert process.poll() is None, log.read_text()
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert time.monotonic() < deadline, (
                    f"the TypeScript server did not listen:\n{log.read_text()}"
                )
                time.sleep(0.05)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        stop_process(process)


@pytest.fixture(params=["stdio", "http"])
def connect(request: pytest.FixtureRequest, server_script: Path) -> Connect:
    """``async with connect(**client_options) as client``, at 2025-11-25."""

    @contextlib.asynccontextmanager
    async def connected(**options: Any) -> AsyncIterator[Client]:
        options = {"protocol_version": "2025-11-25", "timeout": TIMEOUT, **options}
        if request.param == "stdio":
            client = Client.stdio([shutil.which("node") or "node", str(server_script)], **options)
        else:
            client = Client(request.getfixturevalue("http_url"), **options)
        async with client:
            assert client.legacy
            yield client

    return connected


def text(result: dict[str, Any]) -> str:
    (block,) = result["content"]
    return block["text"]  # type: ignore[no-any-return]


async def until(handle: TaskHandle, **expected: str) -> dict[str, Any]:
    async with asyncio.timeout(TIMEOUT):
        while True:
            task = await handle.status()
            if all(task.get(key) == value for key, value in expected.items()):
                return task
            await asyncio.sleep(0.01)


async def test_a_task_gives_a_handle_whose_result_is_the_calls(connect: Connect) -> None:
    async with connect() as client:
        handle = await client.call_tool("sleepy", {"ms": 50}, task=True)
        assert isinstance(handle.task_id, str)
        result = await handle.result()
    assert text(result) == "slept 50"
    assert result["_meta"][RELATED_TASK] == {"taskId": handle.task_id}


async def test_a_failed_task_gives_the_tool_error_as_a_call_does(connect: Connect) -> None:
    async with connect() as client:
        handle = await client.call_tool("failing", task=True)
        assert (await until(handle, status="failed"))["taskId"] == handle.task_id
        result = await handle.result()
    assert result["isError"] is True
    assert text(result) == "could not do it"


async def test_a_tool_without_tasks_is_called_and_answered_at_once(connect: Connect) -> None:
    async with connect() as client:
        handle = await client.call_tool("plain", {"text": "now"}, task=True)
        assert handle.task_id is None
        assert text(await handle.result()) == "plain now"


async def test_status_while_working_then_cancel(connect: Connect) -> None:
    async with connect() as client:
        handle = await client.call_tool("gated", task=True)
        working = await until(handle, statusMessage="waiting for a gate that never opens")
        assert working["status"] == "working"
        waiting = asyncio.create_task(handle.result())
        await asyncio.sleep(0.05)
        assert not waiting.done()
        await handle.cancel()
        with pytest.raises(TaskCancelled) as raised:
            await waiting
        assert raised.value.task_id == handle.task_id
        assert raised.value.status_message == "Client cancelled task execution."
        await handle.cancel()  # refused by the server (-32602, it has ended): nothing happens
        assert (await handle.status())["status"] == "cancelled"


async def test_a_question_is_answered_with_the_clients_handler(connect: Connect) -> None:
    asked: list[dict[str, Any]] = []

    def confirm(params: dict[str, Any]) -> dict[str, Any]:
        asked.append(params)
        return {"action": "accept", "content": {"confirm": True}}

    async with connect(on_elicit=confirm) as client:
        handle = await client.call_tool("confirm", task=True)
        assert text(await handle.result()) == "confirmed"
    assert [params["message"] for params in asked] == ["Go ahead?"]
    assert asked[0]["_meta"][RELATED_TASK] == {"taskId": handle.task_id}


async def test_without_handlers_a_question_waits(connect: Connect) -> None:
    async with connect(capabilities={"elicitation": {"form": {}}}) as client:
        handle = await client.call_tool("confirm", task=True)
        waiting = asyncio.create_task(handle.result())
        await until(handle, status="input_required")
        await asyncio.sleep(0.1)  # ten polls: none of them asks tasks/result
        assert not waiting.done()
        with pytest.raises(RuntimeError) as raised:
            await handle.update({"any": {"action": "decline"}})
        assert str(raised.value) == (
            "2025-11-25 tasks have no tasks/update: the server asks its questions as requests "
            "of its own, which the client's input handlers answer"
        )
        await handle.cancel()
        with pytest.raises(TaskCancelled):
            await waiting
