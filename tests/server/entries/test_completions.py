"""Argument completion."""

import enum
from typing import Any, Literal

import pytest

from mcpserve import Completion, Context, MCPError, Server

LANGUAGES = ["python", "pytorch", "perl", "php", "rust"]


def prompt_ref(name: str) -> dict[str, Any]:
    return {"type": "ref/prompt", "name": name}


def resource_ref(uri: str) -> dict[str, Any]:
    return {"type": "ref/resource", "uri": uri}


def server_with_prompt() -> Server:
    server = Server("t")

    @server.prompt
    def review(language: str, style: str = "terse") -> str:
        return language

    return server


async def test_prompt_argument_completer_receives_the_partial_value(connect: Any) -> None:
    server = server_with_prompt()

    @server.completion(prompt="review", argument="language")
    def languages(value: str) -> list[str]:
        return [name for name in LANGUAGES if name.startswith(value)]

    async with connect(server) as client:
        completion = await client.complete(prompt_ref("review"), "language", "py")
    assert completion == {"values": ["python", "pytorch"]}


async def test_resource_template_variable_completer_receives_the_partial_value(
    connect: Any,
) -> None:
    server = Server("t")

    @server.resource("repo://{owner}/{name}")
    def repo(owner: str, name: str) -> str:
        return ""

    @server.completion(resource="repo://{owner}/{name}", argument="owner")
    def owners(prefix: str) -> list[str]:
        return [owner for owner in ("octocat", "octo-org", "torvalds") if owner.startswith(prefix)]

    async with connect(server) as client:
        completion = await client.complete(resource_ref("repo://{owner}/{name}"), "owner", "oct")
    assert completion == {"values": ["octocat", "octo-org"]}


async def test_a_resource_completer_is_named_and_asked_by_the_template_not_a_uri(
    connect: Any,
) -> None:
    """``resource=`` takes the template exactly as registered; a URI the template matches is
    not a template, so asking with one is -32602 like any unknown template."""
    server = Server("t")

    @server.resource("repo://{owner}/{name}")
    def repo(owner: str, name: str) -> str:
        return ""

    @server.completion(resource="repo://{owner}/{name}", argument="name")
    def names(value: str) -> list[str]:
        return ["cli"]

    async with connect(server) as client:
        assert await client.complete(resource_ref("repo://{owner}/{name}"), "name", "c") == {
            "values": ["cli"]
        }
        for uri in ("repo://octocat/cli", "repo://octocat/{name}"):
            with pytest.raises(MCPError) as info:
                await client.complete(resource_ref(uri), "name", "c")
            assert info.value.code == -32602


async def test_completer_for_another_argument_is_not_used(connect: Any) -> None:
    server = server_with_prompt()

    @server.completion(prompt="review", argument="language")
    def languages(value: str) -> list[str]:
        return LANGUAGES

    async with connect(server) as client:
        completion = await client.complete(prompt_ref("review"), "style", "t")
    assert completion == {"values": []}


async def test_values_are_capped_at_100_with_total_and_has_more(connect: Any) -> None:
    server = server_with_prompt()

    @server.completion(prompt="review", argument="language")
    def many(value: str) -> list[str]:
        return [f"{value}{i}" for i in range(250)]

    async with connect(server) as client:
        completion = await client.complete(prompt_ref("review"), "language", "x")
    assert completion["values"] == [f"x{i}" for i in range(100)]
    assert completion["total"] == 250
    assert completion["hasMore"] is True


async def test_exactly_100_values_are_not_marked_as_more(connect: Any) -> None:
    server = server_with_prompt()

    @server.completion(prompt="review", argument="language")
    def hundred(value: str) -> list[str]:
        return [str(i) for i in range(100)]

    async with connect(server) as client:
        completion = await client.complete(prompt_ref("review"), "language", "")
    assert len(completion["values"]) == 100
    assert "hasMore" not in completion
    assert "total" not in completion


async def test_completion_object_passes_its_total_and_has_more(connect: Any) -> None:
    server = server_with_prompt()

    @server.completion(prompt="review", argument="language")
    def paged(value: str) -> Completion:
        return Completion(["python", "perl"], total=40, has_more=True)

    async with connect(server) as client:
        completion = await client.complete(prompt_ref("review"), "language", "p")
    assert completion == {"values": ["python", "perl"], "total": 40, "hasMore": True}


async def test_completion_object_with_too_many_values_is_capped_keeping_its_total(
    connect: Any,
) -> None:
    server = server_with_prompt()

    @server.completion(prompt="review", argument="language")
    def paged(value: str) -> Completion:
        return Completion([str(i) for i in range(150)], total=1_000)

    async with connect(server) as client:
        completion = await client.complete(prompt_ref("review"), "language", "")
    assert len(completion["values"]) == 100
    assert completion["total"] == 1_000
    assert completion["hasMore"] is True


async def test_arguments_parameter_receives_the_context_arguments(connect: Any) -> None:
    seen: list[Any] = []
    server = Server("t")

    @server.resource("repo://{owner}/{name}")
    def repo(owner: str, name: str) -> str:
        return ""

    @server.completion(resource="repo://{owner}/{name}", argument="name")
    def names(value: str, arguments: dict[str, str]) -> list[str]:
        seen.append(arguments)
        return [f"{arguments.get('owner', '?')}-{value}"]

    async with connect(server) as client:
        with_context = await client.complete(
            resource_ref("repo://{owner}/{name}"), "name", "cli", {"owner": "octocat"}
        )
        without_context = await client.complete(resource_ref("repo://{owner}/{name}"), "name", "x")
    assert with_context == {"values": ["octocat-cli"]}
    assert without_context == {"values": ["?-x"]}
    assert seen == [{"owner": "octocat"}, {}]


async def test_async_completer_with_context_is_awaited(connect: Any) -> None:
    server = server_with_prompt()

    @server.completion(prompt="review", argument="language")
    async def languages(value: str, ctx: Context) -> list[str]:
        return [ctx.method, value]

    async with connect(server) as client:
        completion = await client.complete(prompt_ref("review"), "language", "p")
    assert completion == {"values": ["completion/complete", "p"]}


async def test_unknown_prompt_ref_is_invalid_params(connect: Any) -> None:
    server = server_with_prompt()

    @server.completion(prompt="review", argument="language")
    def languages(value: str) -> list[str]:
        return LANGUAGES

    async with connect(server) as client:
        with pytest.raises(MCPError) as info:
            await client.complete(prompt_ref("nope"), "language", "p")
    assert info.value.code == -32602


async def test_unknown_resource_ref_is_invalid_params(connect: Any) -> None:
    server = server_with_prompt()

    @server.completion(prompt="review", argument="language")
    def languages(value: str) -> list[str]:
        return LANGUAGES

    async with connect(server) as client:
        with pytest.raises(MCPError) as info:
            await client.complete(resource_ref("nope://{x}"), "x", "")
    assert info.value.code == -32602


async def test_a_disabled_prompt_or_template_answers_no_completions(connect: Any) -> None:
    """Switched off means unknown to every request that names it, completions included."""
    server = server_with_prompt()

    @server.resource("repo://{owner}")
    def repo(owner: str) -> str:
        return owner

    @server.completion(prompt="review", argument="language")
    def languages(value: str) -> list[str]:
        return [name for name in LANGUAGES if name.startswith(value)]

    @server.completion(resource="repo://{owner}", argument="owner")
    def owners(value: str) -> list[str]:
        return ["octocat"]

    server.disable("prompts", "review")
    server.disable("resources", "repo://{owner}")
    async with connect(server) as client:
        for ref, argument in ((prompt_ref("review"), "language"),
                              (resource_ref("repo://{owner}"), "owner")):  # fmt: skip
            with pytest.raises(MCPError) as info:
                await client.complete(ref, argument, "p")
            assert info.value.code == -32602
        server.enable("prompts", "review")
        completion = await client.complete(prompt_ref("review"), "language", "py")
    assert completion == {"values": ["python", "pytorch"]}


async def test_unknown_ref_type_is_invalid_params(connect: Any) -> None:
    server = server_with_prompt()

    @server.completion(prompt="review", argument="language")
    def languages(value: str) -> list[str]:
        return LANGUAGES

    async with connect(server) as client:
        with pytest.raises(MCPError) as info:
            await client.complete({"type": "ref/tool", "name": "review"}, "language", "p")
    assert info.value.code == -32602


async def test_completions_capability_is_declared_only_when_a_completer_exists(
    connect: Any,
) -> None:
    server = server_with_prompt()
    async with connect(server) as client:
        assert "completions" not in (await client.discover())["capabilities"]
        with pytest.raises(MCPError) as info:
            await client.complete(prompt_ref("review"), "language", "p")
        assert info.value.code == -32601

    @server.completion(prompt="review", argument="language")
    def languages(value: str) -> list[str]:
        return LANGUAGES

    async with connect(server) as client:
        assert (await client.discover())["capabilities"]["completions"] == {}


async def test_failing_completer_is_a_masked_internal_error(connect: Any) -> None:
    server = server_with_prompt()

    @server.completion(prompt="review", argument="language")
    def broken(value: str) -> list[str]:
        raise RuntimeError("db password wrong")

    async with connect(server) as client:
        with pytest.raises(MCPError) as info:
            await client.complete(prompt_ref("review"), "language", "p")
    assert info.value.code == -32603
    assert "password" not in info.value.message


def test_completion_needs_exactly_one_of_prompt_and_resource() -> None:
    server = Server("t")
    with pytest.raises(TypeError):
        server.completion(argument="x")
    with pytest.raises(TypeError):
        server.completion(argument="x", prompt="p", resource="r://{x}")


def test_completer_without_a_value_parameter_is_rejected() -> None:
    server = Server("t")
    with pytest.raises(TypeError, match="partial value"):

        @server.completion(prompt="p", argument="x")
        def nothing(ctx: Context) -> list[str]:
            return []


def test_completion_decorator_returns_the_function_unchanged() -> None:
    server = Server("t")

    def languages(value: str) -> list[str]:
        return [value]

    assert server.completion(prompt="p", argument="x")(languages) is languages


# --------------------------------------------------------------------------- Literal and enum


class Mood(enum.Enum):
    LIGHT = "light"
    LONG = "long"
    EPIC = "epic"


class Stars(enum.IntEnum):
    ONE = 1
    TWO = 2


def server_with_choices() -> Server:
    server = Server("t")

    @server.prompt
    def pick(
        kind: Literal["a", "b", "c"],
        mood: Mood,
        topic: str,
        stars: Stars = Stars.ONE,
        tone: Literal["dry", "warm"] | None = None,
    ) -> str:
        return f"{kind} {mood.value} {topic} {stars} {tone}"

    return server


def test_literal_and_enum_arguments_list_their_values_as_the_strings_a_client_sends() -> None:
    server = Server("t")

    @server.prompt
    def pick(
        kind: Literal["a", "b", "c"],
        mood: Mood,
        stars: Stars,
        tone: Literal["dry", "warm"] | None = None,
        topic: str = "",
        loose: Literal["x"] | str = "x",
        number: Literal[1, "one"] = "one",
    ) -> str:
        return kind

    assert server.registry.prompts["pick"].choices == {
        "kind": ["a", "b", "c"],
        "mood": ["light", "long", "epic"],
        "stars": ["1", "2"],  # an IntEnum converts "1"
        "tone": ["dry", "warm"],
        "number": ["one"],  # a Literal[1] takes the integer only, never a string
    }


async def test_a_literal_argument_completes_to_its_values_matching_the_prefix(
    connect: Any,
) -> None:
    async with connect(server_with_choices()) as client:
        assert (await client.discover())["capabilities"]["completions"] == {}
        assert await client.complete(prompt_ref("pick"), "kind", "") == {"values": ["a", "b", "c"]}
        assert await client.complete(prompt_ref("pick"), "kind", "b") == {"values": ["b"]}
        assert await client.complete(prompt_ref("pick"), "kind", "x") == {"values": []}
        assert await client.complete(prompt_ref("pick"), "tone", "w") == {"values": ["warm"]}


async def test_an_enum_argument_completes_to_its_values(connect: Any) -> None:
    async with connect(server_with_choices()) as client:
        assert await client.complete(prompt_ref("pick"), "mood", "l") == {
            "values": ["light", "long"]
        }
        assert await client.complete(prompt_ref("pick"), "stars", "") == {"values": ["1", "2"]}
        # What completes is what the prompt takes.
        prompt = await client.get_prompt(
            "pick", {"kind": "b", "mood": "epic", "topic": "t", "stars": "2"}
        )
    assert prompt["messages"][0]["content"]["text"].startswith("b epic t 2")


async def test_an_open_argument_beside_literal_ones_completes_to_nothing(connect: Any) -> None:
    server = server_with_choices()

    @server.completion(prompt="pick", argument="mood")
    def moods(value: str) -> list[str]:
        return ["custom"]

    async with connect(server) as client:
        assert await client.complete(prompt_ref("pick"), "topic", "") == {"values": []}


async def test_a_registered_completer_wins_over_the_literal_values(connect: Any) -> None:
    server = server_with_choices()

    @server.completion(prompt="pick", argument="kind")
    def kinds(value: str) -> list[str]:
        return [f"{value}-from-completer"]

    async with connect(server) as client:
        assert await client.complete(prompt_ref("pick"), "kind", "a") == {
            "values": ["a-from-completer"]
        }


async def test_literal_values_of_a_disabled_prompt_are_not_offered(connect: Any) -> None:
    server = server_with_choices()
    server.disable("prompts", "pick")
    async with connect(server) as client:
        with pytest.raises(MCPError) as info:
            await client.complete(prompt_ref("pick"), "kind", "")
    assert info.value.code == -32602
