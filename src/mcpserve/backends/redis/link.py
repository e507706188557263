"""What every Redis-backed part of mcpserve does the same way: how it connects, and how an
outage is told.

The shared handshake-era sessions (``backends/redis/sessions.py``), the Redis task store
(``tasks.py``) and the key-value store (``keyvalue.py``) each hold a :class:`RedisLink`. It
connects on first use (redis-py loads only then) with short timeouts and one quick retry, so
a pooled connection that died with a restarted server is replaced and no request waits long.
:meth:`run` awaits one Redis operation: a failure raises the caller's own exception, and the
log says once per outage which Redis failed and why, and again when it answers.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable
from typing import Any

from ..._extras import require
from ...metrics.names import REDIS_ERRORS
from ...metrics.recorder import record_everywhere
from .bus import redact


class RedisLink:
    """One Redis URL, connected on first use, whose outages are logged once each."""

    def __init__(
        self,
        url: str,
        *,
        logger: logging.Logger,
        name: str,
        consequence: str,
        error: type[Exception],
    ) -> None:
        require("redis", f"{name} on Redis")
        self.url = url
        self.available = True
        self._logger = logger
        self._name = name
        self._consequence = consequence
        self._error = error
        self._redis: Any = None

    @property
    def connected(self) -> bool:
        return self._redis is not None

    def client(self) -> Any:
        """The ``redis.asyncio.Redis`` client (made on first use)."""
        if self._redis is None:
            import redis.asyncio as redis
            from redis.asyncio.retry import Retry
            from redis.backoff import ExponentialBackoff

            self._redis = redis.Redis.from_url(
                self.url,
                socket_connect_timeout=1.0,
                socket_timeout=2.0,
                retry=Retry(ExponentialBackoff(cap=0.1, base=0.02), 1),
            )
        return self._redis

    async def run(self, doing: str, operation: Awaitable[Any]) -> Any:
        """Await ``operation``; a Redis failure raises ``error`` saying what was being done."""
        try:
            outcome = await operation
        except Exception as exc:  # redis-py raises its own ConnectionError, TimeoutError, ...
            record_everywhere(REDIS_ERRORS, 1, (self._name,))
            if self.available:
                self._logger.warning(
                    "%s: Redis at %s is unavailable (%s: %s) while trying to %s; %s",
                    self._name,
                    redact(self.url),
                    type(exc).__name__,
                    exc,
                    doing,
                    self._consequence,
                )
                self.available = False
            raise self._error(f"The {self._name.lower()} could not {doing}") from exc
        if not self.available:
            self._logger.warning("%s: Redis at %s is reachable again", self._name, redact(self.url))
            self.available = True
        return outcome

    async def close(self) -> None:
        if self._redis is not None:
            redis, self._redis = self._redis, None
            await redis.aclose()
