"""What a handler can reach beyond its arguments, on the wire: the HTTP request behind a
call, its own notifications, the raw requestState, chosen HTTP statuses, routes beside the
endpoint, client notification handlers (with middleware seeing them), resources listed by a
function, a typed lifespan, and a lifespan the ASGI host never ran.

stdio here is the real framing (``serve_stream`` on a stream fed line by line), in process.
"""

from __future__ import annotations

import asyncio
import json
import logging
import subprocess
import sys
import textwrap
import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from starlette.applications import Starlette
from starlette.responses import PlainTextResponse
from starlette.routing import Mount, Route

from legacy_schema import initialize_message
from mcpserve import Auth, CallNext, Context, MCPError, ResourceNotFound, Server, blocking
from mcpserve.protocol.errors import MissingClientCapability
from mcpserve.transports.stdio import serve_stream
from wire_helpers import ROOT, asgi_client, call, mcp_headers, post, request

NOTIFY = {"jsonrpc": "2.0", "method": "vendor/ping", "params": {"n": 7}}


# ---------------------------------------------------------------------------- stdio in process


class Stdio:
    """A server behind the stdio framing: lines in, lines out."""

    def __init__(self, server: Server) -> None:
        self.reader = asyncio.StreamReader()
        self.lines: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        self.buffer = b""
        self.task = asyncio.create_task(serve_stream(server, self.reader, self._write))

    def _write(self, data: bytes) -> None:
        self.buffer += data
        while b"\n" in self.buffer:
            line, self.buffer = self.buffer.split(b"\n", 1)
            self.lines.put_nowait(json.loads(line))

    def send(self, message: dict[str, Any]) -> None:
        self.reader.feed_data(json.dumps(message).encode() + b"\n")

    async def next(self) -> dict[str, Any]:
        return await asyncio.wait_for(self.lines.get(), 5)

    async def close(self) -> None:
        self.reader.feed_eof()
        await asyncio.wait_for(self.task, 5)


@asynccontextmanager
async def stdio(server: Server) -> AsyncIterator[Stdio]:
    wire = Stdio(server)
    try:
        yield wire
    finally:
        await wire.close()


# ---------------------------------------------------------------------------- ctx.http


def http_server() -> Server:
    server = Server("hooks")

    @server.tool
    def where(ctx: Context) -> dict[str, Any]:
        http = ctx.http
        if http is None:
            return {"http": None}
        return {"method": http.method, "path": http.path, "query": http.query,
                "agent": http.headers.get("user-agent"), "client": list(http.client or ()),
                "scheme": http.scheme}  # fmt: skip

    return server


async def test_ctx_http_is_the_http_request_behind_the_call() -> None:
    server = http_server()
    async with asgi_client(server.http_app()) as http:
        headers = {**mcp_headers("tools/call", "where"), "user-agent": "hooks-test/1"}
        reply = await post(http, call(1, "where", {}), headers, path="/mcp?tenant=a&tenant=b")
    assert reply.result["structuredContent"] == {
        "method": "POST", "path": "/mcp", "query": {"tenant": ["a", "b"]},
        "agent": "hooks-test/1", "client": ["127.0.0.1", 123], "scheme": "http",
    }  # fmt: skip


async def test_ctx_http_is_none_in_memory_and_over_stdio(connect: Any) -> None:
    server = http_server()
    async with connect(server) as client:
        result = await client.call_tool("where", {})
    assert result["structuredContent"] == {"http": None}
    async with stdio(server) as wire:
        wire.send(call(1, "where", {}))
        answer = await wire.next()
    assert answer["result"]["structuredContent"] == {"http": None}


async def test_ctx_http_reaches_handshake_era_requests() -> None:
    server = http_server()
    legacy = {"content-type": "application/json", "accept": "application/json, text/event-stream",
              "user-agent": "old-client/2"}  # fmt: skip
    async with asgi_client(server.http_app()) as http:
        started = await http.post("/mcp", json=initialize_message(), headers=legacy)
        headers = {**legacy, "mcp-session-id": started.headers["mcp-session-id"],
                   "mcp-protocol-version": "2025-11-25"}  # fmt: skip
        message = {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                   "params": {"name": "where", "arguments": {}}}  # fmt: skip
        answered = await http.post("/mcp", json=message, headers=headers)
    assert answered.json()["result"]["structuredContent"]["agent"] == "old-client/2"


# ---------------------------------------------------------------------------- statuses


async def test_a_handler_chooses_the_http_status_of_its_error_where_the_spec_lets_it() -> None:
    server = Server("statuses")

    @server.tool
    def slow_down() -> str:
        raise MCPError("Too many calls: wait a minute", code=-32000, http_status=429)

    @server.tool
    def needs_sampling() -> str:
        raise MissingClientCapability({"sampling": {}}, "needs sampling") from None

    @server.resource("notes://{id}")
    def note(id: str) -> str:
        raise ResourceNotFound(f"notes://{id}", http_status=404)

    async with asgi_client(server.http_app()) as http:
        limited = await post(http, call(1, "slow_down", {}))
        gone = await post(http, request(2, "resources/read", {"uri": "notes://9"}))
        fixed = await post(http, call(3, "needs_sampling", {}))
    assert limited.status == 429
    assert limited.error == {"code": -32000, "message": "Too many calls: wait a minute"}
    assert gone.status == 404
    assert gone.error["data"] == {"uri": "notes://9"}
    assert fixed.status == 400  # -32021's status is the spec's: 400 whatever the handler says


def test_an_http_status_must_be_an_error_status() -> None:
    with pytest.raises(ValueError, match="400 to 599"):
        MCPError("x", http_status=200)


# ---------------------------------------------------------------------------- routes


async def test_routes_of_your_own_are_served_beside_the_endpoint() -> None:
    server = http_server()

    async def health(scope: Any, receive: Any, send: Any) -> None:
        await send({"type": "http.response.start", "status": 200,
                    "headers": [(b"content-type", b"text/plain")]})  # fmt: skip
        await send({"type": "http.response.body", "body": b"ok"})

    async def version(_: Any) -> PlainTextResponse:
        return PlainTextResponse("1.2.3")

    app = server.http_app(routes={"/healthz": health, "/version": Route("/version", version)})
    async with asgi_client(app) as http:
        healthy = await http.get("/healthz")
        versioned = await http.get("/version")
        missing = await http.get("/other")
        answered = await post(http, call(1, "where", {}))
    assert (healthy.status_code, healthy.text) == (200, "ok")
    assert (versioned.status_code, versioned.text) == (200, "1.2.3")
    assert missing.status_code == 404
    assert answered.status == 200


# ---------------------------------------------------------------------------- ctx.notify


def notifying_server() -> Server:
    server = Server("notify")

    @server.tool
    async def export(ctx: Context) -> str:
        sent = await ctx.notify("vendor/export/started", {"rows": 3})
        return f"sent={sent}"

    return server


async def test_ctx_notify_sends_a_notification_on_the_requests_stream() -> None:
    server = notifying_server()
    async with asgi_client(server.http_app()) as http:
        streamed = await post(http, call(1, "export", {}))
        json_only = mcp_headers("tools/call", "export", accept="application/json")
        plain = await post(http, call(2, "export", {}), json_only)
    assert streamed.is_sse
    assert streamed.notifications == [
        {"jsonrpc": "2.0", "method": "vendor/export/started", "params": {"rows": 3}}
    ]
    assert streamed.result["content"] == [{"type": "text", "text": "sent=True"}]
    # Without SSE nothing can carry it: nothing is sent, and the handler is told so.
    assert plain.result["content"] == [{"type": "text", "text": "sent=False"}]


async def test_ctx_notify_over_stdio_writes_before_the_response() -> None:
    async with stdio(notifying_server()) as wire:
        wire.send(call(1, "export", {}))
        first, second = await wire.next(), await wire.next()
    assert first == {"jsonrpc": "2.0", "method": "vendor/export/started", "params": {"rows": 3}}
    assert second["result"]["content"] == [{"type": "text", "text": "sent=True"}]


async def test_ctx_notify_in_a_handshake_era_session_goes_on_the_requests_stream() -> None:
    server = notifying_server()
    legacy = {"content-type": "application/json", "accept": "application/json, text/event-stream"}
    async with asgi_client(server.http_app()) as http:
        started = await http.post("/mcp", json=initialize_message(), headers=legacy)
        headers = {**legacy, "mcp-session-id": started.headers["mcp-session-id"],
                   "mcp-protocol-version": "2025-11-25"}  # fmt: skip
        message = {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                   "params": {"name": "export", "arguments": {}}}  # fmt: skip
        answered = await http.post("/mcp", json=message, headers=headers)
    events = [json.loads(line[len("data: "):]) for line in answered.text.splitlines()
              if line.startswith("data: {")]  # fmt: skip
    assert events[0] == {"jsonrpc": "2.0", "method": "vendor/export/started", "params": {"rows": 3}}
    assert events[-1]["result"]["content"] == [{"type": "text", "text": "sent=True"}]


async def test_ctx_notify_sends_nothing_once_the_request_is_cancelled() -> None:
    server = Server("cancelled")
    outcome: list[bool] = []
    started = asyncio.Event()

    @server.tool
    async def wait(ctx: Context) -> str:
        started.set()
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            outcome.append(await ctx.notify("vendor/late"))
            raise
        return "done"

    async with stdio(server) as wire:
        wire.send(call(1, "wait", {}))
        await asyncio.wait_for(started.wait(), 5)
        wire.send({"jsonrpc": "2.0", "method": "notifications/cancelled",
                   "params": {"requestId": 1}})  # fmt: skip
        for _ in range(100):
            if outcome:
                break
            await asyncio.sleep(0.01)
    assert outcome == [False]
    assert wire.lines.empty()


# ---------------------------------------------------------------------------- raw state


async def test_raw_request_state_is_the_string_the_client_echoed() -> None:
    server = Server("raw")
    seen: list[Any] = []

    @server.tool
    async def confirm(ctx: Context) -> str:
        seen.append(ctx.raw_request_state)
        answer = await ctx.elicit("Sure?", {"type": "object", "properties": {}})
        return answer.action

    capabilities = {"io.modelcontextprotocol/clientCapabilities": {"elicitation": {"form": {}}}}
    async with asgi_client(server.http_app()) as http:
        asked = await post(http, call(1, "confirm", {}, **capabilities))
        state = asked.result["requestState"]
        (key,) = asked.result["inputRequests"]
        retry = call(2, "confirm", {}, **capabilities)
        answers = {key: {"action": "accept", "content": {}}}
        retry["params"] |= {"requestState": state, "inputResponses": answers}
        answered = await post(http, retry)
    assert answered.result["content"] == [{"type": "text", "text": "accept"}]
    assert seen == [None, state]


# ---------------------------------------------------------------------------- notifications


def listening_server(events: list[Any]) -> Server:
    server = Server("listening")

    @server.notification("vendor/ping")
    async def on_ping(n: int, ctx: Context) -> None:
        events.append(("async", n, ctx.principal, ctx.request.id))

    @server.notification("vendor/tick")
    def on_tick(n: int) -> None:
        events.append(("plain", n, threading.current_thread() is threading.main_thread()))

    @server.notification("vendor/work")
    @blocking
    def on_work(n: int) -> None:
        events.append(("blocking", n, threading.current_thread() is threading.main_thread()))

    @server.notification("notifications/roots/list_changed")
    def on_roots(ctx: Context) -> None:
        events.append(("roots", ctx.protocol_version))

    @server.tool
    def noop() -> str:
        return "ok"

    return server


async def eventually(events: list[Any], count: int) -> None:
    for _ in range(200):
        if len(events) >= count:
            return
        await asyncio.sleep(0.01)
    raise AssertionError(f"expected {count} events, got {events}")


def notification(method: str, **params: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "method": method, "params": params}


async def test_notification_handlers_run_in_each_shape_in_memory() -> None:
    events: list[Any] = []
    server = listening_server(events)
    for method in ("vendor/ping", "vendor/tick", "vendor/work", "vendor/unknown"):
        assert await server.handle(notification(method, n=1)) is None
    assert events == [("async", 1, None, None), ("plain", 1, True), ("blocking", 1, False)]


async def test_notification_handlers_run_over_http_with_the_callers_identity() -> None:
    events: list[Any] = []
    server = listening_server(events)
    app = server.http_app(authenticate=lambda headers: Auth(principal="ana"))
    async with asgi_client(app) as http:
        response = await http.post("/mcp", json=notification("vendor/ping", n=2),
                                   headers=mcp_headers("vendor/ping"))  # fmt: skip
        bad = await http.post("/mcp", json=notification("vendor/ping", n="x"),
                              headers=mcp_headers("vendor/ping"))  # fmt: skip
    assert (response.status_code, bad.status_code) == (202, 202)
    assert events == [("async", 2, "ana", None)]  # params that do not fit: logged, not run


async def test_notification_handlers_run_over_stdio_in_both_eras() -> None:
    events: list[Any] = []
    async with stdio(listening_server(events)) as wire:
        wire.send(notification("vendor/tick", n=3))
        await eventually(events, 1)
        wire.send(initialize_message(1))
        await wire.next()
        wire.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        wire.send(notification("notifications/roots/list_changed"))
        await eventually(events, 2)
    assert events == [("plain", 3, True), ("roots", "2025-11-25")]


async def test_notification_handlers_run_in_a_handshake_era_http_session() -> None:
    events: list[Any] = []
    server = listening_server(events)
    legacy = {"content-type": "application/json", "accept": "application/json, text/event-stream"}
    async with asgi_client(server.http_app()) as http:
        started = await http.post("/mcp", json=initialize_message(), headers=legacy)
        headers = {**legacy, "mcp-session-id": started.headers["mcp-session-id"],
                   "mcp-protocol-version": "2025-11-25"}  # fmt: skip
        accepted = await http.post("/mcp", json=notification("notifications/roots/list_changed"),
                                   headers=headers)  # fmt: skip
    assert accepted.status_code == 202
    assert events == [("roots", "2025-11-25")]


async def test_middleware_sees_notifications_initialize_and_handshake_era_requests() -> None:
    events: list[Any] = []
    server = listening_server(events)
    seen: list[tuple[str, Any]] = []

    @server.middleware
    async def record(ctx: Context, call_next: CallNext) -> dict[str, Any]:
        seen.append((ctx.method, ctx.request.id))
        return await call_next()

    async with stdio(server) as wire:
        wire.send(notification("vendor/unhandled"))
        await eventually(seen, 1)  # a notification is handled in a task of its own
        wire.send(initialize_message(1))
        await wire.next()
        wire.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        await eventually(seen, 3)
        wire.send({"jsonrpc": "2.0", "id": 2, "method": "ping"})
        assert (await wire.next())["result"] == {}
        wire.send({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
                   "params": {"name": "noop", "arguments": {}}})  # fmt: skip
        await wire.next()
    assert seen == [
        ("vendor/unhandled", None),
        ("initialize", 1),
        ("notifications/initialized", None),
        ("ping", 2),
        ("tools/call", 3),
    ]


# ---------------------------------------------------------------------------- resource lister


def listing_server(shape: str) -> Server:
    server = Server("listing", page_size=2)

    @server.resource("notes://pinned")
    def pinned() -> str:
        return "pinned"

    @server.resource("notes://{id}")
    def note(id: str) -> str:
        return f"note {id}"

    entries = [{"uri": f"notes://{i}", "name": f"note {i}"} for i in range(3)]

    async def listed_async(ctx: Context) -> list[dict[str, Any]]:
        return [{**entry, "description": f"for {ctx.principal}"} for entry in entries]

    def listed_plain() -> list[dict[str, Any]]:
        assert threading.current_thread() is threading.main_thread()
        return entries

    @blocking
    def listed_blocking() -> list[dict[str, Any]]:
        assert threading.current_thread() is not threading.main_thread()
        return entries

    chosen = {"async": listed_async, "plain": listed_plain, "blocking": listed_blocking}
    server.resource_lister(chosen[shape])
    return server


@pytest.mark.parametrize("shape", ["async", "plain", "blocking"])
async def test_a_resource_lister_adds_entries_after_the_registered_ones(
    shape: str, connect: Any
) -> None:
    async with connect(listing_server(shape)) as client:
        listed = await client.list_resources()
        read = await client.read_resource("notes://2")
    assert [entry["uri"] for entry in listed] == [
        "notes://pinned", "notes://0", "notes://1", "notes://2"
    ]  # fmt: skip
    assert read["contents"][0]["text"] == "note 2"


async def test_a_lister_alone_declares_resources_and_a_bad_entry_is_an_internal_error() -> None:
    server = Server("only-listed")

    @server.resource_lister
    def broken() -> list[Any]:
        return [{"uri": "x://1"}]  # no name

    async with asgi_client(server.http_app()) as http:
        discovered = await post(http, request(1, "server/discover"))
        refused = await post(http, request(2, "resources/list"))
    assert "resources" in discovered.result["capabilities"]
    assert refused.error["code"] == -32603
    assert "string uri and name" in refused.error["message"]


# ---------------------------------------------------------------------------- lifespans


class State:
    def __init__(self) -> None:
        self.greeting = "hello from the lifespan"


def lifespan_server() -> Server[State]:
    @asynccontextmanager
    async def lifespan(server: Server[State]) -> AsyncIterator[State]:
        yield State()

    server = Server("typed", lifespan=lifespan)

    @server.tool
    def greet(ctx: Context[State]) -> str:
        return ctx.lifespan_state.greeting

    return server


async def test_a_mount_that_never_runs_the_lifespan_gets_it_at_the_first_request(
    caplog: pytest.LogCaptureFixture,
) -> None:
    server = lifespan_server()
    host = Starlette(routes=[Mount("/api", app=server.http_app())])
    async with asgi_client(host) as http:
        with caplog.at_level(logging.WARNING, logger="mcpserve.http"):
            first, second = await asyncio.gather(
                post(http, call(1, "greet", {}), path="/api/mcp"),
                post(http, call(2, "greet", {}), path="/api/mcp"),
            )
    for reply in (first, second):
        assert reply.result["content"] == [{"type": "text", "text": "hello from the lifespan"}]
    warnings = [r.getMessage() for r in caplog.records if "did not run" in r.getMessage()]
    assert len(warnings) == 1
    assert "async with server.running()" in warnings[0]
    assert server.running_count == 1  # started once, for both requests


async def test_a_host_that_enters_the_lifespan_itself_gets_no_warning(
    caplog: pytest.LogCaptureFixture,
) -> None:
    server = lifespan_server()
    host = Starlette(routes=[Mount("/api", app=server.http_app())])
    async with server.running(), asgi_client(host) as http:
        with caplog.at_level(logging.WARNING, logger="mcpserve.http"):
            reply = await post(http, call(1, "greet", {}), path="/api/mcp")
    assert reply.result["content"] == [{"type": "text", "text": "hello from the lifespan"}]
    assert not [r for r in caplog.records if "did not run" in r.getMessage()]


@pytest.mark.subprocess
def test_the_lifespan_state_is_typed_for_mypy(tmp_path: Path) -> None:
    source = tmp_path / "typed_app.py"
    source.write_text(
        textwrap.dedent("""
        from collections.abc import AsyncIterator
        from contextlib import asynccontextmanager
        from typing import Any

        from typing_extensions import assert_type

        from mcpserve import Context, Server


        class State:
            db: str = "sqlite://"


        @asynccontextmanager
        async def lifespan(server: Server[State]) -> AsyncIterator[State]:
            yield State()


        server = Server("typed", lifespan=lifespan)
        assert_type(server, Server[State])
        assert_type(server.lifespan_state, State)


        def tool(ctx: Context[State]) -> str:
            assert_type(ctx.lifespan_state, State)
            return ctx.lifespan_state.db


        def untyped(ctx: Context) -> None:
            assert_type(ctx.lifespan_state, Any)
    """)
    )
    done = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-incremental", str(source)],
        capture_output=True, text=True, cwd=ROOT, timeout=300, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr


async def test_middleware_sees_an_http_initialize_and_may_refuse_it() -> None:
    server = Server("guarded")
    seen: list[tuple[str, str]] = []

    @server.middleware
    async def only_known_clients(ctx: Context, call_next: CallNext) -> dict[str, Any]:
        seen.append((ctx.method, ctx.protocol_version))
        if ctx.method == "initialize" and ctx.request.params["clientInfo"]["name"] == "banned":
            raise MCPError("This client is not welcome", code=-32600)
        return await call_next()

    @server.tool
    def noop() -> str:
        return "ok"

    legacy = {"content-type": "application/json", "accept": "application/json, text/event-stream"}
    banned = initialize_message()
    banned["params"]["clientInfo"] = {"name": "banned", "version": "1"}
    async with asgi_client(server.http_app()) as http:
        started = await http.post("/mcp", json=initialize_message(), headers=legacy)
        refused = await http.post("/mcp", json=banned, headers=legacy)
    assert started.status_code == 200
    assert started.json()["result"]["protocolVersion"] == "2025-11-25"
    assert "mcp-session-id" in started.headers
    assert refused.status_code == 400
    assert refused.json()["error"] == {"code": -32600, "message": "This client is not welcome"}
    assert "mcp-session-id" not in refused.headers
    assert seen == [("initialize", "2025-11-25"), ("initialize", "2025-11-25")]


async def test_listed_resources_reach_clients_over_http_and_stdio_paged() -> None:
    server = listing_server("async")
    async with asgi_client(server.http_app(authenticate=lambda h: Auth(principal="ana"))) as http:
        first = await post(http, request(1, "resources/list"))
        second = await post(
            http, request(2, "resources/list", {"cursor": first.result["nextCursor"]})
        )
    assert [entry["uri"] for entry in first.result["resources"]] == ["notes://pinned", "notes://0"]
    assert second.result["resources"] == [
        {"uri": "notes://1", "name": "note 1", "description": "for ana"},
        {"uri": "notes://2", "name": "note 2", "description": "for ana"},
    ]
    async with stdio(listing_server("blocking")) as wire:
        wire.send(request(1, "resources/list"))
        listed = await wire.next()
    assert [entry["uri"] for entry in listed["result"]["resources"]] == [
        "notes://pinned",
        "notes://0",
    ]
