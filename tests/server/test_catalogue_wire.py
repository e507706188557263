"""The catalogue on the wire: tags, versions, visibility and tool search, over a stdio
subprocess and a real uvicorn, each in both eras (2026-07-28 requests with ``_meta``, and a
handshake-era session).

The server is ``tests/support/servers/catalogue.py``. Every message is validated against
its era's schema by the drivers of ``wire_helpers`` and ``legacy_schema``; changes are
heard where each era hears them: ``subscriptions/listen`` (2026-07-28) and the session's
own stream (the handshake era). Every wait is bounded; every process is stopped.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any, Protocol

import httpx2
import pytest

from legacy_schema import LegacyHTTPClient, LegacyStdio, legacy_request, notification
from listens import listen
from wire_helpers import (
    CLIENT_INFO,
    SERVERS,
    TIMEOUT,
    StdioProcess,
    http_server_process,
    mcp_headers,
    parse_sse,
    post,
    request,
)

pytestmark = pytest.mark.subprocess

CATALOGUE = SERVERS / "catalogue.py"
CLIENT_INFO_KEY = "io.modelcontextprotocol/clientInfo"
ADMIN_INFO = {"name": "admin-client", "version": "1.0.0"}
TOOLS_CHANGED = "notifications/tools/list_changed"
PROMPTS_CHANGED = "notifications/prompts/list_changed"
RESOURCES_CHANGED = "notifications/resources/list_changed"
SHOWN = ["refund", "invoice", "echo", "report", "switch_beta", "touch"]


class Peer(Protocol):
    """One client of the catalogue server, whichever transport and era."""

    async def ask(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        """The response to one request."""

    async def expect(self, method: str) -> dict[str, Any]:
        """The next change notification ``method`` heard since :meth:`listen`."""

    async def listen(self) -> None:
        """Start hearing list changes."""

    async def watch(self, uri: str) -> None:
        """Start hearing updates of ``uri`` and the resources below it."""


def watch_request(uri: str, client_info: dict[str, Any]) -> dict[str, Any]:
    """A ``subscriptions/listen`` for updates of ``uri`` and the resources below it."""
    notifications = {"resourceSubscriptions": [uri]}
    return request("watch", "subscriptions/listen", {"notifications": notifications},
                   **{CLIENT_INFO_KEY: client_info})  # fmt: skip


class StdioPeer:
    """A stdio subprocess; ``handshake`` starts a session first, else every request
    carries ``_meta``."""

    def __init__(self, proc: StdioProcess, handshake: bool, client_info: dict[str, Any]):
        self.proc = proc
        self.handshake = handshake
        self.client_info = client_info
        self.ids = itertools.count(1)
        self.heard: list[dict[str, Any]] = []

    async def start(self) -> None:
        if self.handshake:
            init = legacy_request(
                "init",
                "initialize",
                {
                    "protocolVersion": "2025-11-25",
                    "capabilities": {},
                    "clientInfo": self.client_info,
                },
            )
            await self.proc.send(init)
            await self.proc.read_until("init")
            await self.proc.send(notification("notifications/initialized"))

    async def ask(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        request_id = next(self.ids)
        if self.handshake:
            message = legacy_request(request_id, method, params)
        else:
            message = request(request_id, method, params, **{CLIENT_INFO_KEY: self.client_info})
        await self.proc.send(message)
        response, others = await self.proc.read_until(request_id)
        self.heard.extend(others)
        return response

    async def listen(self) -> None:
        if not self.handshake:  # a session hears its changes without asking
            changes = {"toolsListChanged": True, "promptsListChanged": True}
            await self.proc.send(listen("changes", {**changes, "resourcesListChanged": True}))

    async def watch(self, uri: str) -> None:
        if self.handshake:
            assert (await self.ask("resources/subscribe", {"uri": uri}))["result"] == {}
            return
        await self.proc.send(watch_request(uri, self.client_info))
        await self.expect("notifications/subscriptions/acknowledged")

    async def expect(self, method: str) -> dict[str, Any]:
        deadline = time.monotonic() + TIMEOUT
        while True:
            for index, message in enumerate(self.heard):
                if message.get("method") == method:
                    return self.heard.pop(index)
            self.heard.append(await self.proc.read(max(0.01, deadline - time.monotonic())))


class ModernHTTPPeer:
    """2026-07-28 over HTTP: one POST per request, changes on a ``subscriptions/listen``
    stream."""

    def __init__(self, http: httpx2.AsyncClient, client_info: dict[str, Any], **headers: str):
        self.http = http
        self.client_info = client_info
        self.headers = headers
        self.ids = itertools.count(1)
        self.stack = contextlib.AsyncExitStack()
        self.stream: Any = None
        self.heard: list[dict[str, Any]] = []

    async def ask(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        message = request(next(self.ids), method, params, **{CLIENT_INFO_KEY: self.client_info})
        named = (params or {}).get("name") or (params or {}).get("uri")
        reply = await post(self.http, message, mcp_headers(method, named, **self.headers))
        return reply.messages[-1]

    async def listen(self) -> None:
        changes = {"toolsListChanged": True, "promptsListChanged": True}
        await self._open(listen("changes", {**changes, "resourcesListChanged": True}), {})

    async def watch(self, uri: str) -> None:
        await self._open(watch_request(uri, self.client_info), self.headers)
        await self.expect("notifications/subscriptions/acknowledged")

    async def _open(self, message: dict[str, Any], headers: dict[str, str]) -> None:
        """A ``subscriptions/listen`` stream, read by :meth:`expect` from now on."""
        response = await self.stack.enter_async_context(
            self.http.stream("POST", "/mcp", content=json.dumps(message),
                             headers=mcp_headers("subscriptions/listen", **headers))
        )  # fmt: skip
        assert response.status_code == 200
        self.stream = response.aiter_lines()

    async def expect(self, method: str) -> dict[str, Any]:
        deadline = time.monotonic() + TIMEOUT
        while True:
            for index, message in enumerate(self.heard):
                if message.get("method") == method:
                    return self.heard.pop(index)
            line = await _within(self.stream.__anext__(), deadline)
            self.heard.extend(parse_sse(line + "\n\n") if line.startswith("data:") else [])


class HandshakeHTTPPeer:
    """A handshake-era session over HTTP: changes on the session's GET stream."""

    def __init__(self, client: LegacyHTTPClient, **headers: str) -> None:
        self.client = client
        self.extra = headers
        self.ids = itertools.count(1)
        self.reader: Any = None

    async def ask(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        message = legacy_request(next(self.ids), method, params)
        reply = await self.client.post(message, headers=self.client.headers(**self.extra))
        return reply.message

    async def listen(self) -> None:
        headers = self.client.headers(json_body=False, accept="text/event-stream", **self.extra)
        self.reader = await self.client.get(headers=headers)
        priming = await self.reader.next_event()
        assert priming is not None

    async def watch(self, uri: str) -> None:
        assert (await self.ask("resources/subscribe", {"uri": uri}))["result"] == {}
        await self.listen()

    async def expect(self, method: str) -> dict[str, Any]:
        deadline = time.monotonic() + TIMEOUT
        while True:
            message = await self.reader.next_message(max(0.01, deadline - time.monotonic()))
            assert message is not None, f"the stream ended before {method}"
            if message.get("method") == method:
                return message  # type: ignore[no-any-return]


async def _within(awaitable: Any, deadline: float) -> Any:
    import asyncio

    return await asyncio.wait_for(awaitable, max(0.01, deadline - time.monotonic()))


TRANSPORTS = ["stdio", "http"]
ERAS = ["2026-07-28", "handshake"]


@contextlib.asynccontextmanager
async def peer(
    transport: str, era: str, tmp_path: Path, *, admin: bool = False, search: bool = False
) -> AsyncIterator[Peer]:
    """A client of a fresh catalogue server; ``admin``: one the visibility rule shows the
    admin tool (by its clientInfo over stdio, by an ``X-Role`` header over HTTP)."""
    env = {"MCPSERVE_TEST_TOOL_SEARCH": "1" if search else "0"}
    args = [sys.executable, str(CATALOGUE)]
    handshake = era == "handshake"
    if transport == "stdio":
        info = ADMIN_INFO if admin else CLIENT_INFO
        proc = await (LegacyStdio if handshake else StdioProcess).start(args, env=env)
        try:
            stdio = StdioPeer(proc, handshake, info)
            await stdio.start()
            yield stdio
        finally:
            await proc.stop()
        return
    headers = {"x_role": "admin"} if admin else {}
    with http_server_process(tmp_path, args=args, env=env) as server:
        base = f"http://127.0.0.1:{server.port}"
        async with httpx2.AsyncClient(base_url=base, timeout=TIMEOUT) as http:
            if not handshake:
                modern = ModernHTTPPeer(http, CLIENT_INFO, **headers)
                async with modern.stack:
                    yield modern
                return
            client = LegacyHTTPClient.over_httpx(http)
            try:
                await client.initialize()
                yield HandshakeHTTPPeer(client, **headers)
            finally:
                await client.close()


def names(response: dict[str, Any]) -> list[str]:
    return [tool["name"] for tool in response["result"]["tools"]]


def text(response: dict[str, Any]) -> str:
    result = response["result"]
    assert [block["type"] for block in result["content"]] == ["text"], result
    return result["content"][0]["text"]  # type: ignore[no-any-return]


def unknown(response: dict[str, Any]) -> str:
    assert response["error"]["code"] == -32602, response
    return response["error"]["message"]  # type: ignore[no-any-return]


def call(tool: str, /, **arguments: Any) -> dict[str, Any]:
    return {"name": tool, "arguments": arguments}


@pytest.mark.parametrize("era", ERAS)
@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_lists_publish_tags_and_versions_and_leave_out_what_is_hidden(
    transport: str, era: str, tmp_path: Path
) -> None:
    async with peer(transport, era, tmp_path) as client:
        listed = await client.ask("tools/list")
        assert names(listed) == SHOWN  # dump: excluded tag; reset: the rule hides it
        tools = {tool["name"]: tool for tool in listed["result"]["tools"]}
        assert tools["refund"]["_meta"] == {"io.mcpserve/tags": ["beta", "billing"]}
        assert tools["invoice"]["_meta"] == {"io.mcpserve/tags": ["billing"]}
        assert "_meta" not in tools["echo"]
        assert tools["report"]["_meta"] == {"io.mcpserve/version": "2"}
        prompts = (await client.ask("prompts/list"))["result"]["prompts"]
        assert prompts[0]["_meta"] == {"io.mcpserve/tags": ["beta"]}


@pytest.mark.parametrize("era", ERAS)
@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_what_a_caller_cannot_list_it_cannot_call(
    transport: str, era: str, tmp_path: Path
) -> None:
    async with peer(transport, era, tmp_path) as client:
        assert unknown(await client.ask("tools/call", call("dump"))) == "Unknown tool: dump"
        assert unknown(await client.ask("tools/call", call("reset"))) == "Unknown tool: reset"
        assert text(await client.ask("tools/call", call("report"))) == "report v2"


@pytest.mark.parametrize("era", ERAS)
@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_the_visibility_rule_shows_a_caller_it_allows_more(
    transport: str, era: str, tmp_path: Path
) -> None:
    async with peer(transport, era, tmp_path, admin=True) as admin:
        assert names(await admin.ask("tools/list")) == [*SHOWN[:4], "reset", *SHOWN[4:]]
        assert text(await admin.ask("tools/call", call("reset"))) == "reset done"
        assert unknown(await admin.ask("tools/call", call("dump"))) == "Unknown tool: dump"


@pytest.mark.parametrize("admin", [False, True], ids=["guest", "admin"])
async def test_over_http_a_listen_leaves_out_a_resource_the_rule_hides(
    admin: bool, tmp_path: Path
) -> None:
    from listens import open_stream

    headers = {"x-role": "admin"} if admin else {}
    requested = {"resourceSubscriptions": ["notes://admin", "notes://beta"]}
    with http_server_process(tmp_path, args=[sys.executable, str(CATALOGUE)]) as server:
        base = f"http://127.0.0.1:{server.port}"
        async with (
            httpx2.AsyncClient(base_url=base, timeout=TIMEOUT, headers=headers) as http,
            open_stream(http, "watch", requested) as stream,
        ):
            honoured = await stream.ack()
    shown = requested if admin else {"resourceSubscriptions": ["notes://beta"]}
    assert honoured == shown


@pytest.mark.parametrize("admin", [False, True], ids=["guest", "admin"])
@pytest.mark.parametrize("era", ERAS)
@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_a_parent_subscription_hears_updates_only_of_the_resources_the_rule_shows(
    transport: str, era: str, admin: bool, tmp_path: Path
) -> None:
    async with peer(transport, era, tmp_path, admin=admin) as client:
        await client.watch("notes://")  # the parent of notes://admin and notes://beta
        touched = await client.ask("tools/call", call("touch", uri="notes://admin"))
        assert text(touched) == "touched notes://admin"
        assert text(await client.ask("tools/call", call("touch", uri="notes://beta")))
        first = await client.expect("notifications/resources/updated")
        # A guest never hears of the admin notes: the first update it hears is the second.
        assert first["params"]["uri"] == ("notes://admin" if admin else "notes://beta")
        if admin:
            second = await client.expect("notifications/resources/updated")
            assert second["params"]["uri"] == "notes://beta"


@pytest.mark.parametrize("era", ERAS)
@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_disabling_a_tag_announces_the_change_and_hides_its_entries(
    transport: str, era: str, tmp_path: Path
) -> None:
    async with peer(transport, era, tmp_path) as client:
        await client.listen()
        assert text(await client.ask("tools/call", call("switch_beta", on=False))) == "beta off"
        await client.expect(TOOLS_CHANGED)
        await client.expect(PROMPTS_CHANGED)
        await client.expect(RESOURCES_CHANGED)
        assert "refund" not in names(await client.ask("tools/list"))
        assert unknown(await client.ask("tools/call", call("refund", payment="p", amount=1)))
        assert unknown(await client.ask("prompts/get", {"name": "greet"}))
        hidden = await client.ask("resources/read", {"uri": "notes://beta"})
        missing = await client.ask("resources/read", {"uri": "notes://nowhere"})
        assert hidden["error"]["message"] == "Resource not found"
        assert hidden["error"]["code"] == missing["error"]["code"]  # the era's own code
        assert (await client.ask("prompts/list"))["result"]["prompts"] == []

        assert text(await client.ask("tools/call", call("switch_beta", on=True))) == "beta on"
        await client.expect(TOOLS_CHANGED)
        assert names(await client.ask("tools/list")) == SHOWN
        refunded = await client.ask("tools/call", call("refund", payment="p", amount=1))
        assert text(refunded) == "refunded 1 of p"


@pytest.mark.parametrize("era", ERAS)
@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_tool_search_lists_two_tools_that_find_and_call_the_catalogue(
    transport: str, era: str, tmp_path: Path
) -> None:
    async with peer(transport, era, tmp_path, search=True) as client:
        assert names(await client.ask("tools/list")) == ["search_tools", "call_tool"]
        found = await client.ask("tools/call", call("search_tools", query="give money back"))
        tools = found["result"]["structuredContent"]["tools"]
        assert tools[0]["name"] == "refund"
        assert tools[0]["inputSchema"]["required"] == ["payment", "amount"]
        everything = await client.ask(
            "tools/call", call("search_tools", query="reset dump report echo", limit=50)
        )
        matched = [tool["name"] for tool in everything["result"]["structuredContent"]["tools"]]
        assert sorted(matched) == ["echo", "report"]  # reset: the rule; dump: excluded

        refunded = await client.ask(
            "tools/call", call("call_tool", name="refund", arguments={"payment": "p", "amount": 2})
        )
        assert text(refunded) == "refunded 2 of p"
        invalid = await client.ask(
            "tools/call", call("call_tool", name="refund", arguments={"payment": "p"})
        )
        assert invalid["result"]["isError"] is True
        assert "amount: Field required" in invalid["result"]["content"][0]["text"]
        hidden = await client.ask("tools/call", call("call_tool", name="reset", arguments={}))
        assert unknown(hidden) == "Unknown tool: reset"
        excluded = await client.ask("tools/call", call("call_tool", name="dump"))
        assert unknown(excluded) == "Unknown tool: dump"
