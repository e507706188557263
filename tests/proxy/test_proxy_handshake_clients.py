"""Handshake-era clients through the proxy, in front of an upstream that asks only on a
session: the official Python SDK's server, whose ``ctx.elicit``, ``create_message`` and
``list_roots`` are requests of its own and fail on the stateless 2026-07-28 wire
(``tests/support/servers/proxy_upstream_official.py``: ``ask``, ``sample``, ``roots``).

The proxy speaks 2026-07-28 to that upstream (it negotiates it), and gives each
handshake-era client a handshake-era session of its own upstream (``proxy/sessions.py``).
Each test drives a real client through a real proxy (``Server.proxy`` served over HTTP,
or the ``mcpserve proxy`` command over stdio) to the upstream over stdio and over HTTP:
the official Python client in its ``legacy`` mode, and the official TypeScript client in
``legacy`` mode. A client must be asked what it is asked when connected directly, and
hear the call's log messages and progress.

Then how those sessions live: one per client session, closed when that session ends; at
most ``max_sessions``; an upstream that refuses the handshake leaves its handshake-era
clients to ``input_required`` rounds, tried once.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import sys
import time
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from mcp import Client as OfficialClient
from mcp import MCPError as OfficialError
from mcp import StdioServerParameters
from mcp.types import (
    CreateMessageResult,
    ElicitResult,
    ListRootsResult,
    Root,
    TextContent,
)

from mcpserve import Client, Server
from mcpserve.proxy import Proxy, Upstream
from mcpserve.testing import serve_http
from ts_client import ts_client
from wire_helpers import ROOT, SERVERS, TIMEOUT, HTTPServerProcess, child_env, http_server_process

pytestmark = pytest.mark.subprocess

OFFICIAL = [sys.executable, str(SERVERS / "proxy_upstream_official.py")]
OWN = [sys.executable, str(SERVERS / "proxy_upstream.py")]
MODERN_ONLY = [sys.executable, str(SERVERS / "legacy_dual.py")]
PROXY_COMMAND = [sys.executable, "-m", "mcpserve.cli", "proxy"]
LEGACY = "2025-11-25"
_tags = itertools.count()


@pytest.fixture(scope="module")
def markers(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("handshake-markers")


@pytest.fixture(scope="module")
def official_http(markers: Path) -> Iterator[HTTPServerProcess]:
    with http_server_process(markers, args=OFFICIAL) as upstream:
        yield upstream


@pytest.fixture(params=["stdio", "http"])
def upstream(request: pytest.FixtureRequest) -> str | list[str]:
    """The official upstream: a command (stdio) or its URL (HTTP)."""
    if request.param == "stdio":
        return OFFICIAL
    return request.getfixturevalue("official_http").url  # type: ignore[no-any-return]


def proxy_of(target: str | list[str], markers: Path, **options: Any) -> Server[Proxy]:
    return Server.proxy(target, cwd=str(ROOT), env=child_env(MCPSERVE_TEST_MARKER_DIR=str(markers)),
                        **options)  # fmt: skip


@pytest.fixture
def proxy(upstream: str | list[str], markers: Path) -> Iterator[tuple[Server[Proxy], str]]:
    server = proxy_of(upstream, markers)
    with serve_http(server) as url:
        yield server, url


@asynccontextmanager
async def legacy_client(target: Any, **callbacks: Any) -> AsyncIterator[OfficialClient]:
    async with OfficialClient(target, mode="legacy", read_timeout_seconds=TIMEOUT,
                              **callbacks) as client:  # fmt: skip
        assert client.protocol_version == LEGACY
        yield client


def only_text(result: Any) -> str:
    assert not result.is_error, result.content
    (block,) = result.content
    assert isinstance(block, TextContent)
    return block.text


async def eventually(check: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + TIMEOUT
    while not check():
        assert time.monotonic() < deadline, f"no {what} within {TIMEOUT} s"
        await asyncio.sleep(0.02)


class Person:
    """What a user and their client answer, and a record of what they were asked."""

    def __init__(self) -> None:
        self.asked: list[str] = []
        self.logs: list[tuple[str, Any]] = []

    async def elicit(self, context: Any, params: Any) -> ElicitResult:
        self.asked.append(f"elicit: {params.message}")
        return ElicitResult(action="accept", content={"name": "Ada"})

    async def sample(self, context: Any, params: Any) -> CreateMessageResult:
        self.asked.append(f"sample: {params.messages[0].content.text}")
        text = TextContent(type="text", text="forty-two")
        return CreateMessageResult(role="assistant", content=text, model="m-1")

    async def roots(self, context: Any) -> ListRootsResult:
        self.asked.append("roots")
        return ListRootsResult(roots=[Root(uri="file:///home/ada", name="home")])

    async def log(self, params: Any) -> None:
        self.logs.append((params.level, params.data))

    def callbacks(self) -> dict[str, Any]:
        return {"elicitation_callback": self.elicit, "sampling_callback": self.sample,
                "list_roots_callback": self.roots, "logging_callback": self.log}  # fmt: skip


# ----------------------------------------------------------------------------- the Python SDK


async def test_the_upstreams_elicitation_reaches_a_handshake_era_client_with_its_log_and_progress(
    proxy: tuple[Server[Proxy], str],
) -> None:
    person = Person()
    progress: list[tuple[float, float | None, str | None]] = []

    async def on_progress(done: float, total: float | None, message: str | None) -> None:
        progress.append((done, total, message))

    async with legacy_client(proxy[1], **person.callbacks()) as client:
        result = await client.call_tool("ask", {}, progress_callback=on_progress)
        assert only_text(result) == "Hello, Ada!"
    assert person.asked == ["elicit: Who is there?"]
    assert person.logs == [("info", "about to ask for a name")]
    assert progress == [(1, 2, "asking"), (2, 2, "answered")]


async def test_the_upstreams_sampling_and_roots_requests_reach_a_handshake_era_client(
    proxy: tuple[Server[Proxy], str],
) -> None:
    person = Person()
    async with legacy_client(proxy[1], **person.callbacks()) as client:
        assert only_text(await client.call_tool("sample", {"prompt": "6 x 7?"})) == (
            "m-1 said: forty-two"
        )
        # roots/list names no request: over HTTP it comes on the standalone stream.
        assert only_text(await client.call_tool("roots", {})) == "Roots: file:///home/ada"
    assert person.asked == ["sample: 6 x 7?", "roots"]


async def test_a_question_reaches_the_client_while_another_of_its_calls_is_in_flight(
    proxy: tuple[Server[Proxy], str], markers: Path
) -> None:
    person = Person()
    tag = f"busy-{next(_tags)}"
    async with legacy_client(proxy[1], **person.callbacks()) as client:
        waiting = asyncio.create_task(client.call_tool("wait", {"tag": tag}))
        try:
            assert only_text(await client.call_tool("ask", {})) == "Hello, Ada!"
        finally:
            waiting.cancel()
            await asyncio.gather(waiting, return_exceptions=True)
    assert person.asked == ["elicit: Who is there?"]


async def test_a_client_that_did_not_declare_elicitation_is_not_asked(
    proxy: tuple[Server[Proxy], str],
) -> None:
    """Connected directly, the upstream asks anyway and the client refuses; through the
    proxy the client is not sent a request it did not declare, and the upstream hears the
    refusal from the proxy. Either way the call fails with the refusal."""
    async with legacy_client(proxy[1]) as client:
        with pytest.raises(OfficialError) as refused:
            await client.call_tool("ask", {})
    assert refused.value.error.message == "The client does not support elicitation/create"


@pytest.mark.parametrize("through", ["stdio", "http"])
async def test_the_proxy_command_over_stdio_carries_the_upstreams_questions(
    through: str, official_http: HTTPServerProcess
) -> None:
    upstream = ["--", *OFFICIAL] if through == "stdio" else [official_http.url]
    command = StdioServerParameters(command=PROXY_COMMAND[0], args=[*PROXY_COMMAND[1:], *upstream],
                                    cwd=str(ROOT), env=child_env())  # fmt: skip
    person = Person()
    async with legacy_client(command, **person.callbacks()) as client:
        assert only_text(await client.call_tool("ask", {})) == "Hello, Ada!"
        assert only_text(await client.call_tool("roots", {})) == "Roots: file:///home/ada"
    assert person.asked == ["elicit: Who is there?", "roots"]
    assert person.logs == [("info", "about to ask for a name")]


# ----------------------------------------------------------------------------- the TypeScript SDK


async def test_the_typescript_client_in_legacy_mode_is_asked_through_the_proxy(
    proxy: tuple[Server[Proxy], str], ts_install: tuple[str, Path]
) -> None:
    async with ts_client(*ts_install) as ts:
        roots = [{"uri": "file:///home/tess", "name": "home"}]
        connected = await ts.send("connect", url=proxy[1], mode="legacy", answer={"name": "Tess"},
                                  roots=roots)  # fmt: skip
        assert (connected["era"], connected["protocolVersion"]) == ("legacy", LEGACY)
        asked = await ts.send("call", name="ask", arguments={})
        assert (asked["isError"], asked["texts"]) == (False, ["Hello, Tess!"])
        listed = await ts.send("call", name="roots", arguments={})
        assert (listed["isError"], listed["texts"]) == (False, ["Roots: file:///home/tess"])
        seen = await ts.send("take")
        assert seen["asked"] == ["Who is there?", "roots/list"]
        assert seen["logs"] == [["info", "about to ask for a name"]]
        await ts.send("close")


# ----------------------------------------------------------------------------- the sessions


async def test_the_upstream_session_closes_when_the_clients_session_ends(
    proxy: tuple[Server[Proxy], str],
) -> None:
    server, url = proxy
    state = server.lifespan_state
    assert isinstance(state, Proxy)
    links = state.forwarder.sessions
    async with legacy_client(url, **Person().callbacks()) as client:
        assert only_text(await client.call_tool("echo", {"text": "hi"})) == "hi"
        (link,) = links.open_links()
        upstream_client = link.client
        assert upstream_client is not None
        assert upstream_client.legacy
        assert upstream_client.protocol_version == LEGACY
        assert only_text(await client.call_tool("echo", {"text": "again"})) == "again"
        assert links.open_links() == [link]  # one session upstream per client session
    await eventually(lambda: len(links) == 0, "upstream session closed")
    await eventually(lambda: link.client is None, "upstream client closed")


async def test_each_client_session_has_its_own_upstream_session(
    proxy: tuple[Server[Proxy], str],
) -> None:
    server, url = proxy
    state = server.lifespan_state
    assert isinstance(state, Proxy)
    async with (
        legacy_client(url, **Person().callbacks()) as first,
        legacy_client(url, **Person().callbacks()) as second,
    ):
        assert only_text(await first.call_tool("ask", {})) == "Hello, Ada!"
        assert only_text(await second.call_tool("ask", {})) == "Hello, Ada!"
        assert len(state.forwarder.sessions.open_links()) == 2


async def test_with_max_sessions_open_the_least_recently_used_idle_one_makes_room(
    upstream: str | list[str], markers: Path
) -> None:
    target = Upstream(upstream, cwd=str(ROOT), max_sessions=1,
                      env=child_env(MCPSERVE_TEST_MARKER_DIR=str(markers)))  # fmt: skip
    server = Server.proxy(target)
    tag = f"full-{next(_tags)}"
    with serve_http(server) as url:
        state = server.lifespan_state
        assert isinstance(state, Proxy)
        links = state.forwarder.sessions
        async with (
            legacy_client(url, **Person().callbacks()) as first,
            legacy_client(url, **Person().callbacks()) as second,
        ):
            assert only_text(await first.call_tool("echo", {"text": "1"})) == "1"
            (first_link,) = links.open_links()
            assert only_text(await second.call_tool("ask", {})) == "Hello, Ada!"
            assert links.open_links() != [first_link]
            assert len(links) == 1
            waiting = asyncio.create_task(second.call_tool("wait", {"tag": tag}))
            try:
                await eventually(lambda: any(link.calls for link in links.open_links()), "a call")
                with pytest.raises(OfficialError) as refused:
                    await first.call_tool("echo", {"text": "2"})
                assert refused.value.error.code == -32603
                assert "as many handshake-era sessions" in refused.value.error.message
                assert "try again when a call ends" in refused.value.error.message
            finally:
                waiting.cancel()
                await asyncio.gather(waiting, return_exceptions=True)
            await eventually(lambda: not any(link.calls for link in links.open_links()), "the end")
            assert only_text(await first.call_tool("echo", {"text": "3"})) == "3"


async def test_an_upstream_that_refuses_the_handshake_is_asked_in_rounds_and_tried_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    server = Server.proxy(MODERN_ONLY, cwd=str(ROOT), env=child_env(MCPSERVE_TEST_LEGACY="0"))
    caplog.set_level(logging.INFO, logger="mcpserve.proxy")
    with serve_http(server) as url:
        for _ in range(2):
            person = Person()
            async with legacy_client(url, **person.callbacks()) as client:
                assert only_text(await client.call_tool("ask_name", {})) == "Hello, Ada!"
            assert person.asked == ["elicit: What is your name?"]
    refusals = [r for r in caplog.records if "does not open handshake-era sessions" in r.message]
    assert len(refusals) == 1


async def test_a_subscription_made_after_its_first_call_is_made_in_the_clients_own_process(
    markers: Path,
) -> None:
    """Over stdio the client's calls run in a process of its own: a resource it subscribes
    to once that process runs is subscribed there too, so the updates its calls make reach
    it (before, the process subscribes when it starts)."""
    with serve_http(proxy_of(OWN, markers)) as url:
        async with Client(url, protocol_version=LEGACY, timeout=TIMEOUT) as client:
            first = await client.call_tool("echo", {"text": "first"})
            assert first["content"] == [{"type": "text", "text": "first"}]
            async with client.listen(resources=["file:///a.txt"]) as notes:
                await client.call_tool("touch", {"uri": "file:///a.txt"})
                note = await asyncio.wait_for(notes.__anext__(), TIMEOUT)
    assert note == {"jsonrpc": "2.0", "method": "notifications/resources/updated",
                    "params": {"uri": "file:///a.txt"}}  # fmt: skip
