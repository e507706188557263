"""Validate what our server sends to handshake-era clients with the official 2025 wire models.

The counterpart of ``wire_schema.py`` (2026-07-28) for the legacy era, with ``mcp-types``'
model of the 2025-11-25 schema, which every earlier version shares. Results are checked
against the concrete type their request method selects (``InitializeResult``,
``ListToolsResult``, ``CallToolResult``...), errors against ``JSONRPCErrorResponse``,
notifications by method and the server's own requests (``elicitation/create``,
``sampling/createMessage``, ``roots/list``) against their request types, gated by version:
a request the client's version does not have fails.

The models ignore extra members, so a legacy result carrying modern-only fields
(``resultType``, ``ttlMs``, ``cacheScope``, the ``serverInfo`` ``_meta`` key) would still
validate; :func:`check_response` rejects those explicitly.

The rest of this module decodes legacy traffic, so that nothing reaches a test unchecked:

* :class:`EraChecker` decides, for each message a dual-era server sends, whether it is
  legacy or modern (from what the client sent), and validates it with the right models;
* :class:`SSEParser` reads legacy SSE streams, which carry event ids, priming events
  (an id and empty data) and ``retry`` fields (``wire_helpers.parse_sse`` accepts neither);
* the raw legacy drivers used by ``test_legacy*.py``: :class:`LegacyHTTPClient` (over httpx2
  against uvicorn, or straight into the ASGI app with a disconnect the app can see, since
  httpx2's ASGI transport buffers whole responses) and :class:`LegacyStdio` (a stdio
  subprocess). Each routes everything it receives through an :class:`EraChecker`.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import sys
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import mcp_types._v2025_11_25 as models
from mcp_types.methods import SERVER_NOTIFICATIONS, SERVER_REQUESTS, SERVER_RESULTS

import wire_schema
from wire_helpers import SERVERS, StdioProcess, check_line

LEGACY_DUAL = SERVERS / "legacy_dual.py"
VERSION = "2025-11-25"

META_PROTOCOL_VERSION = "io.modelcontextprotocol/protocolVersion"
META_SERVER_INFO = "io.modelcontextprotocol/serverInfo"
MODERN_ONLY_RESULT_FIELDS = ("resultType", "ttlMs", "cacheScope")


def check(definition: str, instance: Any) -> None:
    """Validate ``instance`` as the 2025-11-25 type named ``definition``."""
    wire_schema.validate(getattr(models, definition), instance)


def check_response(method: str | None, response: dict[str, Any]) -> None:
    """Validate one legacy response to a request for ``method`` (None: unknown)."""
    if "error" in response:
        check("JSONRPCErrorResponse", response)
        assert "result" not in response, response
        return
    check("JSONRPCResultResponse", response)
    result = response["result"]
    model = SERVER_RESULTS.get((method or "", VERSION), models.Result)
    wire_schema.validate(model, result)
    modern = [key for key in MODERN_ONLY_RESULT_FIELDS if key in result]
    assert not modern, f"legacy {method} result carries modern-only fields {modern}: {result}"
    meta = result.get("_meta")
    assert not (isinstance(meta, dict) and META_SERVER_INFO in meta), result


def check_notification(message: dict[str, Any]) -> None:
    assert "id" not in message, message
    model = SERVER_NOTIFICATIONS.get((message["method"], VERSION), models.JSONRPCNotification)
    wire_schema.validate(model, message)
    params = message.get("params")
    if isinstance(params, dict) and isinstance(params.get("_meta"), dict):
        assert "io.modelcontextprotocol/subscriptionId" not in params["_meta"], message


def check_server_request(message: dict[str, Any], *, version: str = VERSION) -> None:
    """A request the server sends to a legacy client speaking ``version``."""
    method = message["method"]
    model = SERVER_REQUESTS.get((method, version))
    assert model is not None, f"no server request {method} in protocol {version}"
    wire_schema.validate(model, message)
    if method == "elicitation/create" and version != "2025-11-25":
        # ``mode`` arrived with 2025-11-25; older clients do not know it.
        assert "mode" not in message["params"], message


def is_modern(message: Any) -> bool:
    """Whether a client message carries 2026-07-28 per-request ``_meta``."""
    if not isinstance(message, dict):
        return False
    params = message.get("params")
    meta = params.get("_meta") if isinstance(params, dict) else None
    return isinstance(meta, dict) and META_PROTOCOL_VERSION in meta


# --------------------------------------------------------------------------- eras


@dataclass
class EraChecker:
    """Validates each message a dual-era server sends on one connection.

    Call :meth:`sent` for every message the client sends and :meth:`received` for every
    message the server sends. Responses are legacy or modern as the request with the same
    id was; notifications tied to a progress token follow that request; others are legacy
    once the client sent ``initialize``. Requests from the server must be legacy.
    """

    methods: dict[Any, str] = field(default_factory=dict)
    modern_ids: set[Any] = field(default_factory=set)
    modern_tokens: set[Any] = field(default_factory=set)
    legacy_tokens: set[Any] = field(default_factory=set)
    version: str | None = None  # the legacy version asked for at initialize
    received_messages: list[dict[str, Any]] = field(default_factory=list)

    def sent(self, message: Any) -> None:
        if not isinstance(message, dict) or "method" not in message:
            return
        modern = is_modern(message)
        params = message.get("params")
        meta = params.get("_meta") if isinstance(params, dict) else None
        token = meta.get("progressToken") if isinstance(meta, dict) else None
        if token is not None:
            (self.modern_tokens if modern else self.legacy_tokens).add(_key(token))
        if "id" in message:
            self.methods[_key(message["id"])] = message["method"]
            if modern:
                self.modern_ids.add(_key(message["id"]))
        if message["method"] == "initialize" and not modern and isinstance(params, dict):
            self.version = params.get("protocolVersion")

    def expect_modern(self, request_id: Any) -> None:
        """The answer to ``request_id`` comes on the 2026-07-28 wire (e.g. no session yet)."""
        self.modern_ids.add(_key(request_id))

    def received(self, message: dict[str, Any]) -> dict[str, Any]:
        assert isinstance(message, dict), message
        assert message.get("jsonrpc") == "2.0", message
        if "method" in message and "id" in message:
            check_server_request(message, version=self.version or "2025-11-25")
        elif "method" in message:
            if self._modern_notification(message):
                wire_schema.check_notification(message)
            else:
                check_notification(message)
        else:
            key = _key(message.get("id"))
            method = self.methods.get(key)
            if key in self.modern_ids:
                wire_schema.check_response(method, message)
            else:
                check_response(method, message)
        self.received_messages.append(message)
        return message

    def _modern_notification(self, message: dict[str, Any]) -> bool:
        params = message.get("params")
        token = params.get("progressToken") if isinstance(params, dict) else None
        if token is not None and _key(token) in self.modern_tokens:
            return True
        if token is not None and _key(token) in self.legacy_tokens:
            return False
        return self.version is None


def _key(request_id: Any) -> tuple[str, Any]:
    """Ids of different JSON types are different ids (1 is not "1")."""
    return (type(request_id).__name__, request_id)


# --------------------------------------------------------------------------- SSE


@dataclass
class SSEEvent:
    """One server-sent event: ``data`` is None for a block without data lines."""

    id: str | None = None
    data: str | None = None
    retry: int | None = None
    comment: bool = False

    @property
    def message(self) -> dict[str, Any] | None:
        if not self.data:
            return None
        value = json.loads(self.data)
        assert isinstance(value, dict), self.data
        return value


class SSEParser:
    """Incremental SSE decoding (events end at a blank line; CRLF tolerated)."""

    def __init__(self) -> None:
        self._buffer = ""

    def feed(self, chunk: bytes | str) -> list[SSEEvent]:
        text = chunk.decode() if isinstance(chunk, bytes) else chunk
        self._buffer += text.replace("\r\n", "\n")
        events = []
        while "\n\n" in self._buffer:
            block, self._buffer = self._buffer.split("\n\n", 1)
            event = parse_block(block)
            if event is not None:
                events.append(event)
        return events

    @property
    def pending(self) -> str:
        return self._buffer


def parse_block(block: str) -> SSEEvent | None:
    event = SSEEvent()
    data: list[str] = []
    fields = 0
    for line in block.split("\n"):
        if not line:
            continue
        if line.startswith(":"):
            event.comment = True
            continue
        name, _, value = line.partition(":")
        value = value[1:] if value.startswith(" ") else value
        fields += 1
        if name == "id":
            event.id = value
        elif name == "data":
            data.append(value)
        elif name == "retry":
            assert value.isdigit(), line
            event.retry = int(value)
        else:
            raise AssertionError(f"unexpected SSE field {line!r}")
    if not fields:
        return None if not event.comment else event
    if data:
        assert len(data) == 1, f"one JSON-RPC message is one data line: {block!r}"
        event.data = data[0]
    elif event.id is not None:
        event.data = ""  # a priming event: an id and empty data
    return event


# --------------------------------------------------------------------------- drivers
# Raw legacy clients for the tests: every message they receive goes through EraChecker.

TIMEOUT = 15.0
LEGACY_CLIENT_INFO = {"name": "legacy-test-client", "version": "2.0.0"}


def initialize_message(
    request_id: Any = 0,
    version: str = "2025-11-25",
    capabilities: dict[str, Any] | None = None,
) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": "initialize",
        "params": {
            "protocolVersion": version,
            "capabilities": capabilities or {},
            "clientInfo": LEGACY_CLIENT_INFO,
        },
    }


def legacy_request(request_id: Any, method: str, params: dict[str, Any] | None = None) -> Any:
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
    if params is not None:
        message["params"] = params
    return message


def legacy_call(request_id: Any, tool: str, arguments: dict[str, Any], **meta: Any) -> Any:
    params: dict[str, Any] = {"name": tool, "arguments": arguments}
    if meta:
        params["_meta"] = meta
    return legacy_request(request_id, "tools/call", params)


def notification(method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
    message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
    if params is not None:
        message["params"] = params
    return message


def answer(request: dict[str, Any], result: dict[str, Any]) -> dict[str, Any]:
    """The client's response to a server request."""
    return {"jsonrpc": "2.0", "id": request["id"], "result": result}


class Exchange:
    """One HTTP request/response, readable chunk by chunk, closable mid-stream."""

    status: int
    headers: dict[str, str]

    async def read_chunk(self) -> bytes | None:  # None at the end of the body
        raise NotImplementedError

    async def close(self) -> None:
        raise NotImplementedError


class HTTPXExchange(Exchange):
    """Over a real socket (uvicorn), with httpx2 streaming."""

    def __init__(self, response: Any) -> None:
        self.response = response
        self.status = response.status_code
        self.headers = {k.lower(): v for k, v in response.headers.items()}
        self._chunks = response.aiter_raw()

    @classmethod
    async def open(
        cls, client: Any, method: str, path: str, headers: dict[str, str], body: bytes
    ) -> HTTPXExchange:
        request = client.build_request(method, path, headers=headers, content=body or None)
        response = await asyncio.wait_for(client.send(request, stream=True), TIMEOUT)
        return cls(response)

    async def read_chunk(self) -> bytes | None:
        try:
            return await anext(self._chunks)  # type: ignore[no-any-return]
        except StopAsyncIteration:
            return None

    async def close(self) -> None:
        await self.response.aclose()


class ASGIExchange(Exchange):
    """Straight into an ASGI app: streaming, and a disconnect the app can see."""

    def __init__(self) -> None:
        self._sent: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        self._disconnect = asyncio.Event()
        self._ended = False
        self.task: asyncio.Task[None] | None = None

    @classmethod
    async def open(
        cls, app: Any, method: str, path: str, headers: dict[str, str], body: bytes
    ) -> ASGIExchange:
        self = cls()
        delivered = False

        async def receive() -> dict[str, Any]:
            nonlocal delivered
            if not delivered:
                delivered = True
                return {"type": "http.request", "body": body, "more_body": False}
            await self._disconnect.wait()
            return {"type": "http.disconnect"}

        async def send(message: dict[str, Any]) -> None:
            await self._sent.put(message)

        raw_headers = [(b"host", b"127.0.0.1")]
        raw_headers += [(k.lower().encode(), v.encode()) for k, v in headers.items()]
        scope = {
            "type": "http",
            "asgi": {"version": "3.0"},
            "http_version": "1.1",
            "method": method,
            "scheme": "http",
            "path": path,
            "raw_path": path.encode(),
            "query_string": b"",
            "root_path": "",
            "headers": raw_headers,
            "client": ("127.0.0.1", 50000),
            "server": ("127.0.0.1", 8000),
        }
        self.task = asyncio.create_task(app(scope, receive, send))
        start = await self._next(TIMEOUT)
        assert start["type"] == "http.response.start", start
        self.status = start["status"]
        self.headers = {k.decode().lower(): v.decode() for k, v in start.get("headers", [])}
        return self

    async def _next(self, within: float) -> dict[str, Any]:
        assert self.task is not None
        getter = asyncio.ensure_future(self._sent.get())
        try:
            done, _ = await asyncio.wait(
                {getter, self.task}, timeout=within, return_when=asyncio.FIRST_COMPLETED
            )
            if getter in done:
                return getter.result()
            if self.task in done:
                self.task.result()  # raises if the app failed
                raise AssertionError("the app returned without sending more")
            raise TimeoutError
        finally:
            getter.cancel()

    async def read_chunk(self) -> bytes | None:
        if self._ended:
            return None
        message = await self._next(TIMEOUT * 4)
        assert message["type"] == "http.response.body", message
        if not message.get("more_body", False):
            self._ended = True
        return message.get("body", b"")

    async def close(self) -> None:
        self._disconnect.set()
        if self.task is not None:
            await asyncio.wait_for(self.task, TIMEOUT)


@dataclass
class Reply:
    """A whole legacy HTTP answer: JSON, SSE or empty; every message validated."""

    status: int
    headers: dict[str, str]
    events: list[SSEEvent]
    messages: list[dict[str, Any]]

    @property
    def is_sse(self) -> bool:
        return self.headers.get("content-type", "").startswith("text/event-stream")

    @property
    def message(self) -> dict[str, Any]:
        assert self.messages, f"no JSON-RPC message in this {self.status} answer"
        return self.messages[-1]

    @property
    def result(self) -> dict[str, Any]:
        assert "result" in self.message, self.message
        return self.message["result"]  # type: ignore[no-any-return]

    @property
    def error(self) -> dict[str, Any]:
        assert "error" in self.message, self.message
        return self.message["error"]  # type: ignore[no-any-return]


class EventReader:
    """Reads one streaming answer event by event (or its JSON body at once)."""

    def __init__(self, exchange: Exchange, checker: EraChecker) -> None:
        self.exchange = exchange
        self.checker = checker
        self.status = exchange.status
        self.headers = exchange.headers
        self._parser = SSEParser()
        self._queue: list[SSEEvent] = []
        self.events: list[SSEEvent] = []
        self.ended = False
        #: Keep-alive comments seen (skipped by next_event).
        self.keepalives = 0

    @property
    def is_sse(self) -> bool:
        return self.headers.get("content-type", "").startswith("text/event-stream")

    async def next_event(self, within: float = TIMEOUT) -> SSEEvent | None:
        """The next event (messages validated); None once the body has ended."""
        assert self.is_sse, f"not an event stream: {self.status} {self.headers}"
        while not self._queue:
            if self.ended:
                return None
            chunk = await asyncio.wait_for(self.exchange.read_chunk(), within)
            if chunk is None:
                self.ended = True
                assert not self._parser.pending.strip(), self._parser.pending
                continue
            for event in self._parser.feed(chunk):
                if event.comment and event.id is None and event.data is None:
                    self.keepalives += 1
                    continue  # a keep-alive comment
                if event.message is not None:
                    self.checker.received(event.message)
                self._queue.append(event)
        event = self._queue.pop(0)
        self.events.append(event)
        return event

    async def next_message(self, within: float = TIMEOUT) -> dict[str, Any]:
        """The next JSON-RPC message, skipping priming and retry-only events."""
        while True:
            event = await self.next_event(within)
            assert event is not None, "the stream ended"
            if event.message is not None:
                return event.message

    async def until_response(
        self, request_id: Any, within: float = TIMEOUT
    ) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        others = []
        while True:
            message = await self.next_message(within)
            if "method" not in message and _key(message.get("id")) == _key(request_id):
                return message, others
            others.append(message)

    async def read_all(self, within: float = TIMEOUT) -> list[SSEEvent]:
        """The events from here to the end of the stream."""
        events = []
        while (event := await self.next_event(within)) is not None:
            events.append(event)
        return events

    async def body(self, within: float = TIMEOUT) -> bytes:
        chunks = []
        while (chunk := await asyncio.wait_for(self.exchange.read_chunk(), within)) is not None:
            chunks.append(chunk)
        self.ended = True
        return b"".join(chunks)

    async def reply(self, within: float = TIMEOUT) -> Reply:
        """Read the rest and decode it."""
        if self.is_sse:
            events = [*self.events, *await self.read_all(within)]
            messages = [e.message for e in events if e.message is not None]
            return Reply(self.status, self.headers, events, messages)
        data = await self.body(within)
        messages = []
        if self.headers.get("content-type", "").startswith("application/json"):
            message = json.loads(data)
            messages.append(self.checker.received(message))
        else:
            assert not data or self.status >= 400, data
        return Reply(self.status, self.headers, [], messages)

    async def close(self) -> None:
        await self.exchange.close()


Opener = Any  # async (method, headers, body) -> Exchange


class LegacyHTTPClient:
    """A handshake-era Streamable HTTP client driven by hand.

    ``opener(method, headers, body)`` makes one exchange: over httpx2 (real server) or
    straight into an ASGI app. After :meth:`initialize`, every request carries the
    session id and ``MCP-Protocol-Version`` unless told otherwise.
    """

    def __init__(self, opener: Opener, *, checker: EraChecker | None = None) -> None:
        self.opener = opener
        self.checker = checker or EraChecker()
        self.session_id: str | None = None
        self.version: str | None = None
        self.readers: list[EventReader] = []

    @classmethod
    def over_httpx(cls, client: Any, path: str = "/mcp") -> LegacyHTTPClient:
        async def opener(method: str, headers: dict[str, str], body: bytes) -> Exchange:
            return await HTTPXExchange.open(client, method, path, headers, body)

        return cls(opener)

    @classmethod
    def over_asgi(cls, app: Any, path: str = "/mcp") -> LegacyHTTPClient:
        async def opener(method: str, headers: dict[str, str], body: bytes) -> Exchange:
            return await ASGIExchange.open(app, method, path, headers, body)

        return cls(opener)

    def headers(self, *, json_body: bool = True, **extra: str | None) -> dict[str, str]:
        headers = {"accept": "application/json, text/event-stream"}
        if json_body:
            headers["content-type"] = "application/json"
        if self.session_id is not None:
            headers["mcp-session-id"] = self.session_id
        if self.version is not None:
            headers["mcp-protocol-version"] = self.version
        for name, value in extra.items():
            name = name.replace("_", "-").lower()
            if value is None:
                headers.pop(name, None)
            else:
                headers[name] = value
        return headers

    async def open(
        self,
        message: Any,
        *,
        headers: dict[str, str] | None = None,
        content: bytes | None = None,
    ) -> EventReader:
        """POST one message; returns the answer unread (for streams read event by event)."""
        self.checker.sent(message)
        body = content if content is not None else json.dumps(message).encode()
        exchange = await self.opener("POST", headers or self.headers(), body)
        return self._reader(exchange)

    def _reader(self, exchange: Exchange) -> EventReader:
        reader = EventReader(exchange, self.checker)
        self.readers.append(reader)
        return reader

    async def close(self) -> None:
        """Disconnect every answer still open."""
        for reader in self.readers:
            with contextlib.suppress(Exception):
                await reader.close()
        self.readers.clear()

    async def post(self, message: Any, **options: Any) -> Reply:
        reader = await self.open(message, **options)
        try:
            return await reader.reply()
        finally:
            await reader.close()
            self.readers.remove(reader)

    async def initialize(
        self,
        capabilities: dict[str, Any] | None = None,
        *,
        version: str = "2025-11-25",
        request_id: Any = 0,
        initialized: bool = True,
    ) -> Reply:
        """``initialize`` (no session yet), then ``notifications/initialized``."""
        self.session_id = None
        self.version = None
        message = initialize_message(request_id, version, capabilities)
        reply = await self.post(message, headers=self.headers())
        if reply.status != 200:
            return reply
        self.session_id = reply.headers["mcp-session-id"]
        self.version = reply.result["protocolVersion"]
        if initialized:
            note = await self.post(notification("notifications/initialized"))
            assert note.status == 202, note
        return reply

    async def get(
        self, last_event_id: str | None = None, *, headers: dict[str, str] | None = None
    ) -> EventReader:
        headers = headers or self.headers(json_body=False, accept="text/event-stream")
        if last_event_id is not None:
            headers["last-event-id"] = last_event_id
        exchange = await self.opener("GET", headers, b"")
        return self._reader(exchange)

    async def delete(self, *, headers: dict[str, str] | None = None) -> Reply:
        exchange = await self.opener("DELETE", headers or self.headers(json_body=False), b"")
        reader = self._reader(exchange)
        try:
            return await reader.reply()
        finally:
            await reader.close()
            self.readers.remove(reader)


@dataclass
class LegacyStdio(StdioProcess):
    """A stdio server subprocess whose every stdout line is validated for its era."""

    checker: EraChecker = field(default_factory=EraChecker)

    async def send(self, *messages: Any) -> None:
        for message in messages:
            self.checker.sent(message)
        await super().send(*messages)

    def validate(self, line: bytes) -> dict[str, Any]:
        message = self.checker.received(check_line(line))
        self.seen.append(message)
        return message


@contextlib.asynccontextmanager
async def legacy_stdio(
    args: Sequence[str] | None = None, *, env: dict[str, str] | None = None
) -> AsyncIterator[LegacyStdio]:
    """Run a server (default: ``tests/support/servers/legacy_dual.py``) as a stdio subprocess."""
    command = list(args) if args is not None else [sys.executable, str(LEGACY_DUAL)]
    proc = await LegacyStdio.start(command, env=env)
    try:
        yield proc
    finally:
        await proc.stop()
