"""``subscriptions/listen`` as an async iterator: :meth:`Client.listen <mcpserve.Client.listen>`.

::

    async with client.listen(tools_list_changed=True, resources=["file:///a.txt"]) as notes:
        print(notes.acknowledged)  # what the server agreed to send
        async for note in notes:   # each notification, as its JSON-RPC message
            ...

On the 2026-07-28 wire the subscription is one long ``subscriptions/listen`` request: it
runs in a task of its own while its notifications, recognised by their subscription id
(:mod:`.notifications`), queue up here. Opening waits for the server's acknowledgement, so
nothing that happens after ``async with`` (or the first ``async for`` step) is missed.
Closing cancels the request, which on HTTP closes its stream and on stdio sends
``notifications/cancelled``: the server forgets the listener. When the server ends the
subscription itself (it is shutting down), iteration stops and :attr:`Subscription.result`
holds its final result; when the connection breaks, iteration raises what broke it.

In the handshake era there is no such request: change notifications arrive on the
session's standalone stream. A subscription there asks ``resources/subscribe`` for each
URI, hears the list changes the server's capabilities promise (the acknowledgement says
which) and ``resources/updated`` for the URIs it asked for, and unsubscribes on close.

A client's subscriptions are closed when the client closes, so ``async for`` without
``async with`` does not leave a stream open behind it.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Sequence
from types import TracebackType
from typing import Any, Protocol

from .._types import JSONDict
from ..protocol.errors import MCPError
from ..protocol.tasks import declaring_tasks
from .connections import Connection, next_id
from .notifications import Router

#: Filter field -> (the notification it stands for, the capability that promises it).
_LIST_CHANGES = {
    "toolsListChanged": ("notifications/tools/list_changed", "tools"),
    "promptsListChanged": ("notifications/prompts/list_changed", "prompts"),
    "resourcesListChanged": ("notifications/resources/list_changed", "resources"),
}
_ACKNOWLEDGED = "notifications/subscriptions/acknowledged"
_END = object()


def notification_filter(
    *,
    tools_list_changed: bool = False,
    prompts_list_changed: bool = False,
    resources_list_changed: bool = False,
    resources: Sequence[str] = (),
    task_ids: Sequence[str] = (),
) -> JSONDict:
    """The ``notifications`` filter of a ``subscriptions/listen`` request."""
    wanted: JSONDict = {}
    for key, asked in (
        ("toolsListChanged", tools_list_changed),
        ("promptsListChanged", prompts_list_changed),
        ("resourcesListChanged", resources_list_changed),
    ):
        if asked:
            wanted[key] = True
    if resources:
        wanted["resourceSubscriptions"] = list(resources)
    if task_ids:
        wanted["taskIds"] = list(task_ids)
    return wanted


class ListeningClient(Protocol):
    """What a subscription needs of a :class:`~mcpserve.Client`, which has it all."""

    capabilities: JSONDict
    connection: Connection
    legacy: bool
    router: Router
    server_capabilities: JSONDict
    subscriptions: set[Subscription]

    def meta(self, *, capabilities: JSONDict | None = None) -> JSONDict: ...

    async def request(self, method: str, params: JSONDict | None = None) -> JSONDict: ...


class Subscription:
    """One open subscription; iterate it for its notifications."""

    def __init__(self, client: ListeningClient, notifications: JSONDict) -> None:
        self._client = client
        #: The filter asked for.
        self.requested = notifications
        #: The filter the server agreed to, once open.
        self.acknowledged: JSONDict | None = None
        #: The final result, when the server ended the subscription itself.
        self.result: JSONDict | None = None
        self._queue: asyncio.Queue[Any] = asyncio.Queue()
        self._task: asyncio.Task[None] | None = None
        self._failure: BaseException | None = None
        self._opened = False
        self._closed = False

    # -- opening and closing -----------------------------------------------------------------

    async def __aenter__(self) -> Subscription:
        await self.open()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    async def open(self) -> None:
        """Send the subscription and wait for its acknowledgement (done once)."""
        if self._opened:
            return
        self._opened = True
        self._client.subscriptions.add(self)
        if self._client.legacy:
            await self._open_handshake()
            return
        listen_id = next_id()
        capabilities = None
        if "taskIds" in self.requested:  # the server hears of tasks only with the extension
            capabilities = declaring_tasks(self._client.capabilities)
        meta = self._client.meta(capabilities=capabilities)
        params: JSONDict = {"notifications": self.requested, "_meta": meta}
        message = {
            "jsonrpc": "2.0",
            "id": listen_id,
            "method": "subscriptions/listen",
            "params": params,
        }
        self._client.router.subscriptions[listen_id] = self
        self._task = asyncio.create_task(self._run(message))
        first = await self._queue.get()
        if first is _END:  # refused, or over at once: iteration says which
            self._queue.put_nowait(_END)
            if self._failure is not None:
                raise self._failure
            return
        if first.get("method") == _ACKNOWLEDGED:
            self.acknowledged = first.get("params", {}).get("notifications", {})
        else:  # a server that does not acknowledge first: keep what it sent
            self.acknowledged = dict(self.requested)
            self._queue.put_nowait(first)

    async def _run(self, message: JSONDict) -> None:
        try:
            response = await self._client.connection.request(message)
            error = response.get("error")
            if isinstance(error, dict):
                self._failure = MCPError(
                    error.get("message", ""), code=error.get("code"), data=error.get("data")
                )
            else:
                self.result = response.get("result")
        except Exception as exc:  # the connection broke: iteration raises it
            self._failure = exc
        finally:
            self._client.router.subscriptions.pop(message["id"], None)
            self._queue.put_nowait(_END)

    async def _open_handshake(self) -> None:
        capabilities = self._client.server_capabilities
        honoured: JSONDict = {}
        for key, (_, capability) in _LIST_CHANGES.items():
            offered = capabilities.get(capability)
            if self.requested.get(key) and isinstance(offered, dict) and offered.get("listChanged"):
                honoured[key] = True
        uris = self.requested.get("resourceSubscriptions") or []
        resources = capabilities.get("resources")
        if uris and isinstance(resources, dict) and resources.get("subscribe"):
            for uri in uris:
                await self._client.request("resources/subscribe", {"uri": uri})
            honoured["resourceSubscriptions"] = list(uris)
        self.acknowledged = honoured
        self._client.router.filtered.add(self)

    async def aclose(self) -> None:
        """End the subscription (the server stops sending); safe to call more than once."""
        if self._closed:
            return
        self._closed = True
        self._client.subscriptions.discard(self)
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
        elif self._opened and self._client.legacy:
            self._client.router.filtered.discard(self)
            for uri in (self.acknowledged or {}).get("resourceSubscriptions", []):
                # The session may be over already: then nothing is left to stop.
                with contextlib.suppress(MCPError, ConnectionError):
                    await self._client.request("resources/unsubscribe", {"uri": uri})
        self._queue.put_nowait(_END)

    # -- receiving ----------------------------------------------------------------------------

    def deliver(self, message: JSONDict) -> None:
        if not self._closed:
            self._queue.put_nowait(message)

    def wants(self, message: JSONDict) -> bool:
        """Whether a handshake-era notification is one this subscription asked for."""
        method = message.get("method")
        honoured = self.acknowledged or {}
        if any(method == name and honoured.get(key) for key, (name, _) in _LIST_CHANGES.items()):
            return True
        if method != "notifications/resources/updated":
            return False
        uri = (message.get("params") or {}).get("uri")
        return isinstance(uri, str) and any(
            uri == wanted or uri.startswith(wanted.rstrip("/") + "/")
            for wanted in honoured.get("resourceSubscriptions", [])
        )

    def __aiter__(self) -> Subscription:
        return self

    async def __anext__(self) -> JSONDict:
        await self.open()
        item = await self._queue.get()
        if item is _END:
            self._queue.put_nowait(_END)  # ended for good: every later step ends too
            self._raise_end()
        return item  # type: ignore[no-any-return]

    def _raise_end(self) -> None:
        if self._failure is not None and not self._closed:
            raise self._failure
        raise StopAsyncIteration
