"""An MCP Apps server for the browser tests, served with the dev page and an official host.

Run as a script (by ``tests/support/ext_apps_host.py``) it serves, on 127.0.0.1 at
``MCPSERVE_TEST_HTTP_PORT``, :func:`mcpserve.dev.serve_dev`'s app: the MCP endpoint at
``/mcp`` and the dev page at ``/``, plus the routes of the official host test: the host page
at ``/host.html`` and the pinned npm files it and the view load, under ``/npm/`` (from
``MCPSERVE_TEST_NPM``, the installed cache, listed in its ``importmap.json``).
``MCPSERVE_TEST_SERVE`` names another server to serve the same way (``examples/apps.py``).

The greeter app is the template form: a function that fills the server's own origin into
``ext_apps/greeter.html`` at each read, and the same origin is the one ``resource_domains``
lets the view load the official App module from.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from mcpserve import AppCSP, Context, Server, ToolResult, supports_apps

HERE = Path(__file__).resolve().parent
VIEWS = HERE.parent / "ext_apps"
PORT = int(os.environ.get("MCPSERVE_TEST_HTTP_PORT") or 0)
ORIGIN = f"http://127.0.0.1:{PORT}"

server = Server("apps-test", version="2.0.0")

greeter = server.app(
    "ui://greeter/view",
    title="Greeter",
    description="Shows a greeting.",
    csp=AppCSP(resource_domains=[ORIGIN]),
    prefers_border=True,
    permissions=["clipboardWrite"],
)(lambda: (VIEWS / "greeter.html").read_text().replace("{{origin}}", ORIGIN))


@server.tool(app=greeter)
def greet(name: str, ctx: Context) -> ToolResult:
    """Greet someone, in the greeter app where the client shows apps."""
    greeting = f"Hello, {name}!"
    return ToolResult(
        content=[greeting], structured={"greeting": greeting, "apps": supports_apps(ctx)}
    )


@server.tool(app=greeter, visibility=["app"])
def shout(text: str) -> str:
    """Shout the text back (the greeter app calls it; the model never sees it)."""
    return text.upper() + "!"


@server.tool(visibility=["model"])
def model_only() -> str:
    """A tool only the model may call, never an app."""
    return "model only"


# A view whose call to the server asks the user something on the way.
GUESTBOOK = """<!doctype html>
<html><body><h1>Guestbook</h1><p id="signed">(waiting)</p>
<script type="module">
  import { App } from "ORIGIN/npm/@modelcontextprotocol/ext-apps/dist/src/app-with-deps.js";
  const app = new App({ name: "guestbook-view", version: "1.0.0" });
  await app.connect();
  const signed = await app.callServerTool({ name: "sign_guestbook", arguments: {} });
  document.getElementById("signed").textContent = signed.content[0].text;
</script></body></html>"""
server.app("ui://guestbook/view", html=GUESTBOOK.replace("ORIGIN", ORIGIN),
           csp={"resourceDomains": [ORIGIN]})  # fmt: skip


class Signature(BaseModel):
    name: str


@server.tool(app="ui://guestbook/view")
def open_guestbook() -> str:
    """Open the guestbook app."""
    return "The guestbook is open."


@server.tool(app="ui://guestbook/view", visibility=["app"])
async def sign_guestbook(ctx: Context) -> str:
    """Ask who signs (the guestbook app calls it)."""
    answer = await ctx.elicit("Who signs the guestbook?", Signature)
    return f"Signed by {answer.data.name}." if answer.accepted else f"Not signed ({answer.action})."


@server.resource("ui://wrong/view", mime_type="text/html")
def wrong_view() -> str:
    """HTML, but not an app's media type."""
    return "<p>not an app</p>"


@server.tool(app="ui://wrong/view")
def wrong() -> str:
    """Linked to a resource that is not an app."""
    return "wrong"


# A view that speaks no protocol and only reports what its sandbox lets it do.
PROBE = """<!doctype html>
<html><body><h1>Probe</h1><p id="origin"></p><p id="parent"></p><p id="fetch">(trying)</p>
<script>
  const show = (id, text) => { document.getElementById(id).textContent = text; };
  show("origin", String(window.origin));
  try {
    void window.top.document.title;
    show("parent", "reachable");
  } catch {
    show("parent", "isolated");
  }
  fetch("ORIGIN/mcp", { method: "POST" })
    .then(() => show("fetch", "allowed"), () => show("fetch", "blocked"));
</script></body></html>"""
server.app("ui://probe/view", html=PROBE.replace("ORIGIN", ORIGIN), prefers_border=False)


@server.tool(app="ui://probe/view")
def probe() -> str:
    """Show the probe, which tests its own sandbox."""
    return "probed"


class Static:
    """An ASGI app answering one file, readable from any origin (a sandboxed view's is
    opaque, and module scripts are fetched with CORS)."""

    def __init__(self, body: bytes, content_type: str) -> None:
        self.body = body
        self.headers = [
            (b"content-type", content_type.encode()),
            (b"content-length", str(len(body)).encode()),
            (b"access-control-allow-origin", b"*"),
            (b"cache-control", b"no-store"),
        ]

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        await send({"type": "http.response.start", "status": 200, "headers": self.headers})
        await send({"type": "http.response.body", "body": self.body})


def host_routes(installed: Path) -> dict[str, Static]:
    """``/host.html`` with its import map, and every npm file the browser will fetch."""
    listing = json.loads((installed / "importmap.json").read_text())
    imports = {name: f"/npm{path}" for name, path in listing["imports"].items()}
    page = (
        (VIEWS / "host.html").read_text().replace("{{importmap}}", json.dumps({"imports": imports}))
    )
    routes = {"/host.html": Static(page.encode(), "text/html; charset=utf-8")}
    for path in listing["files"]:
        body = (installed / "node_modules" / path.lstrip("/")).read_bytes()
        routes[f"/npm{path}"] = Static(body, "text/javascript; charset=utf-8")
    return routes


if __name__ == "__main__":
    from mcpserve.cli.targets import load_server  # a file or an import path, as `mcpserve dev`
    from mcpserve.dev import serve_dev

    npm = os.environ.get("MCPSERVE_TEST_NPM")
    routes = host_routes(Path(npm)) if npm else {}
    other = os.environ.get("MCPSERVE_TEST_SERVE")  # another server (an example) instead
    serve_dev(load_server(other) if other else server, port=PORT, routes=routes)
