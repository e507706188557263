"""A gateway: several upstream servers behind one endpoint, each under a namespace.

::

    gateway = Server.gateway({"billing": "https://billing.example/mcp",
                              "files": "python files.py"})

is a plain :class:`~mcpserve.Server` with one proxy (:func:`~.proxy.proxy_server`) mounted
per upstream, under its name (``Server.mount``, ``docs/composition.md``): billing's tool
``pay`` is the gateway's ``billing_pay``, its resource ``file:///x`` is
``billing+file:///x``. Each proxy keeps its own connection to its upstream, in whichever
era that one speaks, and starts and stops with the gateway; what mounting carries for any
mounted server (list changes, resource updates, URIs in results) it carries for them.

One thing a mount cannot know is what the gateway's clients subscribe to: the gateway
passes each subscription on (:func:`relay_subscriptions`) to the proxy serving the URI,
which subscribes upstream.

:func:`upstream_from_config` reads one entry of a config file in the shape MCP clients
use (``{"mcpServers": {"name": {"command": ..., "args": [...], "env": {...}}}}``, or
``{"url": ..., "headers": {...}}`` for a remote server).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .._types import JSONDict
from ..server.context.context import Context
from ..server.middleware import CallNext
from .host import H, ProxyHost, ServerClass
from .proxy import SUBSCRIBING, Proxy, proxy_server, subscribed_uris
from .upstream import Upstream, UpstreamTarget


def gateway_server(
    upstreams: Mapping[str, UpstreamTarget | Upstream],
    *,
    server_class: ServerClass[H],
    name: str = "gateway",
    **server_options: Any,
) -> H:
    """A server serving every upstream of ``upstreams`` under its name as a namespace.

    Each value is what :func:`~.proxy.proxy_server` takes: a URL, a command or a
    ``Server``, or an :class:`~.upstream.Upstream` with its own headers, auth, env and
    pinned version. The other options are the gateway ``Server``'s own.
    """
    if not upstreams:
        raise ValueError("A gateway needs at least one upstream")
    gateway = server_class(name, **server_options)
    for namespace, upstream in upstreams.items():
        proxy = proxy_server(upstream, server_class=server_class, name=namespace)
        gateway.mount(proxy, namespace=namespace)
    relay_subscriptions(gateway)
    return gateway


def relay_subscriptions(parent: ProxyHost) -> None:
    """Pass the subscriptions ``parent``'s clients make on to the proxies mounted in it."""

    async def relay(ctx: Context, call_next: CallNext) -> JSONDict:
        uris = subscribed_uris(ctx)
        if uris:
            for mount in parent.mounts:
                proxy = mount.server.runtime.lifespan_state
                if not isinstance(proxy, Proxy):
                    continue
                theirs = [mount.namespace.child_uri(uri) for uri in uris]
                mine = [uri for uri in theirs if uri is not None]
                if mine:
                    await proxy.subscribe(mine, ctx.request.auth)
        return await call_next()

    parent.middleware(relay, methods=SUBSCRIBING)


def upstream_from_config(name: str, entry: Any) -> Upstream:
    """An :class:`~.upstream.Upstream` from one ``mcpServers`` entry: ``command`` (a
    string, with ``args``), ``env`` and ``cwd`` for a process; ``url`` and ``headers`` for
    a remote server; ``protocolVersion`` to pin its era. Raises ``ValueError`` naming what
    is wrong."""
    if not isinstance(entry, Mapping):
        raise ValueError(f"Upstream {name!r}: expected an object, not {type(entry).__name__}")
    url, command = entry.get("url"), entry.get("command")
    if (url is None) == (command is None):
        raise ValueError(f'Upstream {name!r}: give either "command" or "url"')
    version = entry.get("protocolVersion")
    if version is not None and not isinstance(version, str):
        raise ValueError(f'Upstream {name!r}: "protocolVersion" must be a string')
    if url is not None:
        headers = entry.get("headers") or {}
        if not isinstance(url, str) or not url.startswith(("http://", "https://")):
            raise ValueError(f'Upstream {name!r}: "url" must be an http(s) URL')
        if not _strings(headers):
            raise ValueError(f'Upstream {name!r}: "headers" must map names to strings')
        return Upstream(url, headers=headers, protocol_version=version)
    args = entry.get("args") or []
    env = entry.get("env") or {}
    cwd = entry.get("cwd")
    if not isinstance(command, str) or not command:
        raise ValueError(f'Upstream {name!r}: "command" must be a non-empty string')
    if not isinstance(args, list) or not all(isinstance(arg, str) for arg in args):
        raise ValueError(f'Upstream {name!r}: "args" must be a list of strings')
    if not _strings(env):
        raise ValueError(f'Upstream {name!r}: "env" must map names to strings')
    if cwd is not None and not isinstance(cwd, str):
        raise ValueError(f'Upstream {name!r}: "cwd" must be a string')
    return Upstream([command, *args], env=env or None, cwd=cwd, protocol_version=version)


def _strings(mapping: Any) -> bool:
    return isinstance(mapping, Mapping) and all(
        isinstance(key, str) and isinstance(value, str) for key, value in mapping.items()
    )
