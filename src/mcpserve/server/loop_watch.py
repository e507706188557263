"""Naming the plain function that holds the event loop.

A plain ``def`` handler runs inline, on the event loop: the cheapest path, and right for
quick work. A plain function that blocks (``time.sleep``, a synchronous database driver, a
large file read) holds the loop for as long as it blocks, and every other request of the
process waits without a word. mcpserve keeps the shape and watches it: each inline call
is timed (two reads of the clock, a fraction of a microsecond beside the tens of
microseconds a request costs), and a call that held the loop longer than the threshold
logs one warning for that function, naming it and the two fixes. Later slow calls of the
same function say nothing more: the warning is a pointer, not a metric.

The threshold is the server's ``blocking_warning_seconds`` (0.1 s by default, asyncio's
own threshold for a slow callback); ``None`` turns the watch off.
"""

from __future__ import annotations

import logging
import math

from .._types import UserFunction

logger = logging.getLogger("mcpserve")

#: How long a plain function may hold the event loop before it is named.
DEFAULT_BLOCKING_WARNING_SECONDS = 0.1


class LoopWatch:
    """The threshold, and the functions already named (each one once)."""

    __slots__ = ("_named", "seconds")

    def __init__(self, seconds: float | None = DEFAULT_BLOCKING_WARNING_SECONDS) -> None:
        if seconds is not None and not seconds > 0:
            raise ValueError(
                f"blocking_warning_seconds must be a positive number of seconds or None "
                f"(no warning), not {seconds!r}"
            )
        #: Compared with every inline call's duration; infinite when the watch is off.
        self.seconds = math.inf if seconds is None else seconds
        self._named: set[UserFunction] = set()

    def held(self, fn: UserFunction, kind: str, key: str, seconds: float) -> None:
        """``fn`` (registered as ``kind`` ``key``) held the loop for ``seconds``."""
        if fn in self._named:
            return
        self._named.add(fn)
        logger.warning(
            "The plain function %s (%s %r) held the event loop for %.2f s, and every other "
            "request waited: register it with blocking=True (run in the thread pool) or make "
            "it async def. (Said once per function; Server(blocking_warning_seconds=...) "
            "sets the threshold.)",
            _readable_name(fn),
            kind,
            key,
            seconds,
        )


def _readable_name(fn: UserFunction) -> str:
    # ``make.<locals>.lookup`` says less to a reader than ``lookup``.
    name: str = getattr(fn, "__qualname__", None) or repr(fn)
    return name.rpartition("<locals>.")[2]
