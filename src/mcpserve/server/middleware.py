"""Middleware: functions that wrap every request on its way to the method handler.

A middleware receives the request's :class:`Context` and a ``call_next`` coroutine
function, and returns the result dict (or raises an ``MCPError``)::

    @server.middleware
    async def timing(ctx: Context, call_next: CallNext) -> dict[str, Any]:
        started = time.perf_counter()
        try:
            return await call_next()
        finally:
            log.info("%s took %.1f ms", ctx.method, (time.perf_counter() - started) * 1e3)

The first registered middleware is the outermost. Chains are composed once per method
when the server starts, so a server without middleware pays nothing for the feature.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from .context import Context

Result = dict[str, Any]
CallNext = Callable[[], Awaitable[Result]]
Middleware = Callable[[Context, CallNext], Awaitable[Result]]
MethodHandler = Callable[[Context], Awaitable[Result]]


def compose(middlewares: Sequence[Middleware], handler: MethodHandler) -> MethodHandler:
    """``handler`` wrapped by ``middlewares``, the first one outermost."""
    wrapped = handler
    for middleware in reversed(middlewares):
        wrapped = _wrap(middleware, wrapped)
    return wrapped


def _wrap(middleware: Middleware, inner: MethodHandler) -> MethodHandler:
    async def layer(ctx: Context) -> Result:
        return await middleware(ctx, lambda: inner(ctx))

    return layer
