"""Handshake-era clients (2025-11-25, 2025-06-18, 2025-03-26) on a dual-era server, in process.

Three ways in, none with sockets or subprocesses: ``server.handshake.initialize`` and the
dispatcher's two steps with a session (sans-IO), a :class:`StdioSession` with a fake
writer (stdio framing and era selection),
and the ASGI app, driven directly so that streams can be read event by event and
disconnected (``legacy_schema.ASGIExchange``). Every legacy message received is validated
with the official 2025-11-25 wire models, every modern one with the 2026-07-28 models.

The rules are those of ``docs/decisions.md`` ("Eras").
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import json
import logging
import time
import tracemalloc
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import httpx2
import pytest

import legacy_schema
import wire_schema
from legacy_schema import (
    EraChecker,
    LegacyHTTPClient,
    answer,
    initialize_message,
    legacy_call,
    legacy_request,
    notification,
)
from mcpserve import Server
from mcpserve.protocol.core import answered
from mcpserve.protocol.errors import MCPError
from mcpserve.protocol.jsonrpc import error_response
from mcpserve.transports.http import HTTPApp
from mcpserve.transports.sessions import store as sessions_module
from mcpserve.transports.stdio import StdioSession
from redis_server import REDIS_PARAM, RedisServer
from servers.legacy_dual import INSTRUCTIONS, NAME, VERSION, build
from wire_helpers import META, check_line, encode, meta, request

TIMEOUT = 15.0
HANDSHAKE_VERSIONS = ["2025-11-25", "2025-06-18", "2025-03-26"]
ALL_CAPABILITIES = {"elicitation": {"form": {}}, "sampling": {}, "roots": {"listChanged": True}}
NAME_ANSWER = {"action": "accept", "content": {"name": "Ann"}}
SAMPLE_ANSWER = {
    "role": "assistant",
    "content": {"type": "text", "text": "hi there"},
    "model": "test-model",
    "stopReason": "endTurn",
}
ROOTS_ANSWER = {"roots": [{"uri": "file:///home/ann", "name": "home"}]}


# --------------------------------------------------------------------------- harness


class FakeStdio:
    """A :class:`StdioSession` whose output lines are validated and queued."""

    def __init__(self, server: Server) -> None:
        self.checker = EraChecker()
        self.queue: asyncio.Queue[bytes] = asyncio.Queue()
        self.session = StdioSession(server, self._write)

    def _write(self, data: bytes) -> None:
        # Validated when the test reads it: a failure raised here would land in the server.
        for line in data.splitlines(keepends=True):
            self.queue.put_nowait(line)

    async def send(self, *messages: Any) -> None:
        for message in messages:
            self.checker.sent(message)
            await self.session.feed(encode(message) + b"\n")

    async def read(self, within: float = TIMEOUT) -> dict[str, Any]:
        line = await asyncio.wait_for(self.queue.get(), within)
        return self.checker.received(check_line(line))

    async def read_until(
        self, request_id: Any, within: float = TIMEOUT
    ) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        others = []
        while True:
            message = await self.read(within)
            if "method" not in message and message.get("id") == request_id:
                assert type(message["id"]) is type(request_id)
                return message, others
            others.append(message)

    async def ask(self, message: dict[str, Any]) -> dict[str, Any]:
        """Send a request; return its response, with nothing else in between."""
        await self.send(message)
        response, others = await self.read_until(message["id"])
        assert others == [], others
        return response

    async def initialize(
        self, capabilities: dict[str, Any] | None = None, version: str = "2025-11-25"
    ) -> dict[str, Any]:
        response = await self.ask(initialize_message("init", version, capabilities))
        await self.send(notification("notifications/initialized"))
        return response["result"]  # type: ignore[no-any-return]


@dataclass
class Served:
    """One dual-era server, served in process: its ASGI app, stdio sessions, clients."""

    server: Server
    app: HTTPApp
    markers: Path
    stack: contextlib.AsyncExitStack
    clients: list[LegacyHTTPClient] = field(default_factory=list)

    def client(self) -> LegacyHTTPClient:
        client = LegacyHTTPClient.over_asgi(self.app)
        self.clients.append(client)
        return client

    def stdio(self) -> FakeStdio:
        fake = FakeStdio(self.server)
        self.stack.push_async_callback(fake.session.finish)
        return fake

    def release(self, tag: str) -> None:
        (self.markers / f"{tag}.release").write_text("go")

    async def marker(self, tag: str, event: str) -> str:
        path = self.markers / f"{tag}.{event}"
        deadline = time.monotonic() + TIMEOUT
        while not path.exists():
            assert time.monotonic() < deadline, f"{path.name} did not appear"
            await asyncio.sleep(0.01)
        return path.read_text()

    @property
    def sessions(self) -> Any:
        """The sessions this process holds."""
        assert self.app.handshake is not None
        return self.app.handshake.sessions.local


Serve = Callable[..., Awaitable[Served]]


@pytest.fixture(params=["process", REDIS_PARAM])
def store(request: pytest.FixtureRequest) -> str | None:
    """Where HTTP sessions live: in this process, or in a shared Redis (emptied first).
    Every HTTP test runs with both: one process must not tell them apart."""
    if request.param == "process":
        return None
    server: RedisServer = request.getfixturevalue("redis")
    server.flush()
    return server.url


@pytest.fixture
async def serve(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, store: str | None
) -> AsyncIterator[Serve]:
    """``await serve(**options)``: a fresh server, running until the test ends. The HTTP
    app's options (``max_sessions``, ``session_idle_seconds``) go to ``http_app``, the rest
    to the server; sessions live where ``store`` says."""
    monkeypatch.setenv("MCPSERVE_TEST_MARKER_DIR", str(tmp_path))
    monkeypatch.delenv("MCPSERVE_REDIS_URL", raising=False)
    async with contextlib.AsyncExitStack() as stack:

        async def make(**options: Any) -> Served:
            app_options = {
                key: options.pop(key)
                for key in (
                    "max_sessions",
                    "session_idle_seconds",
                    "max_requests_per_session",
                    "keepalive_seconds",
                )
                if key in options
            }
            options.setdefault("redis_url", store)
            server = build(**options)
            app = server.http_app(**app_options)
            await stack.enter_async_context(server.running())
            served = Served(server, app, tmp_path, stack)
            # Unwound first to last: stdio sessions, then HTTP clients and sessions, then
            # the server's lifespan.
            stack.push_async_callback(close_http, served)
            return served

        yield make


async def close_http(served: Served) -> None:
    for client in served.clients:
        await client.close()
    if served.app.handshake is not None:
        await served.app.handshake.aclose()


def legacy_init(version: str = "2025-11-25", capabilities: dict[str, Any] | None = None) -> Any:
    return initialize_message(0, version, capabilities)


def text_of(result: dict[str, Any]) -> str:
    assert [block["type"] for block in result["content"]] == ["text"], result
    return result["content"][0]["text"]  # type: ignore[no-any-return]


async def sans_io(
    server: Server, message: dict[str, Any], session: Any, send: Any = None
) -> dict[str, Any]:
    """A request inside ``session``, through the dispatcher's two steps, with the answer
    validated as legacy."""
    dispatcher = server.pipeline.dispatcher()
    try:
        prepared = dispatcher.prepare(message, session=session, send=send)
    except MCPError as exc:
        response = error_response(message["id"], exc)
    else:
        response = await answered(dispatcher.execute(prepared))
    legacy_schema.check_response(message["method"], response)
    return response


def new_session(server: Server, version: str = "2025-11-25", **capabilities: Any) -> Any:
    assert server.handshake is not None
    session, response = server.handshake.initialize(legacy_init(version, capabilities))
    assert session is not None
    legacy_schema.check_response("initialize", response)
    return session


# --------------------------------------------------------------------------- era selection


@pytest.mark.parametrize(
    ("requested", "negotiated"),
    [
        ("2025-11-25", "2025-11-25"),
        ("2025-06-18", "2025-06-18"),
        ("2025-03-26", "2025-03-26"),
        ("2026-07-28", "2025-11-25"),  # a modern version asked for the old way
        ("2024-11-05", "2025-11-25"),
        ("1999-01-01", "2025-11-25"),
    ],
)
async def test_initialize_negotiates_the_version(
    serve: Serve, requested: str, negotiated: str
) -> None:
    served = await serve()
    stdio = served.stdio()
    result = await stdio.initialize(version=requested)
    assert result["protocolVersion"] == negotiated

    http = served.client()
    reply = await http.initialize(version=requested)
    assert reply.status == 200
    assert not reply.is_sse
    assert reply.result["protocolVersion"] == negotiated


async def test_initialize_result_shape(serve: Serve) -> None:
    served = await serve()
    stdio = served.stdio()
    result = await stdio.initialize()
    assert result == {
        "protocolVersion": "2025-11-25",
        "capabilities": {
            "tools": {"listChanged": True},
            "resources": {"subscribe": True, "listChanged": True},
            "prompts": {"listChanged": True},
            "completions": {},
            "logging": {},
        },
        "serverInfo": {"name": NAME, "version": VERSION},
        "instructions": INSTRUCTIONS,
    }
    legacy_schema.check("InitializeResult", result)


async def test_initialize_without_client_logging_has_no_logging_capability(serve: Serve) -> None:
    served = await serve(client_logging=False)
    result = await served.stdio().initialize()
    assert "logging" not in result["capabilities"]
    assert "extensions" not in result["capabilities"]


async def test_initialize_with_bad_params_is_32602(serve: Serve) -> None:
    served = await serve()
    stdio = served.stdio()
    for params in (
        {},
        {"protocolVersion": 20251125, "capabilities": {}},
        {"protocolVersion": "2025-11-25"},
    ):
        response = await stdio.ask(legacy_request("bad", "initialize", params))
        assert response["error"]["code"] == -32602
    # Still not initialized: a request without _meta is a modern one, so -32602.
    response = await stdio.ask(legacy_request("after", "tools/list"))
    assert response["error"]["code"] == -32602


async def test_stdio_discover_works_before_and_without_initialize(serve: Serve) -> None:
    served = await serve()
    stdio = served.stdio()
    response = await stdio.ask(request("d1", "server/discover"))
    result = response["result"]
    assert result["resultType"] == "complete"
    # A dual-era server lists its legacy versions too.
    assert result["supportedVersions"] == ["2026-07-28", *HANDSHAKE_VERSIONS]
    await stdio.initialize()
    response = await stdio.ask(request("d2", "server/discover"))
    assert response["result"]["supportedVersions"][0] == "2026-07-28"


async def test_stdio_ping_before_initialize_is_empty_result(serve: Serve) -> None:
    served = await serve()
    stdio = served.stdio()
    response = await stdio.ask(legacy_request("p", "ping"))
    assert response == {"jsonrpc": "2.0", "id": "p", "result": {}}
    response = await stdio.ask(legacy_request(7, "ping", {}))
    assert response["result"] == {}


async def test_stdio_request_without_meta_or_session_is_modern_32602(serve: Serve) -> None:
    served = await serve()
    stdio = served.stdio()
    for method, params in (
        ("tools/list", None),
        ("tools/call", {"name": "echo"}),
        ("logging/setLevel", {"level": "info"}),
    ):
        stdio.checker.expect_modern(method)  # answered on the modern wire
        response = await stdio.ask(legacy_request(method, method, params))
        wire_schema.check_response(method, response)
        assert response["error"]["code"] == -32602, response


async def test_stdio_32602_before_initialize_names_the_supported_versions(serve: Serve) -> None:
    """A ping before initialize aside, everything else is -32602 naming the supported
    versions, so that a client that forgot ``_meta`` (or a legacy client that skipped
    ``initialize``) learns its options."""
    served = await serve()
    stdio = served.stdio()
    stdio.checker.expect_modern(1)
    response = await stdio.ask(legacy_request(1, "tools/list"))
    error = response["error"]
    assert error["code"] == -32602
    named = json.dumps(error)
    assert all(version in named for version in ["2026-07-28", *HANDSHAKE_VERSIONS]), error


async def test_modern_messages_stay_modern_inside_a_stdio_session(serve: Serve) -> None:
    served = await serve()
    stdio = served.stdio()
    await stdio.initialize()

    modern = await stdio.ask(request("m1", "tools/list"))
    assert modern["result"]["resultType"] == "complete"
    assert "ttlMs" in modern["result"]
    assert "cacheScope" in modern["result"]
    assert "io.modelcontextprotocol/serverInfo" in modern["result"]["_meta"]
    tools = {tool["name"]: tool for tool in modern["result"]["tools"]}
    assert tools["count"]["outputSchema"] == {"type": "integer"}

    old = await stdio.ask(legacy_request("l1", "tools/list"))
    assert "resultType" not in old["result"]
    tools = {tool["name"]: tool for tool in old["result"]["tools"]}
    # A 2025-era outputSchema is an object: the number is wrapped as "result".
    assert tools["count"]["outputSchema"] == {
        "type": "object",
        "properties": {"result": {"type": "integer"}},
        "required": ["result"],
    }

    modern = await stdio.ask(request("m2", "tools/call", {"name": "count", "arguments": {"n": 7}}))
    assert modern["result"]["structuredContent"] == 7
    assert modern["result"]["resultType"] == "complete"
    old = await stdio.ask(legacy_call("l2", "count", {"n": 7}))
    assert old["result"]["structuredContent"] == {"result": 7}

    # Modern errors stay modern: a legacy version in _meta is -32022.
    stdio.checker.expect_modern("m3")
    bad = {**META, "io.modelcontextprotocol/protocolVersion": "2025-11-25"}
    response = await stdio.ask(
        {"jsonrpc": "2.0", "id": "m3", "method": "tools/list", "params": {"_meta": bad}}
    )
    assert response["error"]["code"] == -32022
    assert "initialize" in response["error"]["message"]
    assert "2026-07-28" in response["error"]["data"]["supported"]


async def test_legacy_off_refuses_initialize_with_32022(serve: Serve) -> None:
    served = await serve(legacy=False)
    stdio = served.stdio()
    stdio.checker.expect_modern(0)
    stdio.checker.expect_modern(1)
    response = await stdio.ask(legacy_init())
    error = response["error"]
    assert error["code"] == -32022
    assert error["data"]["supported"] == ["2026-07-28"]
    assert "2026-07-28" in error["message"]
    response = await stdio.ask(legacy_request(1, "ping"))  # no legacy ping either
    assert response["error"]["code"] == -32602

    client = served.client()
    client.checker.expect_modern(0)
    reply = await client.post(legacy_init(), headers=client.headers())
    assert reply.status == 400
    assert reply.error["code"] == -32022
    assert reply.error["data"]["supported"] == ["2026-07-28"]
    assert "mcp-session-id" not in reply.headers


async def test_modern_request_with_a_session_id_is_modern(serve: Serve) -> None:
    served = await serve()
    client = served.client()
    await client.initialize()
    assert client.session_id is not None
    modern = request(5, "tools/list")
    headers = {
        "content-type": "application/json",
        "accept": "application/json, text/event-stream",
        "mcp-protocol-version": "2026-07-28",
        "mcp-method": "tools/list",
        "mcp-session-id": client.session_id,
    }
    reply = await client.post(modern, headers=headers)
    assert reply.status == 200
    assert reply.result["resultType"] == "complete"
    assert "ttlMs" in reply.result
    # A modern request ignores any Mcp-Session-Id, even an unknown one.
    reply = await client.post(
        request(6, "tools/list"), headers={**headers, "mcp-session-id": "nope"}
    )
    assert reply.status == 200
    assert reply.result["resultType"] == "complete"
    # Modern errors stay modern: no _meta capabilities -> 400/-32602, not a session error.
    broken = {
        "jsonrpc": "2.0",
        "id": 7,
        "method": "tools/list",
        "params": {"_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}},
    }
    reply = await client.post(broken, headers=headers)
    assert reply.status == 400
    assert reply.error["code"] == -32602


# --------------------------------------------------------------------------- legacy results


async def test_legacy_results_have_no_modern_fields(serve: Serve) -> None:
    served = await serve()
    server = served.server
    session = new_session(server)
    for request_id, method, params in [
        (1, "tools/list", None),
        (2, "resources/list", None),
        (3, "resources/templates/list", None),
        (4, "resources/read", {"uri": "file:///a.txt"}),
        (5, "prompts/list", None),
        (6, "prompts/get", {"name": "greet", "arguments": {"who": "Ann"}}),
        (
            7,
            "completion/complete",
            {
                "ref": {"type": "ref/prompt", "name": "greet"},
                "argument": {"name": "who", "value": "al"},
            },
        ),
        (8, "tools/call", {"name": "add", "arguments": {"a": 1, "b": 2}}),
        (9, "ping", None),
        (10, "logging/setLevel", {"level": "debug"}),
        (11, "resources/subscribe", {"uri": "watched://doc"}),
        (12, "resources/unsubscribe", {"uri": "watched://doc"}),
    ]:
        response = await sans_io(server, legacy_request(request_id, method, params), session)
        result = response["result"]
        for key in ("resultType", "ttlMs", "cacheScope"):
            assert key not in result, (method, result)
        assert "io.modelcontextprotocol/serverInfo" not in result.get("_meta", {})
    completed = await sans_io(
        server,
        legacy_request(
            13,
            "completion/complete",
            {
                "ref": {"type": "ref/resource", "uri": "notes://{note_id}"},
                "argument": {"name": "note_id", "value": "n"},
            },
        ),
        session,
    )
    assert completed["result"]["completion"] == {"values": ["n1", "n2"], "total": 3}


async def test_structured_content_rules_for_legacy_tools(serve: Serve) -> None:
    served = await serve()
    server = served.server
    session = new_session(server)
    listed = await sans_io(server, legacy_request(1, "tools/list"), session)
    tools = {tool["name"]: tool for tool in listed["result"]["tools"]}
    assert tools["count"]["outputSchema"] == {
        "type": "object",
        "properties": {"result": {"type": "integer"}},
        "required": ["result"],
    }
    assert tools["add"]["outputSchema"] == {
        "type": "object",
        "properties": {"total": {"type": "integer"}},
        "required": ["total"],
    }
    counted = await sans_io(server, legacy_call(2, "count", {"n": 41}), session)
    assert counted["result"] == {
        "content": [{"type": "text", "text": "41"}],
        "structuredContent": {"result": 41},
    }
    added = await sans_io(server, legacy_call(3, "add", {"a": 2, "b": 3}), session)
    assert added["result"]["structuredContent"] == {"total": 5}
    assert text_of(added["result"]) == '{"total":5}'
    failed = await sans_io(server, legacy_call(4, "fail", {"reason": "why"}), session)
    assert failed["result"]["isError"] is True
    assert text_of(failed["result"]) == "failed: why"
    unknown = await sans_io(server, legacy_call(5, "nope", {}), session)
    assert unknown["error"]["code"] == -32602


async def test_missing_resource_is_32002_with_uri(serve: Serve) -> None:
    served = await serve()
    server = served.server
    session = new_session(server)
    response = await sans_io(
        server, legacy_request(1, "resources/read", {"uri": "file:///missing.txt"}), session
    )
    assert response["error"]["code"] == -32002
    assert response["error"]["data"] == {"uri": "file:///missing.txt"}
    # The same read on the modern wire stays -32602.
    modern = await server.handle(request(2, "resources/read", {"uri": "file:///missing.txt"}))
    assert modern is not None
    wire_schema.check_response("resources/read", modern)
    assert modern["error"]["code"] == -32602


async def test_modern_only_methods_are_32601_inside_a_session(serve: Serve) -> None:
    served = await serve()
    server = served.server
    session = new_session(server)
    for method, params in (
        ("server/discover", None),
        ("subscriptions/listen", {"notifications": {"toolsListChanged": True}}),
        ("no/such/method", None),
    ):
        response = await sans_io(server, legacy_request(1, method, params), session)
        assert response["error"]["code"] == -32601, response
    again = await sans_io(server, legacy_init(), session)
    assert again["error"]["code"] == -32600


async def test_logging_set_level(serve: Serve) -> None:
    served = await serve()
    server = served.server
    session = new_session(server)
    ok = await sans_io(server, legacy_request(1, "logging/setLevel", {"level": "warning"}), session)
    assert ok["result"] == {}
    assert session.log_level == "warning"
    for level in ("loud", None, 3, "WARNING"):
        bad = await sans_io(
            server, legacy_request(2, "logging/setLevel", {"level": level}), session
        )
        assert bad["error"]["code"] == -32602, level
    assert session.log_level == "warning"

    quiet = await serve(client_logging=False)
    session = new_session(quiet.server)
    response = await sans_io(
        quiet.server, legacy_request(3, "logging/setLevel", {"level": "info"}), session
    )
    assert response["error"]["code"] == -32601


async def test_subscribe_needs_a_uri(serve: Serve) -> None:
    served = await serve()
    session = new_session(served.server)
    for params in (None, {}, {"uri": 5}):
        response = await sans_io(
            served.server, legacy_request(1, "resources/subscribe", params), session
        )
        assert response["error"]["code"] == -32602


async def test_ctx_log_respects_the_session_level(serve: Serve) -> None:
    served = await serve()
    stdio = served.stdio()
    await stdio.initialize()

    async def chatty(request_id: str) -> tuple[str, list[str]]:
        await stdio.send(legacy_call(request_id, "chatty", {}))
        response, others = await stdio.read_until(request_id)
        assert all(note["method"] == "notifications/message" for note in others)
        assert all(note["params"]["logger"] == "chatty" for note in others)
        return text_of(response["result"]), [note["params"]["level"] for note in others]

    # Without logging/setLevel the client hears info and above.
    assert await chatty("c1") == ("info,warning,error", ["info", "warning", "error"])
    await stdio.ask(legacy_request("s1", "logging/setLevel", {"level": "error"}))
    assert await chatty("c2") == ("error", ["error"])
    await stdio.ask(legacy_request("s2", "logging/setLevel", {"level": "debug"}))
    assert await chatty("c3") == ("debug,info,warning,error", ["debug", "info", "warning", "error"])


async def test_progress_notifications_need_a_progress_token(serve: Serve) -> None:
    served = await serve()
    stdio = served.stdio()
    await stdio.initialize()
    await stdio.send(legacy_call("p1", "progressive", {"steps": 3}, progressToken="tok"))
    response, others = await stdio.read_until("p1")
    assert text_of(response["result"]) == "done after 3"
    assert [note["params"] for note in others] == [
        {"progressToken": "tok", "progress": step, "total": 3, "message": f"step {step}"}
        for step in (1, 2, 3)
    ]
    await stdio.send(legacy_call("p2", "progressive", {"steps": 2}, progressToken=99))
    response, others = await stdio.read_until("p2")
    assert [note["params"]["progressToken"] for note in others] == [99, 99]
    response = await stdio.ask(legacy_call("p3", "progressive", {"steps": 2}))
    assert text_of(response["result"]) == "done after 2"


# ---------------------------------------------------------------- session notifications


async def test_stdio_resource_subscriptions(serve: Serve) -> None:
    served = await serve()
    stdio = served.stdio()
    await stdio.initialize()

    async def touch(request_id: str, uri: str) -> list[dict[str, Any]]:
        await stdio.send(legacy_call(request_id, "touch", {"uri": uri}))
        response, others = await stdio.read_until(request_id)
        assert text_of(response["result"]) == f"touched {uri}"
        return others

    assert await touch("t0", "watched://doc") == []  # not subscribed yet
    response = await stdio.ask(legacy_request("s", "resources/subscribe", {"uri": "watched://doc"}))
    assert response["result"] == {}
    updated = {
        "jsonrpc": "2.0",
        "method": "notifications/resources/updated",
        "params": {"uri": "watched://doc"},
    }
    assert await touch("t1", "watched://doc") == [updated]
    assert await touch("t2", "file:///a.txt") == []  # another resource
    response = await stdio.ask(
        legacy_request("u", "resources/unsubscribe", {"uri": "watched://doc"})
    )
    assert response["result"] == {}
    assert await touch("t3", "watched://doc") == []


async def test_stdio_list_changed_reaches_the_session(serve: Serve) -> None:
    served = await serve()
    stdio = served.stdio()
    await stdio.initialize()
    await stdio.send(legacy_call("a", "add_tool", {"name": "fresh"}))
    # The change is published asynchronously: before or after the answer.
    seen = [await stdio.read(), await stdio.read()]
    response = next(message for message in seen if "id" in message)
    assert text_of(response["result"]) == "added fresh"
    seen.remove(response)
    assert seen == [{"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}]
    listed = await stdio.ask(legacy_request("l", "tools/list"))
    assert "fresh" in [tool["name"] for tool in listed["result"]["tools"]]
    called = await stdio.ask(legacy_call("c", "fresh", {}))
    assert text_of(called["result"]) == "I am fresh"


async def test_http_standalone_stream_carries_session_notifications(serve: Serve) -> None:
    served = await serve()
    client = served.client()
    await client.initialize()
    stream = await client.get()
    assert stream.status == 200
    assert stream.is_sse
    priming = await stream.next_event()  # priming: an id and empty data first
    assert priming is not None
    assert priming.id
    assert priming.data == ""

    reply = await client.post(legacy_request(1, "resources/subscribe", {"uri": "watched://doc"}))
    assert reply.status == 200
    assert reply.result == {}
    reply = await client.post(legacy_call(2, "touch", {"uri": "watched://doc"}))
    assert text_of(reply.result) == "touched watched://doc"
    assert reply.messages == [reply.message]  # nothing but the answer on the POST
    updated = await stream.next_event()
    assert updated is not None
    assert updated.id
    assert updated.message == {
        "jsonrpc": "2.0",
        "method": "notifications/resources/updated",
        "params": {"uri": "watched://doc"},
    }

    await client.post(legacy_request(3, "resources/unsubscribe", {"uri": "watched://doc"}))
    await client.post(legacy_call(4, "touch", {"uri": "watched://doc"}))
    await client.post(legacy_call(5, "add_tool", {"name": "later"}))
    # The next event is the list change: nothing was sent for the unsubscribed resource.
    changed = await stream.next_message()
    assert changed == {"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}
    ids = [event.id for event in stream.events]
    assert len(set(ids)) == len(ids)


async def test_a_quiet_get_stream_gets_keep_alive_comments(serve: Serve) -> None:
    """So that a proxy's idle timeout ends only streams whose peer is gone."""
    served = await serve(keepalive_seconds=0.05)
    client = served.client()
    await client.initialize()
    stream = await client.get()
    await stream.next_event()  # priming
    await asyncio.sleep(0.4)  # quiet: only comments go out meanwhile
    await client.post(legacy_call(1, "add_tool", {"name": "later"}))
    changed = await stream.next_message()
    assert changed == {"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}
    assert stream.keepalives >= 3


async def test_notifications_do_not_cross_sessions(serve: Serve) -> None:
    served = await serve()
    first, second = served.client(), served.client()
    await first.initialize()
    await second.initialize()
    assert first.session_id != second.session_id
    stream_one, stream_two = await first.get(), await second.get()
    await stream_one.next_event()
    await stream_two.next_event()
    await second.post(legacy_request(1, "resources/subscribe", {"uri": "watched://doc"}))
    await first.post(legacy_call(2, "touch", {"uri": "watched://doc"}))
    await first.post(legacy_call(3, "add_tool", {"name": "shared"}))
    assert (await stream_two.next_message())["method"] == "notifications/resources/updated"
    assert (await stream_two.next_message())["method"] == "notifications/tools/list_changed"
    assert (await stream_one.next_message())["method"] == "notifications/tools/list_changed"


# --------------------------------------------------------------------------- HTTP sessions


async def test_session_ids_are_visible_ascii_and_unique(serve: Serve) -> None:
    served = await serve()
    ids = set()
    for _ in range(20):
        client = served.client()
        reply = await client.initialize()
        session_id = reply.headers["mcp-session-id"]
        assert session_id
        assert all(0x21 <= ord(char) <= 0x7E for char in session_id)
        assert len(session_id) >= 16
        ids.add(session_id)
    assert len(ids) == 20
    assert len(served.sessions) == 20


async def test_session_id_is_required_after_initialize(serve: Serve) -> None:
    served = await serve()
    client = served.client()
    await client.initialize()
    for message in (legacy_request(1, "tools/list"), legacy_request(2, "ping")):
        reply = await client.post(message, headers=client.headers(mcp_session_id=None))
        assert reply.status == 400
        assert reply.error["code"] == -32600
    # Without a version header too (absent means a legacy 2025-03-26 client).
    headers = client.headers(mcp_session_id=None, mcp_protocol_version=None)
    reply = await client.post(legacy_request(3, "tools/list"), headers=headers)
    assert reply.status == 400
    # With it, all is well.
    reply = await client.post(legacy_request(4, "ping"))
    assert reply.status == 200
    assert reply.result == {}


async def test_unknown_session_is_404(serve: Serve) -> None:
    served = await serve()
    client = served.client()
    client.session_id = "no-such-session"
    client.version = "2025-11-25"
    reply = await client.post(legacy_request(1, "tools/list"))
    assert reply.status == 404
    assert reply.error["code"] == -32600
    get = await client.get()
    assert get.status == 404
    assert (await get.reply()).error["code"] == -32600
    deleted = await client.delete()
    assert deleted.status == 404
    # A notification or a response with an unknown session: 404 too.
    reply = await client.post(notification("notifications/initialized"))
    assert reply.status == 404
    reply = await client.post(answer({"id": "mcpserve-1"}, {}))
    assert reply.status == 404


async def test_delete_ends_the_session(serve: Serve) -> None:
    served = await serve()
    client = served.client()
    await client.initialize()
    assert len(served.sessions) == 1
    reply = await client.post(legacy_request(1, "ping"))
    assert reply.status == 200
    deleted = await client.delete()
    assert deleted.status == 200
    assert len(served.sessions) == 0
    # One sink per app, whatever the number of sessions: none is left behind by a session.
    assert served.server.subscriptions.sinks == {served.app.handshake.sessions._on_event}
    assert (await client.post(legacy_request(2, "ping"))).status == 404
    assert (await client.get()).status == 404
    assert (await client.delete()).status == 404


async def test_delete_cancels_requests_in_flight(serve: Serve) -> None:
    served = await serve()
    client = served.client()
    await client.initialize()
    stream = await client.open(legacy_call(1, "wait_forever", {"tag": "del"}, progressToken=1))
    assert (await stream.next_message())["method"] == "notifications/progress"
    assert (await client.delete()).status == 200
    assert await served.marker("del", "finally") == "cancelled=True"
    rest = await stream.read_all()
    assert not [e for e in rest if e.message is not None and "id" in e.message]


async def test_deleting_a_session_while_a_tool_waits_on_the_client_ends_quietly(
    serve: Serve, caplog: pytest.LogCaptureFixture
) -> None:
    """The waiting tool gets a clear error (not a cancellation it cannot tell from any
    other); nothing is logged as a failure; a GET after the DELETE is a quiet 404."""
    served = await serve()
    client = served.client()
    await client.initialize(ALL_CAPABILITIES)
    stream = await client.open(legacy_call(1, "ask_and_record", {"tag": "gone"}))
    assert (await stream.next_message())["method"] == "elicitation/create"
    with caplog.at_level(logging.INFO):
        assert (await client.delete()).status == 200
        outcome = await served.marker("gone", "outcome")
        assert outcome == "error: The session ended before the client answered elicitation/create"
        rest = await stream.read_all()
        assert not [e for e in rest if e.message is not None and "id" in e.message]
        after = await client.get()
        assert after.status == 404
        await after.body()
        await asyncio.sleep(0.05)  # anything logged late would land now
        gc.collect()  # a failed future nobody read would log here
    noisy = [r for r in caplog.records if r.levelno >= logging.WARNING or r.exc_info]
    assert noisy == [], [r.getMessage() for r in noisy]


async def test_get_without_a_session_is_405(serve: Serve) -> None:
    served = await serve()
    client = served.client()
    stream = await client.get()
    assert stream.status == 405
    assert stream.headers["allow"] == "POST"
    await stream.body()
    deleted = await client.delete()
    assert deleted.status == 405


async def test_notifications_and_responses_are_202(serve: Serve) -> None:
    served = await serve()
    client = served.client()
    reply = await client.initialize(initialized=False)
    assert reply.status == 200
    for message in (
        notification("notifications/initialized"),
        notification("notifications/roots/list_changed"),
        notification("notifications/cancelled", {"requestId": 12345}),
        answer({"id": "not-asked"}, {"whatever": True}),
    ):
        reply = await client.post(message)
        assert reply.status == 202
        assert reply.messages == []
    assert served.sessions.get(client.session_id) is not None


@pytest.mark.parametrize("version", ["2026-07-28", "2024-11-05", "banana"])
async def test_unsupported_protocol_version_header_is_400(serve: Serve, version: str) -> None:
    served = await serve()
    client = served.client()
    await client.initialize()
    headers = client.headers(mcp_protocol_version=version)
    reply = await client.post(legacy_request(1, "tools/list"), headers=headers)
    assert reply.status == 400, reply
    assert reply.error["code"] == -32600
    reply = await client.post(legacy_init(), headers=headers)
    assert reply.status == 400
    # Older legacy versions in the header are accepted.
    for ok in HANDSHAKE_VERSIONS:
        reply = await client.post(
            legacy_request(2, "ping"), headers=client.headers(mcp_protocol_version=ok)
        )
        assert reply.status == 200, ok


@pytest.mark.parametrize("method", ["GET", "DELETE"])
async def test_unsupported_protocol_version_header_on_get_and_delete_is_400(
    serve: Serve, method: str
) -> None:
    """legacy/basic/transports.mdx: an unsupported MCP-Protocol-Version MUST get 400."""
    served = await serve()
    client = served.client()
    await client.initialize()
    headers = client.headers(json_body=False, mcp_protocol_version="1999-01-01")
    if method == "GET":
        reader = await client.get(headers=headers)
        status = reader.status
        await reader.close()
    else:
        status = (await client.delete(headers=headers)).status
    assert status == 400
    assert len(served.sessions) == 1  # the session was not ended by a bad DELETE


async def test_max_sessions_refuses_initialize_until_one_ends(serve: Serve) -> None:
    served = await serve(max_sessions=3)
    clients = [served.client() for _ in range(3)]
    for client in clients:
        assert (await client.initialize()).status == 200
    extra = served.client()
    reply = await extra.initialize()
    assert reply.status == 503
    assert reply.error["code"] == -32603
    assert "mcp-session-id" not in reply.headers
    assert len(served.sessions) == 3
    assert (await clients[0].delete()).status == 200
    assert (await extra.initialize()).status == 200
    assert len(served.sessions) == 3
    # The others still work.
    assert (await clients[1].post(legacy_request(1, "ping"))).status == 200


async def test_requests_in_flight_per_session_are_bounded(serve: Serve) -> None:
    served = await serve(max_requests_per_session=2)
    client = served.client()
    await client.initialize()
    running = [
        await client.open(legacy_call(n, "gated", {"tag": f"busy{n}"}, progressToken=n))
        for n in (1, 2)
    ]
    refused = await client.post(legacy_request(3, "ping"))
    assert refused.status == 429
    assert refused.error == {
        "code": -32600,
        "message": "Too many requests in flight in this session (at most 2); wait for "
        "answers first",
    }
    other = served.client()  # another session is not affected
    await other.initialize()
    assert (await other.post(legacy_request(1, "ping"))).status == 200
    served.release("busy1")
    response, _ = await running[0].until_response(1)
    assert text_of(response["result"]) == "released busy1"
    session = served.sessions.peek(client.session_id)
    deadline = time.monotonic() + TIMEOUT
    while len(session.tasks) > 1:  # the answered request's task is ending
        assert time.monotonic() < deadline
        await asyncio.sleep(0.01)
    assert (await client.post(legacy_request(4, "ping"))).status == 200
    served.release("busy2")
    await running[1].until_response(2)


@pytest.mark.parametrize("store", [None], ids=["process"])  # the local clock decides here
async def test_idle_sessions_expire(serve: Serve, monkeypatch: pytest.MonkeyPatch) -> None:
    now = [1000.0]
    clock = SimpleNamespace(monotonic=lambda: now[0])
    monkeypatch.setattr(sessions_module, "time", clock)  # the session store's clock only
    served = await serve(session_idle_seconds=60)
    client = served.client()
    await client.initialize()
    now[0] += 59
    assert (await client.post(legacy_request(1, "ping"))).status == 200  # touched
    now[0] += 59
    assert (await client.post(legacy_request(2, "ping"))).status == 200
    now[0] += 61
    assert (await client.post(legacy_request(3, "ping"))).status == 404
    assert len(served.sessions) == 0
    # An idle session is swept when another one starts, too.
    idle = served.client()
    await idle.initialize()
    now[0] += 61
    await served.client().initialize()
    assert len(served.sessions) == 1
    assert (await idle.post(legacy_request(4, "ping"))).status == 404


@pytest.mark.parametrize("store", [REDIS_PARAM], indirect=True)
async def test_idle_shared_sessions_expire_unless_busy(serve: Serve) -> None:
    """In Redis, a session's lease lasts ``session_idle_seconds`` from its last use, and a
    process renews it while the session is busy there (a request still running)."""
    served = await serve(session_idle_seconds=1)
    client = served.client()
    await client.initialize()
    for n in range(3):  # each use renews the lease
        await asyncio.sleep(0.6)
        assert (await client.post(legacy_request(n, "ping"))).status == 200
    busy = await client.open(legacy_call(10, "gated", {"tag": "lease"}, progressToken=1))
    await served.marker("lease", "started")
    await asyncio.sleep(2.5)  # well past the lease: only the renewal keeps it
    served.release("lease")
    response, _ = await busy.until_response(10)
    assert text_of(response["result"]) == "released lease"
    assert (await client.post(legacy_request(11, "ping"))).status == 200
    await asyncio.sleep(2.2)  # idle now: the lease runs out in Redis, for every process
    assert (await client.post(legacy_request(12, "ping"))).status == 404


async def test_a_session_busy_with_a_request_is_not_idle(
    serve: Serve, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The idle sweep must not end a session whose request is still running: the client is
    waiting on it, not idle (here a tool runs longer than ``session_idle_seconds``)."""
    now = [1000.0]
    monkeypatch.setattr(sessions_module, "time", SimpleNamespace(monotonic=lambda: now[0]))
    served = await serve(session_idle_seconds=60)
    busy = served.client()
    await busy.initialize()
    stream = await busy.open(legacy_call(1, "gated", {"tag": "long"}, progressToken=1))
    assert (await stream.next_message())["method"] == "notifications/progress"
    now[0] += 61
    await served.client().initialize()  # sweeps idle sessions
    served.release("long")
    assert await served.marker("long", "finally") == "cancelled=False"
    response, _ = await stream.until_response(1)
    assert text_of(response["result"]) == "released long"


# ---------------------------------------------------------------- questions to the client


async def test_same_tool_asks_a_modern_client_with_input_required(serve: Serve) -> None:
    served = await serve()
    server = served.server
    capabilities = {"elicitation": {"form": {}}}
    first = request(1, "tools/call", {"name": "ask_name", "arguments": {}})
    first["params"]["_meta"] = meta(**{"io.modelcontextprotocol/clientCapabilities": capabilities})
    response = await server.handle(first)
    assert response is not None
    wire_schema.check_response("tools/call", response)
    result = response["result"]
    assert result["resultType"] == "input_required"
    ((key, asked),) = result["inputRequests"].items()
    assert asked["method"] == "elicitation/create"
    assert asked["params"]["message"] == "What is your name?"
    retry = json.loads(json.dumps(first))
    retry["id"] = 2
    retry["params"]["inputResponses"] = {key: NAME_ANSWER}
    retry["params"]["requestState"] = result["requestState"]
    response = await server.handle(retry)
    assert response is not None
    wire_schema.check_response("tools/call", response)
    assert response["result"]["resultType"] == "complete"
    assert text_of(response["result"]) == "Hello, Ann!"

    # Without the capability: -32021 on the modern wire as well.
    response = await server.handle(request(3, "tools/call", {"name": "ask_name", "arguments": {}}))
    assert response is not None
    wire_schema.check_response("tools/call", response)
    assert response["error"]["code"] == -32021


async def test_same_tool_asks_a_legacy_stdio_client_with_real_requests(serve: Serve) -> None:
    served = await serve()
    stdio = served.stdio()
    await stdio.initialize(ALL_CAPABILITIES)

    async def round_trip(
        request_id: str, tool: str, args: dict[str, Any], answers: dict[str, dict[str, Any]]
    ) -> str:
        await stdio.send(legacy_call(request_id, tool, args))
        asked: list[str] = []
        while True:
            message = await stdio.read()
            if "method" in message:
                assert "id" in message, message
                assert isinstance(message["id"], str)
                asked.append(message["method"])
                await stdio.send(answer(message, answers[message["method"]]))
                continue
            assert message["id"] == request_id
            assert sorted(asked) == sorted(answers)
            return text_of(message["result"])

    answers = {
        "elicitation/create": NAME_ANSWER,
        "sampling/createMessage": SAMPLE_ANSWER,
        "roots/list": ROOTS_ANSWER,
    }
    assert await round_trip("n", "ask_name", {}, {"elicitation/create": NAME_ANSWER}) == (
        "Hello, Ann!"
    )
    assert await round_trip(
        "l", "ask_llm", {"question": "hi?"}, {"sampling/createMessage": SAMPLE_ANSWER}
    ) == ("LLM said: hi there (test-model)")
    assert await round_trip("r", "ask_roots", {}, {"roots/list": ROOTS_ANSWER}) == (
        "Roots: file:///home/ann"
    )
    assert await round_trip("a", "ask_all", {}, answers) == "Ann|hi there|1 roots"


async def test_legacy_questions_need_the_capability_declared_at_initialize(serve: Serve) -> None:
    served = await serve()
    stdio = served.stdio()
    await stdio.initialize({"sampling": {}})  # no elicitation, no roots
    for request_id, tool, args in (
        ("n", "ask_name", {}),
        ("r", "ask_roots", {}),
        ("a", "ask_all", {}),
    ):
        response = await stdio.ask(legacy_call(request_id, tool, args))
        assert response["error"]["code"] == -32021, response

    client = served.client()
    await client.initialize({})
    reply = await client.post(legacy_call(1, "ask_llm", {"question": "q"}))
    assert reply.status == 200
    assert reply.error["code"] == -32021
    # Only what was negotiated at initialize counts; capabilities in a legacy
    # request's _meta (no protocol version there, so still legacy) change nothing.
    sneaky = legacy_call(2, "ask_llm", {"question": "q"})
    sneaky["params"]["_meta"] = {"io.modelcontextprotocol/clientCapabilities": {"sampling": {}}}
    reply = await client.post(sneaky)
    assert reply.error["code"] == -32021


async def test_legacy_elicitation_round_trip_over_http(serve: Serve) -> None:
    served = await serve()
    client = served.client()
    await client.initialize(ALL_CAPABILITIES)
    stream = await client.open(legacy_call(1, "ask_name", {}))
    assert stream.status == 200
    assert stream.is_sse
    priming = await stream.next_event()
    assert priming is not None
    assert priming.id
    assert priming.data == ""
    asked_event = await stream.next_event()
    assert asked_event is not None
    assert asked_event.id
    asked = asked_event.message
    assert asked is not None
    assert asked["method"] == "elicitation/create"
    assert asked["params"]["mode"] == "form"
    assert asked["params"]["requestedSchema"]["properties"] == {"name": {"type": "string"}}
    reply = await client.post(answer(asked, NAME_ANSWER))
    assert reply.status == 202
    response, others = await stream.until_response(1)
    assert others == []
    assert text_of(response["result"]) == "Hello, Ann!"
    assert await stream.next_event() is None  # the stream ends after the response
    ids = [event.id for event in stream.events]
    assert all(ids)
    assert len(set(ids)) == len(ids)


async def test_legacy_questions_over_http_all_at_once(serve: Serve) -> None:
    served = await serve()
    client = served.client()
    await client.initialize(ALL_CAPABILITIES)
    stream = await client.open(legacy_call("all", "ask_all", {}))
    asked = [await stream.next_message() for _ in range(3)]
    assert sorted(message["method"] for message in asked) == [
        "elicitation/create",
        "roots/list",
        "sampling/createMessage",
    ]
    assert len({message["id"] for message in asked}) == 3
    answers = {
        "elicitation/create": {"action": "accept", "content": {"name": "Bo"}},
        "sampling/createMessage": SAMPLE_ANSWER,
        "roots/list": ROOTS_ANSWER,
    }
    for message in reversed(asked):  # in any order
        assert (await client.post(answer(message, answers[message["method"]]))).status == 202
    response, _ = await stream.until_response("all")
    assert text_of(response["result"]) == "Bo|hi there|1 roots"


async def test_elicitation_for_older_versions_has_no_mode(serve: Serve) -> None:
    served = await serve()
    client = served.client()
    await client.initialize({"elicitation": {}}, version="2025-06-18")
    assert client.version == "2025-06-18"
    stream = await client.open(legacy_call(1, "ask_name", {}))
    asked = await stream.next_message()  # checked: no "mode" for 2025-06-18
    assert asked["method"] == "elicitation/create"
    assert "mode" not in asked["params"]
    await client.post(answer(asked, {"action": "decline"}))
    response, _ = await stream.until_response(1)
    assert text_of(response["result"]) == "No name (decline)"


async def test_url_elicitation_to_a_legacy_client(serve: Serve) -> None:
    """2025-11-25 ``ElicitRequestURLParams`` requires ``elicitationId`` (the id that
    ``notifications/elicitation/complete`` names later); the 2026-07-28 form has none, so the
    legacy request must get one. The request is schema-checked as it arrives."""
    served = await serve()
    stdio = served.stdio()
    await stdio.initialize({"elicitation": {"form": {}}})  # no URL mode declared
    response = await stdio.ask(legacy_call("no", "ask_url", {}))
    assert response["error"]["code"] == -32021

    stdio = served.stdio()
    await stdio.initialize({"elicitation": {"url": {}}})
    await stdio.send(legacy_call("u", "ask_url", {}))
    asked = await stdio.read()  # fails validation without params.elicitationId
    assert asked["method"] == "elicitation/create"
    assert asked["params"]["mode"] == "url"
    assert asked["params"]["url"] == "https://example.com/sign-in"
    await stdio.send(answer(asked, {"action": "accept"}))
    response, _ = await stdio.read_until("u")
    assert text_of(response["result"]) == "URL elicitation: accept"


async def test_empty_elicitation_capability_means_form_mode(serve: Serve) -> None:
    """client/elicitation.mdx: ``"elicitation": {}`` is form mode only (backwards compatible)."""
    served = await serve()
    stdio = served.stdio()
    await stdio.initialize({"elicitation": {}})
    await stdio.send(legacy_call("n", "ask_name", {}))
    asked = await stdio.read()
    assert asked["method"] == "elicitation/create"
    await stdio.send(answer(asked, NAME_ANSWER))
    response, _ = await stdio.read_until("n")
    assert text_of(response["result"]) == "Hello, Ann!"
    response = await stdio.ask(legacy_call("u", "ask_url", {}))
    assert response["error"]["code"] == -32021


async def test_a_client_that_never_answers_gets_a_tool_error(serve: Serve) -> None:
    served = await serve(legacy_client_timeout_seconds=0.2)
    stdio = served.stdio()
    await stdio.initialize(ALL_CAPABILITIES)
    await stdio.send(legacy_call("n", "ask_name", {}))
    response, others = await stdio.read_until("n")
    assert [message["method"] for message in others] == ["elicitation/create"]
    assert response["result"]["isError"] is True
    assert "elicitation/create" in text_of(response["result"])

    client = served.client()
    await client.initialize(ALL_CAPABILITIES)
    reply = await client.post(legacy_call(1, "ask_llm", {"question": "q"}))
    assert [message.get("method") for message in reply.messages[:-1]] == ["sampling/createMessage"]
    assert reply.result["isError"] is True
    # A late answer is accepted (202) and ignored.
    late = await client.post(answer(reply.messages[0], SAMPLE_ANSWER))
    assert late.status == 202


async def test_a_client_error_answer_is_not_the_tool_calls_own_error(serve: Serve) -> None:
    """A client that answers ``roots/list`` with -32601 (it has no roots handler) must not make
    the server answer ``tools/call`` with -32601 "Method not found": that code says the
    *server* lacks ``tools/call``. The timeout path already turns into a tool error."""
    served = await serve()
    stdio = served.stdio()
    await stdio.initialize(ALL_CAPABILITIES)
    await stdio.send(legacy_call("r", "ask_roots", {}))
    asked = await stdio.read()
    assert asked["method"] == "roots/list"
    await stdio.send(
        {
            "jsonrpc": "2.0",
            "id": asked["id"],
            "error": {"code": -32601, "message": "Method not found"},
        }
    )
    response, _ = await stdio.read_until("r")
    assert response.get("error", {}).get("code") != -32601, response


async def test_an_answer_that_does_not_fit_is_asked_again(serve: Serve) -> None:
    served = await serve()
    stdio = served.stdio()
    await stdio.initialize(ALL_CAPABILITIES)
    await stdio.send(legacy_call("n", "ask_name", {}))
    first = await stdio.read()
    await stdio.send(answer(first, {"action": "accept", "content": {"name": 42}}))
    second = await stdio.read()
    assert second["method"] == "elicitation/create"
    assert second["id"] != first["id"]
    await stdio.send(answer(second, NAME_ANSWER))
    response, _ = await stdio.read_until("n")
    assert text_of(response["result"]) == "Hello, Ann!"


# --------------------------------------------------------------------------- streams


async def test_close_stream_ends_the_connection_and_resume_delivers(serve: Serve) -> None:
    served = await serve()
    client = served.client()
    await client.initialize()
    stream = await client.open(legacy_call(1, "reconnect", {"tag": "r1"}))
    assert stream.is_sse
    events = await stream.read_all()  # the server ends this connection itself
    assert events[0].id
    assert events[0].data == ""
    assert events[1].message == {
        "jsonrpc": "2.0",
        "method": "notifications/message",
        "params": {"level": "info", "data": "before the break"},
    }
    assert events[-1].retry == 100
    assert all(event.message is None or "id" not in event.message for event in events)
    assert await served.marker("r1", "started") == "closed=True"
    last = [event.id for event in events if event.id][-1]

    resumed = await client.get(last_event_id=last)
    assert resumed.status == 200
    served.release("r1")
    response, others = await resumed.until_response(1)
    assert text_of(response["result"]) == "reconnected r1"
    assert [note["params"]["data"] for note in others] == ["after the break"]
    assert await resumed.next_event() is None
    ids = [event.id for event in events + resumed.events if event.id]
    assert len(set(ids)) == len(ids)

    # Delivered to the end, the stream is forgotten: nothing is kept that nobody needs. Its
    # event id now opens a fresh standalone stream (the session exists: never a 404), which
    # replays nothing of the old one.
    replay = await client.get(last_event_id=events[0].id)
    assert replay.status == 200
    fresh = await replay.next_event()
    assert fresh is not None
    assert fresh.data == ""
    assert fresh.id is not None
    assert fresh.id.rpartition("-")[::2] != (events[0].id or "").rpartition("-")[::2]
    assert fresh.id.endswith("-0")


async def test_resume_with_a_malformed_event_id_is_400(serve: Serve) -> None:
    served = await serve()
    client = served.client()
    await client.initialize()
    for bad in ("nope", "-", "", "abc-", "-1", "abc-x1"):
        reader = await client.get(last_event_id=bad)
        assert reader.status == 400, bad
        assert "Malformed Last-Event-ID" in (await reader.reply()).error["message"]
    assert len(served.sessions) == 1  # the session is untouched


async def test_resume_with_an_unknown_event_id_opens_a_fresh_standalone_stream(
    serve: Serve,
) -> None:
    """An event id this process does not know (another session's, one of a stream long
    gone, or one issued by another process) opens the session's standalone stream: the
    session exists, so the client never hears 404; nothing of that other stream is shown."""
    served = await serve()
    client = served.client()
    await client.initialize()
    other = served.client()
    await other.initialize()
    stream = await other.get()
    priming = await stream.next_event()
    assert priming is not None
    assert priming.id is not None
    for unknown in (priming.id, "abc-1", "0123456789ab-7"):
        reader = await client.get(last_event_id=unknown)
        assert reader.status == 200, unknown
        fresh = await reader.next_event()
        assert fresh is not None
        assert fresh.data == ""
        assert fresh.id is not None
        assert fresh.id != priming.id
        assert fresh.id.endswith("-0")
    # The last one opened is the session's standalone stream: a list change arrives on it.
    await client.post(legacy_call(1, "add_tool", {"name": "later"}))
    changed = await reader.next_message()
    assert changed == {"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}


async def test_a_resumed_stream_is_delivered_on_one_connection_only(serve: Serve) -> None:
    """legacy/basic/transports.mdx: the server MUST NOT broadcast the same message across
    multiple streams. A client may resume (GET with Last-Event-ID) while the server still
    holds the old connection (a half-open TCP connection it has not noticed yet); then the
    new connection takes over and the old one must not get the same messages."""
    served = await serve()
    client = served.client()
    await client.initialize()
    stream = await client.open(legacy_call(1, "gated", {"tag": "two"}, progressToken="t"))
    assert (await stream.next_message())["method"] == "notifications/progress"
    resumed = await client.get(last_event_id=stream.events[-1].id)
    served.release("two")
    response, _ = await resumed.until_response(1)
    assert text_of(response["result"]) == "released two"
    on_old = [event.message for event in await stream.read_all() if event.message]
    assert on_old == [], "the result went out on two connections"


async def test_disconnect_does_not_cancel_a_legacy_request(serve: Serve) -> None:
    served = await serve()
    client = served.client()
    await client.initialize()
    stream = await client.open(legacy_call(1, "gated", {"tag": "dc"}, progressToken="t"))
    progress = await stream.next_event()
    while progress is not None and progress.message is None:
        progress = await stream.next_event()
    assert progress is not None
    assert progress.message is not None
    assert progress.message["method"] == "notifications/progress"
    await stream.close()  # the client goes away (not a cancellation in this era)
    served.release("dc")
    assert await served.marker("dc", "finally") == "cancelled=False"
    resumed = await client.get(last_event_id=progress.id)
    response, others = await resumed.until_response(1)
    assert others == []
    assert text_of(response["result"]) == "released dc"


async def test_notifications_cancelled_cancels_a_legacy_request(serve: Serve) -> None:
    served = await serve()
    client = served.client()
    await client.initialize()
    stream = await client.open(legacy_call(7, "wait_forever", {"tag": "cx"}, progressToken=7))
    assert (await stream.next_message())["method"] == "notifications/progress"
    reply = await client.post(
        notification("notifications/cancelled", {"requestId": 7, "reason": "user"})
    )
    assert reply.status == 202
    assert await served.marker("cx", "finally") == "cancelled=True"
    rest = await stream.read_all()  # the stream ends, with no response for the request
    assert [event.message for event in rest if event.message] == []

    stdio = served.stdio()
    await stdio.initialize()
    await stdio.send(legacy_call(8, "wait_forever", {"tag": "cs"}, progressToken=8))
    assert (await stdio.read())["method"] == "notifications/progress"
    await stdio.send(notification("notifications/cancelled", {"requestId": 8}))
    assert await served.marker("cs", "finally") == "cancelled=True"
    response = await stdio.ask(legacy_request(9, "ping"))  # nothing came for request 8
    assert response["result"] == {}


async def test_duplicate_request_id_in_flight_is_refused(serve: Serve) -> None:
    served = await serve()
    client = served.client()
    await client.initialize()
    stream = await client.open(legacy_call(3, "gated", {"tag": "dup"}, progressToken=1))
    await stream.next_message()
    reply = await client.post(legacy_call(3, "echo", {"text": "x"}))
    assert reply.status == 400
    assert reply.error["code"] == -32600
    served.release("dup")
    response, _ = await stream.until_response(3)
    assert text_of(response["result"]) == "released dup"


# --------------------------------------------------------------------------- memory


INIT_BODY = json.dumps(legacy_init()).encode()


async def _asgi(app: Any, method: str, headers: list[tuple[bytes, bytes]], body: bytes) -> Any:
    """One bare ASGI call (the measured churn loop: httpx2 under tracemalloc is slow)."""
    sent: list[dict[str, Any]] = []
    delivered = False

    async def receive() -> dict[str, Any]:
        nonlocal delivered
        if not delivered:
            delivered = True
            return {"type": "http.request", "body": body, "more_body": False}
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": method,
        "scheme": "http",
        "path": "/mcp",
        "raw_path": b"/mcp",
        "query_string": b"",
        "root_path": "",
        "client": ("127.0.0.1", 1),
        "server": ("127.0.0.1", 80),
        "headers": [(b"host", b"127.0.0.1"), *headers],
    }
    await app(scope, receive, send)
    start = sent[0]
    return start["status"], dict(start["headers"])


async def test_memory_is_flat_under_session_churn(serve: Serve) -> None:
    """5,000 sessions started and deleted, 5,000 requests rejected: nothing is kept.

    The statuses and bodies are checked through httpx2's ``ASGITransport``; the measured
    loop calls the ASGI app directly, because under tracemalloc httpx2 costs ~0.8 ms a request
    (~12 s for the 15,000 requests), against ~0.6 s in all for the bare calls.
    """
    served = await serve()
    app = served.app
    json_header = (b"content-type", b"application/json")

    # Through httpx2's ASGI transport first: the statuses, and the warm-up.
    transport = httpx2.ASGITransport(app=app)
    async with httpx2.AsyncClient(transport=transport, base_url="http://127.0.0.1") as http:
        for _ in range(300):
            reply = await http.post(
                "/mcp", content=INIT_BODY, headers={"content-type": "application/json"}
            )
            assert reply.status_code == 200
            legacy_schema.check_response("initialize", reply.json())
            session_id = reply.headers["mcp-session-id"]
            gone = await http.delete("/mcp", headers={"mcp-session-id": session_id})
            assert gone.status_code == 200
            unknown = await http.post(
                "/mcp",
                content=b'{"jsonrpc":"2.0","id":1,"method":"ping"}',
                headers={"content-type": "application/json", "mcp-session-id": session_id},
            )
            assert unknown.status_code == 404
            legacy_schema.check_response("ping", unknown.json())
            bad = await http.post(
                "/mcp", content=b"{not json", headers={"content-type": "application/json"}
            )
            assert bad.status_code == 400
            legacy_schema.check_response(None, bad.json())  # no era yet: valid in both
            wire_schema.check_response(None, bad.json())
    assert len(served.sessions) == 0

    async def churn(cycles: int) -> None:
        for i in range(cycles):
            status, headers = await _asgi(app, "POST", [json_header], INIT_BODY)
            assert status == 200
            session = (b"mcp-session-id", headers[b"mcp-session-id"])
            status, _ = await _asgi(app, "DELETE", [session], b"")
            assert status == 200
            if i % 2:
                status, _ = await _asgi(
                    app, "POST", [json_header, session], b'{"jsonrpc":"2.0","id":1,"method":"ping"}'
                )
                assert status == 404
            else:
                status, _ = await _asgi(app, "POST", [json_header], b"{not json")
                assert status == 400

    await churn(500)  # warm-up: caches, interned strings, free lists
    gc.collect()
    tracemalloc.start()
    try:
        baseline = tracemalloc.get_traced_memory()[0]
        await churn(5000)  # 5,000 initialize/DELETE cycles and 5,000 rejected requests
        gc.collect()
        growth = tracemalloc.get_traced_memory()[0] - baseline
    finally:
        tracemalloc.stop()
    assert growth < 1_000_000, f"retained {growth} bytes after 5,000 sessions"
    assert len(served.sessions) == 0
    assert len(served.server.subscriptions.sinks) == 1  # the app's own, never one per session


async def test_answered_requests_are_not_retained_by_a_live_session(serve: Serve) -> None:
    """A session's memory must not grow with the size of the answers it already got.

    Plain JSON answers can never be resumed (the client saw no event id), yet each request's
    stream, with its result as bytes and as a dict, stays in ``session.streams`` until 32
    newer requests push it out: 32 x answer size per session, times ``max_sessions``.
    """
    served = await serve()

    @served.server.tool
    def big(size: int) -> str:
        return "x" * size

    client = served.client()
    await client.initialize()
    reply = await client.post(legacy_call(0, "big", {"size": 10}))
    assert not reply.is_sse
    gc.collect()
    tracemalloc.start()
    try:
        baseline = tracemalloc.get_traced_memory()[0]
        for request_id in range(1, 41):
            reply = await client.post(legacy_call(request_id, "big", {"size": 1_000_000}))
            assert reply.status == 200
            assert len(text_of(reply.result)) == 1_000_000
        del reply
        client.checker.received_messages.clear()  # the test client's own record of answers
        gc.collect()
        retained = tracemalloc.get_traced_memory()[0] - baseline
    finally:
        tracemalloc.stop()
    assert retained < 5_000_000, f"one idle session retains {retained / 1e6:.1f} MB of answers"


async def test_a_schema_that_does_not_promise_an_object_wraps_every_structured_result() -> None:
    # The schema is listed wrapped, so an object result must come wrapped too, or it
    # would not fit what the legacy client was told.
    import jsonschema

    server = Server("either")
    schema = {"anyOf": [{"type": "object", "properties": {"a": {"type": "integer"}},
                         "required": ["a"]}, {"type": "integer"}]}  # fmt: skip

    @server.tool(output_schema=schema)
    def pick(n: int) -> Any:
        return {"a": n} if n else 3

    stdio = FakeStdio(server)
    try:
        await stdio.initialize()
        listed = await stdio.ask(legacy_request(1, "tools/list"))
        [tool] = listed["result"]["tools"]
        published = tool["outputSchema"]
        assert published == {"type": "object", "properties": {"result": schema},
                             "required": ["result"]}  # fmt: skip
        for call_id, n, expected in [(2, 5, {"result": {"a": 5}}), (3, 0, {"result": 3})]:
            answer = await stdio.ask(legacy_call(call_id, "pick", {"n": n}))
            assert answer["result"]["structuredContent"] == expected
            jsonschema.validate(expected, published)
    finally:
        await stdio.session.finish()
