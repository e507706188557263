"""The endpoint a server hands its transports: what they may read of it, and nothing more.

Transports declare what they need (``transports/endpoint.py``, :class:`Endpoint`); this
module fills it from a :class:`~.server.Server`'s parts (:class:`ServerParts`, so that this
module need not import the server). Each member reads the server when asked, not when the
endpoint is built: the dispatcher is rebuilt when a middleware or a method is added, and the
lifespan comes and goes.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Callable, Collection, Mapping
from contextlib import AbstractAsyncContextManager
from typing import TYPE_CHECKING, Any, Protocol

from .._types import EventListener, JSONDict, Scope, UpdateGate
from ..protocol.core import Auth, Dispatcher
from ..protocol.handshake import Session

if TYPE_CHECKING:  # auth/ loads only for a server with auth=; the sealer when used
    from ..auth.mounting import IssuesTokens
    from ..auth.resource import ResourceServer
    from ..auth.tokens import TokenVerifier
    from ..metrics.recorder import Metrics
    from ..protocol.request_state import StateSealer


class ScopeDeclarations(Protocol):
    def declared_scopes(self) -> frozenset[str]: ...


class KeySharing(Protocol):
    @property
    def state_keys_shared(self) -> bool: ...

    def require_shared_state_keys(self, processes: int) -> None: ...

    @property
    def sealer(self) -> StateSealer: ...

    def resolve_metrics(self) -> Metrics | None: ...

    #: Until when background work may finish once the process stops (set by ``stopping``).
    stop_deadline: float | None


class SubscriptionParts(Protocol):
    """What the event stream reads of a server's subscriptions."""

    @property
    def sinks(self) -> set[EventListener]: ...

    @property
    def on_stop(self) -> set[Callable[[], None]]: ...

    async def publish_now(self, event: JSONDict) -> None: ...

    def end_all(self) -> None: ...

    def end_served_by(self, tasks: Collection[asyncio.Task[object]]) -> None: ...

    def update_gate(
        self, auth: Auth, headers: Mapping[str, str], client_info: JSONDict | None
    ) -> UpdateGate: ...


class HandshakeInitializer(Protocol):
    """The server's pipeline (``pipeline.py``): the dispatcher, and what starts a
    handshake-era session."""

    def dispatcher(self) -> Dispatcher[Any]: ...

    async def handshake_initialize(
        self, message: JSONDict, auth: Auth, http: Scope | None
    ) -> tuple[Session | None, JSONDict]: ...


class ServerParts(Protocol):
    """What the endpoint reads of a server (declared here: this module imports none of it)."""

    @property
    def name(self) -> str: ...

    @property
    def redis_url(self) -> str | None: ...

    @property
    def auth(self) -> ResourceServer | TokenVerifier | IssuesTokens | None: ...

    @property
    def registry(self) -> ScopeDeclarations: ...

    @property
    def runtime(self) -> KeySharing: ...

    @property
    def subscriptions(self) -> SubscriptionParts: ...

    @property
    def handshake(self) -> object | None: ...

    @property
    def pipeline(self) -> HandshakeInitializer: ...

    @property
    def lifespan(self) -> object | None: ...

    @property
    def running_count(self) -> int: ...

    def running(self) -> AbstractAsyncContextManager[object]: ...


class SubscriptionEvents:
    """A server's subscriptions (``subscriptions.py``), as the event stream transports hear."""

    __slots__ = ("_stops", "_subscriptions")

    def __init__(self, subscriptions: SubscriptionParts) -> None:
        self._subscriptions = subscriptions
        self._stops: dict[EventListener, Callable[[], None]] = {}

    def subscribe(self, listener: EventListener, on_stop: Callable[[], None] | None = None) -> None:
        self._subscriptions.sinks.add(listener)
        if on_stop is not None:
            self._stops[listener] = on_stop
            self._subscriptions.on_stop.add(on_stop)

    def unsubscribe(self, listener: EventListener) -> None:
        self._subscriptions.sinks.discard(listener)
        on_stop = self._stops.pop(listener, None)
        if on_stop is not None:
            self._subscriptions.on_stop.discard(on_stop)

    async def publish(self, event: JSONDict) -> None:
        await self._subscriptions.publish_now(event)

    def end_listens(self, served_by: Collection[asyncio.Task[object]] | None = None) -> None:
        if served_by is None:
            self._subscriptions.end_all()
        else:
            self._subscriptions.end_served_by(served_by)

    def update_gate(
        self, auth: Auth, headers: Mapping[str, str], client_info: JSONDict | None
    ) -> UpdateGate:
        return self._subscriptions.update_gate(auth, headers, client_info)


class HandshakeInitialize:
    """A server's handshake-era front: ``initialize``, through its middleware."""

    __slots__ = ("_server",)

    def __init__(self, server: ServerParts) -> None:
        self._server = server

    async def initialize(
        self, message: JSONDict, auth: Auth, http: Scope | None
    ) -> tuple[Session | None, JSONDict]:
        return await self._server.pipeline.handshake_initialize(message, auth, http)


class ServerEndpoint:
    """One server, as its transports see it (:class:`~mcpserve.transports.endpoint.Endpoint`)."""

    __slots__ = ("_dispatcher", "_server", "events", "handshake")

    def __init__(self, server: ServerParts) -> None:
        self._server = server
        self._dispatcher = server.pipeline.dispatcher  # read on every message
        self.events = SubscriptionEvents(server.subscriptions)
        self.handshake = HandshakeInitialize(server) if server.handshake is not None else None

    @property
    def name(self) -> str:
        return self._server.name

    @property
    def dispatcher(self) -> Dispatcher[Any]:
        return self._dispatcher()

    @property
    def redis_url(self) -> str | None:
        return self._server.redis_url

    @property
    def auth(self) -> ResourceServer | TokenVerifier | IssuesTokens | None:
        return self._server.auth

    def declared_scopes(self) -> frozenset[str]:
        return self._server.registry.declared_scopes()

    def stopping(self, grace_seconds: float | None) -> None:
        deadline = math.inf if grace_seconds is None else time.monotonic() + grace_seconds
        self._server.runtime.stop_deadline = deadline

    @property
    def has_lifespan(self) -> bool:
        return self._server.lifespan is not None

    def running(self) -> AbstractAsyncContextManager[object]:
        return self._server.running()

    @property
    def is_running(self) -> bool:
        return self._server.running_count > 0

    @property
    def state_keys_shared(self) -> bool:
        return self._server.runtime.state_keys_shared

    def require_shared_state_keys(self, processes: int) -> None:
        self._server.runtime.require_shared_state_keys(processes)

    def state_key_ring(self) -> list[tuple[str, bytes]]:
        return self._server.runtime.sealer.ring

    @property
    def metrics(self) -> Metrics | None:
        return self._server.runtime.resolve_metrics()
