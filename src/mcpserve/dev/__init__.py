"""The browser dev page: ``mcpserve dev app.py`` serves a server and a page to drive it.

Theory of operation
-------------------
One process, one port. :func:`dev_app` is the server's ordinary HTTP app
(:meth:`Server.http_app`) with a few extra routes: ``/`` answers the page and
``/dev/<file>`` its scripts and stylesheet, all read once from ``static/`` inside this
package. The page is plain HTML with hand-written ES modules: no framework, no build step,
nothing fetched from elsewhere, so it works offline and what ships is what runs.

The page is a client like any other. It speaks JSON-RPC with ``fetch`` to the MCP endpoint
(``/mcp``) through every check a remote client meets: the Host and Origin rules, the
2026-07-28 headers (``MCP-Protocol-Version``, ``Mcp-Method``, ``Mcp-Name``,
``Mcp-Param-*``) and per-request ``_meta``, or, switched to the handshake era,
``initialize`` and an ``Mcp-Session-Id``. What the page shows is what clients get; a request
it makes wrongly would be refused like anyone's. The page's own files bypass those checks
(routes are answered first, ``transports/http.py``), since they are static and public.

:func:`serve_dev` binds the socket itself before uvicorn starts, so that the URLs it prints
name the real port (``port=0`` picks a free one), and then serves as
:func:`~mcpserve.transports.serve.run_http` does: subscriptions end gracefully on Ctrl-C.
The page is meant for a developer's machine: it binds to 127.0.0.1 unless told otherwise.
"""

from __future__ import annotations

import logging
import socket
import sys
from typing import TYPE_CHECKING, Any, TextIO

from .._extras import needs_extra
from ..server.server import Server
from .assets import asset_routes
from .sandbox import SandboxPage

if TYPE_CHECKING:
    from ..transports.http import HTTPApp

__all__ = ["dev_app", "serve_dev"]

_ANY_ADDRESS = ("", "0.0.0.0", "::")


def dev_app(server: Server, path: str = "/mcp", **options: Any) -> HTTPApp:
    """The server's HTTP app at ``path``, with the dev page at ``/``.

    ``options`` are those of :meth:`Server.http_app`; ``routes`` of your own are kept
    (the page's win a clash: it cannot work without them).
    """
    from ..transports.serve import build_http_app

    endpoint = "/" + path.strip("/")
    if endpoint == "/":
        raise ValueError("The dev page lives at /: serve the MCP endpoint at another path")
    routes = {**(options.pop("routes", None) or {}), **asset_routes(endpoint)}
    routes["/dev/sandbox.html"] = SandboxPage()
    return build_http_app(server, endpoint, routes=routes, **options)


def page_urls(host: str, port: int, path: str = "/mcp") -> tuple[str, str]:
    """The page's URL and the endpoint's, as a browser on this machine reaches them."""
    shown = "127.0.0.1" if host in _ANY_ADDRESS else host
    if ":" in shown and not shown.startswith("["):
        shown = f"[{shown}]"
    base = f"http://{shown}:{port}"
    return f"{base}/", base + "/" + path.strip("/")


def serve_dev(
    server: Server,
    *,
    port: int = 8000,
    host: str = "127.0.0.1",
    path: str = "/mcp",
    log_level: str = "warning",
    out: TextIO | None = None,
    **app_options: Any,
) -> None:
    """Serve ``server`` and its dev page on ``host:port`` until Ctrl-C (or SIGTERM).

    Prints the page's URL and the MCP endpoint's to ``out`` (default stdout) once the port
    is bound. ``app_options`` go to :meth:`Server.http_app` (``allowed_hosts``, ...).
    """
    with needs_extra("The dev page"):
        import uvicorn
    from ..transports.serve import end_listens_on_exit_signals

    app = dev_app(server, path, bind_host=host, **app_options)
    sock = _bind(host, port)
    page, endpoint = page_urls(host, sock.getsockname()[1], path)
    stream = out if out is not None else sys.stdout
    version = f" {server.version}" if server.version else ""
    print(f"mcpserve dev: {server.name}{version}", file=stream)
    print(f"  dev page:      {page}", file=stream)
    print(f"  MCP endpoint:  {endpoint}", file=stream)
    print("Press Ctrl-C to stop.", file=stream, flush=True)
    _quiet_single_process_warning()

    def load() -> HTTPApp:  # called by uvicorn once it handles the signals itself
        end_listens_on_exit_signals(server)
        return app

    config = uvicorn.Config(
        load,
        factory=True,
        lifespan="on",
        log_level=log_level,
        loop="auto",
        http="auto",
        access_log=False,
    )
    try:
        uvicorn.Server(config).run(sockets=[sock])
    except KeyboardInterrupt:  # uvicorn re-raises the Ctrl-C it handled
        pass
    finally:
        sock.close()


def _bind(host: str, port: int) -> socket.socket:
    """A listening socket on ``host:port``: bound here so the printed URL has the real port.

    Raises :class:`OSError` naming the address (a port in use is the usual reason)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host.strip("[]"), port))
        sock.listen(128)
    except OSError as exc:
        sock.close()
        raise OSError(
            exc.errno, f"Cannot serve the dev page on {host}:{port}: {exc.strerror}"
        ) from exc
    return sock


class _DropPerProcessKey(logging.Filter):
    """The dev page is one process by construction, so the warning that requestState keys
    are per process (meant for deployments of several) would only be noise here."""

    def filter(self, record: logging.LogRecord) -> bool:
        from ..transports.http import PER_PROCESS_KEY_WARNING

        return record.msg != PER_PROCESS_KEY_WARNING


def _quiet_single_process_warning() -> None:
    log = logging.getLogger("mcpserve.http")
    if not any(isinstance(known, _DropPerProcessKey) for known in log.filters):
        log.addFilter(_DropPerProcessKey())
