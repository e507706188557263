"""Serving a ``Server``: building the ASGI app, and running stdio or uvicorn.

Each entry point takes the server's :class:`~.endpoint.Endpoint` (what ``Server.run`` and
``Server.http_app`` pass), or the server itself.

Kept apart from the server so that ``import mcpserve`` loads no HTTP machinery: uvicorn
is imported only when HTTP is served.

The start-up checks live here too, so that a server that cannot serve says so before its
lifespan runs (which may open databases, connect upstreams, start tasks) and before a
single request is taken:

* the port: :func:`listening_socket` binds it first, and uvicorn is handed that socket
  (uvicorn itself binds only after the lifespan has started); a port in use is
  :class:`PortUnavailable`, naming the address;
* several processes: :func:`require_shared_state` refuses to start them when what they must
  share is each one's own: the ``requestState`` key, and the handshake era's sessions.

Only a process that may have siblings warns that its ``requestState`` key is its own: one
that :func:`run_http` serves is known to be alone (:attr:`HTTPApp.sole_process`), while an
app handed to a host of your own (gunicorn, ``uvicorn --workers``, replicas) cannot know.
"""

from __future__ import annotations

import contextlib
import errno
import logging
import socket
from collections.abc import Mapping
from types import EllipsisType
from typing import TYPE_CHECKING, Any

from .. import _environment as environment
from .._extras import needs_extra
from .._serving import Authenticate
from .drain import DEFAULT_DRAIN_SECONDS, DEFAULT_HTTP_SHUTDOWN_GRACE, drain_on_exit_signals
from .endpoint import Endpoint, Servable, endpoint_of

if TYPE_CHECKING:
    from .http import HTTPApp


def build_http_app(
    server: Endpoint | Servable,
    path: str = "/mcp",
    *,
    max_body_bytes: int = 4 * 1024 * 1024,
    allowed_hosts: list[str] | None = None,
    allowed_origins: list[str] | None = None,
    public_url: str | None = None,
    bind_host: str | None = None,
    keepalive_seconds: float = 15.0,
    authenticate: Authenticate | None = None,
    auth: Any = None,
    routes: Mapping[str, Any] | None = None,
    max_sessions: int = 1000,
    session_idle_seconds: float = 1800.0,
    max_requests_per_session: int = 64,
    health_path: str | None = "/healthz",
    ready_path: str | None = "/readyz",
) -> HTTPApp:
    """See :meth:`Server.http_app`."""
    from .http import HTTPApp
    from .origin import OriginPolicy

    endpoint = endpoint_of(server)
    resource_server = None
    chosen = auth if auth is not None else endpoint.auth
    if chosen is not None:
        from ..auth.mounting import IssuesTokens, Site
        from ..auth.resource import as_resource_server  # loads nothing of JOSE or httpx2

        # What the server's entries declare is what clients are told to ask for, as it is
        # when they ask: entries registered, mounted or forwarded after this app is built too.
        declared = endpoint.declared_scopes
        if isinstance(chosen, IssuesTokens):  # the endpoint's own authorization server
            site = Site(
                path=path,
                declared_scopes=declared,
                state_keys=endpoint.state_key_ring(),
                redis_url=endpoint.redis_url,
                server_name=endpoint.name,
            )
            resource_server, auth_routes = chosen.mount(site)
            routes = {**auth_routes, **(routes or {})}
        else:
            resource_server = as_resource_server(chosen).with_declared_scopes(declared)
        # The URL tokens are issued for is the one clients use: its host is allowed.
        public_url = public_url or resource_server.resource
    policy = OriginPolicy.build(
        bind_host=bind_host,
        allowed_hosts=allowed_hosts,
        allowed_origins=allowed_origins,
        public_url=public_url,
    )
    from .metrics_route import metrics_routes

    # Yours win: a route of your own at /metrics replaces the server's.
    routes = {**metrics_routes(endpoint, policy), **(routes or {})}
    return HTTPApp(
        endpoint,
        path=path,
        max_body_bytes=max_body_bytes,
        origin_policy=policy,
        keepalive_seconds=keepalive_seconds,
        authenticate=authenticate,
        resource_server=resource_server,
        routes=routes,
        max_sessions=max_sessions,
        session_idle_seconds=session_idle_seconds,
        max_requests_per_session=max_requests_per_session,
        health_path=health_path,
        ready_path=ready_path,
    )


def run_stdio(
    server: Endpoint | Servable, *, log_format: str | None = None, **options: Any
) -> None:
    """Serve over stdio until the client closes it (``stdio.py``): with :func:`run_http`,
    the one module ``Server.run`` serves from. Nothing of HTTP is loaded. Without a
    ``shutdown_grace``, ``$MCPSERVE_SHUTDOWN_GRACE`` sets it."""
    from .stdio import run_stdio as serve

    if chosen_log_format(log_format) == "json":
        from .._json_logs import configure_json_logs

        configure_json_logs()  # on stderr: stdout is the protocol
    if "shutdown_grace" not in options:
        grace = seconds_from_environment(environment.SHUTDOWN_GRACE)
        if grace is not None:
            options["shutdown_grace"] = grace
    serve(server, **options)


def chosen_log_format(log_format: str | None) -> str:
    """``log_format`` when given, else ``MCPSERVE_LOG_FORMAT``, else ``"text"``; an unknown
    one is a ``ValueError`` naming the choices."""
    chosen = log_format or environment.read(environment.LOG_FORMAT) or "text"
    if chosen not in ("text", "json"):
        raise ValueError(f"Unknown log format {chosen!r}; use 'text' or 'json'")
    return chosen


def run_http(
    server: Endpoint | Servable,
    *,
    host: str,
    port: int,
    path: str,
    log_level: str,
    access_log: bool = False,
    proxy_headers: bool = False,
    drain_seconds: float | None = None,
    shutdown_grace: float | EllipsisType | None = ...,
    log_format: str | None = None,
    **app_options: Any,
) -> None:
    """Serve with uvicorn until SIGINT/SIGTERM, draining first (``drain.py``).

    On SIGTERM ``/readyz`` fails at once, requests are still answered for ``drain_seconds``
    (``$MCPSERVE_DRAIN_SECONDS`` when not given, else 5), then requests still running get
    ``shutdown_grace`` seconds (None: as long as they take; ``$MCPSERVE_SHUTDOWN_GRACE``
    when not given, else 20) before they are cancelled.

    uvicorn picks its fast parts by itself (``loop`` and ``http`` "auto": uvloop and
    httptools, which the ``http`` extra installs where the platform has them). The access
    log is off unless asked for: writing a line per request costs more than answering it.
    Errors are logged either way. So is uvicorn's rewriting of each request's client address
    and scheme from ``X-Forwarded-*`` (``proxy_headers``): mcpserve reads neither, and it
    costs about a tenth of a request's time.

    ``log_format="json"`` writes every line, uvicorn's included, as JSON (``_json_logs.py``).
    """
    with needs_extra('server.run("http")'):
        import uvicorn

    log_config = uvicorn_log_config(log_format, log_level)

    sock = listening_socket(host, port)  # a port in use is said before the lifespan runs
    try:
        endpoint = endpoint_of(server)
        app = build_http_app(endpoint, path, bind_host=host, **app_options)
        app.sole_process = True
        if drain_seconds is None:
            drain_seconds = seconds_from_environment(environment.DRAIN_SECONDS)
        drain = DEFAULT_DRAIN_SECONDS if drain_seconds is None else drain_seconds
        if shutdown_grace is ...:
            grace = seconds_from_environment(environment.SHUTDOWN_GRACE)
            shutdown_grace = DEFAULT_HTTP_SHUTDOWN_GRACE if grace is None else grace

        def load() -> HTTPApp:  # called by uvicorn once it handles the signals itself
            drain_on_exit_signals(endpoint, app.state, drain, shutdown_grace)
            return app

        config = uvicorn.Config(
            load,
            factory=True,
            host=host,
            port=port,
            lifespan="on",
            log_level=log_level,
            log_config=log_config,
            loop="auto",
            http="auto",
            access_log=access_log,
            proxy_headers=proxy_headers,
            # Typed int by uvicorn, used as asyncio.timeout's delay: a float is fine.
            timeout_graceful_shutdown=shutdown_grace,  # type: ignore[arg-type]
        )
        with contextlib.suppress(KeyboardInterrupt):  # uvicorn re-raises the Ctrl-C it handled
            _announcing(uvicorn.Server)(config).run(sockets=[sock])
    finally:
        sock.close()


def seconds_from_environment(name: str) -> float | None:
    """A number of seconds set in the environment variable ``name``, or None when unset.
    Raises ``ValueError`` naming the variable when it is not a number of seconds."""
    raw = environment.read(name)
    if raw is None:
        return None
    try:
        seconds = float(raw)
    except ValueError:
        seconds = -1.0
    if not seconds >= 0:  # also refuses nan
        raise ValueError(f"{name} must be a number of seconds (0 or more), not {raw!r}")
    return seconds


def uvicorn_log_config(log_format: str | None, log_level: str = "info") -> Any:
    """What uvicorn's ``log_config`` is for the chosen log format: its own default for text;
    for JSON, the JSON format's configuration, applied to this process at once too (so the
    lines before uvicorn starts are JSON as well)."""
    if chosen_log_format(log_format) == "text":
        from uvicorn.config import LOGGING_CONFIG

        return LOGGING_CONFIG
    from .._json_logs import configure_json_logs

    return configure_json_logs(log_level)


def _announcing(base: type[Any]) -> type[Any]:
    """``uvicorn.Server`` that says where it serves once started, as it does when it binds
    the port itself (given a socket, it expects a supervisor to have said so)."""

    class Announcing(base):  # type: ignore[misc]
        async def startup(self, sockets: list[socket.socket] | None = None) -> None:
            await super().startup(sockets)
            if self.started and sockets:
                host = self.config.host
                port = sockets[0].getsockname()[1]
                shown = f"[{host}]" if ":" in host else host
                logging.getLogger("uvicorn.error").info(
                    "Uvicorn running on %s (Press CTRL+C to quit)", f"http://{shown}:{port}"
                )

    return Announcing


class PortUnavailable(OSError):
    """``host:port`` cannot be listened on: in use (:attr:`in_use`), not this machine's
    address, or not this user's to take. ``errno`` and ``strerror`` are the system's."""

    def __init__(self, host: str, port: int, cause: OSError) -> None:
        super().__init__(cause.errno, cause.strerror or str(cause))
        self.host = host
        self.port = port

    @property
    def in_use(self) -> bool:
        return self.errno == errno.EADDRINUSE

    def __str__(self) -> str:
        return f"Cannot listen on {self.host}:{self.port}: {self.strerror}"


def listening_socket(host: str, port: int) -> socket.socket:
    """A socket listening on ``host:port``, set up as uvicorn sets up its own
    (``SO_REUSEADDR``, so a port left in TIME_WAIT by the last run is free), for
    ``uvicorn.Server.run(sockets=[...])``. Raises :class:`PortUnavailable`."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host.strip("[]"), port))
        sock.listen(2048)  # uvicorn's default backlog
    except OSError as exc:
        sock.close()
        raise PortUnavailable(host, port, exc) from None
    return sock


def check_port(host: str, port: int) -> None:
    """Raise :class:`PortUnavailable` unless ``host:port`` can be listened on now.

    For servers that uvicorn binds itself (its reloader and ``workers``, which bind in the
    supervising process before any worker imports the app): checked the moment before, the
    port is ours to report; should another process take it in between, uvicorn's own error
    shows instead."""
    listening_socket(host, port).close()


def require_shared_state(server: Endpoint | Servable, processes: int) -> None:
    """Refuse to serve from several ``processes`` what each would keep to itself.

    A ``requestState`` sealed with a key one process made up is refused by the others
    (``Runtime.require_shared_state_keys``); and a handshake-era session lives in the
    process that began it unless sessions are kept in Redis, so the client's next request,
    reaching another process, would be refused as being of no session. Raises
    ``RuntimeError`` naming what to set.
    """
    endpoint = endpoint_of(server)
    endpoint.require_shared_state_keys(processes)
    if processes > 1 and endpoint.handshake is not None and endpoint.redis_url is None:
        raise RuntimeError(
            f"Serving from {processes} processes needs the handshake era's sessions shared, or "
            "every 2025-11-25 (and older) client breaks at its second request: set "
            "MCPSERVE_REDIS_URL (or pass Server(redis_url=...)), or serve 2026-07-28 clients "
            "only with Server(..., legacy=False)"
        )


def end_listens_on_exit_signals(server: Endpoint | Servable) -> None:
    """Before the handlers now installed for SIGINT and SIGTERM (uvicorn's), end every open
    ``subscriptions/listen`` gracefully, each with its final result, with no drain window.

    uvicorn waits for open connections before the ASGI lifespan shutdown, and a listen
    stream never closes by itself: without this, a signal would leave the server waiting.
    Call it from the process's main thread once uvicorn is serving (in an app factory).
    :func:`~.drain.drain_on_exit_signals` is the same with a drain window and ``/readyz``.
    """
    drain_on_exit_signals(server, None, 0.0)
