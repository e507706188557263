"""What a server adds to its pipeline beyond the registry: custom methods, handlers for
client notifications, and middleware.

:class:`~mcpserve.Server` inherits these. Each change drops the dispatcher the server
built, so the next message builds it again with the change in it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, TypeVar, overload

from .custom import RESERVED_METHODS, RESERVED_PREFIXES, CustomMethod
from .middleware import Middleware, Scoped

if TYPE_CHECKING:
    from concurrent.futures import ThreadPoolExecutor

    from ..compose.mount.mount import Mount
    from ..protocol.core import Dispatcher
    from .context.context import Context
    from .notifications import NotificationHandler

F = TypeVar("F", bound=Callable[..., Any])


class Extending:
    """Custom methods, notification handlers and middleware."""

    _custom: dict[str, CustomMethod]
    _notifications: dict[str, NotificationHandler]
    _middleware: list[Middleware]
    _dispatcher: Dispatcher[Context] | None
    _mounted_in: list[Mount]

    if TYPE_CHECKING:  # the server's own

        @property
        def dispatcher(self) -> Dispatcher[Context]: ...

        def thread_pool(self) -> ThreadPoolExecutor: ...

    def method(self, name: str, *, blocking: bool | None = None) -> Callable[[F], F]:
        """Register a handler for a custom JSON-RPC method (use a namespaced name).

        See :mod:`mcpserve.server.custom` for how params and results are handled.
        """
        if (
            name in self.dispatcher.handlers
            or name in RESERVED_METHODS
            or name.startswith(RESERVED_PREFIXES)
        ):
            raise ValueError(f"{name!r} is reserved by the protocol")

        def register(fn: F) -> F:
            self._custom[name] = CustomMethod(name, fn, pool=self.thread_pool, blocking=blocking)
            self._dispatcher = None
            return fn

        return register

    def notification(self, name: str, *, blocking: bool | None = None) -> Callable[[F], F]:
        """Run a function for each client notification ``name`` (both eras; see
        :mod:`mcpserve.server.notifications`)."""
        if not isinstance(name, str) or not name:
            raise ValueError("a notification handler needs the notification's method name")

        def register(fn: F) -> F:
            from .notifications import NotificationHandler

            self._notifications[name] = NotificationHandler(
                name, fn, pool=self.thread_pool, blocking=blocking
            )
            self._dispatcher = None
            return fn

        return register

    @overload
    def middleware(self, fn: Middleware, *, methods: Iterable[str] | None = None) -> Middleware: ...
    @overload
    def middleware(self, *, methods: Iterable[str]) -> Callable[[Middleware], Middleware]: ...

    def middleware(
        self, fn: Middleware | None = None, *, methods: Iterable[str] | None = None
    ) -> Any:
        """Wrap every request and client notification, of both eras, or only ``methods``;
        see :mod:`mcpserve.server.middleware`."""
        if fn is None:
            if methods is None:
                raise TypeError("middleware() needs a function, or methods=")
            chosen = methods
            return lambda fn: self.middleware(fn, methods=chosen)
        self._middleware.append(fn if methods is None else Scoped(fn, methods))
        self._dispatcher = None
        for mount in self._mounted_in:  # its entries there now run inside it too
            mount.middleware_changed()
        return fn
