"""``/metrics`` on the HTTP app: Prometheus's scrape target, when the server serves one.

It is answered without the endpoint's authentication (a scraper holds no user's token,
and what it reads names no user), but behind the same ``Host`` check as the endpoint, with
the same 421 answer: a page in a browser cannot reach it through DNS rebinding.
"""

from __future__ import annotations

from typing import Any

from .._types import ASGIApp, Receive, Scope, Send
from ..protocol.errors import InvalidRequest
from ..protocol.jsonrpc import error_response
from .endpoint import Endpoint
from .origin import OriginPolicy
from .responses import send_json

METRICS_PATH = "/metrics"


def metrics_routes(endpoint: Endpoint, policy: OriginPolicy) -> dict[str, Any]:
    """``{"/metrics": app}`` when the endpoint serves Prometheus, else nothing."""
    metrics = endpoint.metrics
    if metrics is None or metrics.prometheus is None:
        return {}
    from ..metrics.prometheus import MetricsRoute

    return {METRICS_PATH: HostChecked(MetricsRoute(metrics.prometheus), policy)}


class HostChecked:
    """An ASGI app answered only for a ``Host`` the policy allows."""

    def __init__(self, app: ASGIApp, policy: OriginPolicy) -> None:
        self.app = app
        self.policy = policy

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        host = None
        for name, value in scope["headers"]:
            if name == b"host":
                host = value.decode("latin-1")
                break
        problem = self.policy.check_host(host)
        if problem is not None:
            error = InvalidRequest(f"Misdirected: {problem}")
            await send_json(send, 421, error_response(None, error))
            return
        await self.app(scope, receive, send)
