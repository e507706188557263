"""MCP Apps on the server side: ``server.app`` and ``@server.tool(app=...)`` on the wire.

In memory through the schema-checked client, and over real HTTP in the handshake era with
the official ``mcp`` client and raw requests checked against the 2025-11-25 schema. How a
host renders the app is in ``test_apps_browser.py`` and ``test_dev_page_apps.py``.
"""

from __future__ import annotations

import logging
from pathlib import Path
from string import Template
from typing import Any

import httpx2
import pytest
from mcp import Client as OfficialClient

import legacy_schema
from legacy_schema import initialize_message, legacy_request
from mcpserve import App, AppCSP, Client, Context, MCPError, Server, supports_apps
from mcpserve.testing import serve_http
from wire_helpers import asgi_client, parse_sse

EXTENSION = "io.modelcontextprotocol/ui"
MIME = "text/html;profile=mcp-app"
PAGE = "<!doctype html><html><body><p>Weather</p></body></html>"
APPS_CAPABILITIES = {"extensions": {EXTENSION: {"mimeTypes": [MIME]}}}


def weather_server() -> tuple[Server, App]:
    server = Server("weather")
    view = server.app(
        "ui://weather/view",
        html=PAGE,
        title="Weather",
        csp=AppCSP(connect_domains=["https://api.example.com"],
                   resource_domains=["https://cdn.example.com", "https://*.example.org"]),
        permissions=["geolocation"],
        domain="weather.example.com",
        prefers_border=False,
    )  # fmt: skip

    @server.tool(app=view)
    def forecast(city: str, ctx: Context) -> dict[str, Any]:
        """The forecast, shown in the weather view."""
        return {"city": city, "apps": supports_apps(ctx)}

    @server.tool(app="ui://weather/view", visibility=["app"])
    def refresh() -> str:
        return "refreshed"

    return server, view


UI = {
    "csp": {
        "connectDomains": ["https://api.example.com"],
        "resourceDomains": ["https://cdn.example.com", "https://*.example.org"],
    },
    "permissions": {"geolocation": {}},
    "domain": "weather.example.com",
    "prefersBorder": False,
}


async def test_an_app_is_listed_and_read_as_html_with_its_ui_metadata(connect: Any) -> None:
    server, view = weather_server()
    assert view.uri == "ui://weather/view"
    assert view.ui == UI
    async with connect(server) as client:
        listed = await client.list_resources()
        read = await client.read_resource("ui://weather/view")
    assert listed == [
        {
            "uri": "ui://weather/view",
            "name": "weather/view",
            "title": "Weather",
            "mimeType": MIME,
            "_meta": {"ui": UI},
        }
    ]
    assert read["contents"] == [
        {"uri": "ui://weather/view", "mimeType": MIME, "text": PAGE, "_meta": {"ui": UI}}
    ]


async def test_a_linked_tool_names_its_app_in_meta_ui_and_in_the_flat_legacy_key(
    connect: Any,
) -> None:
    server, _ = weather_server()
    async with connect(server) as client:
        tools = {tool["name"]: tool for tool in await client.list_tools()}
    assert tools["forecast"]["_meta"] == {
        "ui": {"resourceUri": "ui://weather/view"},
        "ui/resourceUri": "ui://weather/view",
    }
    assert tools["refresh"]["_meta"] == {
        "ui": {"resourceUri": "ui://weather/view", "visibility": ["app"]},
        "ui/resourceUri": "ui://weather/view",
    }


async def test_the_extension_is_declared_exactly_when_an_app_is_registered(connect: Any) -> None:
    server, _ = weather_server()
    plain = Server("plain")

    @plain.resource("notes://index")
    def index() -> str:
        return "notes"

    async with connect(server) as client:
        declared = (await client.discover())["capabilities"]
    async with connect(plain) as client:
        undeclared = (await client.discover())["capabilities"]
    assert declared["extensions"] == {EXTENSION: {}}
    assert "extensions" not in undeclared
    server.remove_resource("ui://weather/view")
    async with connect(server) as client:
        assert "extensions" not in (await client.discover())["capabilities"]


async def test_settings_declared_by_hand_for_the_extension_are_kept(connect: Any) -> None:
    server = Server("own", extensions={EXTENSION: {"note": "hand-written"}})
    server.app("ui://own/view", html=PAGE)
    async with connect(server) as client:
        assert (await client.discover())["capabilities"]["extensions"] == {
            EXTENSION: {"note": "hand-written"}
        }


async def test_a_tool_sees_whether_the_client_declared_that_it_renders_apps(
    connect: Any,
) -> None:
    server, _ = weather_server()
    async with connect(server, capabilities=APPS_CAPABILITIES) as client:
        shown = await client.call_tool("forecast", {"city": "Oslo"})
    async with connect(server) as client:
        plain = await client.call_tool("forecast", {"city": "Oslo"})
    other_type = {"extensions": {EXTENSION: {"mimeTypes": ["text/html"]}}}
    async with connect(server, capabilities=other_type) as client:
        other = await client.call_tool("forecast", {"city": "Oslo"})
    assert shown["structuredContent"] == {"city": "Oslo", "apps": True}
    assert plain["structuredContent"] == {"city": "Oslo", "apps": False}
    assert other["structuredContent"] == {"city": "Oslo", "apps": False}


async def test_a_file_app_is_read_again_at_each_read(tmp_path: Path, connect: Any) -> None:
    page = tmp_path / "view.html"
    page.write_text("<p>one</p>", encoding="utf-8")
    server = Server("files")
    server.app("ui://files/view", path=page)
    async with connect(server) as client:
        first = await client.read_resource("ui://files/view")
        page.write_text("<p>two</p>", encoding="utf-8")
        second = await client.read_resource("ui://files/view")
    assert first["contents"][0]["text"] == "<p>one</p>"
    assert second["contents"][0]["text"] == "<p>two</p>"
    assert second["contents"][0]["mimeType"] == MIME


async def test_a_function_app_is_a_template_filled_at_each_read(connect: Any) -> None:
    server = Server("templated")
    reads: list[str] = []

    @server.app("ui://templated/view", csp={"connectDomains": ["https://api.example.com"]})
    async def view(ctx: Context) -> str:
        """The templated view."""
        reads.append(ctx.request.method)
        return Template("<p>$count</p>").substitute(count=len(reads))

    assert isinstance(view, App)
    async with connect(server) as client:
        await client.read_resource("ui://templated/view")
        read = await client.read_resource("ui://templated/view")
        listed = await client.list_resources()
    assert read["contents"][0]["text"] == "<p>2</p>"
    assert read["contents"][0]["_meta"] == {
        "ui": {"csp": {"connectDomains": ["https://api.example.com"]}}
    }
    assert listed[0]["description"] == "The templated view."
    assert listed[0]["name"] == "templated/view"


async def test_bytes_from_an_app_function_are_sent_as_a_blob(connect: Any) -> None:
    server = Server("blob")
    server.app("ui://blob/view")(lambda: b"<p>bytes</p>")
    async with connect(server) as client:
        read = await client.read_resource("ui://blob/view")
    assert read["contents"] == [
        {"uri": "ui://blob/view", "mimeType": MIME, "blob": "PHA+Ynl0ZXM8L3A+"}
    ]


async def test_an_app_function_returning_no_html_is_an_internal_error_logged_with_a_ref(
    connect: Any, caplog: pytest.LogCaptureFixture
) -> None:
    server = Server("broken")
    server.app("ui://broken/view")(lambda: {"not": "html"})
    with caplog.at_level(logging.ERROR, logger="mcpserve"):
        async with connect(server) as client:
            with pytest.raises(MCPError) as caught:
                await client.read_resource("ui://broken/view")
    assert caught.value.code == -32603
    assert "App ui://broken/view returned no HTML (ref " in caught.value.message
    assert "returned dict, not its HTML" in caplog.text


async def test_a_tools_own_meta_is_kept_beside_the_app_link(connect: Any) -> None:
    server, view = weather_server()
    server.add_tool(lambda: "x", name="tagged", app=view,
                    meta={"com.example/tag": 1, "ui": {"com.example/extra": True}})  # fmt: skip
    async with connect(server) as client:
        tools = {tool["name"]: tool for tool in await client.list_tools()}
    assert tools["tagged"]["_meta"] == {
        "ui": {"com.example/extra": True, "resourceUri": "ui://weather/view"},
        "com.example/tag": 1,
        "ui/resourceUri": "ui://weather/view",
    }


@pytest.mark.parametrize(
    ("options", "problem"),
    [
        ({"html": PAGE, "csp": {"connectDomain": ["https://a.example"]}}, "Unknown csp field"),
        ({"html": PAGE, "csp": AppCSP}, "csp must be an AppCSP or a dict"),
        ({"html": PAGE, "permissions": ["camera", "microphon"]}, "Unknown permission"),
        ({"html": PAGE, "domain": "two words"}, "domain must be a non-empty string"),
        ({"html": PAGE, "prefers_border": "yes"}, "prefers_border must be True or False"),
        ({"html": Template("<p>$x</p>")}, "html must be a str"),
        ({"html": PAGE, "path": "view.html"}, "html= or path=, not both"),
        ({"path": "/nonexistent/view.html"}, "no file at /nonexistent/view.html"),
    ],
)
def test_bad_app_options_are_refused_when_registering(
    options: dict[str, Any], problem: str
) -> None:
    server = Server("bad")
    with pytest.raises((ValueError, TypeError, FileNotFoundError), match=problem):
        server.app("ui://bad/view", **options)
    assert server.registry.resources == {}


@pytest.mark.parametrize(
    "domain",
    ["https://a.example; script-src *", "a.example", "'self'", "https://a b.example", ""],
)
def test_a_csp_domain_that_is_not_an_origin_is_refused(domain: str) -> None:
    with pytest.raises(ValueError, match="is not an origin"):
        AppCSP(connect_domains=[domain])


@pytest.mark.parametrize(
    "domain", ["https://api.example.com", "wss://live.example.com:8443", "https://*.example.com",
               "http://127.0.0.1:8000", "http://[::1]:8000", "https://cdn.example.com/assets/"],
)  # fmt: skip
def test_origins_a_host_can_write_into_a_policy_are_accepted(domain: str) -> None:
    assert AppCSP(resource_domains=[domain]).to_wire() == {"resourceDomains": [domain]}


@pytest.mark.parametrize(
    "uri", ["https://weather/view", "ui://", "ui://weather/{city}", "ui://two words", 42]
)
def test_an_app_uri_must_be_one_fixed_ui_uri(uri: Any) -> None:
    server = Server("bad")
    with pytest.raises(ValueError, match="ui://"):
        server.app(uri, html=PAGE)


def test_an_app_function_taking_arguments_is_refused() -> None:
    server = Server("bad")
    with pytest.raises(TypeError, match=r"takes no arguments but a Context .*city"):
        server.app("ui://bad/view")(lambda city: city)


@pytest.mark.parametrize(
    ("options", "problem"),
    [
        ({"app": "https://weather/view"}, "ui://"),
        ({"app": 3}, "app must be an App or its ui:// URI"),
        ({"visibility": []}, "visibility must name one or both"),
        ({"visibility": ["model", "user"]}, "visibility must name one or both"),
    ],
)
def test_bad_app_links_are_refused_when_registering_the_tool(
    options: dict[str, Any], problem: str
) -> None:
    server = Server("bad")
    with pytest.raises((ValueError, TypeError), match=problem):
        server.add_tool(lambda: "x", name="linked", **options)
    assert server.registry.tools == {}


# --------------------------------------------------------------------------- the handshake era


async def legacy_post(
    http: httpx2.AsyncClient, message: dict[str, Any], session: str | None = None
) -> tuple[httpx2.Response, dict[str, Any]]:
    """One handshake-era POST; its JSON-RPC answer, checked against the 2025-11-25 schema."""
    headers = {"Accept": "application/json, text/event-stream"}
    if session is not None:
        headers |= {"Mcp-Session-Id": session, "MCP-Protocol-Version": "2025-11-25"}
    response = await http.post("/mcp", json=message, headers=headers)
    if response.headers["content-type"].startswith("text/event-stream"):
        answer = parse_sse(response.text)[-1]
    else:
        answer = response.json()
    legacy_schema.check_response(message["method"], answer)
    return response, answer


async def test_a_handshake_era_session_gets_the_same_metadata_and_the_extension() -> None:
    server, _ = weather_server()
    async with asgi_client(server.http_app()) as http:
        started, hello = await legacy_post(http, initialize_message(capabilities=APPS_CAPABILITIES))
        session = started.headers["mcp-session-id"]
        _, tools = await legacy_post(http, legacy_request(1, "tools/list"), session)
        _, read = await legacy_post(
            http, legacy_request(2, "resources/read", {"uri": "ui://weather/view"}), session
        )
        _, called = await legacy_post(
            http,
            legacy_request(3, "tools/call", {"name": "forecast", "arguments": {"city": "Rome"}}),
            session,
        )
    assert hello["result"]["capabilities"]["extensions"] == {EXTENSION: {}}
    listed = {tool["name"]: tool["_meta"] for tool in tools["result"]["tools"]}
    assert listed["forecast"] == {
        "ui": {"resourceUri": "ui://weather/view"},
        "ui/resourceUri": "ui://weather/view",
    }
    content = read["result"]["contents"][0]
    assert (content["mimeType"], content["_meta"]) == (MIME, {"ui": UI})
    assert called["result"]["structuredContent"] == {"city": "Rome", "apps": True}


async def test_other_extensions_stay_off_the_handshake_era_capabilities() -> None:
    server = Server("both", extensions={"com.example/other": {}})
    server.app("ui://both/view", html=PAGE)
    async with asgi_client(server.http_app()) as http:
        _, hello = await legacy_post(http, initialize_message())
    assert hello["result"]["capabilities"]["extensions"] == {EXTENSION: {}}


async def test_the_official_client_sees_the_app_in_the_handshake_era() -> None:
    server, _ = weather_server()
    with serve_http(server) as url:
        async with OfficialClient(url, mode="legacy") as client:
            assert client.protocol_version == "2025-11-25"
            capabilities = client.server_capabilities.model_dump(by_alias=True, exclude_none=True)
            tools = (await client.list_tools()).tools
            read = await client.read_resource("ui://weather/view")
    assert capabilities["extensions"] == {EXTENSION: {}}
    forecast = next(tool for tool in tools if tool.name == "forecast")
    assert forecast.meta == {"ui": {"resourceUri": "ui://weather/view"},
                             "ui/resourceUri": "ui://weather/view"}  # fmt: skip
    content = read.contents[0]
    assert content.mime_type == MIME
    assert content.meta == {"ui": UI}


async def test_the_http_client_pinned_to_the_handshake_era_declares_apps_to_tools() -> None:
    server, _ = weather_server()
    with serve_http(server) as url:
        async with Client(
            url, protocol_version="2025-11-25", capabilities=APPS_CAPABILITIES
        ) as client:
            result = await client.call_tool("forecast", {"city": "Lima"})
    assert result["structuredContent"] == {"city": "Lima", "apps": True}
