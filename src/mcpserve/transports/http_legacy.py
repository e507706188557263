"""Streamable HTTP for handshake-era clients (2025-11-25 and earlier), beside the modern app.

``http.py`` hands over what the era rule gives to the handshake era (:meth:`LegacyHTTP.claims`)
and every GET or DELETE with a session id. This module serves it: ``initialize`` (which mints
an ``Mcp-Session-Id``), every later POST of the session, the standalone ``GET`` stream,
``GET`` with ``Last-Event-ID`` to resume a stream, and ``DELETE`` to end a session.

An :class:`~.http_sessions.HTTPSession` holds what the session needs over HTTP (the era's
facts, its resumable streams, its running requests and its questions to the client), kept
in a bounded :class:`~.http_sessions.SessionStore`. Each request runs in a task owned by
its session, writing to an
:class:`~mcpserve.transports.sse.EventStream`; the POST's connection only reads that stream.
If the client disconnects, the request goes on (in this era a disconnect is not a
cancellation, ``notifications/cancelled`` is) and the client can resume the stream. A request
whose handler sends nothing before its result is answered as ``application/json``.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Awaitable, Callable, Mapping, MutableMapping
from typing import TYPE_CHECKING, Any

from ..protocol import constants as c
from ..protocol.core import Auth, refuse_duplicate_id
from ..protocol.errors import InternalError, InvalidRequest, MCPError
from ..protocol.jsonrpc import JSONDict, Kind, error_response, is_valid_id, readable_id
from ..protocol.legacy import Era, era_of
from .http_sessions import HTTPSession, SessionStore, TooManySessions
from .responses import send_json
from .sse import SSE_HEADERS, EventStream

if TYPE_CHECKING:
    from ..server.server import Server

logger = logging.getLogger("mcpserve.http")

Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
ASGISend = Callable[[MutableMapping[str, Any]], Awaitable[None]]

SESSION_HEADER = "mcp-session-id"
_SESSION_BYTES = SESSION_HEADER.encode()
_VERSION_BYTES = b"mcp-protocol-version"
_LEGACY_VERSIONS = frozenset(version.encode() for version in c.LEGACY_VERSIONS)


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

    def __init__(self, server: Server, *, max_sessions: int, idle_seconds: float) -> None:
        assert server.legacy is not None
        self.server = server
        self._legacy = server.legacy
        self._sinks = server.subscriptions.sinks
        self.sessions = SessionStore(
            max_sessions=max_sessions,
            idle_seconds=idle_seconds,
            on_close=lambda session: self._sinks.discard(session.on_event),
        )

    def claims(self, message: JSONDict, kind: Kind, headers: Mapping[bytes, bytes]) -> bool:
        """Whether a POSTed message belongs to the handshake era: no per-request ``_meta``,
        and an ``initialize``, a session id, or a legacy (or no) ``MCP-Protocol-Version`` on
        a request."""
        era = era_of(message)
        if era is not Era.IN_CONTEXT:
            return era is Era.HANDSHAKE
        if _SESSION_BYTES in headers:
            return True
        version = headers.get(_VERSION_BYTES)
        return kind is Kind.REQUEST and (version is None or version.strip() in _LEGACY_VERSIONS)

    def close(self) -> None:
        self.sessions.close_all()

    # -- POST -------------------------------------------------------------------------------

    async def post(
        self,
        message: JSONDict,
        kind: Kind,
        headers: Mapping[str, str],
        auth: Auth,
        receive: Receive,
        send: ASGISend,
    ) -> None:
        problem = _version_problem(headers)
        if problem is not None:
            error = InvalidRequest(problem)
            await send_json(send, 400, error_response(readable_id(message), error))
            return
        if kind is Kind.REQUEST and message["method"] == "initialize":
            await self._initialize(message, send)
            return
        session_id = headers.get(SESSION_HEADER)
        if session_id is None:
            error = InvalidRequest("Bad request: Mcp-Session-Id is required (send initialize)")
            await send_json(send, 400, error_response(readable_id(message), error))
            return
        session = self.sessions.get(session_id.strip())
        if session is None:
            error = InvalidRequest("Session not found: send initialize to start a new one")
            await send_json(send, 404, error_response(readable_id(message), error))
            return
        if kind is Kind.REQUEST:
            await self._request(message, session, auth, receive, send)
            return
        if kind is Kind.RESPONSE:
            session.outgoing.receive(message)
        elif message["method"] == "notifications/cancelled":
            _cancel(session, message.get("params"))
        await send({"type": "http.response.start", "status": 202,
                    "headers": [(b"content-length", b"0")]})  # fmt: skip
        await send({"type": "http.response.body", "body": b""})

    async def _initialize(self, message: JSONDict, send: ASGISend) -> None:
        started, response = self._legacy.initialize(message)
        if started is None:
            await send_json(send, 400, response)
            return
        session = HTTPSession(started)
        try:
            self.sessions.add(session)
        except TooManySessions:
            error = InternalError("Too many sessions; try again later")
            await send_json(send, 503, error_response(message["id"], error))
            return
        self._sinks.add(session.on_event)
        await send_json(send, 200, response, [(b"mcp-session-id", session.id.encode())])

    async def _request(
        self,
        message: JSONDict,
        session: HTTPSession,
        auth: Auth,
        receive: Receive,
        send: ASGISend,
    ) -> None:
        request_id = message["id"]
        if request_id in session.tasks:
            await send_json(send, 400, error_response(request_id, refuse_duplicate_id()))
            return
        stream = session.new_stream()
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
            await send_json(send, 200, first)  # a plain answer: no stream needed
            return
        await send({"type": "http.response.start", "status": 200, "headers": SSE_HEADERS})
        await _pump(session, stream, None, receive, send)

    async def _run(
        self, message: JSONDict, session: HTTPSession, stream: EventStream, auth: Auth
    ) -> None:
        """One request, in its own task: the dispatcher's two steps, answered on ``stream``."""
        dispatcher = self.server.dispatcher
        sink = StreamSink(stream)
        ask = functools.partial(session.outgoing.call, sink, owner=asyncio.current_task())
        try:
            try:
                request = dispatcher.prepare(message, send=sink, auth=auth,
                                             session=session.session, ask=ask)  # fmt: skip
                if request.inline:
                    answer = dispatcher.execute_inline(request)
                    response = answer if isinstance(answer, dict) else await answer
                else:
                    response = await dispatcher.execute(request)
            except MCPError as exc:
                response = error_response(message["id"], exc)
            except Exception:  # the dispatcher answers every handler error: this is a bug
                logger.exception("Legacy request failed")
                response = error_response(message["id"], InternalError("Internal error"))
            if not session.closed:  # a session that ended has no one to answer
                stream.push(response)
        finally:
            stream.finish()

    # -- GET and DELETE ---------------------------------------------------------------------

    async def stream(
        self, method: str, headers: Mapping[str, str], receive: Receive, send: ASGISend
    ) -> None:
        """A GET (the standalone stream, or a resumed one) or a DELETE of a session."""
        problem = _version_problem(headers)
        if problem is not None:
            await send_json(send, 400, error_response(None, InvalidRequest(problem)))
            return
        session = self.sessions.get(headers.get(SESSION_HEADER, "").strip())
        if session is None:
            error = InvalidRequest("Session not found: send initialize to start a new one")
            await send_json(send, 404, error_response(None, error))
        elif method == "GET":
            await self._get(session, headers, receive, send)
        else:
            self.sessions.remove(session.id)
            await send({"type": "http.response.start", "status": 200,
                        "headers": [(b"content-length", b"0")]})  # fmt: skip
            await send({"type": "http.response.body", "body": b""})

    async def _get(
        self, session: HTTPSession, headers: Mapping[str, str], receive: Receive, send: ASGISend
    ) -> None:
        last_event_id = headers.get("last-event-id")
        after: int | None = None
        if last_event_id is not None:
            stream_id, _, number = last_event_id.strip().rpartition("-")
            resumed = session.streams.get(stream_id)
            if resumed is None or not number.isdigit():
                error = InvalidRequest("Unknown Last-Event-ID: the stream is gone")
                await send_json(send, 404, error_response(None, error))
                return
            stream, after = resumed, int(number)
        else:
            if session.standalone is not None:
                session.standalone.finish()  # one standalone stream per session
            stream = session.standalone = session.new_stream()
        await send({"type": "http.response.start", "status": 200, "headers": SSE_HEADERS})
        await _pump(session, stream, after, receive, send)


def _version_problem(headers: Mapping[str, str]) -> str | None:
    """A legacy request's ``MCP-Protocol-Version``, when sent, must be one we speak."""
    version = headers.get("mcp-protocol-version")
    if version is None or version.strip() in c.LEGACY_VERSIONS:
        return None
    return f"Unsupported MCP-Protocol-Version {version[:40]!r}"


def _cancel(session: HTTPSession, params: Any) -> None:
    request_id = params.get("requestId") if isinstance(params, dict) else None
    if is_valid_id(request_id):
        task = session.tasks.get(request_id)
        if task is not None:
            task.cancel()


async def _pump(
    session: HTTPSession,
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
