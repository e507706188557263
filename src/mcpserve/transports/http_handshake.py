"""Streamable HTTP for handshake-era clients (2025-11-25 and earlier), beside the modern app.

``http.py`` hands over what the era's rules give to the handshake era
(:meth:`HTTPHandshake.route`, which feeds ``protocol/handshake_state.py`` what HTTP knows: a
session id, and the ``MCP-Protocol-Version``) and every GET or DELETE with a session id. This
module serves it: ``initialize`` (which mints an ``Mcp-Session-Id``), every later POST of the
session, the standalone ``GET`` stream, ``GET`` with ``Last-Event-ID`` to resume a stream,
and ``DELETE`` to end a session.

An :class:`~.sessions.store.HTTPSession` holds what the session needs over HTTP (the era's
facts, its resumable streams, its running requests and its questions to the client), kept
in a bounded :class:`~.sessions.store.SessionStore`. Each request runs in a task owned by
its session, writing to an
:class:`~mcpserve.transports.sse.EventStream`; the POST's connection only reads that stream.
If the client disconnects, the request goes on (in this era a disconnect is not a
cancellation, ``notifications/cancelled`` is) and the client can resume the stream. A request
whose handler sends nothing before its result is answered as ``application/json``.

With a shared Redis (``Server(redis_url=...)``) the session's facts live there
(:class:`~mcpserve.backends.redis.sessions.SharedSessions`), every process serves every
request of every session, and what must reach the process holding a request or stream travels
on the server's event stream (the subscription bus) as a session event: a client's answer to
the server's question, a cancellation, a changed log level or subscription, the session's
end, a new standalone stream. Without Redis, sessions live in this process, as in a
single-process deployment.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
from collections.abc import Mapping
from typing import Any

from .._types import JSONDict, Receive, Scope, Send
from ..backends.redis.sessions import SharedSessions
from ..protocol import constants as c
from ..protocol.core import Auth, Request, answered, refuse_duplicate_id, run_after_response
from ..protocol.errors import InternalError, InvalidRequest, MCPError
from ..protocol.handshake import Era, era_of
from ..protocol.handshake_state import Peer, Route, route
from ..protocol.jsonrpc import Kind, error_response, readable_id
from .endpoint import Endpoint
from .responses import Challenge, send_answer, send_json
from .sessions.directory import SessionDirectory, StoreUnavailable, TooManySessions
from .sessions.store import HTTPSession, SessionStore
from .sse import SSE_HEADERS, STOPPING_RETRY_MS, EventStream

logger = logging.getLogger("mcpserve.http")

SESSION_HEADER = "mcp-session-id"
_SESSION_BYTES = SESSION_HEADER.encode()
_VERSION_BYTES = b"mcp-protocol-version"
_HANDSHAKE_VERSIONS = frozenset(version.encode() for version in c.HANDSHAKE_VERSIONS)
#: The errors a handshake-era answer carries with their own HTTP status (the others: 200).
_STATUS_CODES = frozenset({c.INSUFFICIENT_SCOPE, c.RATE_LIMITED})
_UNAVAILABLE = "The shared session store is unavailable; try again shortly"


class StreamSink:
    """What a handshake-era handler's ``send`` is: pushes to its stream, and can detach it."""

    __slots__ = ("stream",)

    def __init__(self, stream: EventStream) -> None:
        self.stream = stream

    async def __call__(self, message: JSONDict) -> None:
        self.stream.push(message)

    def detach(self, retry_ms: int) -> None:
        self.stream.detach(retry_ms)


class HTTPHandshake:
    """Sessions and streams of the handshake-era clients of one HTTP app."""

    def __init__(
        self,
        endpoint: Endpoint,
        *,
        max_sessions: int,
        idle_seconds: float,
        max_requests_per_session: int = 64,
        keepalive_seconds: float | None = 15.0,
        challenge: Challenge | None = None,
    ) -> None:
        assert endpoint.handshake is not None
        self.keepalive_seconds = keepalive_seconds
        self._challenge = challenge
        self.endpoint = endpoint
        self._front = endpoint.handshake
        self.max_requests_per_session = max_requests_per_session
        shared = (
            SharedSessions(
                endpoint.redis_url,
                namespace=endpoint.name,
                max_sessions=max_sessions,
                idle_seconds=idle_seconds,
            )
            if endpoint.redis_url
            else None
        )
        local = SessionStore(
            max_sessions=max_sessions, idle_seconds=idle_seconds, metrics=endpoint.metrics
        )
        self.sessions = SessionDirectory(local, shared, endpoint.events)

    def route(self, message: JSONDict, kind: Kind, headers: Mapping[bytes, bytes]) -> Route:
        """Where a POSTed message goes (:data:`~mcpserve.protocol.handshake_state.ROUTES`):
        a session id places it in a session; outside one, a handshake-era (or no)
        ``MCP-Protocol-Version`` is the handshake era's."""
        if era_of(message) is Era.MODERN:  # the commonest answer, before any header is read
            return Route.MODERN
        version = headers.get(_VERSION_BYTES)
        peer = (
            Peer.HANDSHAKE_HEADERS
            if version is None or version.strip() in _HANDSHAKE_VERSIONS
            else Peer.MODERN_HEADERS
        )
        return route(message, kind, in_session=_SESSION_BYTES in headers, peer=peer)

    def close(self) -> None:
        self.sessions.close()

    async def aclose(self) -> None:
        await self.sessions.aclose()

    # -- POST -------------------------------------------------------------------------------

    async def post(
        self,
        route: Route,
        message: JSONDict,
        kind: Kind,
        headers: Mapping[str, str],
        auth: Auth,
        receive: Receive,
        send: Send,
        *,
        http: Scope | None = None,
    ) -> None:
        problem = _version_problem(headers)
        if problem is not None:
            error = InvalidRequest(problem)
            await send_json(send, 400, error_response(readable_id(message), error))
            return
        if route is Route.INITIALIZE:
            await self._initialize(message, auth, send, http)
            return
        session_id = headers.get(SESSION_HEADER)
        if route is Route.NEEDS_SESSION or session_id is None:
            error = InvalidRequest("Bad request: Mcp-Session-Id is required (send initialize)")
            await send_json(send, 400, error_response(readable_id(message), error))
            return
        try:
            session = await self.sessions.find(session_id.strip())
        except (StoreUnavailable, TooManySessions) as exc:
            unavailable = InternalError(_problem(exc))
            await send_json(send, 503, error_response(readable_id(message), unavailable))
            return
        if session is None or session.session.principal != auth.principal:
            # Another principal's session is as unknown as one that never existed.
            error = InvalidRequest("Session not found: send initialize to start a new one")
            await send_json(send, 404, error_response(readable_id(message), error))
            return
        if route is Route.CLIENT_ANSWER:
            await self.sessions.answer(session, message)
        elif kind is Kind.REQUEST:
            await self._request(message, session, auth, receive, send, http)
            return
        else:
            if message["method"] == "notifications/cancelled":
                params = message.get("params")
                await self.sessions.cancel(session, _request_id(params))
            dispatcher = self.endpoint.dispatcher
            if dispatcher.receives(message["method"]):
                await dispatcher.notify(message, auth=auth, session=session.session, http=http)
        await send(
            {"type": "http.response.start", "status": 202, "headers": [(b"content-length", b"0")]}
        )
        await send({"type": "http.response.body", "body": b""})

    async def _initialize(
        self, message: JSONDict, auth: Auth, send: Send, http: Scope | None
    ) -> None:
        started, response = await self._front.initialize(message, auth, http)
        if started is None:
            await send_json(send, 400, response)
            return
        started.principal = auth.principal
        session = HTTPSession(started)
        try:
            await self.sessions.start(session)
        except (StoreUnavailable, TooManySessions) as exc:
            error = InternalError(_problem(exc))
            await send_json(send, 503, error_response(message["id"], error))
            return
        await send_json(send, 200, response, [(b"mcp-session-id", session.id.encode())])

    async def _request(
        self,
        message: JSONDict,
        session: HTTPSession,
        auth: Auth,
        receive: Receive,
        send: Send,
        http: Scope | None = None,
    ) -> None:
        request_id = message["id"]
        if request_id in session.tasks:
            await send_json(send, 400, error_response(request_id, refuse_duplicate_id()))
            return
        if len(session.tasks) >= self.max_requests_per_session:  # "Requests in flight per session"
            error = InvalidRequest(
                f"Too many requests in flight in this session (at most "
                f"{self.max_requests_per_session}); wait for answers "
                "first"
            )
            await send_json(send, 429, error_response(request_id, error))
            return
        stream = session.new_stream()
        task = asyncio.create_task(self._run(message, session, stream, auth, http))
        session.tasks[request_id] = task

        def done(_: asyncio.Task[None]) -> None:
            session.tasks.pop(request_id, None)
            session.touch()  # idle time counts from the end of the last request

        task.add_done_callback(done)
        await stream.wait()
        first = stream.first
        if stream.finished and first is not None and "id" in first and "method" not in first:
            session.streams.pop(stream.id, None)  # never resumable: the client saw no event id
            failed = first.get("error")
            if failed is not None and failed.get("code") in _STATUS_CODES:
                # The error statuses of this era's answers: 403 with the step-up challenge,
                # 429 with Retry-After.
                await send_answer(send, first, self._challenge)
                return
            await send_json(send, 200, first)  # a plain answer: no stream needed
            return
        await send({"type": "http.response.start", "status": 200, "headers": SSE_HEADERS})
        await _pump(session, stream, None, self.keepalive_seconds, receive, send)

    async def _run(
        self,
        message: JSONDict,
        session: HTTPSession,
        stream: EventStream,
        auth: Auth,
        http: Scope | None,
    ) -> None:
        """One request, in its own task: the dispatcher's two steps, answered on ``stream``."""
        dispatcher = self.endpoint.dispatcher
        sink = StreamSink(stream)
        ask = functools.partial(session.outgoing.call, sink, owner=asyncio.current_task())
        before = session.session.state()
        request: Request | None = None
        try:
            try:
                request = dispatcher.prepare(
                    message, send=sink, auth=auth, session=session.session, ask=ask, http=http
                )
                request.after_response = []  # run once the response is on its stream (below)
                response = await answered(dispatcher.execute(request))
            except MCPError as exc:
                response = error_response(message["id"], exc)
            except Exception:  # the dispatcher answers every handler error: this is a bug
                logger.exception("Handshake-era request failed")
                response = error_response(message["id"], InternalError("Internal error"))
            if session.session.state() != before and not await self.sessions.share(session, before):
                response = error_response(message["id"], InternalError(_UNAVAILABLE))
            if not session.closed:  # a session that ended has no one to answer
                stream.push(response)
        finally:
            stream.finish()
            if request is not None and request.after_response:
                await run_after_response(request)

    # -- GET and DELETE ---------------------------------------------------------------------

    async def stream(
        self,
        method: str,
        headers: Mapping[str, str],
        auth: Auth,
        receive: Receive,
        send: Send,
    ) -> None:
        """A GET (the standalone stream, or a resumed one) or a DELETE of a session."""
        problem = _version_problem(headers)
        if problem is not None:
            await send_json(send, 400, error_response(None, InvalidRequest(problem)))
            return
        try:
            session = await self.sessions.find(headers.get(SESSION_HEADER, "").strip())
            if session is not None and session.session.principal != auth.principal:
                session = None
            if session is not None and method == "DELETE":
                await self.sessions.end(session)
        except (StoreUnavailable, TooManySessions) as exc:
            await send_json(send, 503, error_response(None, InternalError(_problem(exc))))
            return
        if session is None:
            error = InvalidRequest("Session not found: send initialize to start a new one")
            await send_json(send, 404, error_response(None, error))
        elif method == "GET":
            await self._get(session, headers, auth, receive, send)
        else:
            await send(
                {
                    "type": "http.response.start",
                    "status": 200,
                    "headers": [(b"content-length", b"0")],
                }
            )
            await send({"type": "http.response.body", "body": b""})

    async def _get(
        self,
        session: HTTPSession,
        headers: Mapping[str, str],
        auth: Auth,
        receive: Receive,
        send: Send,
    ) -> None:
        """The standalone stream, or a stream resumed after ``Last-Event-ID``.

        An event id this process does not know (its stream was delivered, is held by
        another process, or died with one) opens a fresh standalone stream for the session:
        the client's session exists, so it never hears 404 (``docs/decisions.md``,
        "Resuming an unknown stream").
        """
        last_event_id = headers.get("last-event-id")
        after: int | None = None
        resumed: EventStream | None = None
        if last_event_id is not None:
            stream_id, dash, number = last_event_id.strip().rpartition("-")
            if not (dash and stream_id and number.isdigit()):
                error = InvalidRequest("Malformed Last-Event-ID: expected <stream>-<number>")
                await send_json(send, 400, error_response(None, error))
                return
            resumed = session.streams.get(stream_id)
            after = int(number)
        if resumed is None:
            resumed, after = session.open_standalone(), None
            client_info = session.session.client_info
            session.gate = self.endpoint.events.update_gate(auth, headers, client_info)
            await self.sessions.standalone(session)
        await send({"type": "http.response.start", "status": 200, "headers": SSE_HEADERS})
        await _pump(session, resumed, after, self.keepalive_seconds, receive, send)


def _problem(exc: Exception) -> str:
    """Why a session cannot be served now (HTTP 503)."""
    if isinstance(exc, TooManySessions):
        return "Too many sessions; try again later"
    return _UNAVAILABLE


def _version_problem(headers: Mapping[str, str]) -> str | None:
    """A handshake-era request's ``MCP-Protocol-Version``, when sent, must be one we speak."""
    version = headers.get("mcp-protocol-version")
    if version is None or version.strip() in c.HANDSHAKE_VERSIONS:
        return None
    return f"Unsupported MCP-Protocol-Version {version[:40]!r}"


def _request_id(params: Any) -> Any:
    return params.get("requestId") if isinstance(params, dict) else None


async def _pump(
    session: HTTPSession,
    stream: EventStream,
    after: int | None,
    keepalive: float | None,
    receive: Receive,
    send: Send,
) -> None:
    """Stream events until the stream ends, is detached, or the client goes away.

    A stream delivered to its end is forgotten: nothing is left to resume.
    """
    pump = asyncio.create_task(stream.pump(send, after, keepalive))

    async def disconnected() -> None:
        while (await receive())["type"] != "http.disconnect":
            pass

    watch = asyncio.create_task(disconnected())
    try:
        await asyncio.wait({pump, watch}, return_when=asyncio.FIRST_COMPLETED)
    except asyncio.CancelledError:
        # The server stops (its shutdown grace is over): end the connection with a retry
        # hint, at once (uvicorn does not wait for what it cancelled), and the client resumes
        # with Last-Event-ID, elsewhere where sessions are shared. The pump, cancelled
        # first, writes nothing more.
        if not pump.done():  # (a pump that ended has ended the response already)
            pump.cancel()
            with contextlib.suppress(Exception):
                retry = b"retry: %d\n\n" % STOPPING_RETRY_MS
                await send({"type": "http.response.body", "body": retry})
        raise
    finally:
        for task in (pump, watch):
            task.cancel()
        outcome = await asyncio.gather(pump, watch, return_exceptions=True)
        if outcome[0] is True:
            session.streams.pop(stream.id, None)
        session.touch()
