"""Streamable HTTP (2026-07-28) as a plain ASGI application.

One endpoint, POST only. Each POST carries one JSON-RPC message; a request is answered
with ``application/json``, or with ``text/event-stream`` once its handler sends a
notification (progress, log) and the client accepts SSE. Nothing is kept between
requests: any worker, any instance can answer any request.

Checks run in this order before the handler (CHECKLIST §19-Q3); the first failure answers:

====  =========================================================  ===================
 #    check                                                      failure
====  =========================================================  ===================
 1    path is the endpoint (``/mcp`` or ``/mcp/``)               404
 2    ``Host`` is allowed (DNS-rebinding protection)             421
 3    ``Origin``, when sent, is allowed                          403, -32600
 3b   the ``authenticate`` hook accepts the caller               401 (``WWW-Authenticate``)
 4    method is POST                                             405, ``Allow: POST``
 5    ``Content-Type`` is ``application/json``                   415
 6    body within ``max_body_bytes``                             413
 7    body parses as JSON                                        400, -32700
 8    one request or notification (no batch, no response)        400, -32600
 9    ``MCP-Protocol-Version`` and ``Mcp-Method`` present        400, -32020
 10   ``_meta`` has protocol version and client capabilities     400, -32602
 11   headers equal the body (version, method)                   400, -32020
 12   protocol version supported                                 400, -32022
 13   method exists                                              404, -32601
 14   ``Mcp-Name`` and ``Mcp-Param-*`` equal the body            400, -32020
 15   client capabilities a tool requires                        400, -32021
====  =========================================================  ===================

Handshake-era clients (2025-11-25 and earlier) share the endpoint: a POST without
per-request ``_meta`` that is an ``initialize``, carries an ``Mcp-Session-Id``, or names a
legacy ``MCP-Protocol-Version`` (or none) goes to ``http_legacy.py``, and so do GET and
DELETE with a session id (CHECKLIST Y01-Y02). Everything with ``_meta`` is modern.

Errors from the handler itself (an unknown tool, a resource that does not exist, -32603)
are ordinary JSON-RPC answers with status 200 (§19-Q4). A notification is answered 202
with no body and not acted upon (§19-Q6). When the client closes the connection while a
request runs, the handler's task is cancelled and nothing more is sent for it (X01); a
handler that cannot wait (a plain function run inline, a built-in list) simply finishes.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Awaitable, Callable, Mapping, MutableMapping
from typing import TYPE_CHECKING, Any

from ..protocol import constants as c
from ..protocol import http_headers as hh
from ..protocol.core import ANONYMOUS, Auth, Request, has_modern_meta
from ..protocol.errors import InvalidRequest, MCPError, ParseError
from ..protocol.jsonrpc import JSONDict, Kind, classify, error_response, loads, readable_id
from .http_legacy import SESSION_HEADER, LegacyHTTP
from .origin import OriginPolicy
from .responses import (
    ResponseStream,
    accepts_sse,
    cancel_on_disconnect,
    decode_headers,
    header_bytes,
    is_modern,
    read_body,
    send_json,
    send_plain,
    status_for,
)

if TYPE_CHECKING:
    from ..server.server import Server

logger = logging.getLogger("mcpserve.http")

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
ASGISend = Callable[[Message], Awaitable[None]]
#: Decides who is calling from the request headers (lower-cased names); ``None`` -> 401.
Authenticate = Callable[[Mapping[str, str]], "Auth | Awaitable[Auth | None] | None"]

DEFAULT_MAX_BODY_BYTES = 4 * 1024 * 1024
_CHALLENGE = [(b"www-authenticate", b"Bearer")]
#: Built-in methods whose handlers never wait on anything.
_SYNCHRONOUS_METHODS = frozenset(
    {"server/discover", "tools/list", "resources/list", "resources/templates/list",
     "prompts/list"}
)  # fmt: skip


RawHeaders = list[tuple[bytes, bytes]]
_VERSION_HEADER = hh.PROTOCOL_VERSION_HEADER.encode()
_METHOD_HEADER = hh.METHOD_HEADER.encode()
_NAME_HEADER = hh.NAME_HEADER.encode()
_SESSION_HEADER = SESSION_HEADER.encode()


def _text(value: bytes | None) -> str | None:
    return None if value is None else value.decode("latin-1")


class HTTPApp:
    """The ASGI callable returned by :meth:`Server.http_app`."""

    def __init__(
        self,
        server: Server,
        *,
        path: str = "/mcp",
        max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
        origin_policy: OriginPolicy | None = None,
        keepalive_seconds: float = 15.0,
        authenticate: Authenticate | None = None,
    ) -> None:
        self.server = server
        self.authenticate = authenticate
        self.path = "/" + path.strip("/")
        self.max_body_bytes = max_body_bytes
        self.origin_policy = origin_policy or OriginPolicy.build()
        self.keepalive_seconds = keepalive_seconds
        self._lifespan_context: Any = None
        self._accepted_hosts: set[bytes | None] = set()
        self.legacy = LegacyHTTP(server, send_json) if server.legacy is not None else None

    async def _other(self, scope: Scope, receive: Receive, send: ASGISend) -> None:
        kind = scope["type"]
        if kind == "lifespan":
            await self._lifespan(receive, send)
        elif kind == "websocket":
            await send({"type": "websocket.close", "code": 1003})

    # -- ASGI lifespan: runs the server's lifespan once per worker --------------------------------

    async def _lifespan(self, receive: Receive, send: ASGISend) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                try:
                    self._lifespan_context = self.server.running()
                    await self._lifespan_context.__aenter__()
                except Exception as exc:
                    logger.exception("Lifespan startup failed")
                    await send({"type": "lifespan.startup.failed", "message": str(exc)})
                    return
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                if self.legacy is not None:
                    self.legacy.close()
                if self._lifespan_context is not None:
                    await self._lifespan_context.__aexit__(None, None, None)
                await send({"type": "lifespan.shutdown.complete"})
                return

    # -- the ASGI entry point: one HTTP request -----------------------------------------------

    async def __call__(self, scope: Scope, receive: Receive, send: ASGISend) -> None:
        if scope["type"] != "http":
            await self._other(scope, receive, send)
            return
        # One HTTP request. (Written out here rather than in a helper: one coroutine less.)
        path = scope["path"]
        root = scope.get("root_path", "")
        if root and path.startswith(root):
            path = path[len(root) :]  # mounted under a prefix (Starlette's Mount, FastAPI)
        if path != self.path and path.rstrip("/") != self.path:
            await send_plain(send, 404, b"Not Found")
            return
        raw = scope["headers"]
        headers = header_bytes(raw)  # the hot path compares bytes; str only when needed
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
        if self.authenticate is not None:
            outcome = self.authenticate(decode_headers(raw))
            if inspect.isawaitable(outcome):
                outcome = await outcome
            if outcome is None:
                error = InvalidRequest("Unauthorized: missing or invalid credentials")
                await send_json(send, 401, error_response(None, error), _CHALLENGE)
                return
            auth = outcome
        method = scope["method"]
        if method != "POST":
            session_id = headers.get(_SESSION_HEADER)
            if method in ("GET", "DELETE") and self.legacy is not None and session_id is not None:
                session = session_id.decode("latin-1")
                await self._legacy_get_or_delete(method, session, decode_headers(raw), receive,
                                                 send)  # fmt: skip
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
        try:
            message = loads(body)
            kind = classify(message)
        except ParseError as exc:
            await send_json(send, 400, error_response(None, exc))
            return
        except InvalidRequest as exc:
            await send_json(send, 400, error_response(readable_id(message), exc))
            return
        if (
            self.legacy is not None
            and not is_modern(message)
            and await self._legacy_post(message, kind, decode_headers(raw), auth, receive, send)
        ):
            return
        if kind is Kind.NOTIFICATION:
            try:
                hh.check_notification_headers(decode_headers(raw), message)
            except MCPError as exc:
                await send_json(send, 400, error_response(None, exc))
                return
            await send_plain(send, 202, b"")
            return
        if kind is Kind.RESPONSE:
            error = InvalidRequest("Invalid request: this endpoint accepts no JSON-RPC responses")
            await send_json(send, 400, error_response(readable_id(message), error))
            return
        await self._request(message, headers, raw, auth, receive, send)

    # -- the handshake era (CHECKLIST Y01-Y04) -----------------------------------------------

    async def _legacy_post(
        self,
        message: JSONDict,
        kind: Kind,
        headers: dict[str, str],
        auth: Auth,
        receive: Receive,
        send: ASGISend,
    ) -> bool:
        """Serve a POST that belongs to the handshake era; False if it is a modern one."""
        assert self.legacy is not None
        params = message.get("params")
        if isinstance(params, dict) and has_modern_meta(params):
            return False  # per-request _meta: modern, even inside a session (Y01)
        is_initialize = kind is Kind.REQUEST and message["method"] == "initialize"
        session_id = headers.get(SESSION_HEADER)
        version = headers.get(hh.PROTOCOL_VERSION_HEADER)
        legacy_header = version is None or version.strip() in c.LEGACY_VERSIONS
        if (
            not is_initialize
            and session_id is None
            and not (legacy_header and kind is Kind.REQUEST)
        ):
            return False
        problem = self.legacy.version_problem(headers)
        if problem is not None:
            await send_json(
                send, 400, error_response(readable_id(message), InvalidRequest(problem))
            )
            return True
        if is_initialize:
            await self.legacy.initialize(message, send)
            return True
        if session_id is None:
            error = InvalidRequest("Bad request: Mcp-Session-Id is required (send initialize)")
            await send_json(send, 400, error_response(readable_id(message), error))
            return True
        session = self.legacy.sessions.get(session_id.strip())
        if session is None:
            error = InvalidRequest("Session not found: send initialize to start a new one")
            await send_json(send, 404, error_response(readable_id(message), error))
            return True
        await self.legacy.post(message, kind, session, auth, receive, send)
        return True

    async def _legacy_get_or_delete(
        self,
        method: str,
        session_id: str,
        headers: dict[str, str],
        receive: Receive,
        send: ASGISend,
    ) -> None:
        assert self.legacy is not None
        problem = self.legacy.version_problem(headers)
        if problem is not None:
            await send_json(send, 400, error_response(None, InvalidRequest(problem)))
            return
        session = self.legacy.sessions.get(session_id.strip())
        if session is None:
            error = InvalidRequest("Session not found: send initialize to start a new one")
            await send_json(send, 404, error_response(None, error))
        elif method == "GET":
            await self.legacy.get(session, headers, receive, send)
        else:
            await self.legacy.delete(session, send)

    async def _request(
        self,
        message: JSONDict,
        headers: dict[bytes, bytes],
        raw: RawHeaders,
        auth: Auth,
        receive: Receive,
        send: ASGISend,
    ) -> None:
        """A request, after the checks every POST gets. ``headers`` are the raw bytes, looked
        up on the fast path; the checks that need them all as text decode ``raw``."""
        dispatcher = self.server.dispatcher
        request_id = message["id"]
        method: str = message["method"]
        params = message.get("params") or {}
        try:
            if method == "initialize" and not has_modern_meta(params):
                raise dispatcher.handshake_refusal(params)
            version_header = _text(headers.get(_VERSION_HEADER))
            method_header = _text(headers.get(_METHOD_HEADER))
            if version_header is None or method_header is None:
                hh.check_required_headers(decode_headers(raw), message)
            meta = dispatcher.read_meta(params)
            # Fast path: headers that equal the body exactly need no trimming or decoding.
            if (
                method_header != method
                or version_header != meta.protocol_version
                or version_header != version_header.strip()
                or method_header != method_header.strip()
            ):
                hh.check_header_values(decode_headers(raw), message, include_name=False)
            dispatcher.check_version(meta)
            handler = dispatcher.lookup(method)
            name_header = _text(headers.get(_NAME_HEADER))
            if (
                name_header is None
                or name_header != hh.name_for(method, params)
                or name_header.startswith("=?")
                or not name_header.isascii()
            ):
                hh.check_name_header(decode_headers(raw), message)
            synchronous = method in _SYNCHRONOUS_METHODS
            tool = None
            if method == "tools/call":
                name = params.get("name")
                tool = self.server.registry.tool(name) if isinstance(name, str) else None
                synchronous = tool is not None and tool.synchronous
                if tool is not None and tool.header_params:
                    arguments = params.get("arguments")
                    hh.check_param_headers(
                        decode_headers(raw),
                        arguments if isinstance(arguments, dict) else None,
                        tool.header_params,
                        tool.header_types,
                    )
        except MCPError as exc:
            status = 404 if exc.code == c.METHOD_NOT_FOUND else 400
            await send_json(send, status, error_response(request_id, exc))
            return
        if synchronous and not self.server.has_middleware:
            # Nothing in it can wait, so it sends no notifications and nothing could cancel
            # it: answer with JSON directly, without a stream or a disconnect watcher.
            request = Request(request_id, method, params, meta, None, auth)
            if tool is not None:
                answer = self.server.call_tool_inline(tool, request)
                response = answer if isinstance(answer, dict) else await answer
            else:
                response = await dispatcher.execute(handler, request)
            error = response.get("error")
            await send_json(send, status_for(error["code"]) if error else 200, response)
            return
        accept = _text(headers.get(b"accept"))
        stream = ResponseStream(send, accepts_sse(accept), self.keepalive_seconds)
        request = Request(request_id, method, params, meta, stream.notify, auth)
        if not stream.sse_allowed:
            request.send = None
        try:
            outcome = await cancel_on_disconnect(
                dispatcher.execute(handler, request), receive, request_id
            )
            if outcome is not None:
                await stream.finish(outcome)
        finally:
            stream.close()
