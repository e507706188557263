"""Resumable SSE streams for the handshake era (2025-11-25 Streamable HTTP).

A handshake-era stream outlives its HTTP connection: the request's handler keeps writing to it
while the client is away, and a ``GET`` with ``Last-Event-ID`` picks it up again. Every
event gets an id ``<stream>-<n>``, unique within the session, and the last ``buffer_size``
events are kept for replay (older ones are gone: a client that was away that long must
start over).

The first event of a stream is a priming event (an id and empty data), so a client can
resume even before anything else was sent. :meth:`EventStream.detach` lets the server end
the connection early: it sends a ``retry`` field and closes, and the client reconnects.
"""

from __future__ import annotations

import asyncio
import os
from collections import deque

from .._types import JSONDict, Send
from ..protocol.jsonrpc import dumps

#: The ``retry`` hint of a stream the server ends because it is stopping: reconnect after
#: a second (through the balancer, to another instance, or to this one restarted).
STOPPING_RETRY_MS = 1000

SSE_HEADERS = [
    (b"content-type", b"text/event-stream"),
    (b"cache-control", b"no-cache"),
    (b"x-accel-buffering", b"no"),
]


class EventStream:
    """One handshake-era SSE stream: numbered events, a replay buffer, one connection at a time."""

    def __init__(self, *, buffer_size: int = 512) -> None:
        self.id = os.urandom(6).hex()
        self.events: deque[tuple[int, bytes]] = deque(maxlen=buffer_size)
        self.seq = 0
        self.finished = False
        #: The first JSON-RPC message, to decide between a JSON and an SSE answer.
        self.first: JSONDict | None = None
        self._detach_retry_ms: int | None = None
        self._final_retry_ms: int | None = None
        self._connection = 0  # which attached connection may write; a newer one wins
        self._attached = False
        self._wake = asyncio.Event()
        self.events.append((0, f"id: {self.id}-0\ndata:\n\n".encode()))  # priming event

    @property
    def attached(self) -> bool:
        """Whether a client is connected to the stream now."""
        return self._attached and not self.finished

    def push(self, message: JSONDict) -> None:
        """Append one JSON-RPC message; it goes out now if a client is attached."""
        self.seq += 1
        if self.first is None:
            self.first = message
        frame = b"id: %s-%d\ndata: %s\n\n" % (self.id.encode(), self.seq, dumps(message))
        self.events.append((self.seq, frame))
        self._wake.set()

    def finish(self, retry_ms: int | None = None) -> None:
        """No more events will come (the response was pushed, or the session ended); with
        ``retry_ms``, the stream ends with that ``retry`` hint (the server is stopping)."""
        self.finished = True
        self._final_retry_ms = retry_ms
        self._wake.set()

    def detach(self, retry_ms: int) -> None:
        """Close the current connection now, telling the client when to come back.

        Affects the connection attached now, or the request's own first one; a stream
        whose client is away already has nothing to close.
        """
        if self._attached or self._connection == 0:
            self._detach_retry_ms = retry_ms
            self._wake.set()

    async def wait(self) -> None:
        """Until something happens: a message, the end, or a detach request."""
        self._wake.clear()
        if self.seq or self.finished or self._detach_retry_ms is not None:
            return
        await self._wake.wait()

    async def pump(
        self, send: Send, after: int | None = None, keepalive: float | None = None
    ) -> bool:
        """Write events numbered above ``after`` (all, if None) until the stream finishes,
        is detached, or a newer connection takes over. True once everything was sent.

        A ``keepalive`` comment goes out after that many quiet seconds, so proxies and load
        balancers do not take an idle stream for a dead one."""
        self._connection += 1
        mine = self._connection
        self._attached = True
        self._wake.set()  # an older connection still attached must notice and end
        sent = -1 if after is None else after
        try:
            while True:
                self._wake.clear()
                if mine != self._connection:  # resumed elsewhere: one stream, one connection
                    await send({"type": "http.response.body", "body": b""})
                    return False
                frames = [frame for seq, frame in self.events if seq > sent]
                if frames:
                    sent = self.events[-1][0]
                    await send(
                        {"type": "http.response.body", "body": b"".join(frames), "more_body": True}
                    )
                if self._detach_retry_ms is not None and not self.finished:
                    retry = b"retry: %d\n\n" % self._detach_retry_ms
                    self._detach_retry_ms = None
                    await send({"type": "http.response.body", "body": retry})
                    return False
                if self.finished and sent >= self.seq:
                    last = (
                        b""
                        if self._final_retry_ms is None
                        else b"retry: %d\n\n" % self._final_retry_ms
                    )
                    await send({"type": "http.response.body", "body": last})
                    return True
                if keepalive is None:
                    await self._wake.wait()
                    continue
                try:
                    await asyncio.wait_for(self._wake.wait(), keepalive)
                except TimeoutError:
                    await send(
                        {
                            "type": "http.response.body",
                            "body": b": keepalive\n\n",
                            "more_body": True,
                        }
                    )
        finally:
            if mine == self._connection:
                self._attached = False
