"""The proxy's lean link gives exactly the answers of the general HTTP client.

``proxy/link.py`` is a second HTTP/1.1 client beside httpx2 (the proxy's hot path: its own
sockets, httptools' parser, request heads kept per method). Every case here is sent through
both, :class:`~mcpserve.proxy.link.LeanHTTPConnection` and the client's
:class:`~mcpserve.client.http.HTTPConnection` (no session: the 2026-07-28 wire), to the same
server, and what each got must be the same: the answer (or the status and body of an answer
that holds no JSON-RPC message, or a broken connection), the notifications a stream carried,
in order, and (from the scripted server) each request as it arrived: on which connection,
its request line, its headers but those only httpx2 sends (``user-agent``,
``accept-encoding``, ``connection``), and its body.

Two servers answer. A scripted HTTP/1.1 server on asyncio
(``tests/support/scripted_http.py``), whose every byte the test decides: JSON with a length
or chunked in odd sizes, large bodies, an informational answer first, a body that ends with
the connection, event streams with LF, CRLF or CR line ends and events split across reads,
``Connection: close``, a socket closed while idle, 4xx and 5xx with and without a JSON-RPC
message. And a real mcpserve server served by uvicorn, for what the transport answers
itself. Each case also checks what the answer is, so that two clients wrong the same way
fail it.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Annotated, Any

import pytest

from mcpserve import Context, Header, Server
from mcpserve.client.connections import Connection
from mcpserve.client.http import HTTPConnection
from mcpserve.client.http_answers import HTTPStatusError
from mcpserve.proxy.link import LeanHTTPConnection
from scripted_http import (
    Reply,
    Script,
    Scripted,
    Seen,
    chunked,
    encoded,
    event,
    scripted,
    stream,
    two_data_lines,
    until_close,
    with_length,
)
from wire_helpers import TIMEOUT, call, request

KINDS = ("link", "httpx2")
#: What only httpx2 sends: its name, the encodings it takes, and keep-alive said aloud.
ONLY_HTTPX2 = frozenset({b"user-agent", b"accept-encoding", b"connection"})
#: Configured for the upstream: both clients send it on every request.
CONFIGURED = {"Authorization": "Bearer the-token", "X-Tenant": "acme"}
LARGE = 3 * 1024 * 1024

Outcome = tuple[Any, ...]


def progress(token: str, done: int) -> dict[str, Any]:
    params = {"progressToken": token, "progress": done, "total": 3}
    return {"jsonrpc": "2.0", "method": "notifications/progress", "params": params}


def log(text: str) -> dict[str, Any]:
    params = {"level": "info", "data": text}
    return {"jsonrpc": "2.0", "method": "notifications/message", "params": params}


def response(message: dict[str, Any], result: Any = None) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": message["id"], "result": result or {"echo": message}}


# =========================================================================== both clients


@contextlib.asynccontextmanager
async def connected(kind: str, url: str, heard: list[dict[str, Any]]) -> AsyncIterator[Connection]:
    conn: Connection
    if kind == "link":
        conn = LeanHTTPConnection(url, headers=CONFIGURED, on_notification=heard.append)
    else:
        conn = HTTPConnection(url, headers=CONFIGURED, on_notification=heard.append)
    await conn.open()
    try:
        yield conn
    finally:
        await conn.close()


async def outcome(sent: Awaitable[dict[str, Any] | None]) -> Outcome:
    """What a request came to, as both clients can say it."""
    try:
        async with asyncio.timeout(TIMEOUT):
            return ("answer", await sent)
    except HTTPStatusError as exc:
        return ("status", exc.status, exc.body)
    except ConnectionError:
        return ("broken",)


@dataclass
class Run:
    outcomes: list[Outcome]
    heard: list[dict[str, Any]]
    seen: list[Seen]


Steps = Callable[[Connection, Scripted], Awaitable[list[Outcome]]]


async def through_both(script: Script, steps: Steps, *, in_order: bool = True) -> Run:
    """The same steps through each client, each to a fresh scripted server; asserts that
    both runs are the same and returns one. Requests sent at once (``in_order=False``)
    arrive in any order, on connections numbered as they were accepted: then what was sent
    is compared as a set, and only the number of connections."""
    runs: dict[str, Run] = {}
    for kind in KINDS:
        heard: list[dict[str, Any]] = []
        async with scripted(script) as upstream, connected(kind, upstream.url, heard) as conn:
            outcomes = await steps(conn, upstream)
        runs[kind] = Run(outcomes, heard, upstream.seen)
    link, general = runs["link"], runs["httpx2"]
    assert link.outcomes == general.outcomes
    assert link.heard == general.heard
    sent, sent_too = list(map(_comparable, link.seen)), list(map(_comparable, general.seen))
    if in_order:
        assert sent == sent_too
    else:
        assert sorted(s[1:] for s in sent) == sorted(s[1:] for s in sent_too)
        assert {s[0] for s in sent} == {s[0] for s in sent_too}
    return link


def _comparable(seen: Seen) -> tuple[int, bytes, list[tuple[bytes, bytes]], bytes]:
    """What both clients must send alike: all but the headers only httpx2 sends."""
    headers = [(name, value) for name, value in seen.headers if name not in ONLY_HTTPX2]
    return seen.connection, seen.line, headers, seen.body


def one_request(message: dict[str, Any]) -> Steps:
    async def steps(conn: Connection, upstream: Scripted) -> list[Outcome]:
        return [await outcome(conn.request(message))]

    return steps


def answered(run: Run, message: dict[str, Any], result: Any = None) -> None:
    assert run.outcomes == [("answer", response(message, result))]


# =========================================================================== framing


ECHO = call(1, "echo", {"text": "hi"})
BIG = "x" * LARGE


@pytest.mark.parametrize(
    "reply",
    [
        lambda m: with_length(encoded(response(m))),
        lambda m: with_length(encoded(response(m)), kind=b"application/json; charset=utf-8"),
        lambda m: chunked(encoded(response(m)), 7),
        lambda m: chunked(encoded(response(m)), 1),
        lambda m: with_length(b"\n  " + encoded(response(m)) + b"\n"),
    ],
    ids=["length", "charset", "chunks-of-7", "chunks-of-1", "whitespace"],
)
async def test_a_json_answer_is_the_same_however_it_is_framed(reply: Script) -> None:
    answered(await through_both(reply, one_request(ECHO)), ECHO)


@pytest.mark.parametrize(
    "reply",
    [
        lambda m: with_length(encoded(response(m, {"big": BIG}))),
        lambda m: chunked(encoded(response(m, {"big": BIG})), 65_536),
        lambda m: chunked(encoded(response(m, {"big": BIG})), 999_983),
    ],
    ids=["length", "chunks-of-64k", "chunks-of-a-prime"],
)
async def test_a_large_answer_arrives_whole(reply: Script) -> None:
    answered(await through_both(reply, one_request(ECHO)), ECHO, {"big": BIG})


async def test_an_informational_answer_before_the_answer_is_passed_over() -> None:
    def reply(message: dict[str, Any]) -> Reply:
        hints = b"HTTP/1.1 103 Early Hints\r\nlink: </style.css>; rel=preload\r\n\r\n"
        return Reply([hints, *with_length(encoded(response(message))).parts])

    answered(await through_both(reply, one_request(ECHO)), ECHO)


async def test_an_answer_that_ends_with_the_connection_is_read_to_its_end() -> None:
    async def steps(conn: Connection, upstream: Scripted) -> list[Outcome]:
        return [await outcome(conn.request(call(i, "echo", {"text": "hi"}))) for i in (1, 2)]

    run = await through_both(lambda m: until_close(encoded(response(m))), steps)
    assert run.outcomes == [("answer", response(call(i, "echo", {"text": "hi"}))) for i in (1, 2)]
    assert [seen.connection for seen in run.seen] == [1, 2]


# =========================================================================== event streams


def streamed(end: bytes, split: int = 0) -> Script:
    def reply(message: dict[str, Any]) -> Reply:
        server_request = {"jsonrpc": "2.0", "id": 99, "method": "ping", "params": {}}
        events = [
            b": a comment before anything",
            event(progress("p", 1)),
            two_data_lines(log("two data lines")),
            b"data: not json\n",
            event(server_request),  # no request on this wire: ignored by both
            b"retry: 1000\n",
            event({**response({"id": 0}), "id": 12345}),  # another request's answer
            event(progress("p", 2)),
            event(response(message)),
        ]  # fmt: skip
        return stream(events, end, split=split)

    return reply


@pytest.mark.parametrize(
    ("end", "split"),
    [(b"\n", 0), (b"\r\n", 0), (b"\r", 0), (b"\n", 5), (b"\r\n", 3), (b"\r", 4), (b"\r\n", 1)],
    ids=[
        "lf",
        "crlf",
        "cr",
        "lf-in-5-byte-writes",
        "crlf-in-3-byte-writes",
        "cr-in-4-byte-writes",
        "crlf-a-byte-at-a-time",
    ],
)
async def test_a_stream_gives_the_same_notifications_in_order_and_the_same_answer(
    end: bytes, split: int
) -> None:
    run = await through_both(streamed(end, split), one_request(ECHO))
    answered(run, ECHO)
    assert run.heard == [progress("p", 1), log("two data lines"), progress("p", 2)]


async def test_a_large_event_arrives_whole() -> None:
    def reply(message: dict[str, Any]) -> Reply:
        return stream([event(log(BIG)), event(response(message))], split=65_536)

    run = await through_both(reply, one_request(ECHO))
    answered(run, ECHO)
    assert run.heard == [log(BIG)]


async def test_a_stream_that_ends_without_the_answer_is_a_broken_connection() -> None:
    run = await through_both(lambda m: stream([event(progress("p", 1))]), one_request(ECHO))
    assert run.outcomes == [("broken",)]
    assert run.heard == [progress("p", 1)]


# =========================================================================== statuses


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        (
            lambda m: with_length(encoded({"jsonrpc": "2.0", "id": m["id"], "error": {
                "code": -32602, "message": "Invalid params"}}), status=b"400 Bad Request"),
            ("answer", {"jsonrpc": "2.0", "id": 1, "error": {
                "code": -32602, "message": "Invalid params"}}),
        ),
        (
            lambda m: with_length(encoded({"jsonrpc": "2.0", "id": None, "error": {
                "code": -32700, "message": "Parse error"}}), status=b"400 Bad Request"),
            ("answer", {"jsonrpc": "2.0", "id": 1, "error": {
                "code": -32700, "message": "Parse error"}}),
        ),
        (
            lambda m: with_length(b"<h1>Not Found</h1>", status=b"404 Not Found",
                                  kind=b"text/html"),
            ("status", 404, b"<h1>Not Found</h1>"),
        ),
        (
            lambda m: with_length(b'{"error":"invalid_token"}', status=b"401 Unauthorized",
                                  extra=b'www-authenticate: Bearer error="invalid_token"\r\n'),
            ("status", 401, b'{"error":"invalid_token"}'),
        ),
        (
            lambda m: chunked(b"upstream exploded", 4, status=b"500 Internal Server Error",
                              kind=b"text/plain"),
            ("status", 500, b"upstream exploded"),
        ),
        (
            lambda m: with_length(b"", status=b"503 Service Unavailable",
                                  extra=b"retry-after: 1\r\n"),
            ("status", 503, b""),
        ),
        (
            lambda m: with_length(b"data: {}\n\n", status=b"400 Bad Request",
                                  kind=b"text/event-stream"),
            ("status", 400, b"data: {}\n\n"),
        ),
        (
            lambda m: with_length(b'{"jsonrpc": "2.0", "method": "ping"}'),
            ("status", 200, b'{"jsonrpc": "2.0", "method": "ping"}'),
        ),
    ],
    ids=["400-json-rpc", "400-null-id", "404-html", "401-oauth", "500-chunked", "503-empty",
         "400-said-to-be-a-stream", "200-not-a-response"],
)  # fmt: skip
async def test_an_error_status_comes_to_the_same(reply: Script, expected: Outcome) -> None:
    run = await through_both(reply, one_request(ECHO))
    assert run.outcomes == [expected]


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        (lambda m: with_length(b"", status=b"202 Accepted"), None),
        (lambda m: Reply([b"HTTP/1.1 202 Accepted\r\ncontent-length: 0\r\n\r\n"]), None),
        (lambda m: with_length(b"no", status=b"400 Bad Request", kind=b"text/plain"),
         ("status", 400, b"no")),
    ],
    ids=["202", "202-without-type", "400"],
)  # fmt: skip
async def test_a_notification_is_accepted_or_refused_alike(
    reply: Script, expected: Outcome | None
) -> None:
    note = {"jsonrpc": "2.0", "method": "notifications/cancelled",
            "params": {"requestId": 3, "_meta": request(0, "x")["params"]["_meta"]}}  # fmt: skip

    async def steps(conn: Connection, upstream: Scripted) -> list[Outcome]:
        sent = await outcome(conn.notify(note))
        return [sent, await outcome(conn.request(ECHO))]  # and the socket is still good

    run = await through_both(lambda m: reply(m) if "id" not in m else with_length(
        encoded(response(m))), steps)  # fmt: skip
    assert run.outcomes == [expected or ("answer", None), ("answer", response(ECHO))]
    assert [seen.connection for seen in run.seen] == [1, 1]


# =========================================================================== connections


async def test_requests_one_after_another_share_one_connection() -> None:
    async def steps(conn: Connection, upstream: Scripted) -> list[Outcome]:
        return [await outcome(conn.request(call(i, "echo", {"n": i}))) for i in range(1, 6)]

    run = await through_both(lambda m: with_length(encoded(response(m))), steps)
    assert [o[1]["id"] for o in run.outcomes] == [1, 2, 3, 4, 5]
    assert [seen.connection for seen in run.seen] == [1, 1, 1, 1, 1]


async def test_after_connection_close_the_next_request_opens_another() -> None:
    async def steps(conn: Connection, upstream: Scripted) -> list[Outcome]:
        return [await outcome(conn.request(call(i, "echo", {}))) for i in (1, 2, 3)]

    def reply(message: dict[str, Any]) -> Reply:
        if message["id"] == 2:
            answer = with_length(encoded(response(message)), extra=b"connection: close\r\n")
            return Reply(answer.parts, close=True)
        return with_length(encoded(response(message)))

    run = await through_both(reply, steps)
    assert [o[0] for o in run.outcomes] == ["answer"] * 3
    assert [seen.connection for seen in run.seen] == [1, 1, 2]


async def test_a_socket_the_server_closed_while_idle_is_not_used_again() -> None:
    async def steps(conn: Connection, upstream: Scripted) -> list[Outcome]:
        first = await outcome(conn.request(call(1, "echo", {})))
        await asyncio.wait_for(upstream.closed.wait(), TIMEOUT)
        await asyncio.sleep(0.05)  # the close reaches the client's side of the socket
        return [first, await outcome(conn.request(call(2, "echo", {})))]

    def reply(message: dict[str, Any]) -> Reply:
        # Kept alive, as far as the answer says, then closed: a server's idle timeout.
        return Reply(with_length(encoded(response(message))).parts, close=message["id"] == 1)

    run = await through_both(reply, steps)
    assert [o[0] for o in run.outcomes] == ["answer", "answer"]
    assert [seen.connection for seen in run.seen] == [1, 2]


async def test_requests_at_once_get_a_connection_each_and_their_own_answers() -> None:
    def reply(message: dict[str, Any]) -> Reply:
        return with_length(encoded(response(message)))

    async def steps(conn: Connection, upstream: Scripted) -> list[Outcome]:
        calls = [conn.request(call(i, "echo", {"n": i})) for i in (1, 2, 3)]
        return list(await asyncio.gather(*(outcome(c) for c in calls)))

    run = await through_both(reply, steps, in_order=False)
    assert run.outcomes == [("answer", response(call(i, "echo", {"n": i}))) for i in (1, 2, 3)]
    assert sorted(seen.connection for seen in run.seen) == [1, 2, 3]


# =========================================================================== what is sent


TOOLS = {
    "tools": [
        {"name": "plain", "inputSchema": {"type": "object"}},
        {
            "name": "sql",
            "inputSchema": {
                "type": "object",
                "properties": {
                    "region": {"type": "string", "x-mcp-header": "Region"},
                    "shard": {"type": "integer", "x-mcp-header": "Shard"},
                    "query": {"type": "string"},
                },
            },
        },
    ]
}


async def test_each_method_is_sent_with_the_headers_the_general_client_sends() -> None:
    """The link keeps a request's head per method, name and version; a tool whose
    arguments go in headers gets its own each call, and ``tools/list`` teaches both."""
    messages = [
        call(1, "sql", {"region": "eu", "shard": 1, "query": "q"}),  # before the list
        request(2, "tools/list"),
        call(3, "plain", {}),
        call(4, "plain", {"other": "arguments"}),
        call(5, "sql", {"region": "eu", "shard": 1, "query": "q"}),
        call(6, "sql", {"region": "Zürich", "shard": 22, "query": "q"}),
        call(7, "sql", {"region": "us", "query": "no shard"}),
        request(8, "resources/read", {"uri": "file:///ä b.txt"}),
        request(9, "prompts/get", {"name": "greet", "arguments": {"who": "x"}}),
        request(10, "ping"),
        {**call(11, "plain", {}), "params": {"name": "plain", "arguments": {},
                                            "_meta": {"io.modelcontextprotocol/protocolVersion":
                                                      "2099-01-01"}}},
        {"jsonrpc": "2.0", "id": 12, "method": "tools/call", "params": {"name": 7}},
        {"jsonrpc": "2.0", "id": 13, "method": "vendor/thing"},
    ]  # fmt: skip

    def reply(message: dict[str, Any]) -> Reply:
        result = TOOLS if message["method"] == "tools/list" else None
        return with_length(encoded(response(message, result)))

    async def steps(conn: Connection, upstream: Scripted) -> list[Outcome]:
        return [await outcome(conn.request(message)) for message in messages]

    run = await through_both(reply, steps)
    assert [o[0] for o in run.outcomes] == ["answer"] * len(messages)
    sent = {seen.body: dict(seen.headers) for seen in run.seen}
    assert [json.loads(body)["id"] for body in sent] == list(range(1, 14))
    sql = [headers for body, headers in sent.items() if b'"sql"' in body]
    assert b"mcp-param-region" not in sql[0]  # not yet listed
    assert (sql[1][b"mcp-param-region"], sql[1][b"mcp-param-shard"]) == (b"eu", b"1")
    assert sql[2][b"mcp-param-region"].startswith(b"=?base64?")
    assert b"mcp-param-shard" not in sql[3]
    assert all(h[b"authorization"] == b"Bearer the-token" for h in sent.values())
    assert [seen.line for seen in run.seen] == [b"POST /mcp HTTP/1.1"] * len(messages)


# =========================================================================== a real server


def real_server() -> Server:
    server = Server("differential", version="1.0.0", client_logging=True)

    @server.tool
    def echo(text: str) -> str:
        return text

    @server.tool
    def execute_sql(region: Annotated[str, Header("Region")], query: str) -> str:
        return f"{region}: {query}"

    @server.tool
    async def chatty(steps: int, ctx: Context) -> str:
        for step in range(steps):
            await ctx.log("info", f"step {step}")
        return "done"

    @server.tool
    def big(size: int) -> dict[str, str]:
        return {"text": "y" * size}

    @server.resource("notes://{name}")
    def note(name: str) -> str:
        return f"note {name}"

    @server.prompt
    def greet(who: str) -> str:
        return f"Hello, {who}"

    return server


REAL = [
    request(1, "server/discover"),
    request(2, "tools/list"),
    call(3, "echo", {"text": "hi"}),
    call(4, "execute_sql", {"region": "eu", "query": "select 1"}),
    call(5, "chatty", {"steps": 3}, **{"io.modelcontextprotocol/logLevel": "info"}),
    call(6, "big", {"size": LARGE}),
    call(7, "no_such_tool", {}),
    call(8, "echo", {"text": 5}),
    request(9, "resources/read", {"uri": "notes://ünïcode"}),
    request(10, "prompts/get", {"name": "greet", "arguments": {"who": "Ada"}}),
    request(11, "no/such/method"),
    {**call(12, "echo", {"text": "hi"}), "params": {"name": "echo", "arguments": {"text": "hi"},
                                                    "_meta": {}}},
]  # fmt: skip


async def test_a_real_server_answers_both_alike(serve_app: Callable[..., str]) -> None:
    url = serve_app(real_server().http_app()) + "/mcp"
    runs: dict[str, tuple[list[Outcome], list[dict[str, Any]]]] = {}
    for kind in KINDS:
        heard: list[dict[str, Any]] = []
        async with connected(kind, url, heard) as conn:
            outcomes = [await outcome(conn.request(message)) for message in REAL]
        runs[kind] = (outcomes, heard)
    assert runs["link"] == runs["httpx2"]
    outcomes, heard = runs["link"]
    answers = {o[1]["id"]: o[1] for o in outcomes if o[0] == "answer"}
    assert sorted(answers) == list(range(1, 13))
    assert answers[3]["result"]["content"] == [{"type": "text", "text": "hi"}]
    assert answers[4]["result"]["content"] == [{"type": "text", "text": "eu: select 1"}]
    assert answers[5]["result"]["content"] == [{"type": "text", "text": "done"}]
    assert answers[6]["result"]["structuredContent"] == {"text": "y" * LARGE}
    assert answers[1]["result"]["supportedVersions"][0] == "2026-07-28"
    assert answers[7]["error"]["code"] == -32602
    assert answers[8]["result"]["isError"] is True
    assert answers[9]["result"]["contents"][0]["text"] == "note ünïcode"
    assert answers[11]["error"]["code"] == -32601
    # No protocol version: a handshake-era request with no session, refused by the transport.
    assert answers[12]["error"]["code"] == -32600
    assert [n["params"]["data"] for n in heard if n["method"] == "notifications/message"] == [
        f"step {step}" for step in range(3)
    ]
