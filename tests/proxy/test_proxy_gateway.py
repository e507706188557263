"""``Server.gateway``: several upstreams behind one server, each under its namespace.

The upstreams are mcpserve servers in this process (the wires are the proxy's, tested in
``test_proxy_wire.py``; the command line, in ``test_proxy_cli.py``); the gateway is a
plain server with one proxy mounted per upstream.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from pydantic import BaseModel

from mcpserve import Client, Context, Server
from mcpserve.proxy import Upstream, relay_subscriptions, upstream_from_config

TIMEOUT = 10


class Name(BaseModel):
    name: str


def member(label: str) -> Server:
    server = Server(label)

    @server.tool
    def whoami() -> str:
        return label

    @server.tool
    async def greet(ctx: Context) -> str:
        answer = await ctx.elicit("Name?", Name)
        return f"{label} greets {answer.data.name}"

    @server.resource("file:///readme.txt")
    def readme() -> str:
        return f"{label}'s readme"

    @server.resource("notes://{note_id}")
    def note(note_id: str) -> str:
        return f"{label} note {note_id}"

    @server.prompt
    def welcome(who: str) -> str:
        return f"{label} welcomes {who}"

    @server.completion(resource="notes://{note_id}", argument="note_id")
    def complete_note(value: str) -> list[str]:
        return [f"{label}-{value}1", f"{label}-{value}2"]

    return server


def name_ada(params: dict[str, Any]) -> dict[str, Any]:
    return {"action": "accept", "content": {"name": "Ada"}}


def text(result: dict[str, Any]) -> str:
    return result["content"][0]["text"]  # type: ignore[no-any-return]


async def test_each_upstream_is_served_under_its_namespace() -> None:
    gateway = Server.gateway({"billing": member("billing"), "files": member("files")})
    async with Client(gateway, on_elicit=name_ada) as client:
        names = [tool["name"] for tool in await client.list_tools()]
        assert sorted(names) == ["billing_greet", "billing_whoami", "files_greet", "files_whoami"]
        assert text(await client.call_tool("files_whoami")) == "files"
        assert text(await client.call_tool("billing_greet")) == "billing greets Ada"
        uris = [resource["uri"] for resource in await client.list_resources()]
        assert uris == ["billing+file:///readme.txt", "files+file:///readme.txt"]
        read = await client.read_resource("files+notes://n9")
        assert read["contents"] == [{"uri": "files+notes://n9", "text": "files note n9"}]
        prompt = await client.get_prompt("billing_welcome", {"who": "Bo"})
        assert prompt["messages"][0]["content"]["text"] == "billing welcomes Bo"
        ref = {"type": "ref/resource", "uri": "files+notes://{note_id}"}
        assert (await client.complete(ref, "note_id", "x"))["values"] == ["files-x1", "files-x2"]


async def test_a_members_question_round_trips_through_the_gateway() -> None:
    gateway = Server.gateway({"billing": member("billing")})
    async with Client(gateway, capabilities={"elicitation": {}}) as client:
        asked = await client.call_tool("billing_greet")
        (key,) = asked["inputRequests"]
        done = await client.request("tools/call", {
            "name": "billing_greet", "requestState": asked["requestState"],
            "inputResponses": {key: name_ada({})}})  # fmt: skip
    assert text(done) == "billing greets Ada"


async def test_a_members_changes_reach_the_gateways_listeners() -> None:
    files = member("files")
    gateway = Server.gateway({"billing": member("billing"), "files": files})
    readme = "files+file:///readme.txt"
    async with (
        Client(gateway) as client,
        client.listen(tools_list_changed=True, resources=[readme]) as notes,
    ):
        assert notes.acknowledged == {"toolsListChanged": True, "resourceSubscriptions": [readme]}
        files.add_tool(lambda: "new", name="sprout")
        note = await asyncio.wait_for(notes.__anext__(), TIMEOUT)
        assert note["method"] == "notifications/tools/list_changed"
        assert text(await client.call_tool("files_sprout")) == "new"
        await files.notify_resource_updated("file:///readme.txt")
        note = await asyncio.wait_for(notes.__anext__(), TIMEOUT)
    assert note["params"]["uri"] == "files+file:///readme.txt"


async def test_a_gateway_built_by_hand_relays_subscriptions_once_told_to() -> None:
    upstream = member("docs")
    parent = Server("hand-made")
    parent.mount(Server.proxy(upstream), namespace="docs")
    relay_subscriptions(parent)
    async with (
        Client(parent) as client,
        client.listen(resources=["docs+file:///readme.txt"]) as notes,
    ):
        await upstream.notify_resource_updated("file:///readme.txt")
        note = await asyncio.wait_for(notes.__anext__(), TIMEOUT)
    assert note["params"]["uri"] == "docs+file:///readme.txt"


def test_a_gateway_needs_upstreams_with_valid_names() -> None:
    with pytest.raises(ValueError, match="at least one upstream"):
        Server.gateway({})
    with pytest.raises(ValueError, match="Namespace"):
        Server.gateway({"not valid": member("x")})


def test_config_entries_become_upstreams() -> None:
    remote = upstream_from_config("r", {"url": "https://example.com/mcp",
                                        "headers": {"X-Api-Key": "k"}})  # fmt: skip
    entry = {"command": "python", "args": ["my server.py"], "env": {"A": "1"},
             "protocolVersion": "2025-11-25"}  # fmt: skip
    local = upstream_from_config("l", entry)
    assert isinstance(remote, Upstream)
    assert (remote.target, remote.headers) == ("https://example.com/mcp", {"X-Api-Key": "k"})
    assert (local.target, local.env, local.protocol_version) == (
        ["python", "my server.py"], {"A": "1"}, "2025-11-25")  # fmt: skip
    with pytest.raises(ValueError, match="Upstream 'x': expected an object, not list"):
        upstream_from_config("x", ["python"])
