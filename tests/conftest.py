"""Shared fixtures: an in-memory client whose every message is checked against the schema."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from mcpserve import Client, Server
from mcpserve.client.connections import MemoryConnection
from wire_schema import check_notification, check_response


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
