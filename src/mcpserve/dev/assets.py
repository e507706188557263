"""The dev page's static files as ASGI routes: read once, answered from memory.

The files live in ``static/`` next to this module and ship in the wheel with it. The page
(``index.html``) is answered at ``/`` with the endpoint's path filled in; every other file
at ``/dev/<name>``, so the ES modules import each other by relative URL. The one exception
is ``/dev/sandbox.html``, where MCP Apps run, under a policy of their own (``sandbox.py``).

Each answer forbids caching (a new mcpserve must not run last version's script) and
carries a Content-Security-Policy that lets the page load only its own files and talk only
to its own origin: whatever a server returns (text, HTML in a resource, an SVG image) is
shown, never run in the page (an app's HTML runs only in the sandbox, which the page frames
with an opaque origin of its own). The scripts write server content with ``textContent``,
never as markup; the policy is the second line of defence.
"""

from __future__ import annotations

import html
from importlib import resources

from .._types import ASGIApp, Receive, Scope, Send

#: Files under ``/dev/`` and their media types; the page itself is ``index.html``.
FILES = {
    "app.js": "text/javascript; charset=utf-8",
    "dom.js": "text/javascript; charset=utf-8",
    "wire.js": "text/javascript; charset=utf-8",
    "forms.js": "text/javascript; charset=utf-8",
    "render.js": "text/javascript; charset=utf-8",
    "inputs.js": "text/javascript; charset=utf-8",
    "runs.js": "text/javascript; charset=utf-8",
    "panels.js": "text/javascript; charset=utf-8",
    "apps.js": "text/javascript; charset=utf-8",
    "completions.js": "text/javascript; charset=utf-8",
    "app.css": "text/css; charset=utf-8",
}
ENDPOINT_MARK = "{{endpoint}}"

#: Own files only; data: URLs for the images and audio servers return; fetch to this origin;
#: frames only of the app sandbox.
POLICY = (
    "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; "
    "img-src 'self' data:; media-src 'self' data:; frame-src 'self'; base-uri 'none'; "
    "form-action 'none'; frame-ancestors 'none'"
)


class Asset:
    """An ASGI app answering one file's bytes to GET and HEAD."""

    __slots__ = ("body", "headers")

    def __init__(self, body: bytes, content_type: str) -> None:
        self.body = body
        self.headers = [
            (b"content-type", content_type.encode()),
            (b"content-length", str(len(body)).encode()),
            (b"cache-control", b"no-store"),
            (b"x-content-type-options", b"nosniff"),
            (b"referrer-policy", b"no-referrer"),
            (b"content-security-policy", POLICY.encode()),
        ]

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        method = scope.get("method")
        if method not in ("GET", "HEAD"):
            await send(
                {
                    "type": "http.response.start",
                    "status": 405,
                    "headers": [(b"allow", b"GET, HEAD"), (b"content-length", b"0")],
                }
            )
            await send({"type": "http.response.body", "body": b""})
            return
        await send({"type": "http.response.start", "status": 200, "headers": self.headers})
        await send({"type": "http.response.body", "body": b"" if method == "HEAD" else self.body})


def read_static(name: str) -> bytes:
    """One file of ``static/``, from the installed package (a wheel or a source tree)."""
    return (resources.files(__package__ or "mcpserve.dev") / "static" / name).read_bytes()


def asset_routes(endpoint: str = "/mcp") -> dict[str, ASGIApp]:
    """``/`` and ``/dev/<file>`` for :class:`~mcpserve.transports.http.HTTPApp`'s ``routes``
    (the sandbox page, ``sandbox.py``, is added beside them)."""
    page = read_static("index.html").decode()
    # The page reads the endpoint from a <meta> tag: escaped, as any value put into HTML.
    page = page.replace(ENDPOINT_MARK, html.escape(endpoint, quote=True))
    routes: dict[str, ASGIApp] = {"/": Asset(page.encode(), "text/html; charset=utf-8")}
    for name, content_type in FILES.items():
        routes[f"/dev/{name}"] = Asset(read_static(name), content_type)
    return routes
