"""Handshake-era clients of a 2026-07-28 upstream: one upstream session for each.

A server that speaks both eras may ask its questions only in the handshake era: a request
of its own (``elicitation/create``, ``sampling/createMessage``, ``roots/list``) needs a
session to travel on, and on the stateless 2026-07-28 wire it has none (the official
Python SDK's ``ctx.elicit`` fails there). So when a handshake-era client calls through the
proxy and the proxy's own connection speaks 2026-07-28, the call goes upstream on a
handshake-era session opened for that client's session alone (:class:`SessionLink`), at
the client's protocol version and with the client's own question capabilities:

* it is opened by the client's first forwarded call (``tools/call``, ``prompts/get``,
  ``resources/read``); a client that only lists costs nothing. Over HTTP it is a session
  of the same server; over stdio, a process of its own, as the client would start itself;
* everything the upstream sends on it belongs to that client: a question is put to the
  client through the call it was read for (over HTTP, the call's own stream) or else
  through any call of the session in flight, all of them the same client's; a log or a
  vendor notification is passed on the same way; progress is matched by its token;
* it ends when the client's session does (the downstream
  :class:`~mcpserve.protocol.handshake.Session` is gone), when the proxy stops, or when
  :attr:`~.upstream.Upstream.max_sessions` are open and a new one is needed (the least
  recently used with no call in flight is closed; its client's next call opens another);
* an upstream that refuses the handshake (it serves 2026-07-28 only) is remembered until
  the proxy connects to it again, and its handshake-era clients are served as before:
  each ``input_required`` round asked of the client over its session
  (:mod:`.forwarding`).

A list change the upstream announces on a link is read again from the upstream's own
connection when it is a URL (one server behind every session), and from the link when it
is a command: that process is the one that changed (``docs/decisions.md``, "Handshake-era
clients through a proxy").
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import weakref
from collections.abc import Awaitable, Callable, Iterable
from typing import TYPE_CHECKING, Any

from .._types import JSONDict
from ..client.connections import next_id
from ..protocol import constants as c
from ..protocol.errors import MCPError
from ..protocol.handshake import Session
from ..server.context.context import Context
from .changes import spawn
from .exchange import CURRENT, Exchange, ask_session
from .upstream import ProgressHandler, Upstream, UpstreamUnavailable, is_url, upstream_error
from .wire import UpstreamError, can_answer

if TYPE_CHECKING:  # the client loads only for an upstream that needs one (upstream.py)
    from ..client.client import Client

logger = logging.getLogger("mcpserve.proxy")

#: The client's capabilities a link declares upstream: the questions the proxy relays.
#: ``roots.listChanged`` is left out: the client's notification is not carried upstream.
_QUESTION_CAPABILITIES = ("elicitation", "sampling")

LinkNotificationHandler = Callable[["SessionLink", JSONDict], Awaitable[None]]


def question_capabilities(capabilities: JSONDict) -> JSONDict:
    """What a link declares for a client that declared ``capabilities``."""
    kept = {key: capabilities[key] for key in _QUESTION_CAPABILITIES if key in capabilities}
    if "roots" in capabilities:
        kept["roots"] = {}
    return kept


class SessionLink:
    """One handshake-era session upstream, for one downstream session."""

    #: It speaks the handshake era (a :class:`~.mirror.ListSource` that says so).
    legacy = True

    def __init__(self, links: SessionLinks, owner: weakref.ref[Session]) -> None:
        self.links = links
        #: The downstream session served (weak: its end closes this link).
        self.owner = owner
        self.client: Client | None = None
        #: Done when the opening ended: True if the link is open.
        self.opened: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
        #: Why it could not be opened (the upstream is unreachable), if so.
        self.failure: str | None = None
        #: No longer used: its session ended, or room was made.
        self.forgotten = False
        #: The downstream session's calls in flight on this link, oldest first.
        self.calls: dict[Exchange, None] = {}
        self.last_used = time.monotonic()
        #: The URIs subscribed on it.
        self.uris: set[str] = set()

    @property
    def own_process(self) -> bool:
        """Whether the link is a process of its own (a command), not a session of the one
        server every connection reaches (a URL)."""
        return not is_url(self.links.upstream.target)

    def exchange_of_message(self) -> Exchange | None:
        """The call an upstream message read on this link belongs to: the one in whose task
        it was read, else the oldest in flight (every call here is the same client's)."""
        current = CURRENT.get()
        if current is not None and current in self.calls:
            return current
        return next((call for call in self.calls if call.live), None)

    async def request(
        self, method: str, params: JSONDict, *, on_progress: ProgressHandler | None = None
    ) -> Any:
        """Send one request on the session; its raw result (as :meth:`Upstream.request`)."""
        client = self.client
        if client is None:
            raise self._unavailable("it was closed")
        token = None
        if on_progress is not None:
            token = client.router.track_progress(on_progress, None)
            params = {**params, "_meta": {**params.get("_meta", {}), "progressToken": token}}
        message = {"jsonrpc": "2.0", "id": next_id(), "method": method, "params": params}
        self.last_used = time.monotonic()
        try:
            response = await client.connection.request(message)
        except (ConnectionError, OSError) as exc:
            self.links.forget(self)
            raise self._unavailable(str(exc)[:300] or type(exc).__name__) from None
        finally:
            if token is not None:
                client.router.forget_progress(token)
            self.last_used = time.monotonic()
        if response.get("error") is not None:
            raise upstream_error(response["error"])
        return response.get("result")

    async def subscribe(self, uris: Iterable[str]) -> None:
        """Subscribe to updates of ``uris`` (those not subscribed yet) on this session."""
        client = self.client
        resources = client.server_capabilities.get("resources") if client is not None else None
        if not isinstance(resources, dict) or not resources.get("subscribe"):
            return
        for uri in uris:
            if uri in self.uris:
                continue
            self.uris.add(uri)
            try:
                await self.request("resources/subscribe", {"uri": uri})
            except UpstreamUnavailable:
                return  # the link is gone, and its subscriptions with it
            except MCPError as exc:
                logger.warning(
                    "The upstream server %s refused a subscription to %s: %s",
                    self.links.upstream.label,
                    uri,
                    exc.message,
                )

    def _unavailable(self, reason: str) -> UpstreamUnavailable:
        return UpstreamUnavailable(
            f"The session the proxy opened for this client with the "
            f"upstream server {self.links.upstream.label} ended "
            f"({reason}); the next request opens another"
        )

    async def question(self, method: str, params: JSONDict) -> JSONDict:
        """The client's answer to a question the upstream asked on this link."""
        exchange = self.exchange_of_message()
        if exchange is None:
            raise MCPError(
                f"The proxy has no request of this client in flight to ask {method} on",
                code=c.INTERNAL_ERROR,
            )
        ctx = exchange.ctx
        if not can_answer(method, params, ctx.client_capabilities):
            raise MCPError(f"The client does not support {method}", code=c.METHOD_NOT_FOUND)
        # Asked as the upstream asked it: the link speaks the client's own version.
        return await ask_session(ctx, {"method": method, "params": params})

    async def notification(self, message: JSONDict) -> None:
        await self.links.on_notification(self, message)

    async def close(self) -> None:
        client, self.client = self.client, None
        if client is not None:
            with contextlib.suppress(Exception):
                async with asyncio.timeout(10):
                    await client.__aexit__(None, None, None)


async def _nothing(link: SessionLink, message: JSONDict) -> None:
    return None


class SessionLinks:
    """The links of one proxy, by the downstream session they serve."""

    def __init__(self, upstream: Upstream) -> None:
        self.upstream = upstream
        #: Set by the proxy: where a notification read on a link goes.
        self.on_notification: LinkNotificationHandler = _nothing
        self._links: dict[int, SessionLink] = {}
        #: ``upstream.connects`` when the upstream refused the handshake, if it did.
        self._refused_at: int | None = None
        self._opening: set[asyncio.Task[None]] = set()
        self._closing: set[asyncio.Task[None]] = set()

    def __len__(self) -> int:
        return len(self._links)

    def open_links(self) -> list[SessionLink]:
        """The links open now (opened, not yet closed)."""
        return [link for link in self._links.values() if link.client is not None]

    async def link_for(self, ctx: Context) -> SessionLink | None:
        """The link of ``ctx``'s session, opened now if it has none; None when the
        upstream has no handshake era to open one in."""
        session = ctx.request.session
        if session is None or not self.upstream.opens_sessions:
            return None
        if self._refused_at == self.upstream.connects:
            return None
        link = self._links.get(id(session))
        if link is not None and link.owner() is not session:
            self.forget(link)  # a session gone, whose address a new one took before we heard
            link = None
        if link is None:
            link = self._start(ctx, session)
        opened = link.opened
        if not (opened.result() if opened.done() else await asyncio.shield(opened)):
            if link.failure is not None:
                raise UpstreamUnavailable(link.failure)
            return None
        link.last_used = time.monotonic()
        return link

    def _start(self, ctx: Context, session: Session) -> SessionLink:
        self._make_room()
        key = id(session)
        loop = asyncio.get_running_loop()

        def ended(_: Any) -> None:  # may run in any thread: the session was dropped there
            with contextlib.suppress(RuntimeError):  # the loop is closed: nothing to close
                loop.call_soon_threadsafe(self._ended, key, link)

        link = SessionLink(self, weakref.ref(session, ended))
        self._links[key] = link
        # A process of its own holds what the client subscribed to: it is asked there too.
        uris = sorted(session.resource_subscriptions) if link.own_process else []
        # A task of no downstream request's: the link outlives the call that opened it.
        spawn(self._open(link, ctx.protocol_version, ctx.client_capabilities, uris), self._opening)
        return link

    async def _open(
        self, link: SessionLink, version: str, capabilities: JSONDict, uris: list[str]
    ) -> None:
        """Open ``link``, then settle ``link.opened`` whatever happened."""
        try:
            link.client = await self.upstream.open_session(
                version, question_capabilities(capabilities), link.question, link.notification
            )
            if uris:
                await link.subscribe(uris)
        except UpstreamUnavailable as exc:
            link.failure = exc.message
        except MCPError as exc:  # the handshake refused: 2026-07-28 only
            self._refused_at = self.upstream.connects
            logger.info(
                "The upstream server %s does not open handshake-era sessions (%s); its "
                "handshake-era clients answer its input_required rounds instead",
                self.upstream.label,
                exc.message[:200],
            )
        except asyncio.CancelledError:
            link.failure = (
                f"The proxy stopped before its session with the upstream server "
                f"{self.upstream.label} was open"
            )
            raise
        except Exception as exc:  # a bug, or something the client did not expect: not fatal
            logger.exception(
                "Opening a session with the upstream server %s failed", self.upstream.label
            )
            reason = str(exc)[:300] or type(exc).__name__
            link.failure = (
                f"Could not open a session with the upstream server {self.upstream.label}: {reason}"
            )
        finally:
            opened = link.client is not None
            if not opened or link.forgotten:  # its session ended while it opened
                self.forget(link)
            link.opened.set_result(opened and not link.forgotten)

    def held(self, session: Session) -> SessionLink | None:
        """The open link of ``session``, if it has one."""
        link = self._links.get(id(session))
        if link is None or link.owner() is not session or link.client is None:
            return None
        return link

    def _make_room(self) -> None:
        """Close the least recently used idle link when :attr:`max_sessions` are open."""
        limit = self.upstream.max_sessions
        if len(self._links) < limit:
            return
        idle = [link for link in self._links.values() if not link.calls and link.opened.done()]
        if not idle:
            raise UpstreamError(
                f"The proxy holds as many handshake-era sessions with the "
                f"upstream server {self.upstream.label} as it may ({limit}), "
                "every one in use; try again when a call ends"
            )
        self.forget(min(idle, key=lambda link: link.last_used))

    def forget(self, link: SessionLink) -> None:
        """Stop using ``link`` and close it on the side."""
        link.forgotten = True
        for key, held in list(self._links.items()):
            if held is link:
                del self._links[key]
        if link.client is not None:
            spawn(link.close(), self._closing)

    def _ended(self, key: int, link: SessionLink) -> None:
        """The downstream session of ``link`` is gone."""
        if self._links.get(key) is link:
            self.forget(link)

    async def close(self) -> None:
        """The proxy stops: links being opened are given up, every link closes."""
        for task in list(self._opening):
            task.cancel()
        if self._opening:
            await asyncio.gather(*self._opening, return_exceptions=True)
        for link in list(self._links.values()):
            self.forget(link)
        if self._closing:
            await asyncio.gather(*self._closing, return_exceptions=True)
