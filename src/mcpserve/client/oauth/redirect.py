"""The user's part of the authorization code flow: the browser, and the redirect back.

The flow needs a redirect URI before it registers the client and builds the authorization
URL, and the redirect's query afterwards. A *redirect handler* provides both: its
``session()`` yields a :class:`RedirectSession` whose ``redirect_uri`` is where the
authorization server sends the browser back, and whose ``authorize(url)`` gets the user to
``url`` and returns the URL the browser came back to (``redirect_uri?code=...&state=...``).

* :class:`LoopbackRedirect` (the default) listens on ``127.0.0.1`` for the one redirect
  (a native app's redirect, RFC 8252 section 7.3: any free port unless told one), prints
  the URL, opens a browser if there is one, and answers the browser with a page saying it
  may be closed. Other paths get 404; the wait is bounded.
* A function of yours, ``async def authorize(url: str) -> str``, with a fixed
  ``redirect_uri``: a program that opens its own window, or a test that logs in headlessly.

:func:`authorization_code` then checks the redirect before the code goes anywhere, in the
spec's order: ``iss`` first (RFC 9207, compared as a plain string, never normalized; when
the server advertises ``iss`` it must be there), so that a response from the wrong server
is not even read; then ``state``; then an ``error`` the server sent; then the ``code``.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import hashlib
import inspect
import logging
import secrets
import sys
import webbrowser
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from typing import Any, Protocol
from urllib.parse import parse_qsl, urlsplit

from .errors import OAuthError
from .metadata import is_loopback

logger = logging.getLogger("mcpserve.client.oauth")

#: An ``authorize(url)`` hook: returns the URL the browser was redirected to.
AuthorizeHook = Callable[[str], Awaitable[str] | str]

_MAX_REQUEST_HEAD = 8192
_READ_TIMEOUT = 10.0
_DONE_PAGE = (
    b"<!doctype html><meta charset=utf-8><title>Authorized</title>"
    b"<p>The authorization is complete; you may close this window.</p>"
)


class RedirectSession(Protocol):
    redirect_uri: str

    async def authorize(self, url: str) -> str: ...


class RedirectHandler(Protocol):
    def session(self) -> AbstractAsyncContextManager[RedirectSession]: ...


def pkce_pair() -> tuple[str, str]:
    """A PKCE ``(code_verifier, code_challenge)`` for ``S256`` (RFC 7636)."""
    verifier = secrets.token_urlsafe(48)  # 64 characters of the unreserved set
    digest = hashlib.sha256(verifier.encode("ascii")).digest()
    return verifier, base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii")


def authorization_code(callback: str, *, state: str, issuer: str, iss_required: bool) -> str:
    """The code in the redirect ``callback``, once ``iss`` and ``state`` are checked;
    :class:`OAuthError` otherwise (with the server's error when it sent one, and only when
    the response is from the expected server)."""
    parts = urlsplit(callback)
    query = parts.query or (parts.fragment if "=" in parts.fragment else "")
    params = dict(parse_qsl(query, keep_blank_values=True))
    iss = params.get("iss")
    if iss is not None and iss != issuer:
        raise OAuthError(
            f"The authorization response came from the issuer {iss!r}, not {issuer!r}: "
            "refused (a mix-up attack, or a misconfigured server)"
        )
    if iss is None and iss_required:
        raise OAuthError(
            f"The authorization response has no iss, which {issuer} says it always sends: refused"
        )
    if params.get("state") != state:
        raise OAuthError("The authorization response's state does not match the request: refused")
    if "error" in params:
        description = params.get("error_description")
        said = f": {description}" if description else ""
        raise OAuthError(
            f"The authorization was refused ({params['error']}){said}", error=params["error"]
        )
    code = params.get("code")
    if not code:
        raise OAuthError("The authorization response has no code")
    return code


class _HookSession:
    def __init__(self, redirect_uri: str, hook: AuthorizeHook) -> None:
        self.redirect_uri = redirect_uri
        self._hook = hook

    async def authorize(self, url: str) -> str:
        outcome = self._hook(url)
        callback = await outcome if inspect.isawaitable(outcome) else outcome
        if not isinstance(callback, str):
            raise OAuthError("on_authorize must return the URL the browser was redirected to")
        return callback


class HookRedirect:
    """A fixed ``redirect_uri`` and your ``authorize(url)`` function."""

    def __init__(self, redirect_uri: str, hook: AuthorizeHook) -> None:
        self.redirect_uri = redirect_uri
        self.hook = hook

    @contextlib.asynccontextmanager
    async def session(self) -> AsyncIterator[RedirectSession]:
        yield _HookSession(self.redirect_uri, self.hook)


class LoopbackRedirect:
    """The default redirect handler: a one-shot listener on a loopback address.

    ``port=0`` takes any free port for each authorization (authorization servers allow any
    port on a loopback redirect URI of a native app); give one when your registration or
    your Client ID Metadata Document names it. ``open_browser=False`` only prints the URL;
    a function ``open_browser(url)`` (plain or ``async``) opens it your way (a window of
    your application, a test's headless login). ``timeout`` bounds the wait for the user,
    in seconds.
    """

    def __init__(
        self,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        path: str = "/callback",
        open_browser: bool | Callable[[str], object] = True,
        timeout: float = 300.0,
    ) -> None:
        if not is_loopback(host):
            raise ValueError(f"LoopbackRedirect listens on a loopback host, not {host!r}")
        self.host = host
        self.port = port
        self.path = path if path.startswith("/") else f"/{path}"
        self.open_browser = open_browser
        self.timeout = timeout

    @classmethod
    def for_uri(cls, redirect_uri: str, **options: Any) -> LoopbackRedirect:
        """A listener for an ``http://127.0.0.1:PORT/path`` redirect URI."""
        parts = urlsplit(redirect_uri)
        if parts.scheme != "http" or not is_loopback(parts.hostname) or parts.port is None:
            raise ValueError(
                f"{redirect_uri!r} is not an http loopback URI with a port, which the default "
                "redirect listener needs; give on_authorize= to handle another redirect URI"
            )
        return cls(
            host=parts.hostname or "127.0.0.1", port=parts.port, path=parts.path or "/", **options
        )

    @contextlib.asynccontextmanager
    async def session(self) -> AsyncIterator[RedirectSession]:
        arrived: asyncio.Future[str] = asyncio.get_running_loop().create_future()

        async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            try:
                async with asyncio.timeout(_READ_TIMEOUT):
                    head = await reader.readuntil(b"\r\n\r\n")
            except (TimeoutError, asyncio.IncompleteReadError, asyncio.LimitOverrunError):
                writer.close()
                return
            target = head.split(b"\r\n", 1)[0].split(b" ")
            path = target[1].decode("latin-1") if len(target) == 3 else ""
            if urlsplit(path).path == self.path and not arrived.done():
                arrived.set_result(f"{uri_base}{path}")
                status, body = b"200 OK", _DONE_PAGE
            else:
                status, body = b"404 Not Found", b"Not found"
            writer.write(
                b"HTTP/1.1 " + status + b"\r\nContent-Type: text/html; charset=utf-8\r\n"
                b"Content-Length: "
                + str(len(body)).encode()
                + b"\r\nConnection: close\r\n\r\n"
                + body
            )
            with contextlib.suppress(ConnectionError):
                await writer.drain()
            writer.close()

        server = await asyncio.start_server(answer, self.host, self.port, limit=_MAX_REQUEST_HEAD)
        port = server.sockets[0].getsockname()[1]
        host = f"[{self.host}]" if ":" in self.host else self.host
        uri_base = f"http://{host}:{port}"
        try:
            yield _LoopbackSession(f"{uri_base}{self.path}", arrived, self)
        finally:
            server.close()
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(_READ_TIMEOUT):
                    await server.wait_closed()


class _LoopbackSession:
    def __init__(
        self, redirect_uri: str, arrived: asyncio.Future[str], options: LoopbackRedirect
    ) -> None:
        self.redirect_uri = redirect_uri
        self._arrived = arrived
        self._options = options

    async def authorize(self, url: str) -> str:
        opener = self._options.open_browser
        if callable(opener):
            opened = opener(url)
            if inspect.isawaitable(opened):
                await opened
        else:
            print(f"To authorize, open this URL in a browser:\n\n    {url}\n", file=sys.stderr)
            if opener:
                with contextlib.suppress(Exception):  # no browser here: the printed URL will do
                    await asyncio.to_thread(webbrowser.open, url)
        try:
            async with asyncio.timeout(self._options.timeout):
                return await self._arrived
        except TimeoutError:
            raise OAuthError(
                f"No authorization came back to {self.redirect_uri} within "
                f"{self._options.timeout:g} s"
            ) from None
