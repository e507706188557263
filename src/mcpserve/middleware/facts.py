"""What the library's middleware reads of a request: who calls, from where, in which era,
about what. One place, so the log line, the rate limit's key and the cache's partition
agree on each.
"""

from __future__ import annotations

from ..server.context.context import Context

#: The client address of a request that came over no network: stdio (one client per
#: process, the one that started it) or in memory.
LOCAL_CLIENT = "local"


def is_notification(ctx: Context) -> bool:
    """A client notification: it has no id and nothing answers it."""
    return ctx.request.id is None


def era(ctx: Context) -> str:
    """``"handshake"`` for a request inside a handshake-era session, else the 2026-07-28
    wire's protocol version (``"2026-07-28"``)."""
    return "handshake" if ctx.request.session is not None else ctx.protocol_version


def target(ctx: Context) -> str | None:
    """What the request names: a tool's or prompt's name, a resource's URI."""
    params = ctx.request.params
    named = params.get("name", params.get("uri"))
    return named if type(named) is str else None


def client_address(ctx: Context) -> str:
    """The network address the request came from (what the ASGI server saw: behind a
    balancer, the balancer's unless the server trusts ``X-Forwarded-For``)."""
    scope = ctx.request.http
    client = scope.get("client") if scope is not None else None
    return str(client[0]) if client else LOCAL_CLIENT


def caller(ctx: Context) -> str:
    """Who calls: the authenticated principal, else the client's address."""
    principal = ctx.request.auth.principal
    return f"principal:{principal}" if principal is not None else f"client:{client_address(ctx)}"


def trace_id(ctx: Context) -> str | None:
    """The trace id of ``_meta.traceparent`` (W3C: ``version-traceid-spanid-flags``)."""
    meta = ctx.request.params.get("_meta")  # read here: a handshake-era request has it too
    parent = meta.get("traceparent") if isinstance(meta, dict) else None
    if not isinstance(parent, str):
        return None
    parts = parent.split("-")
    return parts[1] if len(parts) == 4 and len(parts[1]) == 32 else None
