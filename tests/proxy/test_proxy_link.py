"""The proxy's lean HTTP link against a server whose every byte the test decides.

``test_proxy_wire.py`` runs the link against a real mcpserve upstream; here a bare asyncio
server plays the upstream, to close sockets at the moments a real one might: an idle
keep-alive socket closed as a request is sent on it (the request goes again on a new
socket), and sockets that fail in ways no retry may hide.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import pytest

from mcpserve.client.http_answers import HTTPStatusError
from mcpserve.proxy.link import LeanHTTPConnection

#: What the fake upstream does with the n-th request on the k-th connection (both from 1).
Behaviour = Callable[[int, int, dict[str, Any]], bytes | None]


class Closing(bytes):
    """Bytes to send before closing the socket."""


def answer(message: dict[str, Any], result: dict[str, Any] | None = None) -> bytes:
    body = json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": result or {}}).encode()
    head = b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: %d\r\n\r\n"
    return head % len(body) + body


@asynccontextmanager
async def upstream(behaviour: Behaviour) -> AsyncIterator[tuple[str, list[tuple[int, str]]]]:
    """A server on a free port; yields its URL and the (connection, method) of each request
    it read. ``behaviour`` returns the bytes to answer with, or None to close the socket."""
    seen: list[tuple[int, str]] = []
    connections = 0

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        nonlocal connections
        connections += 1
        number, count = connections, 0
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = next(int(line.split(b":", 1)[1]) for line in head.split(b"\r\n")
                              if line.lower().startswith(b"content-length:"))  # fmt: skip
                message = json.loads(await reader.readexactly(length))
                count += 1
                seen.append((number, message["method"]))
                reply = behaviour(number, count, message)
                if reply is None:
                    break
                writer.write(reply)
                await writer.drain()
                if isinstance(reply, Closing):
                    break
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}/mcp", seen
    finally:
        server.close()
        await server.wait_closed()


def call(i: int) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": {"name": f"t{i}"}}


async def test_a_request_on_an_idle_socket_the_server_closed_goes_again_on_a_new_one() -> None:
    def behaviour(connection: int, n: int, message: dict[str, Any]) -> bytes | None:
        if connection == 1 and n == 2:
            return None  # closed as the second request arrived, unanswered
        return answer(message, {"on": connection})

    async with upstream(behaviour) as (url, seen):
        link = LeanHTTPConnection(url)
        try:
            first = await link.request(call(1))
            second = await link.request(call(2))
        finally:
            await link.close()
    assert (first["result"], second["result"]) == ({"on": 1}, {"on": 2})
    assert second["id"] == 2
    assert seen == [(1, "tools/call"), (1, "tools/call"), (2, "tools/call")]


async def test_a_new_socket_closed_unanswered_is_an_error_not_a_retry() -> None:
    async with upstream(lambda connection, n, message: None) as (url, seen):
        link = LeanHTTPConnection(url)
        with pytest.raises(ConnectionError, match="closed the connection"):
            await link.request(call(1))
        await link.close()
    assert seen == [(1, "tools/call")]  # sent once: a fresh socket is not retried


async def test_an_idle_socket_closed_again_on_the_retry_is_an_error() -> None:
    def behaviour(connection: int, n: int, message: dict[str, Any]) -> bytes | None:
        return answer(message) if connection == 1 and n == 1 else None

    async with upstream(behaviour) as (url, seen):
        link = LeanHTTPConnection(url)
        await link.request(call(1))
        with pytest.raises(ConnectionError):
            await link.request(call(2))
        await link.close()
    assert seen == [(1, "tools/call"), (1, "tools/call"), (2, "tools/call")]  # one retry


async def test_an_answer_cut_short_is_an_error_not_a_retry() -> None:
    def behaviour(connection: int, n: int, message: dict[str, Any]) -> bytes | None:
        if n == 1:
            return answer(message)
        cut = b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 50\r\n\r\n{"
        return Closing(cut)

    async with upstream(behaviour) as (url, seen):
        link = LeanHTTPConnection(url)
        await link.request(call(1))
        with pytest.raises(ConnectionError, match="closed the connection"):
            await link.request(call(2))
        await link.close()
    assert seen == [(1, "tools/call"), (1, "tools/call")]  # the server had begun: not again


async def test_a_cancelled_request_closes_its_socket() -> None:
    """On this wire, closing the request's socket is how the upstream learns of the
    cancellation; the next request goes on another socket."""
    reading = asyncio.Event()

    def behaviour(connection: int, n: int, message: dict[str, Any]) -> bytes | None:
        if message["id"] == 2:
            reading.set()
            return b""  # nothing yet: the caller gives up first
        return answer(message, {"on": connection})

    async with upstream(behaviour) as (url, seen):
        link = LeanHTTPConnection(url)
        await link.request(call(1))
        task = asyncio.create_task(link.request(call(2)))
        await asyncio.wait_for(reading.wait(), 5)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        third = await link.request(call(3))
        await link.close()
    assert third["result"] == {"on": 2}
    assert seen == [(1, "tools/call"), (1, "tools/call"), (2, "tools/call")]


async def test_an_answer_without_json_rpc_raises_its_status() -> None:
    def behaviour(connection: int, n: int, message: dict[str, Any]) -> bytes:
        return b"HTTP/1.1 502 Bad Gateway\r\ncontent-length: 4\r\n\r\nnope"

    async with upstream(behaviour) as (url, _):
        link = LeanHTTPConnection(url)
        with pytest.raises(HTTPStatusError) as info:
            await link.request(call(1))
        await link.close()
    assert info.value.status == 502
