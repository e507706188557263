"""A subscription bus on Redis pub/sub, for servers that run as several processes.

Every process publishes its events to one Redis channel and listens to it. A process
delivers its own events to its listeners directly, so they arrive even while Redis is
down, and skips its own messages when they come back from Redis.

When the connection drops, the reader logs the outage and reconnects with a growing
pause (0.1 s up to 5 s); listeners stay open throughout. Events published anywhere during
the outage are lost for the processes that missed them. That is the protocol's own
contract: a notification is a hint, and clients re-list after reconnecting.

With metrics on, the outage counts once in ``mcpserve.redis.errors``
(``mcpserve.component="Subscription bus"``), and so does each publish that failed; the
reader's retries do not, so the count does not follow the backoff.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
from typing import Any

import orjson

from ..._extras import require
from ..._types import Event, EventListener, JSONDict
from ...metrics.names import REDIS_ERRORS
from ...metrics.recorder import record_everywhere

logger = logging.getLogger("mcpserve.bus")

DEFAULT_CHANNEL = "mcpserve:events"
#: The bus's ``mcpserve.component`` in ``mcpserve.redis.errors``.
COMPONENT = "Subscription bus"


class RedisBus:
    """Redis pub/sub bus. ``url`` is a redis-py URL such as ``redis://127.0.0.1:6379/0``."""

    def __init__(
        self,
        url: str,
        *,
        channel: str = DEFAULT_CHANNEL,
        max_backoff_seconds: float = 5.0,
    ) -> None:
        require("redis", "A Redis subscription bus (redis_url=, MCPSERVE_REDIS_URL)")
        self.url = url
        self.channel = channel
        self.max_backoff_seconds = max_backoff_seconds
        self.origin = secrets.token_hex(8)
        self.connected = asyncio.Event()
        self.outages = 0
        self._client: Any = None
        self._reader: asyncio.Task[None] | None = None
        self._pubsub: Any = None
        self._deliver: EventListener | None = None

    async def start(self, deliver: EventListener) -> None:
        import redis.asyncio as redis
        from redis.asyncio.retry import Retry
        from redis.backoff import ExponentialBackoff

        self._deliver = deliver
        # A pooled connection may have died with a restarted server: retry a publish on a
        # fresh one, briefly (notify_resource_updated waits for it).
        retry = Retry(ExponentialBackoff(cap=0.5, base=0.05), 3)
        self._client = redis.Redis.from_url(self.url, socket_connect_timeout=2, retry=retry)
        self._reader = asyncio.create_task(self._read(), name="mcpserve-redis-bus")

    async def publish(self, event: Event) -> None:
        if self._deliver is not None:
            self._deliver(event)  # local listeners do not wait for, or depend on, Redis
        if self._client is None:
            return
        message = orjson.dumps({"origin": self.origin, "event": event})
        try:
            await self._client.publish(self.channel, message)
        except Exception as exc:
            record_everywhere(REDIS_ERRORS, 1, (COMPONENT,))
            logger.warning(
                "Redis bus: could not publish %s (%s); other processes miss it",
                event.get("type"),
                exc,
            )

    async def stop(self) -> None:
        if self._reader is not None:
            reader, self._reader = self._reader, None
            reader.cancel()
            # A cancellation that lands while redis-py is (re)connecting can be lost there;
            # closing the reader's connection then ends it, so a stop never hangs.
            _, pending = await asyncio.wait({reader}, timeout=0.2)
            if pending and self._pubsub is not None:
                with contextlib.suppress(Exception):
                    await self._pubsub.aclose()
                reader.cancel()
                await asyncio.wait({reader}, timeout=1.0)
        if self._client is not None:
            await self._client.aclose()
            self._client = None
        self._deliver = None

    async def _read(self) -> None:
        backoff = 0.1
        while True:
            pubsub = self._pubsub = self._client.pubsub(ignore_subscribe_messages=True)
            try:
                await pubsub.subscribe(self.channel)
                if self.outages:
                    logger.warning("Redis bus: reconnected to %s", redact(self.url))
                self.connected.set()
                backoff = 0.1
                async for message in pubsub.listen():
                    self._receive(message)
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                if self.connected.is_set() or not self.outages:
                    self.outages += 1
                    record_everywhere(REDIS_ERRORS, 1, (COMPONENT,))
                    logger.warning(
                        "Redis bus: connection to %s lost (%s); retrying", redact(self.url), exc
                    )
                self.connected.clear()
                await asyncio.sleep(backoff)
                backoff = min(backoff * 2, self.max_backoff_seconds)
            finally:
                try:
                    await pubsub.aclose()
                except Exception:  # the connection is already gone
                    logger.debug("Redis bus: error closing pubsub", exc_info=True)

    def _receive(self, message: JSONDict) -> None:
        if message.get("type") != "message" or self._deliver is None:
            return
        try:
            payload = orjson.loads(message["data"])
            origin, event = payload["origin"], payload["event"]
        except (orjson.JSONDecodeError, KeyError, TypeError):
            logger.warning("Redis bus: ignoring a malformed message on %s", self.channel)
            return
        if origin != self.origin and isinstance(event, dict):
            self._deliver(event)


def redact(url: str) -> str:
    """The URL without a password, for logs."""
    scheme, sep, rest = url.partition("://")
    if "@" in rest:
        rest = "***@" + rest.split("@", 1)[1]
    return f"{scheme}{sep}{rest}"
