"""Where a :class:`~mcpserve.Client` sends each notification the server sends it.

Every connection hands every notification to one :class:`Router`, in the order the server
sent them. The router gives it, in this order:

* ``notifications/progress`` to the ``on_progress`` of the request whose progress token it
  names (a request given ``on_progress`` gets a token of its own);
* ``notifications/message`` to the client's ``on_log``;
* a notification carrying a subscription id (``io.modelcontextprotocol/subscriptionId``)
  to the :class:`~.listen.Subscription` it belongs to; in the handshake era, where change
  notifications carry no id, to every subscription whose filter wants it;
* and then, whatever it was, to ``on_notification``, which hears everything.

Callbacks take the three handler shapes (:mod:`.handlers`): ``on_progress(progress, total,
message)`` and ``on_log(level, data, logger)``, the last two arguments ``None`` when the
server sent none.
"""

from __future__ import annotations

import itertools
from collections.abc import Awaitable, Callable
from typing import Protocol, TypeAlias

from .._types import JSONDict, JSONValue
from ..protocol import constants as c
from ..protocol.jsonrpc import RequestId
from .handlers import Handlers, shaped

#: ``on_progress(progress, total, message)``.
ProgressHandler: TypeAlias = Callable[[float, "float | None", "str | None"], object]
#: ``on_log(level, data, logger)``.
LogHandler: TypeAlias = Callable[[str, JSONValue, "str | None"], object]

_tokens = itertools.count(1)


class Listener(Protocol):
    """What the router needs of a subscription (:class:`~.listen.Subscription` is one)."""

    def deliver(self, message: JSONDict) -> None: ...

    def wants(self, message: JSONDict) -> bool:
        """Whether a handshake-era notification, which names no subscription, is for it."""
        ...


class Router:
    """One client's notification routes."""

    def __init__(self, handlers: Handlers, on_log: LogHandler | None) -> None:
        self._handlers = handlers
        self._on_log = shaped(on_log, handlers.pool) if on_log is not None else None
        self._progress: dict[str | int, Callable[..., Awaitable[object]]] = {}
        self.subscriptions: dict[RequestId, Listener] = {}
        #: Handshake-era subscriptions, matched by what they asked for.
        self.filtered: set[Listener] = set()

    def track_progress(self, on_progress: ProgressHandler, token: str | int | None) -> str | int:
        """Route the progress of one request to ``on_progress``; returns its token."""
        if token is None:
            token = f"mcpserve-progress-{next(_tokens)}"
        self._progress[token] = shaped(on_progress, self._handlers.pool)
        return token

    def forget_progress(self, token: str | int) -> None:
        self._progress.pop(token, None)

    async def __call__(self, message: JSONDict) -> None:
        method = message.get("method")
        params = message.get("params")
        params = params if isinstance(params, dict) else {}
        if method == "notifications/progress":
            on_progress = self._progress.get(params.get("progressToken"))  # type: ignore[arg-type]
            if on_progress is not None:
                await on_progress(
                    params.get("progress"), params.get("total"), params.get("message")
                )
        elif method == "notifications/message" and self._on_log is not None:
            await self._on_log(params.get("level"), params.get("data"), params.get("logger"))
        meta = params.get("_meta")
        subscription_id = meta.get(c.META_SUBSCRIPTION_ID) if isinstance(meta, dict) else None
        subscription = self.subscriptions.get(subscription_id)  # type: ignore[arg-type]
        if subscription is not None:
            subscription.deliver(message)
        else:
            for listening in self.filtered:
                if listening.wants(message):
                    listening.deliver(message)
        catch_all = self._handlers.on_notification
        if catch_all is not None:
            outcome = catch_all(message)
            if outcome is not None:
                await outcome
