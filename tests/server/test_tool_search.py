"""``Server(tool_search=True)`` in process (``server/tool_search.py``): the ranking, the
index following the registry, and call_tool taking the path of the tool it names."""

from __future__ import annotations

from collections import Counter
from typing import Any

from mcpserve import Context, Server
from mcpserve.protocol import constants as c
from mcpserve.protocol.core import Auth
from mcpserve.server.tool_search import BM25, document, words

META = {c.META_PROTOCOL_VERSION: "2026-07-28", c.META_CLIENT_CAPABILITIES: {}}


def message(method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": 1,
        "method": method,
        "params": {**(params or {}), "_meta": META},
    }


async def search(server: Server, query: str, **options: Any) -> list[str]:
    arguments = {"query": query, **options}
    response = await server.handle(
        message("tools/call", {"name": "search_tools", "arguments": arguments})
    )
    assert response is not None
    return [tool["name"] for tool in response["result"]["structuredContent"]["tools"]]


def test_words_split_names_the_way_people_write_them() -> None:
    assert words("getUserID") == ["get", "user", "id"]
    assert words("get_user-id v2") == ["get", "user", "id", "v", "2"]


def test_bm25_ranks_rarer_and_more_frequent_words_higher() -> None:
    index = BM25(
        [
            ("a", Counter({"send": 1, "mail": 1})),
            ("b", Counter({"send": 1, "invoice": 2})),
            ("c", Counter({"send": 1, "invoice": 1, "mail": 1, "queue": 1})),
        ]
    )
    assert index.ranked("invoice") == ["b", "c"]
    assert index.ranked("send") == ["a", "b", "c"]  # one word in all: ties in order
    assert index.ranked("nothing") == []


def test_a_document_counts_the_name_three_times_and_reads_the_parameters() -> None:
    wire = {
        "name": "refund",
        "description": "Money back",
        "inputSchema": {"properties": {"payment_id": {"description": "The payment"}}},
    }
    counts = document(wire)
    assert counts["refund"] == 3
    assert counts["payment"] == 2  # the parameter's name and its description
    assert counts["money"] == 1


async def test_tools_list_shows_the_two_tools_and_search_follows_registrations() -> None:
    server = Server("s", tool_search=True)
    server.add_tool(lambda: "x", name="send_mail", description="Send an e-mail")
    listed = await server.handle(message("tools/list"))
    assert listed is not None
    assert [tool["name"] for tool in listed["result"]["tools"]] == ["search_tools", "call_tool"]
    assert await search(server, "mail") == ["send_mail"]
    server.add_tool(lambda: "x", name="mail_merge", description="Merge mail")
    assert await search(server, "mail") == ["mail_merge", "send_mail"]
    server.disable("tools", "mail_merge")
    assert await search(server, "mail") == ["send_mail"]
    assert await search(server, "mail", limit=1) == ["send_mail"]


async def test_search_leaves_out_what_the_callers_scopes_do_not_allow() -> None:
    server = Server("s", tool_search=True)
    server.add_tool(lambda: "x", name="read_mail", scopes=["mail:read"])
    server.add_tool(lambda: "x", name="send_mail", scopes=["mail:send"])
    reader = Auth("ann", frozenset({"mail:read"}))
    arguments = {"query": "mail"}
    response = await server.handle(
        message("tools/call", {"name": "search_tools", "arguments": arguments}), auth=reader
    )
    assert response is not None
    found = response["result"]["structuredContent"]["tools"]
    assert [tool["name"] for tool in found] == ["read_mail"]


async def test_a_limit_out_of_range_is_an_invalid_argument() -> None:
    server = Server("s", tool_search=True)
    server.add_tool(lambda: "x", name="t")
    arguments = {"query": "t", "limit": 0}
    response = await server.handle(
        message("tools/call", {"name": "search_tools", "arguments": arguments})
    )
    assert response is not None
    assert response["result"]["isError"] is True


async def test_call_tool_runs_the_named_tool_under_the_tools_call_middleware() -> None:
    server = Server("s", tool_search=True)
    targets: list[str] = []

    @server.tool
    def add(a: int, b: int) -> int:
        return a + b

    @server.middleware(methods=["tools/call"])
    async def watch(ctx: Context, call_next: Any) -> Any:
        targets.append(ctx.request.target.name)
        return await call_next()

    arguments = {"name": "add", "arguments": {"a": 2, "b": 3}}
    response = await server.handle(
        message("tools/call", {"name": "call_tool", "arguments": arguments})
    )
    assert response is not None
    assert response["result"]["structuredContent"] == 5
    assert targets == ["add"]


async def test_call_tool_needs_the_scopes_of_the_tool_it_names() -> None:
    server = Server("s", tool_search=True)
    server.add_tool(lambda: "sent", name="send_mail", scopes=["mail:send"])
    arguments = {"name": "send_mail", "arguments": {}}
    response = await server.handle(
        message("tools/call", {"name": "call_tool", "arguments": arguments}),
        auth=Auth("ann", frozenset()),
    )
    assert response is not None
    assert response["error"]["code"] == c.INSUFFICIENT_SCOPE


async def test_invalid_arguments_through_call_tool_name_the_tool_they_were_for() -> None:
    server = Server("s", tool_search=True)

    @server.tool
    def add(a: int, b: int) -> int:
        return a + b

    arguments = {"name": "add", "arguments": {"a": "two"}}
    response = await server.handle(
        message("tools/call", {"name": "call_tool", "arguments": arguments})
    )
    assert response is not None
    result = response["result"]
    assert result["isError"] is True
    assert result["content"][0]["text"].startswith("Invalid arguments for tool add: a: ")
