"""Fixtures every test folder shares.

* ``connect``: a schema-checked in-memory client, the way most tests reach a server.
* ``redis``: one ``redis-server`` for the whole run, started (on a free port, with a
  bounded wait) when a test first asks for it and stopped, by its process, when the run
  ends. Tests that need it empty flush it; the others keep to keys, channels and sessions
  of their own. ``own_redis`` is a server of the test's own, for a test that stops it.
* ``ts_install``: Node and the official TypeScript client the tests drive
  (``tests/support/ts_client.py``), installed once per run.
* ``serve_app``: an ASGI app served by uvicorn on a free 127.0.0.1 port in a thread, until
  the test ends (``tests/support/http_serving.py``; ``mcpserve.testing.serve_http`` is the
  same for a ``Server``).

The markers of the slow kinds, and ``pytest --quick``, are ``tests/support/quick_subset.py``.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from http_serving import serve_asgi
from mcpserve import Client, Server
from mcpserve.client.connections import MemoryConnection
from redis_server import RedisServer, redis_server
from ts_client import install, node_binary
from wire_schema import check_notification, check_response

pytest_plugins = ["quick_subset"]


def _import_the_package() -> None:
    """Every module of mcpserve, imported now, from this one thread.

    pytest rewrites the asserts of every module of a distribution that offers a plugin, so
    each of mcpserve's modules is parsed with ``ast`` when first imported. mcpserve imports
    many of them on first use, which in a test may be in a worker thread (a blocking
    handler, ``asyncio.to_thread``) while the event loop's thread imports another; and
    Python 3.11's ``ast`` is not safe to use from two threads at once ("AST constructor
    recursion depth mismatch"). Importing them all up front leaves nothing to parse later.
    """
    import importlib
    import pkgutil

    import mcpserve

    for module in pkgutil.walk_packages(mcpserve.__path__, "mcpserve."):
        try:
            importlib.import_module(module.name)
        except ImportError:  # an optional dependency this run does not have
            continue


_import_the_package()


class SchemaCheckedConnection(MemoryConnection):
    """A memory connection that validates each response and notification it carries."""

    def __init__(self, server: Server, notifications: list[dict[str, Any]]) -> None:
        super().__init__(server, self._record)
        self.notifications = notifications

    def _record(self, message: dict[str, Any]) -> None:
        check_notification(message)
        self.notifications.append(message)

    async def request(self, message: dict[str, Any]) -> dict[str, Any]:
        response = await super().request(message)
        check_response(message["method"], response)
        assert response.get("id") == message["id"]
        return response


@pytest.fixture
def connect() -> Callable[..., Client]:
    """``connect(server, **client_options)``: a schema-checked in-memory client.

    Notifications the server sends are appended to ``client.notifications``.
    """

    def make(server: Server, **options: Any) -> Client:
        notifications: list[dict[str, Any]] = []
        client = Client(SchemaCheckedConnection(server, notifications), **options)
        client.notifications = notifications  # type: ignore[attr-defined]
        return client

    return make


@pytest.fixture(scope="session")
def redis(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisServer]:
    """The run's ``redis-server``: shared, so flush it (``redis.flush()``) to start empty."""
    with redis_server(tmp_path_factory.mktemp("redis")) as server:
        yield server


@pytest.fixture
def own_redis(tmp_path: Path) -> Iterator[RedisServer]:
    """A ``redis-server`` for this test alone: one it may stop and start (an outage)."""
    with redis_server(tmp_path) as server:
        yield server


@pytest.fixture
def serve_app() -> Iterator[Callable[..., str]]:
    """``serve_app(app, **options)``: ``app`` served over HTTP for the rest of the test; its
    base URL (``http://127.0.0.1:<port>``). Options are :func:`http_serving.serve_asgi`'s."""
    with contextlib.ExitStack() as stack:
        yield lambda app, **options: stack.enter_context(serve_asgi(app, **options))


@pytest.fixture(scope="session")
def ts_install() -> tuple[str, Path]:
    """Node and the installed TypeScript client (installed once, bounded)."""
    return node_binary(), install()
