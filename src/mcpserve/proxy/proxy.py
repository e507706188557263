"""A proxy: a plain :class:`~mcpserve.Server` whose registry forwards to another server.

:func:`proxy_server` (``Server.proxy``) makes the server and a :class:`Proxy`, which is its
lifespan. When the server starts, the proxy connects to the upstream
(:class:`~.upstream.Upstream`), fills the registry with forwarding entries
(:class:`~.mirror.Mirror`) and starts following the upstream's changes
(:class:`~.changes.Changes`); when it stops, parked calls end and the connection closes.
Everything else is the server's own: both eras downstream on every transport, middleware,
authentication, caching hints, tools of its own next to the forwarded ones.

Upstream notifications are sorted here, those of the shared connection and those of a
handshake-era client's own session (:mod:`.sessions`) alike: changes to
:class:`~.changes.Changes`, the rest (logs, a vendor's own) to the downstream request they
belong to; progress arrives by token, and never comes here.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

from .._types import JSONDict
from ..protocol.core import Auth
from ..server.context.context import Context
from ..server.middleware import CallNext
from .changes import Changes
from .exchange import Exchange
from .forwarding import Forwarder
from .host import H, ProxyHost, ServerClass
from .mirror import Mirror
from .sessions import SessionLink
from .upstream import Upstream, UpstreamTarget

if TYPE_CHECKING:
    import httpx2

logger = logging.getLogger("mcpserve.proxy")

_IGNORED = frozenset(
    {
        "notifications/progress",
        "notifications/subscriptions/acknowledged",
        "notifications/cancelled",
    }
)


class Proxy:
    """What makes a server a proxy: its upstream, and the parts that follow it."""

    def __init__(self, server: ProxyHost, upstream: Upstream) -> None:
        self.server = server
        self.upstream = upstream
        self.forwarder = Forwarder(upstream)
        self.mirror = Mirror(server.registry, self.forwarder, upstream, server.use_tasks)
        self.changes = Changes(upstream, self.mirror, server.notify_resource_updated)
        self._watching = False
        upstream.on_question = self.forwarder.answer
        upstream.on_notification = self.heard
        upstream.on_connected = self.connected
        self.forwarder.sessions.on_notification = self.heard_in_session

    @asynccontextmanager
    async def lifespan(self, server: ProxyHost) -> AsyncIterator[Proxy]:
        await self.upstream.connect()
        if server.settings.instructions is None:
            server.settings.instructions = self.upstream.instructions
        try:
            yield self
        finally:
            await self.changes.stop()
            self.forwarder.shutdown()
            await self.forwarder.sessions.close()
            await self.upstream.close()

    async def connected(self) -> None:
        """Every new connection: the lists again, the subscriptions again."""
        if "resources" in self.upstream.capabilities and not self._watching:
            self._watching = True  # before the entries: a server mounting this one copies
            self.server.middleware(
                self.watch_subscriptions,  # them with its middleware
                methods=SUBSCRIBING,
            )
        await self.mirror.load_all()
        await self.changes.started()

    async def heard(self, message: JSONDict) -> None:
        """A notification on the shared connection."""
        await self._sort(message, self.forwarder.exchange_of_message, None)

    async def heard_in_session(self, link: SessionLink, message: JSONDict) -> None:
        """A notification on a handshake-era client's own session: a list it changed is
        read from it when it is a process of its own (``.sessions``)."""
        await self._sort(message, link.exchange_of_message, link if link.own_process else None)

    async def _sort(
        self,
        message: JSONDict,
        exchange_of_message: Callable[[], Exchange | None],
        source: SessionLink | None,
    ) -> None:
        method = message.get("method")
        params = message.get("params")
        params = params if isinstance(params, dict) else {}
        if method in _IGNORED or await self.changes.heard(method, params, source):
            return
        exchange = exchange_of_message()
        if exchange is None:
            logger.debug(
                "Dropped %s from the upstream server %s: it names no request in flight",
                method,
                self.upstream.label,
            )
            return
        await exchange.relay(message)

    async def watch_subscriptions(self, ctx: Context, call_next: CallNext) -> JSONDict:
        """Middleware: before a client subscribes to URIs, the proxy subscribes upstream."""
        uris = subscribed_uris(ctx)
        if uris:
            await self.subscribe(uris, ctx.request.auth)
            session = ctx.request.session
            link = self.forwarder.sessions.held(session) if session is not None else None
            if link is not None and link.own_process:  # the client's calls run there
                await link.subscribe(uris)
        return await call_next()

    async def subscribe(self, uris: list[str], auth: Auth) -> None:
        """Have the upstream tell of updates to those of ``uris`` the proxy serves."""
        wanted = {"resourceSubscriptions": uris}
        served = self.server.subscriptions.honoured(wanted, auth)
        await self.changes.subscribe(served.get("resourceSubscriptions", ()))


#: The methods by which a client subscribes to resource updates, in either era.
SUBSCRIBING = ("subscriptions/listen", "resources/subscribe")


def subscribed_uris(ctx: Context) -> list[str]:
    """The URIs a ``subscriptions/listen`` or ``resources/subscribe`` request asks for."""
    method = ctx.method
    params = ctx.request.params
    asked: Any = None
    if method == "resources/subscribe":
        asked = [params.get("uri")]
    elif method == "subscriptions/listen":
        notifications = params.get("notifications")
        if isinstance(notifications, dict):
            asked = notifications.get("resourceSubscriptions")
    if not isinstance(asked, list):
        return []
    return [uri for uri in asked if isinstance(uri, str)]


def proxy_server(
    upstream: UpstreamTarget | Upstream,
    *,
    server_class: ServerClass[H],
    name: str = "proxy",
    headers: dict[str, str] | None = None,
    http_auth: httpx2.Auth | None = None,
    http_client: httpx2.AsyncClient | None = None,
    env: dict[str, str] | None = None,
    cwd: str | None = None,
    protocol_version: str | None = None,
    connect_timeout: float = 30.0,
    **server_options: Any,
) -> H:
    """A server (made with ``server_class``) serving ``upstream``'s tools, resources, templates,
    prompts and completions.

    ``upstream`` is a URL (Streamable HTTP), a command (a string, split as a shell would,
    or a list: stdio), a :class:`~mcpserve.Server` in this process, or an
    :class:`~.upstream.Upstream`. What reaches the upstream is configured here and nowhere
    else: ``headers`` and ``http_auth`` (an ``httpx2.Auth``) or ``http_client`` for HTTP,
    ``env`` and ``cwd`` for a command; a client's own token is never passed on.
    ``protocol_version`` pins the upstream's era instead of negotiating it. The other
    options are the :class:`~mcpserve.Server`'s own (``auth=`` protects the proxy itself).
    """
    if "lifespan" in server_options:
        raise TypeError("A proxy's lifespan is its upstream connection; it takes no other")
    if not isinstance(upstream, Upstream):
        upstream = Upstream(
            upstream,
            headers=headers,
            auth=http_auth,
            http_client=http_client,
            env=env,
            cwd=cwd,
            protocol_version=protocol_version,
            connect_timeout=connect_timeout,
        )
    server_options.setdefault("client_logging", True)  # the upstream's logs pass through
    server = server_class(name, **server_options)
    proxy = Proxy(server, upstream)
    server.lifespan = proxy.lifespan
    return server
