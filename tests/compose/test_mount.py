"""``parent.mount(child, namespace=...)``: a server's entries served by another, in memory.

Requests go through the schema-checked in-memory client (``conftest.connect``); the tests
that listen for notifications use a plain ``Client``, whose router hears them (every wait
bounded). The wire, in both eras, is ``test_mount_wire.py``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
import sys
import types
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any, Literal

import pytest

from mcpserve import (
    Auth,
    CallNext,
    Client,
    Context,
    InvalidParams,
    MCPError,
    Server,
    ToolResult,
)
from mcpserve.compose.mount.entries import Namespace

TASKS = "io.modelcontextprotocol/tasks"
GUIDE = Path(__file__).resolve().parents[2] / "docs" / "composition.md"


def billing_server(**options: Any) -> Server:
    billing = Server("billing", **options)

    @billing.tool(annotations={"readOnlyHint": False}, meta={"team": "payments"},
                  scopes=["billing:write"], title="Pay")  # fmt: skip
    def pay(amount: int) -> dict[str, int]:
        """Pay an amount."""
        return {"paid": amount}

    @billing.resource("ledger://accounts", mime_type="text/plain")
    def accounts() -> str:
        return "acme, initech"

    @billing.resource("ledger://{account}")
    def account(account: str) -> str:
        return f"account {account}"

    @billing.prompt
    def invoice(customer: str, tone: Literal["firm", "friendly"] = "friendly") -> str:
        return f"Invoice {customer}, {tone}"

    @billing.completion(prompt="invoice", argument="customer")
    def customers(value: str) -> list[str]:
        return [name for name in ("acme", "initech", "umbrella") if name.startswith(value)]

    @billing.completion(resource="ledger://{account}", argument="account")
    def account_names(value: str) -> list[str]:
        return [name for name in ("acme", "initech") if name.startswith(value)]

    return billing


def text_of(result: dict[str, Any]) -> str:
    [block] = result["content"]
    return block["text"]  # type: ignore[no-any-return]


async def next_note(notes: Any) -> dict[str, Any]:
    note: dict[str, Any] = await asyncio.wait_for(anext(aiter(notes)), 5)
    return note


# --------------------------------------------------------------------------- names


async def test_mounted_entries_appear_in_the_parents_lists_under_the_namespace(
    connect: Any,
) -> None:
    app = Server("app")

    @app.tool
    def status() -> str:
        return "ok"

    app.mount(billing_server(), namespace="billing")
    async with connect(app) as client:
        assert [tool["name"] for tool in await client.list_tools()] == ["status", "billing_pay"]
        assert [r["uri"] for r in await client.list_resources()] == ["billing+ledger://accounts"]
        templates = await client.list_resource_templates()
        assert [t["uriTemplate"] for t in templates] == ["billing+ledger://{account}"]
        assert [p["name"] for p in await client.list_prompts()] == ["billing_invoice"]
        discovered = await client.discover()
        assert {"tools", "resources", "prompts", "completions"} <= set(discovered["capabilities"])


async def test_calls_reads_and_gets_reach_the_childs_functions(connect: Any) -> None:
    app = Server("app")
    app.mount(billing_server(), namespace="billing")
    async with connect(app) as client:
        paid = await client.call_tool("billing_pay", {"amount": 5})
        assert paid["structuredContent"] == {"paid": 5}
        read = await client.read_resource("billing+ledger://acme")
        assert read["contents"] == [{"uri": "billing+ledger://acme", "text": "account acme"}]
        fixed = await client.read_resource("billing+ledger://accounts")
        assert fixed["contents"][0]["mimeType"] == "text/plain"
        prompt = await client.get_prompt("billing_invoice", {"customer": "acme"})
        assert prompt["messages"][0]["content"]["text"] == "Invoice acme, friendly"
        # The child's names are not the parent's.
        with pytest.raises(MCPError, match="Resource not found"):
            await client.read_resource("ledger://acme")
        with pytest.raises(MCPError, match="Unknown tool: pay"):
            await client.call_tool("pay", {"amount": 5})


async def test_completion_of_a_mounted_prompt_or_template_reaches_the_childs_completer(
    connect: Any,
) -> None:
    app = Server("app")
    app.mount(billing_server(), namespace="billing")
    async with connect(app) as client:
        prompt = {"type": "ref/prompt", "name": "billing_invoice"}
        assert await client.complete(prompt, "customer", "in") == {"values": ["initech"]}
        # A Literal argument without a completer completes to its values, as in the child.
        assert await client.complete(prompt, "tone", "f") == {"values": ["firm", "friendly"]}
        template = {"type": "ref/resource", "uri": "billing+ledger://{account}"}
        assert await client.complete(template, "account", "a") == {"values": ["acme"]}
        with pytest.raises(MCPError) as child_name:
            await client.complete({"type": "ref/prompt", "name": "invoice"}, "customer", "")
        assert child_name.value.code == -32602


async def test_a_mount_without_namespace_keeps_names_and_uris(connect: Any) -> None:
    app = Server("app")
    app.mount(billing_server())
    async with connect(app) as client:
        assert [tool["name"] for tool in await client.list_tools()] == ["pay"]
        read = await client.read_resource("ledger://acme")
        assert read["contents"][0]["uri"] == "ledger://acme"
        prompt = {"type": "ref/prompt", "name": "invoice"}
        assert await client.complete(prompt, "customer", "u") == {"values": ["umbrella"]}


def test_namespaced_names_and_uris_round_trip() -> None:
    namespace = Namespace("billing")
    assert namespace.name("pay") == "billing_pay"
    for uri in ("ledger://acme", "file:///etc/hosts", "urn:isbn:0451450523", "https://x.y/a?b#c",
                "{+path}", "billing+ledger://nested"):  # fmt: skip
        assert namespace.child_uri(namespace.uri(uri)) == uri
    assert namespace.child_name(namespace.name("pay")) == "pay"
    assert namespace.child_uri("ledger://acme") is None
    assert namespace.child_name("shipping_pay") is None


def test_an_app_view_keeps_its_ui_scheme_under_a_namespace() -> None:
    namespace = Namespace("billing")
    assert namespace.uri("ui://invoice/view") == "ui://billing+invoice/view"
    assert namespace.child_uri("ui://billing+invoice/view") == "ui://invoice/view"
    assert namespace.child_uri("ui://invoice/view") is None
    assert namespace.child_uri("ui://shipping+invoice/view") is None


async def test_a_mounted_tool_links_to_its_view_as_the_parent_serves_it(connect: Any) -> None:
    billing = Server("billing")
    view = billing.app("ui://invoice/view", html="<!doctype html><p>invoice</p>")

    @billing.tool(app=view)
    def show_invoice(number: int) -> str:
        return f"invoice {number}"

    app = Server("app")
    app.mount(billing, namespace="billing")
    async with connect(app) as client:
        [tool] = await client.list_tools()
        assert tool["_meta"]["ui"]["resourceUri"] == "ui://billing+invoice/view"
        assert tool["_meta"]["ui/resourceUri"] == "ui://billing+invoice/view"
        [resource] = await client.list_resources()
        assert resource["uri"] == "ui://billing+invoice/view"
        read = await client.read_resource("ui://billing+invoice/view")
        [content] = read["contents"]
        assert (content["uri"], content["mimeType"]) == (
            "ui://billing+invoice/view", "text/html;profile=mcp-app")  # fmt: skip
        assert content["text"] == "<!doctype html><p>invoice</p>"
        discovered = await client.discover()
        assert "io.modelcontextprotocol/ui" in discovered["capabilities"]["extensions"]
    assert view.wire["uri"] == "ui://invoice/view"  # the child's own entry is untouched


@pytest.mark.parametrize(
    "namespace", ["", "1billing", "bill_ing", "bill+ing", "bill ing", "x" * 65]
)
def test_a_namespace_that_cannot_prefix_both_tool_names_and_uri_schemes_is_refused(
    namespace: str,
) -> None:
    with pytest.raises(ValueError, match="Namespace"):
        Server("app").mount(billing_server(), namespace=namespace)


def test_name_collisions_are_refused_at_mount_time_naming_each() -> None:
    app = Server("app")

    @app.tool
    def billing_pay() -> str:
        return "the parent's"

    @app.resource("billing+ledger://accounts")
    def accounts() -> str:
        return "the parent's"

    @app.resource("billing+ledger://{account}")
    def account(account: str) -> str:
        return account

    with pytest.raises(ValueError, match="billing") as refused:
        app.mount(billing_server(), namespace="billing")
    message = str(refused.value)
    assert "a tool named 'billing_pay' is already registered" in message
    assert "a resource 'billing+ledger://accounts' is already registered" in message
    assert "a resource template 'billing+ledger://{account}' is already registered" in message
    # Nothing was mounted: the parent is as it was.
    assert list(app.registry.tools) == ["billing_pay"]
    assert app.registry.tools["billing_pay"].fn is billing_pay.fn
    assert app.mounts == ()


def test_two_children_with_the_same_names_need_namespaces() -> None:
    app = Server("app")
    app.mount(billing_server())
    with pytest.raises(ValueError, match="a tool named 'pay' is already registered"):
        app.mount(billing_server())
    app.mount(billing_server(), namespace="eu")
    assert list(app.registry.tools) == ["pay", "eu_pay"]


def test_a_namespaced_name_longer_than_128_characters_is_refused() -> None:
    child = Server("child")
    child.add_tool(lambda: "x", name="t" * 120)
    with pytest.raises(ValueError, match="longer than 128 characters"):
        Server("app").mount(child, namespace="namespace")


def test_a_server_cannot_be_mounted_in_itself_or_in_a_cycle() -> None:
    a, b = Server("a"), Server("b")
    with pytest.raises(ValueError, match="contain itself"):
        a.mount(a, namespace="self")
    a.mount(b, namespace="b")
    with pytest.raises(ValueError, match="contain itself"):
        b.mount(a, namespace="a")


async def test_mounting_while_the_parent_serves_is_refused() -> None:
    app = Server("app")
    async with app.running():
        with pytest.raises(RuntimeError, match="already serving"):
            app.mount(billing_server(), namespace="billing")


def test_mounted_tools_are_plain_entries_of_the_parents_registry() -> None:
    app, billing = Server("app"), billing_server()
    app.mount(billing, namespace="billing")
    mounted = app.registry.tools["billing_pay"]
    assert app.registry.tool("billing_pay") is mounted
    assert mounted.inner is billing.registry.tools["pay"]  # the child's entry, wrapped
    assert mounted.name == "billing_pay"
    assert billing.registry.tools["pay"].name == "pay"  # the child's own entry is untouched


# --------------------------------------------------------------------------- what carries over


async def test_annotations_meta_title_scopes_and_output_schema_carry_over(
    connect: Any,
) -> None:
    app, billing = Server("app"), billing_server()
    app.mount(billing, namespace="billing")
    async with connect(billing) as child_client, connect(app) as parent_client:
        [child_entry] = await child_client.list_tools()
        [parent_entry] = await parent_client.list_tools()
    assert parent_entry == {**child_entry, "name": "billing_pay"}
    assert parent_entry["annotations"] == {"readOnlyHint": False}
    assert parent_entry["_meta"] == {"team": "payments"}
    assert "outputSchema" in parent_entry
    assert app.registry.tools["billing_pay"].scopes == frozenset({"billing:write"})


async def test_a_mounted_entrys_scopes_are_checked_by_the_parent() -> None:
    app = Server("app")
    app.mount(billing_server(), namespace="billing")
    meta = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {}}  # fmt: skip

    def message(method: str, params: dict[str, Any]) -> dict[str, Any]:
        return {"jsonrpc": "2.0", "id": 1, "method": method, "params": {**params, "_meta": meta}}

    reader, payer = Auth("ro", frozenset()), Auth("rw", frozenset({"billing:write"}))
    async with app.running():
        listed = await app.handle(message("tools/list", {}), auth=reader)
        assert listed is not None
        assert listed["result"]["tools"] == []  # a tool it may not call is not listed
        refused = await app.handle(message("tools/call", {"name": "billing_pay",
                                   "arguments": {"amount": 1}}), auth=reader)  # fmt: skip
        assert refused is not None
        assert refused["error"]["code"] == -32010  # insufficient scope
        paid = await app.handle(message("tools/call", {"name": "billing_pay",
                                "arguments": {"amount": 1}}), auth=payer)  # fmt: skip
        assert paid is not None
        assert paid["result"]["structuredContent"] == {"paid": 1}


@pytest.mark.parametrize("later", [False, True], ids=["plain", "async"])
async def test_a_mounted_entry_is_shown_only_when_the_parents_and_the_childs_rules_allow_it(
    later: bool,
) -> None:
    billing = billing_server()

    @billing.tool
    def refund(amount: int) -> int:
        return amount

    app = Server("app")
    app.mount(billing, namespace="billing")

    def childs_rule(ctx: Any, component: Any) -> bool:
        # The child's rule sees its own names and URIs, not the parent's.
        return component.name not in ("pay", "invoice", "accounts") or ctx.principal == "boss"

    async def childs_rule_later(ctx: Any, component: Any) -> bool:
        return childs_rule(ctx, component)

    billing.visibility(childs_rule_later if later else childs_rule)  # after mounting: it counts
    app.transform_tool("billing_pay", description="Pay, as the app tells it")

    @app.visibility
    def parents_rule(ctx: Any, component: Any) -> bool:
        return component.name != "billing_refund" or ctx.principal == "boss"

    meta = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {}}  # fmt: skip

    async def ask(method: str, params: dict[str, Any], principal: str) -> dict[str, Any]:
        message = {"jsonrpc": "2.0", "id": 1, "method": method, "params": {**params, "_meta": meta}}
        auth = Auth(principal, frozenset({"billing:write"}))
        response = await app.handle(message, auth=auth)
        assert response is not None
        return response

    async with app.running():
        for principal, tools, prompts, resources in (
            ("guest", [], [], []),
            (
                "boss",
                ["billing_pay", "billing_refund"],
                ["billing_invoice"],
                ["billing+ledger://accounts"],
            ),
        ):
            listed = await ask("tools/list", {}, principal)
            assert [tool["name"] for tool in listed["result"]["tools"]] == tools
            listed = await ask("prompts/list", {}, principal)
            assert [prompt["name"] for prompt in listed["result"]["prompts"]] == prompts
            listed = await ask("resources/list", {}, principal)
            assert [r["uri"] for r in listed["result"]["resources"]] == resources
        hidden = await ask(
            "tools/call", {"name": "billing_pay", "arguments": {"amount": 1}}, "guest"
        )
        assert hidden["error"] == {"code": -32602, "message": "Unknown tool: billing_pay"}
        hidden = await ask(
            "prompts/get", {"name": "billing_invoice", "arguments": {"customer": "a"}}, "guest"
        )
        assert hidden["error"] == {"code": -32602, "message": "Unknown prompt: billing_invoice"}
        hidden = await ask("resources/read", {"uri": "billing+ledger://accounts"}, "guest")
        assert hidden["error"]["message"] == "Resource not found"
        paid = await ask("tools/call", {"name": "billing_pay", "arguments": {"amount": 1}}, "boss")
        assert paid["result"]["structuredContent"] == {"paid": 1}
        # The template the child's rule shows is served to everyone.
        read = await ask("resources/read", {"uri": "billing+ledger://acme"}, "guest")
        assert read["result"]["contents"][0]["text"] == "account acme"


async def test_disabled_child_entries_stay_hidden_and_the_parent_can_disable_mounted_ones(
    connect: Any,
) -> None:
    app, billing = Server("app"), billing_server()

    @app.tool
    def status() -> str:
        return "ok"

    billing.disable("resources", "ledger://{account}")
    app.mount(billing, namespace="billing")
    async with connect(app) as client:
        assert await client.list_resource_templates() == []
        with pytest.raises(MCPError, match="Resource not found"):
            await client.read_resource("billing+ledger://acme")
        billing.enable("resources", "ledger://{account}")
        assert len(await client.list_resource_templates()) == 1
        billing.disable("tools", "pay")
        assert [t["name"] for t in await client.list_tools()] == ["status"]
        with pytest.raises(MCPError, match="Unknown tool"):
            await client.call_tool("billing_pay", {"amount": 1})
        billing.enable("tools", "pay")
        assert [t["name"] for t in await client.list_tools()] == ["status", "billing_pay"]
        app.disable("tools", "billing_pay")  # the parent's switch, under its own name
        assert [t["name"] for t in await client.list_tools()] == ["status"]
        assert [t["name"] for t in await child_tools(billing)] == ["pay"]


async def child_tools(server: Server) -> list[dict[str, Any]]:
    async with Client(server) as client:
        return await client.list_tools()


async def test_the_childs_middleware_wraps_its_own_entries_not_the_parents(
    connect: Any,
) -> None:
    seen: list[tuple[str, str]] = []
    app, billing = Server("app"), billing_server()

    @billing.middleware
    async def child_middleware(ctx: Context, call_next: CallNext) -> dict[str, Any]:
        seen.append(("child", ctx.method))
        return await call_next()

    @app.middleware
    async def parent_middleware(ctx: Context, call_next: CallNext) -> dict[str, Any]:
        seen.append(("parent", ctx.method))
        return await call_next()

    @app.tool
    def status() -> str:
        return "ok"

    app.mount(billing, namespace="billing")
    async with connect(app) as client:
        await client.call_tool("billing_pay", {"amount": 1})
        assert seen == [("parent", "tools/call"), ("child", "tools/call")]
        seen.clear()
        await client.call_tool("status")
        await client.list_tools()
        assert seen == [("parent", "tools/call"), ("parent", "tools/list")]
        seen.clear()
        await client.read_resource("billing+ledger://acme")
        await client.get_prompt("billing_invoice", {"customer": "acme"})
        await client.complete({"type": "ref/prompt", "name": "billing_invoice"}, "customer", "")
        assert [who for who, _ in seen] == ["parent", "child"] * 3


async def test_middleware_the_child_registers_after_mounting_wraps_its_entries_too(
    connect: Any,
) -> None:
    seen: list[str] = []
    app, billing = Server("app"), billing_server()
    app.mount(billing, namespace="billing")
    async with connect(app) as client:
        await client.call_tool("billing_pay", {"amount": 1})

        @billing.middleware
        async def late(ctx: Context, call_next: CallNext) -> dict[str, Any]:
            seen.append(ctx.method)
            return await call_next()

        paid = await client.call_tool("billing_pay", {"amount": 2})
        assert paid["structuredContent"] == {"paid": 2}
        await client.read_resource("billing+ledger://acme")
    assert seen == ["tools/call", "resources/read"]


async def test_the_childs_middleware_can_refuse_a_call_of_its_tool(connect: Any) -> None:
    app, billing = Server("app"), billing_server()

    @billing.middleware
    async def closed(ctx: Context, call_next: CallNext) -> dict[str, Any]:
        raise InvalidParams("billing is closed today")

    app.mount(billing, namespace="billing")
    async with connect(app) as client:
        with pytest.raises(MCPError, match="billing is closed today"):
            await client.call_tool("billing_pay", {"amount": 1})


async def test_a_mounted_task_tool_runs_as_a_task_of_the_parent() -> None:
    app, worker = Server("app"), Server("worker")
    release = asyncio.Event()

    @worker.tool(task="optional")
    async def crunch(rows: int) -> str:
        await release.wait()
        return f"crunched {rows}"

    app.mount(worker, namespace="worker")
    capabilities = {"extensions": {TASKS: {}}}
    async with Client(app, capabilities=capabilities) as client:
        assert TASKS in (await client.discover())["capabilities"]["extensions"]
        created = await client.call_tool("worker_crunch", {"rows": 3})
        assert created["resultType"] == "task"
        task_id = created["taskId"]
        release.set()
        for _ in range(200):  # bounded: the task finishes as soon as the event is set
            task = await client.request("tasks/get", {"taskId": task_id})
            if task["status"] == "completed":
                break
            await asyncio.sleep(0.01)
        assert task["status"] == "completed"
        assert task["result"]["content"][0]["text"] == "crunched 3"
    async with Client(app) as plain:  # without the extension: an ordinary call
        assert text_of(await plain.call_tool("worker_crunch", {"rows": 4})) == "crunched 4"


async def test_a_mounted_tool_asks_the_client_across_rounds(connect: Any) -> None:
    app, child = Server("app"), Server("child")

    @child.tool
    async def confirm(amount: int, ctx: Context) -> str:
        answer = await ctx.elicit(f"Pay {amount}?", {"type": "object", "properties": {
            "ok": {"type": "boolean"}}})  # fmt: skip
        return f"{answer.action} {answer.content}"

    app.mount(child, namespace="child")

    def elicit(params: dict[str, Any]) -> dict[str, Any]:
        assert params["message"] == "Pay 7?"
        return {"action": "accept", "content": {"ok": True}}

    async with connect(app, on_elicit=elicit) as client:
        result = await client.call_tool("child_confirm", {"amount": 7})
    assert text_of(result) == "accept {'ok': True}"


async def test_links_to_the_childs_resources_in_results_name_the_parents_uris(
    connect: Any,
) -> None:
    app, billing = Server("app"), billing_server()

    @billing.tool
    def statement(account: str) -> ToolResult:
        return ToolResult(content=[
            {"type": "resource_link", "uri": f"ledger://{account}", "name": account},
            {"type": "resource_link", "uri": "https://example.com/terms", "name": "terms"},
            {"type": "resource", "resource": {"uri": "ledger://accounts", "text": "all"}},
        ])  # fmt: skip

    @billing.prompt
    def review(account: str) -> list[dict[str, Any]]:
        return [{"role": "user", "content": {"type": "resource", "resource": {
            "uri": f"ledger://{account}", "text": "..."}}}]  # fmt: skip

    app.mount(billing, namespace="billing")
    async with connect(app) as client:
        result = await client.call_tool("billing_statement", {"account": "acme"})
        uris = [block.get("uri") or block["resource"]["uri"] for block in result["content"]]
        # The child's resources under the parent's URIs; a link the child does not serve
        # is left as it is.
        assert uris == ["billing+ledger://acme", "https://example.com/terms",
                        "billing+ledger://accounts"]  # fmt: skip
        prompt = await client.get_prompt("billing_review", {"account": "acme"})
        assert prompt["messages"][0]["content"]["resource"]["uri"] == "billing+ledger://acme"


async def test_a_childs_resource_lister_lists_in_the_parent_under_the_rewritten_uris(
    connect: Any,
) -> None:
    app, files = Server("app"), Server("files")

    @files.resource("file:///{name}")
    def read(name: str) -> str:
        return f"contents of {name}"

    @files.resource_lister
    def listing() -> list[dict[str, Any]]:
        return [{"uri": "file:///a.txt", "name": "a.txt"}]

    app.mount(files, namespace="files")
    async with connect(app) as client:
        assert [r["uri"] for r in await client.list_resources()] == ["files+file:///a.txt"]
        read_back = await client.read_resource("files+file:///a.txt")
        assert read_back["contents"][0]["text"] == "contents of a.txt"

        @app.resource_lister
        def own() -> list[dict[str, Any]]:
            return [{"uri": "app://readme", "name": "readme"}]

        # The parent's own lister joins the mounted one, first.
        assert [r["uri"] for r in await client.list_resources()] == [
            "app://readme",
            "files+file:///a.txt",
        ]


# --------------------------------------------------------------------------- following the child


async def test_changes_in_the_child_after_mounting_reach_the_parents_lists_and_listeners() -> None:
    app, billing = Server("app"), billing_server()
    app.mount(billing, namespace="billing")
    async with (
        asyncio.timeout(10),
        Client(app) as client,
        client.listen(
            tools_list_changed=True, prompts_list_changed=True, resources_list_changed=True
        ) as notes,
    ):

        @billing.tool
        def refund(amount: int) -> str:
            return f"refunded {amount}"

        note = await next_note(notes)
        assert note["method"] == "notifications/tools/list_changed"
        assert text_of(await client.call_tool("billing_refund", {"amount": 2})) == "refunded 2"

        billing.remove_prompt("invoice")
        assert (await next_note(notes))["method"] == "notifications/prompts/list_changed"
        # Its only prompt gone, the parent offers no prompts, as the child does not.
        assert "prompts" not in (await client.discover())["capabilities"]

        billing.add_resource("ledger://totals", lambda: "42")
        assert (await next_note(notes))["method"] == "notifications/resources/list_changed"
        read = await client.read_resource("billing+ledger://totals")
        assert read["contents"][0]["text"] == "42"

        billing.add_tool(lambda amount: f"new {amount}", name="pay", replace=True)
        assert (await next_note(notes))["method"] == "notifications/tools/list_changed"
        assert [t["name"] for t in await client.list_tools()] == ["billing_pay",
                                                                      "billing_refund"]  # fmt: skip
        assert text_of(await client.call_tool("billing_pay", {"amount": 1})) == "new 1"


async def test_a_completer_the_child_registers_later_is_reached(connect: Any) -> None:
    app, child = Server("app"), Server("child")

    @child.prompt
    def greet(name: str) -> str:
        return f"hi {name}"

    app.mount(child, namespace="child")

    @child.completion(prompt="greet", argument="name")
    def names(value: str) -> list[str]:
        return ["ann", "bob"]

    async with connect(app) as client:
        ref = {"type": "ref/prompt", "name": "child_greet"}
        assert await client.complete(ref, "name", "") == {"values": ["ann", "bob"]}


async def test_a_child_resource_update_reaches_the_parents_subscribers_under_the_parents_uri() -> (
    None
):
    app, billing = Server("app"), billing_server()
    app.mount(billing, namespace="billing")
    async with (
        asyncio.timeout(10),
        Client(app) as client,
        client.listen(resources=["billing+ledger://acme"]) as notes,
    ):
        assert notes.acknowledged == {"resourceSubscriptions": ["billing+ledger://acme"]}
        await billing.notify_resource_updated("ledger://initech")  # not subscribed to
        await billing.notify_resource_updated("ledger://acme")
        note = await next_note(notes)
        assert note["method"] == "notifications/resources/updated"
        assert note["params"]["uri"] == "billing+ledger://acme"


async def test_a_child_tool_added_later_whose_name_is_taken_is_left_out(
    connect: Any, caplog: pytest.LogCaptureFixture
) -> None:
    app, child = Server("app"), Server("child")

    @app.tool
    def child_ping() -> str:
        return "the parent's"

    app.mount(child, namespace="child")
    with caplog.at_level(logging.ERROR, logger="mcpserve.mounting"):
        child.add_tool(lambda: "the child's", name="ping")
    assert "tool 'child_ping' is left out: the parent already has one" in caplog.text
    async with connect(app) as client:
        assert text_of(await client.call_tool("child_ping")) == "the parent's"


# --------------------------------------------------------------------------- lifespans


def recording_lifespan(events: list[str], name: str) -> Any:
    @contextlib.asynccontextmanager
    async def lifespan(server: Server) -> AsyncIterator[dict[str, str]]:
        events.append(f"{name} start")
        try:
            yield {"owner": name}
        finally:
            events.append(f"{name} stop")

    return lifespan


async def test_the_childs_lifespan_runs_inside_the_parents_and_its_handlers_see_its_state(
    connect: Any,
) -> None:
    events: list[str] = []
    app = Server("app", lifespan=recording_lifespan(events, "app"))
    first = Server("first", lifespan=recording_lifespan(events, "first"))
    second = Server("second")  # no lifespan: its handlers see None, not the parent's state

    @app.tool
    def owner(ctx: Context) -> str:
        return str(ctx.lifespan_state)

    @first.tool
    async def owner_async(ctx: Context) -> str:
        return str(ctx.lifespan_state)

    @first.tool(blocking=True)
    def owner_blocking(ctx: Context) -> str:
        return str(ctx.lifespan_state)

    @first.resource("first://state")
    def state(ctx: Context) -> str:
        return str(ctx.lifespan_state)

    @second.tool
    def owner_inline(ctx: Context) -> str:
        return str(ctx.lifespan_state)

    app.mount(first, namespace="first")
    app.mount(second, namespace="second")
    async with connect(app) as client:
        assert events == ["app start", "first start"]
        assert text_of(await client.call_tool("owner")) == "{'owner': 'app'}"
        assert text_of(await client.call_tool("first_owner_async")) == "{'owner': 'first'}"
        assert text_of(await client.call_tool("first_owner_blocking")) == "{'owner': 'first'}"
        read = await client.read_resource("first+first://state")
        assert read["contents"][0]["text"] == "{'owner': 'first'}"
        assert text_of(await client.call_tool("second_owner_inline")) == "None"
        assert first.lifespan_state == {"owner": "first"}
        # And the parent's own handlers still see the parent's, after a child's ran.
        assert text_of(await client.call_tool("owner")) == "{'owner': 'app'}"
    assert events == ["app start", "first start", "first stop", "app stop"]


async def test_a_child_that_fails_to_start_stops_the_parents_lifespan() -> None:
    events: list[str] = []

    @contextlib.asynccontextmanager
    async def broken(server: Server) -> AsyncIterator[None]:
        raise RuntimeError("no database")
        yield

    app = Server("app", lifespan=recording_lifespan(events, "app"))
    app.mount(Server("db", lifespan=broken), namespace="db")
    with pytest.raises(RuntimeError, match="no database"):
        async with app.running():
            pass
    assert events == ["app start", "app stop"]
    assert app.lifespan_state is None


async def test_nested_mounts_compose_namespaces_lifespans_and_updates() -> None:
    events: list[str] = []
    app = Server("app", lifespan=recording_lifespan(events, "app"))
    region = Server("region", lifespan=recording_lifespan(events, "region"))
    shop = Server("shop", lifespan=recording_lifespan(events, "shop"))

    @shop.tool
    def owner(ctx: Context) -> str:
        return str(ctx.lifespan_state)

    @shop.resource("shop://{item}")
    def item(item: str) -> str:
        return item

    region.mount(shop, namespace="shop")
    app.mount(region, namespace="eu")
    async with asyncio.timeout(10), Client(app) as client:
        assert events == ["app start", "region start", "shop start"]
        assert [t["name"] for t in await client.list_tools()] == ["eu_shop_owner"]
        assert text_of(await client.call_tool("eu_shop_owner")) == "{'owner': 'shop'}"
        read = await client.read_resource("eu+shop+shop://pen")
        assert read["contents"][0]["text"] == "pen"
        async with client.listen(tools_list_changed=True, resources=["eu+shop+shop://pen"]) as n:
            shop.add_tool(lambda: "new", name="fresh")
            assert (await next_note(n))["method"] == "notifications/tools/list_changed"
            assert "eu_shop_fresh" in [t["name"] for t in await client.list_tools()]
            await shop.notify_resource_updated("shop://pen")
            assert (await next_note(n))["params"]["uri"] == "eu+shop+shop://pen"
    assert events[3:] == ["shop stop", "region stop", "app stop"]


async def test_the_composition_guide_runs_as_written() -> None:
    source = "\n".join(re.findall(r"```python\n(.*?)```", GUIDE.read_text(), flags=re.S))
    module = types.ModuleType("composition_guide")
    sys.modules["composition_guide"] = module
    try:
        exec(compile(source, "composition.md", "exec"), vars(module))
        async with asyncio.timeout(10):
            await module.try_it()
    finally:
        del sys.modules["composition_guide"]
