"""``Server.proxy``: another server's tools, resources, prompts and completions, served.

Here the upstream is an mcpserve ``Server`` in this process and the client talks to the
proxy in memory, every message checked against the schema (``connect``): the forwarding
itself, message by message. The real wires (stdio and HTTP upstreams, both eras on each
side) are ``test_proxy_wire.py``; the official SDKs, ``test_proxy_official.py``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest
from pydantic import BaseModel

from mcpserve import (
    Auth,
    Client,
    Context,
    InsufficientScope,
    MCPError,
    Server,
    ToolError,
)
from mcpserve.protocol import constants as c
from mcpserve.proxy import Proxy

Connect = Callable[..., Client]
ELICIT = {"elicitation": {"form": {}}}


class Name(BaseModel):
    name: str


def upstream_server() -> tuple[Server, list[dict[str, Any]]]:
    """An upstream, and the params of every tools/call it received."""
    server = Server("upstream", version="2.0.0", instructions="The upstream's own words.",
                    client_logging=True)  # fmt: skip
    received: list[dict[str, Any]] = []

    @server.middleware
    async def record(ctx: Context, call_next: Any) -> dict[str, Any]:
        if ctx.method == "tools/call":
            received.append(dict(ctx.request.params))
        return await call_next()  # type: ignore[no-any-return]

    @server.tool(annotations={"readOnlyHint": True})
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    @server.tool
    async def greet(ctx: Context) -> str:
        """Ask the user's name."""
        answer = await ctx.elicit("What is your name?", Name)
        return f"Hello, {answer.data.name}!" if answer.accepted else "No name"

    @server.tool
    async def steps(n: int, ctx: Context) -> str:
        for done in range(1, n + 1):
            await ctx.log("info", f"step {done}")
            await ctx.progress(done, total=n, message=f"step {done}")
        return "done"

    @server.tool
    def refuse(why: str) -> str:
        raise ToolError(f"refused: {why}")

    @server.tool
    def teapot() -> str:
        raise MCPError("I am a teapot", code=-31999, data={"short": True})

    @server.tool
    def scoped() -> str:
        raise InsufficientScope(frozenset({"admin"}), frozenset({"admin"}))

    @server.resource("file:///a.txt", mime_type="text/plain")
    def a_txt() -> str:
        return "hello from a.txt"

    @server.resource("notes://{note_id}")
    def note(note_id: str) -> str:
        return f"note {note_id}"

    @server.prompt
    def welcome(who: str) -> str:
        """Welcome someone."""
        return f"Welcome, {who}!"

    @server.completion(prompt="welcome", argument="who")
    def complete_who(value: str) -> list[str]:
        return [who for who in ("ada", "alan", "grace") if who.startswith(value)]

    @server.completion(resource="notes://{note_id}", argument="note_id")
    def complete_note(value: str) -> list[str]:
        return [n for n in ("n1", "n2") if n.startswith(value)]

    return server, received


def name_ada(params: dict[str, Any]) -> dict[str, Any]:
    return {"action": "accept", "content": {"name": "Ada"}}


def text(result: dict[str, Any]) -> str:
    return result["content"][0]["text"]  # type: ignore[no-any-return]


# ----------------------------------------------------------------------------- what it offers


async def test_the_proxy_lists_exactly_what_the_upstream_lists(connect: Connect) -> None:
    upstream, _ = upstream_server()
    async with connect(upstream) as direct:
        tools, resources = await direct.list_tools(), await direct.list_resources()
        templates, prompts = await direct.list_resource_templates(), await direct.list_prompts()
    async with connect(Server.proxy(upstream)) as client:
        assert await client.list_tools() == tools
        assert await client.list_resources() == resources
        assert await client.list_resource_templates() == templates
        assert await client.list_prompts() == prompts
        discovered = await client.discover()
    assert set(discovered["capabilities"]) == {"tools", "resources", "prompts", "completions",
                                               "logging"}  # fmt: skip
    assert discovered["instructions"] == "The upstream's own words."
    assert discovered["_meta"][c.META_SERVER_INFO]["name"] == "proxy"


async def test_calls_reads_prompts_and_completions_go_upstream(connect: Connect) -> None:
    upstream, _ = upstream_server()
    async with connect(Server.proxy(upstream)) as client:
        added = await client.call_tool("add", {"a": 2, "b": 3})
        assert (text(added), added["structuredContent"]) == ("5", 5)
        assert added["_meta"][c.META_SERVER_INFO]["name"] == "proxy"  # never the upstream's
        read = await client.read_resource("file:///a.txt")
        assert read["contents"] == [{"uri": "file:///a.txt", "mimeType": "text/plain",
                                     "text": "hello from a.txt"}]  # fmt: skip
        templated = await client.read_resource("notes://n7")
        assert templated["contents"][0]["text"] == "note n7"
        prompt = await client.get_prompt("welcome", {"who": "Ada"})
        assert prompt["messages"][0]["content"]["text"] == "Welcome, Ada!"
        ref = {"type": "ref/prompt", "name": "welcome"}
        assert (await client.complete(ref, "who", "a"))["values"] == ["ada", "alan"]
        ref = {"type": "ref/resource", "uri": "notes://{note_id}"}
        assert (await client.complete(ref, "note_id", "n"))["values"] == ["n1", "n2"]


async def test_the_proxys_own_tools_stand_beside_the_upstreams_and_win_a_clash(
    connect: Connect,
) -> None:
    upstream, _ = upstream_server()
    proxy = Server.proxy(upstream)

    @proxy.tool
    def add(a: int, b: int) -> str:
        return "the proxy's own add"

    @proxy.tool
    def local() -> str:
        return "local"

    async with connect(proxy) as client:
        names = [tool["name"] for tool in await client.list_tools()]
        assert text(await client.call_tool("add", {"a": 1, "b": 1})) == "the proxy's own add"
        assert text(await client.call_tool("local")) == "local"
    assert names.count("add") == 1
    assert {"greet", "local"} <= set(names)


# ----------------------------------------------------------------------------- errors


async def test_upstream_answers_and_errors_reach_the_client_as_they_were(connect: Connect) -> None:
    upstream, _ = upstream_server()
    async with connect(Server.proxy(upstream)) as client:
        refused = await client.call_tool("refuse", {"why": "no"})
        assert refused["isError"] is True
        assert text(refused) == "refused: no"
        invalid = await client.call_tool("add", {"a": "x", "b": 1})
        assert invalid["isError"] is True
        with pytest.raises(MCPError) as teapot:
            await client.call_tool("teapot")
        assert (teapot.value.code, teapot.value.message) == (-31999, "I am a teapot")
        assert teapot.value.data == {"short": True}
        with pytest.raises(MCPError) as missing:
            await client.read_resource("file:///nothing.txt")
        assert missing.value.code == -32602
        with pytest.raises(MCPError) as unknown:
            await client.call_tool("no_such_tool")
        assert unknown.value.code == -32602


async def test_an_upstream_refusing_the_proxys_scopes_is_not_a_step_up_for_the_client(
    connect: Connect,
) -> None:
    upstream, _ = upstream_server()
    async with connect(Server.proxy(upstream)) as client:
        with pytest.raises(MCPError) as caught:
            await client.call_tool("scoped")
    assert caught.value.code == c.INTERNAL_ERROR  # not -32010: the client's token is fine
    assert "upstream server" in caught.value.message
    assert "refused the proxy's tools/call" in caught.value.message


# ----------------------------------------------------------------------------- rounds


async def test_an_upstream_question_passes_through_and_the_retry_resumes_it_upstream(
    connect: Connect,
) -> None:
    upstream, received = upstream_server()
    async with connect(Server.proxy(upstream), capabilities=ELICIT) as client:
        asked = await client.call_tool("greet")
        assert asked["resultType"] == "input_required"
        (key, question), = asked["inputRequests"].items()  # fmt: skip
        assert question["method"] == "elicitation/create"
        assert question["params"]["message"] == "What is your name?"
        answer = {key: {"action": "accept", "content": {"name": "Ada"}}}
        retry = {"name": "greet", "inputResponses": answer, "requestState": asked["requestState"]}
        done = await client.request("tools/call", retry)
    assert text(done) == "Hello, Ada!"
    first, retry = received
    assert "requestState" not in first
    assert retry["inputResponses"] == answer
    # What the upstream got back is its own state, not the one the client saw.
    assert isinstance(retry["requestState"], str)
    assert retry["requestState"] != asked["requestState"]


async def test_a_client_with_an_input_handler_is_asked_and_answered_through_the_proxy(
    connect: Connect,
) -> None:
    upstream, _ = upstream_server()
    async with connect(Server.proxy(upstream), on_elicit=name_ada) as client:
        assert text(await client.call_tool("greet")) == "Hello, Ada!"


async def test_a_state_the_proxy_did_not_seal_is_refused(connect: Connect) -> None:
    upstream, _ = upstream_server()
    async with connect(upstream, capabilities=ELICIT) as direct:
        upstreams_own = (await direct.call_tool("greet"))["requestState"]
    async with connect(Server.proxy(upstream), capabilities=ELICIT) as client:
        for state in (upstreams_own, "v1.abc.garbage", 42):
            with pytest.raises(MCPError) as caught:
                await client.request("tools/call", {"name": "greet", "requestState": state,
                                                    "inputResponses": {}})  # fmt: skip
            assert (caught.value.code, caught.value.message) == (-32602, "Invalid requestState")


async def test_the_proxys_state_is_bound_to_the_caller_and_the_request() -> None:
    upstream, _ = upstream_server()
    proxy = Server.proxy(upstream)
    meta = {c.META_PROTOCOL_VERSION: c.LATEST_VERSION, c.META_CLIENT_CAPABILITIES: ELICIT}

    def call(name: str, **params: Any) -> dict[str, Any]:
        return {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                "params": {"name": name, "_meta": meta, **params}}  # fmt: skip

    alice, bob = Auth("alice", checked=True), Auth("bob", checked=True)
    async with proxy.running():
        asked = await proxy.handle(call("greet"), auth=alice)
        assert asked is not None
        state = asked["result"]["requestState"]
        answers = {"inputResponses": {}, "requestState": state}
        as_bob = await proxy.handle(call("greet", **answers), auth=bob)
        elsewhere = await proxy.handle(call("add", arguments={"a": 1, "b": 2}, **answers),
                                       auth=alice)  # fmt: skip
        as_alice = await proxy.handle(call("greet", **answers), auth=alice)
    assert as_bob is not None
    assert as_bob["error"]["code"] == -32602
    assert elsewhere is not None
    assert elsewhere["error"]["code"] == -32602
    assert as_alice is not None
    assert as_alice["result"]["resultType"] == "input_required"


# ----------------------------------------------------------------------------- talking back


async def test_progress_and_logs_reach_the_client_that_asked() -> None:
    upstream, _ = upstream_server()
    progress: list[tuple[Any, ...]] = []
    logs: list[tuple[Any, ...]] = []
    async with Client(Server.proxy(upstream), log_level="info",
                      on_log=lambda *a: logs.append(a)) as client:  # fmt: skip
        result = await client.call_tool(
            "steps", {"n": 2}, on_progress=lambda *a: progress.append(a)
        )
    assert text(result) == "done"
    assert progress == [(1, 2, "step 1"), (2, 2, "step 2")]
    assert logs == [("info", "step 1", None), ("info", "step 2", None)]


async def test_logs_below_the_clients_level_stay_upstream() -> None:
    upstream, _ = upstream_server()
    logs: list[tuple[Any, ...]] = []
    async with Client(Server.proxy(upstream), log_level="error",
                      on_log=lambda *a: logs.append(a)) as client:  # fmt: skip
        assert text(await client.call_tool("steps", {"n": 2})) == "done"
    assert logs == []


async def test_cancelling_a_call_cancels_it_upstream(connect: Connect) -> None:
    upstream, _ = upstream_server()
    started, cancelled = asyncio.Event(), asyncio.Event()

    @upstream.tool
    async def wait() -> str:
        started.set()
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            cancelled.set()
            raise
        return "waited"

    async with connect(Server.proxy(upstream)) as client:
        call = asyncio.create_task(client.call_tool("wait"))
        await asyncio.wait_for(started.wait(), 10)
        call.cancel()
        await asyncio.wait_for(cancelled.wait(), 10)
        assert text(await client.call_tool("add", {"a": 1, "b": 1})) == "2"


# ----------------------------------------------------------------------------- changes


async def test_an_upstream_list_change_changes_the_proxys_lists_and_tells_its_listeners() -> None:
    upstream, _ = upstream_server()
    # Listening needs the client's notification routes: a plain Client, not ``connect``.
    async with (
        Client(Server.proxy(upstream)) as client,
        client.listen(tools_list_changed=True) as notes,
    ):
        upstream.add_tool(lambda: "new", name="sprout")
        note = await asyncio.wait_for(notes.__anext__(), 10)
        assert note["method"] == "notifications/tools/list_changed"
        assert text(await client.call_tool("sprout")) == "new"
        upstream.remove_tool("refuse")
        await asyncio.wait_for(notes.__anext__(), 10)
        names = [tool["name"] for tool in await client.list_tools()]
    assert "sprout" in names
    assert "refuse" not in names


async def test_an_upstream_resource_update_reaches_the_proxys_subscribers() -> None:
    upstream, _ = upstream_server()
    async with (
        Client(Server.proxy(upstream)) as client,
        client.listen(resources=["file:///a.txt"]) as notes,
    ):
        assert notes.acknowledged == {"resourceSubscriptions": ["file:///a.txt"]}
        await upstream.notify_resource_updated("file:///a.txt")
        note = await asyncio.wait_for(notes.__anext__(), 10)
    assert note["method"] == "notifications/resources/updated"
    assert note["params"]["uri"] == "file:///a.txt"


# ----------------------------------------------------------------------------- the connection


async def test_one_upstream_connection_carries_every_call(connect: Connect) -> None:
    upstream, _ = upstream_server()
    proxy = Server.proxy(upstream)
    async with connect(proxy) as client:
        await asyncio.gather(*(client.call_tool("add", {"a": i, "b": 1}) for i in range(20)))
        for i in range(5):
            await client.call_tool("add", {"a": i, "b": i})
        state = proxy.lifespan_state
    assert isinstance(state, Proxy)
    assert state.upstream.connects == 1


def test_a_proxy_takes_no_lifespan_of_its_own() -> None:
    upstream, _ = upstream_server()
    with pytest.raises(TypeError, match="lifespan"):
        Server.proxy(upstream, lifespan=lambda server: None)


def test_an_empty_upstream_command_is_refused() -> None:
    with pytest.raises(ValueError, match="cannot be empty"):
        Server.proxy("   ")
