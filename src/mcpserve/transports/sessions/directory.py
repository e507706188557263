"""Where handshake-era HTTP sessions live, and how the processes serving one talk.

A :class:`SessionDirectory` is what ``http_handshake.py`` asks for a session. Without a shared
store it is this process's :class:`~.store.SessionStore`, as in a single-process
deployment. With one (``Server(redis_url=...)``), a session's facts live in
:class:`~mcpserve.backends.redis.sessions.SharedSessions`, any process serves any of its
requests, and each process keeps a local copy of the sessions it is serving (their running requests,
streams and questions to the client, which cannot move). What must reach the process that
holds such a part travels on the server's event stream (the subscription bus) as a session event:

==========  ==================================================================
``answer``  a client's answer to a question another process asked
``cancel``  ``notifications/cancelled`` for a request running elsewhere
``change``  a log level or subscription changed (for the standalone stream's filter)
``stream``  the client opened its standalone stream elsewhere: close ours
``end``     the session was deleted
==========  ==================================================================

The bus carries events at most once (``backends/redis/bus.py``): an answer lost in a Redis
outage leaves the question to time out, as a lost HTTP request would
(``docs/decisions.md``, "Sessions across processes").
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
from typing import Any

from ..._types import JSONDict
from ...backends.redis.sessions import SharedSessions, StoreUnavailable
from ...protocol.handshake import Session
from ...protocol.jsonrpc import is_valid_id
from ..endpoint import ServerEvents
from ..sse import STOPPING_RETRY_MS
from .store import HTTPSession, SessionStore, TooManySessions

#: The bus event type of what one process tells the others about a session (a value other
#: processes read, possibly of an older release, so it keeps its first name).
SESSION_EVENT = "legacy-session"

__all__ = ["SESSION_EVENT", "SessionDirectory", "StoreUnavailable", "TooManySessions"]


class SessionDirectory:
    """This process's sessions, and (with a shared store) everyone's."""

    def __init__(
        self,
        local: SessionStore,
        shared: SharedSessions | None,
        events: ServerEvents,
    ) -> None:
        self.local = local
        self.shared = shared
        self._events = events
        self._instance = os.urandom(8).hex()
        self._keeper: asyncio.Task[None] | None = None
        events.subscribe(self._on_event, on_stop=self.end_streams)

    def __len__(self) -> int:
        return len(self.local)

    async def start(self, session: HTTPSession) -> None:
        """Record a new session. Raises :class:`TooManySessions` or
        :class:`StoreUnavailable`."""
        if self.shared is not None and not await self.shared.create(session.id, session.session):
            raise TooManySessions
        session.began_here = time.monotonic()
        self.local.add(session)
        self._keep_alive()

    async def find(self, session_id: str) -> HTTPSession | None:
        """The session with its current facts, or None if there is none. Raises
        :class:`StoreUnavailable` (or :class:`TooManySessions`, when this process's share
        of sessions is full) when a shared session cannot be served now."""
        session = self.local.get(session_id)
        if self.shared is None:
            return session
        facts = await self.shared.load(session_id)
        if facts is None:
            if session is not None:
                self.local.remove(session_id)  # ended elsewhere while this process was away
            return None
        if session is None:
            session = HTTPSession(facts, session_id)
            self.local.add(session)
            self._keep_alive()
        else:  # in place: running requests of the session hold this object
            session.session.log_level = facts.log_level
            session.session.resource_subscriptions = facts.resource_subscriptions
        return session

    async def end(self, session: HTTPSession) -> None:
        """Delete the session, everywhere. Raises :class:`StoreUnavailable`."""
        if self.shared is not None:
            await self.shared.delete(session.id)
            await self._tell(session, "end")
        self.local.remove(session.id)

    async def answer(self, session: HTTPSession, message: dict[str, Any]) -> None:
        """A client's answer to one of the server's questions, wherever it was asked."""
        if not session.outgoing.receive(message) and self.shared is not None:
            await self._tell(session, "answer", message=message)

    async def cancel(self, session: HTTPSession, request_id: Any) -> None:
        if not cancel(session, request_id) and self.shared is not None:
            await self._tell(session, "cancel", requestId=request_id)

    async def standalone(self, session: HTTPSession) -> None:
        """The client opened ``session``'s standalone stream here: one per session."""
        if self.shared is not None:
            await self._tell(session, "stream", origin=self._instance)

    async def share(self, session: HTTPSession, before: tuple[str | None, frozenset[str]]) -> bool:
        """Write what a request changed (``before`` is the state it started with) where
        every process finds it. False if the store cannot take it: the change is undone."""
        if self.shared is None:
            return True
        level, subscriptions = session.session.state()
        change: dict[str, Any] = {
            "level": level if level != before[0] else None,
            "subscribed": sorted(subscriptions - before[1]),
            "unsubscribed": sorted(before[1] - subscriptions),
        }
        try:
            await self.shared.change(session.id, **change)
        except StoreUnavailable:
            session.session.log_level = before[0]
            session.session.resource_subscriptions = set(before[1])
            return False
        await self._tell(session, "change", **change)
        return True

    def end_streams(self) -> None:
        """The server is stopping: end the standalone streams, which never end by
        themselves (their clients open them again, elsewhere or after the restart)."""
        for session in self.local:
            if session.standalone is not None:
                session.standalone.finish(STOPPING_RETRY_MS)

    def close(self) -> None:
        """End this process's part of every session (a shared session lives on elsewhere)."""
        self._events.unsubscribe(self._on_event)
        if self._keeper is not None:
            self._keeper.cancel()
            self._keeper = None
        self.local.close_all(ended=self.shared is None)

    async def aclose(self) -> None:
        self.close()
        if self.shared is not None:
            await self.shared.close()

    # -- between processes ----------------------------------------------------------------

    async def _tell(self, session: HTTPSession, do: str, **details: Any) -> None:
        event: JSONDict = {"type": SESSION_EVENT, "id": session.id, "do": do, **details}
        await self._events.publish(event)

    def _on_event(self, event: JSONDict) -> None:
        """A bus event: a session event for a session held here, or a change a standalone
        stream may want to hear of."""
        if event.get("type") != SESSION_EVENT:
            for held in self.local:
                held.on_event(event)
            return
        session_id = event.get("id")
        session = self.local.peek(session_id) if isinstance(session_id, str) else None
        if session is None:
            return
        do = event.get("do")
        if do == "answer" and isinstance(event.get("message"), dict):
            session.outgoing.receive(event["message"])
        elif do == "cancel":
            cancel(session, event.get("requestId"))
        elif do == "change":
            _apply(session.session, event)
        elif do == "stream" and event.get("origin") != self._instance:
            if session.standalone is not None:
                session.standalone.finish()  # the client listens elsewhere now
                session.standalone = None
        elif do == "end":
            self.local.remove(session.id)

    def _keep_alive(self) -> None:
        """Renew, while this process holds sessions, the shared leases of the busy ones."""
        if self.shared is not None and (self._keeper is None or self._keeper.done()):
            self._keeper = asyncio.create_task(self._renew(), name="mcpserve-session-leases")

    async def _renew(self) -> None:
        assert self.shared is not None
        pause = max(0.5, min(60.0, self.shared.idle_seconds / 3))
        while len(self.local):
            await asyncio.sleep(pause)
            busy = [session.id for session in self.local if session.idle_for() == 0.0]
            with contextlib.suppress(StoreUnavailable):  # logged; the next round tries again
                await self.shared.keep_alive(busy)


def cancel(session: HTTPSession, request_id: Any) -> bool:
    """Cancel the session's request ``request_id``; False if it does not run here."""
    task = session.tasks.get(request_id) if is_valid_id(request_id) else None
    if task is None:
        return False
    task.cancel()
    return True


def _apply(session: Session, change: JSONDict) -> None:
    """What another process's request changed in a session this process holds."""
    level = change.get("level")
    if isinstance(level, str):
        session.log_level = level
    for uri in change.get("subscribed") or ():
        session.resource_subscriptions.add(str(uri))
    for uri in change.get("unsubscribed") or ():
        session.resource_subscriptions.discard(str(uri))
