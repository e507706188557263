"""Shared fixtures: an in-memory client whose every message is checked against the schema."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from mcpserve import Client, Server
from mcpserve.client.connections import MemoryConnection
from wire_schema import check_notification, check_response


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
