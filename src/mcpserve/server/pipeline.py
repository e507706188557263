"""The one request pipeline of a server, and what is added to it beyond the registry.

A :class:`Pipeline` holds what a server adds around its handlers: middleware, custom
methods, handlers for client notifications, tracing, metrics. :meth:`Pipeline.dispatcher`
puts the method table together (the core methods, the extensions', the custom ones; each
era's from the one table, :mod:`.methods`), wraps each handler in the middleware chain that
covers its method (then it no longer runs inline: middleware may await), puts tracing
outside the middleware (its time belongs in the span), metrics outside both
(``metrics/operations.py``, when the server records any), and hands the lot to one
:class:`~mcpserve.protocol.core.Dispatcher`. The dispatcher is built on first use and again
after any change.

:meth:`Pipeline.handshake_initialize` is the one message that does not pass through the
dispatcher: a handshake-era ``initialize`` makes a session, which belongs to a transport.
It still passes through the middleware, like every other message, which may refuse it.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from .._types import JSONDict, Scope
from ..protocol import constants as c
from ..protocol.core import ANONYMOUS, Auth, Dispatcher, Handler, Request, answered
from ..protocol.errors import InvalidRequest, MCPError, error_from_exception
from ..protocol.handshake import Session
from ..protocol.jsonrpc import error_response
from ..protocol.meta import RequestMeta
from .context.context import Context
from .custom import RESERVED_METHODS, RESERVED_PREFIXES, CustomMethod
from .extension import Extensions
from .handshake import Handshake
from .methods import Method, MethodTable, split
from .middleware import Middleware, MiddlewareHost, Scoped, compose, for_method
from .runtime import Runtime

if TYPE_CHECKING:  # loads with the first notification handler
    from .notifications import NotificationHandler


class Pipeline:
    """Middleware, custom methods and notification handlers, and the dispatcher they make."""

    def __init__(
        self,
        core: Callable[[], dict[str, Method]],
        extensions: Extensions,
        runtime: Runtime,
        *,
        handshake: Handshake | None,
        tracing: object,
        server_info: JSONDict | None,
    ) -> None:
        self._core = core
        self._extensions = extensions
        self._runtime = runtime
        self._handshake = handshake
        self._tracing = tracing
        self._server_info = server_info
        self.middleware: list[Middleware] = []
        self.custom: dict[str, CustomMethod] = {}
        self.notifications: dict[str, NotificationHandler] = {}
        #: Called after middleware is added: a server this one is mounted in wraps its
        #: copies of this server's entries in the new chain.
        self.middleware_listeners: list[Callable[[], None]] = []
        self._dispatcher: Dispatcher[Context] | None = None

    def changed(self) -> None:
        """Something the table is made of changed: the next message builds it again."""
        self._dispatcher = None

    def add_middleware(
        self, fn: Middleware, methods: Iterable[str] | None, host: MiddlewareHost | None = None
    ) -> None:
        added_to = getattr(fn, "added_to", None)
        if host is not None and callable(added_to):
            added_to(host)  # a middleware object that needs the server (middleware.py)
        self.middleware.append(fn if methods is None else Scoped(fn, methods))
        self.changed()
        for listener in self.middleware_listeners:
            listener()

    def check_method_name(self, name: str) -> None:
        """Refuse a custom method's name that the protocol or this server uses."""
        if name in self.table() or name in RESERVED_METHODS or name.startswith(RESERVED_PREFIXES):
            raise ValueError(f"{name!r} is reserved by the protocol")

    def add_method(self, name: str, method: CustomMethod) -> None:
        self.check_method_name(name)
        self.custom[name] = method
        self.changed()

    def add_notification(self, name: str, handler: NotificationHandler) -> None:
        self.notifications[name] = handler
        self.changed()

    def table(self) -> dict[str, Method]:
        """Every method, and the eras that answer it: core, then extensions, then custom."""
        table = self._core()
        table.update(self._extensions.methods())
        table.update({name: Method(Handler(custom.answer)) for name, custom in self.custom.items()})
        return table

    def dispatcher(self) -> Dispatcher[Context]:
        """The pipeline, built on first use and again after a change."""
        if self._dispatcher is None:
            self._dispatcher = self._build()
        return self._dispatcher

    def _build(self) -> Dispatcher[Context]:
        modern, session = split(self.table())
        handshake = session if self._handshake is not None else None
        notifications = {name: Handler(h.receive) for name, h in self.notifications.items()}
        any_notification = None
        if self.middleware:
            modern = wrapped(self.middleware, modern)
            handshake = wrapped(self.middleware, handshake) if handshake is not None else None
            notifications = wrapped(self.middleware, notifications)
            any_notification = wrapped(self.middleware, {"": Handler(_nothing, inline=True)})[""]
        if self._tracing is not False:
            from .tracing import traced, tracer_for  # opentelemetry loads only if installed

            tracer = tracer_for(self._tracing)
            if tracer is not None:
                modern = traced(modern, tracer)
                handshake = traced(handshake, tracer) if handshake is not None else None
        metrics = self._runtime.resolve_metrics()
        if metrics is not None:  # outermost: the duration is all the handler's time
            from ..metrics.operations import metered

            modern = metered(modern, metrics)
            handshake = metered(handshake, metrics) if handshake is not None else None
        return Dispatcher(
            modern,
            context=functools.partial(Context, runtime=self._runtime),
            server_info=self._server_info,
            versions=c.MODERN_VERSIONS,
            handshake_handlers=handshake,
            handshake_versions=c.HANDSHAKE_VERSIONS if handshake is not None else (),
            notification_handlers=notifications,
            any_notification=any_notification,
        )

    async def handshake_initialize(
        self, message: JSONDict, auth: Auth = ANONYMOUS, http: Scope | None = None
    ) -> tuple[Session | None, JSONDict]:
        """A handshake-era ``initialize``: the new session (None when refused) and the
        response, through the middleware when there is any, as every other message."""
        assert self._handshake is not None
        era = self._handshake
        chain = for_method(self.middleware, "initialize")
        if not chain:
            return era.initialize(message)
        outcome: list[tuple[Session | None, JSONDict]] = []

        async def initialize(ctx: Context) -> JSONDict:
            outcome.append(era.initialize(message))
            response = outcome[-1][1]
            if "error" in response:
                error = response["error"]
                raise MCPError(error["message"], code=error["code"], data=error.get("data"))
            result: JSONDict = response["result"]
            return result

        params = message.get("params")
        params = params if isinstance(params, dict) else {}
        version = params.get("protocolVersion")
        capabilities = params.get("capabilities")
        meta = RequestMeta(
            version if isinstance(version, str) else "",
            capabilities if isinstance(capabilities, dict) else {},
        )
        request = Request(message["id"], "initialize", params, meta, auth=auth, http=http)
        try:
            result = await answered(compose(chain, initialize)(Context(request, self._runtime)))
        except Exception as exc:
            return None, error_response(message["id"], error_from_exception(exc))
        if not outcome or outcome[-1][0] is None:
            refusal = InvalidRequest("Invalid request: the middleware did not start the session")
            return None, error_response(message["id"], refusal)
        return outcome[-1][0], {"jsonrpc": "2.0", "id": message["id"], "result": result}


def wrapped(middleware: list[Middleware], table: MethodTable) -> MethodTable:
    """Each handler of ``table`` inside the middleware chain that wraps its method; a
    method no middleware wraps keeps its handler, inline path included."""
    result: MethodTable = {}
    for name, handler in table.items():
        chain = for_method(middleware, name)
        result[name] = (
            handler
            if not chain
            else Handler(
                compose(chain, handler.call), resolve=handler.resolve, scopes=handler.scopes
            )
        )
    return result


def _nothing(ctx: Context) -> JSONDict:
    return {}  # a notification nothing handles, after the middleware saw it
