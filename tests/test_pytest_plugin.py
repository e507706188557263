"""The pytest plugin (``mcpserve.testing``) and the switch behind it, ``raise_exceptions``.

The plugin's tests write a tiny project (a server module and its tests) and run pytest on it
with ``pytester``, as a project using mcpserve would.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

import httpx2
import pytest

from mcpserve import Client, Context, MCPError, Server, ToolError
from mcpserve.protocol import constants as c
from mcpserve.testing import load_server, serve_http

pytest_plugins = ["pytester"]

# ---------------------------------------------------------------------- raise_exceptions


def failing_server(**options: Any) -> Server:
    server = Server("failing", **options)

    @server.tool
    def divide(a: int, b: int) -> float:
        return a / b

    @server.tool
    async def refuse() -> str:
        raise ToolError("Say please.")

    @server.tool
    def unknown() -> str:
        raise MCPError("No such thing", code=-32602)

    @server.resource("notes://broken")
    def broken() -> str:
        raise KeyError("the note")

    @server.prompt
    def confused() -> str:
        raise LookupError("no words")

    @server.method("vendor/explode")
    def explode() -> dict[str, str]:
        raise RuntimeError("boom")

    @server.notification("vendor/ping")
    def ping() -> None:
        raise ValueError("pong")

    @server.tool(blocking=True)
    def in_a_thread() -> str:
        raise OSError("disk gone")

    @server.tool(task="required")
    async def background() -> str:
        raise ArithmeticError("later")

    return server


async def test_a_failing_tool_raises_its_own_exception_through_the_in_memory_client() -> None:
    async with Client(failing_server(raise_exceptions=True)) as client:
        with pytest.raises(ZeroDivisionError, match="division by zero") as caught:
            await client.call_tool("divide", {"a": 1, "b": 0})
    assert "divide" in [entry.name for entry in caught.traceback]  # the tool's own frame


@pytest.mark.parametrize(
    ("call", "raised"),
    [
        (lambda client: client.read_resource("notes://broken"), KeyError),
        (lambda client: client.get_prompt("confused"), LookupError),
        (lambda client: client.request("vendor/explode"), RuntimeError),
        (lambda client: client.notify("vendor/ping"), ValueError),
        (lambda client: client.call_tool("in_a_thread"), OSError),
    ],
    ids=["resource", "prompt", "custom method", "notification", "blocking tool"],
)
async def test_every_kind_of_handler_raises_its_own_exception(
    call: Any, raised: type[Exception]
) -> None:
    async with Client(failing_server(raise_exceptions=True)) as client:
        with pytest.raises(raised):
            await call(client)


async def test_a_failing_middleware_raises_its_own_exception() -> None:
    server = failing_server(raise_exceptions=True)

    @server.middleware
    async def gatekeeper(ctx: Context, call_next: Any) -> Any:
        raise PermissionError("not today")

    async with Client(server) as client:
        with pytest.raises(PermissionError, match="not today"):
            await client.list_tools()


async def test_tool_errors_protocol_errors_and_bad_arguments_stay_answers() -> None:
    async with Client(failing_server(raise_exceptions=True)) as client:
        refused = await client.call_tool("refuse")
        assert refused["isError"] is True
        assert refused["content"] == [{"type": "text", "text": "Say please."}]
        with pytest.raises(MCPError) as caught:
            await client.call_tool("unknown")
        assert (caught.value.code, caught.value.message) == (-32602, "No such thing")
        invalid = await client.call_tool("divide", {"a": "one", "b": 2})
        assert invalid["isError"] is True


async def finished_task(server: Server) -> dict[str, Any]:
    tasks = {"extensions": {"io.modelcontextprotocol/tasks": {}}}
    async with Client(server, capabilities=tasks) as client:
        created = await client.call_tool("background")
        for _ in range(500):
            task = await client.request("tasks/get", {"taskId": created["taskId"]})
            if task["status"] != "working":
                return task
            await asyncio.sleep(0.01)
    raise AssertionError("the task did not finish")


async def test_a_task_tools_failure_is_its_tasks_with_the_switch_as_without() -> None:
    # The request was answered when the task was created: no one awaits the failure.
    raising, masking = [await finished_task(failing_server(raise_exceptions=raising))
                        for raising in (True, False)]  # fmt: skip
    assert raising["status"] == masking["status"] == "completed"
    assert raising["result"]["isError"] is masking["result"]["isError"] is True


async def test_without_the_switch_failures_stay_masked() -> None:
    async with Client(failing_server()) as client:
        result = await client.call_tool("divide", {"a": 1, "b": 0})
        with pytest.raises(MCPError) as caught:
            await client.read_resource("notes://broken")
    assert result["isError"] is True
    assert result["content"][0]["text"].startswith("Tool divide failed unexpectedly (ref ")
    assert caught.value.code == c.INTERNAL_ERROR
    assert caught.value.message.startswith("Internal error (ref ")


def divide_over_http(url: str) -> httpx2.Response:
    meta = {
        c.META_PROTOCOL_VERSION: c.LATEST_VERSION,
        c.META_CLIENT_INFO: {"name": "test", "version": "1"},
        c.META_CLIENT_CAPABILITIES: {},
    }
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "divide", "arguments": {"a": 1, "b": 0}, "_meta": meta}}  # fmt: skip
    headers = {"accept": "application/json, text/event-stream",
               "mcp-protocol-version": c.LATEST_VERSION, "mcp-method": "tools/call",
               "mcp-name": "divide"}  # fmt: skip
    return httpx2.post(url, json=body, headers=headers, timeout=10)


def test_over_http_a_server_raising_exceptions_still_answers_with_the_masked_result() -> None:
    with serve_http(failing_server(raise_exceptions=True)) as url:
        reply = divide_over_http(url)
    assert reply.status_code == 200
    result = reply.json()["result"]
    assert result["isError"] is True
    assert result["content"][0]["text"].startswith("Tool divide failed unexpectedly (ref ")


def test_serve_http_stops_serving_on_exit_and_frees_its_port() -> None:
    with serve_http(failing_server()) as url:
        assert url.startswith("http://127.0.0.1:")
        assert url.endswith("/mcp")
    with pytest.raises(httpx2.ConnectError):
        divide_over_http(url)


def test_serve_http_reports_a_server_whose_lifespan_fails_instead_of_waiting() -> None:
    @contextlib.asynccontextmanager
    async def lifespan(server: Server) -> AsyncIterator[None]:
        raise ConnectionRefusedError("no database")
        yield

    with (
        pytest.raises(RuntimeError, match="stopped before serving: see its log"),
        serve_http(Server("doomed", lifespan=lifespan), timeout=5),
    ):
        pass


def test_load_server_takes_a_server_or_its_import_path_and_refuses_anything_else() -> None:
    server = Server("here")
    assert load_server(server) is server
    assert isinstance(load_server("test_pytest_plugin:MODULE_SERVER"), Server)
    with pytest.raises(TypeError, match="is not a mcpserve Server"):
        load_server("test_pytest_plugin:failing_server")


MODULE_SERVER = Server("module")

# ---------------------------------------------------------------------- the plugin, in use

APP = '''
from contextlib import asynccontextmanager

from mcpserve import Context, Server

EVENTS = []


@asynccontextmanager
async def lifespan(server):
    EVENTS.append("start")
    yield {"greeting": "hello"}
    EVENTS.append("stop")


server = Server("calc", lifespan=lifespan)


@server.tool
def divide(a: int, b: int) -> float:
    """Divide a by b."""
    return a / b


@server.tool
def greet(ctx: Context) -> str:
    return ctx.lifespan_state["greeting"]
'''

INI = """
[pytest]
asyncio_mode = {mode}
asyncio_default_fixture_loop_scope = function
filterwarnings = error
addopts = --strict-markers -p no:cacheprovider
pythonpath = .
"""


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    """A project with ``calc.py`` (a server with a lifespan) and pytest-asyncio's auto mode."""
    pytester.makeini(INI.format(mode="auto"))
    pytester.makepyfile(calc=APP)
    return pytester


def test_a_marked_test_gets_a_client_to_the_server_an_object_or_import_path_names(
    project: pytest.Pytester,
) -> None:
    project.makepyfile(
        test_calc="""
        import pytest

        import calc


        @pytest.mark.mcp_server("calc:server")
        async def test_by_import_path(mcp_client):
            result = await mcp_client.call_tool("divide", {"a": 6, "b": 3})
            assert result["structuredContent"] == 2.0


        @pytest.mark.mcp_server(calc.server)
        async def test_by_object(mcp_client, mcp_server):
            assert mcp_server is calc.server
            assert [tool["name"] for tool in await mcp_client.list_tools()] == ["divide", "greet"]
        """
    )
    project.runpytest().assert_outcomes(passed=2)


def test_the_client_fixture_runs_the_lifespan_around_each_test(project: pytest.Pytester) -> None:
    project.makepyfile(
        test_calc="""
        import pytest

        import calc

        pytestmark = pytest.mark.mcp_server(calc.server)


        async def test_first(mcp_client):
            assert (await mcp_client.call_tool("greet"))["content"][0]["text"] == "hello"
            assert calc.EVENTS == ["start"]


        async def test_second(mcp_client):
            assert calc.EVENTS == ["start", "stop", "start"]
        """
    )
    project.runpytest().assert_outcomes(passed=2)


def test_a_failing_tool_fails_the_test_with_its_own_exception_and_traceback(
    project: pytest.Pytester,
) -> None:
    project.makepyfile(
        test_calc="""
        import pytest


        @pytest.mark.mcp_server("calc:server")
        async def test_divides_by_zero(mcp_client):
            await mcp_client.call_tool("divide", {"a": 1, "b": 0})


        @pytest.mark.mcp_server("calc:server")
        async def test_expects_it(mcp_client):
            with pytest.raises(ZeroDivisionError):
                await mcp_client.call_tool("divide", {"a": 1, "b": 0})


        @pytest.mark.mcp_server("calc:server", raise_exceptions=False)
        async def test_sees_what_a_client_sees(mcp_client):
            result = await mcp_client.call_tool("divide", {"a": 1, "b": 0})
            assert result["isError"] is True
            assert "failed unexpectedly (ref" in result["content"][0]["text"]
        """
    )
    result = project.runpytest()
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines(
        [
            "*_ test_divides_by_zero _*",
            ">       return a / b",
            "E       ZeroDivisionError: division by zero",
            "calc.py:*: ZeroDivisionError",
        ]
    )
    result.stdout.no_fnmatch_line("*: in reraise_unexpected")  # the re-raise itself is hidden


def test_a_project_may_choose_the_server_and_the_switch_by_overriding_fixtures(
    project: pytest.Pytester,
) -> None:
    project.makeconftest(
        """
        import pytest

        from mcpserve import Server


        @pytest.fixture
        def mcp_server():
            server = Server("made-here")

            @server.tool
            def crash() -> str:
                raise RuntimeError("crashed")

            return server


        @pytest.fixture
        def mcp_raise_exceptions():
            return False
        """
    )
    project.makepyfile(
        test_here="""
        async def test_masked(mcp_client):
            result = await mcp_client.call_tool("crash")
            assert result["isError"] is True
        """
    )
    project.runpytest().assert_outcomes(passed=1)


def test_a_test_without_a_server_is_told_how_to_name_one(project: pytest.Pytester) -> None:
    project.makepyfile(
        test_calc="""
        async def test_which(mcp_client):
            pass
        """
    )
    result = project.runpytest()
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*Which server? Mark the test @pytest.mark.mcp_server(server)*"])


def test_the_client_fixture_works_in_pytest_asyncio_strict_mode(pytester: pytest.Pytester) -> None:
    pytester.makeini(INI.format(mode="strict"))
    pytester.makepyfile(calc=APP)
    pytester.makepyfile(
        test_calc="""
        import pytest


        @pytest.mark.asyncio
        @pytest.mark.mcp_server("calc:server")
        async def test_strict(mcp_client):
            assert (await mcp_client.call_tool("greet"))["content"][0]["text"] == "hello"
        """
    )
    pytester.runpytest().assert_outcomes(passed=1)


def test_an_unmarked_async_test_of_a_server_runs_in_strict_mode(pytester: pytest.Pytester) -> None:
    pytester.makeini(INI.format(mode="strict"))
    pytester.makepyfile(calc=APP)
    pytester.makepyfile(
        test_calc="""
        import pytest

        pytestmark = pytest.mark.mcp_server("calc:server")


        async def test_client(mcp_client):
            assert (await mcp_client.call_tool("greet"))["content"][0]["text"] == "hello"


        async def test_named_server(mcp_server):
            assert mcp_server.name == "calc"
        """,
        test_other="""
        async def test_not_about_a_server():
            pass
        """,
    )
    result = pytester.runpytest()
    # The plugin's tests run; a coroutine that is not about a server is left to strict
    # mode, which refuses to run it unmarked.
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines(["FAILED test_other.py::test_not_about_a_server*"])


def test_the_http_fixture_serves_the_server_on_a_free_port_for_one_test(
    project: pytest.Pytester,
) -> None:
    project.makepyfile(
        test_calc="""
        import httpx2
        import pytest

        import calc

        URLS = []


        def call_divide(url):
            meta = {
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientInfo": {"name": "test", "version": "1"},
                "io.modelcontextprotocol/clientCapabilities": {},
            }
            params = {"name": "divide", "arguments": {"a": 6, "b": 3}, "_meta": meta}
            headers = {
                "accept": "application/json, text/event-stream",
                "mcp-protocol-version": "2026-07-28",
                "mcp-method": "tools/call",
                "mcp-name": "divide",
            }
            body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}
            return httpx2.post(url, json=body, headers=headers, timeout=10)


        @pytest.mark.mcp_server("calc:server")
        def test_served(mcp_http_url):
            URLS.append(mcp_http_url)
            assert mcp_http_url.startswith("http://127.0.0.1:")
            assert mcp_http_url.endswith("/mcp")
            reply = call_divide(mcp_http_url)
            assert reply.status_code == 200
            assert reply.json()["result"]["structuredContent"] == 2.0
            assert calc.EVENTS == ["start"]


        def test_stopped_after_the_test():
            assert calc.EVENTS == ["start", "stop"]
            with pytest.raises(httpx2.ConnectError):
                call_divide(URLS[0])
        """
    )
    project.runpytest().assert_outcomes(passed=2)


@pytest.mark.subprocess
def test_a_project_that_never_uses_the_plugin_is_unaffected(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\naddopts = --strict-markers -p no:cacheprovider\n")
    pytester.makepyfile(
        test_plain="""
        import sys


        def test_plain(pytestconfig):
            assert pytestconfig.pluginmanager.has_plugin("mcpserve")
            # Loaded, and nothing heavy with it: the fixtures import what they use.
            assert "mcpserve.testing" in sys.modules
            assert "uvicorn" not in sys.modules
            assert "mcpserve.client" not in sys.modules
        """
    )
    # A fresh process: this one has imported everything long ago.
    pytester.runpytest_subprocess().assert_outcomes(passed=1)


def test_the_marker_is_registered(pytester: pytest.Pytester) -> None:
    pytester.makeini(INI.format(mode="auto"))
    result = pytester.runpytest("--markers")
    result.stdout.fnmatch_lines(["@pytest.mark.mcp_server(server, *, raise_exceptions=True):*"])
