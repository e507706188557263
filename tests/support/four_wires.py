"""One server driven over the four ways a client reaches it: stdio and HTTP, each in the
2026-07-28 era (``_meta`` on every request) and in the handshake era (``initialize``, then
a session), all in process: stdio is the real line framing (``serve_stream`` fed line by
line), HTTP the ASGI app through httpx2. ``call`` answers a ``tools/call``'s result.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator, Callable
from typing import Any

from legacy_schema import initialize_message
from mcpserve import Auth, Server
from mcpserve.transports.stdio import serve_stream
from wire_helpers import asgi_client, call, default_headers, parse_sse, post

WIRES = ["stdio-modern", "stdio-handshake", "http-modern", "http-handshake"]
HANDSHAKE_VERSION = "2025-11-25"
WAIT = 10.0
LEGACY_HEADERS = {
    "content-type": "application/json",
    "accept": "application/json, text/event-stream",
}


class Wire:
    """A connection of one kind; ``call`` sends a ``tools/call`` and returns its answer."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self.handshake = kind.endswith("handshake")
        self._ids = 0

    def _message(self, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
        self._ids += 1
        if not self.handshake:
            return call(self._ids, tool, arguments)
        params = {"name": tool, "arguments": arguments}
        return {"jsonrpc": "2.0", "id": self._ids, "method": "tools/call", "params": params}

    async def answer(self, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
        """The whole JSON-RPC response."""
        raise NotImplementedError

    async def call(self, tool: str, arguments: dict[str, Any] | None = None) -> dict[str, Any]:
        response = await self.answer(tool, arguments or {})
        assert "result" in response, response
        result: dict[str, Any] = response["result"]
        return result


class StdioWire(Wire):
    def __init__(self, kind: str, server: Server) -> None:
        super().__init__(kind)
        self.reader = asyncio.StreamReader()
        self.buffer = b""
        self.lines: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        self.task = asyncio.create_task(serve_stream(server, self.reader, self._write))

    def _write(self, data: bytes) -> None:
        self.buffer += data
        while b"\n" in self.buffer:
            line, self.buffer = self.buffer.split(b"\n", 1)
            self.lines.put_nowait(json.loads(line))

    def send(self, message: dict[str, Any]) -> None:
        self.reader.feed_data(json.dumps(message).encode() + b"\n")

    async def start(self) -> None:
        if self.handshake:
            self.send(initialize_message(version=HANDSHAKE_VERSION))
            assert "result" in await asyncio.wait_for(self.lines.get(), WAIT)
            self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    async def answer(self, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
        message = self._message(tool, arguments)
        self.send(message)
        while True:
            got = await asyncio.wait_for(self.lines.get(), WAIT)
            if got.get("id") == message["id"] and "method" not in got:
                return got

    async def close(self) -> None:
        self.reader.feed_eof()
        await asyncio.wait_for(self.task, WAIT)


class HTTPWire(Wire):
    def __init__(self, kind: str, http: Any, extra: dict[str, str]) -> None:
        super().__init__(kind)
        self.http = http
        self.extra = extra
        self.headers: dict[str, str] = {}

    async def start(self) -> None:
        if self.handshake:
            started = await self.http.post(
                "/mcp",
                json=initialize_message(version=HANDSHAKE_VERSION),
                headers={**LEGACY_HEADERS, **self.extra},
            )
            assert started.status_code == 200, started.text
            self.headers = {**LEGACY_HEADERS, "mcp-session-id": started.headers["mcp-session-id"],
                            "mcp-protocol-version": HANDSHAKE_VERSION, **self.extra}  # fmt: skip
            initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
            await self.http.post("/mcp", json=initialized, headers=self.headers)

    async def answer(self, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
        message = self._message(tool, arguments)
        headers = self.headers if self.handshake else {**default_headers(message), **self.extra}
        return await self.post(message, headers)

    async def post(self, message: dict[str, Any], headers: dict[str, str] | None) -> Any:
        """The answer to ``message``: checked against the 2026-07-28 schema in that era, read
        as JSON or the last event of a stream in the handshake era."""
        if not self.handshake:
            return (await post(self.http, message, headers)).message
        response = await self.http.post("/mcp", json=message, headers=headers)
        if response.headers.get("content-type", "").startswith("text/event-stream"):
            return parse_sse(response.text)[-1]
        return response.json()


@contextlib.asynccontextmanager
async def wire(
    kind: str,
    server: Server,
    *,
    authenticate: Callable[[Any], Auth | None] | None = None,
    headers: dict[str, str] | None = None,
) -> AsyncIterator[Wire]:
    """A started connection of ``kind`` (one of :data:`WIRES`) to ``server``; over HTTP,
    ``headers`` go with every request."""
    if kind.startswith("stdio"):
        stdio = StdioWire(kind, server)
        try:
            await stdio.start()
            yield stdio
        finally:
            await stdio.close()
        return
    app = server.http_app(authenticate=authenticate) if authenticate else server.http_app()
    async with asgi_client(app) as http:
        connection = HTTPWire(kind, http, headers or {})
        await connection.start()
        yield connection
