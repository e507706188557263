"""What a transport needs of the server it serves: the :class:`Endpoint`.

Transports sit above ``server/`` and never import it. The server builds an endpoint
(``Server.endpoint()``, in ``server/endpoint.py``) and hands it to the serving entry points
(:func:`~.stdio.serve_stdio`, :func:`~.serve.build_http_app`, :class:`~.http.HTTPApp`), which
read only what is declared here. Those entry points also take anything with an
``endpoint()`` method (a ``Server``), through :func:`endpoint_of`, so that
``serve_stdio(server)`` keeps working.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Collection, Mapping
from contextlib import AbstractAsyncContextManager
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from .._types import EventListener, JSONDict, Scope, UpdateGate
from ..protocol.core import Auth, Dispatcher
from ..protocol.handshake import Session

if TYPE_CHECKING:  # auth/ loads only for a server with auth=; metrics/ with metrics
    from ..auth.mounting import IssuesTokens
    from ..auth.resource import ResourceServer
    from ..auth.tokens import TokenVerifier
    from ..metrics.recorder import Metrics


class HandshakeFront(Protocol):
    """The server's side of the handshake era: it answers ``initialize``."""

    async def initialize(
        self, message: JSONDict, auth: Auth, http: Scope | None
    ) -> tuple[Session | None, JSONDict]:
        """The new session (None when refused) and the ``initialize`` response."""
        ...


class ServerEvents(Protocol):
    """The server's event stream: changes that ``subscriptions/listen`` and handshake-era
    sessions hear, from every process on the subscription bus."""

    def subscribe(self, listener: EventListener, on_stop: Callable[[], None] | None = None) -> None:
        """``listener`` hears every event; ``on_stop`` is called when the server ends its
        streams (it is stopping)."""
        ...

    def unsubscribe(self, listener: EventListener) -> None:
        """``listener`` (and its ``on_stop``) hears no more."""
        ...

    async def publish(self, event: JSONDict) -> None:
        """Deliver ``event`` here and in every other process, before returning."""
        ...

    def end_listens(self, served_by: Collection[asyncio.Task[object]] | None = None) -> None:
        """End open ``subscriptions/listen`` requests gracefully, each with its final result:
        those ``served_by`` these tasks, or all (and call every ``on_stop``)."""
        ...

    def update_gate(
        self, auth: Auth, headers: Mapping[str, str], client_info: JSONDict | None
    ) -> UpdateGate:
        """Whether the subscriber this request opens hears of an update of a URI (the
        server's visibility rule asked with this caller): a bool, or an awaitable of one."""
        ...


class Endpoint(Protocol):
    """Everything a transport reads of the server it serves."""

    @property
    def name(self) -> str:
        """The server's name (logs; the namespace of its shared sessions)."""
        ...

    @property
    def dispatcher(self) -> Dispatcher[Any]:
        """The request pipeline, as it is now (read it per message: it is rebuilt when a
        middleware or method is added)."""
        ...

    @property
    def handshake(self) -> HandshakeFront | None:
        """The handshake-era front, or None when the server serves 2026-07-28 only."""
        ...

    @property
    def events(self) -> ServerEvents: ...

    @property
    def redis_url(self) -> str | None:
        """The Redis every process of the server shares (handshake-era sessions), if any."""
        ...

    @property
    def auth(self) -> ResourceServer | TokenVerifier | IssuesTokens | None:
        """The server's ``auth=``: what protects its HTTP endpoint."""
        ...

    def declared_scopes(self) -> frozenset[str]:
        """The scopes the server's entries declare, as they are now."""
        ...

    @property
    def has_lifespan(self) -> bool:
        """Whether the server has a lifespan to run before serving."""
        ...

    def running(self) -> AbstractAsyncContextManager[object]:
        """The lifespan, run once however many transports enter it."""
        ...

    @property
    def is_running(self) -> bool:
        """Whether someone has entered :meth:`running` and not left it."""
        ...

    @property
    def state_keys_shared(self) -> bool:
        """Whether ``requestState`` is sealed with keys every process shares."""
        ...

    def require_shared_state_keys(self, processes: int) -> None:
        """Raise ``RuntimeError`` if ``processes`` processes could not read each other's
        ``requestState``."""
        ...

    def stopping(self, grace_seconds: float | None) -> None:
        """The process is stopping (a drain is over): what the server runs in the
        background, such as tasks, may take ``grace_seconds`` more to finish (None: as long
        as it takes) before the lifespan's end fails it."""
        ...

    def state_key_ring(self) -> list[tuple[str, bytes]]:
        """The ``requestState`` key ring, newest first (an authorization server derives
        its keys from it, so every process shares them)."""
        ...

    @property
    def metrics(self) -> Metrics | None:
        """Where the server records measurements (None: nowhere): transports count
        handshake-era sessions there, and ``/metrics`` reads its Prometheus sink."""
        ...


@runtime_checkable
class Servable(Protocol):
    """Anything that builds an endpoint: a ``Server``."""

    def endpoint(self) -> Endpoint: ...


def endpoint_of(served: Endpoint | Servable) -> Endpoint:
    """The endpoint itself, or the one ``served`` builds."""
    if isinstance(served, Servable):
        return served.endpoint()
    return served
