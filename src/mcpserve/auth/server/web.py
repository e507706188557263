"""The little HTTP the authorization server's endpoints speak, over plain ASGI.

Its pages and JSON answers are few and small, so they are written here rather than brought
in with a web framework: a :class:`WebRequest` (the query, a form body read within a size
limit, the cookies, the client's address) and the answers (:func:`send_json`,
:func:`send_redirect`, :func:`send_html`). Every answer says ``Cache-Control: no-store``
(RFC 6749 5.1: nothing here may be kept by a cache), and pages may not be framed by another
site (a consent button under someone else's page would be clicked blind).

A parameter given twice is refused (RFC 6749 3.1: "parameters MUST NOT be included more than
once"): :class:`Malformed`, which the endpoints answer as ``invalid_request``.
"""

from __future__ import annotations

from collections.abc import Mapping
from http.cookies import CookieError, SimpleCookie
from urllib.parse import parse_qsl

import orjson

from ..._types import Receive, Scope, Send

#: The largest form or JSON body an endpoint reads (a registration is the largest).
MAX_BODY_BYTES = 64 * 1024

_NO_STORE = [(b"cache-control", b"no-store"), (b"pragma", b"no-cache")]
_PAGE_HEADERS = [
    (b"content-type", b"text/html; charset=utf-8"),
    (b"x-frame-options", b"DENY"),
    # No form-action: browsers apply it to the redirects after a submission too, and the
    # consent form's answer redirects to the identity provider or the client.
    (
        b"content-security-policy",
        b"default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'",
    ),
    (b"referrer-policy", b"no-referrer"),
]


class Malformed(Exception):
    """The request cannot be read: a repeated parameter, a body too large or not UTF-8."""


class TooLarge(Malformed):
    """The body is over the limit."""


def _single(pairs: list[tuple[str, str]]) -> dict[str, str]:
    values: dict[str, str] = {}
    for name, value in pairs:
        if name in values:
            raise Malformed(f"The parameter {name} is given more than once")
        values[name] = value
    return values


class WebRequest:
    """One HTTP request to an endpoint of the authorization server."""

    def __init__(self, scope: Scope, receive: Receive) -> None:
        self.scope = scope
        self._receive = receive
        self.method: str = scope["method"]
        self.headers: dict[str, str] = {}
        for name, value in scope["headers"]:
            key = name.decode("latin-1").lower()
            text = value.decode("latin-1")
            # Repeated headers join as HTTP says they may (cookies with "; ").
            if key in self.headers:
                text = self.headers[key] + ("; " if key == "cookie" else ", ") + text
            self.headers[key] = text

    def query(self) -> dict[str, str]:
        """The query parameters (each at most once)."""
        raw = self.scope.get("query_string", b"").decode("latin-1")
        return _single(parse_qsl(raw, keep_blank_values=True))

    @property
    def client_address(self) -> str:
        client = self.scope.get("client")
        return str(client[0]) if client else "unknown"

    def cookie(self, name: str) -> str | None:
        raw = self.headers.get("cookie")
        if not raw:
            return None
        jar: SimpleCookie = SimpleCookie()
        try:
            jar.load(raw)
        except CookieError:
            return None
        morsel = jar.get(name)
        return morsel.value if morsel is not None else None

    async def body(self, limit: int = MAX_BODY_BYTES) -> bytes:
        """The whole body, or :class:`TooLarge` past ``limit`` bytes (read no further)."""
        declared = self.headers.get("content-length")
        if declared is not None and declared.isdigit() and int(declared) > limit:
            raise TooLarge(f"The body is larger than {limit} bytes")
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await self._receive()
            if message["type"] == "http.disconnect":
                break
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > limit:
                raise TooLarge(f"The body is larger than {limit} bytes")
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        return b"".join(chunks)

    async def form(self) -> dict[str, str]:
        """An ``application/x-www-form-urlencoded`` body (each parameter at most once)."""
        kind = self.headers.get("content-type", "").split(";")[0].strip().lower()
        if kind != "application/x-www-form-urlencoded":
            raise Malformed("The body must be application/x-www-form-urlencoded")
        try:
            text = (await self.body()).decode("utf-8")
        except UnicodeDecodeError:
            raise Malformed("The body is not UTF-8") from None
        return _single(parse_qsl(text, keep_blank_values=True))


async def _send(send: Send, status: int, body: bytes, headers: list[tuple[bytes, bytes]]) -> None:
    headers = [*headers, *_NO_STORE, (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


async def send_json(
    send: Send,
    status: int,
    document: Mapping[str, object],
    headers: list[tuple[bytes, bytes]] | None = None,
) -> None:
    content = [(b"content-type", b"application/json")]
    await _send(send, status, orjson.dumps(document), content + (headers or []))


async def send_redirect(
    send: Send, location: str, headers: list[tuple[bytes, bytes]] | None = None
) -> None:
    """303 See Other: the browser follows with a GET, whatever the request's method was."""
    await _send(send, 303, b"", [(b"location", location.encode()), *(headers or [])])


async def send_html(
    send: Send, status: int, page: str, headers: list[tuple[bytes, bytes]] | None = None
) -> None:
    await _send(send, status, page.encode(), _PAGE_HEADERS + (headers or []))


async def send_method_not_allowed(send: Send, allowed: str) -> None:
    await _send(send, 405, b"Method Not Allowed", [(b"allow", allowed.encode())])
