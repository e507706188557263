"""The ASGI app mounts under a prefix in Starlette (and so FastAPI), and needs no lifespan."""

from __future__ import annotations

import httpx2
import pytest
from starlette.applications import Starlette
from starlette.routing import Mount

from mcpserve import Server
from wire_schema import check_response

HEADERS = {
    "content-type": "application/json",
    "accept": "application/json, text/event-stream",
    "mcp-protocol-version": "2026-07-28",
    "mcp-method": "tools/call",
    "mcp-name": "echo",
}


def call(text: str) -> dict[str, object]:
    meta = {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
    }
    params = {"name": "echo", "arguments": {"text": text}, "_meta": meta}
    return {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}


def mounted() -> Starlette:
    server = Server("mounted")

    @server.tool
    def echo(text: str) -> str:
        """Echo the text."""
        return text

    return Starlette(routes=[Mount("/api", app=server.http_app())])


@pytest.mark.parametrize("path", ["/api/mcp", "/api/mcp/"])
async def test_app_mounted_in_starlette_answers_under_its_prefix(path: str) -> None:
    transport = httpx2.ASGITransport(app=mounted())
    async with httpx2.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client:
        response = await client.post(path, headers=HEADERS, json=call("hi"))
    assert response.status_code == 200
    body = response.json()
    check_response("tools/call", body)
    assert body["result"]["content"] == [{"type": "text", "text": "hi"}]


async def test_paths_outside_the_endpoint_are_404_when_mounted() -> None:
    transport = httpx2.ASGITransport(app=mounted())
    async with httpx2.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client:
        response = await client.post("/api/other", headers=HEADERS, json=call("hi"))
    assert response.status_code == 404
