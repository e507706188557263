"""The sandbox an MCP App's view runs in on the dev page: ``/dev/sandbox.html``.

The page never puts a server's HTML into its own document. For each app it frames
``/dev/sandbox.html?csp=<the app's csp, as JSON>`` in an iframe sandboxed to
``allow-scripts allow-forms`` (an opaque origin: no access to the page, its storage or its
origin's endpoint). That document's Content-Security-Policy header is built here from the
app's declared domains, as the apps extension asks of a host: restrictive defaults, and
exactly the declared origins for connections, resources, frames and base URIs. Its small
inline script waits for the HTML (``ui/notifications/sandbox-resource-ready``), loads it
into an inner ``srcdoc`` iframe, which inherits this document's policy, and relays every
other message between the page and the view (``static/sandbox.html``).

Origins are checked again here, whoever the server is: a value that is not a plain origin
(one that could end a directive and start another, say) is left out of the policy, which
only makes it stricter (``docs/decisions.md``, "The dev page's app sandbox").
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any
from urllib.parse import parse_qs

from .._types import Receive, Scope, Send
from ..extensions.apps import is_csp_origin
from .assets import read_static

NONE = "'none'"
#: Directive, the declared domains it takes, and what it allows besides them.
_DIRECTIVES = (
    ("script-src", "resourceDomains", "'unsafe-inline'"),
    ("style-src", "resourceDomains", "'unsafe-inline'"),
    ("img-src", "resourceDomains", "data: blob:"),
    ("font-src", "resourceDomains", "data:"),
    ("media-src", "resourceDomains", "data: blob:"),
    ("connect-src", "connectDomains", ""),
    ("frame-src", "frameDomains", ""),
    ("base-uri", "baseUriDomains", ""),
)


def view_policy(csp: Any) -> str:
    """The Content-Security-Policy of a view that declared ``csp`` (``_meta.ui.csp``)."""
    declared = csp if isinstance(csp, Mapping) else {}
    directives = ["default-src 'none'"]
    for directive, field, always in _DIRECTIVES:
        domains = declared.get(field)
        allowed = [d for d in domains if is_csp_origin(d)] if isinstance(domains, list) else []
        sources = " ".join(part for part in (always, *dict.fromkeys(allowed)) if part)
        directives.append(f"{directive} {sources or NONE}")
    directives.append("object-src 'none'")
    return "; ".join(directives)


class SandboxPage:
    """An ASGI app answering ``sandbox.html`` under the policy its ``csp`` query names."""

    def __init__(self) -> None:
        self.body = read_static("sandbox.html")

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope.get("method") not in ("GET", "HEAD"):
            headers = [(b"allow", b"GET, HEAD"), (b"content-length", b"0")]
            await send({"type": "http.response.start", "status": 405, "headers": headers})
            await send({"type": "http.response.body", "body": b""})
            return
        query = parse_qs(scope.get("query_string", b"").decode("latin-1"))
        try:
            csp = json.loads(query.get("csp", ["{}"])[0])
        except ValueError:
            csp = {}  # nothing declared: the restrictive default
        headers = [
            (b"content-type", b"text/html; charset=utf-8"),
            (b"content-length", str(len(self.body)).encode()),
            (b"cache-control", b"no-store"),
            (b"x-content-type-options", b"nosniff"),
            (b"referrer-policy", b"no-referrer"),
            (b"content-security-policy", view_policy(csp).encode()),
        ]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        body = b"" if scope.get("method") == "HEAD" else self.body
        await send({"type": "http.response.body", "body": body})
