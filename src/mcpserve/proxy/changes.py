"""What changes upstream reaches the proxy's clients: list changes and resource updates.

The upstream tells of a change with a notification, whichever era it speaks: on its
``subscriptions/listen`` stream (2026-07-28) or its session (handshake era). The proxy
hears them all (:meth:`Changes.heard`):

* ``notifications/{tools,prompts,resources}/list_changed``: that list is read again
  (:class:`~.mirror.Mirror`), from the upstream's connection, or from the session that
  told of it when that is a process of its own (:mod:`.sessions`); what changed reaches
  the proxy's own listeners as its own list change. Reloads of one list never overlap: a
  change heard during a reload reloads once more after it, from where the last one came.
* ``notifications/resources/updated``: published on the proxy's subscription bus, so every
  client subscribed to the URI (or a parent of it) hears it, in either era.

Against a 2026-07-28 upstream the proxy holds one ``subscriptions/listen`` open, asking for
every list change and for the URIs its clients subscribed to; a new URI opens a listen
with the wider filter before the old one closes, so nothing is missed between the two.
Against a handshake-era upstream it sends ``resources/subscribe`` once per URI. A URI
stays subscribed upstream while the proxy runs (at most :data:`MAX_URIS`): a client that
leaves is not tracked, and updates nobody listens to any more cost one notification.

When the held listen ends without being closed (the upstream went away), the connection
counts as broken and is made again after a pause that doubles up to
:data:`MAX_BACKOFF_SECONDS`, reloading every list; so an upstream restarted while nobody
calls is found again, and its changes flow.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import logging
from collections.abc import Awaitable, Callable, Coroutine, Iterable
from typing import TYPE_CHECKING, Any, Protocol

from .._types import JSONDict
from ..protocol.errors import MCPError
from .upstream import Upstream

if TYPE_CHECKING:  # the client loads only for an upstream that needs one (upstream.py)
    from ..client.client import Client

logger = logging.getLogger("mcpserve.proxy")

_LIST_CHANGED = {
    "notifications/tools/list_changed": "tools",
    "notifications/prompts/list_changed": "prompts",
    "notifications/resources/list_changed": "resources",
}
#: Distinct URIs the proxy subscribes to upstream, at most.
MAX_URIS = 1024
MAX_BACKOFF_SECONDS = 30.0
_FIRST_BACKOFF_SECONDS = 0.5


def spawn(work: Coroutine[Any, Any, None], tasks: set[asyncio.Task[None]]) -> asyncio.Task[None]:
    """A background task that belongs to no downstream request (an empty context)."""
    task = asyncio.create_task(work, context=contextvars.Context())
    tasks.add(task)
    task.add_done_callback(tasks.discard)
    return task


class ListSource(Protocol):
    """Where a list is read: the upstream's connection, or a handshake-era session."""

    #: Whether it speaks the handshake era (its tools' output schemas come wrapped).
    legacy: bool

    async def request(self, method: str, params: JSONDict) -> Any: ...


class ListLoader(Protocol):
    """What reads a list again from the upstream (``mirror.py``'s ``Mirror``)."""

    async def load(self, kind: str, source: ListSource | None = None) -> None: ...


class Changes:
    """Upstream changes, carried to the proxy's registry and subscription bus."""

    def __init__(
        self, upstream: Upstream, mirror: ListLoader, publish: Callable[[str], Awaitable[None]]
    ) -> None:
        self.upstream = upstream
        self.mirror = mirror
        self.publish = publish
        #: The URIs subscribed upstream.
        self.uris: set[str] = set()
        self._reloading: dict[str, asyncio.Task[None]] = {}
        self._again: set[str] = set()
        #: Where each list is to be read next (absent: the upstream's connection).
        self._sources: dict[str, ListSource] = {}
        self._tasks: set[asyncio.Task[None]] = set()
        self._holder: asyncio.Task[None] | None = None
        self._backoff = _FIRST_BACKOFF_SECONDS
        self._stopping = False

    # -- what the upstream tells ------------------------------------------------------------

    async def heard(self, method: Any, params: JSONDict, source: ListSource | None = None) -> bool:
        """Act on a change notification (a list change read again from ``source``, if
        given); False for any other notification."""
        kind = _LIST_CHANGED.get(method) if isinstance(method, str) else None
        if kind is not None:
            self.reload(kind, source)
            return True
        if method == "notifications/resources/updated":
            uri = params.get("uri")
            if isinstance(uri, str):
                await self.publish(uri)
            return True
        return False

    def reload(self, kind: str, source: ListSource | None = None) -> None:
        """Read one list again (from ``source``, else the upstream's connection), now or
        right after the reload under way."""
        if source is None:
            self._sources.pop(kind, None)
        else:
            self._sources[kind] = source
        if kind in self._reloading:
            self._again.add(kind)
            return
        self._reloading[kind] = spawn(self._reload(kind), self._tasks)

    async def _reload(self, kind: str) -> None:
        try:
            while True:
                self._again.discard(kind)
                try:
                    await self.mirror.load(kind, self._sources.pop(kind, None))
                except MCPError as exc:
                    logger.warning(
                        "Reloading the %s of the upstream server %s failed: %s",
                        kind,
                        self.upstream.label,
                        exc.message,
                    )
                if kind not in self._again or self._stopping:
                    return
        finally:
            self._reloading.pop(kind, None)

    # -- subscriptions ----------------------------------------------------------------------

    async def subscribe(self, uris: Iterable[str]) -> None:
        """Have the upstream tell of updates to ``uris`` (those not asked for already)."""
        new = [uri for uri in dict.fromkeys(uris) if uri not in self.uris]
        room = MAX_URIS - len(self.uris)
        if len(new) > room:
            logger.warning(
                "The proxy subscribes to at most %d URIs upstream; %d left out",
                MAX_URIS,
                len(new) - room,
            )
            new = new[: max(room, 0)]
        if not new:
            return
        self.uris.update(new)
        client = self.upstream.client
        if client is None:
            return  # subscribed when it connects (started)
        if client.legacy:
            await self._subscribe_session(client, new)
        else:
            await self._listen(client)

    async def _subscribe_session(self, client: Client, uris: Iterable[str]) -> None:
        resources = client.server_capabilities.get("resources")
        if not isinstance(resources, dict) or not resources.get("subscribe"):
            return
        for uri in uris:
            try:
                await self.upstream.request("resources/subscribe", {"uri": uri})
            except MCPError as exc:
                logger.warning(
                    "The upstream server %s refused a subscription to %s: %s",
                    self.upstream.label,
                    uri,
                    exc.message,
                )

    # -- the held listen, and connecting again ---------------------------------------------

    async def started(self) -> None:
        """A connection was made: subscribe again, and hold a listen on 2026-07-28."""
        client = self.upstream.client
        if client is None or self._stopping:
            return
        if client.legacy:
            await self._subscribe_session(client, sorted(self.uris))
        else:
            await self._listen(client)

    async def _listen(self, client: Client) -> None:
        """Open the listen with the current filter, then close the one it replaces."""
        capabilities = client.server_capabilities
        wanted = {
            "tools_list_changed": "tools" in capabilities,
            "prompts_list_changed": "prompts" in capabilities,
            "resources_list_changed": "resources" in capabilities,
            "resources": sorted(self.uris) if "resources" in capabilities else [],
        }
        if not any(wanted.values()):
            return
        acknowledged = asyncio.get_running_loop().create_future()
        holder = spawn(self._hold(client, wanted, acknowledged), self._tasks)
        previous, self._holder = self._holder, holder
        with contextlib.suppress(Exception):
            async with asyncio.timeout(self.upstream.connect_timeout):
                await asyncio.wait({holder, acknowledged}, return_when=asyncio.FIRST_COMPLETED)
        if previous is not None:
            previous.cancel()

    async def _hold(self, client: Client, wanted: JSONDict, acknowledged: Any) -> None:
        reason = "the upstream ended it"
        try:
            async with client.listen(**wanted) as notes:
                acknowledged.set_result(True)
                self._backoff = _FIRST_BACKOFF_SECONDS
                async for _ in notes:  # each one is handled as the client routes it (heard)
                    pass
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            reason = str(exc) or type(exc).__name__
        if self._holder is not asyncio.current_task() or self._stopping:
            return  # replaced by a wider listen, or stopping: nothing is lost
        self._holder = None
        logger.warning(
            "The upstream server %s ended the proxy's subscription (%s); connecting again",
            self.upstream.label,
            reason,
        )
        self.upstream.broken(client, ConnectionError(reason))
        spawn(self._reconnect(), self._tasks)

    async def _reconnect(self) -> None:
        while not self._stopping and self.upstream.client is None:
            await asyncio.sleep(self._backoff)
            self._backoff = min(self._backoff * 2, MAX_BACKOFF_SECONDS)
            try:
                await self.upstream.connect()  # runs started() again, through on_connected
            except MCPError as exc:
                logger.warning("%s", exc.message)

    async def stop(self) -> None:
        self._stopping = True
        for task in list(self._tasks):
            task.cancel()
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)
