"""A lean Streamable HTTP link to a 2026-07-28 upstream: the proxy's hot path.

Every call a proxy forwards is one more HTTP request. httpx2, which
:class:`~mcpserve.client.http.HTTPConnection` is built on, spends about a millisecond of CPU
on each (its layers, and h11's parsing in pure Python): more than the proxy spends serving
the call. This link speaks only what the 2026-07-28 wire needs of HTTP/1.1, over keep-alive
sockets whose answers httptools parses (the C parser uvicorn uses), for a few dozen
microseconds a request:

* a POST carries the message and the headers a 2026-07-28 client mirrors from it
  (:mod:`mcpserve.client.mirroring`), learning each tool's ``x-mcp-header`` annotations
  from the ``tools/list`` results that pass by, plus the headers configured for the
  upstream. The head of a request is the same for every call of one method, name and
  version, so it is made once and kept (not for a tool whose arguments go in headers);
* the answer is JSON (with a length, chunked, or ending with the connection) or an event
  stream (lines ended by CRLF, LF or CR), whose notifications go to ``on_notification`` in
  order while the request waits for its response; an informational answer (1xx) before
  it is passed over;
* an idle socket is reused; as many are opened as requests are in flight at once, and at
  most :data:`MAX_IDLE` are kept. A reused socket the server had closed while it was idle
  is replaced, and the request sent on a new one, when not a byte of an answer came back;
* a request whose task is cancelled closes its socket: on this wire that is the
  cancellation, and the server stops the handler;
* an answer that is neither JSON-RPC nor a stream raises
  :class:`~mcpserve.client.http_answers.HTTPStatusError`; a broken socket, ``ConnectionError``.

The proxy settles the era with the ordinary connection and moves to this link only for a
2026-07-28 upstream reached by URL with no ``http_client`` or ``http_auth`` of its own:
handshake-era sessions and custom transports stay on httpx2.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import ssl
from collections.abc import AsyncGenerator, Mapping
from typing import Any, cast
from urllib.parse import urlsplit

import httptools

from .._types import JSONDict
from ..client.connections import NotificationHandler, deliver
from ..client.http_answers import DRAIN_SECONDS, HTTPStatusError, is_response
from ..client.mirroring import ToolHeaders, request_headers
from ..client.sse import Event, events
from ..protocol import constants as c
from ..protocol.http_headers import name_for
from ..protocol.jsonrpc import dumps, loads

#: Idle sockets kept for reuse, at most.
MAX_IDLE = 64
#: Request heads kept for reuse, at most (one per method, name or URI, and version).
MAX_HEADS = 512
_ACCEPT = b"Accept: application/json, text/event-stream\r\nContent-Type: application/json\r\n"
_LINE_END = re.compile(rb"\r\n|\r|\n")


class _Socket(asyncio.Protocol):
    """One keep-alive connection; its answers parsed as they arrive."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.parser = httptools.HttpResponseParser(self)
        self.status = 0
        self.headers: dict[bytes, bytes] = {}
        self.body = bytearray()
        self.started = False
        self.headers_done = False
        self.complete = False
        self.lost: ConnectionError | None = None
        self.keep_alive = False
        self.used = False
        self._waiter: asyncio.Future[None] | None = None
        self._loop = asyncio.get_running_loop()  # made by create_connection, in the loop

    # -- asyncio.Protocol --------------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def data_received(self, data: bytes) -> None:
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserError as exc:
            self.lost = ConnectionError(f"the upstream sent invalid HTTP: {exc}")
            if self.transport is not None:
                self.transport.close()
        self._wake()

    def connection_lost(self, exc: Exception | None) -> None:
        framed = b"content-length" in self.headers or b"transfer-encoding" in self.headers
        if exc is None and self.headers_done and not framed:
            # A body with neither a length nor chunks ends with the connection (RFC 9112,
            # section 6.3): this close is its end. The socket is gone all the same.
            self.complete = True
        if self.lost is None:
            self.lost = ConnectionError(
                f"the upstream closed the connection{f': {exc}' if exc else ''}"
            )
        self._wake()

    # -- httptools callbacks -----------------------------------------------------------------

    def on_message_begin(self) -> None:
        self.started = True

    def on_header(self, name: bytes, value: bytes) -> None:
        self.headers[name.lower()] = value

    def on_headers_complete(self) -> None:
        self.status = self.parser.get_status_code()
        if 100 <= self.status < 200:
            return  # informational: the answer is the next message on this socket
        self.keep_alive = self.parser.should_keep_alive()  # read here: after the body, no more
        self.headers_done = True

    def on_body(self, body: bytes) -> None:
        self.body += body

    def on_message_complete(self) -> None:
        if not self.headers_done:  # an informational answer ended: forget its headers
            self.status = 0
            self.headers = {}
            return
        self.complete = True

    # -- waiting -------------------------------------------------------------------------------

    def _wake(self) -> None:
        waiter, self._waiter = self._waiter, None
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    def wait(self) -> asyncio.Future[None]:
        """Until something arrives (or the connection ends): raises what ended it.

        A future to await rather than a coroutine: the request's await chain is a frame
        shorter each time it waits."""
        if self.lost is not None:
            raise self.lost
        waiter = self._loop.create_future()
        self._waiter = waiter
        return waiter

    def reset(self) -> None:
        self.status = 0
        self.headers = {}
        self.body.clear()
        self.started = self.headers_done = self.complete = False

    def take(self) -> bytes:
        body = bytes(self.body)
        self.body.clear()
        return body

    @property
    def reusable(self) -> bool:
        transport = self.transport
        return (
            self.lost is None
            and transport is not None
            and not transport.is_closing()
            and self.keep_alive
        )

    def close(self) -> None:
        if self.transport is not None:
            self.transport.close()


class LeanHTTPConnection:
    """A :class:`~mcpserve.client.connections.Connection` to one 2026-07-28 endpoint."""

    #: The era is settled already: a client on this link is pinned to 2026-07-28.
    negotiates = False

    def __init__(
        self,
        url: str,
        *,
        headers: Mapping[str, str] | None = None,
        connect_timeout: float = 10.0,
        on_notification: NotificationHandler | None = None,
    ) -> None:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"Not an http(s) URL: {url!r}")
        self.url = url
        self.host = parts.hostname
        self.port = parts.port or (443 if parts.scheme == "https" else 80)
        self.tls = parts.scheme == "https"
        self.connect_timeout = connect_timeout
        self.on_notification = on_notification
        self.tools = ToolHeaders()
        target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        fixed = [f"Host: {parts.netloc.rpartition('@')[2]}"]  # never the URL's user:password
        for name, value in (headers or {}).items():
            if any(ch in f"{name}{value}" for ch in "\r\n\0"):
                raise ValueError(f"Header {name!r} holds a line break")
            fixed.append(f"{name}: {value}")
        self._fixed = ("\r\n".join(fixed) + "\r\n").encode("latin-1") + _ACCEPT
        self._target = f"POST {target} HTTP/1.1\r\n".encode("latin-1")
        self._heads: dict[tuple[str | None, str | None, str | None], bytes] = {}
        self._idle: list[_Socket] = []
        self._open: set[_Socket] = set()
        self._ssl: ssl.SSLContext | None = ssl.create_default_context() if self.tls else None

    def attach(self, on_notification: NotificationHandler, on_request: Any) -> None:
        """The client's notification route (this wire has no server-to-client requests)."""
        self.on_notification = self.on_notification or on_notification

    async def open(self) -> None:
        """Nothing to do: sockets are opened as requests need them."""

    async def close(self) -> None:
        for sock in list(self._open):
            sock.close()
        self._idle.clear()
        self._open.clear()

    # -- sockets ----------------------------------------------------------------------------

    async def _connect(self) -> _Socket:
        loop = asyncio.get_running_loop()
        try:
            async with asyncio.timeout(self.connect_timeout):
                _, sock = await loop.create_connection(
                    _Socket,
                    self.host,
                    self.port,
                    ssl=self._ssl,
                    server_hostname=self.host if self.tls else None,
                )
        except (OSError, TimeoutError) as exc:
            raise ConnectionError(
                f"cannot connect to {self.url}: {exc or type(exc).__name__}"
            ) from None
        self._open.add(sock)
        return sock

    def _idle_socket(self) -> _Socket | None:
        while self._idle:
            sock = self._idle.pop()
            if sock.reusable:
                return sock
            self._discard(sock)
        return None

    def _release(self, sock: _Socket) -> None:
        if sock.complete and sock.reusable and len(self._idle) < MAX_IDLE:
            sock.reset()
            sock.used = True
            self._idle.append(sock)
        else:
            self._discard(sock)

    def _discard(self, sock: _Socket) -> None:
        sock.close()
        self._open.discard(sock)

    def _bytes(self, message: JSONDict) -> bytes:
        body = dumps(message)
        return b"%sContent-Length: %d\r\n\r\n%s" % (self._head(message), len(body), body)

    def _head(self, message: JSONDict) -> bytes:
        """The request line and headers, all but the length."""
        method = message.get("method")
        method = method if isinstance(method, str) else None
        params = message.get("params")
        params = params if isinstance(params, dict) else {}
        meta = params.get("_meta")
        version = meta.get(c.META_PROTOCOL_VERSION) if isinstance(meta, dict) else None
        version = version if isinstance(version, str) else None
        name = name_for(method, params) if method is not None else None
        key = (method, name, version)  # all that request_headers reads, but arguments
        head = self._heads.get(key)
        if head is not None:
            return head
        mirrored = "".join(f"{k}: {v}\r\n" for k, v in request_headers(message, self.tools).items())
        head = self._target + self._fixed + mirrored.encode("latin-1")
        if not (method == "tools/call" and name is not None and self.tools.annotates(name)):
            if len(self._heads) >= MAX_HEADS:
                self._heads.clear()  # URIs are the caller's to choose: no growing without end
            self._heads[key] = head
        return head

    # -- requests and notifications ---------------------------------------------------------

    async def request(self, message: JSONDict) -> JSONDict:
        # Written out in one coroutine (no helper to await for the answer): each await in
        # the chain of a forwarded call costs again at every suspension.
        data = self._bytes(message)
        sock = self._idle_socket() or await self._connect()
        retried = False
        try:
            while True:
                try:
                    sock.transport.write(data)  # type: ignore[union-attr]
                    while not sock.headers_done:
                        await sock.wait()
                    kind = sock.headers.get(b"content-type", b"")
                    if sock.status == 200 and kind.startswith(b"text/event-stream"):
                        answer = await self._streamed(sock, message)
                    else:
                        while not sock.complete:
                            await sock.wait()
                        answer = _json_answer(sock, message)
                    break
                except ConnectionError:
                    if retried or not sock.used or sock.started:
                        raise
                    # The server closed this idle socket before reading the request: a new one.
                    retried = True
                    self._discard(sock)
                    sock = await self._connect()
        except BaseException:  # cancelled (the cancellation itself) or broken
            self._discard(sock)
            raise
        self._release(sock)
        if message.get("method") == "tools/list" and isinstance(answer.get("result"), dict):
            self.tools.learn(answer["result"])
            self._heads.clear()  # which tools send arguments in headers may have changed
        return answer

    async def _streamed(self, sock: _Socket, message: JSONDict) -> JSONDict:
        lines = _lines(sock)
        stream = cast("AsyncGenerator[Event, None]", events(lines))  # closed below
        try:
            async for event in stream:
                if not event.data:
                    continue
                try:
                    incoming = loads(event.data, exact_integers=False)
                except Exception:  # not JSON: not a message
                    continue
                if is_response(incoming) and incoming.get("id") == message["id"]:
                    with contextlib.suppress(TimeoutError, ConnectionError):
                        async with asyncio.timeout(DRAIN_SECONDS):
                            while not sock.complete:  # the answer ends the stream
                                await sock.wait()
                    return incoming  # type: ignore[no-any-return]
                if isinstance(incoming, dict) and "method" in incoming and "id" not in incoming:
                    await deliver(self.on_notification, incoming)
                # A request on this stream breaks the 2026-07-28 rules: it gets no answer.
        finally:
            await stream.aclose()
            await lines.aclose()
        raise ConnectionError(f"the server ended the {message['method']} stream early")

    async def notify(self, message: JSONDict) -> None:
        data = self._bytes(message)
        sock = self._idle_socket() or await self._connect()
        try:
            sock.transport.write(data)  # type: ignore[union-attr]
            while not sock.complete:
                await sock.wait()
        except BaseException:
            self._discard(sock)
            raise
        status = sock.status
        body = sock.take()
        self._release(sock)
        if status >= 400:
            raise HTTPStatusError(status, body, message.get("method"))


async def _lines(sock: _Socket) -> AsyncGenerator[str, None]:
    """The lines of an event stream as they arrive (CRLF, LF or CR ends a line)."""
    pending = b""
    while True:
        chunk = sock.take()
        if chunk:
            lines, pending = _split_lines(pending + chunk)
            for line in lines:
                yield line.decode("utf-8", "replace")
            continue
        if sock.complete:
            if pending:  # the end of the stream ends its last line
                for line in _split_lines(pending + b"\n")[0]:
                    yield line.decode("utf-8", "replace")
            return
        await sock.wait()


def _split_lines(buffer: bytes) -> tuple[list[bytes], bytes]:
    """The complete lines in ``buffer``, and what follows the last of them."""
    if b"\r" not in buffer:
        *lines, rest = buffer.split(b"\n")
        return lines, rest
    *lines, rest = _LINE_END.split(buffer)
    if not rest and buffer.endswith(b"\r"):
        rest = lines.pop() + b"\r"  # perhaps the first half of a CRLF: wait for the next byte
    return lines, rest


def _json_answer(sock: _Socket, message: JSONDict) -> JSONDict:
    """The JSON-RPC response a complete answer holds (raises if it holds none)."""
    body = sock.take()
    try:
        answer = loads(body, exact_integers=False)
    except Exception:  # not JSON: the status says what went wrong
        answer = None
    if not is_response(answer):
        raise HTTPStatusError(sock.status, body, message.get("method"))
    if answer.get("id") is None:  # a 400 may name no id: it is still this request's
        answer["id"] = message["id"]
    return answer  # type: ignore[no-any-return]
