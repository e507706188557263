"""The proxy over real wires: an mcpserve upstream over stdio and over Streamable HTTP, in
each era, and the proxy served over HTTP to clients of each era.

Every combination of upstream transport, upstream era and client era carries the same
conversation: questions (elicitation in one and two rounds, sampling, roots), progress
and logs, an ``x-mcp-header`` argument, cancellation, a list change and a resource update.
Then what goes wrong: an upstream that dies (stdio) or goes away (HTTP) and comes back, one
that talks nonsense, a question nobody can be told apart from another's, a parked call
whose client never comes back; and the client's token, which never reaches the upstream.
"""

from __future__ import annotations

import asyncio
import itertools
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

import pytest

from mcpserve import Auth, Client, MCPError, Server
from mcpserve.proxy import Proxy
from mcpserve.testing import serve_http
from wire_helpers import (
    ROOT,
    SERVERS,
    TIMEOUT,
    HTTPServerProcess,
    child_env,
    free_port,
    stop_process,
    wait_for_file,
)

pytestmark = pytest.mark.subprocess

UPSTREAM = [sys.executable, str(SERVERS / "proxy_upstream.py")]
GARBAGE = [sys.executable, str(SERVERS / "proxy_garbage.py")]
LEGACY = "2025-11-25"
COMBINATIONS = [("stdio", None), ("stdio", LEGACY), ("http", None), ("http", LEGACY)]
_tags = itertools.count()


def name_ada(params: dict[str, Any]) -> dict[str, Any]:
    return {"action": "accept", "content": {"name": "Ada"}}


def sample(params: dict[str, Any]) -> dict[str, Any]:
    return {"role": "assistant", "content": {"type": "text", "text": "short"}, "model": "m"}


def roots(params: dict[str, Any]) -> dict[str, Any]:
    return {"roots": [{"uri": "file:///work", "name": "work"}]}


def text(result: dict[str, Any]) -> str:
    return result["content"][0]["text"]  # type: ignore[no-any-return]


async def wait_for_path(path: Path) -> None:
    await wait_for_file(path)


@pytest.fixture(scope="module")
def markers(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("proxy-markers")


@contextmanager
def http_upstream(markers: Path, port: int | None = None) -> Iterator[HTTPServerProcess]:
    """The upstream served over HTTP in a subprocess (on ``port``, or a free one)."""
    port = port or free_port()
    log = markers / f"upstream-{port}.log"
    env = child_env(MCPSERVE_TEST_HTTP_PORT=str(port), MCPSERVE_TEST_MARKER_DIR=str(markers))
    with log.open("ab") as out:
        process = subprocess.Popen(UPSTREAM, cwd=str(ROOT), env=env, stdin=subprocess.DEVNULL,
                                   stdout=out, stderr=subprocess.STDOUT)  # fmt: skip
    try:
        deadline = time.monotonic() + 30
        while True:
            assert process.poll() is None, f"the upstream exited:\n{log.read_text()}"
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=1):
                    break
            except OSError:
                assert time.monotonic() < deadline, (
                    f"the upstream did not listen:\n{log.read_text()}"
                )
                time.sleep(0.05)
        yield HTTPServerProcess(f"http://127.0.0.1:{port}/mcp", port, markers, process, log)
    finally:
        stop_process(process)


@pytest.fixture(scope="module")
def upstream_url(markers: Path) -> Iterator[str]:
    with http_upstream(markers) as upstream:
        yield upstream.url


def proxy_of(target: Any, markers: Path, version: str | None, **options: Any) -> Server:
    return Server.proxy(target, protocol_version=version, cwd=str(ROOT),
                        env={"MCPSERVE_TEST_MARKER_DIR": str(markers)}, **options)  # fmt: skip


@pytest.fixture(scope="module", params=COMBINATIONS, ids=lambda p: f"{p[0]}-{p[1] or 'modern'}")
def proxy_url(request: pytest.FixtureRequest, markers: Path) -> Iterator[str]:
    transport, version = request.param
    target = UPSTREAM if transport == "stdio" else request.getfixturevalue("upstream_url")
    with serve_http(proxy_of(target, markers, version)) as url:
        yield url


@pytest.fixture(params=[None, LEGACY], ids=["client-modern", "client-legacy"])
def down(request: pytest.FixtureRequest) -> str | None:
    return request.param  # type: ignore[no-any-return]


@asynccontextmanager
async def client_of(url: str, version: str | None, **options: Any) -> AsyncIterator[Client]:
    async with Client(url, protocol_version=version, timeout=TIMEOUT, **options) as client:
        assert client.legacy == (version == LEGACY)
        yield client


# ----------------------------------------------------------------------------- every combination


async def test_the_upstreams_questions_are_asked_of_the_client(
    proxy_url: str, down: str | None
) -> None:
    async with client_of(proxy_url, down, on_elicit=name_ada, on_sample=sample,
                         on_list_roots=roots) as client:  # fmt: skip
        assert text(await client.call_tool("greet")) == "Hello, Ada!"
        assert text(await client.call_tool("ask_twice")) == "Ada+Ada"
        assert text(await client.call_tool("summarize", {"text": "x"})) == "model said: short"
        assert text(await client.call_tool("roots")) == "file:///work"


async def test_progress_and_logs_reach_the_client(proxy_url: str, down: str | None) -> None:
    progress: list[tuple[Any, ...]] = []
    logs: list[tuple[Any, ...]] = []
    async with client_of(proxy_url, down, log_level="info",
                         on_log=lambda *a: logs.append(a)) as client:  # fmt: skip
        done = await client.call_tool("steps", {"n": 3}, on_progress=lambda *a: progress.append(a))
    assert text(done) == "3 steps"
    assert progress == [(1, 3, "step 1"), (2, 3, "step 2"), (3, 3, "step 3")]
    assert logs == [("info", "step 1", None), ("info", "step 2", None), ("info", "step 3", None)]


async def test_an_x_mcp_header_argument_is_checked_and_sent_on(
    proxy_url: str, down: str | None
) -> None:
    async with client_of(proxy_url, down) as client:
        listed = {tool["name"]: tool for tool in await client.list_tools()}
        region = listed["region_echo"]["inputSchema"]["properties"]["region"]
        assert region["x-mcp-header"] == "Region"
        result = await client.call_tool("region_echo", {"region": "zürich", "text": "t"})
    assert text(result) == "zürich: t"


async def test_a_cancelled_call_is_cancelled_upstream(
    proxy_url: str, down: str | None, markers: Path
) -> None:
    tag = f"cancel-{next(_tags)}"
    async with client_of(proxy_url, down) as client:
        call = asyncio.create_task(client.call_tool("wait", {"tag": tag}))
        await wait_for_path(markers / f"{tag}.started")
        call.cancel()
        await wait_for_path(markers / f"{tag}.cancelled")
        assert text(await client.call_tool("echo", {"text": "still here"})) == "still here"


async def test_list_changes_and_resource_updates_reach_the_clients_subscription(
    proxy_url: str, down: str | None
) -> None:
    name = f"sprout{next(_tags)}"
    async with (
        client_of(proxy_url, down) as client,
        client.listen(tools_list_changed=True, resources=["file:///a.txt"]) as notes,
    ):
        wanted = {"toolsListChanged": True, "resourceSubscriptions": ["file:///a.txt"]}
        assert notes.acknowledged == wanted
        await client.call_tool("grow", {"name": name})
        note = await asyncio.wait_for(notes.__anext__(), TIMEOUT)
        assert note["method"] == "notifications/tools/list_changed"
        assert text(await client.call_tool(name)) == f"I am {name}"
        await client.call_tool("touch", {"uri": "file:///a.txt"})
        note = await asyncio.wait_for(notes.__anext__(), TIMEOUT)
    assert note["method"] == "notifications/resources/updated"
    assert note["params"]["uri"] == "file:///a.txt"


# ----------------------------------------------------------------------------- the links


@pytest.mark.parametrize("fast_http", [True, False], ids=["lean-link", "httpx2"])
async def test_the_lean_http_link_answers_as_httpx_does(
    upstream_url: str, markers: Path, fast_http: bool
) -> None:
    from mcpserve.proxy import Upstream

    upstream = Upstream(upstream_url, fast_http=fast_http)
    proxy = Server.proxy(upstream)
    progress: list[tuple[Any, ...]] = []
    async with Client(proxy, on_elicit=name_ada) as client:
        tools = await client.list_tools()
        results = [
            await client.call_tool("add", {"a": 2, "b": 3}),
            await client.call_tool("greet"),
            await client.call_tool("steps", {"n": 2}, on_progress=lambda *a: progress.append(a)),
            await client.read_resource("notes://n1"),
            # The same tools again, other arguments: each request's own headers (the lean
            # link keeps a head per tool, but not for a tool with header arguments).
            await client.call_tool("add", {"a": 1, "b": 1}),
            await client.call_tool("region_echo", {"region": "zürich", "text": "a"}),
            await client.call_tool("region_echo", {"region": "oslo", "text": "b"}),
            await client.read_resource("notes://n2"),
        ]
        link = type(upstream.client.connection).__name__ if upstream.client else None
    assert link == ("LeanHTTPConnection" if fast_http else "HTTPConnection")
    assert {"add", "greet", "steps", "region_echo"} <= {tool["name"] for tool in tools}
    assert [text(r) if "content" in r else r["contents"][0]["text"] for r in results] == [
        "5", "Hello, Ada!", "2 steps", "note n1", "2", "zürich: a", "oslo: b", "note n2"
    ]  # fmt: skip
    assert progress == [(1, 2, "step 1"), (2, 2, "step 2")]


async def test_the_clients_token_never_reaches_the_upstream(upstream_url: str) -> None:
    def authenticate(headers: Any) -> Auth | None:
        ok = headers.get("authorization") == "Bearer client-token"
        return Auth("client", checked=True) if ok else None

    for fast_http in (True, False):
        from mcpserve.proxy import Upstream

        upstream = Upstream(upstream_url, headers={"X-Api-Key": "proxy-key"}, fast_http=fast_http)
        with serve_http(Server.proxy(upstream), authenticate=authenticate) as url:
            bearer = {"Authorization": "Bearer client-token"}
            async with Client.http(url, headers=bearer, timeout=TIMEOUT) as client:
                seen = (await client.call_tool("seen_headers"))["structuredContent"]
        assert seen["x-api-key"] == "proxy-key"
        assert "authorization" not in seen
        assert "client-token" not in repr(seen)


async def test_an_httpx_auth_for_the_upstream_signs_every_upstream_request(
    upstream_url: str,
) -> None:
    import httpx2

    class ProxyKey(httpx2.Auth):
        def auth_flow(self, request: httpx2.Request) -> Any:
            request.headers["X-Proxy-Key"] = "signed"
            yield request

    async with Client(Server.proxy(upstream_url, http_auth=ProxyKey()), timeout=TIMEOUT) as client:
        seen = (await client.call_tool("seen_headers"))["structuredContent"]
    assert seen["x-proxy-key"] == "signed"


async def test_an_upstream_that_dies_is_started_again_for_the_next_call(markers: Path) -> None:
    for version in (None, LEGACY):
        proxy = proxy_of(UPSTREAM, markers, version)
        async with Client(proxy, timeout=TIMEOUT) as client:
            with pytest.raises(MCPError) as caught:
                await client.call_tool("exit_now")
            assert caught.value.code == -32603
            assert "is unreachable" in caught.value.message
            assert "proxy_upstream.py" in caught.value.message
            assert text(await client.call_tool("echo", {"text": "back"})) == "back"
            state = proxy.lifespan_state
            assert isinstance(state, Proxy)
            assert state.upstream.connects == 2


async def test_an_http_upstream_that_goes_away_and_returns_is_served_again(markers: Path) -> None:
    port = free_port()
    with http_upstream(markers, port) as first:
        proxy = proxy_of(first.url, markers, None)
        async with Client(proxy, timeout=TIMEOUT) as client:
            assert text(await client.call_tool("echo", {"text": "one"})) == "one"
            first.process.terminate()
            first.process.wait(10)
            with pytest.raises(MCPError) as caught:
                await client.call_tool("echo", {"text": "two"})
            assert caught.value.code == -32603
            assert f"127.0.0.1:{port}" in caught.value.message
            with http_upstream(markers, port):
                assert text(await client.call_tool("echo", {"text": "three"})) == "three"


async def test_an_upstream_that_talks_nonsense_gets_clear_errors(markers: Path) -> None:
    async with Client(proxy_of(GARBAGE, markers, None), timeout=TIMEOUT) as client:
        tools = [tool["name"] for tool in await client.list_tools()]
        assert tools == ["after_noise", "nonsense", "no_content"]  # the rest were no tools
        assert text(await client.call_tool("after_noise")) == "answered after a line of noise"
        with pytest.raises(MCPError) as nonsense:
            await client.call_tool("nonsense")
        assert nonsense.value.code == -32603
        assert "not a result object" in nonsense.value.message
        with pytest.raises(MCPError) as empty:
            await client.call_tool("no_content")
        assert "invalid result (no 'content')" in empty.value.message
        with pytest.raises(MCPError) as no_resources:
            await client.list_resources()  # its resources/list was nonsense: none are offered
        assert no_resources.value.code == -32601


async def test_a_question_that_cannot_be_told_apart_over_stdio_is_refused(markers: Path) -> None:
    tag = f"busy-{next(_tags)}"
    proxy = proxy_of(UPSTREAM, markers, LEGACY)
    async with Client(proxy, on_elicit=name_ada, timeout=TIMEOUT) as client:
        busy = asyncio.create_task(client.call_tool("wait", {"tag": tag}))
        await wait_for_path(markers / f"{tag}.started")
        refused = await client.call_tool("greet")  # two calls in flight: whose question?
        busy.cancel()
        assert refused["isError"] is True
        assert "cannot tell which request" in text(refused)
        assert text(await client.call_tool("greet")) == "Hello, Ada!"  # alone, it is clear


async def test_a_parked_call_whose_client_never_returns_ends(markers: Path) -> None:
    proxy = proxy_of(UPSTREAM, markers, LEGACY, legacy_client_timeout_seconds=0.2)
    async with Client(proxy, capabilities={"elicitation": {}}, timeout=TIMEOUT) as client:
        asked = await client.call_tool("greet")
        assert asked["resultType"] == "input_required"
        state = proxy.lifespan_state
        assert isinstance(state, Proxy)
        deadline = time.monotonic() + TIMEOUT
        while state.forwarder.parked:
            assert time.monotonic() < deadline, "the parked call did not end"
            await asyncio.sleep(0.02)
        (key,) = asked["inputRequests"]
        state, answers = asked["requestState"], {key: name_ada({})}
        with pytest.raises(MCPError) as caught:
            await client.request("tools/call", {"name": "greet", "requestState": state,
                                                "inputResponses": answers})  # fmt: skip
    assert caught.value.code == -32602
    assert "has ended" in caught.value.message


async def test_a_handshake_era_upstream_question_is_parked_across_the_clients_rounds(
    markers: Path,
) -> None:
    proxy = proxy_of(UPSTREAM, markers, LEGACY)
    async with Client(proxy, capabilities={"elicitation": {}}, timeout=TIMEOUT) as client:
        first = await client.call_tool("ask_twice")
        (key,) = first["inputRequests"]
        assert first["inputRequests"][key]["params"]["mode"] == "form"  # a 2026-07-28 question
        second = await client.request("tools/call", {
            "name": "ask_twice", "requestState": first["requestState"],
            "inputResponses": {key: {"action": "accept", "content": {"name": "Ada"}}}})  # fmt: skip
        assert second["resultType"] == "input_required"
        (again,) = second["inputRequests"]
        bo = {again: {"action": "accept", "content": {"name": "Bo"}}}
        done = await client.request("tools/call", {
            "name": "ask_twice", "requestState": second["requestState"],
            "inputResponses": bo})  # fmt: skip
    assert text(done) == "Ada+Bo"
