"""``Client("http://...")`` with other servers: ``x-mcp-header`` tools and the official SDK.

``tests/support/servers/basic.py`` has tools whose arguments are mirrored into ``Mcp-Param-*``
headers, which the server checks against the body; the official Python SDK's server
(``mcp`` 2.3, ``benchmarks/servers/official_app.py``) speaks 2026-07-28 as well as the
handshake era, so it is the other implementation the client must get along with in both,
not a legacy-only one. Both run in uvicorn subprocesses.
"""

from __future__ import annotations

import base64
import sys
from collections.abc import Iterator
from typing import Any

import httpx2
import pytest

from mcpserve import Client, MCPError
from mcpserve.client.mirroring import ToolHeaders, encode_value
from wire_helpers import ROOT, HTTPServerProcess, http_server_process

OFFICIAL_APP = ROOT / "benchmarks" / "servers" / "official_app.py"


@pytest.fixture(scope="module")
def basic(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HTTPServerProcess]:
    with http_server_process(tmp_path_factory.mktemp("basic")) as process:
        yield process


@pytest.fixture(scope="module")
def official(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HTTPServerProcess]:
    args = [sys.executable, str(OFFICIAL_APP), "http", "{port}", "--sse"]
    with http_server_process(tmp_path_factory.mktemp("official"), args=args) as process:
        yield process


def name_ada(params: dict[str, Any]) -> dict[str, Any]:
    return {"action": "accept", "content": {"name": "Ada"}}


def text(result: dict[str, Any]) -> str:
    return result["content"][0]["text"]  # type: ignore[no-any-return]


# --------------------------------------------------------------------------- x-mcp-header


@pytest.mark.subprocess
async def test_annotated_arguments_are_mirrored_into_headers(basic: HTTPServerProcess) -> None:
    sent: list[httpx2.Request] = []

    async def record(request: httpx2.Request) -> None:
        sent.append(request)

    http = httpx2.AsyncClient(event_hooks={"request": [record]})
    async with http, Client.http(basic.url, http_client=http) as client:
        await client.list_tools()
        result = await client.call_tool("execute_sql", {"region": "Zürich", "query": "q"})
        assert text(result) == "Zürich: q"
        assert text(await client.call_tool("shard", {"n": 7, "flag": True})) == "shard 7 True"
    region, shard = [r.headers for r in sent if r.headers.get("mcp-method") == "tools/call"]
    assert region["mcp-param-region"] == "=?base64?WsO8cmljaA==?="
    assert (shard["mcp-param-shard"], shard["mcp-param-flag"]) == ("7", "true")


@pytest.mark.subprocess
async def test_a_call_to_a_tool_never_listed_lists_the_tools_and_goes_again(
    basic: HTTPServerProcess,
) -> None:
    methods: list[str] = []

    async def record(request: httpx2.Request) -> None:
        methods.append(request.headers.get("mcp-method", request.method))

    http = httpx2.AsyncClient(event_hooks={"request": [record]})
    async with http, Client.http(basic.url, http_client=http) as client:
        result = await client.call_tool("execute_sql", {"region": "eu", "query": "q"})
    assert text(result) == "eu: q"
    # Refused for its missing Mcp-Param-Region, then listed, then sent with it.
    assert methods == ["server/discover", "tools/call", "tools/list", "tools/call"]


def test_header_values_that_are_not_plain_ascii_are_sent_base64_encoded() -> None:
    assert encode_value("us-west1") == "us-west1"
    assert encode_value("") == ""
    assert encode_value("us west 1") == "us west 1"
    for unsafe in (" padded ", "Hello, 世界", "line1\nline2", "\tindented", "=?base64?x?="):
        encoded = encode_value(unsafe)
        assert encoded.startswith("=?base64?")
        assert encoded.endswith("?=")
        assert base64.b64decode(encoded[9:-2]).decode() == unsafe


def test_tools_with_invalid_annotations_are_left_out_of_the_list() -> None:
    def tool(name: str, prop: dict[str, Any]) -> dict[str, Any]:
        return {"name": name, "inputSchema": {"type": "object", "properties": {"p": prop}}}

    listing = {"tools": [
        tool("good", {"type": "string", "x-mcp-header": "Region"}),
        tool("on_a_number", {"type": "number", "x-mcp-header": "Score"}),
        tool("empty", {"type": "string", "x-mcp-header": ""}),
        tool("with_a_space", {"type": "string", "x-mcp-header": "My Region"}),
    ]}  # fmt: skip
    headers = ToolHeaders()
    headers.learn(listing)
    assert [t["name"] for t in listing["tools"]] == ["good"]
    assert headers.params("good", {"p": True}) == {"Mcp-Param-Region": "true"}
    assert headers.params("good", {"p": None}) == {}


@pytest.mark.subprocess
async def test_an_error_the_server_answers_raises_mcp_error(basic: HTTPServerProcess) -> None:
    async with Client(basic.url) as client:
        with pytest.raises(MCPError) as raised:
            await client.request("no/such/method")
    assert raised.value.code == -32601


# --------------------------------------------------------------------------- the official SDK


@pytest.mark.subprocess
async def test_the_official_python_sdk_server_is_spoken_to_in_2026_07_28(
    official: HTTPServerProcess,
) -> None:
    heard: list[tuple[Any, ...]] = []
    async with Client(official.url, on_elicit=name_ada) as client:
        assert not client.legacy
        assert len(await client.list_tools()) == 50
        assert text(await client.call_tool("greet")) == "Hello, Ada!"
        await client.call_tool("progress", {"steps": 3}, on_progress=lambda *a: heard.append(a))
    assert [h[0] for h in heard] == [1, 2, 3]


@pytest.mark.subprocess
async def test_the_official_python_sdk_server_is_spoken_to_in_the_handshake_era(
    official: HTTPServerProcess,
) -> None:
    async with Client(official.url, protocol_version="2025-11-25") as client:
        assert client.legacy
        assert text(await client.call_tool("echo", {"text": "hello"})) == "hello"
