"""One peer of ``tests/support/servers/middleware_app.py`` per transport and era, for the
wire tests of ``mcpserve.middleware``: stdio or HTTP, 2026-07-28 or the handshake era
(2025-11-25). :meth:`Peer.ask` sends one request and gives back what came over the wire:
the HTTP status and headers (None over stdio) and the JSON-RPC response, schema-checked
by the helpers underneath. Every wait is bounded; every process is stopped on the way out.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx2

from legacy_schema import (
    LegacyHTTPClient,
    LegacyStdio,
    initialize_message,
    legacy_request,
    notification,
)
from wire_helpers import (
    SERVERS,
    TIMEOUT,
    StdioProcess,
    http_server_process,
    post,
    request,
)

APP = SERVERS / "middleware_app.py"
TRANSPORTS = ["stdio", "http"]
ERAS = ["2026-07-28", "2025-11-25"]
WIRES = [(transport, era) for transport in TRANSPORTS for era in ERAS]


@dataclass
class Answer:
    """What one request got: the HTTP status and headers (None over stdio), the response."""

    status: int | None
    headers: dict[str, str] | None
    message: dict[str, Any]

    @property
    def result(self) -> dict[str, Any]:
        assert "result" in self.message, self.message
        return self.message["result"]  # type: ignore[no-any-return]

    @property
    def error(self) -> dict[str, Any]:
        assert "error" in self.message, self.message
        return self.message["error"]  # type: ignore[no-any-return]

    @property
    def text(self) -> str:
        [block] = self.result["content"]
        return block["text"]  # type: ignore[no-any-return]


@dataclass
class Peer:
    """A client of one wire; ``log()`` is the server's stderr so far."""

    era: str
    stdio: StdioProcess | LegacyStdio | None = None
    http: httpx2.AsyncClient | None = None
    legacy: LegacyHTTPClient | None = None
    log_path: Path | None = None
    next_id: int = 1
    headers: dict[str, str] = field(default_factory=dict)

    async def ask(self, method: str, params: dict[str, Any] | None = None, **meta: Any) -> Answer:
        """One request; ``meta``: more ``_meta`` keys (e.g. ``traceparent``)."""
        self.next_id += 1
        number = self.next_id
        if self.era == "2026-07-28":
            message = request(number, method, params, **meta)
        else:
            message = legacy_request(
                number, method, {**(params or {}), "_meta": meta} if meta else params
            )
        if self.stdio is not None:
            await self.stdio.send(message)
            response, _notifications = await self.stdio.read_until(number)
            return Answer(None, None, response)
        if self.legacy is not None:
            reply = await self.legacy.post(message)
            return Answer(reply.status, dict(reply.headers), reply.message)
        assert self.http is not None
        answer = await post(self.http, message)
        return Answer(answer.status, dict(answer.headers), answer.message)

    async def notify(self, method: str, params: dict[str, Any]) -> None:
        """Send a notification (HTTP: it must be accepted, 202)."""
        message = {"jsonrpc": "2.0", "method": method, "params": params}
        if self.era == "2026-07-28":
            message["params"] = {**params, "_meta": request(0, method)["params"]["_meta"]}
        if self.stdio is not None:
            await self.stdio.send(message)
            return
        if self.legacy is not None:
            reply = await self.legacy.post(message)
            assert reply.status == 202, reply
            return
        assert self.http is not None
        answer = await post(self.http, message)
        assert answer.status == 202, answer

    async def call(self, tool: str, **arguments: Any) -> Answer:
        return await self.ask("tools/call", {"name": tool, "arguments": arguments})

    def log(self) -> str:
        if self.stdio is not None:
            return self.stdio.stderr.decode(errors="replace")
        assert self.log_path is not None
        return self.log_path.read_text(errors="replace")


@contextlib.asynccontextmanager
async def serving(transport: str, directory: Path, **env: str) -> AsyncIterator[Any]:
    """The app with ``env``: a function that opens a peer of an era, as often as wanted
    (stdio: each peer is a process of its own, as each stdio client starts one)."""
    async with contextlib.AsyncExitStack() as stack:
        if transport == "http":
            server = stack.enter_context(
                http_server_process(directory, args=[sys.executable, str(APP)], env=env)
            )

            async def open_http(era: str, local_address: str | None = None) -> Peer:
                # local_address: the peer's own address (127.0.0.2, say: another client).
                transport = httpx2.AsyncHTTPTransport(local_address=local_address)
                http = await stack.enter_async_context(
                    httpx2.AsyncClient(
                        base_url=f"http://127.0.0.1:{server.port}",
                        timeout=TIMEOUT,
                        transport=transport,
                    )
                )
                peer = Peer(era, http=http, log_path=server.log)
                if era != "2026-07-28":
                    peer.legacy = LegacyHTTPClient.over_httpx(http)
                    await peer.legacy.initialize()
                    stack.push_async_callback(peer.legacy.close)
                return peer

            yield open_http
            return

        async def open_stdio(era: str) -> Peer:
            # Each era's process checks what it reads against that era's schema.
            opener = StdioProcess if era == "2026-07-28" else LegacyStdio
            process = await opener.start([sys.executable, str(APP)], env=env)
            stack.push_async_callback(process.stop)
            peer = Peer(era, stdio=process)
            if era != "2026-07-28":
                await process.send(initialize_message(0, era))
                assert "result" in await process.read()
                await process.send(notification("notifications/initialized"))
            return peer

        yield open_stdio
