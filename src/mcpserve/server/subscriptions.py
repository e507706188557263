"""``subscriptions/listen``: long-lived notification streams, fed by the subscription bus.

A listener is one open ``subscriptions/listen`` request. It holds the filter the server
agreed to honour (echoed in the acknowledgement) and a bounded queue. Events arrive from
the bus on the event loop and are fanned out with ``put``s that never wait, so a slow
client cannot hold up the publisher or other listeners; a listener whose queue is full is
ended gracefully instead (the client will listen again) and counted in ``overflows``.

Nothing outlives the request: closing the stream (HTTP), a
``notifications/cancelled`` (stdio) or the server shutting down ends it. On shutdown each
listener gets its final ``subscriptions/listen`` result.

``resourceSubscriptions`` match a ``notifications/resources/updated`` URI exactly, or as
a parent: subscribing to ``file:///project`` also reports ``file:///project/a.txt``.
URIs that no resource or template serves, and that are no parent of one, are left out of
the acknowledgement (``docs/decisions.md``, "Unknown URIs in resourceSubscriptions").

Under a visibility rule, what a subscriber hears is gated too (:class:`VisibleUpdates`): a
parent URI covers resources the rule may hide from this caller, so each update is put to
the rule, with the caller as the subscribing request showed it, before it is sent (a
listen stream here; a handshake-era session's stream in the transports, which ask for
their gate with :meth:`Subscriptions.update_gate`).
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import Awaitable, Callable, Collection, Mapping
from contextlib import AsyncExitStack
from typing import Any

from .._types import Event, EventListener, JSONDict, UpdateGate
from ..metrics.names import LISTEN_STREAMS
from ..protocol import constants as c
from ..protocol.core import ANONYMOUS, Auth
from ..protocol.errors import InvalidParams, InvalidRequest
from ..protocol.jsonrpc import RequestId
from .bus import SubscriptionBus
from .context.context import Context
from .entries.catalogue import Caller, Component, ComponentKind, then
from .registry import Registry

logger = logging.getLogger("mcpserve.subscriptions")

_LIST_FILTERS = {
    "tools": ("toolsListChanged", "notifications/tools/list_changed"),
    "prompts": ("promptsListChanged", "notifications/prompts/list_changed"),
    "resources": ("resourcesListChanged", "notifications/resources/list_changed"),
}


class Listener:
    """One open subscription: its id, honoured filter and pending notifications."""

    __slots__ = (
        "_wake",
        "ended",
        "filter",
        "id",
        "pending",
        "queue_size",
        "task",
        "task_ids",
        "uris",
    )

    def __init__(
        self,
        listen_id: RequestId,
        honoured: dict[str, Any],
        queue_size: int,
        task: asyncio.Task[Any] | None = None,
    ) -> None:
        self.id = listen_id
        #: The task serving the listen request: tells whose listener this is.
        self.task = task
        self.filter = honoured
        self.uris: tuple[str, ...] = tuple(honoured.get("resourceSubscriptions", ()))
        self.task_ids: frozenset[str] = frozenset(honoured.get("taskIds", ()))
        self.pending: deque[JSONDict] = deque()
        self.queue_size = queue_size
        self.ended = False
        self._wake = asyncio.Event()

    def wants(self, event: Event) -> str | None:
        """The notification method this listener takes ``event`` as, if any."""
        kind = event.get("type")
        if kind in _LIST_FILTERS:
            key, method = _LIST_FILTERS[kind]
            return method if self.filter.get(key) else None
        if kind == "updated":
            uri = event.get("uri")
            if isinstance(uri, str) and any(_covers(sub, uri) for sub in self.uris):
                return "notifications/resources/updated"
        elif kind == "task" and event.get("taskId") in self.task_ids:
            return "notifications/tasks"
        return None

    def offer(self, method: str, event: Event) -> bool:
        """Queue a notification; False when the queue is full."""
        if len(self.pending) >= self.queue_size:
            return False
        params: JSONDict = {"_meta": {c.META_SUBSCRIPTION_ID: self.id}}
        if method == "notifications/resources/updated":
            params["uri"] = event["uri"]
        elif method == "notifications/tasks":  # the whole task, as tasks/get shows it
            params.update(event["task"])
        self.pending.append({"jsonrpc": "2.0", "method": method, "params": params})
        self._wake.set()
        return True

    def end(self) -> None:
        self.ended = True
        self._wake.set()

    async def next(self) -> JSONDict | None:
        """The next notification, or None once the subscription is ending."""
        while not self.pending:
            if self.ended:
                return None
            self._wake.clear()
            await self._wake.wait()
        return self.pending.popleft()


class VisibleUpdates:
    """Whether one subscriber hears of an update of ``uri``: a bool, or an awaitable of one
    for a rule that is not a plain function. Everything passes while the server has no
    visibility rule, and so does a URI no resource or template serves (nothing to hide)."""

    __slots__ = ("caller", "registry")

    def __init__(self, registry: Registry, caller: Caller) -> None:
        self.registry = registry
        self.caller = caller

    def __call__(self, uri: str) -> bool | Awaitable[bool]:
        rule = self.registry.visibility
        if rule is None:
            return True
        found = self.registry.find_resource(uri)
        if found is None:
            return True
        kind: ComponentKind = "resource" if found[1] is None else "template"
        shown: bool | Awaitable[bool] = then(
            rule.shows(self.caller, [Component.of(kind, found[0].wire)]), _first
        )
        return shown


def _first(flags: list[bool]) -> bool:
    return flags[0]


def _covers(subscribed: str, uri: str) -> bool:
    return uri == subscribed or uri.startswith(subscribed.rstrip("/") + "/")


class Subscriptions:
    """The listeners of one server process, and its connection to the bus."""

    def __init__(self, registry: Registry, bus: SubscriptionBus, *, queue_size: int = 256) -> None:
        self.registry = registry
        self.bus = bus
        self.queue_size = queue_size
        self.listeners: set[Listener] = set()
        #: Handshake-era sessions hear every event and pick what concerns them.
        self.sinks: set[EventListener] = set()
        #: Called by :meth:`end_all`: whoever keeps streams open that never end by themselves.
        self.on_stop: set[Callable[[], None]] = set()
        self.overflows = 0
        #: Which of the requested task ids a caller may hear of (set with the tasks
        #: extension, ``extensions/tasks/methods.py``): ``await task_ids(ctx, requested)``.
        self.task_ids: Callable[[Context, list[Any]], Awaitable[list[str]]] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._start_lock = asyncio.Lock()
        #: Set by end_all/shutdown: a listen that starts now ends at once, so shutdown
        #: cannot miss a listener that registers a moment later.
        self._closing = False
        #: Events on their way to the bus, in the order they were published; one task
        #: drains it, so a list change and a resource update made back to back reach
        #: listeners in that order. A future, when set, is resolved once the bus took it.
        self._outbox: deque[tuple[Event, asyncio.Future[None] | None]] = deque()
        self._drainer: asyncio.Task[None] | None = None
        #: Hear each event this process publishes, on the event loop, before the bus
        #: carries it (a response cache drops what the change made stale).
        self.on_publish: list[EventListener] = []

    # -- lifecycle ----------------------------------------------------------------------

    async def run_in(self, stack: AsyncExitStack) -> None:
        """Start now, and shut down when ``stack`` closes (the server's lifecycle)."""
        await self.start()
        stack.push_async_callback(self.shutdown)

    async def start(self) -> None:
        loop = asyncio.get_running_loop()
        async with self._start_lock:
            if self._loop is loop:
                return
            if self._loop is not None:  # served before on a loop that is gone (no lifespan)
                await self.bus.stop()
                self._outbox.clear()  # its drainer died with that loop
                self._drainer = None
            await self.bus.start(self.deliver)
            self._loop = loop
            self._closing = False

    async def shutdown(self) -> None:
        """Deliver what was published, end every listener gracefully (each gets its final
        result), then stop the bus."""
        if self._drainer is not None:
            await asyncio.gather(self._drainer, return_exceptions=True)
        self._closing = True
        for listener in list(self.listeners):
            listener.end()
        if self._loop is not None:
            self._loop = None
            await self.bus.stop()

    def end_all(self) -> None:
        """End every listener gracefully, keeping the bus (the server is stopping); the
        ``on_stop`` callbacks end the streams of other kinds (handshake-era GET streams)."""
        self._closing = True
        for listener in list(self.listeners):
            listener.end()
        for stop in list(self.on_stop):
            stop()

    def end_served_by(self, tasks: Collection[asyncio.Task[object]]) -> None:
        """End gracefully the listeners these request tasks serve (their client left)."""
        for listener in list(self.listeners):
            if listener.task is not None and listener.task in tasks:
                listener.end()

    # -- publishing and delivering --------------------------------------------------------

    def publish(self, event: Event) -> None:
        """Send ``event`` through the bus; callable from any thread, a no-op before start."""
        loop = self._loop
        if loop is None or loop.is_closed():
            return
        if _running_loop() is loop:
            self._enqueue(event, None)
        else:
            loop.call_soon_threadsafe(self._enqueue, event, None)

    async def publish_now(self, event: Event) -> None:
        """Publish from the event loop and wait until the bus has taken the event."""
        loop = self._loop
        if loop is None:
            return
        taken = loop.create_future()
        self._enqueue(event, taken)
        await taken

    def _enqueue(self, event: Event, taken: asyncio.Future[None] | None) -> None:
        if self._loop is None:  # stopped since (a publish from another thread, late)
            return
        for hear in self.on_publish:
            hear(event)
        self._outbox.append((event, taken))
        if self._drainer is None or self._drainer.done():
            self._drainer = self._loop.create_task(self._drain())

    async def _drain(self) -> None:
        while self._outbox:
            event, taken = self._outbox.popleft()
            try:
                await self.bus.publish(event)
            except Exception as exc:
                if taken is None:
                    logger.error("Publishing %s failed", event.get("type"), exc_info=exc)
                elif not taken.done():
                    taken.set_exception(exc)
                continue
            if taken is not None and not taken.done():
                taken.set_result(None)

    def deliver(self, event: Event) -> None:
        """Fan ``event`` out to matching listeners; runs on the event loop."""
        for sink in list(self.sinks):
            sink(event)
        for listener in list(self.listeners):
            method = listener.wants(event)
            if method is None or listener.ended:
                continue
            if not listener.offer(method, event):
                self.overflows += 1
                logger.warning(
                    "Subscription %r fell %d notifications behind; ending it "
                    "(the client will listen again)",
                    listener.id,
                    listener.queue_size,
                )
                listener.end()

    def update_gate(
        self, auth: Auth, headers: Mapping[str, str], client_info: JSONDict | None
    ) -> UpdateGate:
        """The gate of a subscriber known by its request's auth and headers (a handshake-era
        session's stream, which is opened and heard in the transports)."""
        return VisibleUpdates(
            self.registry, Caller(auth.principal, auth.scopes, client_info, headers)
        )

    # -- the method ---------------------------------------------------------------------

    def honoured(self, requested: dict[str, Any], auth: Auth = ANONYMOUS) -> dict[str, Any]:
        """The part of a requested filter this server can deliver (echoed in the ack): a
        resource the caller lacks the scopes to read is left out, as an unknown one is."""
        registry = self.registry
        offered = {
            "toolsListChanged": bool(registry.tools),
            "promptsListChanged": bool(registry.prompts),
            "resourcesListChanged": registry.offers_resources,
        }
        honoured: dict[str, Any] = {
            key: True for key, available in offered.items() if available and requested.get(key)
        }
        uris = requested.get("resourceSubscriptions")
        if isinstance(uris, list):
            known = [uri for uri in uris if isinstance(uri, str) and _served(registry, uri, auth)]
            if known:
                honoured["resourceSubscriptions"] = known
        return honoured

    async def shown_uris(self, ctx: Context, uris: list[str]) -> list[str]:
        """The subscribed URIs a visibility rule lets the caller hear of: a resource it
        hides is left out as an unknown URI is, and a parent stays only while the rule shows
        the caller one of the resources below it."""
        rule = self.registry.visibility
        assert rule is not None
        registry = self.registry
        shown: list[str] = []
        for uri in uris:
            found = registry.find_resource(uri)
            if found is not None:
                kind: ComponentKind = "resource" if found[1] is None else "template"
                if await _settled(rule.allows(ctx, kind, found[0].wire)):
                    shown.append(uri)
                continue
            prefix = uri.rstrip("/") + "/"
            off = registry.disabled["resources"]
            below: list[tuple[ComponentKind, JSONDict]] = [
                *(("resource", r.wire) for k, r in registry.resources.items() if k not in off),
                *(("template", t.wire) for k, t in registry.templates.items() if k not in off),
            ]
            for child_kind, wire in below:
                key = str(wire.get("uri") or wire.get("uriTemplate") or "")
                if key.startswith(prefix) and await _settled(rule.allows(ctx, child_kind, wire)):
                    shown.append(uri)
                    break
        return shown

    async def listen(self, ctx: Context) -> JSONDict:
        """Serve one ``subscriptions/listen`` request until it ends."""
        requested = ctx.request.params.get("notifications")
        if not isinstance(requested, dict):
            raise InvalidParams('Invalid params: "notifications" must be an object')
        send = ctx.request.send
        if send is None:
            raise InvalidRequest(
                "subscriptions/listen needs a stream: send Accept: text/event-stream"
            )
        await self.start()
        honoured = self.honoured(requested, ctx.request.auth)
        if self.registry.visibility is not None and "resourceSubscriptions" in honoured:
            shown = await self.shown_uris(ctx, honoured.pop("resourceSubscriptions"))
            if shown:
                honoured["resourceSubscriptions"] = shown
        task_ids = requested.get("taskIds")
        if task_ids is not None and self.task_ids is not None:
            if not isinstance(task_ids, list):
                raise InvalidParams('Invalid params: "taskIds" must be an array')
            honoured_ids = await self.task_ids(ctx, task_ids)
            if honoured_ids:
                honoured["taskIds"] = honoured_ids
        listener = Listener(ctx.request.id, honoured, self.queue_size, asyncio.current_task())
        self.listeners.add(listener)
        metrics = ctx.runtime.metrics
        if metrics is not None:
            metrics.record(LISTEN_STREAMS, 1)
        if self._closing:
            listener.end()  # the server is stopping: acknowledge, then end at once
        subscription = {c.META_SUBSCRIPTION_ID: listener.id}
        gate = VisibleUpdates(self.registry, Caller.of(ctx)) if listener.uris else None
        try:
            await send(
                {
                    "jsonrpc": "2.0",
                    "method": "notifications/subscriptions/acknowledged",
                    "params": {"_meta": subscription, "notifications": honoured},
                }
            )
            while (message := await listener.next()) is not None:
                if gate is None or await _gated_heard(gate, message):
                    await send(message)
        finally:
            self.listeners.discard(listener)
            if metrics is not None:
                metrics.record(LISTEN_STREAMS, -1)
        return {"_meta": dict(subscription)}


async def _gated_heard(gate: VisibleUpdates, message: JSONDict) -> bool:
    """Whether a listener's client hears ``message``: an update only when the gate shows it."""
    if message["method"] != "notifications/resources/updated":
        return True
    return bool(await _settled(gate(message["params"]["uri"])))


def _served(registry: Registry, uri: str, auth: Auth) -> bool:
    """Whether a subscription to ``uri`` can ever fire for this caller: a resource it may
    read serves it, or it is the parent of a resource (an update of a sub-resource reaches
    parent subscriptions)."""
    found = registry.find_resource(uri)
    if found is not None:
        return not auth.missing(found[0].scopes)
    prefix = uri.rstrip("/") + "/"
    off = registry.disabled["resources"]
    return any(
        key.startswith(prefix)
        for key in (*registry.resources, *registry.templates)
        if key not in off
    )


async def _settled(value: Any) -> Any:
    return await value if hasattr(type(value), "__await__") else value


def _running_loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None
