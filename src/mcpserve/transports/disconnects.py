"""Cancelling a request's handler when its HTTP client goes away, at little cost to the rest.

ASGI tells of a disconnect only through ``receive()``, so noticing one takes a task that
waits on it. Most handlers finish within milliseconds, even those that await a database
or another server, and a task each (started, then cancelled) would cost them more than
a good part of their own work. So a request gets its watcher only once it has run for
:data:`WATCH_AFTER_SECONDS`: the requests in flight wait in one queue, in the order they
started, and one timer for the whole queue starts the watchers of those still running
(a few times in that span at most, however many requests come and go). A request that
ends sooner costs a place in the queue.

A client that left sooner is noticed all the same when the watcher starts:
``receive()`` reports a disconnect that has already happened.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import Awaitable
from typing import Any

from .._types import JSONDict, Receive

logger = logging.getLogger("mcpserve.http")

#: How long a request runs before a task watches for its client's disconnect.
WATCH_AFTER_SECONDS = 0.05
#: A timer may fire this much early (the loop's clock is coarse): those are due too.
_EARLY = 0.002
#: The queue is looked at no more often than this (in parts of WATCH_AFTER_SECONDS): under
#: load a request starts every moment, and a timer each would cost what a task each did.
_GRAIN = 4


class _Watched:
    """One request in flight."""

    __slots__ = ("disconnected", "done", "receive", "started", "task", "watcher")

    def __init__(self, task: asyncio.Task[Any], receive: Receive, started: float) -> None:
        self.task = task
        self.receive = receive
        self.started = started
        self.done = False
        self.disconnected = False
        self.watcher: asyncio.Task[None] | None = None


class DisconnectWatch:
    """Watches the requests of one HTTP app for disconnects."""

    def __init__(self, after: float = WATCH_AFTER_SECONDS) -> None:
        self.after = after
        self._queue: deque[_Watched] = deque()
        self._timer: asyncio.TimerHandle | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    async def run(
        self, work: Awaitable[JSONDict], receive: Receive, request_id: Any
    ) -> JSONDict | None:
        """Await ``work``; if the client disconnects first, cancel it and return None."""
        task = asyncio.current_task()
        assert task is not None
        loop = task.get_loop()
        if loop is not self._loop:  # the first request, or a new event loop (tests make many)
            self._queue.clear()
            self._timer = None
            self._loop = loop
        watched = _Watched(task, receive, loop.time())
        self._queue.append(watched)
        if self._timer is None:
            self._timer = loop.call_at(watched.started + self.after, self._start_watchers)
        try:
            return await work
        except asyncio.CancelledError:
            if not watched.disconnected:
                raise
            task.uncancel()
            logger.info("Request %r cancelled: the client closed the connection", request_id)
            return None
        finally:
            watched.done = True
            if watched.watcher is not None:
                watched.watcher.cancel()

    def _start_watchers(self) -> None:
        loop = self._loop
        assert loop is not None
        now = loop.time()
        due = now - self.after + _EARLY
        queue = self._queue
        while queue and queue[0].started <= due:
            watched = queue.popleft()
            if not watched.done:
                watched.watcher = loop.create_task(_watch(watched))
        if not queue:
            self._timer = None
            return
        soonest = now + self.after / _GRAIN
        self._timer = loop.call_at(
            max(queue[0].started + self.after, soonest), self._start_watchers
        )


async def _watch(watched: _Watched) -> None:
    while (await watched.receive())["type"] != "http.disconnect":
        pass
    watched.disconnected = True
    watched.task.cancel()
