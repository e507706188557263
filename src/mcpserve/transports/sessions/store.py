"""Handshake-era sessions over HTTP: what one needs, and a bounded store of them.

An :class:`HTTPSession` is the era's :class:`~mcpserve.protocol.handshake.Session` (what client
and server agreed at ``initialize``) plus its HTTP state: the resumable streams of its
requests (the last :data:`MAX_STREAMS_PER_SESSION`), the standalone ``GET`` stream where
notifications unrelated to a request go, the tasks of its running requests, and the
server's questions to the client that await answers.

:class:`SessionStore` keeps sessions bounded: at most ``max_sessions`` live at once (further
``initialize`` requests are refused), and a session idle for ``idle_seconds`` is closed the
next time the store is touched. Closing a session fails its questions to the client (the
handler sees a clear error), cancels its other requests and drops every reference to it.
"""

from __future__ import annotations

import asyncio
import base64
import os
import time
from collections import OrderedDict
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from ..._types import JSONDict, UpdateGate
from ...protocol.handshake import Session
from ...protocol.handshake_state import HandshakeState, Peer
from ..heard import send_heard
from ..outgoing import OutgoingRequests
from ..sse import EventStream

if TYPE_CHECKING:  # loads only for a server that records metrics
    from ...metrics.recorder import Metrics

MAX_STREAMS_PER_SESSION = 32


class HTTPSession:
    """One handshake-era session over HTTP."""

    def __init__(self, session: Session, session_id: str | None = None) -> None:
        # 144 random bits from the OS CSPRNG, in visible ASCII.
        self.id = session_id or base64.urlsafe_b64encode(os.urandom(18)).decode()
        self.session = session
        #: The session's life in the handshake era's state machine (``handshake_state.py``).
        self.state = HandshakeState(Peer.HANDSHAKE_HEADERS, session)
        self.tasks: dict[Any, asyncio.Task[Any]] = {}
        self.outgoing = OutgoingRequests()
        self.streams: OrderedDict[str, EventStream] = OrderedDict()
        #: The GET stream for notifications unrelated to a request, when open.
        self.standalone: EventStream | None = None
        self.last_used = time.monotonic()
        self.closed = False
        #: Which updates its client hears (the visibility rule asked with the caller that
        #: opened the standalone stream); None: every update it subscribed to.
        self.gate: UpdateGate | None = None

        #: When this process began the session (``time.monotonic()``), for its duration;
        #: None for a session begun elsewhere and served here too.
        self.began_here: float | None = None

    def touch(self) -> None:
        self.last_used = time.monotonic()

    def idle_for(self) -> float:
        """Seconds since the session was last used; 0 while a request runs or a client is
        connected to its standalone stream."""
        if self.tasks or (self.standalone is not None and self.standalone.attached):
            return 0.0
        return time.monotonic() - self.last_used

    def open_standalone(self) -> EventStream:
        """A new standalone stream, replacing the old one: one per session."""
        if self.standalone is not None:
            self.standalone.finish()
        self.standalone = self.new_stream()
        return self.standalone

    def new_stream(self) -> EventStream:
        stream = EventStream()
        self.streams[stream.id] = stream
        while len(self.streams) > MAX_STREAMS_PER_SESSION:
            self.streams.popitem(last=False)[1].finish()
        return stream

    def on_event(self, event: JSONDict) -> None:
        """A bus event: the session's notification goes on the standalone stream, if open."""
        message = self.state.hear(event)
        if message is not None and self.standalone is not None and not self.standalone.finished:
            send_heard(message, self.gate, self._push)

    def _push(self, message: JSONDict) -> None:
        if self.standalone is not None and not self.standalone.finished:
            self.standalone.push(message)

    def close(self) -> None:
        """End everything in flight; nothing of the session is kept."""
        self.closed = True
        self.state.end()
        # Questions to the client fail first: their handlers end with that clear error.
        answered = self.outgoing.close()
        for task in self.tasks.values():
            if task not in answered:
                task.cancel()
        for stream in self.streams.values():
            stream.finish()
        self.tasks.clear()
        self.streams.clear()
        self.standalone = None


class TooManySessions(Exception):
    pass


class SessionStore:
    """Live HTTP sessions, bounded in number and idle time."""

    def __init__(
        self,
        *,
        max_sessions: int = 1000,
        idle_seconds: float = 1800.0,
        metrics: Metrics | None = None,
    ) -> None:
        self.max_sessions = max_sessions
        self.idle_seconds = idle_seconds
        self._metrics = metrics
        self._sessions: OrderedDict[str, HTTPSession] = OrderedDict()

    def __len__(self) -> int:
        return len(self._sessions)

    def add(self, session: HTTPSession) -> None:
        self.sweep()
        if len(self._sessions) >= self.max_sessions:
            raise TooManySessions
        self._sessions[session.id] = session
        if self._metrics is not None:
            self._metrics.session_opened(session.session.version)

    def __iter__(self) -> Iterator[HTTPSession]:
        return iter(list(self._sessions.values()))

    def peek(self, session_id: str) -> HTTPSession | None:
        """The session, if held here, without counting this as a use."""
        return self._sessions.get(session_id)

    def get(self, session_id: str) -> HTTPSession | None:
        session = self._sessions.get(session_id)
        if session is None:
            return None
        if session.idle_for() > self.idle_seconds:
            self.remove(session_id)
            return None
        session.touch()
        self._sessions.move_to_end(session_id)
        return session

    def remove(self, session_id: str, *, ended: bool = True) -> bool:
        """Close this process's part of a session; ``ended``: the session is over (not
        only here), which its duration counts."""
        session = self._sessions.pop(session_id, None)
        if session is None:
            return False
        session.close()
        if self._metrics is not None:
            self._metrics.session_closed(session.session.version, session.began_here, ended=ended)
        return True

    def sweep(self) -> None:
        """Close sessions idle for too long (the least recently used come first)."""
        expired = [s.id for s in self._sessions.values() if s.idle_for() > self.idle_seconds]
        for session_id in expired:
            self.remove(session_id)

    def close_all(self, *, ended: bool = True) -> None:
        for session_id in list(self._sessions):
            self.remove(session_id, ended=ended)
