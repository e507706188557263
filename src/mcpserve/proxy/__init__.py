"""Proxies: one MCP server served through mcpserve, to clients of either era.

``Server.proxy(upstream)`` is a plain :class:`~mcpserve.Server` whose registry forwards to
another server, over one connection made when it starts (:mod:`.upstream`). The parts:

* :mod:`.proxy`: the server and its lifespan;
* :mod:`.gateway`: several proxies mounted in one server, each under a namespace;
* :mod:`.upstream`: the one connection, in whichever era the upstream speaks;
* :mod:`.sessions`: a handshake-era session upstream for each handshake-era client of a
  2026-07-28 upstream, so the upstream's own requests reach it;
* :mod:`.link`: the lean HTTP/1.1 link a 2026-07-28 upstream is reached by;
* :mod:`.mirror` and :mod:`.entries`: the upstream's lists as forwarding registry entries;
* :mod:`.forwarding` and :mod:`.exchange`: one request forwarded, its questions carried
  across the eras;
* :mod:`.changes`: list changes and resource updates, from upstream to the clients;
* :mod:`.wire`: what changes on the way (results, errors, questions).

This package sits above both ``server/`` and ``client/`` (a proxy is a server that is also
a client): neither imports it, and ``Server.proxy`` loads it by name on first use.
"""

from .gateway import gateway_server, relay_subscriptions, upstream_from_config
from .proxy import Proxy, proxy_server
from .upstream import Upstream, UpstreamUnavailable

__all__ = [
    "Proxy",
    "Upstream",
    "UpstreamUnavailable",
    "gateway_server",
    "proxy_server",
    "relay_subscriptions",
    "upstream_from_config",
]
