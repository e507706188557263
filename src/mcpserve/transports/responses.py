"""ASGI plumbing for the HTTP transport: reading requests, writing JSON or SSE answers.

Mechanics only (headers, bodies, event framing);
what to answer is decided in ``http.py``.
"""

from __future__ import annotations

import asyncio
import functools
import math
from collections.abc import Callable

from .._types import JSONDict, Receive, Send
from ..protocol import constants as c
from ..protocol.jsonrpc import dumps

JSON_CONTENT_TYPE = (b"content-type", b"application/json")
SSE_HEADERS = [
    (b"content-type", b"text/event-stream"),
    (b"cache-control", b"no-cache"),
    (b"x-accel-buffering", b"no"),
]
BAD_REQUEST_CODES = frozenset(
    {c.HEADER_MISMATCH, c.MISSING_CLIENT_CAPABILITY, c.UNSUPPORTED_PROTOCOL_VERSION}
)
#: The challenge headers of a 403 for missing scopes, made from the JSON-RPC error.
Challenge = Callable[[JSONDict], list[tuple[bytes, bytes]]]


def status_for(code: int) -> int:
    """HTTP status of a JSON-RPC error raised by a handler (``docs/decisions.md``, "HTTP
    status of errors")."""
    if code == c.METHOD_NOT_FOUND:
        return 404
    if code == c.INSUFFICIENT_SCOPE:
        return 403
    if code == c.RATE_LIMITED:
        return 429
    return 400 if code in BAD_REQUEST_CODES else 200


class ResponseStream:
    """JSON for a plain answer; SSE from the first notification on."""

    def __init__(
        self,
        send: Send,
        sse_allowed: bool,
        keepalive_seconds: float,
        challenge: Challenge | None = None,
    ) -> None:
        self._send = send
        self._challenge = challenge
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

    async def cut(self, retry_ms: int, unanswered: JSONDict) -> None:
        """The server stopped before the answer: a stream ends with a ``retry`` hint, a
        response not yet begun is ``unanswered`` (an error) with status 503."""
        self.close()
        if not self._started:
            await send_json(self._send, 503, unanswered)
            return
        async with self.lock:
            await self._send({"type": "http.response.body", "body": b"retry: %d\n\n" % retry_ms})

    async def finish(
        self, response: JSONDict, status: int | None = None, retry_ms: int | None = None
    ) -> None:
        """The answer; on a stream, after a ``retry`` hint when ``retry_ms`` is given (the
        server is stopping: the client should reconnect, elsewhere, after that long)."""
        self.close()
        if not self._started:
            await send_answer(self._send, response, self._challenge, status)
            return
        body = sse_event(response)
        if retry_ms is not None:
            body = b"retry: %d\n\n%s" % (retry_ms, body)
        async with self.lock:
            await self._send({"type": "http.response.body", "body": body})


@functools.lru_cache(maxsize=64)
def accepts_sse(accept: str | None) -> bool:
    """Whether ``Accept`` lets us answer with ``text/event-stream``.

    Lenient where the spec is silent (``docs/decisions.md``, "Accept"): no header allows
    SSE. Otherwise the most specific range naming SSE decides (``text/event-stream``, then
    ``text/*``, then ``*/*``), and ``q=0`` refuses (RFC 9110 § 12.5.1).
    """
    if accept is None:
        return True
    weights: dict[str, float] = {}
    for part in accept.lower().split(","):
        media, _, parameters = part.partition(";")
        media = media.strip()
        if media not in _SSE_RANGES:
            continue
        weight = 1.0
        for parameter in parameters.split(";"):
            name, _, value = parameter.partition("=")
            if name.strip() == "q":
                try:
                    weight = float(value.strip())
                except ValueError:
                    weight = 0.0  # a malformed weight accepts nothing
        weights[media] = max(weight, weights.get(media, 0.0))
    for media in _SSE_RANGES:
        if media in weights:
            return weights[media] > 0
    return False


_SSE_RANGES = ("text/event-stream", "text/*", "*/*")


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
    send: Send,
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


#: Codes whose HTTP status the spec fixes: a handler's ``http_status`` does not change them.
_FIXED_STATUS = frozenset({*BAD_REQUEST_CODES, c.METHOD_NOT_FOUND, c.INSUFFICIENT_SCOPE})


async def send_answer(
    send: Send,
    response: JSONDict,
    challenge: Challenge | None,
    chosen: int | None = None,
) -> None:
    """A JSON-RPC response as JSON, with the HTTP status its error calls for, or the one the
    handler chose (``chosen``) where the spec leaves the choice; a 403 carries the challenge
    saying which scopes to obtain."""
    error = response.get("error")
    if error is None:
        await send_json(send, 200, response)
        return
    code = error["code"]
    status = chosen if chosen is not None and code not in _FIXED_STATUS else status_for(code)
    extra = challenge(error) if status == 403 and challenge is not None else None
    if status == 429:
        extra = retry_after(error)
    await send_json(send, status, response, extra)


def retry_after(error: JSONDict) -> list[tuple[bytes, bytes]] | None:
    """``Retry-After`` in whole seconds, rounded up, from an error's
    ``data.retryAfterSeconds``; None when it names no time."""
    data = error.get("data")
    seconds = data.get("retryAfterSeconds") if isinstance(data, dict) else None
    if not isinstance(seconds, (int, float)) or isinstance(seconds, bool):
        return None
    if not 0 <= seconds < 1e9:
        return None
    return [(b"retry-after", b"%d" % math.ceil(seconds))]


async def send_json_bytes(
    send: Send, body: bytes, extra: list[tuple[bytes, bytes]] | None = None
) -> None:
    """An already serialized JSON body, status 200."""
    headers = [JSON_CONTENT_TYPE, (b"content-length", b"%d" % len(body)), *(extra or [])]
    await send({"type": "http.response.start", "status": 200, "headers": headers})
    await send({"type": "http.response.body", "body": body})


async def send_plain(
    send: Send, status: int, body: bytes, extra: list[tuple[bytes, bytes]] | None = None
) -> None:
    headers = [(b"content-length", str(len(body)).encode()), *(extra or [])]
    if body:
        headers.append((b"content-type", b"text/plain; charset=utf-8"))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
