"""``Client(on_input=...)`` answers ``input_required`` results and retries by itself."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel

from mcpserve import Client, Context, Elicit, InputRequired, ListRoots, MCPError, Server
from mcpserve._types import JSONDict

CAPABILITIES = {"elicitation": {"form": {}}, "sampling": {}, "roots": {}}


class Name(BaseModel):
    name: str


def build() -> Server:
    server = Server("rounds")

    @server.tool
    async def greet(ctx: Context) -> str:
        """Asks twice, one round after the other."""
        answer = await ctx.elicit("Your name?", Name)
        reply = await ctx.sample(f"A greeting for {answer.data.name}", max_tokens=20)
        return reply.text

    @server.tool
    async def survey(ctx: Context) -> str:
        """Asks two things in one round."""
        answers = await ctx.ask(name=Elicit("Your name?", schema=Name), roots=ListRoots())
        roots = ", ".join(root.uri for root in answers["roots"])
        return f"{answers['name'].data.name} works in {roots}"

    @server.tool
    def insatiable() -> Any:
        """Never satisfied: asks again whatever the answer."""
        schema = {"type": "object", "properties": {"more": {"type": "string"}}}
        return InputRequired({"more": Elicit("More?", schema=schema)})

    @server.prompt
    async def welcome(ctx: Context) -> str:
        answer = await ctx.elicit("Your name?", Name)
        return f"Welcome, {answer.data.name}!"

    return server


class Answers:
    """Answers like a user and an LLM would, and remembers what it was asked."""

    def __init__(self) -> None:
        self.asked: list[str] = []

    async def __call__(self, method: str, params: JSONDict) -> JSONDict:
        self.asked.append(method)
        if method == "elicitation/create":
            return {"action": "accept", "content": {"name": "Ada", "more": "yes"}}
        if method == "sampling/createMessage":
            text = params["messages"][0]["content"]["text"].replace("A greeting for", "Hello,")
            return {"role": "assistant", "content": {"type": "text", "text": text}, "model": "m"}
        if method == "roots/list":
            return {"roots": [{"uri": "file:///work", "name": "work"}]}
        raise AssertionError(f"unexpected input request {method}")


def text(result: JSONDict) -> str:
    assert result["resultType"] == "complete", result
    return result["content"][0]["text"]  # type: ignore[no-any-return]


async def test_rounds_are_answered_one_after_the_other_until_complete() -> None:
    answers = Answers()
    async with Client(build(), capabilities=CAPABILITIES, on_input=answers) as client:
        assert text(await client.call_tool("greet")) == "Hello, Ada"
    assert answers.asked == ["elicitation/create", "sampling/createMessage"]


async def test_questions_of_one_round_are_all_answered_before_the_retry() -> None:
    answers = Answers()
    async with Client(build(), capabilities=CAPABILITIES, on_input=answers) as client:
        assert text(await client.call_tool("survey")) == "Ada works in file:///work"
    assert sorted(answers.asked) == ["elicitation/create", "roots/list"]


async def test_prompts_are_retried_too() -> None:
    async with Client(build(), capabilities=CAPABILITIES, on_input=Answers()) as client:
        result = await client.get_prompt("welcome")
    assert result["resultType"] == "complete"
    assert result["messages"][0]["content"]["text"] == "Welcome, Ada!"


async def test_after_max_rounds_the_input_required_result_comes_back() -> None:
    answers = Answers()
    client = Client(build(), capabilities=CAPABILITIES, on_input=answers, max_input_rounds=3)
    async with client:
        result = await client.call_tool("insatiable")
    assert result["resultType"] == "input_required"
    assert list(result["inputRequests"]) == ["more"]
    assert answers.asked == ["elicitation/create"] * 3


async def test_without_a_handler_input_required_is_returned_as_is() -> None:
    async with Client(build(), capabilities=CAPABILITIES) as client:
        result = await client.call_tool("greet")
    assert result["resultType"] == "input_required"
    assert result["inputRequests"]["elicit_1"]["method"] == "elicitation/create"
    assert isinstance(result["requestState"], str)


async def test_a_failing_handler_fails_the_call() -> None:
    async def refuse(method: str, params: JSONDict) -> JSONDict:
        raise RuntimeError("the user closed the dialog")

    async with Client(build(), capabilities=CAPABILITIES, on_input=refuse) as client:
        with pytest.raises(RuntimeError, match="closed the dialog"):
            await client.call_tool("greet")


async def test_a_missing_capability_is_still_an_error() -> None:
    async with Client(build(), on_input=Answers()) as client:
        with pytest.raises(MCPError) as raised:
            await client.call_tool("greet")
    assert raised.value.code == -32021
