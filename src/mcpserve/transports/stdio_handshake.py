"""The handshake era on stdio: once a client sends ``initialize``, the process is its session.

``stdio.py`` hands every message the era rule gives to the handshake era
(:func:`~mcpserve.protocol.handshake.era_of`) to :meth:`StdioLegacy.accept`, which answers
what only this era has and returns the session for the rest:

* ``initialize`` starts the session (a second one starts a new session);
* a ``ping`` before any ``initialize`` is answered ``{}``: a handshake-era client may probe
  first, while a 2026-07-28 client always sends ``_meta`` (``docs/decisions.md``, "A ping
  before initialize");
* a JSON-RPC response answers one of the server's own requests to the client
  (:mod:`.outgoing`);
* requests and notifications inside the session go on through the dispatcher, with the
  session's facts and :meth:`StdioLegacy.ask` to put questions to the client on stdout.

Changes on the subscription bus reach the session as its notifications, on stdout.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from ..protocol.handshake import Era, Session, era_of
from ..protocol.jsonrpc import JSONDict, Kind
from ..server.bus import Event
from ..server.handshake import Legacy, notification_for
from .outgoing import OutgoingRequests

if TYPE_CHECKING:
    from ..server.subscriptions import Subscriptions


class StdioLegacy:
    """The handshake-era side of one stdio connection."""

    def __init__(
        self,
        legacy: Legacy,
        subscriptions: Subscriptions,
        send: Callable[[JSONDict], None],
        initialize: Callable[[JSONDict], Awaitable[tuple[Session | None, JSONDict]]],
    ) -> None:
        self._legacy = legacy
        self._initialize = initialize
        self._subscriptions = subscriptions
        self._send = send
        self.session: Session | None = None
        self._outgoing = OutgoingRequests()

    def claims(self, message: JSONDict) -> bool:
        """Whether ``message`` belongs to the handshake era (then :meth:`accept` takes it)."""
        era = era_of(message)
        if era is not Era.IN_CONTEXT:
            return era is Era.HANDSHAKE
        if self.session is not None:
            return True
        return message.get("method") == "ping" and "id" in message  # a ping before initialize

    def accept(self, message: JSONDict, kind: Kind) -> Session | None:
        """Answer what only the handshake era has; the session for what the dispatcher runs."""
        if kind is Kind.RESPONSE:
            self._outgoing.receive(message)
            return None
        if self.session is None:  # a ping before initialize
            self._send({"jsonrpc": "2.0", "id": message["id"], "result": {}})
            return None
        return self.session

    async def initialize(self, message: JSONDict) -> None:
        """Start the session (a second ``initialize`` starts a new one), or refuse it."""
        session, response = await self._initialize(message)
        if session is not None:
            self.end()
            self.session = session
            self._outgoing = OutgoingRequests()
            self._subscriptions.sinks.add(self._on_event)
        self._send(response)

    async def ask(self, request: JSONDict) -> JSONDict:
        """A question to the client, as a request on stdout; its answer comes on stdin."""
        return await self._outgoing.call(self._send, request)

    def _on_event(self, event: Event) -> None:
        if self.session is not None:
            message = notification_for(event, self.session)
            if message is not None:
                self._send(message)

    def end(self) -> None:
        """The session is over: questions to the client fail, and it hears no more events."""
        self._subscriptions.sinks.discard(self._on_event)
        self._outgoing.close()
        self.session = None
