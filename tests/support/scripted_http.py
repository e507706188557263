"""An HTTP/1.1 server whose every byte the test decides, and the answers it writes.

:func:`scripted` listens on a free port of 127.0.0.1 and answers each request (read as a
head and a ``Content-Length`` body, a JSON-RPC message) with ``script(message)``: a
:class:`Reply`, whose parts are written one at a time with a short pause between them, so
that they reach the client in separate reads; then it closes the socket if the reply says
so. Every request is recorded as it arrived (:class:`Seen`: the connection, numbered as
accepted, the request line, the headers, the body), so a test can compare what two clients
sent. The helpers build the framings HTTP/1.1 allows: a length, chunks of any size, a body
that ends with the connection, and event streams with any line end.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any

from wire_helpers import TIMEOUT

#: The scripted server's own address, as a ``Host`` header names it.
THIS = b"(this server)"


@dataclass
class Reply:
    """What the scripted server writes for one request: ``parts`` one write each (a short
    pause between them, so that they arrive apart), then it closes the socket if asked."""

    parts: list[bytes]
    close: bool = False


@dataclass
class Seen:
    connection: int
    line: bytes
    headers: list[tuple[bytes, bytes]]
    body: bytes


Script = Callable[[dict[str, Any]], Reply]


@dataclass
class Scripted:
    url: str
    seen: list[Seen] = field(default_factory=list)
    closed: asyncio.Event = field(default_factory=asyncio.Event)


@contextlib.asynccontextmanager
async def scripted(script: Script) -> AsyncIterator[Scripted]:
    """An HTTP/1.1 server on a free port of 127.0.0.1 that answers each request with
    ``script(message)`` and records it (its own address in ``Host`` recorded as ``THIS``);
    ``closed`` is set whenever it closes a socket."""
    connections = 0
    upstream: Scripted
    handlers: set[asyncio.Task[Any]] = set()

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        nonlocal connections
        handlers.add(asyncio.current_task())  # type: ignore[arg-type]
        connections += 1
        number = connections
        sock = writer.get_extra_info("socket")
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                line, *lines = head[:-4].split(b"\r\n")
                headers = [tuple(part.strip() for part in h.split(b":", 1)) for h in lines]
                lowered = [(name.lower(), value) for name, value in headers]
                length = int(dict(lowered)[b"content-length"])
                body = await reader.readexactly(length)
                named = sorted((n, THIS if (n, v) == (b"host", address) else v) for n, v in lowered)
                upstream.seen.append(Seen(number, line, named, body))
                reply = script(json.loads(body))
                for i, part in enumerate(reply.parts):
                    if i:
                        await asyncio.sleep(0.002)
                    writer.write(part)
                    await writer.drain()
                if reply.close:
                    break
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()
            with contextlib.suppress(ConnectionError):
                await writer.wait_closed()
            upstream.closed.set()

    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    address = b"127.0.0.1:%d" % server.sockets[0].getsockname()[1]
    upstream = Scripted(f"http://{address.decode()}/mcp")
    try:
        yield upstream
    finally:
        server.close()
        # The clients have closed their sockets: each handler ends (it must not be left for
        # the loop to cancel).
        if handlers:
            await asyncio.wait(handlers, timeout=TIMEOUT)
        await server.wait_closed()


def encoded(value: Any) -> bytes:
    return json.dumps(value, separators=(",", ":")).encode()


def with_length(body: bytes, *, status: bytes = b"200 OK", kind: bytes = b"application/json",
                extra: bytes = b"") -> Reply:  # fmt: skip
    head = b"HTTP/1.1 %s\r\ncontent-type: %s\r\ncontent-length: %d\r\n%s\r\n"
    return Reply([head % (status, kind, len(body), extra) + body])


def chunked(body: bytes, size: int, *, status: bytes = b"200 OK",
            kind: bytes = b"application/json") -> Reply:  # fmt: skip
    head = b"HTTP/1.1 %s\r\ncontent-type: %s\r\ntransfer-encoding: chunked\r\n\r\n"
    pieces = [body[i : i + size] for i in range(0, len(body), size)]
    chunks = [b"%x\r\n%s\r\n" % (len(piece), piece) for piece in pieces]
    # Written a few chunks at a time: the reads split chunks and their sizes anywhere.
    writes = [b"".join(chunks[i : i + 3]) for i in range(0, len(chunks), 3)]
    return Reply([head % (status, kind), *writes, b"0\r\n\r\n"])


def until_close(body: bytes) -> Reply:
    """A body with neither length nor chunks: it ends with the connection (RFC 9112 6.3)."""
    head = b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\nconnection: close\r\n\r\n"
    return Reply([head, body[: len(body) // 2], body[len(body) // 2 :]], close=True)


def stream(events: list[bytes], end: bytes = b"\n", *, split: int = 0) -> Reply:
    """An event stream, chunked; ``split`` cuts it into writes of that many bytes."""
    text = b"".join(event.replace(b"\n", end) + end for event in events)
    return chunked(text, split or len(text), kind=b"text/event-stream")


def event(message: Any) -> bytes:
    return b"event: message\ndata: " + encoded(message) + b"\n"


def two_data_lines(message: Any) -> bytes:
    """An event whose data is on two lines, cut where a line break is JSON whitespace."""
    data = encoded(message)
    cut = data.index(b",") + 1
    return b"id: 7\nevent: message\ndata: " + data[:cut] + b"\ndata: " + data[cut:] + b"\n"
