"""Tags, versions and visibility (``server/entries/catalogue.py`` and the registry's use of
it), in process: what a registration accepts, what each rule hides, and what it says when a
user gets it wrong."""

from __future__ import annotations

import asyncio
import threading
from typing import Any, Literal

import pytest

from mcpserve import Server, blocking
from mcpserve.protocol import constants as c
from mcpserve.protocol.core import Auth

META = {c.META_PROTOCOL_VERSION: "2026-07-28", c.META_CLIENT_CAPABILITIES: {}}


def message(method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": 1,
        "method": method,
        "params": {**(params or {}), "_meta": META},
    }


async def tool_names(server: Server) -> list[str]:
    response = await server.handle(message("tools/list"))
    assert response is not None
    return [tool["name"] for tool in response["result"]["tools"]]


async def call(server: Server, name: str, **arguments: Any) -> dict[str, Any]:
    response = await server.handle(message("tools/call", {"name": name, "arguments": arguments}))
    assert response is not None
    return response


def tagged(server: Server, name: str, *tags: str) -> None:
    server.add_tool(lambda: name, name=name, tags=set(tags))


# -- tags --------------------------------------------------------------------------------


def test_tags_are_published_sorted_beside_the_entrys_own_meta() -> None:
    server = Server("s")
    tool = server.add_tool(lambda: 1, name="t", tags={"b", "a"}, meta={"x": 1})
    assert tool.wire["_meta"] == {"x": 1, "io.mcpserve/tags": ["a", "b"]}
    prompt = server.add_prompt(lambda: "hi", name="p", tags="solo")
    assert prompt.wire["_meta"] == {"io.mcpserve/tags": ["solo"]}
    resource = server.add_resource("notes://{id}", lambda id: id, tags={"r"})
    assert resource.wire["_meta"] == {"io.mcpserve/tags": ["r"]}
    app = server.app("ui://board", html="<p>hi</p>", tags={"ui"})
    assert app.wire["_meta"]["io.mcpserve/tags"] == ["ui"]


def test_a_tag_that_is_not_a_string_is_one_line_naming_the_registration() -> None:
    server = Server("s")
    with pytest.raises(TypeError, match=r"^t: tags must be non-empty strings"):
        server.add_tool(lambda: 1, name="t", tags={""})
    with pytest.raises(TypeError, match=r"^include_tags: tags must be non-empty strings"):
        Server("s", include_tags=[1])  # type: ignore[list-item]


async def test_include_tags_hides_untagged_entries_and_exclude_wins() -> None:
    server = Server("s", include_tags={"billing"}, exclude_tags={"beta"})
    tagged(server, "invoice", "billing")
    tagged(server, "refund", "billing", "beta")
    tagged(server, "plain")
    assert await tool_names(server) == ["invoice"]
    assert (await call(server, "plain"))["error"]["message"] == "Unknown tool: plain"


async def test_enable_by_tags_shows_an_included_tag_and_disable_hides_it() -> None:
    server = Server("s", include_tags={"billing"})
    tagged(server, "invoice", "billing")
    tagged(server, "search", "read")
    heard: list[str] = []
    server.registry.on_change(heard.append)
    server.enable(tags={"read"})
    assert await tool_names(server) == ["invoice", "search"]
    server.disable("tools", tags={"billing"})
    assert await tool_names(server) == ["search"]
    server.disable("tools", tags={"billing"})  # no change: nothing announced
    assert heard == ["tools", "prompts", "resources", "tools"]


def test_enable_without_a_kind_finds_the_list_that_has_the_key() -> None:
    server = Server("s")
    tagged(server, "t")
    server.disable(key="t")
    assert "t" in server.registry.disabled["tools"]
    server.enable(key="t")
    assert not server.registry.disabled["tools"]
    with pytest.raises(KeyError, match="Nothing named 'ghost' is registered"):
        server.disable(key="ghost")
    with pytest.raises(TypeError, match=r"^disable\(\) takes a key or tags="):
        server.disable("tools")


# -- versions ------------------------------------------------------------------------------


async def test_the_highest_pep_440_version_is_served_until_another_is_pinned() -> None:
    server = Server("s")
    for version in ("1.10", "1.9", "2.0rc1"):
        server.add_tool(lambda v=version: v, name="report", version=version)
    assert await tool_names(server) == ["report"]
    assert (await call(server, "report"))["result"]["content"][0]["text"] == "2.0rc1"
    server.pin("report", "1.9")
    assert (await call(server, "report"))["result"]["content"][0]["text"] == "1.9"
    server.pin("report", None)
    assert (await call(server, "report"))["result"]["content"][0]["text"] == "2.0rc1"
    server.remove_tool("report")
    assert "report" not in server.registry.tools
    assert not server.registry.versions


def test_version_mistakes_are_one_line_each() -> None:
    server = Server("s")
    with pytest.raises(ValueError, match=r"^t: version='latest' is not a PEP 440 version"):
        server.add_tool(lambda: 1, name="t", version="latest")
    server.add_tool(lambda: 1, name="t", version="1")
    with pytest.raises(ValueError, match=r"^Version 1 of the tool 't' is already registered"):
        server.add_tool(lambda: 2, name="t", version="1")
    server.add_tool(lambda: 2, name="t", version="2")
    with pytest.raises(KeyError, match=r"'t' has no version '3' \(registered: 1, 2\)"):
        server.pin("t", "3")
    with pytest.raises(KeyError, match="'u' is not registered in several versions"):
        server.pin("u", "1")


def test_an_unversioned_name_still_refuses_a_second_registration() -> None:
    server = Server("s")
    server.add_tool(lambda: 1, name="t")
    with pytest.raises(ValueError, match="already registered"):
        server.add_tool(lambda: 2, name="t", version="2")


# -- visibility ----------------------------------------------------------------------------


def _only_public(ctx: Any, component: Any) -> bool:
    return "secret" not in component.tags or ctx.principal == "boss"


@pytest.mark.parametrize("shape", ["plain", "async", "blocking", "blocking=True"])
async def test_a_visibility_rule_of_each_shape_decides_lists_and_calls(shape: str) -> None:
    server = Server("s")
    tagged(server, "open")
    tagged(server, "hidden", "secret")
    seen: list[tuple[str, str]] = []

    def rule(ctx: Any, component: Any) -> bool:
        seen.append((component.kind, component.name))
        return _only_public(ctx, component)

    async def async_rule(ctx: Any, component: Any) -> bool:
        await asyncio.sleep(0)
        return rule(ctx, component)

    threads: list[str] = []

    def in_a_thread(ctx: Any, component: Any) -> bool:
        threads.append(threading.current_thread().name)
        return rule(ctx, component)

    if shape == "blocking=True":
        assert server.visibility(blocking=True)(in_a_thread) is in_a_thread
    else:
        chosen = {"plain": rule, "async": async_rule, "blocking": blocking(in_a_thread)}[shape]
        assert server.visibility(chosen) is chosen
    listed = await server.handle(message("tools/list"))
    assert listed is not None
    assert [tool["name"] for tool in listed["result"]["tools"]] == ["open"]
    assert listed["result"]["cacheScope"] == "private"  # a list per caller
    assert (await call(server, "hidden"))["error"] == {
        "code": -32602,
        "message": "Unknown tool: hidden",
    }
    assert ("tool", "hidden") in seen
    main = threading.main_thread().name
    assert (bool(threads) and main not in threads) == shape.startswith("blocking")


async def test_the_rule_reads_the_callers_identity_and_the_components_fields() -> None:
    from mcpserve.protocol.core import Auth

    server = Server("s")
    tagged(server, "hidden", "secret")
    server.visibility(_only_public)
    boss = Auth(principal="boss", checked=True)
    response = await server.handle(message("tools/list"), auth=boss)
    assert response is not None
    assert [tool["name"] for tool in response["result"]["tools"]] == ["hidden"]


def test_a_rule_must_take_ctx_and_component() -> None:
    server = Server("s")
    with pytest.raises(TypeError, match=r"visibility rule lonely\(\) must take \(ctx, component\)"):

        @server.visibility
        def lonely(ctx: Any) -> bool:
            return True


async def test_a_hidden_resource_reads_as_not_found_and_a_hidden_prompt_as_unknown() -> None:
    server = Server("s")
    server.add_resource("notes://a", lambda: "a", tags={"secret"})
    server.add_prompt(lambda: "hi", name="p", tags={"secret"})
    server.visibility(_only_public)
    read = await server.handle(message("resources/read", {"uri": "notes://a"}))
    got = await server.handle(message("prompts/get", {"name": "p"}))
    assert read is not None
    assert got is not None
    assert read["error"]["message"] == "Resource not found"
    assert got["error"] == {"code": -32602, "message": "Unknown prompt: p"}
    listed = await server.handle(message("resources/list"))
    assert listed is not None
    assert listed["result"]["resources"] == []


# -- skills --------------------------------------------------------------------------------


async def test_a_tagged_skill_is_hidden_with_its_tag_from_skills_and_resources(
    tmp_path: Any,
) -> None:
    from mcpserve import Skill

    server = Server("s")
    server.add_skill(Skill("beta-guide", "How to try the beta", "Try it.", tags={"beta"}))
    folder = tmp_path / "skills" / "house-rules"
    folder.mkdir(parents=True)
    (folder / "SKILL.md").write_text(
        "---\nname: house-rules\ndescription: Our rules\n---\nBe kind.\n"
    )
    server.add_skills(tmp_path / "skills", tags={"beta"})
    uris = ["skill://beta-guide/SKILL.md", "skill://house-rules/SKILL.md"]
    for uri in uris:
        assert server.registry.resources[uri].wire["_meta"] == {"io.mcpserve/tags": ["beta"]}
    listed = await server.handle(message("skills/list"))
    assert listed is not None
    assert [skill["uri"] for skill in listed["result"]["skills"]] == uris

    server.disable(tags={"beta"})
    listed = await server.handle(message("skills/list"))
    got = await server.handle(message("skills/get", {"uri": uris[0]}))
    read = await server.handle(message("resources/read", {"uri": uris[1]}))
    assert listed is not None
    assert got is not None
    assert read is not None
    assert listed["result"]["skills"] == []
    assert got["error"]["message"] == f"No skill is served at {uris[0]}"
    assert read["error"]["message"] == "Resource not found"


async def test_completions_of_a_prompt_the_rule_hides_are_unknown() -> None:
    server = Server("s")

    @server.prompt(tags={"secret"})
    def plan(size: Literal["small", "large"]) -> str:
        return size

    server.visibility(_only_public)
    params = {
        "ref": {"type": "ref/prompt", "name": "plan"},
        "argument": {"name": "size", "value": "s"},
    }
    hidden = await server.handle(message("completion/complete", params))
    assert hidden is not None
    assert hidden["error"] == {"code": -32602, "message": "Unknown prompt: plan"}
    boss = await server.handle(message("completion/complete", params), auth=Auth("boss"))
    assert boss is not None
    assert boss["result"]["completion"]["values"] == ["small"]


async def test_a_tool_hidden_from_a_caller_is_unknown_to_it_whatever_its_scopes() -> None:
    server = Server("catalogue")

    @server.tool(scopes=["admin"], tags={"admin"})
    def reset() -> str:
        return "reset"

    @server.tool(scopes=["reports"])
    def report() -> str:
        return "report"

    @server.visibility
    def staff_only(ctx: Any, component: Any) -> bool:
        return "admin" not in component.tags or ctx.principal == "staff"

    async def called(principal: str, name: str) -> dict[str, Any]:
        request = message("tools/call", {"name": name, "arguments": {}})
        response = await server.handle(request, auth=Auth(principal, frozenset()))
        assert response is not None
        return response

    # Hidden and lacking its scope: unknown, as if it did not exist (never the scope error,
    # which would tell the caller it does).
    hidden = await called("guest", "reset")
    assert hidden["error"]["code"] == -32602
    assert hidden["error"]["message"] == "Unknown tool: reset"
    # Shown but lacking its scope: the scope error, as without a rule.
    for principal, name in (("staff", "reset"), ("guest", "report")):
        refused = await called(principal, name)
        assert refused["error"]["code"] == c.INSUFFICIENT_SCOPE, refused
        assert refused["error"]["data"]["requiredScopes"] == [
            (name == "reset" and "admin") or "reports"
        ]


# -- subscriptions -------------------------------------------------------------------------


def _notes_with_a_secret() -> Server:
    server = Server("s")
    server.add_resource("notes://open", lambda: "open")
    server.add_resource("notes://secret", lambda: "secret", tags={"secret"})
    server.add_resource("vault://box/key", lambda: "key", tags={"secret"})
    server.visibility(_only_public)
    return server


async def test_a_listen_leaves_out_a_resource_the_rule_hides_as_an_unknown_uri() -> None:
    from listens import Listen

    server = _notes_with_a_secret()
    requested = {"resourceSubscriptions": ["notes://open", "notes://secret", "vault://box"]}
    async with server.running():
        # vault://box is the parent of a hidden resource only: no update could reach the
        # caller through it, so it is left out too.
        guest = Listen(server, "guest", requested)
        assert await guest.ack() == {"resourceSubscriptions": ["notes://open"]}
    await guest.result()


async def test_a_handshake_era_subscribe_to_a_hidden_resource_is_answered_as_an_unknown_uri() -> (
    None
):
    from legacy_schema import initialize_message
    from mcpserve.protocol.core import answered

    server = _notes_with_a_secret()
    assert server.handshake is not None
    session, _ = server.handshake.initialize(initialize_message(0, "2025-11-25", {}))
    assert session is not None
    dispatcher = server.pipeline.dispatcher()
    answers = []
    for number, uri in enumerate(["notes://secret", "notes://nowhere", "notes://open"]):
        subscribe = {
            "jsonrpc": "2.0",
            "id": number,
            "method": "resources/subscribe",
            "params": {"uri": uri},
        }
        prepared = dispatcher.prepare(subscribe, session=session)
        answers.append((await answered(dispatcher.execute(prepared)))["result"])
    assert answers == [{}, {}, {}]
    # Nothing kept of the hidden one: none of its updates reach the session.
    assert session.resource_subscriptions == {"notes://nowhere", "notes://open"}


def _awaited_rule_server(where: str) -> Server:
    """Notes under one parent, one hidden by a rule that is awaited: ``async def``, or a
    mounted server's (the joined rule of a parent is always awaited)."""

    async def only_public(ctx: Any, component: Any) -> bool:
        await asyncio.sleep(0)
        return "secret" not in component.tags

    notes = Server("notes")
    notes.add_resource("notes://open", lambda: "open")
    notes.add_resource("notes://secret", lambda: "secret", tags={"secret"})
    notes.visibility(only_public)
    if where == "own":
        server = notes
    else:
        server = Server("desk")
        server.mount(notes)

    @server.tool
    async def touch(uri: str) -> str:
        await server.notify_resource_updated(uri)
        return "touched"

    return server


@pytest.mark.parametrize("where", ["own", "mounted"])
async def test_a_handshake_era_parent_subscription_under_an_awaited_rule_hears_only_shown_updates(
    where: str,
) -> None:
    from four_wires import wire

    server = _awaited_rule_server(where)
    async with wire("stdio-handshake", server) as connection:
        subscribe = {"jsonrpc": "2.0", "id": "s", "method": "resources/subscribe",
                     "params": {"uri": "notes://"}}  # fmt: skip
        connection.send(subscribe)
        for number, uri in enumerate(("notes://secret", "notes://open")):
            params = {"name": "touch", "arguments": {"uri": uri}}
            connection.send(
                {"jsonrpc": "2.0", "id": number, "method": "tools/call", "params": params}
            )
        answered: set[Any] = set()
        heard: list[str] = []
        # Every message until both calls are answered and one update is heard: an update of
        # the hidden resource would come first, as it was announced first.
        while len(answered) < 3 or not heard:
            message = await asyncio.wait_for(connection.lines.get(), 5)
            if message.get("method") == "notifications/resources/updated":
                heard.append(message["params"]["uri"])
            elif "id" in message:
                answered.add(message["id"])
        assert heard == ["notes://open"]
