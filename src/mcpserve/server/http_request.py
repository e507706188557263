"""The HTTP request behind a call, as a handler sees it: ``ctx.http``.

Built from the ASGI scope only when a handler asks (most never do), so a request pays
nothing for it. Over stdio, and in memory, there is no HTTP request: ``ctx.http`` is None.

The client address is what the ASGI server saw: behind a proxy, the proxy's, unless the
server is told to trust ``X-Forwarded-For`` (``server.run("http", proxy_headers=True)`` or
uvicorn's ``--proxy-headers`` with ``--forwarded-allow-ips``).
"""

from __future__ import annotations

from collections.abc import Mapping
from urllib.parse import parse_qs

from .._types import Scope
from ..protocol.http_headers import decode_headers


class HTTPRequest:
    """Method, path, query, headers (lower-case names) and client address of one request."""

    __slots__ = ("client", "headers", "method", "path", "query_string", "root_path", "scheme")

    def __init__(
        self,
        method: str,
        path: str,
        query_string: str = "",
        headers: Mapping[str, str] | None = None,
        client: tuple[str, int] | None = None,
        scheme: str = "http",
        root_path: str = "",
    ) -> None:
        self.method = method
        self.path = path
        self.query_string = query_string
        self.headers: Mapping[str, str] = headers if headers is not None else {}
        self.client = client
        self.scheme = scheme
        self.root_path = root_path

    @classmethod
    def from_scope(cls, scope: Scope) -> HTTPRequest:
        client = scope.get("client")
        return cls(
            method=scope.get("method", "POST"),
            path=scope.get("path", ""),
            query_string=bytes(scope.get("query_string", b"")).decode("latin-1"),
            headers=decode_headers(scope.get("headers", ())),
            client=(str(client[0]), int(client[1])) if client else None,
            scheme=scope.get("scheme", "http"),
            root_path=scope.get("root_path", ""),
        )

    @property
    def query(self) -> dict[str, list[str]]:
        """The query string's parameters, each with every value it was given."""
        return parse_qs(self.query_string, keep_blank_values=True)

    def __repr__(self) -> str:
        return f"HTTPRequest({self.method} {self.path!r})"
