"""How a :class:`~mcpserve.Client` reaches a server: in memory, or over a stdio pipe
(Streamable HTTP is :mod:`.http`).

Both connections move the same JSON-RPC dicts. The in-memory one round-trips every message
through the JSON encoder, so anything a handler returns that would not survive the wire
fails in tests exactly as it would in production.

In memory the client needs only a function that answers one message
(:class:`HandleFunction`), as an HTTP client's mock transport needs only a function from
request to response: the client never imports the server. A ``Server`` is recognised by its
shape (:class:`InProcessServer`: a ``handle`` to call and a ``running()`` lifespan to enter
while the connection is open); a bare handle function has no lifespan.

Over stdio the handshake era needs little of its own: after ``initialize`` (:mod:`.eras`,
when the connection was made with ``negotiate=True`` or pinned to a handshake-era version)
the server may send requests of its own on stdout (elicitation, sampling, roots, ping);
each is answered by ``on_request`` in a task of its own, the response written to stdin.
A request sent after the server has exited fails at once with ``ConnectionError``.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import os
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Protocol, TypeGuard, cast

from .._invoking import is_async
from .._types import JSONDict
from ..protocol.errors import ParseError
from ..protocol.jsonrpc import RequestId, dumps, loads

logger = logging.getLogger("mcpserve.client")

NotificationHandler = Callable[[JSONDict], Awaitable[None] | None]
#: Answers one request from the server (handshake era): the whole JSON-RPC response.
RequestHandler = Callable[[JSONDict], Awaitable[JSONDict]]
#: Hands one notification the server sends while it answers to the client.
SendNotification = Callable[[JSONDict], Awaitable[None]]


class HandleFunction(Protocol):
    """Answers one decoded JSON-RPC message in this process: the response dict, or ``None``
    for a notification. ``send`` takes the notifications it sends on the way (progress,
    log messages). A ``Server``'s bound ``handle`` is one::

        async def handle(message: dict, *, send) -> dict | None:
            return {"jsonrpc": "2.0", "id": message["id"], "result": {}}
    """

    def __call__(
        self, message: JSONDict, *, send: SendNotification
    ) -> Awaitable[JSONDict | None]: ...


class InProcessServer(Protocol):
    """What ``Client(server)`` drives in memory: a ``Server`` has this shape."""

    def handle(
        self, message: JSONDict, *, send: SendNotification | None = None
    ) -> Awaitable[JSONDict | None]: ...

    def running(self) -> contextlib.AbstractAsyncContextManager[object]: ...


def is_in_process_server(target: object) -> TypeGuard[InProcessServer]:
    """Whether ``target`` has a server's shape: a ``handle`` to call and ``running()``."""
    return callable(getattr(target, "handle", None)) and callable(getattr(target, "running", None))


def is_handle_function(target: object) -> TypeGuard[HandleFunction]:
    """Whether ``target`` can answer messages as a bare handle function (an async one)."""
    return callable(target) and is_async(target)


_CONNECTION_METHODS = ("open", "close", "request", "notify")


class Connection(Protocol):
    async def open(self) -> None: ...
    async def close(self) -> None: ...
    async def request(self, message: JSONDict) -> JSONDict: ...
    async def notify(self, message: JSONDict) -> None: ...


def is_connection(target: object) -> TypeGuard[Connection]:
    """Whether ``target`` has a connection's shape (``open``, ``close``, ``request``,
    ``notify``): one made by hand, or by :meth:`~mcpserve.Client.http` or ``stdio``."""
    return all(callable(getattr(target, name, None)) for name in _CONNECTION_METHODS)


async def deliver(handler: NotificationHandler | None, message: JSONDict) -> None:
    """Hand ``message`` to ``handler`` (if any), awaiting it when it is async."""
    if handler is not None:
        outcome = handler(message)
        if outcome is not None:
            await outcome


def _received(message: JSONDict) -> Any:
    """What a client reads of a server's message, as if it had crossed the wire."""
    return loads(dumps(message), exact_integers=False)


class MemoryConnection:
    """Drives a server in this process, through the JSON encoder both ways: a ``Server`` (or
    anything of its shape), its lifespan running while the connection is open, or a bare
    handle function."""

    def __init__(
        self,
        server: InProcessServer | HandleFunction,
        on_notification: NotificationHandler | None,
    ) -> None:
        #: The server driven (``None`` for a bare handle function).
        self.server: InProcessServer | None
        self.handle: HandleFunction
        if is_in_process_server(server):
            self.server, self.handle = server, server.handle
        else:
            self.server, self.handle = None, cast(HandleFunction, server)
        self.on_notification = on_notification
        self._running: contextlib.AbstractAsyncContextManager[object] | None = None

    async def open(self) -> None:
        if self.server is not None:
            self._running = self.server.running()
            await self._running.__aenter__()

    async def close(self) -> None:
        if self._running is not None:
            running, self._running = self._running, None
            await running.__aexit__(None, None, None)

    async def _send(self, notification: JSONDict) -> None:
        await deliver(self.on_notification, _received(notification))

    async def request(self, message: JSONDict) -> JSONDict:
        response = await self.handle(loads(dumps(message)), send=self._send)
        if not isinstance(response, dict):
            method = message.get("method")
            raise TypeError(f"The server answered {method} with {response!r}, not a response")
        return _received(response)  # type: ignore[no-any-return]

    async def notify(self, message: JSONDict) -> None:
        await self.handle(loads(dumps(message)), send=self._send)


def connection_to(
    target: InProcessServer | HandleFunction | Connection,
    on_notification: NotificationHandler | None,
) -> Connection:
    """The connection for what a ``Client`` was given, told apart by shape: a server to drive
    in memory, a connection already made, or a bare handle function."""
    if is_in_process_server(target):
        return MemoryConnection(target, on_notification)
    if is_connection(target):
        return target
    if is_handle_function(target):
        return MemoryConnection(target, on_notification)
    raise TypeError(
        f"Client() cannot talk to {target!r}: give it a Server, an async handle function "
        "handle(message, *, send), a Connection or a server's URL"
    )


class StdioConnection:
    """Spawns a server command and speaks newline-delimited JSON-RPC over its pipes."""

    def __init__(
        self,
        command: Sequence[str],
        *,
        env: dict[str, str] | None,
        cwd: str | None,
        on_notification: NotificationHandler | None,
        negotiate: bool = False,
    ) -> None:
        self.command = list(command)
        self.env = env
        self.cwd = cwd
        self.on_notification = on_notification
        self.on_request: RequestHandler | None = None
        #: Settle the era when the client connects (``server/discover``, else ``initialize``).
        self.negotiates = negotiate
        #: The handshake-era version agreed at ``initialize`` (None on 2026-07-28).
        self.version: str | None = None
        self.process: asyncio.subprocess.Process | None = None
        self._pending: dict[RequestId, asyncio.Future[JSONDict]] = {}
        self._reader: asyncio.Task[None] | None = None
        self._answering: set[asyncio.Task[None]] = set()
        self.shutdown_timeout = 5.0

    def attach(self, on_notification: NotificationHandler, on_request: RequestHandler) -> None:
        """The client's routes, unless the connection was given its own."""
        self.on_notification = self.on_notification or on_notification
        self.on_request = self.on_request or on_request

    def begin(self, version: str) -> None:
        """``initialize`` agreed on ``version``: the server may now send requests too."""
        self.version = version

    async def open_standalone(self) -> bool:
        """There is no standalone stream on stdio: everything comes on stdout."""
        return False

    @property
    def closed(self) -> bool:
        """Whether the server's stdout has ended (it exited, or was never started)."""
        return self._reader is None or self._reader.done()

    async def open(self) -> None:
        self.process = await asyncio.create_subprocess_exec(
            *self.command,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            env={**os.environ, **self.env} if self.env else None,
            cwd=self.cwd,
            limit=64 * 1024 * 1024,
        )
        self._reader = asyncio.create_task(self._read())

    def _pipes(self) -> tuple[asyncio.StreamWriter, asyncio.StreamReader]:
        process = self.process
        if process is None or process.stdin is None or process.stdout is None:
            raise ConnectionError("the connection is not open")
        return process.stdin, process.stdout

    async def _read(self) -> None:
        _, stdout = self._pipes()
        ending = "the server closed its stdout"
        try:
            async for line in stdout:
                if not line.strip():
                    continue
                try:
                    message = loads(line, exact_integers=False)
                except ParseError:  # not JSON (a server printing to stdout): not a message
                    logger.warning("Ignoring a line from the server that is not JSON: %.200r", line)
                    continue
                if not isinstance(message, dict):
                    continue
                if "method" in message:
                    if "id" in message:  # the server asks (handshake era): answered aside
                        self._answer_later(message)
                    else:
                        await deliver(self.on_notification, message)
                    continue
                future = self._pending.pop(message.get("id"), None)  # type: ignore[arg-type]
                if future is not None and not future.done():
                    future.set_result(message)
        except (ValueError, OSError) as exc:  # a line beyond the limit, a broken pipe
            ending = f"reading the server's stdout failed: {exc}"
        finally:
            # Whatever ended the stream, nobody waits forever for an answer.
            for future in self._pending.values():
                if not future.done():
                    future.set_exception(ConnectionError(ending))

    def _answer_later(self, request: JSONDict) -> None:
        async def answer() -> None:
            if self.on_request is None:
                error = {"code": -32601, "message": "This client answers no requests"}
                response: JSONDict = {"jsonrpc": "2.0", "id": request["id"], "error": error}
            else:
                response = await self.on_request(request)
            with contextlib.suppress(ConnectionError, RuntimeError):
                await self._write(response)

        task = asyncio.create_task(answer())
        self._answering.add(task)
        task.add_done_callback(self._answering.discard)

    async def _write(self, message: JSONDict) -> None:
        stdin, _ = self._pipes()
        stdin.write(dumps(message) + b"\n")
        await stdin.drain()

    async def request(self, message: JSONDict) -> JSONDict:
        if self.closed:
            raise ConnectionError(f"{message.get('method')}: the server has exited")
        future: asyncio.Future[JSONDict] = asyncio.get_running_loop().create_future()
        self._pending[message["id"]] = future
        await self._write(message)
        try:
            return await future
        except asyncio.CancelledError:
            # A pipe has no per-request stream to close: the server hears of it by
            # notification (written without waiting: this task is being cancelled).
            self._pending.pop(message["id"], None)
            params = {"requestId": message["id"], "reason": "The client cancelled the request"}
            cancelled = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": params}
            with contextlib.suppress(ConnectionError, RuntimeError):
                self._pipes()[0].write(dumps(cancelled) + b"\n")
            raise

    async def notify(self, message: JSONDict) -> None:
        await self._write(message)

    async def close(self) -> None:
        """Close stdin (the server's signal to finish) and wait for it to exit."""
        process = self.process
        if process is None:
            return
        for task in list(self._answering):
            task.cancel()
        if process.stdin is not None and not process.stdin.is_closing():
            process.stdin.close()
        try:
            await asyncio.wait_for(process.wait(), self.shutdown_timeout)
        except TimeoutError:
            process.kill()
            await process.wait()
        if self._reader is not None:
            await asyncio.gather(self._reader, return_exceptions=True)


_ids = itertools.count(1)


def next_id() -> int:
    return next(_ids)
