"""``Timing``: how long each request took, on its result.

The duration, in milliseconds, from when the request reached ``Timing`` in the middleware
chain to when its answer came back, is put in the result's ``_meta`` under
``mcpserve/durationMs`` (both eras: a handshake-era result keeps its ``_meta``). Added
first, it times everything after it; added last, only the handler. ``StructuredLogging``
logs the duration it measures itself as ``duration_ms``. An error carries no result, and
so no duration.
"""

from __future__ import annotations

import time

from .._types import Result
from ..server.context.context import Context
from ..server.middleware import CallNext
from . import facts

#: The ``_meta`` key of the duration, in milliseconds.
DURATION_KEY = "mcpserve/durationMs"


class Timing:
    """Put each request's duration in its result's ``_meta`` (``mcpserve/durationMs``)."""

    async def __call__(self, ctx: Context, call_next: CallNext) -> Result:
        if facts.is_notification(ctx):
            return await call_next()
        started = time.perf_counter()
        result = await call_next()
        duration = round((time.perf_counter() - started) * 1000, 3)
        meta = result.get("_meta")
        # A fresh dict: the result may be a cached one's copy, or shared by its handler.
        result = dict(result)
        result["_meta"] = {**(meta if isinstance(meta, dict) else {}), DURATION_KEY: duration}
        return result
