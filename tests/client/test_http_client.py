"""``Client("http://...")`` against real servers in real uvicorn processes, in both eras.

The servers: the dual-era test server (``tests/support/servers/legacy_dual.py``) behind a recorder
that writes one JSON line per HTTP exchange (method, client port, headers, bodies, status),
so the tests can see what crossed the wire; and the same server behind a gate that refuses
every 2026-07-28 request the way a server predating it does (HTTP 400 with a plain
JSON-RPC error, as the TypeScript SDK 1.x answers an unknown ``MCP-Protocol-Version``), to
see the client fall back to ``initialize``. (The official SDK's server, which serves both
eras itself, and the ``x-mcp-header`` tools are in ``test_http_client_interop.py``.)

This file is also the script that serves the first two: ``python tests/client/test_http_client.py
dual|legacy-only`` (what :func:`recorded_server` runs).
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest

from mcpserve import Client
from mcpserve.client.http import HTTPConnection
from wire_helpers import SUPPORT, HTTPServerProcess, http_server_process, wait_for_file

pytestmark = pytest.mark.subprocess

THIS = Path(__file__).resolve()
ERAS = ["2026-07-28", "2025-11-25"]


# --------------------------------------------------------------------------- the servers


class Recorder:
    """ASGI middleware appending each finished HTTP exchange to a JSON-lines file."""

    def __init__(self, app: Any, path: str) -> None:
        self.app = app
        self.path = path

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        body = bytearray()
        answer = bytearray()
        record: dict[str, Any] = {
            "method": scope["method"],
            "port": scope["client"][1],
            "headers": {k.decode().lower(): v.decode() for k, v in scope["headers"]},
        }

        async def recv() -> Any:
            message = await receive()
            body.extend(message.get("body", b""))
            return message

        async def snd(message: Any) -> None:
            if message["type"] == "http.response.start":
                record["status"] = message["status"]
                record["response_headers"] = {
                    k.decode().lower(): v.decode() for k, v in message.get("headers", [])
                }
            elif message["type"] == "http.response.body":
                answer.extend(message.get("body", b""))
            await send(message)

        try:
            await self.app(scope, recv, snd)
        finally:
            record["body"] = body.decode("utf-8", "replace")
            record["response"] = answer.decode("utf-8", "replace")[:4000]
            with Path(self.path).open("a") as file:  # noqa: ASYNC230 - one short line
                file.write(json.dumps(record) + "\n")


class RefuseModern:
    """What a server that predates 2026-07-28 answers a request made at that version."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        headers = dict(scope.get("headers", ()))
        version = headers.get(b"mcp-protocol-version", b"2025-11-25").decode()
        if scope["type"] == "http" and version.startswith("2026"):
            while (await receive()).get("more_body"):
                pass  # read the request, as a server does before it answers
            error = {"code": -32000, "message": "Bad Request: Unsupported protocol version"}
            body = json.dumps({"jsonrpc": "2.0", "error": error, "id": None}).encode()
            await send({"type": "http.response.start", "status": 400,
                        "headers": [(b"content-type", b"application/json")]})  # fmt: skip
            await send({"type": "http.response.body", "body": body})
            return
        await self.app(scope, receive, send)


def serve(kind: str) -> None:
    """Serve the dual-era test server (``legacy-only``: behind :class:`RefuseModern`)."""
    import uvicorn

    from servers.legacy_dual import build

    app: Any = build().http_app("/mcp", bind_host="127.0.0.1")
    if kind == "legacy-only":
        app = RefuseModern(app)
    app = Recorder(app, os.environ["TEST_WIRE_RECORD"])
    port = int(os.environ["MCPSERVE_TEST_HTTP_PORT"])
    uvicorn.run(app, host="127.0.0.1", port=port, lifespan="on", log_level="warning")


class Recorded:
    """A running recorded server: its URL and what went over its wire so far."""

    def __init__(self, process: HTTPServerProcess, record: Path) -> None:
        self.url = process.url
        self.marker_dir = process.marker_dir
        self.record = record

    def exchanges(self) -> list[dict[str, Any]]:
        lines = self.record.read_text().splitlines() if self.record.exists() else []
        return [json.loads(line) for line in lines]

    def since(self, count: int) -> list[dict[str, Any]]:
        return self.exchanges()[count:]

    async def wait_for(self, predicate: Any, since: int = 0) -> dict[str, Any]:
        """The first exchange after the first ``since`` (each is recorded once it is over)
        that ``predicate`` accepts, waiting up to 10 s for it."""
        for _ in range(500):
            found = [e for e in self.since(since) if predicate(e)]
            if found:
                return found[0]
            await asyncio.sleep(0.02)
        raise AssertionError("no such exchange was recorded")


def recorded_server(directory: Path, kind: str) -> Iterator[Recorded]:
    record = directory / f"{kind}.jsonl"
    args = [sys.executable, str(THIS), kind]
    # The script imports the test helpers, which are not beside it.
    env = {"TEST_WIRE_RECORD": str(record), "PYTHONPATH": str(SUPPORT)}
    with http_server_process(directory, args=args, env=env) as p:
        yield Recorded(p, record)


@pytest.fixture(scope="module")
def dual(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Recorded]:
    yield from recorded_server(tmp_path_factory.mktemp("dual"), "dual")


@pytest.fixture(scope="module")
def legacy_only(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Recorded]:
    yield from recorded_server(tmp_path_factory.mktemp("legacy-only"), "legacy-only")


def name_ada(params: dict[str, Any]) -> dict[str, Any]:
    return {"action": "accept", "content": {"name": "Ada"}}


def text(result: dict[str, Any]) -> str:
    return result["content"][0]["text"]  # type: ignore[no-any-return]


def posted(exchange: dict[str, Any]) -> dict[str, Any]:
    return json.loads(exchange["body"]) if exchange["body"] else {}  # type: ignore[no-any-return]


def of_session(exchanges: list[dict[str, Any]], session: str | None) -> list[dict[str, Any]]:
    """The exchanges of one handshake-era session (``initialize`` answered with its id):
    other tests' exchanges may be recorded late, among these."""
    found = []
    for exchange in exchanges:
        sent = exchange["headers"].get("mcp-session-id")
        given = exchange.get("response_headers", {}).get("mcp-session-id")
        if session in (sent, given):
            found.append(exchange)
    return found


def named(name: str) -> dict[str, str]:
    """A ``clientInfo`` that marks a 2026-07-28 client's every request (its ``_meta``)."""
    return {"name": name, "version": "1.0"}


# --------------------------------------------------------------------------- eras


async def test_a_url_speaks_2026_07_28_to_a_server_that_does(dual: Recorded) -> None:
    start = len(dual.exchanges())
    async with Client(dual.url, client_info=named("first-contact")) as client:
        assert (client.legacy, client.protocol_version) == (False, "2026-07-28")
        assert client.server_info == {"name": "legacy-dual", "version": "3.1.4"}
        assert "add" in [tool["name"] for tool in await client.list_tools()]
        assert (await client.call_tool("add", {"a": 2, "b": 3}))["structuredContent"] == {
            "total": 5
        }
        read = await client.read_resource("file:///a.txt")
        assert read["contents"][0]["text"] == "hello from a.txt"
        prompt = await client.get_prompt("greet", {"who": "Bob"})
        assert prompt["messages"][0]["content"]["text"] == "Hello, Bob!"
        completion = await client.complete({"type": "ref/prompt", "name": "greet"}, "who", "al")
        assert completion["values"] == ["alice", "albert"]
    mine = [e for e in dual.since(start) if "first-contact" in e["body"]]
    methods = [posted(e)["method"] for e in mine]
    assert methods[0] == "server/discover"
    assert "initialize" not in methods
    call = next(e for e in mine if posted(e)["method"] == "tools/call")
    assert call["headers"]["mcp-method"] == "tools/call"
    assert call["headers"]["mcp-name"] == "add"
    assert call["headers"]["mcp-protocol-version"] == "2026-07-28"


async def test_pinned_to_2025_11_25_the_client_speaks_the_handshake_era(dual: Recorded) -> None:
    start = len(dual.exchanges())
    async with Client(dual.url, protocol_version="2025-11-25") as client:
        assert client.legacy
        assert client.server_info["name"] == "legacy-dual"
        assert (await client.call_tool("add", {"a": 2, "b": 3}))["structuredContent"] == {
            "total": 5
        }
        prompt = await client.get_prompt("greet", {"who": "Bob"})
        assert prompt["messages"][0]["content"]["text"] == "Hello, Bob!"
        assert (await client.discover())["supportedVersions"] == ["2025-11-25"]
        session = client.connection.session_id  # type: ignore[attr-defined]
    await dual.wait_for(lambda e: e["method"] == "DELETE", start)
    posts = [posted(e) for e in of_session(dual.since(start), session) if e["method"] == "POST"]
    assert [p.get("method") for p in posts[:2]] == ["initialize", "notifications/initialized"]
    # The session holds the version and capabilities: no request carries them itself.
    assert all("io.modelcontextprotocol/protocolVersion" not in str(p) for p in posts)


async def test_against_a_server_predating_2026_07_28_the_client_falls_back_to_initialize(
    legacy_only: Recorded,
) -> None:
    async with Client(legacy_only.url, on_elicit=name_ada) as client:
        assert (client.legacy, client.protocol_version) == (True, "2025-11-25")
        assert text(await client.call_tool("ask_name")) == "Hello, Ada!"
    posts = [e for e in legacy_only.exchanges() if e["method"] == "POST"]
    probe, handshake = posts[0], posts[1]
    assert (posted(probe)["method"], probe["status"]) == ("server/discover", 400)
    assert (posted(handshake)["method"], handshake["status"]) == ("initialize", 200)
    assert posted(handshake)["params"]["protocolVersion"] == "2025-11-25"


async def test_a_server_that_rejects_the_version_gets_the_request_again_at_one_it_names(
    dual: Recorded,
) -> None:
    async with Client(dual.url) as client:
        client.protocol_version = "2099-01-01"  # as if the client preferred a newer one
        assert (await client.call_tool("echo", {"text": "hi"}))["content"][0]["text"] == "hi"
        assert client.protocol_version == "2026-07-28"


# --------------------------------------------------------------------------- the server's questions


@pytest.mark.parametrize("era", ERAS)
async def test_questions_from_the_server_are_answered_by_the_same_handlers_in_both_eras(
    dual: Recorded, era: str
) -> None:
    asked: list[str] = []

    def elicit(params: dict[str, Any]) -> dict[str, Any]:
        asked.append(params["message"])
        return name_ada(params)

    def sample(params: dict[str, Any]) -> dict[str, Any]:
        return {"role": "assistant", "content": {"type": "text", "text": "hi"}, "model": "m"}

    def roots(params: dict[str, Any]) -> dict[str, Any]:
        return {"roots": [{"uri": "file:///work"}]}

    start = len(dual.exchanges())
    async with Client(dual.url, protocol_version=era, on_elicit=elicit, on_sample=sample,
                      on_list_roots=roots) as client:  # fmt: skip
        assert text(await client.call_tool("ask_name")) == "Hello, Ada!"
        assert text(await client.call_tool("ask_all")) == "Ada|hi|1 roots"
    assert asked[0] == "What is your name?"
    if era == "2025-11-25":  # each question was a request of the server's, answered by POST
        answer = await dual.wait_for(lambda e: "result" in posted(e), start)
        assert posted(answer)["result"] == {"action": "accept", "content": {"name": "Ada"}}
    else:  # each was an input_required round, answered in the retried call
        # An exchange is recorded once it is over, which may be just after its answer came.
        for _ in range(500):
            retried = [posted(e) for e in dual.since(start) if "inputResponses" in e["body"]]
            if len(retried) >= 2:
                break
            await asyncio.sleep(0.02)
        assert len(retried) == 2


async def test_a_question_no_handler_answers_fails_the_handshake_era_call(dual: Recorded) -> None:
    start = len(dual.exchanges())
    declared = {"elicitation": {"form": {}}}  # declared, but no handler to answer with
    async with Client(dual.url, protocol_version="2025-11-25", capabilities=declared) as client:
        result = await client.call_tool("ask_name")
    assert result.get("isError"), result
    refusal = await dual.wait_for(lambda e: "error" in posted(e), start)
    assert posted(refusal)["error"]["code"] == -32601


# --------------------------------------------------------------------------- notifications


@pytest.mark.parametrize("era", ERAS)
async def test_progress_reaches_the_requests_on_progress(dual: Recorded, era: str) -> None:
    heard: list[tuple[Any, ...]] = []
    async with Client(dual.url, protocol_version=era) as client:
        await client.call_tool("progressive", {"steps": 3}, on_progress=lambda *a: heard.append(a))
    assert heard == [(1, 3, "step 1"), (2, 3, "step 2"), (3, 3, "step 3")]


@pytest.mark.parametrize("era", ERAS)
async def test_log_messages_reach_on_log(dual: Recorded, era: str) -> None:
    heard: list[tuple[Any, ...]] = []
    async with Client(dual.url, protocol_version=era, log_level="warning",
                      on_log=lambda *a: heard.append(a)) as client:  # fmt: skip
        assert text(await client.call_tool("chatty")) == "warning,error"
    assert heard == [("warning", "warning message", "chatty"), ("error", "error message", "chatty")]


@pytest.mark.parametrize("era", ERAS)
async def test_listen_yields_the_list_changes_it_asked_for(dual: Recorded, era: str) -> None:
    async with Client(dual.url, protocol_version=era) as client:
        async with client.listen(tools_list_changed=True) as changes:
            assert changes.acknowledged == {"toolsListChanged": True}
            await client.call_tool("add_tool", {"name": f"added_{era[:4]}"})
            note = await asyncio.wait_for(changes.__anext__(), 10)
        assert note["method"] == "notifications/tools/list_changed"
        assert f"added_{era[:4]}" in [tool["name"] for tool in await client.list_tools()]


async def test_a_subscription_never_closed_ends_with_the_client(dual: Recorded) -> None:
    start = len(dual.exchanges())
    async with Client(dual.url) as client:
        await client.listen(tools_list_changed=True).open()
    # Recorded only once over: the server saw the stream close.
    over = await dual.wait_for(lambda e: posted(e).get("method") == "subscriptions/listen", start)
    assert "notifications/subscriptions/acknowledged" in over["response"]


# --------------------------------------------------------------------------- timeouts, cancelling


@pytest.mark.parametrize("era", ERAS)
async def test_a_request_past_its_timeout_raises_and_is_cancelled_on_the_server(
    dual: Recorded, era: str
) -> None:
    tag = f"timeout-{era}"
    async with Client(dual.url, protocol_version=era) as client:
        with pytest.raises(TimeoutError, match=r"tools/call got no answer within 0\.5 s"):
            await client.call_tool("wait_forever", {"tag": tag}, timeout=0.5)
        # The client goes on: the next request is answered.
        assert text(await client.call_tool("echo", {"text": "still here"})) == "still here"
    assert await wait_for_file(dual.marker_dir / f"{tag}.finally") == "cancelled=True"


@pytest.mark.parametrize("era", ERAS)
async def test_cancelling_the_awaiting_task_ends_the_handler_on_the_server(
    dual: Recorded, era: str
) -> None:
    tag = f"cancel-{era}"
    async with Client(dual.url, protocol_version=era) as client:
        call = asyncio.create_task(client.call_tool("wait_forever", {"tag": tag}))
        await wait_for_file(dual.marker_dir / f"{tag}.started")
        call.cancel()
        with pytest.raises(asyncio.CancelledError):
            await call
        assert await wait_for_file(dual.marker_dir / f"{tag}.finally") == "cancelled=True"


async def test_a_client_wide_timeout_bounds_every_request(dual: Recorded) -> None:
    async with Client(dual.url, timeout=0.5) as client:
        with pytest.raises(TimeoutError):
            await client.call_tool("wait_forever", {"tag": "client-wide"})


# --------------------------------------------------------------------------- the connection


@pytest.mark.parametrize("era", ERAS)
async def test_requests_one_after_another_share_one_tcp_connection(
    dual: Recorded, era: str
) -> None:
    start = len(dual.exchanges())
    texts = [f"reuse {era} {number}" for number in range(5)]
    async with Client(dual.url, protocol_version=era) as client:
        for echoed in texts:
            await client.call_tool("echo", {"text": echoed})
    mine = [e for e in dual.since(start) if any(echoed in e["body"] for echoed in texts)]
    assert len(mine) == 5
    # (In the handshake era the session's standalone GET stream holds another one.)
    assert len({e["port"] for e in mine}) == 1


async def test_requests_at_once_each_get_an_answer(dual: Recorded) -> None:
    async with Client(dual.url) as client:
        calls = [client.call_tool("echo", {"text": str(n)}) for n in range(8)]
        results = await asyncio.gather(*calls)
    assert [text(result) for result in results] == [str(n) for n in range(8)]


async def test_closing_a_handshake_era_client_deletes_its_session(dual: Recorded) -> None:
    start = len(dual.exchanges())
    async with Client(dual.url, protocol_version="2025-11-25") as client:
        await client.call_tool("echo", {"text": "hi"})
        assert isinstance(client.connection, HTTPConnection)
        session = client.connection.session_id
    assert session
    deleted = await dual.wait_for(lambda e: e["method"] == "DELETE", start)
    assert deleted["headers"]["mcp-session-id"] == session
    assert deleted["status"] == 200
    gone = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    headers = {"mcp-session-id": session, "mcp-protocol-version": "2025-11-25",
               "accept": "application/json, text/event-stream"}  # fmt: skip
    async with httpx2.AsyncClient() as http:
        answer = await http.post(dual.url, json=gone, headers=headers)
    assert answer.status_code == 404


async def test_a_session_the_server_forgot_is_started_again_and_the_request_sent_again(
    dual: Recorded,
) -> None:
    """A 404 to a request in a session: the client starts a new session, subscribes again
    to what it listens to, and sends the request again."""
    start = len(dual.exchanges())
    async with Client(dual.url, protocol_version="2025-11-25") as client:
        assert isinstance(client.connection, HTTPConnection)
        async with client.listen(resources=["file:///a.txt"]) as updates:
            first = client.connection.session_id
            assert first
            # The server forgets the session (here another client ends it, as a restart would).
            headers = {"mcp-session-id": first, "mcp-protocol-version": "2025-11-25"}
            async with httpx2.AsyncClient() as http:
                assert (await http.delete(dual.url, headers=headers)).status_code == 200
            result = await client.call_tool("add", {"a": 1, "b": 2})
            assert result["structuredContent"] == {"total": 3}
            second = client.connection.session_id
            assert second
            assert second != first
            await client.call_tool("touch", {"uri": "file:///a.txt"})
            note = await asyncio.wait_for(updates.__anext__(), 10)
        assert note["method"] == "notifications/resources/updated"
        assert note["params"]["uri"] == "file:///a.txt"
    exchanges = dual.since(start)
    refused = [posted(e)["method"] for e in of_session(exchanges, first)
               if e["method"] == "POST" and e["status"] == 404]  # fmt: skip
    assert refused == ["tools/call"]
    again = [
        posted(e).get("method") for e in of_session(exchanges, second) if e["method"] == "POST"
    ]
    assert again[:4] == ["initialize", "notifications/initialized", "resources/subscribe",
                         "tools/call"]  # fmt: skip


class RefusesInitialize(httpx2.AsyncHTTPTransport):
    """A real transport that cannot reach the server for the next ``refusals`` handshakes,
    as when the server is restarting."""

    refusals = 0

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        if self.refusals and request.method == "POST" and b'"initialize"' in request.content:
            self.refusals -= 1
            raise httpx2.ConnectError("connection refused", request=request)
        return await super().handle_async_request(request)


async def test_a_session_that_could_not_be_renewed_is_renewed_by_the_next_request(
    dual: Recorded,
) -> None:
    start = len(dual.exchanges())
    transport = RefusesInitialize()
    async with (
        httpx2.AsyncClient(transport=transport) as http,
        Client.http(dual.url, protocol_version="2025-11-25", http_client=http) as client,
    ):
        assert isinstance(client.connection, HTTPConnection)
        first = client.connection.session_id
        headers = {"mcp-session-id": first or "", "mcp-protocol-version": "2025-11-25"}
        async with httpx2.AsyncClient() as other:
            assert (await other.delete(dual.url, headers=headers)).status_code == 200
        transport.refusals = 1
        with pytest.raises(ConnectionError, match="connection refused"):
            await client.call_tool("add", {"a": 1, "b": 2})
        assert client.connection.session is None
        result = await client.call_tool("add", {"a": 2, "b": 3})
        assert result["structuredContent"] == {"total": 5}
        second = client.connection.session_id
        assert second
        assert second != first
    again = [posted(e).get("method") for e in of_session(dual.since(start), second)
             if e["method"] == "POST"]  # fmt: skip
    assert again[:3] == ["initialize", "notifications/initialized", "tools/call"]


async def test_a_handshake_era_stream_cut_short_is_resumed(dual: Recorded) -> None:
    start = len(dual.exchanges())
    tag = "resume"
    heard: list[Any] = []
    async with Client(dual.url, protocol_version="2025-11-25", log_level="info",
                      on_log=lambda level, data, logger: heard.append(data)) as client:  # fmt: skip
        call = asyncio.create_task(client.call_tool("reconnect", {"tag": tag}))
        assert await wait_for_file(dual.marker_dir / f"{tag}.started") == "closed=True"
        (dual.marker_dir / f"{tag}.release").touch()
        assert text(await call) == f"reconnected {tag}"
    assert heard == ["before the break", "after the break"]
    resumed = await dual.wait_for(lambda e: "last-event-id" in e["headers"], start)
    assert resumed["method"] == "GET"
    assert "after the break" in resumed["response"]


if __name__ == "__main__":
    serve(sys.argv[1])
