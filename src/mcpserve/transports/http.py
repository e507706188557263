"""Streamable HTTP (2026-07-28) as a plain ASGI application.

One endpoint, POST only. Each POST carries one JSON-RPC message; a request is answered
with ``application/json``, or with ``text/event-stream`` once its handler sends a
notification (progress, log) and the client accepts SSE. Nothing is kept between
requests: any worker, any instance can answer any request.

Checks run in this order before the handler (``docs/decisions.md``, "Check order on
HTTP"); the first failure answers. Rows 9-14 are the dispatcher's ``prepare``
(``protocol/core.py``), with the header rules plugged in as its checks
(:class:`~mcpserve.protocol.http_headers.HeaderChecks`):

====  =========================================================  ===================
 #    check                                                      failure
====  =========================================================  ===================
 1    path is the endpoint (``/mcp`` or ``/mcp/``)               404
 2    ``Host`` is allowed (DNS-rebinding protection)             421
 3    ``Origin``, when sent, is allowed                          403, -32600
 3b   the bearer token is valid (``auth=``), or the              401/400/403/503,
      ``authenticate`` hook accepts the caller                   ``WWW-Authenticate``
 4    method is POST                                             405, ``Allow: POST``
 5    ``Content-Type`` is ``application/json``                   415
 6    body within ``max_body_bytes``                             413
 7    body parses as JSON                                        400, -32700
 8    one request or notification (no batch, no response)        400, -32600
 9    ``MCP-Protocol-Version`` and ``Mcp-Method`` present and    400, -32020
      equal to the body
 10   ``_meta`` has protocol version and client capabilities     400, -32602
 11   protocol version supported                                 400, -32022
 12   method exists                                              404, -32601
 12b  the caller holds the scopes its target needs               403, -32010, challenge
 13   ``Mcp-Name`` and ``Mcp-Param-*`` equal the body            400, -32020
 14   client capabilities a tool requires                        400, -32021
====  =========================================================  ===================

With ``auth=`` (a :class:`~mcpserve.auth.ResourceServer`) the protected resource metadata
is answered, without a token and to any origin (CORS), at its well-known paths; a request
whose token lacks a scope that a tool, resource or prompt needs is answered 403 with the
step-up challenge (``auth/resource.py``).

Handshake-era clients (2025-11-25 and earlier) share the endpoint, with one hand-off: a
message the era's rules give to the handshake era (``protocol/handshake_state.py``: no
per-request ``_meta``, and an ``initialize``, an ``Mcp-Session-Id`` or a handshake-era
``MCP-Protocol-Version``), and a GET or DELETE with a session id, go to
``http_handshake.py``. Everything with ``_meta`` is modern.

The app reads the server only through its :class:`~.endpoint.Endpoint`.

Errors from the handler itself (an unknown tool, a resource that does not exist, -32603)
are ordinary JSON-RPC answers with status 200 (``docs/decisions.md``, "HTTP status of
errors"). A notification is answered 202 with no body and not acted upon. When the client
closes the connection while a request runs, the handler's task is cancelled and nothing
more is sent for it; a handler that cannot wait (a plain function run inline, a list)
simply finishes.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any

from .. import _request_context as request_context
from .._serving import Authenticate
from .._types import JSONDict, Receive, Scope, Send
from ..protocol import constants as c
from ..protocol import http_headers as hh
from ..protocol.core import ANONYMOUS, Auth, run_after_response
from ..protocol.errors import InternalError, InvalidRequest, MCPError, new_ref
from ..protocol.handshake_state import Route
from ..protocol.jsonrpc import Kind, classify, error_response, loads, readable_id
from .disconnects import DisconnectWatch
from .endpoint import Endpoint, Servable, endpoint_of
from .health import HealthRoutes, ServingState
from .http_handshake import SESSION_HEADER, HTTPHandshake
from .origin import OriginPolicy
from .responses import (
    ResponseStream,
    accepts_sse,
    read_body,
    send_answer,
    send_json,
    send_json_bytes,
    send_plain,
)
from .sse import STOPPING_RETRY_MS

if TYPE_CHECKING:  # auth/ loads only for a server with auth=
    from ..auth.resource import ResourceServer

logger = logging.getLogger("mcpserve.http")


DEFAULT_MAX_BODY_BYTES = 4 * 1024 * 1024
_CHALLENGE = [(b"www-authenticate", b"Bearer")]
_SESSION_HEADER = SESSION_HEADER.encode()
#: Logged at start-up by a process that may have siblings and made its own key up (the
#: dev server, alone by design, filters it out by this text).
PER_PROCESS_KEY_WARNING = (
    "requestState is sealed with a key this process made up: a multi round-trip retry that "
    "reaches another process or machine will be refused. One process is fine; to serve "
    "from several, give them one key: MCPSERVE_STATE_KEYS=$(mcpserve keygen)"
)


def _text(value: bytes | None) -> str | None:
    return None if value is None else value.decode("latin-1")


class HTTPApp:
    """The ASGI callable returned by :meth:`Server.http_app`."""

    def __init__(
        self,
        server: Endpoint | Servable,
        *,
        path: str = "/mcp",
        max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
        origin_policy: OriginPolicy | None = None,
        keepalive_seconds: float = 15.0,
        authenticate: Authenticate | None = None,
        resource_server: ResourceServer | None = None,
        routes: Mapping[str, Callable[..., Awaitable[None]]] | None = None,
        max_sessions: int = 1000,
        session_idle_seconds: float = 1800.0,
        max_requests_per_session: int = 64,
        health_path: str | None = "/healthz",
        ready_path: str | None = "/readyz",
    ) -> None:
        if authenticate is not None and resource_server is not None:
            raise TypeError("Give auth= (OAuth bearer tokens) or authenticate=, not both")
        self.endpoint = endpoint = endpoint_of(server)
        self.authenticate = authenticate
        self.resource_server = resource_server
        self._metadata_paths = resource_server.metadata_paths if resource_server else frozenset()
        #: Paths of your own (a health check, a page), each an ASGI app, answered before any
        #: of the endpoint's checks.
        self.routes = dict(routes or {})
        self.path = "/" + path.strip("/")
        self.max_body_bytes = max_body_bytes
        self.origin_policy = origin_policy or OriginPolicy.build()
        self.keepalive_seconds = keepalive_seconds
        self._disconnects = DisconnectWatch()
        self._lifespan_context: Any = None
        #: This process is known to be the server's only one (``server.run("http")``,
        #: ``mcpserve run``): its own ``requestState`` key is then fine, and not warned of.
        self.sole_process = False
        #: The server has a lifespan no one has run yet (docs/decisions.md, "A lifespan
        #: the host never ran"); checked on each request until it has run.
        self._lifespan_pending = endpoint.has_lifespan
        self._late_start: asyncio.Future[None] | None = None
        self._accepted_hosts: set[bytes | None] = set()
        #: Started, draining, stopping: what /readyz reports and a SIGTERM changes (drain.py).
        self.state = ServingState(started=not endpoint.has_lifespan)
        # A route of your own at a probe's path replaces the probe (it was there first).
        self.health = HealthRoutes(
            self.state,
            self.origin_policy,
            health_path=None if health_path in self.routes else health_path,
            ready_path=None if ready_path in self.routes else ready_path,
            redis_url=endpoint.redis_url,
            running=lambda: endpoint.is_running,
        )
        #: The handshake era's side of this app (None when the server has none).
        self.handshake = (
            HTTPHandshake(
                endpoint,
                max_sessions=max_sessions,
                idle_seconds=session_idle_seconds,
                max_requests_per_session=max_requests_per_session,
                keepalive_seconds=keepalive_seconds,
                challenge=self.challenge,
            )
            if endpoint.handshake is not None
            else None
        )

    async def _other(self, scope: Scope, receive: Receive, send: Send) -> None:
        kind = scope["type"]
        if kind == "lifespan":
            await self._lifespan(receive, send)
        elif kind == "websocket":
            await send({"type": "websocket.close", "code": 1003})

    # -- ASGI lifespan: runs the server's lifespan once per worker --------------------------------

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                if not self.sole_process and not self.endpoint.state_keys_shared:
                    logger.warning(PER_PROCESS_KEY_WARNING)
                try:
                    self._lifespan_pending = False
                    self._lifespan_context = self.endpoint.running()
                    await self._lifespan_context.__aenter__()
                except Exception as exc:
                    logger.exception("Lifespan startup failed")
                    await send({"type": "lifespan.startup.failed", "message": str(exc)})
                    return
                self.state.started = True
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                if self.handshake is not None:
                    await self.handshake.aclose()
                if self.resource_server is not None:
                    await self.resource_server.aclose()
                await self.health.aclose()
                if self._lifespan_context is not None:
                    await self._lifespan_context.__aexit__(None, None, None)
                await send({"type": "lifespan.shutdown.complete"})
                return

    # -- the ASGI entry point: one HTTP request -----------------------------------------------

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self._other(scope, receive, send)
            return
        # One HTTP request. (Written out here rather than in a helper: one coroutine less.)
        if self._lifespan_pending:
            await self._late_lifespan()
        path = scope["path"]
        root = scope.get("root_path", "")
        if root and path.startswith(root):
            path = path[len(root) :]  # mounted under a prefix (Starlette's Mount, FastAPI)
        if path != self.path and path.rstrip("/") != self.path:
            if scope["path"] in self._metadata_paths:
                await self._metadata(scope["method"], send)
                return
            if path in self.health.paths:  # after the Host check, before any auth
                named = _text(hh.header_bytes(scope["headers"]).get(b"host"))
                await self.health.answer(path, scope["method"], named, send)
                return
            route = self.routes.get(path)
            if route is not None:
                await route(scope, receive, send)
                return
            await send_plain(send, 404, b"Not Found")
            return
        raw = scope["headers"]
        headers = hh.header_bytes(raw)  # the hot path compares bytes; str only when needed
        host = headers.get(b"host")
        if host not in self._accepted_hosts:
            problem = self.origin_policy.check_host(_text(host))
            if problem is not None:
                error = InvalidRequest(f"Misdirected: {problem}")
                await send_json(send, 421, error_response(None, error))
                return
            if host is not None and len(self._accepted_hosts) < 64:
                self._accepted_hosts.add(host)  # the same few Host values arrive every time
        origin = headers.get(b"origin")
        if origin is not None:
            problem = self.origin_policy.check_origin(_text(origin))
            if problem is not None:
                error = InvalidRequest(f"Forbidden: {problem}")
                await send_json(send, 403, error_response(None, error))
                return
        auth = ANONYMOUS
        if self.resource_server is not None:
            verdict = await self.resource_server.authenticate(_text(headers.get(b"authorization")))
            if not isinstance(verdict, Auth):
                refused = error_response(None, verdict.error)
                await send_json(send, verdict.status, refused, verdict.headers)
                return
            auth = verdict
        elif self.authenticate is not None:
            outcome = self.authenticate(hh.decode_headers(raw))
            if inspect.isawaitable(outcome):
                outcome = await outcome
            if outcome is None:
                error = InvalidRequest("Unauthorized: missing or invalid credentials")
                await send_json(send, 401, error_response(None, error), _CHALLENGE)
                return
            auth = outcome
        method = scope["method"]
        if method != "POST":
            handshake = self.handshake
            if method in ("GET", "DELETE") and handshake is not None and _SESSION_HEADER in headers:
                await handshake.stream(method, hh.decode_headers(raw), auth, receive, send)
            else:
                await send_plain(send, 405, b"Method Not Allowed", [(b"allow", b"POST")])
            return
        content_type = headers.get(b"content-type", b"")
        if (
            content_type != b"application/json"
            and content_type.split(b";", 1)[0].strip().lower() != b"application/json"
        ):
            error = InvalidRequest("Content-Type must be application/json")
            await send_json(send, 415, error_response(None, error))
            return
        declared = headers.get(b"content-length", b"")
        too_big = declared.isdigit() and int(declared) > self.max_body_bytes
        body = None if too_big else await read_body(receive, self.max_body_bytes)
        if body is None:
            error = InvalidRequest(f"Request body exceeds {self.max_body_bytes} bytes")
            await send_json(send, 413, error_response(None, error))
            return
        message: Any = None
        try:
            message = loads(body)
            kind = classify(message)
        except MCPError as exc:
            await send_json(send, 400, error_response(readable_id(message), exc))
            return
        if request_context.recording and kind is Kind.REQUEST:
            # For the JSON log format: this request's own task, so nothing to undo.
            request_context.bind(message["id"], auth.principal)
        if self.handshake is not None:
            era_route = self.handshake.route(message, kind, headers)
            if era_route is not Route.MODERN:
                await self.handshake.post(
                    era_route,
                    message,
                    kind,
                    hh.decode_headers(raw),
                    auth,
                    receive,
                    send,
                    http=scope,
                )
                return
        if kind is Kind.NOTIFICATION:
            try:
                hh.check_notification_headers(hh.decode_headers(raw), message)
            except MCPError as exc:
                await send_json(send, 400, error_response(None, exc))
                return
            dispatcher = self.endpoint.dispatcher
            if dispatcher.receives(message["method"]):
                await dispatcher.notify(message, auth=auth, http=scope)
            await send_plain(send, 202, b"")
            return
        if kind is Kind.RESPONSE:
            error = InvalidRequest("Invalid request: this endpoint accepts no JSON-RPC responses")
            await send_json(send, 400, error_response(readable_id(message), error))
            return
        await self._request(message, scope, headers, auth, receive, send)

    async def _late_lifespan(self) -> None:
        """Run the server's lifespan at the first request when the host never sent the ASGI
        lifespan events (Starlette's and FastAPI's ``Mount`` do not forward them), so that
        ``ctx.lifespan_state`` is what the lifespan yields rather than a silent ``None``.
        Requests arriving while it starts wait for it."""
        if self._late_start is None:
            self._late_start = asyncio.ensure_future(self._start_late())
        await asyncio.shield(self._late_start)
        self._lifespan_pending = False

    async def _start_late(self) -> None:
        if self.endpoint.is_running:  # the host entered server.running() itself
            return
        logger.warning(
            "Server %r: the ASGI host did not run this app's lifespan (a Starlette or FastAPI "
            "Mount does not forward it), so it starts now, at the first request, and will not "
            "be shut down cleanly. Enter it in the host's lifespan: async with server.running()",
            self.endpoint.name,
        )
        self._lifespan_context = self.endpoint.running()
        await self._lifespan_context.__aenter__()
        self.state.started = True

    def challenge(self, error: JSONDict) -> list[tuple[bytes, bytes]]:
        """The ``WWW-Authenticate`` step-up challenge of a 403 for missing scopes."""
        data = error.get("data")
        needed = data.get("requiredScopes", ()) if isinstance(data, dict) else ()
        if self.resource_server is not None:
            return [self.resource_server.insufficient_scope(needed)]
        from ..auth.resource import insufficient_scope_challenge

        return [insufficient_scope_challenge(needed)]

    async def _metadata(self, method: str, send: Send) -> None:
        """The protected resource metadata: public, and readable from any web page."""
        assert self.resource_server is not None
        cors = [(b"access-control-allow-origin", b"*")]
        if method == "OPTIONS":  # a CORS preflight
            preflight = [
                *cors,
                (b"access-control-allow-methods", b"GET, OPTIONS"),
                (b"access-control-allow-headers", b"*"),
                (b"access-control-max-age", b"86400"),
            ]
            await send_plain(send, 204, b"", preflight)
        elif method in ("GET", "HEAD"):
            headers = [*cors, (b"cache-control", b"public, max-age=3600")]
            await send_json_bytes(send, self.resource_server.metadata_body, headers)
        else:
            await send_plain(send, 405, b"Method Not Allowed", [(b"allow", b"GET, OPTIONS")])

    async def _request(
        self,
        message: JSONDict,
        scope: Scope,
        headers: dict[bytes, bytes],
        auth: Auth,
        receive: Receive,
        send: Send,
    ) -> None:
        """A request, after the checks every POST gets: the dispatcher's two steps."""
        dispatcher = self.endpoint.dispatcher
        checks = hh.HeaderChecks(headers, scope["headers"])
        try:
            request = dispatcher.prepare(message, auth=auth, checks=checks, http=scope)
        except MCPError as exc:
            if exc.code == c.INSUFFICIENT_SCOPE:
                await send_answer(send, error_response(message["id"], exc), self.challenge)
                return
            status = 404 if exc.code == c.METHOD_NOT_FOUND else 400
            await send_json(send, status, error_response(message["id"], exc))
            return
        except Exception:  # a bug of ours: logged with a reference, never shown to the client
            ref = new_ref()
            logger.exception("Failed to prepare a request (ref %s)", ref)
            failure = InternalError(f"Internal error (ref {ref})")
            await send_json(send, 500, error_response(message["id"], failure))
            return
        if request.inline:
            # Nothing in it can wait, so it sends no notifications and nothing could cancel
            # it: answer with JSON directly, without a stream or a disconnect watcher.
            answer = dispatcher.execute(request)
            response = answer if isinstance(answer, dict) else await answer
            await send_answer(send, response, self.challenge, request.http_status)
            return
        stream = ResponseStream(
            send, accepts_sse(_text(headers.get(b"accept"))), self.keepalive_seconds, self.challenge
        )
        if stream.sse_allowed:
            request.send = stream.notify
        request.after_response = []  # run once the response is written (below)
        try:
            answer = dispatcher.execute(request)
            if isinstance(answer, dict):
                finished: JSONDict | None = answer
            else:  # None: the client went away, and the handler was cancelled
                finished = await self._disconnects.run(answer, receive, request.id)
            if finished is not None:
                retry = STOPPING_RETRY_MS if self.state.stopping else None
                await stream.finish(finished, request.http_status, retry)
        except asyncio.CancelledError:
            if self.state.stopping:  # its shutdown_grace is over (drain.py): say so, then go
                unfinished = InternalError("The server stopped before the request finished")
                with contextlib.suppress(Exception):
                    await stream.cut(STOPPING_RETRY_MS, error_response(message["id"], unfinished))
            raise
        finally:
            stream.close()
            if request.after_response:
                await run_after_response(request)
