"""``subscriptions/listen`` as the tests drive it: in memory, and over HTTP.

In memory, :class:`Listen` runs one listen as a task of ``server.handle(listen, send=...)``
and round-trips every message it sends through the JSON encoder, validating it against the
official schema; :func:`open_listen` waits for the acknowledgement. Over HTTP,
:func:`open_stream` POSTs a listen and :class:`SSEStream` reads its events one at a time,
each validated; :func:`tool` and :func:`poll` call tools beside it. Every wait is bounded.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
import uuid
from collections.abc import AsyncIterator
from typing import Any

import httpx2

from mcpserve import Server
from mcpserve.protocol.jsonrpc import dumps, loads
from wire_helpers import TIMEOUT, call, encode, mcp_headers, post, request, same_id
from wire_schema import check, check_notification, check_response

MEMORY_TIMEOUT = 10.0
SUB = "io.modelcontextprotocol/subscriptionId"
ACK = "notifications/subscriptions/acknowledged"
META: dict[str, Any] = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientInfo": {"name": "subs-test-client", "version": "1.0.0"},
    "io.modelcontextprotocol/clientCapabilities": {},
}


# =========================================================================== in memory


def listen_message(request_id: Any, notifications: Any = None, **params: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"_meta": dict(META), **params}
    if notifications is not None:
        body["notifications"] = notifications
    return {"jsonrpc": "2.0", "id": request_id, "method": "subscriptions/listen", "params": body}


class Listen:
    """One ``subscriptions/listen`` request in flight, and every message it sent."""

    def __init__(
        self,
        server: Server,
        request_id: Any,
        notifications: Any,
        *,
        hold: asyncio.Event | None = None,
    ) -> None:
        self.server = server
        self.id = request_id
        self.hold = hold  # when set: every send after the ack blocks until it is set
        self.messages: list[dict[str, Any]] = []
        self._queue: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        self._arrived = asyncio.Event()
        self.task = asyncio.create_task(
            server.handle(listen_message(request_id, notifications), send=self.send)
        )

    async def send(self, message: dict[str, Any]) -> None:
        message = loads(dumps(message))  # exactly what the wire would carry
        check_notification(message)
        assert "id" not in message, message
        assert same_id(message["params"]["_meta"][SUB], self.id), (message, self.id)
        self.messages.append(message)
        self._queue.put_nowait(message)
        self._arrived.set()
        if self.hold is not None and message["method"] != ACK:
            await self.hold.wait()  # a client that stopped reading

    async def next(self) -> dict[str, Any]:
        return await asyncio.wait_for(self._queue.get(), MEMORY_TIMEOUT)

    async def received(self, count: int) -> None:
        """Wait until ``count`` messages (the ack included) have arrived."""

        async def enough() -> None:
            while len(self.messages) < count:
                self._arrived.clear()
                await self._arrived.wait()

        await asyncio.wait_for(enough(), MEMORY_TIMEOUT)

    async def ack(self) -> dict[str, Any]:
        message = await self.next()
        assert message["method"] == ACK, message
        assert self.messages[0] is message  # nothing before the acknowledgement
        check("SubscriptionsAcknowledgedNotification", message)
        return message["params"]["notifications"]  # type: ignore[no-any-return]

    async def expect(self, method: str) -> dict[str, Any]:
        message = await self.next()
        assert message["method"] == method, (message, method)
        return message

    async def result(self) -> dict[str, Any]:
        response = await asyncio.wait_for(self.task, MEMORY_TIMEOUT)
        assert response is not None
        response = loads(dumps(response))
        check_response("subscriptions/listen", response)
        assert same_id(response["id"], self.id), response
        assert "result" in response, response
        check("SubscriptionsListenResult", response["result"])
        return response["result"]  # type: ignore[no-any-return]

    @property
    def methods(self) -> list[str]:
        return [message["method"] for message in self.messages]


async def open_listen(server: Server, request_id: Any, notifications: Any) -> Listen:
    listen = Listen(server, request_id, notifications)
    await listen.ack()
    return listen


def listen(request_id: Any, notifications: dict[str, Any]) -> dict[str, Any]:
    return request(request_id, "subscriptions/listen", {"notifications": notifications})


def unique(prefix: str) -> str:
    return f"{prefix}_{uuid.uuid4().hex[:8]}"


# =========================================================================== HTTP helpers


class SSEStream:
    """Reads one ``subscriptions/listen`` SSE response event by event, validating each."""

    def __init__(self, response: httpx2.Response, listen_id: Any) -> None:
        self.response = response
        self.listen_id = listen_id
        self._lines = response.aiter_lines()
        self.comments = 0
        self.events: list[dict[str, Any]] = []
        #: The last ``retry`` field received (milliseconds), if any: a stopping server's hint.
        self.retry: int | None = None
        self.ended = False

    async def _line(self, within: float) -> str | None:
        try:
            return await asyncio.wait_for(anext(self._lines), within)
        except StopAsyncIteration:
            return None

    async def next(self, within: float = TIMEOUT, *, stop_on_comment: bool = False) -> Any:
        """The next event (a dict), ``":"`` for a comment if asked, ``None`` at the end."""
        deadline = time.monotonic() + within
        data: list[str] = []
        while True:
            line = await self._line(max(0.01, deadline - time.monotonic()))
            if line is None:
                assert not data, f"the stream ended inside an event: {data}"
                self.ended = True
                return None
            if line.startswith(":"):
                self.comments += 1
                if stop_on_comment and not data:
                    return ":"
                continue
            if line == "":
                if not data:
                    continue
                assert len(data) == 1, f"an event must be exactly one data line: {data}"
                return self._validate(json.loads(data[0][len("data: ") :]))
            if line.startswith("retry: "):
                self.retry = int(line[len("retry: ") :])
                continue
            assert line.startswith("data: "), line
            data.append(line)

    def _validate(self, message: dict[str, Any]) -> dict[str, Any]:
        assert message.get("jsonrpc") == "2.0", message
        if "method" in message:
            assert "id" not in message, message
            check_notification(message)
            assert same_id(message["params"]["_meta"][SUB], self.listen_id), message
        else:
            check_response("subscriptions/listen", message)
            assert same_id(message["id"], self.listen_id), message
            if "result" in message:
                check("SubscriptionsListenResult", message["result"])
                assert same_id(message["result"]["_meta"][SUB], self.listen_id), message
        self.events.append(message)
        return message

    async def expect(self, method: str, within: float = TIMEOUT) -> dict[str, Any]:
        event = await self.next(within)
        assert event is not None, f"the stream ended while waiting for {method}"
        assert event.get("method") == method, (event, method)
        return event  # type: ignore[no-any-return]

    async def ack(self) -> dict[str, Any]:
        event = await self.expect(ACK)
        assert self.events == [event], "the acknowledgement must be the first event"
        check("SubscriptionsAcknowledgedNotification", event)
        return event["params"]["notifications"]  # type: ignore[no-any-return]

    async def final(self, within: float = TIMEOUT) -> dict[str, Any]:
        """The final result, then the end of the stream."""
        event = await self.next(within)
        assert event is not None, "the stream closed without the final result"
        assert "result" in event, event
        assert event["result"]["resultType"] == "complete"
        assert await self.next(within) is None, "nothing may follow the final result"
        return event["result"]  # type: ignore[no-any-return]


def assert_sse_headers(headers: httpx2.Headers) -> None:
    assert headers["content-type"].split(";")[0].strip() == "text/event-stream"
    assert headers["cache-control"] == "no-cache"
    assert headers["x-accel-buffering"] == "no"


@contextlib.asynccontextmanager
async def open_stream(
    client: httpx2.AsyncClient, listen_id: Any, notifications: dict[str, Any]
) -> AsyncIterator[SSEStream]:
    """POST a listen and yield its SSE stream; leaving the block closes the connection."""
    body = encode(listen(listen_id, notifications))
    async with client.stream(
        "POST", "/mcp", content=body, headers=mcp_headers("subscriptions/listen")
    ) as response:
        assert response.status_code == 200
        assert_sse_headers(response.headers)
        yield SSEStream(response, listen_id)


async def tool(client: httpx2.AsyncClient, name: str, arguments: dict[str, Any]) -> Any:
    """Call a tool over HTTP (a separate POST) and return its text or structured value."""
    reply = await post(client, call(unique("call"), name, arguments))
    assert reply.status == 200, reply.body[:500]
    result = reply.result
    assert not result.get("isError"), result
    if "structuredContent" in result:
        return result["structuredContent"]
    return result["content"][0]["text"]


async def poll(
    client: httpx2.AsyncClient, name: str, expected: Any, within: float = TIMEOUT
) -> Any:
    """Call a tool until it answers ``expected``; fail after ``within`` seconds."""
    deadline = time.monotonic() + within
    while True:
        value = await tool(client, name, {})
        if value == expected:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"{name} answered {value!r}, not {expected!r}, for {within} s")
        await asyncio.sleep(0.05)
