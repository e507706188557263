"""The official ``mcp`` SDK client (2.3) drives our server over stdio and Streamable HTTP.

Each test runs for both transports (a subprocess of ``tests/support/servers/basic.py``; the same
module served by uvicorn on a free 127.0.0.1 port) and both client modes: pinned
``"2026-07-28"`` (no discovery) and ``"auto"`` (``server/discover`` first).
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, MCPError, StdioServerParameters
from mcp.types import (
    ElicitResult,
    PromptReference,
    ResourceTemplateReference,
    TextContent,
    TextResourceContents,
)

from wire_helpers import (
    BASIC,
    ROOT,
    TIMEOUT,
    VERSION,
    HTTPServerProcess,
    http_server_process,
    wait_for_file,
)

pytestmark = pytest.mark.subprocess

MODES = ["2026-07-28", "auto"]
TRANSPORTS = ["stdio", "http"]


@pytest.fixture(scope="module")
def http_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HTTPServerProcess]:
    with http_server_process(tmp_path_factory.mktemp("official-http")) as srv:
        yield srv


@pytest.fixture(params=TRANSPORTS)
def target(request: pytest.FixtureRequest) -> Any:
    if request.param == "stdio":
        return StdioServerParameters(command=sys.executable, args=[str(BASIC)], cwd=str(ROOT))
    server: HTTPServerProcess = request.getfixturevalue("http_server")
    return server.url


@pytest.fixture(params=MODES)
def mode(request: pytest.FixtureRequest) -> str:
    return request.param  # type: ignore[no-any-return]


@asynccontextmanager
async def connected(target: Any, mode: str, **options: Any) -> AsyncIterator[Client]:
    async with Client(target, mode=mode, read_timeout_seconds=TIMEOUT, **options) as client:
        yield client


def only_text(result: Any) -> str:
    assert len(result.content) == 1
    block = result.content[0]
    assert isinstance(block, TextContent)
    return block.text


async def test_connect_and_discover(target: Any, mode: str) -> None:
    async with connected(target, mode) as client:
        assert client.protocol_version == VERSION
        if mode == "auto":
            assert client.server_info is not None
            assert client.server_info.name == "wire-test"
            assert client.server_info.version == "1.2.3"
            assert client.instructions == "A server for wire tests."
            capabilities = client.server_capabilities
            assert capabilities is not None
            assert capabilities.tools is not None
            assert capabilities.prompts is not None
        else:
            assert client.server_info is None
        raw = await asyncio.wait_for(client.session.send_discover(VERSION), TIMEOUT)
        assert VERSION in raw["supportedVersions"]


async def test_tools(target: Any, mode: str) -> None:
    async with connected(target, mode) as client:
        listed = await client.list_tools()
        tools = {tool.name: tool for tool in listed.tools}
        assert {"add", "echo", "execute_sql", "shard", "fail", "deploy"} <= set(tools)
        assert tools["add"].description == "Add two integers."
        assert tools["add"].input_schema["required"] == ["a", "b"]
        assert tools["add"].output_schema is not None
        assert listed.cache_scope in ("public", "private")

        added = await client.call_tool("add", {"a": 2, "b": 3})
        assert added.is_error is False
        assert added.structured_content == {"total": 5}
        assert only_text(added) == '{"total":5}'

        echoed = await client.call_tool("echo", {"text": "héllo wörld"})
        assert only_text(echoed) == "héllo wörld"
        assert echoed.structured_content is None

        # x-mcp-header parameters: over HTTP the client mirrors them in Mcp-Param-* headers.
        sql = await client.call_tool("execute_sql", {"region": "eu-west1", "query": "SELECT 1"})
        assert only_text(sql) == "eu-west1: SELECT 1"
        sql = await client.call_tool("execute_sql", {"region": "zürich", "query": "q"})
        assert only_text(sql) == "zürich: q"
        sharded = await client.call_tool("shard", {"n": 42, "flag": False})
        assert only_text(sharded) == "shard 42 False"

        failed = await client.call_tool("fail", {"reason": "on purpose"})
        assert failed.is_error is True
        assert only_text(failed) == "failed: on purpose"

        invalid = await client.call_tool("add", {"a": "x", "b": 1})
        assert invalid.is_error is True
        assert "a" in only_text(invalid)

        with pytest.raises(MCPError) as caught:
            await client.call_tool("no_such_tool", {})
        assert caught.value.code == -32602
        assert "no_such_tool" in caught.value.message


async def test_tool_requiring_a_client_capability(target: Any, mode: str) -> None:
    async with connected(target, mode) as client:
        with pytest.raises(MCPError) as caught:
            await client.call_tool("deploy", {"env": "prod"})
        assert caught.value.code == -32021

    async def elicit(context: Any, params: Any) -> ElicitResult:
        return ElicitResult(action="decline")

    async with connected(target, mode, elicitation_callback=elicit) as client:
        deployed = await client.call_tool("deploy", {"env": "prod"})
        assert only_text(deployed) == "deployed prod"


async def test_progress(target: Any, mode: str) -> None:
    seen: list[tuple[float, float | None, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append((progress, total, message))

    async with connected(target, mode) as client:
        result = await client.call_tool("progressive", {"steps": 3}, progress_callback=on_progress)
        assert only_text(result) == "done after 3"
    assert seen == [(1, 3, "step 1"), (2, 3, "step 2"), (3, 3, "step 3")]


async def test_resources(target: Any, mode: str) -> None:
    async with connected(target, mode) as client:
        listed = await client.list_resources()
        assert [(r.uri, r.name, r.mime_type) for r in listed.resources] == [
            ("file:///a.txt", "a_txt", "text/plain")
        ]
        templates = await client.list_resource_templates()
        assert [(t.uri_template, t.name) for t in templates.resource_templates] == [
            ("notes://{note_id}", "note")
        ]

        read = await client.read_resource("file:///a.txt")
        assert len(read.contents) == 1
        contents = read.contents[0]
        assert isinstance(contents, TextResourceContents)
        assert (str(contents.uri), contents.mime_type, contents.text) == (
            "file:///a.txt",
            "text/plain",
            "hello from a.txt",
        )

        note = await client.read_resource("notes://n7")
        assert isinstance(note.contents[0], TextResourceContents)
        assert note.contents[0].text == "note n7"

        # A non-ASCII URI: over HTTP the client base64-wraps Mcp-Name.
        accented = await client.read_resource("notes://café")
        assert isinstance(accented.contents[0], TextResourceContents)
        assert accented.contents[0].text == "note café"

        with pytest.raises(MCPError) as caught:
            await client.read_resource("file:///notes/café.md")
        assert caught.value.code == -32602
        assert caught.value.data == {"uri": "file:///notes/café.md"}


async def test_prompts_and_completion(target: Any, mode: str) -> None:
    async with connected(target, mode) as client:
        prompts = await client.list_prompts()
        assert [p.name for p in prompts.prompts] == ["greet"]
        greet = prompts.prompts[0]
        assert greet.description == "Greet someone."
        assert [(a.name, a.required) for a in greet.arguments or []] == [("who", True)]

        rendered = await client.get_prompt("greet", {"who": "Bob"})
        assert len(rendered.messages) == 1
        message = rendered.messages[0]
        assert message.role == "user"
        assert isinstance(message.content, TextContent)
        assert message.content.text == "Hello, Bob!"

        with pytest.raises(MCPError) as caught:
            await client.get_prompt("nope", {})
        assert caught.value.code == -32602

        completed = await client.complete(
            PromptReference(type="ref/prompt", name="greet"), {"name": "who", "value": "al"}
        )
        assert completed.completion.values == ["alice", "albert"]

        completed = await client.complete(
            ResourceTemplateReference(type="ref/resource", uri="notes://{note_id}"),
            {"name": "note_id", "value": "n"},
        )
        assert completed.completion.values == ["n1", "n2"]
        assert completed.completion.total == 3

        completed = await client.complete(
            PromptReference(type="ref/prompt", name="greet"), {"name": "who", "value": "zz"}
        )
        assert completed.completion.values == []


async def test_concurrent_calls_on_one_client(target: Any, mode: str) -> None:
    async with connected(target, mode) as client:
        results = await asyncio.wait_for(
            asyncio.gather(
                *(
                    client.call_tool("sleepy", {"seconds": (i % 5) / 50, "tag": f"t{i}"})
                    for i in range(20)
                )
            ),
            TIMEOUT * 2,
        )
        assert [only_text(r) for r in results] == [f"slept t{i}" for i in range(20)]


async def test_header_param_recovery_without_listing(target: Any, mode: str) -> None:
    """Unlisted tool: no Mcp-Param-Region at first, -32020 over HTTP, re-list, resend."""
    async with connected(target, mode, cache=None) as client:
        result = await client.call_tool("execute_sql", {"region": "ap-south1", "query": "q"})
        assert only_text(result) == "ap-south1: q"


@pytest.fixture(params=TRANSPORTS)
def target_with_markers(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[Any, Path]:
    if request.param == "stdio":
        params = StdioServerParameters(
            command=sys.executable,
            args=[str(BASIC)],
            cwd=str(ROOT),
            env={"MCPSERVE_TEST_MARKER_DIR": str(tmp_path)},
        )
        return params, tmp_path
    server: HTTPServerProcess = request.getfixturevalue("http_server")
    return server.url, server.marker_dir


async def test_client_timeout_cancels_the_handler(
    target_with_markers: tuple[Any, Path], mode: str
) -> None:
    """stdio: the client sends notifications/cancelled; HTTP: it aborts the POST."""
    target, markers = target_with_markers
    tag = f"timeout-{mode}-{'stdio' if isinstance(target, StdioServerParameters) else 'http'}"
    async with connected(target, mode) as client:
        await client.list_tools()
        with pytest.raises(MCPError) as caught:
            await client.call_tool("wait_forever", {"tag": tag}, read_timeout_seconds=1.0)
        assert caught.value.code == -32001
        assert await wait_for_file(markers / f"{tag}.finally") == "cancelled=True"
        # The connection is still usable.
        assert only_text(await client.call_tool("echo", {"text": "alive"})) == "alive"
