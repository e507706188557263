"""The path every request takes, from a transport to a handler and back.

Whatever the transport and the era, a request goes through the two steps of
:class:`Dispatcher`.

``prepare(message)``, synchronous and without I/O, turns one decoded request into a
:class:`Request` ready to run, or raises the :class:`MCPError` to answer instead:

1. the era. A request inside a handshake-era :class:`~.handshake.Session` (the transport
   says so, by passing it; :func:`.handshake.era_of` is the rule) takes its protocol facts
   from the session and its handler from the handshake era's table. Every other request
   is on the 2026-07-28 wire, and a handshake-era ``initialize`` reaching this far is
   refused;
2. ``checks.envelope``: the transport's own rules on the message (HTTP: the headers are
   present and equal the body; -32020);
3. ``params._meta`` is read (-32602 when the version or client capabilities are missing);
4. the protocol version is one we speak (-32022 naming the supported ones);
5. the method is found (-32601), and its handler looks up the target the request names
   (a tool, by name): once, for the checks and the handler alike. A caller that
   authenticated must hold the scopes the target requires (-32010, HTTP 403);
6. ``checks.target``: the transport's rules on that target (HTTP: ``Mcp-Name`` and
   ``Mcp-Param-*``; -32020);
7. whether the handler may run inline: one that can never wait (a list, a plain function
   run on the loop) needs no task, no stream and no disconnect watcher.

``execute(request)`` calls the handler, in the context the server makes for the request, and
returns the response: the result, or the error any exception becomes
(:func:`~.errors.error_from_exception`). A handler answers with a dict when it could answer
at once, or with an awaitable when it has to wait; ``execute`` hands back the response, or an
awaitable of it, likewise, and a transport writes the one or awaits the other in a task of
its own (the task that cancelling the request cancels; the context learns which when the
awaiting starts). There is one path through the code for both. A transport that writes
the response itself may give the request an ``after_response`` list first; what a handler
leaves there (a dependency's teardown) it runs once the response is written
(:func:`run_after_response`).

Results are stamped on the way out: ``resultType`` and the reserved ``serverInfo`` ``_meta``
key on the 2026-07-28 wire, the handshake era's conversion (:mod:`.handshake`) for a
session. Nothing here does I/O: notifications leave through the ``send`` callable a
transport puts on the request, and the response is the transport's to write.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, Generic, Protocol, TypeVar

from .._types import JSONDict, Scope
from . import constants as c
from .errors import (
    InsufficientScope,
    InvalidRequest,
    MCPError,
    MethodNotFound,
    UnsupportedProtocolVersion,
    error_from_exception,
)
from .handshake import Session, handshake_error, handshake_result
from .jsonrpc import Kind, RequestId, classify, error_response, readable_id
from .meta import InvalidMeta, RequestMeta, has_modern_meta, read_meta
from .records import Record

#: Sends one JSON-RPC message (a notification, a request) to the client on the request's
#: own channel; not the ASGI ``Send`` of :mod:`mcpserve._types`.
SendMessage = Callable[[JSONDict], Awaitable[None]]
#: What a handler (and :meth:`Dispatcher.execute`) returns: the answer, when it is ready at
#: once, or an awaitable of it.
Answer = JSONDict | Awaitable[JSONDict]
#: Sends one request to the client (``{"method", "params"}``) and returns its result: how a
#: handshake-era transport asks the client mid-request. ``None`` on the 2026-07-28 wire,
#: where a question ends the attempt with ``input_required`` instead.
AskClient = Callable[[JSONDict], Awaitable[JSONDict]]
_SERVER_INFO = c.META_SERVER_INFO
logger = logging.getLogger("mcpserve")


class Auth(Record):
    """Who is calling, as established by the transport's authentication.

    ``checked`` says whether anything vouched for the caller: a token verifier or an
    ``authenticate`` hook (every ``Auth`` they build is checked). Scopes restrict only a
    checked caller; :data:`ANONYMOUS`, the caller of a server with no authentication
    (stdio, open HTTP), may use everything (``docs/decisions.md``, "Scopes without
    authentication"). ``claims`` are the verified token's claims, when there is a token.
    """

    __slots__ = ("checked", "claims", "principal", "scopes")  # a Record: protocol/records.py

    def __init__(
        self,
        principal: str | None = None,
        scopes: frozenset[str] = frozenset(),
        claims: Mapping[str, Any] | None = None,
        *,
        checked: bool = True,
    ) -> None:
        self.principal = principal
        self.scopes = scopes
        self.claims: Mapping[str, Any] = claims if claims is not None else {}
        self.checked = checked

    def __hash__(self) -> int:  # claims is a mapping; the rest identifies the caller
        return hash((self.principal, self.scopes, self.checked))

    def missing(self, needed: frozenset[str]) -> frozenset[str]:
        """The scopes of ``needed`` this caller lacks (none when nothing checked it)."""
        if not self.checked:
            return frozenset()
        return needed - self.scopes


ANONYMOUS = Auth(checked=False)


class Request:
    """One prepared request: what it asks, what it found, and how to talk back."""

    # A plain class, not a dataclass: generating dataclass methods at import costs a
    # noticeable share of a stdio server's cold start (~0.3 ms per class on Python 3.11).
    __slots__ = (
        "after_response",
        "ask",
        "auth",
        "handler",
        "http",
        "http_status",
        "id",
        "inline",
        "meta",
        "method",
        "params",
        "send",
        "session",
        "target",
    )

    def __init__(
        self,
        id: RequestId,
        method: str,
        params: JSONDict,
        meta: RequestMeta,
        send: SendMessage | None = None,
        auth: Auth = ANONYMOUS,
        handler: Handler[Any] | None = None,
        target: Any = None,
        session: Session | None = None,
        ask: AskClient | None = None,
        http: Scope | None = None,
    ) -> None:
        self.id = id
        self.method = method
        self.params = params
        self.meta = meta
        #: Where notifications related to this request go; None when nothing can carry them.
        self.send = send
        self.auth = auth
        self.handler = handler
        #: What the request names, looked up once by its handler (a tool for ``tools/call``).
        self.target = target
        #: The handshake-era session the request belongs to; None on the 2026-07-28 wire.
        self.session = session
        self.ask = ask
        #: The ASGI scope of the HTTP request that carried it; None on other transports.
        self.http = http
        #: Set by ``prepare``: the handler never waits, so it may run without a task.
        self.inline = False
        #: The HTTP status an error the handler raised asked for (``MCPError.http_status``).
        self.http_status: int | None = None
        #: Set to a list by a transport that runs, once it has written the response, what
        #: the handler leaves there (a dependency's teardown; :func:`run_after_response`).
        self.after_response: list[Callable[[], Awaitable[None]]] | None = None

    def __repr__(self) -> str:
        return f"Request(id={self.id!r}, method={self.method!r})"


class HandlerContext(Protocol):
    """What the dispatcher needs of the context a server makes for each request."""

    def mark_cancelled(self) -> None: ...

    def attach(self, task: asyncio.Task[Any] | None) -> None:
        """The task that awaits the request's answer: cancelling it cancels the request."""


C = TypeVar("C", bound=HandlerContext)


class Handler(Generic[C]):
    """One entry of a method table.

    ``call(ctx)`` answers: a dict when it can at once, else an awaitable of one. ``inline``
    says whether a request may be answered where it stands, without a task of its own:
    ``True`` for a handler that never waits (a list), ``False`` (the default) for one that
    may, or a test of the target the request found (a tool whose function is plain).
    ``resolve(params)`` looks up what the request names, or returns None: errors about it
    are the handler's to raise, after the transport's checks have run. ``scopes(target)``
    names the scopes a found target requires of a checked caller.
    """

    __slots__ = ("call", "inline", "resolve", "scopes")

    def __init__(
        self,
        call: Callable[[C], Answer],
        *,
        inline: bool | Callable[[Any], bool] = False,
        resolve: Callable[[JSONDict], Any] | None = None,
        scopes: Callable[[Any], frozenset[str]] | None = None,
    ) -> None:
        self.call = call
        self.inline = inline
        self.resolve = resolve
        self.scopes = scopes


class Checks(Protocol):
    """A transport's own rules for a 2026-07-28 request, run at two points of ``prepare``."""

    def envelope(self, message: JSONDict) -> None:
        """Before ``_meta`` is read: rules on the message as received."""

    def target(self, request: Request) -> None:
        """After the method and its target are known."""


class Dispatcher(Generic[C]):
    """Prepares and executes requests through one method table per era."""

    def __init__(
        self,
        handlers: Mapping[str, Handler[C]],
        *,
        context: Callable[[Request], C],
        server_info: JSONDict | None,
        versions: Sequence[str] = c.MODERN_VERSIONS,
        handshake_handlers: Mapping[str, Handler[C]] | None = None,
        handshake_versions: Sequence[str] = (),
        notification_handlers: Mapping[str, Handler[C]] | None = None,
        any_notification: Handler[C] | None = None,
    ) -> None:
        self.handlers = handlers
        #: Client notifications by method; ``any_notification`` for the others (middleware).
        self.notification_handlers = notification_handlers or {}
        self.any_notification = any_notification
        self.handshake_handlers = handshake_handlers or {}
        self.versions = frozenset(versions)
        self.handshake_versions = frozenset(handshake_versions)
        self.supported_versions = [*versions, *handshake_versions]
        self._context = context
        self._server_info = dict(server_info) if server_info else None

    # -- step 1: prepare -----------------------------------------------------------------

    def prepare(
        self,
        message: JSONDict,
        *,
        send: SendMessage | None = None,
        auth: Auth = ANONYMOUS,
        checks: Checks | None = None,
        session: Session | None = None,
        ask: AskClient | None = None,
        http: Scope | None = None,
    ) -> Request:
        """A classified request, ready to execute; raises the :class:`MCPError` to answer."""
        method: str = message["method"]
        params = message.get("params")
        if params is None:
            params = {}
        if session is not None:
            meta = session.meta(params)
            handler = self.handshake_handlers.get(method)
        else:
            if method == "initialize" and not has_modern_meta(params):
                raise self.handshake_refusal(params)
            if checks is not None:
                checks.envelope(message)
            try:
                meta = read_meta(params)
            except InvalidMeta as exc:
                raise self.naming_versions(exc) from None
            self.check_version(meta)
            handler = self.handlers.get(method)
        if handler is None:
            raise MethodNotFound(f"Method not found: {method[:100]}")
        target = None if handler.resolve is None else handler.resolve(params)
        if auth.checked and target is not None and handler.scopes is not None:
            needed = handler.scopes(target)
            if needed and not needed <= auth.scopes:
                raise InsufficientScope(needed, needed - auth.scopes)
        # Positional: this runs once per request, and keyword arguments cost more.
        request = Request(
            message["id"], method, params, meta, send, auth, handler, target, session, ask, http
        )
        if checks is not None:
            checks.target(request)
        inline = handler.inline
        request.inline = inline is True or (
            inline is not False and target is not None and inline(target)
        )
        return request

    def naming_versions(self, exc: InvalidMeta) -> InvalidMeta:
        """A missing-``_meta`` error that names the supported versions, so the client learns
        what to send."""
        data = exc.data if isinstance(exc.data, dict) else {}
        exc.data = {**data, "supported": self.supported_versions}
        return exc

    def check_version(self, meta: RequestMeta) -> None:
        version = meta.protocol_version
        if version in self.versions:
            return
        message = None
        if version in self.handshake_versions:
            message = (
                f"Protocol version {version} requires the initialize handshake; "
                "per-request _meta needs one of " + ", ".join(sorted(self.versions))
            )
        raise UnsupportedProtocolVersion(version[:64], self.supported_versions, message)

    def handshake_refusal(self, params: JSONDict) -> UnsupportedProtocolVersion:
        """What a handshake-era ``initialize`` gets here: this server (or this wire) has no session
        for it. Its message names the versions to use instead."""
        requested = params.get("protocolVersion")
        requested = requested[:64] if isinstance(requested, str) else ""
        versions = ", ".join(self.supported_versions)
        return UnsupportedProtocolVersion(
            requested,
            self.supported_versions,
            f"This server does not support the initialize handshake; supported versions: "
            f"{versions}",
        )

    # -- step 2: execute -----------------------------------------------------------------

    def execute(self, request: Request) -> Answer:
        """Run a prepared request's handler: its response (result or error), or, when the
        handler has to wait, an awaitable of it, to be awaited by the task that serves the
        request."""
        ctx = self._context(request)
        assert request.handler is not None
        try:
            answer = request.handler.call(ctx)
        except Exception as exc:
            return self.failure(request, exc)
        if isinstance(answer, dict):
            return self.success(request, answer)
        return self._awaited(request, ctx, answer)

    async def _awaited(self, request: Request, ctx: C, pending: Awaitable[JSONDict]) -> JSONDict:
        ctx.attach(asyncio.current_task())
        try:
            result = await pending
        except asyncio.CancelledError:
            ctx.mark_cancelled()  # wakes worker threads polling ctx.cancelled
            raise
        except Exception as exc:
            return self.failure(request, exc)
        return self.success(request, result)

    def success(self, request: Request, result: JSONDict) -> JSONDict:
        """The response carrying a handler's (fresh, owned) result dict."""
        if request.session is not None:
            result = handshake_result(request.method, result)
        else:
            if "resultType" not in result:
                result["resultType"] = "complete"
            if self._server_info is not None:
                # Fresh dicts each time: a caller may edit a response without touching the next.
                meta = {_SERVER_INFO: self._server_info.copy()}
                own = result.get("_meta")
                result["_meta"] = meta if own is None else {**meta, **own}
        return {"jsonrpc": "2.0", "id": request.id, "result": result}

    def failure(self, request: Request, exc: Exception) -> JSONDict:
        """The error response ``exc`` becomes (masked unless it is an :class:`MCPError`)."""
        failure = error_from_exception(exc)
        request.http_status = failure.http_status
        error = failure.to_wire()
        if request.session is not None:
            error = handshake_error(request.method, error)
        return {"jsonrpc": "2.0", "id": request.id, "error": error}

    # -- a notification from the client ---------------------------------------------------

    def receives(self, method: str) -> bool:
        """Whether a client notification of ``method`` runs anything here."""
        return self.any_notification is not None or method in self.notification_handlers

    async def notify(
        self,
        message: JSONDict,
        *,
        auth: Auth = ANONYMOUS,
        session: Session | None = None,
        http: Scope | None = None,
    ) -> None:
        """Run what handles one client notification. Nothing is answered, so a failure is
        logged here (with a reference), never raised."""
        method: str = message["method"]
        handler = self.notification_handlers.get(method) or self.any_notification
        if handler is None:
            return
        params = message.get("params")
        if not isinstance(params, dict):
            params = {}
        if session is not None:
            meta = session.meta(params)
        else:
            try:
                meta = read_meta(params)
            except InvalidMeta:  # notifications need not carry the full _meta
                meta = RequestMeta(c.LATEST_VERSION, {})
        # A notification has no id: None stands in for one, read by nothing.
        no_id: RequestId = None  # type: ignore[assignment]
        request = Request(
            no_id, method, params, meta, None, auth, handler, None, session, None, http
        )
        try:
            await answered(handler.call(self._context(request)))
        except MCPError as exc:  # e.g. a middleware refusing it: there is no one to tell
            logger.warning("Notification %s refused: %s", method[:100], exc.message)
        except Exception as exc:
            error_from_exception(exc)  # logs it with a reference

    # -- both steps, for callers with no rules of their own ------------------------------

    async def handle(
        self, message: Any, *, send: SendMessage | None = None, auth: Auth = ANONYMOUS
    ) -> JSONDict | None:
        """Answer one decoded 2026-07-28 message; ``None`` for notifications and responses."""
        try:
            kind = classify(message)
            if kind is Kind.NOTIFICATION:
                await self.notify(message, auth=auth)
                return None
            if kind is not Kind.REQUEST:
                return None
            request = self.prepare(message, send=send, auth=auth)
        except MCPError as exc:
            return error_response(readable_id(message), exc)
        answer = self.execute(request)
        return answer if isinstance(answer, dict) else await answer


async def answered(answer: Answer) -> JSONDict:
    """The response an :data:`Answer` stands for, awaited if it has to be."""
    return answer if isinstance(answer, dict) else await answer


async def run_after_response(request: Request) -> None:
    """Run what the request's handler left for after its response (each callback logs its
    own failures; one that raises anyway is logged here and the rest still run)."""
    pending, request.after_response = request.after_response, None
    for callback in pending or ():
        try:
            await callback()
        except Exception:
            logger.exception("Work after the response to %r failed", request)


def refuse_duplicate_id() -> InvalidRequest:
    """The error for a request reusing the id of one still running on the same connection."""
    return InvalidRequest("Invalid request: this id is already in flight")
