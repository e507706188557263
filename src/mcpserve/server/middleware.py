"""Middleware: functions that wrap every request on its way to the method handler.

A middleware receives the request's :class:`Context` and a ``call_next`` coroutine
function, and returns the result dict (or raises an ``MCPError``)::

    @server.middleware
    async def timing(ctx: Context, call_next: CallNext) -> JSONDict:
        started = time.perf_counter()
        try:
            return await call_next()
        finally:
            log.info("%s took %.1f ms", ctx.method, (time.perf_counter() - started) * 1e3)

The first registered middleware is the outermost. Chains are composed once per method
when the server starts, so a server without middleware pays nothing for the feature.

``@server.middleware(methods=["tools/call"])`` wraps only the methods named (requests
and notifications, by their JSON-RPC method): every other method runs as if there were no
middleware, answered inline where its handler allows (a :class:`Scoped` middleware).

A middleware object that needs its server (a store shared with the server's Redis, the
changes the server publishes, a part that starts and stops with it) has a method
``added_to(server)``: ``server.middleware(obj)`` calls it once, before the object joins the
chain, with the server as a :class:`MiddlewareHost` (``docs/decisions.md``, "How a
middleware learns its server"). Nothing else calls it, and a plain function has none.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from .._types import Result
from ..protocol.core import Answer, answered
from .context.context import Context

if TYPE_CHECKING:
    from .lifecycle import Lifecycle
    from .settings import Settings
    from .subscriptions import Subscriptions

CallNext = Callable[[], Awaitable[Result]]
Middleware = Callable[[Context, CallNext], Awaitable[Result]]
MethodHandler = Callable[[Context], Answer]


class MiddlewareHost(Protocol):
    """What ``added_to`` learns of the server a middleware object joins."""

    @property
    def name(self) -> str:
        """The server's name: the namespace of what it keeps in shared stores."""
        ...

    @property
    def redis_url(self) -> str | None:
        """The Redis every instance shares (``redis_url=``, ``MCPSERVE_REDIS_URL``), or None."""
        ...

    @property
    def settings(self) -> Settings:
        """Its answering options (``settings.cache``: the caching hints of its results)."""
        ...

    @property
    def subscriptions(self) -> Subscriptions:
        """Its events: ``subscriptions.on_publish`` hears each change this process makes."""
        ...

    @property
    def lifecycle(self) -> Lifecycle[Any]:
        """What runs while it serves: ``lifecycle.add(start)`` starts a part with it."""
        ...


class Scoped:
    """A middleware that wraps only some methods."""

    __slots__ = ("fn", "methods")

    def __init__(self, fn: Middleware, methods: Iterable[str]) -> None:
        if isinstance(methods, str):
            methods = (methods,)  # one name, not its letters
        self.fn = fn
        self.methods = frozenset(methods)
        if not self.methods or not all(isinstance(m, str) and m for m in self.methods):
            raise ValueError("methods must name at least one method, as strings")

    def __call__(self, ctx: Context, call_next: CallNext) -> Awaitable[Result]:
        return self.fn(ctx, call_next)


def for_method(middlewares: Sequence[Middleware], method: str) -> list[Middleware]:
    """Those of ``middlewares`` that wrap ``method``, in order."""
    return [m for m in middlewares if not isinstance(m, Scoped) or method in m.methods]


def compose(middlewares: Sequence[Middleware], handler: MethodHandler) -> MethodHandler:
    """``handler`` wrapped by ``middlewares``, the first one outermost."""
    wrapped = handler
    for middleware in reversed(middlewares):
        wrapped = _wrap(middleware, wrapped)
    return wrapped


def _wrap(middleware: Middleware, inner: MethodHandler) -> MethodHandler:
    async def layer(ctx: Context) -> Result:
        # What is inside may answer at once (a plain function, inline): call_next is
        # awaited by the middleware all the same.
        return await middleware(ctx, lambda: answered(inner(ctx)))

    return layer
