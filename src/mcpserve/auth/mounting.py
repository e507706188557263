"""What an ``auth=`` that is also an authorization server is told when the HTTP app is built.

A verifier only checks tokens; an :class:`~mcpserve.auth.OIDCProxy` issues them, and so
serves pages and endpoints of its own beside the MCP endpoint. The HTTP app hands it a
:class:`Site` (the facts only the app knows: the endpoint's path, the scopes the server's
entries declare, the state key ring, the shared Redis) and gets back the
:class:`~.resource.ResourceServer` that protects the endpoint and the routes to serve.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from .._types import ASGIApp
from ..protocol.records import Record

if TYPE_CHECKING:
    from .resource import ResourceServer


class Site(Record):
    """Where an authorization server is mounted."""

    __slots__ = ("declared_scopes", "path", "redis_url", "server_name", "state_keys")

    def __init__(
        self,
        *,
        path: str,
        declared_scopes: Callable[[], frozenset[str]],
        state_keys: list[tuple[str, bytes]],
        redis_url: str | None,
        server_name: str,
    ) -> None:
        self.path = path
        self.declared_scopes = declared_scopes
        self.state_keys = state_keys
        self.redis_url = redis_url
        self.server_name = server_name


@runtime_checkable
class IssuesTokens(Protocol):
    """An ``auth=`` that is the endpoint's own authorization server."""

    def mount(self, site: Site) -> tuple[ResourceServer, Mapping[str, ASGIApp]]:
        """The endpoint's resource server, and the app-relative routes to serve."""
        ...
