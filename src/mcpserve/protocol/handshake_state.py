"""The handshake era as one state machine: which messages it serves, and a session's life.

Sans-IO, like the rest of ``protocol/``: a transport (stdio, HTTP) feeds a
:class:`HandshakeState` what happened (a message arrived; the server answered an
``initialize``; the session ended; the server's event stream carried a change) and does what
comes back. The rules live here once; the transports only carry bytes.

Rule 1, which era a message belongs to. Per-request ``_meta`` means 2026-07-28, always, even
inside a session; an ``initialize`` request without it starts a handshake-era session
(``docs/decisions.md``, "Era per message"). Anything else the message alone does not place,
and :data:`ROUTES` places it by where it arrived and what it is:

* inside a live session, a request or notification is served with the session's facts
  (:attr:`Route.SERVE`), and a response answers one of the server's questions to the client
  (:attr:`Route.CLIENT_ANSWER`);
* outside one, it is 2026-07-28's (:attr:`Route.MODERN`), except that on stdio a ``ping``
  before ``initialize`` is answered ``{}`` (a handshake-era client may probe first,
  ``docs/decisions.md``, "A ping before initialize"), and over HTTP a request whose
  ``MCP-Protocol-Version`` is a handshake-era one, or absent, is refused until it names a
  session (:attr:`Route.NEEDS_SESSION`).

Rule 2, a session's life, as data (:data:`TRANSITIONS`): ``IDLE`` until ``initialize`` is
answered with a session, then ``ACTIVE``; a second ``initialize`` (stdio) starts a new
session in its place; ``ENDED`` when the client deletes it, disconnects or the server drops
it, after which nothing more reaches it and the questions still waiting for the client fail
(:class:`~.handshake.SessionEnded`).

Rule 3, what the client hears: while ``ACTIVE``, each change on the server's event stream
becomes the notification :func:`~.handshake.notification_for` gives for its session (list
changes, updates of subscribed resources), or nothing.
"""

from __future__ import annotations

from enum import Enum

from .._types import JSONDict
from .handshake import Era, Session, era_of, notification_for
from .jsonrpc import Kind


class Peer(Enum):
    """What the transport knows of a message's sender, besides the message itself."""

    #: stdio: the line alone.
    STDIO = "stdio"
    #: HTTP without ``MCP-Protocol-Version``, or with a handshake-era one.
    HANDSHAKE_HEADERS = "handshake-headers"
    #: HTTP with any other ``MCP-Protocol-Version``.
    MODERN_HEADERS = "modern-headers"


class Shape(Enum):
    """A message as Rule 1 tells messages apart."""

    REQUEST = "request"
    PING = "ping"
    NOTIFICATION = "notification"
    RESPONSE = "response"


class Route(Enum):
    """Who serves a message, and how."""

    #: Not the era's: served as 2026-07-28.
    MODERN = "modern"
    #: ``initialize``: the transport has the server answer it, then feeds :meth:`start`.
    INITIALIZE = "initialize"
    #: Served through the dispatcher with the session's facts.
    SERVE = "serve"
    #: A response: it answers one of the server's questions to the client.
    CLIENT_ANSWER = "client-answer"
    #: A ``ping`` before any ``initialize``: answered ``{}`` by the era itself.
    PROBE = "probe"
    #: A handshake-era request outside any session: refused, it needs ``initialize`` first.
    NEEDS_SESSION = "needs-session"


class Phase(Enum):
    """Where one session is in its life (Rule 2)."""

    IDLE = "idle"
    ACTIVE = "active"
    ENDED = "ended"


#: Rule 1 for what the message alone does not place: (inside a live session, the peer,
#: the message's shape) -> its route. Inside a session the peer does not matter.
ROUTES: dict[tuple[bool, Peer, Shape], Route] = {
    **{(True, peer, Shape.REQUEST): Route.SERVE for peer in Peer},
    **{(True, peer, Shape.PING): Route.SERVE for peer in Peer},
    **{(True, peer, Shape.NOTIFICATION): Route.SERVE for peer in Peer},
    **{(True, peer, Shape.RESPONSE): Route.CLIENT_ANSWER for peer in Peer},
    (False, Peer.STDIO, Shape.REQUEST): Route.MODERN,
    (False, Peer.STDIO, Shape.PING): Route.PROBE,
    (False, Peer.STDIO, Shape.NOTIFICATION): Route.MODERN,
    (False, Peer.STDIO, Shape.RESPONSE): Route.MODERN,
    (False, Peer.HANDSHAKE_HEADERS, Shape.REQUEST): Route.NEEDS_SESSION,
    (False, Peer.HANDSHAKE_HEADERS, Shape.PING): Route.NEEDS_SESSION,
    (False, Peer.HANDSHAKE_HEADERS, Shape.NOTIFICATION): Route.MODERN,
    (False, Peer.HANDSHAKE_HEADERS, Shape.RESPONSE): Route.MODERN,
    (False, Peer.MODERN_HEADERS, Shape.REQUEST): Route.MODERN,
    (False, Peer.MODERN_HEADERS, Shape.PING): Route.MODERN,
    (False, Peer.MODERN_HEADERS, Shape.NOTIFICATION): Route.MODERN,
    (False, Peer.MODERN_HEADERS, Shape.RESPONSE): Route.MODERN,
}

#: Rule 2: (phase, what happened) -> the next phase. What is not here cannot happen.
TRANSITIONS: dict[tuple[Phase, str], Phase] = {
    (Phase.IDLE, "started"): Phase.ACTIVE,
    (Phase.ACTIVE, "started"): Phase.ACTIVE,  # a second initialize: a new session in its place
    (Phase.IDLE, "ended"): Phase.ENDED,
    (Phase.ACTIVE, "ended"): Phase.ENDED,
    (Phase.ENDED, "ended"): Phase.ENDED,
    (Phase.ENDED, "started"): Phase.ACTIVE,  # stdio: initialize again after the session ended
}

_SHAPES = {Kind.REQUEST: Shape.REQUEST, Kind.NOTIFICATION: Shape.NOTIFICATION}


def route(message: JSONDict, kind: Kind, *, in_session: bool, peer: Peer) -> Route:
    """Rule 1: who serves ``message``, one of ``kind``, arriving inside a live session or not."""
    era = era_of(message)
    if era is Era.MODERN:
        return Route.MODERN
    if era is Era.HANDSHAKE:
        return Route.INITIALIZE
    if kind is Kind.RESPONSE:
        shape = Shape.RESPONSE
    elif kind is Kind.REQUEST and message.get("method") == "ping":
        shape = Shape.PING
    else:
        shape = _SHAPES[kind]
    return ROUTES[(in_session, peer, shape)]


class HandshakeState:
    """One handshake-era session's life, fed by whatever transport carries it."""

    __slots__ = ("peer", "phase", "session")

    def __init__(self, peer: Peer, session: Session | None = None) -> None:
        self.peer = peer
        self.phase = Phase.IDLE
        self.session: Session | None = None
        if session is not None:
            self.start(session)

    @property
    def active(self) -> bool:
        return self.phase is Phase.ACTIVE

    def route(self, message: JSONDict, kind: Kind) -> Route:
        """Rule 1 for a message arriving where this session lives."""
        return route(message, kind, in_session=self.active, peer=self.peer)

    def start(self, session: Session) -> None:
        """``initialize`` was answered with ``session``: it is the live one now."""
        self.phase = TRANSITIONS[(self.phase, "started")]
        self.session = session

    def end(self) -> None:
        """The session is over; nothing more reaches it."""
        self.phase = TRANSITIONS[(self.phase, "ended")]
        self.session = None

    def hear(self, event: JSONDict) -> JSONDict | None:
        """Rule 3: the notification the client hears of a change, if any."""
        if self.session is None or not self.active:
            return None
        return notification_for(event, self.session)
