"""The handshake era on stdio: once a client sends ``initialize``, the process is its session.

``stdio.py`` asks :meth:`StdioHandshake.route` where each message goes; the rules are the
era's state machine (``protocol/handshake_state.py``), fed here with what stdio knows (the
line alone, :attr:`~mcpserve.protocol.handshake_state.Peer.STDIO`). This module does what
the machine says:

* ``initialize`` starts the session (a second one starts a new session in its place);
* a ``ping`` before any ``initialize`` is answered ``{}``;
* a JSON-RPC response answers one of the server's own requests to the client
  (:mod:`.outgoing`);
* requests and notifications inside the session go on through the dispatcher, with the
  session's facts and :meth:`StdioHandshake.ask` to put questions to the client on stdout.

Changes on the server's event stream reach the session as its notifications, on stdout.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from .._types import JSONDict, UpdateGate
from ..protocol.core import ANONYMOUS
from ..protocol.handshake import Era, Session, era_of
from ..protocol.handshake_state import HandshakeState, Peer, Route
from ..protocol.jsonrpc import Kind
from .endpoint import HandshakeFront, ServerEvents
from .heard import send_heard
from .outgoing import OutgoingRequests

if TYPE_CHECKING:  # loads only for a server that records metrics
    from ..metrics.recorder import Metrics


class StdioHandshake:
    """The handshake-era side of one stdio connection."""

    def __init__(
        self,
        front: HandshakeFront,
        events: ServerEvents,
        send: Callable[[JSONDict], None],
        metrics: Metrics | None = None,
    ) -> None:
        self._front = front
        self._events = events
        self._send = send
        self._metrics = metrics
        self._began = 0.0
        self._state = HandshakeState(Peer.STDIO)
        self._outgoing = OutgoingRequests()
        self._gate: UpdateGate | None = None

    @property
    def session(self) -> Session | None:
        """The live session, if the client sent ``initialize``."""
        return self._state.session

    def route(self, message: JSONDict, kind: Kind) -> Route:
        """Where ``message`` goes (:data:`~mcpserve.protocol.handshake_state.ROUTES`)."""
        if era_of(message) is Era.MODERN:  # the commonest answer, in one call
            return Route.MODERN
        return self._state.route(message, kind)

    def accept(self, message: JSONDict, route: Route) -> Session | None:
        """Answer what only the handshake era has; the session for what the dispatcher runs."""
        if route is Route.CLIENT_ANSWER:
            self._outgoing.receive(message)
            return None
        if route is Route.PROBE:
            self._send({"jsonrpc": "2.0", "id": message["id"], "result": {}})
            return None
        return self._state.session

    async def initialize(self, message: JSONDict) -> None:
        """Start the session (a second ``initialize`` starts a new one), or refuse it."""
        session, response = await self._front.initialize(message, ANONYMOUS, None)
        if session is not None:
            self.end()
            self._state.start(session)
            self._began = time.monotonic()
            if self._metrics is not None:
                self._metrics.session_opened(session.version)
            self._outgoing = OutgoingRequests()
            self._gate = self._events.update_gate(ANONYMOUS, {}, session.client_info)
            self._events.subscribe(self._on_event)
        self._send(response)

    async def ask(self, request: JSONDict) -> JSONDict:
        """A question to the client, as a request on stdout; its answer comes on stdin."""
        return await self._outgoing.call(self._send, request)

    def _on_event(self, event: JSONDict) -> None:
        message = self._state.hear(event)
        if message is not None:
            send_heard(message, self._gate, self._send)

    def end(self) -> None:
        """The session is over: questions to the client fail, and it hears no more events."""
        session = self._state.session
        if session is not None and self._metrics is not None:
            self._metrics.session_closed(session.version, self._began, ended=True)
        self._events.unsubscribe(self._on_event)
        self._outgoing.close()
        self._state.end()
