"""Any ASGI app served for real by uvicorn on 127.0.0.1, for the tests that need a socket.

:func:`serve_asgi` runs uvicorn in a thread of its own, with its own event loop, so a
synchronous test or fixture (and an async test that must not share its loop with the
server) can use it; :func:`serve_asgi_here` runs it as a task of the caller's loop, for a
test that reaches into the server's objects (an ``asyncio.Event`` a tool waits on).

Both listen on a socket bound before uvicorn starts: the port is ours before anything is
served, and a caller that must know its URL before it builds the app (an OAuth resource
server names its own URL) binds the socket itself and passes it in. Both wait a bounded
time for uvicorn to start, fail at once when it stops before serving, and stop it on the
way out: gracefully, then forcibly, each bounded. uvicorn is given no logging
configuration, so its records reach pytest's capture. ``mcpserve.testing.serve_http`` is
the same for a :class:`~mcpserve.Server`, for users; these take any ASGI app.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import threading
import time
from collections.abc import AsyncIterator, Iterator
from typing import Any, Literal

import uvicorn

TIMEOUT = 15.0


def bound_socket() -> socket.socket:
    """A TCP socket bound to a free port of 127.0.0.1, not yet listening."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    return sock


def _server(app: Any, lifespan: Literal["on", "off", "auto"]) -> uvicorn.Server:
    config = uvicorn.Config(app, lifespan=lifespan, log_config=None, access_log=False)
    return uvicorn.Server(config)


@contextlib.contextmanager
def _own_or_given(sock: socket.socket | None) -> Iterator[socket.socket]:
    if sock is not None:
        yield sock  # the caller's to close
        return
    with bound_socket() as own:
        yield own


@contextlib.contextmanager
def serve_asgi(
    app: Any,
    *,
    sock: socket.socket | None = None,
    lifespan: Literal["on", "off", "auto"] = "on",
    timeout: float = TIMEOUT,
) -> Iterator[str]:
    """Serve ``app`` in a thread, on ``sock`` or a free port; yield its base URL."""
    with _own_or_given(sock) as listening:
        server = _server(app, lifespan)
        loop = asyncio.new_event_loop()
        failures: list[BaseException] = []

        def run() -> None:
            try:
                loop.run_until_complete(server.serve(sockets=[listening]))
            except BaseException as exc:  # raised again by the waiting thread
                failures.append(exc)
            finally:
                loop.close()

        thread = threading.Thread(target=run, name="uvicorn-for-a-test", daemon=True)
        thread.start()
        try:
            deadline = time.monotonic() + timeout
            while not server.started:
                if not thread.is_alive():
                    raise AssertionError("uvicorn stopped before serving") from (
                        failures[0] if failures else None
                    )
                if time.monotonic() > deadline:
                    raise AssertionError(f"uvicorn did not start within {timeout} s")
                time.sleep(0.005)
            yield f"http://127.0.0.1:{listening.getsockname()[1]}"
        finally:
            server.should_exit = True
            thread.join(timeout)
            if thread.is_alive():  # a stream that never ends holds the graceful shutdown
                server.force_exit = True
                thread.join(timeout)
            assert not thread.is_alive(), f"uvicorn did not stop within {2 * timeout} s"


@contextlib.asynccontextmanager
async def serve_asgi_here(
    app: Any,
    *,
    lifespan: Literal["on", "off", "auto"] = "on",
) -> AsyncIterator[str]:
    """Serve ``app`` in the running event loop on a free port; yield its base URL."""
    with bound_socket() as listening:
        server = _server(app, lifespan)
        serving = asyncio.create_task(server.serve(sockets=[listening]))
        try:
            deadline = time.monotonic() + TIMEOUT
            while not server.started:
                if serving.done():
                    raise AssertionError("uvicorn stopped before serving") from (
                        serving.exception()
                    )
                if time.monotonic() > deadline:
                    raise AssertionError(f"uvicorn did not start within {TIMEOUT} s")
                await asyncio.sleep(0.01)
            yield f"http://127.0.0.1:{listening.getsockname()[1]}"
        finally:
            server.should_exit = True
            try:
                await asyncio.wait_for(asyncio.shield(serving), TIMEOUT)
            except TimeoutError:
                server.force_exit = True
                await asyncio.wait_for(serving, TIMEOUT)
