"""The dev page's Python side, without a browser: the routes ``dev_app`` adds and how
``serve_dev`` binds and names its URLs. (``test_dev_page.py`` drives the page itself.)"""

from __future__ import annotations

import json
import re
import socket
from importlib import resources
from typing import Any
from urllib.parse import quote

import httpx2
import pytest

from mcpserve import Server
from mcpserve.dev import dev_app, page_urls, serve_dev
from mcpserve.dev.assets import FILES, POLICY
from mcpserve.dev.sandbox import view_policy


def small_server() -> Server:
    server = Server("dev-app-test")

    @server.tool
    def ping() -> str:
        return "pong"

    return server


async def get(app: Any, path: str, method: str = "GET", **options: Any) -> httpx2.Response:
    transport = httpx2.ASGITransport(app=app)
    async with httpx2.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client:
        return await client.request(method, path, **options)


def test_every_static_file_is_served_and_every_served_file_ships() -> None:
    shipped = {
        entry.name
        for entry in (resources.files("mcpserve.dev") / "static").iterdir()
        if entry.is_file()
    }
    assert shipped == {*FILES, "index.html", "sandbox.html"}  # sandbox.html: see sandbox.py


async def test_the_page_is_at_the_root_and_names_the_endpoint_it_was_built_for() -> None:
    app = dev_app(small_server(), "/api/mcp")
    page = await get(app, "/")
    assert page.status_code == 200
    assert page.headers["content-type"] == "text/html; charset=utf-8"
    assert '<meta name="mcp-endpoint" content="/api/mcp">' in page.text
    assert page.headers["content-security-policy"] == POLICY
    assert page.headers["cache-control"] == "no-store"


async def test_the_page_scripts_and_stylesheet_are_served_with_their_media_types() -> None:
    app = dev_app(small_server())
    page = await get(app, "/")
    linked = re.findall(r'(?:src|href)="(/dev/[^"]+)"', page.text)
    assert linked == ["/dev/app.css", "/dev/app.js"]
    for name, media_type in FILES.items():
        answer = await get(app, f"/dev/{name}")
        assert answer.status_code == 200, name
        assert answer.headers["content-type"] == media_type
        assert answer.headers["x-content-type-options"] == "nosniff"
    head = await get(app, "/dev/app.js", "HEAD")
    assert head.status_code == 200
    assert head.content == b""
    assert int(head.headers["content-length"]) > 0


async def test_the_page_modules_import_only_files_that_are_served() -> None:
    app = dev_app(small_server())
    for name in FILES:
        if name.endswith(".js"):
            source = (await get(app, f"/dev/{name}")).text
            for imported in re.findall(r'from "\./([^"]+)"', source):
                assert imported in FILES, f"{name} imports {imported}, which is not served"


async def test_other_methods_and_unknown_files_are_refused() -> None:
    app = dev_app(small_server())
    refused = await get(app, "/dev/app.js", "POST")
    assert refused.status_code == 405
    assert refused.headers["allow"] == "GET, HEAD"
    assert (await get(app, "/dev/missing.js")).status_code == 404


async def test_the_endpoint_keeps_every_check_of_the_wire() -> None:
    app = dev_app(small_server())
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
    refused = await get(app, "/mcp", "POST", json=body)
    assert refused.status_code == 400  # neither _meta nor a handshake: refused like anyone's
    meta = {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
    }
    body["params"] = {"_meta": meta}
    headers = {"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/list"}
    listed = await get(app, "/mcp", "POST", json=body, headers=headers)
    assert [tool["name"] for tool in listed.json()["result"]["tools"]] == ["ping"]
    foreign = await get(
        app, "/mcp", "POST", json=body, headers={**headers, "Origin": "http://evil.example"}
    )
    assert foreign.status_code == 403


async def test_routes_of_your_own_are_kept_beside_the_page() -> None:
    async def health(scope: Any, receive: Any, send: Any) -> None:
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"ok"})

    app = dev_app(small_server(), routes={"/health": health})
    assert (await get(app, "/health")).text == "ok"
    assert (await get(app, "/")).status_code == 200


def test_the_endpoint_cannot_be_at_the_root_where_the_page_is() -> None:
    with pytest.raises(ValueError, match="dev page lives at /"):
        dev_app(small_server(), "/")


@pytest.mark.parametrize(
    ("host", "page"),
    [
        ("127.0.0.1", "http://127.0.0.1:8123/"),
        ("0.0.0.0", "http://127.0.0.1:8123/"),
        ("localhost", "http://localhost:8123/"),
        ("::1", "http://[::1]:8123/"),
    ],
)
def test_the_printed_urls_are_those_a_browser_on_this_machine_opens(host: str, page: str) -> None:
    assert page_urls(host, 8123, "mcp/") == (page, page + "mcp")


def test_a_port_in_use_is_reported_with_the_address() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(OSError, match=f"Cannot serve the dev page on 127.0.0.1:{port}"):
            serve_dev(small_server(), port=port)


async def test_the_app_sandbox_is_served_under_the_policy_its_query_declares() -> None:
    app = dev_app(small_server())
    csp = {
        "connectDomains": ["https://api.example.com"],
        "resourceDomains": ["https://cdn.example.com"],
    }
    declared = await get(app, f"/dev/sandbox.html?csp={quote(json.dumps(csp))}")
    assert declared.status_code == 200
    assert declared.headers["content-type"] == "text/html; charset=utf-8"
    policy = declared.headers["content-security-policy"]
    assert policy == view_policy(csp)
    assert "connect-src https://api.example.com;" in policy
    assert "frame-ancestors" not in policy  # the page frames it
    assert "ui/notifications/sandbox-proxy-ready" in declared.text
    garbled = await get(app, "/dev/sandbox.html?csp=%7Bnot-json")
    assert garbled.headers["content-security-policy"] == view_policy({})
    assert (await get(app, "/dev/sandbox.html", method="POST")).status_code == 405


def test_the_view_policy_is_restrictive_by_default_and_drops_what_is_not_an_origin() -> None:
    assert view_policy({}) == (
        "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; "
        "img-src data: blob:; font-src data:; media-src data: blob:; connect-src 'none'; "
        "frame-src 'none'; base-uri 'none'; object-src 'none'"
    )
    hostile = {
        "connectDomains": ["https://ok.example", "https://x.example; script-src *", 7],
        "frameDomains": "https://not-a-list.example",
        "resourceDomains": ["https://cdn.example", "https://cdn.example"],
    }
    policy = view_policy(hostile)
    assert "connect-src https://ok.example;" in policy
    assert "frame-src 'none'" in policy
    assert "script-src 'unsafe-inline' https://cdn.example;" in policy
    assert "*" not in policy
    assert view_policy("not a dict") == view_policy({})
