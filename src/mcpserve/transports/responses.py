"""ASGI plumbing for the HTTP transport: reading requests, writing JSON or SSE answers.

Mechanics only (headers, bodies, event framing, watching for a client that goes away);
what to answer is decided in ``http.py``.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from ..protocol import constants as c
from ..protocol.core import has_modern_meta
from ..protocol.jsonrpc import JSONDict, dumps

logger = logging.getLogger("mcpserve.http")

Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
ASGISend = Callable[[Message], Awaitable[None]]

JSON_CONTENT_TYPE = (b"content-type", b"application/json")
SSE_HEADERS = [
    (b"content-type", b"text/event-stream"),
    (b"cache-control", b"no-cache"),
    (b"x-accel-buffering", b"no"),
]
BAD_REQUEST_CODES = frozenset(
    {c.HEADER_MISMATCH, c.MISSING_CLIENT_CAPABILITY, c.UNSUPPORTED_PROTOCOL_VERSION}
)


def status_for(code: int) -> int:
    """HTTP status of a JSON-RPC error raised by a handler (§19-Q4)."""
    if code == c.METHOD_NOT_FOUND:
        return 404
    return 400 if code in BAD_REQUEST_CODES else 200


class ResponseStream:
    """JSON for a plain answer; SSE from the first notification on."""

    def __init__(self, send: ASGISend, sse_allowed: bool, keepalive_seconds: float) -> None:
        self._send = send
        self.sse_allowed = sse_allowed
        self._keepalive_seconds = keepalive_seconds
        self._started = False
        self._lock: asyncio.Lock | None = None  # made when streaming starts: most answers are JSON
        self._keepalive: asyncio.Task[None] | None = None

    @property
    def lock(self) -> asyncio.Lock:
        if self._lock is None:
            self._lock = asyncio.Lock()
        return self._lock

    async def notify(self, message: JSONDict) -> None:
        async with self.lock:
            if not self._started:
                self._started = True
                await self._send(
                    {"type": "http.response.start", "status": 200, "headers": SSE_HEADERS}
                )
                self._keepalive = asyncio.create_task(self._keep_alive())
            await self._send(
                {"type": "http.response.body", "body": sse_event(message), "more_body": True}
            )

    async def _keep_alive(self) -> None:
        while True:
            await asyncio.sleep(self._keepalive_seconds)
            async with self.lock:
                await self._send(
                    {"type": "http.response.body", "body": b": keep-alive\n\n", "more_body": True}
                )

    def close(self) -> None:
        if self._keepalive is not None:
            self._keepalive.cancel()
            self._keepalive = None

    async def finish(self, response: JSONDict) -> None:
        self.close()
        if not self._started:
            error = response.get("error")
            await send_json(self._send, status_for(error["code"]) if error else 200, response)
            return
        async with self.lock:
            await self._send({"type": "http.response.body", "body": sse_event(response)})


async def cancel_on_disconnect(
    work: Awaitable[JSONDict], receive: Receive, request_id: Any
) -> JSONDict | None:
    """Await ``work``; if the client disconnects first, cancel it and return None.

    Most handlers finish without waiting on anything, so the task that watches for a
    disconnect is started only if ``work`` is still running one loop iteration later:
    a quick request costs a scheduled callback, not a task.
    """
    task = asyncio.current_task()
    assert task is not None
    loop = asyncio.get_running_loop()
    disconnected = False
    watcher: asyncio.Task[None] | None = None

    async def watch() -> None:
        nonlocal disconnected
        while (await receive())["type"] != "http.disconnect":
            pass
        disconnected = True
        task.cancel()

    def start_watching() -> None:
        nonlocal watcher
        watcher = loop.create_task(watch())

    pending = loop.call_soon(start_watching)
    try:
        return await work
    except asyncio.CancelledError:
        if not disconnected:
            raise
        task.uncancel()
        logger.info("Request %r cancelled: the client closed the connection", request_id)
        return None
    finally:
        pending.cancel()
        if watcher is not None:
            watcher.cancel()


def header_bytes(raw: list[tuple[bytes, bytes]]) -> dict[bytes, bytes]:
    """ASGI headers as a dict of lower-case names to values, still bytes: what the hot path
    looks up. Repeated headers are joined as in :func:`decode_headers`."""
    headers = dict(raw)
    if len(headers) == len(raw) and b"".join(headers).islower():
        return headers
    return {k.encode("latin-1"): v.encode("latin-1") for k, v in decode_headers(raw).items()}


def decode_headers(raw: list[tuple[bytes, bytes]]) -> dict[str, str]:
    """ASGI headers as a dict of lower-case names; repeated headers are joined with ", "."""
    headers = {name.decode("latin-1"): value.decode("latin-1") for name, value in raw}
    if len(headers) != len(raw) or not "".join(headers).islower():
        # Rare: a repeated header (every value must be seen: two Mcp-Name headers mismatch),
        # or a server that does not lower-case names as the ASGI spec asks.
        headers = {}
        for raw_name, raw_value in raw:
            name = raw_name.decode("latin-1").lower()
            value = raw_value.decode("latin-1")
            headers[name] = f"{headers[name]}, {value}" if name in headers else value
    return headers


def is_modern(message: JSONDict) -> bool:
    params = message.get("params")
    return isinstance(params, dict) and has_modern_meta(params)


@functools.lru_cache(maxsize=64)
def accepts_sse(accept: str | None) -> bool:
    # Lenient (§19-Q16): no Accept header, or one naming SSE or a wildcard, allows SSE.
    if accept is None:
        return True
    accept = accept.lower()
    return "text/event-stream" in accept or "*/*" in accept or "text/*" in accept


def sse_event(message: JSONDict) -> bytes:
    return b"data: " + dumps(message) + b"\n\n"


async def read_body(receive: Receive, limit: int) -> bytes | None:
    message = await receive()
    if message["type"] == "http.request" and not message.get("more_body", False):
        body: bytes = message.get("body", b"")  # the usual case: the whole body at once
        return body if len(body) <= limit else None
    chunks: list[bytes] = []
    size = 0
    while True:
        if message["type"] == "http.disconnect":
            return b""
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            return None
        chunks.append(chunk)
        if not message.get("more_body", False):
            return b"".join(chunks)
        message = await receive()


async def send_json(
    send: ASGISend,
    status: int,
    payload: JSONDict,
    extra: list[tuple[bytes, bytes]] | None = None,
) -> None:
    body = dumps(payload)
    headers = [JSON_CONTENT_TYPE, (b"content-length", b"%d" % len(body))]
    if extra:
        headers.extend(extra)
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


async def send_plain(
    send: ASGISend, status: int, body: bytes, extra: list[tuple[bytes, bytes]] | None = None
) -> None:
    headers = [(b"content-length", str(len(body)).encode()), *(extra or [])]
    if body:
        headers.append((b"content-type", b"text/plain; charset=utf-8"))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
