"""The proxy with the official SDKs on either side.

Upstream: the official Python SDK's ``MCPServer``
(``tests/support/servers/proxy_upstream_official.py``) over stdio and over Streamable HTTP,
in each era (it speaks both: the proxy pins the handshake era, or negotiates 2026-07-28).
Its ``greet`` asks with a ``Resolve`` dependency, which the SDK sends as an
``input_required`` round or as an ``elicitation/create`` request, depending on the era.

Downstream, over HTTP: the official Python client in ``legacy`` and ``2026-07-28`` mode,
and the official TypeScript client (``tests/support/ts_client.py``) in ``legacy`` and ``auto``
mode, against the official upstream and against an mcpserve one.
"""

from __future__ import annotations

import asyncio
import itertools
import sys
import time
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from mcp import Client as OfficialClient
from mcp.types import ElicitResult, TextContent, TextResourceContents

from mcpserve import Server
from mcpserve.testing import serve_http
from ts_client import ts_client
from wire_helpers import ROOT, SERVERS, TIMEOUT, HTTPServerProcess, http_server_process

pytestmark = pytest.mark.subprocess

OFFICIAL = [sys.executable, str(SERVERS / "proxy_upstream_official.py")]
MCPSERVE = [sys.executable, str(SERVERS / "proxy_upstream.py")]
LEGACY = "2025-11-25"
UPSTREAMS = [("stdio", None), ("stdio", LEGACY), ("http", None), ("http", LEGACY)]
_names = itertools.count()


@pytest.fixture(scope="module")
def official_http(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HTTPServerProcess]:
    with http_server_process(tmp_path_factory.mktemp("official-upstream"), args=OFFICIAL) as up:
        yield up


@pytest.fixture(scope="module", params=UPSTREAMS, ids=lambda p: f"{p[0]}-{p[1] or 'modern'}")
def proxy_url(request: pytest.FixtureRequest) -> Iterator[str]:
    transport, version = request.param
    target = OFFICIAL if transport == "stdio" else request.getfixturevalue("official_http").url
    with serve_http(Server.proxy(target, protocol_version=version, cwd=str(ROOT))) as url:
        yield url


@pytest.fixture(params=["legacy", "2026-07-28"])
def mode(request: pytest.FixtureRequest) -> str:
    return request.param  # type: ignore[no-any-return]


@asynccontextmanager
async def official(url: str, mode: str, **options: Any) -> AsyncIterator[OfficialClient]:
    async with OfficialClient(url, mode=mode, read_timeout_seconds=TIMEOUT, **options) as client:
        yield client


def only_text(result: Any) -> str:
    (block,) = result.content
    assert isinstance(block, TextContent)
    return block.text


async def eventually(check: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + TIMEOUT
    while not check():
        assert time.monotonic() < deadline, f"no {what} within {TIMEOUT} s"
        await asyncio.sleep(0.02)


# ----------------------------------------------------------------------------- the Python SDK


async def test_the_official_client_lists_and_calls_through_the_proxy(
    proxy_url: str, mode: str
) -> None:
    async with official(proxy_url, mode) as client:
        assert client.protocol_version == (LEGACY if mode == "legacy" else "2026-07-28")
        names = {tool.name for tool in (await client.list_tools()).tools}
        assert {"echo", "greet", "progress", "grow", "wait"} <= names
        assert only_text(await client.call_tool("echo", {"text": "héllo"})) == "héllo"
        read = await client.read_resource("file:///motd.txt")
        (contents,) = read.contents
        assert isinstance(contents, TextResourceContents)
        assert contents.text == "official message of the day"
        prompt = await client.get_prompt("welcome", {"who": "Ada"})
        assert isinstance(prompt.messages[0].content, TextContent)
        assert prompt.messages[0].content.text == "Welcome, Ada!"


async def test_the_official_upstreams_question_reaches_the_official_client(
    proxy_url: str, mode: str
) -> None:
    asked: list[str] = []

    async def elicit(context: Any, params: Any) -> ElicitResult:
        asked.append(params.message)
        return ElicitResult(action="accept", content={"name": "Ada"})

    async with official(proxy_url, mode, elicitation_callback=elicit) as client:
        assert only_text(await client.call_tool("greet", {})) == "Hello, Ada!"
    assert asked == ["What is your name?"]


async def test_the_official_upstreams_progress_reaches_the_official_client(
    proxy_url: str, mode: str
) -> None:
    seen: list[tuple[float, float | None, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append((progress, total, message))

    async with official(proxy_url, mode) as client:
        result = await client.call_tool("progress", {"steps": 3}, progress_callback=on_progress)
    assert only_text(result) == "3 steps"
    assert seen == [(1, 3, "step 1"), (2, 3, "step 2"), (3, 3, "step 3")]


async def test_the_official_upstreams_list_change_reaches_the_official_client(
    proxy_url: str, mode: str
) -> None:
    name = f"leaf{next(_names)}"
    if mode == "legacy":
        notes: list[str] = []

        async def on_message(message: Any) -> None:
            method = getattr(message, "method", None)
            if isinstance(method, str):
                notes.append(method)

        async with official(proxy_url, mode, message_handler=on_message) as client:
            await client.call_tool("grow", {"name": name})
            await eventually(lambda: "notifications/tools/list_changed" in notes, "list_changed")
            assert name in {tool.name for tool in (await client.list_tools()).tools}
        return
    async with official(proxy_url, mode) as client:
        async with client.listen(tools_list_changed=True) as subscription:
            await client.call_tool("grow", {"name": name})
            async with asyncio.timeout(TIMEOUT):
                async for _ in subscription:
                    break
        assert name in {tool.name for tool in (await client.list_tools()).tools}
        assert only_text(await client.call_tool(name, {})) == f"I am {name}"


# ----------------------------------------------------------------------------- the TypeScript SDK


@pytest.fixture(scope="module")
def mcpserve_proxy_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """An mcpserve upstream over stdio in the handshake era, behind the proxy."""
    with serve_http(Server.proxy(MCPSERVE, protocol_version=LEGACY, cwd=str(ROOT))) as url:
        yield url


@pytest.mark.parametrize("ts_mode", ["legacy", "auto"])
async def test_the_typescript_client_drives_the_proxy_of_the_official_upstream(
    official_http: HTTPServerProcess, ts_install: tuple[str, Path], ts_mode: str
) -> None:
    with serve_http(Server.proxy(official_http.url, name="ts-proxy")) as url:
        async with ts_client(*ts_install) as ts:
            connected = await ts.send("connect", url=url, mode=ts_mode, answer={"name": "Tess"})
            legacy = ts_mode == "legacy"
            assert connected["era"] == ("legacy" if legacy else "modern")
            assert connected["protocolVersion"] == (LEGACY if legacy else "2026-07-28")
            assert connected["server"]["name"] == "ts-proxy"
            assert {"echo", "greet"} <= set((await ts.send("listTools"))["names"])
            echoed = await ts.send("call", name="echo", arguments={"text": "hi"})
            assert (echoed["isError"], echoed["texts"]) == (False, ["hi"])
            greeted = await ts.send("call", name="greet", arguments={})
            assert greeted["texts"] == ["Hello, Tess!"]
            assert (await ts.send("take"))["asked"] == ["What is your name?"]
            await ts.send("close")


@pytest.mark.parametrize("ts_mode", ["legacy", "auto"])
async def test_the_typescript_client_hears_a_handshake_era_upstreams_update_through_the_proxy(
    mcpserve_proxy_url: str, ts_install: tuple[str, Path], ts_mode: str
) -> None:
    async with ts_client(*ts_install) as ts:
        await ts.send("connect", url=mcpserve_proxy_url, mode=ts_mode, answer={"name": "Tess"})
        greeted = await ts.send("call", name="greet", arguments={})
        assert greeted["texts"] == ["Hello, Tess!"]
        if ts_mode == "legacy":
            await ts.send("subscribe", uri="file:///a.txt")
        else:
            listened = await ts.send("listen", uri="file:///a.txt")
            assert listened["honored"]["resourceSubscriptions"] == ["file:///a.txt"]
        await ts.send("call", name="touch", arguments={"uri": "file:///a.txt"})
        updated = await ts.send("waitUpdated", uri="file:///a.txt", timeoutMs=10_000)
        assert "file:///a.txt" in updated["updated"]
        await ts.send("close")
