"""``RateLimit``: a token bucket per caller, shared by every instance on one store.

Each key (the caller's principal, its client address, or what a function of the context
says) has a bucket of ``burst`` tokens that refills at ``rate`` tokens a second. Each
request takes one; a request that finds none is refused with -32029 and
``data.retryAfterSeconds`` (when the next token comes), which HTTP answers with status 429
and ``Retry-After``. Notifications and a handshake-era ``initialize`` cost nothing: the
first has no answer to refuse with, and refusing the second would only stop the client
from reaching the requests that are counted.

Taking a token is one atomic step on the store (``take_token``: a Lua script on Redis, a
transaction on SQLite), so instances sharing the store share each caller's bucket. When
the store cannot be reached the request goes through (the store logs the outage once):
a rate limit protects the server, and refusing everyone would do the outage's work for it
(``docs/decisions.md``, "Rate limit refusals").
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Literal

from .._types import Result
from ..backends.keyvalue import KeyValueStore
from ..backends.keyvalue_rules import StoreUnavailable, check_bucket
from ..metrics.names import RATE_LIMITED
from ..protocol import constants as c
from ..protocol.errors import MCPError
from ..server.context.context import Context
from ..server.middleware import CallNext, MiddlewareHost
from . import facts
from .stores import MiddlewareStore, StoreOption

KeyOption = Literal["principal", "client"] | Callable[[Context], str]


class RateLimited(MCPError):
    """Too many requests: try again in ``retry_after`` seconds (-32029; HTTP 429)."""

    code = c.RATE_LIMITED

    def __init__(self, retry_after: float) -> None:
        seconds = math.ceil(retry_after * 1000) / 1000  # never earlier than the next token
        super().__init__(
            f"Rate limit exceeded: try again in {seconds:g} seconds",
            data={"retryAfterSeconds": seconds},
        )


class RateLimit:
    """At most ``burst`` requests at once per key, and ``rate`` a second after that.

    ``key``: ``"principal"`` (the default: the authenticated caller, else its client
    address), ``"client"`` (the client's network address; over stdio the one client the
    process serves), or a function of the :class:`Context` returning a string.
    """

    def __init__(
        self,
        rate: float,
        burst: int | None = None,
        *,
        key: KeyOption = "principal",
        store: StoreOption = None,
    ) -> None:
        burst = max(1, math.ceil(rate)) if burst is None else burst
        check_bucket(rate, burst)
        if key not in ("principal", "client") and not callable(key):
            raise ValueError('key must be "principal", "client" or a function of the context')
        self.rate = float(rate)
        self.burst = burst
        self._key: Callable[[Context], str] = (
            facts.caller if key == "principal" else facts.client_address if key == "client" else key
        )
        self._store = MiddlewareStore(store, "RateLimit")

    @property
    def store(self) -> KeyValueStore:
        """Where the buckets are kept."""
        return self._store.store

    def added_to(self, server: MiddlewareHost) -> None:
        self._store.added_to(server)

    async def __call__(self, ctx: Context, call_next: CallNext) -> Result:
        if facts.is_notification(ctx) or ctx.request.method == "initialize":
            return await call_next()
        key = self._key(ctx)
        if type(key) is not str:
            raise TypeError(f"RateLimit: key() must return a string, not {type(key).__name__}")
        try:
            wait = await self.store.take_token(f"rate:{key}", self.rate, self.burst)
        except StoreUnavailable:
            return await call_next()  # fail open: see the module's docstring
        if wait > 0:
            metrics = ctx.runtime.metrics
            if metrics is not None:
                metrics.record(RATE_LIMITED, 1, (ctx.request.method,))
            raise RateLimited(wait)
        return await call_next()
