"""Servers made of other servers: mounting, tool transformations, proxies and OpenAPI.

:class:`~mcpserve.Server` inherits these. Each is a thin entry point to the module that
does the work: :mod:`.mounting` (another mcpserve server's entries under a namespace),
:mod:`.transform` (a tool renamed, narrowed or with arguments fixed, sharing its function),
:mod:`.openapi` (an HTTP API's operations as tools) and ``mcpserve.proxy`` (any MCP server,
local or remote, of either era). The proxy package sits above ``server/`` and ``client/``
(it is both a server and a client), so it is loaded by name, as serving is, and only when
a proxy is made.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import httpx2
    from typing_extensions import Unpack

    from ..compose.mount.mount import Mount, Mounts
    from ..compose.openapi import OpenAPISelection
    from ..compose.transform import ToolChanges
    from .entries.kinds import ToolEntry
    from .middleware import Middleware
    from .registry import Registry
    from .server import Server


class Composing:
    """Mounting other servers, transforming tools, and servers built from elsewhere."""

    registry: Registry
    _mounts: Mounts | None
    _mounted_in: list[Mount]
    _middleware: list[Middleware]

    def mount(self, server: Server[Any], namespace: str | None = None) -> Mount:
        """Serve ``server``'s tools, resources, templates, prompts and completions as this
        server's, names under ``namespace`` (see :mod:`.mounting`); it runs inside this one."""
        from ..compose.mount.mount import Mounts

        if self._mounts is None:
            self._mounts = Mounts(self)  # type: ignore[arg-type]
        mount = self._mounts.add(server, namespace, middleware=server._middleware)
        server._mounted_in.append(mount)
        return mount

    @property
    def mounts(self) -> tuple[Mount, ...]:
        """The servers mounted in this one, in mount order."""
        return tuple(self._mounts.mounts) if self._mounts is not None else ()

    def transform_tool(self, tool: str, /, **changes: Unpack[ToolChanges]) -> ToolEntry:
        """Replace tool ``tool`` (local or mounted) with a transformation of it: renamed,
        redescribed, arguments hidden, fixed, defaulted or narrowed (see :mod:`.transform`)."""
        from ..compose.transform import transform_tool

        return transform_tool(self.registry, self._mounts, tool, changes)

    @classmethod
    def from_openapi(
        cls,
        spec: Mapping[str, Any] | str | bytes,
        *,
        client: httpx2.AsyncClient,
        name: str | None = None,
        version: str | None = None,
        **selection: Unpack[OpenAPISelection],
    ) -> Server[Any]:
        """A server whose tools are an HTTP API's operations, called with ``client`` (an
        ``httpx2.AsyncClient``; auth and base URL are its own). ``spec``: an OpenAPI 3.0/3.1
        document as a dict or JSON text, or its URL, fetched with ``client`` when the server
        starts. Name and version default to the document's ``info``. See
        :mod:`mcpserve.compose.openapi` and ``docs/openapi.md``."""
        from ..compose.openapi import server_from_openapi

        return server_from_openapi(
            cls,  # type: ignore[arg-type]
            spec,
            client=client,
            name=name,
            version=version,
            **selection,
        )

    @classmethod
    def proxy(cls, upstream: Any, **options: Any) -> Server[Any]:
        """A server serving another MCP server, to clients of either era: ``upstream`` is a
        URL, a command (``"python other.py"`` or a list) or a ``Server``. One connection,
        made when the proxy starts, carries every call; ``docs/proxy.md`` has the options.
        """
        build: Callable[..., Server[Any]] = importlib.import_module("mcpserve.proxy").proxy_server
        return build(upstream, **options)

    @classmethod
    def gateway(cls, upstreams: Mapping[str, Any], **options: Any) -> Server[Any]:
        """Several servers behind one endpoint: a proxy of each upstream (``{"billing": URL,
        "files": "python files.py"}``) mounted under its name (``docs/proxy.md``)."""
        build: Callable[..., Server[Any]] = importlib.import_module("mcpserve.proxy").gateway_server
        return build(upstreams, **options)
