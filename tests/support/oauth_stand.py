"""An MCP server behind a guard of the test's own, and the authorization servers it names,
each served on 127.0.0.1: for the OAuth client's tests that look at what went over the wire.

* :class:`TokenServer`: an authorization server (or an enterprise identity provider) with
  RFC 8414 metadata and a token endpoint that ``answer(request)`` decides;
* :class:`GuardedEndpoint`: protected resource metadata naming a :class:`TokenServer`, and
  a real mcpserve :class:`~mcpserve.Server` at ``/mcp`` behind ``guard(request)``, which
  either refuses the request (its answer is sent) or lets it through (``None``).

Every request either one receives is kept, in order, as a :class:`Seen` (headers lowered,
the form decoded), so a test asserts what the client sent and in which order.
:func:`serving` serves them, each on a free port of its own (so each is an origin of its
own, as an authorization server and a resource server usually are), in the test's loop.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from http_serving import serve_asgi_here
from mcpserve import Server


@dataclass(frozen=True)
class Seen:
    method: str
    path: str
    headers: dict[str, str]
    form: dict[str, str]


async def _seen(request: Request) -> Seen:
    body = (await request.body()).decode()
    form = dict(parse_qsl(body)) if "form" in request.headers.get("content-type", "") else {}
    headers = {name.lower(): value for name, value in request.headers.items()}
    return Seen(request.method, request.url.path, headers, form)


def oauth_error(error: str, status: int = 400, **headers: str) -> JSONResponse:
    return JSONResponse({"error": error, "error_description": f"test: {error}"}, status, headers)


@dataclass
class TokenServer:
    """An authorization server whose token endpoint answers ``answer(request)``."""

    answer: Callable[[Seen], Response]
    metadata: dict[str, Any] = field(default_factory=dict)
    seen: list[Seen] = field(default_factory=list)
    url: str = ""  # known once served

    @property
    def token_endpoint(self) -> str:
        return f"{self.url}/token"

    def app(self) -> Starlette:
        async def metadata(request: Request) -> JSONResponse:
            self.seen.append(await _seen(request))
            document = {
                "issuer": self.url,
                "authorization_endpoint": f"{self.url}/authorize",
                "token_endpoint": self.token_endpoint,
                "response_types_supported": ["code"],
                "code_challenge_methods_supported": ["S256"],
                "token_endpoint_auth_methods_supported": ["client_secret_basic", "none"],
                **self.metadata,
            }
            return JSONResponse(document)

        async def token(request: Request) -> Response:
            seen = await _seen(request)
            self.seen.append(seen)
            return self.answer(seen)

        return Starlette(routes=[
            Route("/.well-known/oauth-authorization-server", metadata),
            Route("/token", token, methods=["POST"]),
        ])  # fmt: skip

    def token_requests(self) -> list[Seen]:
        return [seen for seen in self.seen if seen.path == "/token"]


def hello_server() -> Server:
    server: Server = Server("guarded")

    @server.tool
    def hello() -> str:
        """Say hello."""
        return "hello"

    return server


@dataclass
class GuardedEndpoint:
    """An mcpserve server at ``/mcp`` that ``guard`` lets requests through to."""

    issuer: TokenServer
    guard: Callable[[Seen], Response | None]
    seen: list[Seen] = field(default_factory=list)
    url: str = ""  # known once served

    @property
    def mcp(self) -> str:
        return f"{self.url}/mcp"

    def app(self) -> Any:
        inner = hello_server().http_app("/mcp")
        prm = "/.well-known/oauth-protected-resource/mcp"

        async def app(scope: Any, receive: Any, send: Any) -> None:
            if scope["type"] != "http":
                await inner(scope, receive, send)  # the lifespan
                return
            if scope["path"] == prm:
                document = {"resource": self.mcp, "authorization_servers": [self.issuer.url]}
                await JSONResponse(document)(scope, receive, send)
                return
            request = Request(scope, receive)
            body = await request.body()
            seen = await _seen(request)
            self.seen.append(seen)
            refusal = self.guard(seen)
            if refusal is not None:
                await refusal(scope, receive, send)
            else:
                await inner(scope, _replay(body, receive), send)

        return app

    def mcp_requests(self) -> list[Seen]:
        return [seen for seen in self.seen if seen.path == "/mcp"]


def _replay(body: bytes, receive: Any) -> Any:
    """``receive`` giving the body already read first, then what the client does next."""
    given = False

    async def replay() -> Any:
        nonlocal given
        if given:
            return await receive()
        given = True
        return {"type": "http.request", "body": body, "more_body": False}

    return replay


@contextlib.asynccontextmanager
async def serving(*parts: TokenServer | GuardedEndpoint) -> AsyncIterator[None]:
    """Serve each part on a port of its own, in the running loop, until the block ends."""
    async with contextlib.AsyncExitStack() as stack:
        for part in parts:
            part.url = await stack.enter_async_context(serve_asgi_here(part.app()))
        yield
