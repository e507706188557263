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
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Sequence

from .._types import Result
from ..protocol.core import Answer, answered
from .context.context import Context

CallNext = Callable[[], Awaitable[Result]]
Middleware = Callable[[Context, CallNext], Awaitable[Result]]
MethodHandler = Callable[[Context], Answer]


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
