"""``server/discover`` and the list methods: capabilities, caching hints, order, pagination
(``docs/decisions.md``, "Capabilities follow the registry", "Cursors")."""

import pytest

from mcpserve import CachePolicy, MCPError, Server
from mcpserve.protocol import constants as c
from mcpserve.protocol.pagination import encode_cursor
from wire_schema import check, check_response

META = {c.META_PROTOCOL_VERSION: "2026-07-28", c.META_CLIENT_CAPABILITIES: {}}


def request(method, params=None, *, request_id=1):
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": method,
        "params": {**(params or {}), "_meta": META},
    }


async def result_of(server, method, params=None):
    response = await server.handle(request(method, params))
    check_response(method, response)
    assert "error" not in response, response
    return response["result"]


# -- server/discover -----------------------------------------------------------------------


async def test_discover_lists_the_supported_versions(connect):
    server = Server("s")
    async with connect(server) as client:
        result = await client.discover()
    assert result["supportedVersions"] == ["2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26"]


async def test_modern_only_server_lists_only_the_modern_version(connect):
    server = Server("s", legacy=False)
    async with connect(server) as client:
        result = await client.discover()
    assert result["supportedVersions"] == ["2026-07-28"]


async def test_discover_result_validates_against_the_schema():
    server = Server("s", instructions="Use me.")

    @server.tool
    def noop() -> str:
        return ""

    result = await result_of(server, "server/discover")
    check("DiscoverResult", result)
    assert result["resultType"] == "complete"


async def test_empty_server_advertises_no_capabilities(connect):
    server = Server("s")
    async with connect(server) as client:
        result = await client.discover()
    assert result["capabilities"] == {}


async def test_tools_capability_appears_only_with_a_tool(connect):
    server = Server("s")

    @server.tool
    def noop() -> str:
        return ""

    async with connect(server) as client:
        result = await client.discover()
    assert result["capabilities"] == {"tools": {"listChanged": True}}


async def test_resources_capability_appears_with_a_resource(connect):
    server = Server("s")

    @server.resource("notes://a")
    def note() -> str:
        return "a"

    async with connect(server) as client:
        result = await client.discover()
    assert result["capabilities"] == {"resources": {"subscribe": True, "listChanged": True}}


async def test_resources_capability_appears_with_only_a_template(connect):
    server = Server("s")

    @server.resource("notes://{name}")
    def named(name: str) -> str:
        return name

    async with connect(server) as client:
        result = await client.discover()
    assert result["capabilities"] == {"resources": {"subscribe": True, "listChanged": True}}


async def test_prompts_capability_appears_with_a_prompt(connect):
    server = Server("s")

    @server.prompt
    def greet() -> str:
        return "hi"

    async with connect(server) as client:
        result = await client.discover()
    assert result["capabilities"] == {"prompts": {"listChanged": True}}


async def test_completions_capability_appears_with_a_completer(connect):
    server = Server("s")

    @server.prompt
    def greet(name: str) -> str:
        return name

    @server.completion(prompt="greet", argument="name")
    def names(value: str) -> list[str]:
        return []

    async with connect(server) as client:
        result = await client.discover()
    assert result["capabilities"] == {"prompts": {"listChanged": True}, "completions": {}}


async def test_logging_capability_appears_only_with_client_logging(connect):
    async with connect(Server("off")) as client:
        off = await client.discover()
    async with connect(Server("on", client_logging=True)) as client:
        on = await client.discover()
    assert "logging" not in off["capabilities"]
    assert on["capabilities"] == {"logging": {}}


async def test_extensions_are_advertised_as_given(connect):
    extensions = {"io.modelcontextprotocol/tasks": {}, "com.example/feature": {"level": 2}}
    server = Server("s", extensions=extensions)
    async with connect(server) as client:
        result = await client.discover()
    assert result["capabilities"] == {"extensions": extensions}


async def test_every_capability_appears_when_everything_is_registered(connect):
    server = Server("s", client_logging=True, extensions={"com.example/x": {}})

    @server.tool
    def noop() -> str:
        return ""

    @server.resource("notes://a")
    def note() -> str:
        return "a"

    @server.prompt
    def greet(name: str) -> str:
        return name

    @server.completion(prompt="greet", argument="name")
    def names(value: str) -> list[str]:
        return []

    async with connect(server) as client:
        result = await client.discover()
    assert result["capabilities"] == {
        "tools": {"listChanged": True},
        "resources": {"subscribe": True, "listChanged": True},
        "prompts": {"listChanged": True},
        "completions": {},
        "logging": {},
        "extensions": {"com.example/x": {}},
    }


async def test_capabilities_follow_tools_added_and_removed_at_run_time(connect):
    server = Server("s")
    async with connect(server) as client:
        before = await client.discover()
        server.add_tool(lambda: "x", name="late")
        during = await client.discover()
        server.remove_tool("late")
        after = await client.discover()
    assert "tools" not in before["capabilities"]
    assert during["capabilities"] == {"tools": {"listChanged": True}}
    assert "tools" not in after["capabilities"]


async def test_instructions_are_included_when_given(connect):
    server = Server("s", instructions="Keeps short notes.")
    async with connect(server) as client:
        result = await client.discover()
    assert result["instructions"] == "Keeps short notes."


async def test_instructions_are_omitted_when_not_given(connect):
    async with connect(Server("s")) as client:
        result = await client.discover()
    assert "instructions" not in result


async def test_discover_defaults_to_zero_ttl_and_private_scope(connect):
    async with connect(Server("s")) as client:
        result = await client.discover()
    assert result["ttlMs"] == 0
    assert result["cacheScope"] == "private"


async def test_discover_uses_the_server_cache_policy(connect):
    server = Server("s", cache=CachePolicy(ttl_ms=3_600_000, scope="public"))
    async with connect(server) as client:
        result = await client.discover()
    assert result["ttlMs"] == 3_600_000
    assert result["cacheScope"] == "public"


async def test_discover_carries_server_info_with_name_and_version(connect):
    server = Server("notes", version="1.2.3")
    async with connect(server) as client:
        result = await client.discover()
    assert result["_meta"][c.META_SERVER_INFO] == {"name": "notes", "version": "1.2.3"}
    assert "serverInfo" not in result


async def test_discover_server_info_includes_title_description_website_and_icons(connect):
    icons = [{"src": "https://example.com/i.svg", "mimeType": "image/svg+xml", "sizes": ["any"]}]
    server = Server(
        "notes",
        version="1.0.0",
        title="Notes",
        description="Keeps notes.",
        website_url="https://example.com/notes",
        icons=icons,
    )
    async with connect(server) as client:
        result = await client.discover()
    info = result["_meta"][c.META_SERVER_INFO]
    check("Implementation", info)
    assert info == {
        "name": "notes",
        "version": "1.0.0",
        "title": "Notes",
        "description": "Keeps notes.",
        "websiteUrl": "https://example.com/notes",
        "icons": icons,
    }


async def test_mutating_a_discover_result_does_not_change_the_next_one():
    server = Server("s")
    first = await result_of(server, "server/discover")
    first["supportedVersions"].append("1900-01-01")
    second = await result_of(server, "server/discover")
    assert "1900-01-01" not in second["supportedVersions"]


# -- tools/list ----------------------------------------------------------------------------


async def test_tools_list_is_in_registration_order(connect):
    server = Server("s")

    @server.tool
    def zebra() -> str:
        return ""

    @server.tool
    def apple() -> str:
        return ""

    @server.tool
    def mango() -> str:
        return ""

    async with connect(server) as client:
        tools = await client.list_tools()
    assert [tool["name"] for tool in tools] == ["zebra", "apple", "mango"]


async def test_tools_list_is_identical_over_three_calls(connect):
    server = Server("s")

    @server.tool
    def b(x: int) -> int:
        """Bee."""
        return x

    @server.tool
    def a(y: str = "z") -> str:
        return y

    async with connect(server) as client:
        results = [await client.request("tools/list") for _ in range(3)]
    assert results[0] == results[1] == results[2]
    assert [tool["name"] for tool in results[0]["tools"]] == ["b", "a"]


async def test_tools_list_has_default_cache_fields(connect):
    server = Server("s")

    @server.tool
    def noop() -> str:
        return ""

    async with connect(server) as client:
        result = await client.request("tools/list")
    assert result["ttlMs"] == 0
    assert result["cacheScope"] == "private"
    assert "nextCursor" not in result


@pytest.mark.parametrize(
    ("method", "key"),
    [
        ("tools/list", "tools"),
        ("prompts/list", "prompts"),
        ("resources/list", "resources"),
        ("resources/templates/list", "resourceTemplates"),
    ],
)
async def test_list_results_carry_the_server_cache_policy(connect, method, key):
    server = Server("s", cache=CachePolicy(ttl_ms=300_000, scope="public"))

    @server.tool
    def noop() -> str:
        return ""

    @server.prompt
    def greet() -> str:
        return "hi"

    @server.resource("notes://a")
    def note() -> str:
        return "a"

    @server.resource("notes://{name}")
    def named(name: str) -> str:
        return name

    async with connect(server) as client:
        result = await client.request(method)
    assert len(result[key]) == 1
    assert result["ttlMs"] == 300_000
    assert result["cacheScope"] == "public"


async def test_resources_read_carries_the_server_cache_policy(connect):
    server = Server("s", cache=CachePolicy(ttl_ms=1000, scope="public"))

    @server.resource("notes://a")
    def note() -> str:
        return "a"

    async with connect(server) as client:
        result = await client.read_resource("notes://a")
    assert result["ttlMs"] == 1000
    assert result["cacheScope"] == "public"
    assert result["contents"] == [{"uri": "notes://a", "text": "a"}]


async def test_resource_cache_policy_overrides_the_server_default_on_read(connect):
    server = Server("s", cache=CachePolicy(ttl_ms=1000, scope="public"))

    @server.resource("notes://secret", cache=CachePolicy(ttl_ms=0, scope="private"))
    def secret() -> str:
        return "s"

    @server.resource("notes://plain")
    def plain() -> str:
        return "p"

    async with connect(server) as client:
        overridden = await client.read_resource("notes://secret")
        default = await client.read_resource("notes://plain")
    assert (overridden["ttlMs"], overridden["cacheScope"]) == (0, "private")
    assert (default["ttlMs"], default["cacheScope"]) == (1000, "public")


async def test_template_cache_policy_overrides_the_server_default_on_read(connect):
    server = Server("s")

    @server.resource("notes://{name}", cache=CachePolicy(ttl_ms=60_000, scope="public"))
    def named(name: str) -> str:
        return name

    async with connect(server) as client:
        result = await client.read_resource("notes://x")
    assert (result["ttlMs"], result["cacheScope"]) == (60_000, "public")


async def test_resource_cache_policy_does_not_change_resources_list(connect):
    server = Server("s", cache=CachePolicy(ttl_ms=5, scope="public"))

    @server.resource("notes://a", cache=CachePolicy(ttl_ms=9, scope="private"))
    def note() -> str:
        return "a"

    async with connect(server) as client:
        result = await client.request("resources/list")
    assert (result["ttlMs"], result["cacheScope"]) == (5, "public")


# -- pagination ----------------------------------------------------------------------------


def five_tool_server(**options):
    server = Server("paged", page_size=2, **options)
    for name in ("t1", "t2", "t3", "t4", "t5"):
        server.add_tool(lambda: "", name=name)
    return server


async def test_pages_carry_next_cursor_until_the_last_page(connect):
    server = Server("paged", page_size=2, cache=CachePolicy(ttl_ms=10, scope="public"))
    for name in ("t1", "t2", "t3", "t4", "t5"):
        server.add_tool(lambda: "", name=name)

    pages = []
    async with connect(server) as client:
        result = await client.request("tools/list")
        pages.append(result)
        while "nextCursor" in result:
            result = await client.request("tools/list", {"cursor": result["nextCursor"]})
            pages.append(result)
    assert [[tool["name"] for tool in page["tools"]] for page in pages] == [
        ["t1", "t2"],
        ["t3", "t4"],
        ["t5"],
    ]
    assert all(isinstance(page["nextCursor"], str) and page["nextCursor"] for page in pages[:-1])
    assert "nextCursor" not in pages[-1]


async def test_every_page_has_the_same_cache_scope(connect):
    server = Server("paged", page_size=2, cache=CachePolicy(ttl_ms=10, scope="public"))
    for name in ("t1", "t2", "t3", "t4", "t5"):
        server.add_tool(lambda: "", name=name)

    scopes = []
    async with connect(server) as client:
        cursor = None
        while True:
            result = await client.request("tools/list", {"cursor": cursor} if cursor else None)
            scopes.append(result["cacheScope"])
            cursor = result.get("nextCursor")
            if cursor is None:
                break
    assert scopes == ["public", "public", "public"]


async def test_list_of_exactly_one_page_has_no_next_cursor(connect):
    server = Server("paged", page_size=2)
    server.add_tool(lambda: "", name="t1")
    server.add_tool(lambda: "", name="t2")
    async with connect(server) as client:
        result = await client.request("tools/list")
    assert len(result["tools"]) == 2
    assert "nextCursor" not in result


async def test_client_list_tools_follows_every_page(connect):
    server = Server("paged", page_size=2)
    for name in ("t1", "t2", "t3", "t4", "t5"):
        server.add_tool(lambda: "", name=name)
    async with connect(server) as client:
        tools = await client.list_tools()
    assert [tool["name"] for tool in tools] == ["t1", "t2", "t3", "t4", "t5"]


async def test_prompts_resources_and_templates_are_paginated_too(connect):
    server = Server("paged", page_size=1)

    @server.prompt
    def p1() -> str:
        return "1"

    @server.prompt
    def p2() -> str:
        return "2"

    @server.resource("notes://a")
    def a() -> str:
        return "a"

    @server.resource("notes://b")
    def b() -> str:
        return "b"

    @server.resource("notes://{x}")
    def tx(x: str) -> str:
        return x

    @server.resource("other://{y}")
    def ty(y: str) -> str:
        return y

    async with connect(server) as client:
        first_prompts = await client.request("prompts/list")
        prompts = await client.list_prompts()
        resources = await client.list_resources()
        templates = await client.list_resource_templates()
    assert "nextCursor" in first_prompts
    assert [p["name"] for p in prompts] == ["p1", "p2"]
    assert [r["uri"] for r in resources] == ["notes://a", "notes://b"]
    assert [t["uriTemplate"] for t in templates] == ["notes://{x}", "other://{y}"]


@pytest.mark.parametrize(
    "cursor",
    [
        "garbage!!",
        "",
        "aGVsbG8gd29ybGQ",  # base64 of "hello world": not ours
        "eyJwYWdlIjoyfQ",  # base64 of {"page":2}: another server's cursor
        encode_cursor(99),  # past the end
        "bzE6wrI",  # base64 of "o1:\u00b2" (superscript two), which isdigit() accepts
        3,
        ["x"],
        {"offset": 2},
        True,
    ],
)
async def test_invalid_cursor_is_minus_32602(cursor):
    server = five_tool_server()
    response = await server.handle(request("tools/list", {"cursor": cursor}))
    check_response("tools/list", response)
    assert response["error"]["code"] == -32602


async def test_invalid_cursor_reaches_the_client_as_minus_32602(connect):
    server = five_tool_server()
    async with connect(server) as client:
        with pytest.raises(MCPError) as caught:
            await client.request("tools/list", {"cursor": "not-a-cursor"})
    assert caught.value.code == -32602


async def test_null_cursor_means_the_first_page():
    server = five_tool_server()
    result = await result_of(server, "tools/list", {"cursor": None})
    assert [tool["name"] for tool in result["tools"]] == ["t1", "t2"]


async def test_cursor_without_page_size_is_still_validated():
    server = Server("s")

    @server.tool
    def noop() -> str:
        return ""

    response = await server.handle(request("tools/list", {"cursor": "junk"}))
    assert response["error"]["code"] == -32602


async def test_same_page_gets_the_same_cursor_every_time():
    server = five_tool_server()
    first = await result_of(server, "tools/list")
    second = await result_of(server, "tools/list")
    assert first["nextCursor"] == second["nextCursor"]


# -- run-time changes ----------------------------------------------------------------------


async def test_tool_added_at_run_time_appears_in_the_next_list(connect):
    server = Server("s")

    @server.tool
    def first() -> str:
        return ""

    async with connect(server) as client:
        before = await client.list_tools()

        def second() -> str:
            return ""

        server.add_tool(second)
        after = await client.list_tools()
    assert [tool["name"] for tool in before] == ["first"]
    assert [tool["name"] for tool in after] == ["first", "second"]


async def test_tool_removed_at_run_time_disappears_from_the_next_list(connect):
    server = Server("s")

    @server.tool
    def keep() -> str:
        return ""

    @server.tool
    def drop() -> str:
        return ""

    async with connect(server) as client:
        before = await client.list_tools()
        server.remove_tool("drop")
        after = await client.list_tools()
        with pytest.raises(MCPError) as caught:
            await client.call_tool("drop", {})
    assert [tool["name"] for tool in before] == ["keep", "drop"]
    assert [tool["name"] for tool in after] == ["keep"]
    assert caught.value.code == -32602


async def test_first_tool_added_at_run_time_enables_tools_list(connect):
    server = Server("s")
    async with connect(server) as client:
        with pytest.raises(MCPError) as caught:
            await client.list_tools()
        server.add_tool(lambda: "ok", name="late")
        tools = await client.list_tools()
        called = await client.call_tool("late", {})
    assert caught.value.code == -32601
    assert [tool["name"] for tool in tools] == ["late"]
    assert called["content"][0]["text"] == "ok"


async def test_removing_the_last_tool_makes_tools_list_minus_32601(connect):
    server = Server("s")
    server.add_tool(lambda: "", name="only")
    async with connect(server) as client:
        assert len(await client.list_tools()) == 1
        server.remove_tool("only")
        with pytest.raises(MCPError) as caught:
            await client.list_tools()
    assert caught.value.code == -32601


async def test_replaced_tool_keeps_its_place_in_the_list(connect):
    server = Server("s")
    server.add_tool(lambda: "", name="a", description="old")
    server.add_tool(lambda: "", name="b")
    async with connect(server) as client:
        server.add_tool(lambda: "", name="a", description="new", replace=True)
        tools = await client.list_tools()
    assert [(tool["name"], tool.get("description")) for tool in tools] == [
        ("a", "new"),
        ("b", None),
    ]
