"""Calling user functions in the three shapes mcpserve accepts.

* ``async def`` is awaited on the event loop.
* Plain ``def`` runs inline: right for quick, CPU-light work, and the cheapest path.
* ``def`` marked blocking (``blocking=True`` or :func:`blocking`) runs in a bounded thread
  pool, so a slow call to a database driver or a file system does not stall every other
  request. The caller's context variables travel with it.

The shape is decided once, when the function is handed over (a server's registration, a
client's handler); calling is then one branch-free coroutine. The server's tools,
resources and prompts and the client's input and notification handlers follow the same
rules, so this module belongs to neither side: both import it from here.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import inspect
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from ._types import UserFunction, UserFunctionT

if TYPE_CHECKING:  # the thread pool's module loads with the first blocking handler
    from concurrent.futures import ThreadPoolExecutor

#: Calls the user's function with its validated arguments; what it returned.
Invoker = Callable[[dict[str, object]], Awaitable[object]]

_BLOCKING_MARK = "__mcpserve_blocking__"


def blocking(fn: UserFunctionT) -> UserFunctionT:
    """Mark a plain function to run in the thread pool instead of on the event loop.

    >>> @server.tool
    ... @blocking
    ... def checksum(path: str) -> str: ...
    """
    if is_async(fn):
        raise TypeError(f"{_name(fn)} is async; @blocking is only for plain functions")
    setattr(fn, _BLOCKING_MARK, True)
    return fn


def is_marked_blocking(fn: UserFunction) -> bool:
    """Whether ``fn`` was marked with :func:`blocking`."""
    return bool(getattr(fn, _BLOCKING_MARK, False))


def is_synchronous(invoke: Invoker) -> bool:
    """True for an invoker of a plain function run inline: it never waits on anything."""
    return getattr(invoke, "synchronous", False)


def is_async(fn: UserFunction) -> bool:
    if inspect.iscoroutinefunction(fn):
        return True
    call = getattr(fn, "__call__", None)  # noqa: B004 - objects with an async __call__
    return call is not None and inspect.iscoroutinefunction(call)


def make_invoker(
    fn: UserFunction,
    *,
    blocking: bool | None,
    pool: Callable[[], ThreadPoolExecutor],
) -> Invoker:
    """A coroutine function that calls ``fn(**kwargs)`` in the right place."""
    if is_async(fn):
        if blocking:
            raise TypeError(f"{_name(fn)} is async; blocking=True is only for plain functions")

        async def call_async(kwargs: dict[str, object]) -> object:
            return await fn(**kwargs)

        return call_async

    if blocking or (blocking is None and is_marked_blocking(fn)):

        async def call_in_thread(kwargs: dict[str, object]) -> object:
            context = contextvars.copy_context()
            job = functools.partial(context.run, fn, **kwargs)
            return await asyncio.get_running_loop().run_in_executor(pool(), job)

        return call_in_thread

    async def call_inline(kwargs: dict[str, object]) -> object:
        value = fn(**kwargs)
        # A plain function may still hand back an awaitable (a partial of a coroutine).
        # Checking the type's __await__ is the cheap test; inspect.isawaitable is not.
        if hasattr(type(value), "__await__"):
            return await value
        return value

    call_inline.synchronous = True  # type: ignore[attr-defined]
    return call_inline


def _name(fn: UserFunction) -> str:
    return getattr(fn, "__qualname__", None) or repr(fn)
