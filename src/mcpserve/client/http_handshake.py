"""The handshake era (2025-11-25 and earlier) over Streamable HTTP, for one connection.

:meth:`HTTPConnection.begin <.http.HTTPConnection.begin>` makes a :class:`Session` once
``initialize`` has been agreed (:mod:`.eras`). From then on the connection's headers carry
the agreed ``MCP-Protocol-Version`` and the ``Mcp-Session-Id`` of the ``initialize``
answer, and requests go through the session, which does what this era needs:

* Messages may arrive on any stream (the request's own, a resumed one, the standalone
  one), so responses are matched to waiting requests by id.
* A request the server sends (elicitation, sampling, roots, ping) goes to the client's
  ``on_request`` in a task of its own, and the answer is POSTed back: the stream it came
  on goes on while a person thinks.
* A stream that ends before its response arrives is resumed with ``GET`` and
  ``Last-Event-ID``, after the ``retry`` delay the server named (or
  :data:`~.http_answers.DEFAULT_RETRY_MS`), at most :data:`~.http_answers.MAX_RESUMES` times.
* The standalone ``GET`` stream is opened right after the handshake and held (reconnected
  after ``retry`` when it ends) until the session closes; a server that offers none (405)
  is fine.
* Cancelling a request also sends ``notifications/cancelled``: in this era a closed stream
  is not a cancellation, so the server would otherwise carry on.
* Closing ends the session with ``DELETE`` (a server without sessions may answer 405).
* A server that no longer knows the session answers 404: the request raises
  :class:`SessionExpired`, and the connection starts a new session and sends it again
  (:meth:`HTTPConnection.request <.http.HTTPConnection.request>`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Awaitable
from typing import Protocol

import httpx2

from .._types import JSONDict
from ..protocol import constants as c
from ..protocol.jsonrpc import RequestId
from .connections import NotificationHandler, RequestHandler, deliver
from .http_answers import (
    DEFAULT_RETRY_MS,
    MAX_RESUMES,
    HTTPStatusError,
    decode,
    drain,
    is_stream,
)
from .sse import events

logger = logging.getLogger("mcpserve.client")


class SessionConnection(Protocol):
    """What a session needs of its :class:`~.http.HTTPConnection`."""

    url: str
    session_id: str | None
    on_notification: NotificationHandler | None
    on_request: RequestHandler | None
    request_auth: httpx2.Auth | httpx2._client.UseClientDefault

    def client(self) -> httpx2.AsyncClient: ...

    def base_headers(self) -> dict[str, str]: ...

    def post(self, message: JSONDict) -> contextlib.AbstractAsyncContextManager[httpx2.Response]:
        """POST one message; the answer's body is left to the caller to read."""
        ...

    async def json_answer(self, message: JSONDict, response: httpx2.Response) -> JSONDict: ...

    async def notify(self, message: JSONDict) -> None: ...


class SessionExpired(ConnectionError):
    """The server answered 404 to a request in the session: it no longer knows it (it was
    restarted, or ended the session). The request was not processed."""


class Session:
    """One handshake-era session of an :class:`~.http.HTTPConnection`."""

    def __init__(self, connection: SessionConnection, version: str) -> None:
        self.connection = connection
        self.version = version
        self._pending: dict[RequestId, asyncio.Future[JSONDict]] = {}
        self._standalone: asyncio.Task[None] | None = None
        self._background: set[asyncio.Task[None]] = set()

    async def abandon(self) -> None:
        """Stop this session's own streams and tasks; the server is not told."""
        tasks = [t for t in (self._standalone, *self._background) if t is not None]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    async def close(self) -> None:
        await self.abandon()
        connection = self.connection
        if connection.session_id is not None:
            with contextlib.suppress(httpx2.HTTPError):
                await connection.client().delete(
                    connection.url,
                    headers=connection.base_headers(),
                    timeout=5.0,
                    auth=connection.request_auth,
                )
            connection.session_id = None

    # -- requests -------------------------------------------------------------------------------

    async def request(self, message: JSONDict) -> JSONDict:
        request_id = message["id"]
        answer: asyncio.Future[JSONDict] = asyncio.get_running_loop().create_future()
        self._pending[request_id] = answer
        try:
            last_id, retry = None, None
            async with self.connection.post(message) as response:
                if response.status_code == 404 and self.connection.session_id is not None:
                    raise SessionExpired(
                        f"the server no longer knows the session "
                        f"({message.get('method')} answered 404)"
                    )
                if is_stream(response):
                    last_id, retry, _ = await self._read(response, until=answer)
                elif not answer.done():
                    answer.set_result(await self.connection.json_answer(message, response))
            if not answer.done():
                if last_id is None:
                    raise ConnectionError(f"the server ended the {message['method']} stream early")
                await self._resume(last_id, retry, answer)
            return await answer
        except asyncio.CancelledError:
            reason = {"requestId": request_id, "reason": "The client cancelled the request"}
            cancelled = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": reason}
            self._spawn(self.connection.notify(cancelled))
            raise
        finally:
            self._pending.pop(request_id, None)

    async def _read(
        self, response: httpx2.Response, *, until: asyncio.Future[JSONDict] | None
    ) -> tuple[str | None, int | None, int]:
        """Route every message of a stream until ``until`` is answered or the stream ends;
        returns the last event id and retry delay seen, and how many events came."""
        last_id: str | None = None
        retry: int | None = None
        count = 0
        stream = events(response.aiter_lines())
        async for event in stream:
            count += 1
            last_id = event.id if event.id is not None else last_id
            retry = event.retry_ms if event.retry_ms is not None else retry
            message = decode(event.data) if event.data else None
            if isinstance(message, dict):
                await self._route(message)
            if until is not None and until.done():
                await drain(stream)
                break
        return last_id, retry, count

    async def _route(self, message: JSONDict) -> None:
        if "method" not in message:
            waiting = self._pending.get(message.get("id"))  # type: ignore[arg-type]
            if waiting is not None and not waiting.done():
                waiting.set_result(message)
        elif "id" in message:
            self._spawn(self._answer(message))
        else:
            await deliver(self.connection.on_notification, message)

    async def _answer(self, request: JSONDict) -> None:
        on_request = self.connection.on_request
        if on_request is None:
            error = {"code": c.METHOD_NOT_FOUND, "message": "This client answers no requests"}
            response: JSONDict = {"jsonrpc": "2.0", "id": request["id"], "error": error}
        else:
            response = await on_request(request)
        await self.connection.notify(response)  # a response is POSTed like a notification

    async def _resume(
        self, last_id: str, retry: int | None, answer: asyncio.Future[JSONDict]
    ) -> None:
        for _ in range(MAX_RESUMES):
            await asyncio.sleep((retry if retry is not None else DEFAULT_RETRY_MS) / 1000)
            async with self._get(last_id) as response:
                if not is_stream(response):
                    raise HTTPStatusError(response.status_code, await response.aread(), None)
                seen, new_retry, _ = await self._read(response, until=answer)
            if answer.done():
                return
            last_id, retry = seen or last_id, new_retry if new_retry is not None else retry
        raise ConnectionError(f"no answer after resuming the stream {MAX_RESUMES} times")

    @contextlib.asynccontextmanager
    async def _get(self, last_id: str | None) -> AsyncIterator[httpx2.Response]:
        headers = self.connection.base_headers()
        headers["Accept"] = "text/event-stream"
        if last_id is not None:
            headers["Last-Event-ID"] = last_id
        http = self.connection.client()
        request = http.build_request("GET", self.connection.url, headers=headers)
        response = await http.send(request, stream=True, auth=self.connection.request_auth)
        try:
            yield response
        finally:
            await response.aclose()

    # -- the standalone stream ------------------------------------------------------------------

    async def open_standalone(self) -> bool:
        """Open the standalone ``GET`` stream and hold it until :meth:`close`. Returns once
        the server has answered it, so a request sent next cannot miss what the server
        sends there; ``False`` when the server offers none."""
        opened: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
        self._standalone = asyncio.create_task(self._hold_standalone(opened))
        return await opened

    async def _hold_standalone(self, opened: asyncio.Future[bool]) -> None:
        try:
            await self._reconnect_standalone(opened)
        finally:
            if not opened.done():
                opened.set_result(False)

    async def _reconnect_standalone(self, opened: asyncio.Future[bool]) -> None:
        last_id: str | None = None
        retry: int | None = None
        failures = 0
        while failures < MAX_RESUMES:
            try:
                async with self._get(last_id) as response:
                    if not opened.done():
                        opened.set_result(is_stream(response))
                    if not is_stream(response):
                        return
                    seen, new_retry, count = await self._read(response, until=None)
                    failures = 0 if count else failures + 1  # not closing at once, forever
                    last_id = seen or last_id
                    retry = new_retry if new_retry is not None else retry
            except httpx2.HTTPError as exc:
                logger.debug("The standalone stream failed: %s", exc)
                if not opened.done():
                    return
                failures += 1
            await asyncio.sleep((retry if retry is not None else DEFAULT_RETRY_MS) / 1000)

    def _spawn(self, work: Awaitable[None]) -> None:
        async def run() -> None:
            try:
                await work
            except (httpx2.HTTPError, ConnectionError) as exc:
                logger.warning("Could not send to the server: %s", exc)
            except Exception:  # a handler's bug must not pass silently, nor end the stream
                logger.exception("Answering the server failed")

        task = asyncio.create_task(run())
        self._background.add(task)
        task.add_done_callback(self._background.discard)
