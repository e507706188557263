"""A plain function that holds the event loop is named once, with the fix; nothing else is."""

from __future__ import annotations

import asyncio
import logging
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import orjson
import pytest

from mcpserve import Server
from wire_helpers import ROOT, VERSION, child_env

HOLD = 0.25  # seconds a "blocking" test function sleeps
THRESHOLD = 0.1


def warnings_in(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [
        record.getMessage()
        for record in caplog.records
        if record.name == "mcpserve" and "held the event loop" in record.getMessage()
    ]


async def test_a_plain_tool_that_blocks_is_named_once_with_the_fix(
    connect: Any, caplog: pytest.LogCaptureFixture
) -> None:
    server = Server("t")

    @server.tool
    def lookup(isbn: str) -> str:
        time.sleep(HOLD)
        return isbn

    async with connect(server) as client:
        await client.call_tool("lookup", {"isbn": "1"})
        await client.call_tool("lookup", {"isbn": "2"})
    [warning] = warnings_in(caplog)
    assert warning.startswith("The plain function ")
    assert "lookup (Tool 'lookup') held the event loop for 0.2" in warning
    assert "blocking=True" in warning
    assert "async def" in warning


async def test_quick_plain_blocking_and_async_functions_say_nothing(
    connect: Any, caplog: pytest.LogCaptureFixture
) -> None:
    server = Server("t")

    @server.tool
    def quick() -> str:
        return "ok"

    @server.tool(blocking=True)
    def in_the_pool() -> str:
        time.sleep(HOLD)
        return "ok"

    @server.tool
    async def waits() -> str:
        await asyncio.sleep(HOLD)
        return "ok"

    async with connect(server) as client:
        for name in ("quick", "in_the_pool", "waits"):
            assert (await client.call_tool(name, {}))["content"][0]["text"] == "ok"
    assert warnings_in(caplog) == []


async def test_every_inline_kind_is_watched(connect: Any, caplog: pytest.LogCaptureFixture) -> None:
    server = Server("t")

    @server.prompt
    def brief() -> str:
        time.sleep(HOLD)
        return "hello"

    @server.resource("note://one")
    def one() -> str:
        time.sleep(HOLD)
        return "one"

    @server.tool
    def fails() -> str:
        time.sleep(HOLD)
        raise ValueError("late")

    async with connect(server) as client:
        await client.get_prompt("brief")
        await client.read_resource("note://one")
        assert (await client.call_tool("fails", {}))["isError"] is True
    named = warnings_in(caplog)
    assert [warning.split(")")[0] for warning in named] == [
        "The plain function brief (Prompt 'brief'",
        "The plain function one (Resource 'note://one'",
        "The plain function fails (Tool 'fails'",
    ]


async def test_a_plain_function_under_middleware_is_watched_on_the_awaited_path(
    connect: Any, caplog: pytest.LogCaptureFixture
) -> None:
    server = Server("t")

    @server.middleware
    async def passing(ctx: Any, call_next: Any) -> Any:
        return await call_next()

    @server.tool
    def lookup() -> str:
        time.sleep(HOLD)
        return "ok"

    async with connect(server) as client:
        await client.call_tool("lookup", {})
    [warning] = warnings_in(caplog)
    assert "lookup (Tool 'lookup')" in warning


async def test_a_mounted_servers_plain_function_is_watched_by_the_parent(
    connect: Any, caplog: pytest.LogCaptureFixture
) -> None:
    child = Server("child")

    @child.tool
    def lookup() -> str:
        time.sleep(HOLD)
        return "ok"

    parent = Server("parent", blocking_warning_seconds=None)
    parent.mount(child, namespace="books")
    async with connect(parent) as client:
        await client.call_tool("books_lookup", {})
    assert warnings_in(caplog) == []  # the parent answers, and its watch is off


async def test_the_threshold_is_the_servers(connect: Any, caplog: pytest.LogCaptureFixture) -> None:
    patient = Server("patient", blocking_warning_seconds=HOLD * 4)
    strict = Server("strict", blocking_warning_seconds=0.01)
    for server in (patient, strict):

        @server.tool
        def lookup() -> str:
            time.sleep(0.05)
            return "ok"

    for server in (patient, strict):
        async with connect(server) as client:
            await client.call_tool("lookup", {})
    [warning] = warnings_in(caplog)  # only the strict server's
    assert "held the event loop for 0.0" in warning


def test_a_threshold_that_is_not_a_positive_number_is_refused() -> None:
    for wrong in (0, -1.0):
        with pytest.raises(ValueError, match="blocking_warning_seconds must be a positive"):
            Server("t", blocking_warning_seconds=wrong)


SERVER = textwrap.dedent(
    """
    import time
    from mcpserve import Server

    server = Server("freezer")

    @server.tool
    def freeze() -> str:
        time.sleep(0.3)
        return "thawed"

    server.run()
    """
)


@pytest.mark.subprocess
async def test_the_warning_reaches_stderr_of_a_stdio_server(tmp_path: Path) -> None:
    script = tmp_path / "freezer.py"
    script.write_text(SERVER)
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        str(script),
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=child_env(),
    )
    assert process.stdin is not None
    assert process.stdout is not None
    meta = {
        "io.modelcontextprotocol/protocolVersion": VERSION,
        "io.modelcontextprotocol/clientCapabilities": {},
    }
    for request_id in (1, 2):
        call = {
            "jsonrpc": "2.0",
            "id": request_id,
            "method": "tools/call",
            "params": {"name": "freeze", "arguments": {}, "_meta": meta},
        }
        process.stdin.write(orjson.dumps(call) + b"\n")
    await process.stdin.drain()
    answers = [orjson.loads(await asyncio.wait_for(process.stdout.readline(), 30)) for _ in "12"]
    assert [answer["result"]["content"][0]["text"] for answer in answers] == ["thawed"] * 2
    process.stdin.close()
    _, stderr = await asyncio.wait_for(process.communicate(), 30)
    assert stderr.decode().count("held the event loop") == 1, stderr.decode()
    assert "The plain function freeze (Tool 'freeze') held the event loop" in stderr.decode()


@pytest.fixture(autouse=True)
def _capture_warnings(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="mcpserve")


def test_the_docs_show_the_warning_as_it_is_written(caplog: pytest.LogCaptureFixture) -> None:
    from mcpserve.server.loop_watch import LoopWatch

    docs = ROOT / "docs"
    for page, name, kind in (
        ("tutorial.md", "count_books", "Tool"),
        ("reference.md", "lookup", "Tool"),
    ):

        def held() -> None: ...

        held.__qualname__ = name
        caplog.clear()
        LoopWatch().held(held, kind, name, 2.0)
        [warning] = warnings_in(caplog)
        assert f"```text\n{warning}\n```" in (docs / page).read_text(), page
