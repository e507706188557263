"""What a proxy needs of the server it makes: declared here, so ``proxy/`` never imports
``server/server.py`` (which loads this package when ``Server.proxy`` is called).

``Server.proxy(...)`` and ``Server.gateway(...)`` hand their class to :func:`.proxy_server`
and :func:`.gateway_server`, which build the server with it; ``mcpserve.Server`` has the
shape of :class:`ProxyHost`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from ..extensions.tasks.runner import Tasks
from ..server.middleware import Middleware
from ..server.registry import Registry
from ..server.runtime import Runtime
from ..server.settings import Settings
from ..server.subscriptions import Subscriptions

if TYPE_CHECKING:  # mounting loads only for a host that mounts
    from ..compose.mount.mount import Mount


class ProxyHost(Protocol):
    """The server a proxy (or a gateway) is."""

    name: str
    registry: Registry
    settings: Settings
    runtime: Runtime
    subscriptions: Subscriptions
    lifespan: Any

    @property
    def mounts(self) -> tuple[Mount, ...]: ...

    def use_tasks(self) -> Tasks: ...

    async def notify_resource_updated(self, uri: str) -> None: ...

    def middleware(self, fn: Middleware, *, methods: Iterable[str] | None = None) -> Middleware: ...

    def mount(self, server: Any, namespace: str | None = None) -> Mount: ...


H = TypeVar("H", bound=ProxyHost)
#: How a proxy's server is made: the server class, called with a name and its options.
ServerClass = Callable[..., H]
