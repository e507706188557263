"""The options of serving, typed once for ``Server.http_app`` and ``Server.run`` (in
``server/``) and the transports that take them (``transports/serve.py``, ``stdio.py``).

They live below both layers, since ``server/`` may not import the transports to name them.
``docs/reference.md`` (*Streamable HTTP*, *stdio*) says what each does.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Literal, TypedDict

from ._types import ASGIApp

if TYPE_CHECKING:  # auth/ and protocol/ sit above this module (and auth/ loads on first use)
    from .auth.mounting import IssuesTokens
    from .auth.resource import ResourceServer
    from .auth.tokens import TokenVerifier
    from .protocol.core import Auth

#: Decides who is calling from the request headers (lower-cased names); ``None`` -> 401.
Authenticate = Callable[[Mapping[str, str]], "Auth | Awaitable[Auth | None] | None"]


class HTTPOptions(TypedDict, total=False):
    """``server.http_app(path, **options)``, and ``server.run("http", ...)`` after uvicorn's."""

    max_body_bytes: int
    allowed_hosts: list[str] | None
    allowed_origins: list[str] | None
    public_url: str | None
    bind_host: str | None
    keepalive_seconds: float
    authenticate: Authenticate | None
    auth: ResourceServer | TokenVerifier | IssuesTokens | None
    routes: Mapping[str, ASGIApp] | None
    max_sessions: int
    session_idle_seconds: float
    max_requests_per_session: int
    # Health: the liveness and readiness probes' paths (None: not served)
    health_path: str | None
    ready_path: str | None


class StdioOptions(TypedDict, total=False):
    """``server.run("stdio", **options)``."""

    max_message_bytes: int
    shutdown_grace: float | None


class ServeOptions(HTTPOptions, StdioOptions, total=False):
    """``server.run(transport, ...)``: the options of the transport it serves."""

    # Graceful drain over HTTP (``shutdown_grace`` above bounds the requests still running)
    drain_seconds: float | None

    # JSON logs: "text" (the default) or "json", on both transports.
    log_format: Literal["text", "json"] | None
