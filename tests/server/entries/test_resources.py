"""Resources and resource templates."""

import base64
import dataclasses
import json
import logging
from typing import Any

import pytest

from mcpserve import CachePolicy, Contents, Context, MCPError, Resource, ResourceTemplate, Server


@dataclasses.dataclass
class Stats:
    rows: int
    tables: list[str]


def contents_of(result: dict[str, Any]) -> list[dict[str, Any]]:
    return result["contents"]  # type: ignore[no-any-return]


# --------------------------------------------------------------------------- static resources


async def test_text_resource_is_read_as_text_contents(connect: Any) -> None:
    server = Server("t")

    @server.resource("mem://greeting")
    def greeting() -> str:
        return "hello"

    async with connect(server) as client:
        result = await client.read_resource("mem://greeting")
    assert contents_of(result) == [{"uri": "mem://greeting", "text": "hello"}]


async def test_bytes_resource_is_read_as_a_base64_blob(connect: Any) -> None:
    server = Server("t")

    @server.resource("mem://logo", mime_type="image/png")
    def logo() -> bytes:
        return b"\x89PNG\x00\xff"

    async with connect(server) as client:
        result = await client.read_resource("mem://logo")
    assert contents_of(result) == [
        {
            "uri": "mem://logo",
            "blob": base64.b64encode(b"\x89PNG\x00\xff").decode(),
            "mimeType": "image/png",
        }
    ]


async def test_json_able_resource_is_json_text_with_application_json(connect: Any) -> None:
    server = Server("t")

    @server.resource("mem://stats")
    def stats() -> Stats:
        return Stats(rows=3, tables=["a", "b"])

    async with connect(server) as client:
        [entry] = contents_of(await client.read_resource("mem://stats"))
    assert entry["mimeType"] == "application/json"
    assert json.loads(entry["text"]) == {"rows": 3, "tables": ["a", "b"]}


async def test_declared_mime_type_wins_over_the_json_default(connect: Any) -> None:
    server = Server("t")

    @server.resource("mem://config", mime_type="application/vnd.example+json")
    def config() -> dict[str, Any]:
        return {"debug": False}

    async with connect(server) as client:
        [entry] = contents_of(await client.read_resource("mem://config"))
    assert entry["mimeType"] == "application/vnd.example+json"
    assert json.loads(entry["text"]) == {"debug": False}


async def test_text_resource_carries_its_declared_mime_type(connect: Any) -> None:
    server = Server("t")

    @server.resource("mem://readme", mime_type="text/markdown")
    def readme() -> str:
        return "# Title"

    async with connect(server) as client:
        [entry] = contents_of(await client.read_resource("mem://readme"))
    assert entry == {"uri": "mem://readme", "text": "# Title", "mimeType": "text/markdown"}


async def test_contents_object_sets_its_own_mime_type_and_meta(connect: Any) -> None:
    server = Server("t")

    @server.resource("mem://page", mime_type="text/plain")
    def page() -> Contents:
        return Contents(text="<p>hi</p>", mime_type="text/html", meta={"com.example/v": 2})

    async with connect(server) as client:
        [entry] = contents_of(await client.read_resource("mem://page"))
    assert entry == {
        "uri": "mem://page",
        "mimeType": "text/html",
        "text": "<p>hi</p>",
        "_meta": {"com.example/v": 2},
    }


async def test_list_of_contents_returns_several_entries_with_their_own_uris(
    connect: Any,
) -> None:
    server = Server("t")

    @server.resource("file:///project/", mime_type="text/plain")
    def listing() -> list[Contents]:
        return [
            Contents(text="print(1)", uri="file:///project/main.py", mime_type="text/x-python"),
            Contents(blob=b"\x00\x01", uri="file:///project/data.bin"),
            Contents(text="notes"),
        ]

    async with connect(server) as client:
        result = await client.read_resource("file:///project/")
    assert contents_of(result) == [
        {"uri": "file:///project/main.py", "mimeType": "text/x-python", "text": "print(1)"},
        {"uri": "file:///project/data.bin", "mimeType": "text/plain", "blob": "AAE="},
        {"uri": "file:///project/", "mimeType": "text/plain", "text": "notes"},
    ]


async def test_read_result_carries_the_server_cache_policy(connect: Any) -> None:
    server = Server("t", cache=CachePolicy(ttl_ms=60_000, scope="public"))

    @server.resource("mem://x")
    def x() -> str:
        return "x"

    async with connect(server) as client:
        result = await client.read_resource("mem://x")
    assert (result["ttlMs"], result["cacheScope"]) == (60_000, "public")


async def test_resource_cache_policy_overrides_the_server_policy(connect: Any) -> None:
    server = Server("t", cache=CachePolicy(ttl_ms=60_000, scope="public"))

    @server.resource("mem://me", cache=CachePolicy(ttl_ms=0, scope="private"))
    def me() -> str:
        return "you"

    async with connect(server) as client:
        result = await client.read_resource("mem://me")
    assert (result["ttlMs"], result["cacheScope"]) == (0, "private")


async def test_resource_function_may_take_the_context(connect: Any) -> None:
    server = Server("t")

    @server.resource("mem://whoami")
    def whoami(ctx: Context) -> str:
        return ctx.method

    async with connect(server) as client:
        [entry] = contents_of(await client.read_resource("mem://whoami"))
    assert entry["text"] == "resources/read"


async def test_failing_resource_is_a_masked_internal_error(
    connect: Any, caplog: pytest.LogCaptureFixture
) -> None:
    server = Server("t")

    @server.resource("mem://broken")
    def broken() -> str:
        raise OSError("disk /dev/sda1 on fire")

    with caplog.at_level(logging.ERROR, logger="mcpserve"):
        async with connect(server) as client:
            with pytest.raises(MCPError) as info:
                await client.read_resource("mem://broken")
    assert info.value.code == -32603
    assert "sda1" not in info.value.message
    assert "sda1" in caplog.text


def test_resource_decorator_returns_a_record_still_callable_like_the_function() -> None:
    # server.py's module docstring promises the returned record "stays callable like the
    # original function".
    server = Server("t")

    @server.resource("mem://x")
    def x() -> str:
        return "x"

    assert isinstance(x, Resource)
    assert x() == "x"  # type: ignore[operator]


# --------------------------------------------------------------------------- templates


async def test_template_passes_variables_converted_to_the_annotated_type(connect: Any) -> None:
    seen: list[Any] = []
    server = Server("t")

    @server.resource("notes://{note_id}")
    def note(note_id: int) -> str:
        seen.append(note_id)
        return f"note {note_id}"

    async with connect(server) as client:
        result = await client.read_resource("notes://42")
    assert seen == [42]
    assert contents_of(result) == [{"uri": "notes://42", "text": "note 42"}]


async def test_template_with_several_variables_passes_each(connect: Any) -> None:
    server = Server("t")

    @server.resource("repo://{owner}/{name}/issues/{number}")
    def issue(owner: str, name: str, number: int) -> dict[str, Any]:
        return {"owner": owner, "name": name, "number": number}

    async with connect(server) as client:
        [entry] = contents_of(await client.read_resource("repo://octo/cat/issues/7"))
    assert json.loads(entry["text"]) == {"owner": "octo", "name": "cat", "number": 7}


async def test_optional_query_variable_falls_back_to_the_default(connect: Any) -> None:
    server = Server("t")

    @server.resource("search://items{?q,limit}")
    def search(q: str = "", limit: int = 10) -> str:
        return f"{q}:{limit}"

    async with connect(server) as client:
        first = contents_of(await client.read_resource("search://items?q=pens&limit=3"))
        second = contents_of(await client.read_resource("search://items"))
    assert first[0]["text"] == "pens:3"
    assert second[0]["text"] == ":10"


async def test_template_variable_that_does_not_convert_is_invalid_params_with_the_uri(
    connect: Any,
) -> None:
    calls: list[Any] = []
    server = Server("t")

    @server.resource("notes://{note_id}")
    def note(note_id: int) -> str:
        calls.append(note_id)
        return ""

    async with connect(server) as client:
        with pytest.raises(MCPError) as info:
            await client.read_resource("notes://forty-two")
    assert info.value.code == -32602
    assert info.value.data == {"uri": "notes://forty-two"}
    assert calls == []


async def test_uri_matching_nothing_is_resource_not_found(connect: Any) -> None:
    server = Server("t")

    @server.resource("notes://{note_id}")
    def note(note_id: int) -> str:
        return ""

    async with connect(server) as client:
        with pytest.raises(MCPError) as info:
            await client.read_resource("file:///notes/café.md")
    assert info.value.code == -32602
    assert info.value.message == "Resource not found"
    assert info.value.data == {"uri": "file:///notes/café.md"}


async def test_exact_resource_wins_over_a_matching_template(connect: Any) -> None:
    server = Server("t")

    @server.resource("notes://{slug}")
    def any_note(slug: str) -> str:
        return f"template {slug}"

    @server.resource("notes://pinned")
    def pinned() -> str:
        return "the pinned note"

    async with connect(server) as client:
        pinned_read = contents_of(await client.read_resource("notes://pinned"))
        other_read = contents_of(await client.read_resource("notes://other"))
    assert pinned_read[0]["text"] == "the pinned note"
    assert other_read[0]["text"] == "template other"


async def test_template_mime_type_applies_to_its_reads(connect: Any) -> None:
    server = Server("t")

    @server.resource("notes://{note_id}", mime_type="text/markdown")
    def note(note_id: int) -> str:
        return "# note"

    async with connect(server) as client:
        [entry] = contents_of(await client.read_resource("notes://1"))
    assert entry["mimeType"] == "text/markdown"


def test_template_decorator_returns_a_template_record() -> None:
    server = Server("t")

    @server.resource("notes://{note_id}")
    def note(note_id: int) -> str:
        return ""

    assert isinstance(note, ResourceTemplate)
    assert note.match("notes://5") == {"note_id": "5"}


def test_template_variable_without_a_parameter_is_rejected_at_registration() -> None:
    server = Server("t")
    with pytest.raises(TypeError, match="owner"):

        @server.resource("repo://{owner}/{name}")
        def repo(name: str) -> str:
            return ""


def test_required_parameter_the_template_never_fills_is_rejected_at_registration() -> None:
    server = Server("t")
    with pytest.raises(TypeError, match="branch"):

        @server.resource("repo://{name}")
        def repo(name: str, branch: str) -> str:
            return ""


def test_optional_parameter_outside_the_template_is_accepted() -> None:
    server = Server("t")

    @server.resource("repo://{name}")
    def repo(name: str, branch: str = "main") -> str:
        return ""

    assert set(server.registry.templates) == {"repo://{name}"}


def test_static_resource_function_with_parameters_is_rejected_at_registration() -> None:
    server = Server("t")
    with pytest.raises(TypeError, match="cannot take"):

        @server.resource("mem://fixed")
        def fixed(name: str) -> str:
            return ""


def test_duplicate_resource_uri_is_rejected_at_registration() -> None:
    server = Server("t")

    @server.resource("mem://x")
    def first() -> str:
        return ""

    with pytest.raises(ValueError, match="already registered"):

        @server.resource("mem://x")
        def second() -> str:
            return ""


def test_malformed_uri_template_is_rejected_at_registration() -> None:
    server = Server("t")
    with pytest.raises(ValueError):  # noqa: PT011 - the parser's message varies by defect

        @server.resource("notes://{note_id")
        def note(note_id: str) -> str:
            return ""


# --------------------------------------------------------------------------- listing


async def test_resources_list_has_static_resources_and_templates_list_has_templates(
    connect: Any,
) -> None:
    server = Server("t")

    @server.resource("mem://readme", mime_type="text/markdown", size=1024)
    def readme() -> str:
        """The project readme."""
        return "# readme"

    @server.resource("notes://{note_id}", mime_type="text/markdown", title="A note")
    def note(note_id: int) -> str:
        """One note by id."""
        return ""

    async with connect(server) as client:
        resources = await client.list_resources()
        templates = await client.list_resource_templates()
    assert resources == [
        {
            "uri": "mem://readme",
            "name": "readme",
            "description": "The project readme.",
            "mimeType": "text/markdown",
            "size": 1024,
        }
    ]
    assert templates == [
        {
            "uriTemplate": "notes://{note_id}",
            "name": "note",
            "title": "A note",
            "description": "One note by id.",
            "mimeType": "text/markdown",
        }
    ]


async def test_resource_metadata_options_are_listed(connect: Any) -> None:
    icons = [{"src": "https://example.com/r.png", "mimeType": "image/png"}]
    server = Server("t")

    @server.resource(
        "mem://r",
        name="custom-name",
        title="Custom",
        description="Explicit description",
        icons=icons,
        annotations={"audience": ["user"], "priority": 0.5},
        meta={"com.example/owner": "ops"},
    )
    def r() -> str:
        """Docstring, overridden."""
        return ""

    async with connect(server) as client:
        [entry] = await client.list_resources()
    assert entry == {
        "uri": "mem://r",
        "name": "custom-name",
        "title": "Custom",
        "description": "Explicit description",
        "icons": icons,
        "annotations": {"audience": ["user"], "priority": 0.5},
        "_meta": {"com.example/owner": "ops"},
    }


async def test_list_results_carry_ttl_and_cache_scope(connect: Any) -> None:
    server = Server("t", cache=CachePolicy(ttl_ms=5_000, scope="public"))

    @server.resource("mem://x")
    def x() -> str:
        return ""

    async with connect(server) as client:
        for method in ("resources/list", "resources/templates/list"):
            result = await client.request(method)
            assert (result["ttlMs"], result["cacheScope"]) == (5_000, "public")


async def test_server_with_only_templates_lists_no_static_resources(connect: Any) -> None:
    server = Server("t")

    @server.resource("notes://{note_id}")
    def note(note_id: int) -> str:
        return ""

    async with connect(server) as client:
        assert await client.list_resources() == []
        assert [t["uriTemplate"] for t in await client.list_resource_templates()] == [
            "notes://{note_id}"
        ]


async def test_resources_capability_is_declared_only_with_resources(connect: Any) -> None:
    async with connect(Server("t")) as client:
        assert "resources" not in (await client.discover())["capabilities"]

    server = Server("t")

    @server.resource("notes://{note_id}")
    def note(note_id: int) -> str:
        return ""

    async with connect(server) as client:
        assert (await client.discover())["capabilities"]["resources"] == {
            "subscribe": True,
            "listChanged": True,
        }


async def test_resource_methods_without_resources_are_method_not_found(connect: Any) -> None:
    async with connect(Server("t")) as client:
        for method, params in (
            ("resources/list", None),
            ("resources/templates/list", None),
            ("resources/read", {"uri": "mem://x"}),
        ):
            with pytest.raises(MCPError) as info:
                await client.request(method, params)
            assert info.value.code == -32601
