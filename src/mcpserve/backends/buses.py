"""Which subscription bus a URL names: the choice made where the configuration is read.

``memory://`` (or nothing) is :class:`~mcpserve.server.bus.LocalBus`, this process only;
``redis://``, ``rediss://`` and ``unix://`` are :class:`~mcpserve.backends.redis.bus.RedisBus`,
loaded only then (it needs the ``redis`` extra).
"""

from __future__ import annotations

from .. import _environment as environment
from ..server.bus import LocalBus, SubscriptionBus


def bus_from_url(url: str | None = None) -> SubscriptionBus:
    """The bus a URL names (``memory://`` or ``redis://...``); default ``$MCPSERVE_BUS``."""
    url = url if url is not None else (environment.read(environment.BUS) or "memory://")
    if url in ("", "memory://", "local", "memory"):
        return LocalBus()
    if url.startswith(("redis://", "rediss://", "unix://")):
        from .redis.bus import RedisBus

        return RedisBus(url)
    raise ValueError(f"Unknown subscription bus {url!r}: use memory:// or redis://host:port/db")
