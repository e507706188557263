"""How a :class:`~mcpserve.Client` reaches a server over Streamable HTTP, in both eras.

One :class:`HTTPConnection` holds one ``httpx2.AsyncClient``: one connection pool, so calls
made one after another reuse one TCP connection, and calls made at once get one each.
Every JSON-RPC message is its own POST with ``Accept: application/json, text/event-stream``;
the answer is read as JSON or as an event stream, whose notifications (progress, log) go to
``on_notification`` in order while the caller waits for the response.

The 2026-07-28 wire (until :meth:`HTTPConnection.begin` says otherwise) is stateless: each
POST carries the headers mirrored from its body (:mod:`.mirroring`), and the annotations
``tools/list`` results declare are learned on the way through, so later ``tools/call``
requests mirror their ``Mcp-Param-*`` headers. A ``HeaderMismatch`` answer to a call
whose tool was never listed lists the tools and sends the call once more, as the spec
suggests. Cancelling the awaiting task closes the request's HTTP connection: on this wire
that is the cancellation, and the server stops the handler.

After ``initialize`` (:mod:`.eras` decides) the handshake era's
:class:`~.http_handshake.Session` takes over the requests: the session id and the agreed
version go on every HTTP request, the server's own requests are answered through
``on_request``, cut streams are resumed, and the session is deleted on close.

A POST answered with neither JSON-RPC nor a stream (a 404 page, a 405, a 401) raises
:class:`~.http_answers.HTTPStatusError`, which is what the era negotiation reads as "not a
modern server"; a network failure raises ``ConnectionError``, as a broken pipe does on stdio.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any

import httpx2

from .._types import JSONDict
from ..protocol import constants as c
from ..protocol.jsonrpc import dumps
from .connections import NotificationHandler, RequestHandler, deliver, next_id
from .http_answers import HTTPStatusError, decode, drain, is_response, is_stream
from .mirroring import ToolHeaders, request_headers
from .sse import events

if TYPE_CHECKING:  # the handshake era's session and OAuth load only for a server that needs them
    from .http_handshake import Session
    from .oauth.flow import OAuthFlow

_ACCEPT = "application/json, text/event-stream"
logger = logging.getLogger("mcpserve.client")
_SESSION = "Mcp-Session-Id"
_VERSION = "MCP-Protocol-Version"


class HTTPConnection:
    """Streamable HTTP to one endpoint URL, with one connection pool."""

    #: Tells :class:`~mcpserve.Client` to settle the era when it connects.
    negotiates = True

    def __init__(
        self,
        url: str,
        *,
        headers: Mapping[str, str] | None = None,
        http_client: httpx2.AsyncClient | None = None,
        connect_timeout: float = 10.0,
        on_notification: NotificationHandler | None = None,
        on_request: RequestHandler | None = None,
        auth: OAuthFlow | None = None,
    ) -> None:
        """``headers`` go on every HTTP request (an ``Authorization``, say). Given an
        ``http_client``, it is used and left open; otherwise one is made at :meth:`open`
        and closed at :meth:`close`. Requests have no read timeout here: a tool may think
        for minutes; :class:`~mcpserve.Client` bounds each call instead. ``auth`` (an
        ``OAuth`` or ``ClientCredentials``) puts a bearer token on every request and
        answers 401 and 403 challenges (:mod:`.oauth.bearer`)."""
        self.url = url
        self.headers = dict(headers or {})
        self.on_notification = on_notification
        self.on_request = on_request
        self.connect_timeout = connect_timeout
        self._http = http_client
        self._owns_http = http_client is None
        self.tools = ToolHeaders()
        #: The handshake era's session, once :meth:`begin` is called.
        self.session: Session | None = None
        #: The ``Mcp-Session-Id`` the server gave in its ``initialize`` answer, if any.
        self.session_id: str | None = None
        #: Starts a new session when the server forgot this one (set with the handshake).
        self.renew_session: Callable[[], Awaitable[None]] | None = None
        self._renewing = asyncio.Lock()
        #: The server forgot the session and no new one has been made yet (a renewal
        #: failed): the next request tries again before it is sent.
        self._forgotten = False
        #: What each HTTP request is sent with: the OAuth flow, or the pool's own setting.
        self.request_auth: httpx2.Auth | httpx2._client.UseClientDefault = httpx2.USE_CLIENT_DEFAULT
        if auth is not None:
            from .oauth.bearer import BearerAuth  # loaded only for a client with auth=

            self.request_auth = BearerAuth(auth, url, self.client)

    # -- lifetime -----------------------------------------------------------------------------

    async def open(self) -> None:
        if self._http is None:
            timeout = httpx2.Timeout(30.0, connect=self.connect_timeout, read=None, pool=None)
            self._http = httpx2.AsyncClient(timeout=timeout)

    def attach(self, on_notification: NotificationHandler, on_request: RequestHandler) -> None:
        """The client's routes, unless the connection was given its own."""
        self.on_notification = self.on_notification or on_notification
        self.on_request = self.on_request or on_request

    def begin(self, version: str) -> None:
        """From now on, speak the handshake era at ``version`` (``initialize`` is done)."""
        from .http_handshake import Session  # loaded only when a server needs it

        self.session = Session(self, version)

    async def open_standalone(self) -> bool:
        """Open the session's standalone ``GET`` stream (:mod:`.http_handshake`)."""
        return self.session is not None and await self.session.open_standalone()

    async def close(self) -> None:
        """End the session, if any, and close the pool (if it is this connection's)."""
        if self.session is not None and self._http is not None:
            await self.session.close()
        if self._owns_http and self._http is not None:
            http, self._http = self._http, None
            await http.aclose()

    async def step_up(self, before: Callable[[tuple[str, ...]], object] | None = None) -> bool:
        """With OAuth, authorize again for every scope the server's metadata names beyond
        those held (:meth:`~.oauth.flow.OAuthFlow.broaden`); whether new tokens came, so
        that what the server hid from the old ones may be asked for again."""
        from .oauth.bearer import BearerAuth

        if not isinstance(self.request_auth, BearerAuth):
            return False
        tokens = await self.request_auth.flow.broaden(self.url, self.client(), before)
        return tokens is not None

    def client(self) -> httpx2.AsyncClient:
        """The pool (open)."""
        if self._http is None:
            raise ConnectionError("the connection is not open")
        return self._http

    def base_headers(self) -> dict[str, str]:
        """What every HTTP request carries: yours, and the session's."""
        headers = dict(self.headers)
        if self.session is not None:
            headers[_VERSION] = self.session.version
            if self.session_id is not None:
                headers[_SESSION] = self.session_id
        return headers

    def _post_headers(self, message: JSONDict) -> dict[str, str]:
        headers = self.base_headers()
        headers["Accept"] = _ACCEPT
        headers["Content-Type"] = "application/json"
        if self.session is None:
            headers.update(request_headers(message, self.tools))
            if message.get("method") == "initialize":  # the handshake, before begin()
                version = (message.get("params") or {}).get("protocolVersion")
                if isinstance(version, str):
                    headers[_VERSION] = version
        return headers

    @contextlib.asynccontextmanager
    async def post(self, message: JSONDict) -> AsyncIterator[httpx2.Response]:
        """POST one message; the answer's body is left to the caller to read."""
        http = self.client()
        request = http.build_request(
            "POST", self.url, content=dumps(message), headers=self._post_headers(message)
        )
        response = await http.send(request, stream=True, auth=self.request_auth)
        try:
            if message.get("method") == "initialize":
                self.session_id = response.headers.get(_SESSION)
            yield response
        finally:
            await response.aclose()  # unread: the connection closes, and the server hears it

    # -- requests and notifications ----------------------------------------------------------

    async def request(self, message: JSONDict) -> JSONDict:
        try:
            if self._forgotten and self.session is None and message.get("method") != "initialize":
                await self._renew(None)  # (the renewal's own initialize goes out as it is)
            if self.session is not None:
                return await self._in_session(self.session, message)
            response = await self._modern_request(message)
            method = message.get("method")
            if method == "tools/list" and isinstance(response.get("result"), dict):
                self.tools.learn(response["result"])
            elif method == "tools/call" and await self._relearned(message, response):
                response = await self._modern_request(message)
            return response
        except httpx2.TransportError as exc:  # the same error as a broken pipe, on any transport
            raise ConnectionError(f"{message.get('method')}: {exc!r}") from exc

    async def _in_session(self, session: Session, message: JSONDict) -> JSONDict:
        """A handshake-era request; sent once more in a new session if the server forgot
        this one, as the spec has a client do (a second 404 is an error)."""
        from .http_handshake import SessionExpired

        try:
            return await session.request(message)
        except SessionExpired:
            if self.renew_session is None:
                raise
        await self._renew(session)
        assert self.session is not None
        return await self.session.request(message)

    async def _renew(self, forgotten: Session | None) -> None:
        """A new session in place of ``forgotten`` (None: of the one an earlier renewal
        could not replace). Raises when none can be made; the next request tries again."""
        assert self.renew_session is not None
        async with self._renewing:  # requests that failed together renew it once
            if self.session is not forgotten:
                return  # another request renewed it meanwhile
            if forgotten is not None:
                self.session, self.session_id = None, None
                self._forgotten = True
                await forgotten.abandon()  # nothing to DELETE: the server has forgotten it
                logger.info("The server at %s forgot the session: starting a new one", self.url)
            await self.renew_session()
            if self.session is None:
                raise ConnectionError("could not start a new session")
            self._forgotten = False

    async def notify(self, message: JSONDict) -> None:
        try:
            async with self.post(message) as response:
                body = await response.aread()  # read to the end: the connection is reused
        except httpx2.TransportError as exc:
            raise ConnectionError(f"{message.get('method')}: {exc!r}") from exc
        if response.status_code >= 400:
            raise HTTPStatusError(response.status_code, body, message.get("method"))

    async def _modern_request(self, message: JSONDict) -> JSONDict:
        async with self.post(message) as response:
            if is_stream(response):
                stream = self._messages(response)
                async for incoming in stream:
                    if is_response(incoming) and incoming.get("id") == message["id"]:
                        await drain(stream)
                        return incoming  # type: ignore[no-any-return]
                    if "method" in incoming and "id" not in incoming:
                        await deliver(self.on_notification, incoming)
                    # A request on this stream breaks the 2026-07-28 rules: it gets no answer.
                raise ConnectionError(f"the server ended the {message['method']} stream early")
            return await self.json_answer(message, response)

    async def json_answer(self, message: JSONDict, response: httpx2.Response) -> JSONDict:
        body = await response.aread()
        answer = decode(body) if body else None
        if not isinstance(answer, dict) or not is_response(answer):
            raise HTTPStatusError(response.status_code, body, message.get("method"))
        if answer.get("id") is None:  # a 400 may name no id: it is still this request's
            answer["id"] = message["id"]
        return answer

    async def _messages(self, response: httpx2.Response) -> AsyncIterator[Any]:
        async for event in events(response.aiter_lines()):
            if event.data:
                message = decode(event.data)
                if isinstance(message, dict):
                    yield message

    async def _relearned(self, message: JSONDict, response: JSONDict) -> bool:
        """After a ``HeaderMismatch`` for a tool never listed: list the tools, and say
        whether the call is worth sending again."""
        error = response.get("error")
        name = (message.get("params") or {}).get("name")
        if not isinstance(error, dict) or error.get("code") != c.HEADER_MISMATCH:
            return False
        if not isinstance(name, str) or self.tools.knows(name):
            return False
        meta = (message.get("params") or {}).get("_meta")
        cursor: str | None = None
        while True:
            params: JSONDict = (
                {"_meta": meta} if cursor is None else {"_meta": meta, "cursor": cursor}
            )
            listing = {"jsonrpc": "2.0", "id": next_id(), "method": "tools/list", "params": params}
            result = (await self._modern_request(listing)).get("result")
            if not isinstance(result, dict):
                return False
            self.tools.learn(result)
            cursor = result.get("nextCursor")
            if not isinstance(cursor, str):
                return self.tools.knows(name)
