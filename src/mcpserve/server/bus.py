"""The subscription bus: how a change made in one process reaches listeners in every one.

A change (the tool list changed, a resource was updated) is an event
(:data:`mcpserve._types.Event`), a small JSON-able dict. :meth:`SubscriptionBus.publish`
delivers it to this process's listeners and to every other process on the same bus. Two
buses ship with mcpserve:

* :class:`LocalBus`, the default: this process only, no dependencies.
* :class:`~mcpserve.backends.redis.bus.RedisBus`: Redis pub/sub, so every worker and every
  instance sharing the Redis server hears every change.

Pick one with ``Server(bus=...)`` or the ``MCPSERVE_BUS`` environment variable
(``redis://host:port/db``); :func:`~mcpserve.backends.buses.bus_from_url` does the parsing.
``Server(redis_url=...)`` (or ``MCPSERVE_REDIS_URL``), which names the Redis for everything
shared, also picks the Redis bus when no bus is named.

This module declares what a bus is; the buses that need more than this process live in
``backends/`` and import it, never the other way round.
"""

from __future__ import annotations

from typing import Protocol

from .._types import Event, EventListener


def resource_updated(uri: str) -> Event:
    return {"type": "updated", "uri": uri}


class SubscriptionBus(Protocol):
    """Carries events between the processes serving one MCP server."""

    async def start(self, deliver: EventListener) -> None:
        """Begin delivering events (from any process) to ``deliver``, on this event loop."""

    async def publish(self, event: Event) -> None:
        """Deliver ``event`` here and in every other process on the bus."""

    async def stop(self) -> None:
        """Stop delivering and release connections."""


class LocalBus:
    """Events stay in this process."""

    def __init__(self) -> None:
        self._deliver: EventListener | None = None

    async def start(self, deliver: EventListener) -> None:
        self._deliver = deliver

    async def publish(self, event: Event) -> None:
        if self._deliver is not None:
            self._deliver(event)

    async def stop(self) -> None:
        self._deliver = None
