"""Middleware objects for ``server.middleware(obj)``: rate limits, a response cache,
structured request logs, timing and a limit on the size of tool results.

Each is a plain callable ``(ctx, call_next)`` like any middleware
(:mod:`mcpserve.server.middleware`), and costs nothing until it is added. Those that keep
state (:class:`RateLimit`, :class:`ResponseCache`) keep it in a key-value store
(``store=``: a store or a URL); by default the server's shared Redis when it has one
(``redis_url=``, ``MCPSERVE_REDIS_URL``), else this process's memory. ``docs/middleware.md``
shows each, and the order to add them in.
"""

from __future__ import annotations

from .rate_limit import RateLimit as RateLimit
from .response_cache import ResponseCache as ResponseCache
from .size_limit import ResponseSizeLimit as ResponseSizeLimit
from .structured_logging import StructuredLogging as StructuredLogging
from .timing import Timing as Timing

__all__ = ["RateLimit", "ResponseCache", "ResponseSizeLimit", "StructuredLogging", "Timing"]
