"""A server's life: its lifespan and everything that runs while it serves.

``server.running()`` starts, in order, the user's lifespan, the mounted servers, the
subscription bus and the extensions, and stops them in reverse (then closes the store behind
``ctx.store``) when the last of however many nested transports leaves. Serving several
transports from one process (stdio and HTTP, or two HTTP apps) runs the lifespan once.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import AbstractAsyncContextManager, AsyncExitStack, asynccontextmanager
from typing import Generic, TypeVar

from .runtime import Runtime

S = TypeVar("S")


class Lifecycle(Generic[S]):
    """Counts the ``running()`` blocks of one server and runs its parts around the first."""

    def __init__(
        self, runtime: Runtime, parts: Sequence[Callable[[AsyncExitStack], Awaitable[None]]]
    ) -> None:
        self._runtime = runtime
        #: What starts with the server, in order: each gets the exit stack.
        self.parts = list(parts)
        self._stack: AsyncExitStack | None = None
        self.depth = 0

    def add(self, start: Callable[[AsyncExitStack], Awaitable[None]]) -> None:
        """Start ``start`` with the server, after the parts it already has."""
        self.parts.append(start)

    @asynccontextmanager
    async def running(
        self, owner: S, lifespan: Callable[[S], AbstractAsyncContextManager[object]] | None
    ) -> AsyncIterator[S]:
        if self.depth == 0:
            stack = AsyncExitStack()
            stack.push_async_callback(self._runtime.aclose)  # last out: ctx.store's records
            try:
                if lifespan is not None:
                    state = await stack.enter_async_context(lifespan(owner))
                    self._runtime.lifespan_state = state
                for start in self.parts:
                    await start(stack)
            except BaseException:
                try:
                    await stack.aclose()
                finally:
                    self._runtime.lifespan_state = None
                raise
            self._stack = stack
        self.depth += 1
        try:
            yield owner
        finally:
            self.depth -= 1
            if self.depth == 0 and self._stack is not None:
                stack, self._stack = self._stack, None
                try:
                    await stack.aclose()
                finally:
                    self._runtime.lifespan_state = None
