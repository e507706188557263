"""Streamable HTTP for handshake-era clients (2025-11-25 and earlier), beside the modern app.

Routing (CHECKLIST Y01-Y04, Y09-Y14) is decided in ``http.py``; this module serves what it
hands over: ``initialize`` (which mints an ``Mcp-Session-Id``), every later POST of the
session, the standalone ``GET`` stream, ``GET`` with ``Last-Event-ID`` to resume a stream,
and ``DELETE`` to end a session.

Each legacy request runs in a task owned by its session, writing to an
:class:`~mcpserve.transports.sse.EventStream`. The POST's connection only reads that
stream: if the client disconnects, the request goes on (a disconnect is not a
cancellation in this era, Y14; ``notifications/cancelled`` is), and the client can resume
the stream. A request whose handler sends nothing before its result is answered as
``application/json``.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, MutableMapping
from typing import TYPE_CHECKING, Any

from ..protocol import constants as c
from ..protocol.core import Auth
from ..protocol.errors import InternalError, InvalidRequest
from ..protocol.jsonrpc import JSONDict, Kind, error_response
from ..server.sessions import LegacySession, SessionStore, TooManySessions
from .sse import SSE_HEADERS, EventStream

if TYPE_CHECKING:
    from ..server.legacy import Legacy
    from ..server.server import Server

logger = logging.getLogger("mcpserve.http")

Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
ASGISend = Callable[[MutableMapping[str, Any]], Awaitable[None]]
JSONResponder = Callable[..., Awaitable[None]]

SESSION_HEADER = "mcp-session-id"
MAX_STREAMS_PER_SESSION = 32


class StreamSink:
    """What a legacy handler's ``send`` is: pushes to its stream, and can detach it."""

    __slots__ = ("stream",)

    def __init__(self, stream: EventStream) -> None:
        self.stream = stream

    async def __call__(self, message: JSONDict) -> None:
        self.stream.push(message)

    def detach(self, retry_ms: int) -> None:
        self.stream.detach(retry_ms)


class LegacyHTTP:
    """Sessions and streams of the handshake-era clients of one HTTP app."""

    def __init__(self, server: Server, respond_json: JSONResponder) -> None:
        self.server = server
        max_sessions, idle_seconds = server.session_limits
        self.sessions = SessionStore(max_sessions=max_sessions, idle_seconds=idle_seconds)
        self.sessions.on_close = lambda session: server.subscriptions.sinks.discard(
            session.on_event
        )
        self._json = respond_json

    @property
    def legacy(self) -> Legacy:
        assert self.server.legacy is not None
        return self.server.legacy

    def version_problem(self, headers: dict[str, str]) -> str | None:
        """Y13: a legacy request's ``MCP-Protocol-Version``, when sent, must be one we speak."""
        version = headers.get("mcp-protocol-version")
        if version is None or version.strip() in c.LEGACY_VERSIONS:
            return None
        return f"Unsupported MCP-Protocol-Version {version[:40]!r}"

    # -- POST -------------------------------------------------------------------------------

    async def initialize(self, message: JSONDict, send: ASGISend) -> None:
        session, response = self.legacy.initialize(message)
        if session is None:
            await self._json(send, 400, response)
            return
        try:
            self.sessions.add(session)
        except TooManySessions:
            error = InternalError("Too many sessions; try again later")
            await self._json(send, 503, error_response(message["id"], error))
            return
        session.emit = lambda note: self._emit(session, note)
        self.server.subscriptions.sinks.add(session.on_event)
        await self._json(send, 200, response, [(b"mcp-session-id", session.id.encode())])

    async def post(
        self,
        message: JSONDict,
        kind: Kind,
        session: LegacySession,
        auth: Auth,
        receive: Receive,
        send: ASGISend,
    ) -> None:
        if kind is not Kind.REQUEST:
            await self.legacy.handle(message, session, None, auth)
            await send({"type": "http.response.start", "status": 202,
                        "headers": [(b"content-length", b"0")]})  # fmt: skip
            await send({"type": "http.response.body", "body": b""})
            return
        request_id = message["id"]
        if request_id in session.tasks:
            error = InvalidRequest("Invalid request: this id is already in flight")
            await self._json(send, 400, error_response(request_id, error))
            return
        stream = self._new_stream(session)
        task = asyncio.create_task(self._run(message, session, stream, auth))
        session.tasks[request_id] = task

        def done(_: asyncio.Task[None]) -> None:
            session.tasks.pop(request_id, None)
            session.touch()  # idle time counts from the end of the last request

        task.add_done_callback(done)
        await stream.wait()
        first = stream.first
        if stream.finished and first is not None and "id" in first and "method" not in first:
            session.streams.pop(stream.id, None)  # never resumable: the client saw no event id
            await self._json(send, 200, first)  # a plain answer: no stream needed
            return
        await send({"type": "http.response.start", "status": 200, "headers": SSE_HEADERS})
        await _pump(session, stream, None, receive, send)

    async def _run(
        self, message: JSONDict, session: LegacySession, stream: EventStream, auth: Auth
    ) -> None:
        try:
            response = await self.legacy.handle(message, session, StreamSink(stream), auth)
            if response is not None:
                stream.push(response)
        except Exception as exc:  # the handler path already answers errors; this is a bug
            logger.exception("Legacy request failed")
            stream.push(error_response(message["id"], InternalError(str(type(exc).__name__))))
        finally:
            stream.finish()

    def _new_stream(self, session: LegacySession) -> EventStream:
        stream = EventStream()
        session.streams[stream.id] = stream
        while len(session.streams) > MAX_STREAMS_PER_SESSION:
            session.streams.popitem(last=False)[1].finish()
        return stream

    # -- GET and DELETE ---------------------------------------------------------------------

    async def get(
        self, session: LegacySession, headers: dict[str, str], receive: Receive, send: ASGISend
    ) -> None:
        last_event_id = headers.get("last-event-id")
        after: int | None = None
        if last_event_id is not None:
            stream_id, _, number = last_event_id.strip().rpartition("-")
            resumed = session.streams.get(stream_id)
            if resumed is None or not number.isdigit():
                error = InvalidRequest("Unknown Last-Event-ID: the stream is gone")
                await self._json(send, 404, error_response(None, error))
                return
            stream, after = resumed, int(number)
        else:
            if session.standalone is not None:
                session.standalone.finish()  # one standalone stream per session
            stream = session.standalone = self._new_stream(session)
        await send({"type": "http.response.start", "status": 200, "headers": SSE_HEADERS})
        await _pump(session, stream, after, receive, send)

    async def delete(self, session: LegacySession, send: ASGISend) -> None:
        self.sessions.remove(session.id)
        await send({"type": "http.response.start", "status": 200,
                    "headers": [(b"content-length", b"0")]})  # fmt: skip
        await send({"type": "http.response.body", "body": b""})

    def _emit(self, session: LegacySession, message: JSONDict) -> None:
        """Notifications unrelated to a request go on the standalone stream, if one is open."""
        if session.standalone is not None and not session.standalone.finished:
            session.standalone.push(message)

    def close(self) -> None:
        self.sessions.close_all()


async def _pump(
    session: LegacySession,
    stream: EventStream,
    after: int | None,
    receive: Receive,
    send: ASGISend,
) -> None:
    """Stream events until the stream ends, is detached, or the client goes away.

    A stream delivered to its end is forgotten: nothing is left to resume.
    """
    pump = asyncio.create_task(stream.pump(send, after))

    async def disconnected() -> None:
        while (await receive())["type"] != "http.disconnect":
            pass

    watch = asyncio.create_task(disconnected())
    try:
        await asyncio.wait({pump, watch}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in (pump, watch):
            task.cancel()
        outcome = await asyncio.gather(pump, watch, return_exceptions=True)
        if outcome[0] is True:
            session.streams.pop(stream.id, None)
        session.touch()
