"""Tool transformation: ``tool.transformed(...)`` and ``server.transform_tool(...)``.

Through the schema-checked in-memory client; a transformed mounted tool is also called over
HTTP in both eras in ``test_mount_wire.py``.
"""

from __future__ import annotations

import asyncio
import logging
import re
from typing import Annotated, Any, Literal

import pytest

from mcpserve import Client, Header, Server

TASKS = "io.modelcontextprotocol/tasks"


def search_server() -> tuple[Server, list[dict[str, Any]]]:
    server = Server("docs")
    calls: list[dict[str, Any]] = []

    @server.tool(annotations={"readOnlyHint": True}, meta={"team": "docs"})
    def search(
        query: str,
        index: str,
        limit: int = 10,
        sort: str = "score",
        debug: bool = False,
        tags: list[str] | None = None,
    ) -> str:
        """Search an index."""
        calls.append({"query": query, "index": index, "limit": limit, "sort": sort,
                      "debug": debug, "tags": tags})  # fmt: skip
        return f"{index}:{query}:{limit}:{sort}"

    return server, calls


def text_of(result: dict[str, Any]) -> str:
    [block] = result["content"]
    return block["text"]  # type: ignore[no-any-return]


async def test_a_transformed_tool_is_a_new_entry_over_the_same_function(connect: Any) -> None:
    server, calls = search_server()
    search = server.registry.tools["search"]
    docs = search.transformed(name="search_docs", title="Docs search",
                              description="Search the documentation.",
                              fixed={"index": "docs"})  # fmt: skip
    server.add_tool(docs)
    assert docs.inner is search  # the tool itself answers, wrapped, not a copy
    assert search.name == "search"
    assert "index" in search.wire["inputSchema"]["properties"]
    async with connect(server) as client:
        listed = {tool["name"]: tool for tool in await client.list_tools()}
        assert list(listed) == ["search", "search_docs"]
        entry = listed["search_docs"]
        assert entry["title"] == "Docs search"
        assert entry["description"] == "Search the documentation."
        assert entry["annotations"] == {"readOnlyHint": True}  # what is not changed stays
        assert entry["_meta"] == {"team": "docs"}
        result = await client.call_tool("search_docs", {"query": "mount"})
        assert text_of(result) == "docs:mount:10:score"
        original = await client.call_tool("search", {"query": "q", "index": "blog"})
        assert text_of(original) == "blog:q:10:score"
    assert [call["index"] for call in calls] == ["docs", "blog"]


async def test_hidden_and_fixed_arguments_leave_the_schema_and_cannot_be_passed(
    connect: Any,
) -> None:
    server, calls = search_server()
    server.transform_tool("search", hide=["debug"], fixed={"index": "docs"})
    async with connect(server) as client:
        [tool] = await client.list_tools()
        schema = tool["inputSchema"]
        assert set(schema["properties"]) == {"query", "limit", "sort", "tags"}
        assert schema["required"] == ["query"]
        for argument, value in (("index", "secrets"), ("debug", True)):
            refused = await client.call_tool("search", {"query": "q", argument: value})
            assert refused["isError"] is True
            assert text_of(refused) == (
                f"Invalid arguments for tool search: {argument}: this argument is set by the "
                "server; leave it out"
            )
        assert calls == []  # a refused call never reaches the function
        assert text_of(await client.call_tool("search", {"query": "q"})) == "docs:q:10:score"
    assert calls[0]["debug"] is False  # the function's own default


async def test_new_defaults_are_published_and_passed_when_left_out(connect: Any) -> None:
    server, _ = search_server()
    server.transform_tool("search", defaults={"limit": 3, "index": "docs"})
    async with connect(server) as client:
        [tool] = await client.list_tools()
        properties = tool["inputSchema"]["properties"]
        assert properties["limit"]["default"] == 3
        assert properties["index"]["default"] == "docs"
        assert tool["inputSchema"]["required"] == ["query"]  # index is no longer required
        assert text_of(await client.call_tool("search", {"query": "q"})) == "docs:q:3:score"
        given = await client.call_tool("search", {"query": "q", "index": "blog", "limit": 1})
        assert text_of(given) == "blog:q:1:score"


async def test_a_narrowed_schema_is_published_and_enforced(connect: Any) -> None:
    server, calls = search_server()
    server.transform_tool("search", fixed={"index": "docs"},
                          schema={"sort": {"enum": ["score", "date"]},
                                  "limit": {"maximum": 20}})  # fmt: skip
    async with connect(server) as client:
        [tool] = await client.list_tools()
        properties = tool["inputSchema"]["properties"]
        assert properties["sort"]["enum"] == ["score", "date"]
        assert properties["limit"]["maximum"] == 20
        wrong_sort = await client.call_tool("search", {"query": "q", "sort": "random"})
        assert wrong_sort["isError"] is True
        assert text_of(wrong_sort) == (
            "Invalid arguments for tool search: sort: 'random' is not one of ['score', 'date']"
        )
        too_many = await client.call_tool("search", {"query": "q", "limit": 50})
        assert text_of(too_many) == (
            "Invalid arguments for tool search: limit: 50 is greater than the maximum of 20"
        )
        assert calls == []
        fits = await client.call_tool("search", {"query": "q", "sort": "date", "limit": 20})
        assert text_of(fits) == "docs:q:20:date"


async def test_the_functions_own_validation_still_applies_after_the_transformation(
    connect: Any,
) -> None:
    server, calls = search_server()
    server.transform_tool("search", fixed={"index": "docs"})
    async with connect(server) as client:
        result = await client.call_tool("search", {"query": "q", "limit": "many"})
    assert result["isError"] is True
    assert text_of(result).startswith("Invalid arguments for tool search: limit: ")
    assert "integer" in text_of(result)
    assert calls == []


async def test_transform_tool_replaces_a_local_tool_in_its_place() -> None:
    server, _ = search_server()

    @server.tool
    def status() -> str:
        return "ok"

    async with asyncio.timeout(10), Client(server) as client:
        async with client.listen(tools_list_changed=True) as notes:
            made = server.transform_tool("search", name="find", fixed={"index": "docs"})
            note = await asyncio.wait_for(anext(aiter(notes)), 5)
            assert note["method"] == "notifications/tools/list_changed"
        assert [tool["name"] for tool in await client.list_tools()] == ["find", "status"]
        assert server.registry.tools["find"] is made
        assert text_of(await client.call_tool("find", {"query": "q"})) == "docs:q:10:score"


async def test_a_transformed_mounted_tool_stays_transformed_as_the_child_changes(
    connect: Any,
) -> None:
    app = Server("app")
    child, _ = search_server()
    app.mount(child, namespace="docs")
    app.transform_tool("docs_search", name="find", fixed={"index": "docs"})
    async with connect(app) as client:
        assert [tool["name"] for tool in await client.list_tools()] == ["find"]
        child.add_tool(lambda: "pong", name="ping")  # the child's list changes: recopied
        assert [tool["name"] for tool in await client.list_tools()] == ["find", "docs_ping"]

        def search_v2(query: str, index: str, limit: int = 10) -> str:
            return f"v2 {index}:{query}"

        child.add_tool(search_v2, name="search", replace=True)  # a new search, same name
        assert text_of(await client.call_tool("find", {"query": "q"})) == "v2 docs:q"
        refused = await client.call_tool("find", {"query": "q", "index": "blog"})
        assert refused["isError"] is True
        # Transformed again, under its new name: both transformations apply, in order.
        app.transform_tool("find", defaults={"limit": 2})
        [entry, _] = await client.list_tools()
        assert entry["inputSchema"]["properties"]["limit"]["default"] == 2
        assert text_of(await client.call_tool("find", {"query": "z"})) == "v2 docs:z"


async def test_a_mounted_tool_its_transformation_no_longer_fits_is_left_out(
    caplog: pytest.LogCaptureFixture,
) -> None:
    app = Server("app")
    child, _ = search_server()
    app.mount(child, namespace="docs")
    app.transform_tool("docs_search", name="find", fixed={"index": "docs"})

    def search(query: str) -> str:  # no index to fix any more
        return query

    with caplog.at_level(logging.ERROR, logger="mcpserve.mounting"):
        child.add_tool(search, replace=True)
    assert "its transformation no longer fits it: Tool 'docs_search' has no argument 'index'" in (
        caplog.text
    )
    assert "find" not in app.registry.tools


async def test_transforming_a_transformed_tool_takes_both_steps(connect: Any) -> None:
    server, _ = search_server()
    once = server.registry.tools["search"].transformed(name="docs", fixed={"index": "docs"})
    twice = once.transformed(name="docs_top", fixed={"limit": 1}, hide=["debug"])
    server.add_tool(twice)
    async with connect(server) as client:
        assert text_of(await client.call_tool("docs_top", {"query": "q"})) == "docs:q:1:score"
        refused = await client.call_tool("docs_top", {"query": "q", "index": "x"})
        assert refused["isError"] is True
        assert "index: this argument is set by the server" in text_of(refused)


async def test_a_transformed_task_tool_still_runs_as_a_task() -> None:
    server = Server("work")

    @server.tool(task="optional")
    async def crunch(rows: int, mode: str) -> str:
        return f"{mode} {rows}"

    server.transform_tool("crunch", fixed={"mode": "fast"})
    async with Client(server, capabilities={"extensions": {TASKS: {}}}) as client:
        created = await client.call_tool("crunch", {"rows": 2})
        assert created["resultType"] == "task"
        for _ in range(200):  # bounded; the function finishes at once
            task = await client.request("tasks/get", {"taskId": created["taskId"]})
            if task["status"] == "completed":
                break
            await asyncio.sleep(0.01)
        assert task["result"]["content"][0]["text"] == "fast 2"
        refused = await client.call_tool("crunch", {"rows": 2, "mode": "slow"})
        assert refused["isError"] is True


def test_a_hidden_argument_mirrored_in_a_header_is_no_longer_mirrored() -> None:
    server = Server("regions")

    @server.tool
    def deploy(region: Annotated[str, Header("Region")], app: Annotated[str, Header("App")]) -> str:
        return f"{app}@{region}"

    made = server.transform_tool("deploy", fixed={"region": "eu"})
    assert made.header_params == {"app": "App"}
    assert "x-mcp-header" in made.wire["inputSchema"]["properties"]["app"]


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"hide": ["nope"]}, "Tool 'search' has no argument 'nope'"),
        ({"hide": ["query"]}, "'query' is required, so hiding it needs a value"),
        ({"fixed": {"limit": "ten"}}, "the fixed value for 'limit' does not fit its schema"),
        ({"defaults": {"limit": 50}, "schema": {"limit": {"maximum": 20}}},
         "the default value for 'limit' does not fit its schema: 50 is greater than the maximum"),
        ({"fixed": {"index": "docs"}, "defaults": {"index": "x"}},
         "'index' cannot be hidden and have a new default"),
        ({"hide": ["sort"], "schema": {"sort": {"enum": ["a"]}}},
         "'sort' cannot be hidden and have a narrowed schema"),
        ({"schema": {"limit": {"maximum": "twenty"}}}, "invalid JSON Schema"),
        ({"name": "no spaces allowed"}, "must be 1-128 characters"),
        ({"name": "status"}, "A tool named 'status' is already registered"),
    ],
)  # fmt: skip
def test_mistakes_in_a_transformation_are_clear_errors_when_it_is_made(
    changes: dict[str, Any], message: str
) -> None:
    server, _ = search_server()
    server.add_tool(lambda: "ok", name="status")
    with pytest.raises(ValueError, match=re.escape(message)):
        server.transform_tool("search", **changes)
    assert list(server.registry.tools) == ["search", "status"]  # nothing changed


def test_transforming_an_unknown_tool_or_with_an_unknown_change_is_refused() -> None:
    server, _ = search_server()
    with pytest.raises(KeyError, match="No tool named 'missing'"):
        server.transform_tool("missing", name="x")
    with pytest.raises(TypeError, match="Unknown tool change"):
        server.transform_tool("search", rename={"q": "query"})  # type: ignore[call-arg]


async def test_a_literal_argument_can_be_narrowed_to_some_of_its_values(connect: Any) -> None:
    server = Server("units")

    @server.tool
    def convert(value: float, unit: Literal["c", "f", "k"]) -> str:
        return f"{value}{unit}"

    server.transform_tool("convert", schema={"unit": {"enum": ["c", "f"]}})
    async with connect(server) as client:
        refused = await client.call_tool("convert", {"value": 1, "unit": "k"})
        assert refused["isError"] is True
        assert text_of(await client.call_tool("convert", {"value": 1, "unit": "c"})) == "1.0c"
