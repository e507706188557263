"""The pytest plugin: a server under test, driven in memory or served over HTTP.

Installing mcpserve registers this module with pytest (entry point ``pytest11``, named
``mcpserve``; ``-p no:mcpserve`` switches it off), so it is loaded by every pytest run in
the environment, including those of projects that never use it. Loading it therefore costs
no more than ``import mcpserve``: it registers a marker and defines fixtures, and only a
fixture in use imports what it needs (the client, uvicorn).

The server a test is about comes from the ``mcp_server`` fixture. By default it reads the
closest ``@pytest.mark.mcp_server(target)`` marker (on the test, its class or its module's
``pytestmark``), where ``target`` is a :class:`~mcpserve.Server` or the import path of one
(``"app:server"``); a project may override the fixture to build the server itself. Two
fixtures use it:

* ``mcp_client`` (async, run by pytest-asyncio): ``Client(server)`` in memory, opened for
  the test, so the server's lifespan runs around it. The server answers with
  ``raise_exceptions`` on (``mcp_raise_exceptions``): a handler's unexpected exception
  reaches the test as itself, type, message and traceback, instead of the wire's "Internal
  error (ref ...)" or a tool's ``isError`` result. ``mcp_server(..., raise_exceptions=False)``
  (or overriding ``mcp_raise_exceptions``) shows what a client would see instead.
* ``mcp_http_url``: the server's Streamable HTTP endpoint, ``http://127.0.0.1:PORT/mcp``,
  served by uvicorn in a background thread on a free port for the test
  (:func:`serve_http`, usable outside pytest too). The wire there is the real one: failures
  are masked, and logged (pytest shows the log of a failing test).

A test uses one of the two: a server object belongs to one event loop at a time, and the
HTTP fixture's loop is its thread's.

A protected server (``auth=``) is tested with tokens from a :class:`TestIssuer`
(:mod:`mcpserve.auth.testing`), which loads PyJWT only when first used.

An ``async def`` test that asks for ``mcp_client`` (or names a server with the marker) is
handed to pytest-asyncio as if marked ``@pytest.mark.asyncio``: in pytest-asyncio's default
strict mode an unmarked coroutine is not run at all, and a test that asks for an MCP client
can only mean to be run. The mark is added while the test is collected, before
pytest-asyncio decides which functions it runs (:func:`pytest_pycollect_makeitem`).
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import socket
import threading
import time
from collections.abc import AsyncIterator, Generator, Iterator
from typing import TYPE_CHECKING, Any

import pytest

from ._extras import needs_extra
from .server.server import Server

if TYPE_CHECKING:
    from .client.client import Client

    async_fixture = pytest.fixture
else:
    try:  # pytest-asyncio runs async fixtures, in its strict mode and its auto mode alike
        from pytest_asyncio import fixture as async_fixture
    except ModuleNotFoundError:  # then mcp_client fails when used, and pytest says why
        async_fixture = pytest.fixture

__all__ = ["TestIssuer", "load_server", "serve_http"]

MARKER = "mcp_server"
#: How long the HTTP fixture waits for uvicorn to start serving, and then to stop.
HTTP_TIMEOUT_SECONDS = 10.0


def pytest_configure(config: pytest.Config) -> None:
    # Registered, so --strict-markers accepts it in every project.
    config.addinivalue_line(
        "markers",
        f"{MARKER}(server, *, raise_exceptions=True): the mcpserve Server (or its import "
        "path, 'module:attribute') that the mcp_client and mcp_http_url fixtures serve",
    )


@pytest.hookimpl(wrapper=True, trylast=True)
def pytest_pycollect_makeitem(
    collector: pytest.Module | pytest.Class, name: str, obj: object
) -> Generator[None, Any, Any]:
    # trylast makes this wrapper the innermost: it marks the collected tests before
    # pytest-asyncio's own wrapper, outside it, picks the ones it runs.
    collected = yield
    if not collector.config.pluginmanager.hasplugin("asyncio"):
        return collected  # without pytest-asyncio the marker does not exist
    for item in collected if isinstance(collected, list) else [collected]:
        if (
            isinstance(item, pytest.Function)
            and inspect.iscoroutinefunction(item.obj)
            and ("mcp_client" in item.fixturenames or item.get_closest_marker(MARKER))
            and item.get_closest_marker("asyncio") is None
        ):
            item.add_marker("asyncio")
    return collected


def load_server(target: Any) -> Server:
    """``target`` if it is a :class:`~mcpserve.Server`, else the one its import path names
    (``"package.module:attribute"``)."""
    found = target
    if isinstance(target, str):
        import pkgutil

        found = pkgutil.resolve_name(target)
    if not isinstance(found, Server):
        raise TypeError(f"{target!r} is not a mcpserve Server (got {type(found).__name__})")
    return found


def _marker(request: pytest.FixtureRequest) -> pytest.Mark | None:
    marker: pytest.Mark | None = request.node.get_closest_marker(MARKER)
    return marker


@pytest.fixture
def mcp_server(request: pytest.FixtureRequest) -> Server:
    """The server under test: the closest ``mcp_server`` marker's. Override to choose it."""
    marker = _marker(request)
    if marker is None or len(marker.args) != 1:
        pytest.fail(
            "Which server? Mark the test @pytest.mark.mcp_server(server) (a Server or "
            "'module:attribute'), or define an mcp_server fixture that returns one",
            pytrace=False,
        )
    return load_server(marker.args[0])


@pytest.fixture
def mcp_raise_exceptions(request: pytest.FixtureRequest) -> bool:
    """Whether ``mcp_client`` surfaces a handler's exceptions (the marker's
    ``raise_exceptions``, default true). Override to choose for a whole directory."""
    marker = _marker(request)
    return bool(marker.kwargs.get("raise_exceptions", True)) if marker is not None else True


@async_fixture
async def mcp_client(mcp_server: Server, mcp_raise_exceptions: bool) -> AsyncIterator[Client]:
    """An in-memory :class:`~mcpserve.Client` to the server, its lifespan running."""
    from .client.client import Client

    previous = mcp_server.raise_exceptions
    mcp_server.raise_exceptions = mcp_raise_exceptions
    try:
        async with Client(mcp_server) as client:
            yield client
    finally:
        mcp_server.raise_exceptions = previous  # the server may be a module's, shared


@pytest.fixture
def mcp_http_url(mcp_server: Server) -> Iterator[str]:
    """The server's Streamable HTTP URL, served on a free loopback port for the test."""
    with serve_http(mcp_server) as url:
        yield url


@contextlib.contextmanager
def serve_http(
    server: Server,
    *,
    path: str = "/mcp",
    timeout: float = HTTP_TIMEOUT_SECONDS,
    **app_options: Any,
) -> Iterator[str]:
    """Serve ``server`` over Streamable HTTP on ``127.0.0.1`` (a free port) in a thread,
    and yield its URL; stop it on exit.

    Waits at most ``timeout`` seconds for uvicorn to start (the server's lifespan included),
    and as long again for it to stop. ``app_options`` go to :meth:`Server.http_app`.
    """
    with needs_extra("Serving HTTP in a test (mcp_http_url)"):
        import uvicorn

    app = server.http_app(path, **app_options)
    # Bound here and handed over: the port is ours before uvicorn starts, no race for it.
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    # No log_config: uvicorn leaves logging alone, and its records reach pytest's capture.
    config = uvicorn.Config(
        app,
        lifespan="on",
        log_config=None,
        access_log=False,
        timeout_graceful_shutdown=max(1, round(timeout / 2)),
    )
    uv = uvicorn.Server(config)
    loop = asyncio.new_event_loop()  # the thread's, so the stop can reach into it
    failures: list[BaseException] = []

    def run() -> None:
        try:
            loop.run_until_complete(uv.serve(sockets=[sock]))
        except BaseException as exc:  # seen by the waiting thread, which raises it
            failures.append(exc)
        finally:
            loop.close()

    thread = threading.Thread(target=run, name=f"mcpserve-http-{port}", daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + timeout
        while not uv.started:
            if not thread.is_alive():
                cause = failures[0] if failures else None
                raise RuntimeError("The HTTP server stopped before serving: see its log") from cause
            if time.monotonic() > deadline:
                raise TimeoutError(f"The HTTP server did not start within {timeout} s")
            time.sleep(0.005)
        yield f"http://127.0.0.1:{port}{path}"
    finally:
        _stop(uv, loop, thread, server, timeout)
        sock.close()


def _stop(
    uv: Any,
    loop: asyncio.AbstractEventLoop,
    thread: threading.Thread,
    server: Server,
    timeout: float,
) -> None:
    if thread.is_alive():
        # An open listen stream never ends by itself: end them all first, as a signal does
        # when serving for real, so uvicorn's graceful shutdown need not wait them out.
        with contextlib.suppress(RuntimeError):  # the loop closed meanwhile
            loop.call_soon_threadsafe(server.subscriptions.end_all)
    uv.should_exit = True
    thread.join(timeout)
    if thread.is_alive():
        uv.force_exit = True
        thread.join(timeout)
    if thread.is_alive():
        raise TimeoutError(f"The HTTP server did not stop within {2 * timeout} s")


if TYPE_CHECKING:
    from .auth.testing import TestIssuer as TestIssuer


def __getattr__(name: str) -> Any:
    # TestIssuer signs with PyJWT: imported on first use, so that loading the plugin (which
    # every pytest run in the environment does) costs nothing more.
    if name == "TestIssuer":
        from .auth.testing import TestIssuer

        return TestIssuer
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
