"""Prompts."""

from typing import Annotated, Any

import pytest
from pydantic import Field

from mcpserve import (
    Audio,
    Context,
    EmbeddedResource,
    Image,
    MCPError,
    Message,
    Prompt,
    ResourceLink,
    Server,
)
from mcpserve.server.entries.prompts import assistant, user


def without_protocol_fields(result: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in result.items() if key not in ("resultType", "_meta")}


async def prompt_entry(connect: Any, server: Server, name: str) -> dict[str, Any]:
    async with connect(server) as client:
        prompts = await client.list_prompts()
    return next(prompt for prompt in prompts if prompt["name"] == name)


# --------------------------------------------------------------------------- listing


async def test_prompt_arguments_list_names_descriptions_and_required_flags(
    connect: Any,
) -> None:
    server = Server("t")

    @server.prompt
    def review(code: str, language: str = "python", focus: str | None = None) -> str:
        """Review some code.

        Args:
            code: The code to review.
            language: Its programming language.
        """
        return code

    entry = await prompt_entry(connect, server, "review")
    assert entry == {
        "name": "review",
        "description": "Review some code.",
        "arguments": [
            {"name": "code", "description": "The code to review.", "required": True},
            {"name": "language", "description": "Its programming language.", "required": False},
            {"name": "focus", "required": False},
        ],
    }


async def test_field_description_describes_a_prompt_argument(connect: Any) -> None:
    server = Server("t")

    @server.prompt
    def greet(name: Annotated[str, Field(description="Who to greet")]) -> str:
        return name

    entry = await prompt_entry(connect, server, "greet")
    assert entry["arguments"] == [{"name": "name", "description": "Who to greet", "required": True}]


async def test_prompt_without_parameters_lists_no_arguments(connect: Any) -> None:
    server = Server("t")

    @server.prompt
    def hello() -> str:
        return "hello"

    assert await prompt_entry(connect, server, "hello") == {"name": "hello"}


async def test_context_parameter_is_not_a_prompt_argument(connect: Any) -> None:
    server = Server("t")

    @server.prompt
    def topic(subject: str, ctx: Context) -> str:
        return subject

    entry = await prompt_entry(connect, server, "topic")
    assert [argument["name"] for argument in entry["arguments"]] == ["subject"]


async def test_prompt_options_are_listed(connect: Any) -> None:
    icons = [{"src": "https://example.com/p.png"}]
    server = Server("t")

    @server.prompt(
        name="code-review",
        title="Code review",
        description="Explicit",
        icons=icons,
        meta={"com.example/v": 1},
    )
    def review() -> str:
        """Overridden."""
        return ""

    assert await prompt_entry(connect, server, "code-review") == {
        "name": "code-review",
        "title": "Code review",
        "description": "Explicit",
        "icons": icons,
        "_meta": {"com.example/v": 1},
    }


async def test_prompts_capability_and_list_cache_fields(connect: Any) -> None:
    server = Server("t")

    @server.prompt
    def hello() -> str:
        return "hello"

    async with connect(server) as client:
        assert (await client.discover())["capabilities"]["prompts"] == {"listChanged": True}
        result = await client.request("prompts/list")
    assert {"ttlMs", "cacheScope"} <= set(result)


async def test_prompt_methods_without_prompts_are_method_not_found(connect: Any) -> None:
    async with connect(Server("t")) as client:
        assert "prompts" not in (await client.discover())["capabilities"]
        with pytest.raises(MCPError) as info:
            await client.list_prompts()
    assert info.value.code == -32601


def test_duplicate_prompt_name_is_rejected_at_registration() -> None:
    server = Server("t")

    @server.prompt
    def hello() -> str:
        return ""

    with pytest.raises(ValueError, match="already registered"):

        @server.prompt(name="hello")
        def other() -> str:
            return ""


def test_prompt_decorator_returns_a_record_still_callable_like_the_function() -> None:
    # server.py's module docstring promises the returned record "stays callable like the
    # original function".
    server = Server("t")

    @server.prompt
    def hello(name: str) -> str:
        return f"hi {name}"

    assert isinstance(hello, Prompt)
    assert hello("Ada") == "hi Ada"  # type: ignore[operator]


# --------------------------------------------------------------------------- rendering


async def test_string_result_is_one_user_text_message(connect: Any) -> None:
    server = Server("t")

    @server.prompt
    def greet(name: str) -> str:
        return f"Say hello to {name}."

    async with connect(server) as client:
        result = await client.get_prompt("greet", {"name": "Ada"})
    assert without_protocol_fields(result) == {
        "messages": [{"role": "user", "content": {"type": "text", "text": "Say hello to Ada."}}]
    }


async def test_get_prompt_result_has_no_cache_fields(connect: Any) -> None:
    server = Server("t")

    @server.prompt
    def greet() -> str:
        return "hi"

    async with connect(server) as client:
        result = await client.get_prompt("greet")
    assert "ttlMs" not in result
    assert result["resultType"] == "complete"


async def test_message_helpers_set_the_roles(connect: Any) -> None:
    server = Server("t")

    @server.prompt
    def dialogue() -> list[Message]:
        return [user("What is 2+2?"), assistant("4"), Message("Thanks", role="user")]

    async with connect(server) as client:
        result = await client.get_prompt("dialogue")
    assert result["messages"] == [
        {"role": "user", "content": {"type": "text", "text": "What is 2+2?"}},
        {"role": "assistant", "content": {"type": "text", "text": "4"}},
        {"role": "user", "content": {"type": "text", "text": "Thanks"}},
    ]


async def test_list_mixing_strings_messages_and_message_dicts_keeps_order(connect: Any) -> None:
    server = Server("t")

    @server.prompt
    def mixed() -> list[Any]:
        return [
            "first",
            assistant("second"),
            {"role": "assistant", "content": {"type": "text", "text": "third"}},
        ]

    async with connect(server) as client:
        result = await client.get_prompt("mixed")
    assert result["messages"] == [
        {"role": "user", "content": {"type": "text", "text": "first"}},
        {"role": "assistant", "content": {"type": "text", "text": "second"}},
        {"role": "assistant", "content": {"type": "text", "text": "third"}},
    ]


async def test_single_message_result_is_one_message(connect: Any) -> None:
    server = Server("t")

    @server.prompt
    def one() -> Message:
        return assistant("only me")

    async with connect(server) as client:
        result = await client.get_prompt("one")
    assert result["messages"] == [
        {"role": "assistant", "content": {"type": "text", "text": "only me"}}
    ]


async def test_content_helpers_inside_messages_become_content_blocks(connect: Any) -> None:
    server = Server("t")

    @server.prompt
    def media() -> list[Message]:
        return [
            user(Image(b"\x01\x02", "image/png")),
            user(Audio(b"\x03", "audio/mpeg")),
            user(EmbeddedResource("file:///a.md", text="# A", mime_type="text/markdown")),
            assistant(ResourceLink("file:///b.md", "b")),
        ]

    async with connect(server) as client:
        result = await client.get_prompt("media")
    assert result["messages"] == [
        {"role": "user", "content": {"type": "image", "data": "AQI=", "mimeType": "image/png"}},
        {"role": "user", "content": {"type": "audio", "data": "Aw==", "mimeType": "audio/mpeg"}},
        {
            "role": "user",
            "content": {
                "type": "resource",
                "resource": {"uri": "file:///a.md", "mimeType": "text/markdown", "text": "# A"},
            },
        },
        {
            "role": "assistant",
            "content": {"type": "resource_link", "uri": "file:///b.md", "name": "b"},
        },
    ]


async def test_full_get_prompt_result_dict_passes_through(connect: Any) -> None:
    body = {
        "description": "A canned conversation",
        "messages": [{"role": "user", "content": {"type": "text", "text": "hi"}}],
    }
    server = Server("t")

    @server.prompt
    def canned() -> dict[str, Any]:
        return body

    async with connect(server) as client:
        result = await client.get_prompt("canned")
    assert without_protocol_fields(result) == body


async def test_prompt_function_may_take_the_context(connect: Any) -> None:
    server = Server("t")

    @server.prompt
    async def which(ctx: Context) -> str:
        return ctx.method

    async with connect(server) as client:
        result = await client.get_prompt("which")
    assert result["messages"][0]["content"]["text"] == "prompts/get"


# --------------------------------------------------------------------------- arguments


async def test_string_argument_is_converted_to_an_int_parameter(connect: Any) -> None:
    seen: list[Any] = []
    server = Server("t")

    @server.prompt
    def repeat(word: str, times: int = 1) -> str:
        seen.append(times)
        return word * times

    async with connect(server) as client:
        result = await client.get_prompt("repeat", {"word": "ab", "times": "3"})
    assert seen == [3]
    assert result["messages"][0]["content"]["text"] == "ababab"


async def test_missing_required_argument_is_invalid_params(connect: Any) -> None:
    calls: list[str] = []
    server = Server("t")

    @server.prompt
    def greet(name: str) -> str:
        calls.append(name)
        return name

    async with connect(server) as client:
        with pytest.raises(MCPError) as info:
            await client.get_prompt("greet", {})
    assert info.value.code == -32602
    assert "name" in info.value.message
    assert calls == []


async def test_omitted_arguments_object_with_a_required_argument_is_invalid_params(
    connect: Any,
) -> None:
    server = Server("t")

    @server.prompt
    def greet(name: str) -> str:
        return name

    async with connect(server) as client:
        with pytest.raises(MCPError) as info:
            await client.get_prompt("greet")
    assert info.value.code == -32602


async def test_argument_that_does_not_convert_is_invalid_params(connect: Any) -> None:
    server = Server("t")

    @server.prompt
    def repeat(times: int) -> str:
        return ""

    async with connect(server) as client:
        with pytest.raises(MCPError) as info:
            await client.get_prompt("repeat", {"times": "lots"})
    assert info.value.code == -32602
    assert "times" in info.value.message


async def test_arguments_that_are_not_an_object_are_invalid_params(connect: Any) -> None:
    server = Server("t")

    @server.prompt
    def hello() -> str:
        return ""

    async with connect(server) as client:
        with pytest.raises(MCPError) as info:
            await client.request("prompts/get", {"name": "hello", "arguments": ["x"]})
    assert info.value.code == -32602


async def test_unknown_prompt_is_invalid_params(connect: Any) -> None:
    server = Server("t")

    @server.prompt
    def hello() -> str:
        return ""

    async with connect(server) as client:
        with pytest.raises(MCPError) as info:
            await client.get_prompt("goodbye")
    assert info.value.code == -32602
    assert "goodbye" in info.value.message


async def test_failing_prompt_is_a_masked_internal_error(connect: Any) -> None:
    server = Server("t")

    @server.prompt
    def broken() -> str:
        raise KeyError("secret-key-name")

    async with connect(server) as client:
        with pytest.raises(MCPError) as info:
            await client.get_prompt("broken")
    assert info.value.code == -32603
    assert "secret-key-name" not in info.value.message
