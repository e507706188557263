"""Client handlers (``on_input``, ``on_elicit``, ``on_sample``, ``on_list_roots``,
``on_notification``) in their three shapes, against a real server in memory and over stdio.

Run as a script, this file serves :func:`build` over stdio: the stdio tests spawn it, so both
transports talk to the same server.
"""

from __future__ import annotations

import asyncio
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from mcpserve import (
    Client,
    Context,
    Elicit,
    ElicitResult,
    ListRoots,
    MCPError,
    MethodNotFound,
    Root,
    Sample,
    SampleResult,
    Server,
    blocking,
)
from mcpserve._types import JSONDict

HERE = Path(__file__).resolve()
ALL_KINDS = {"elicitation": {"form": {}}, "sampling": {}, "roots": {}}
SHAPES = ["async", "plain", "blocking"]
TRANSPORTS = ["memory", pytest.param("stdio", marks=pytest.mark.subprocess)]


class Name(BaseModel):
    name: str


def build() -> Server:
    server = Server("handlers")

    @server.tool
    async def ask_name(ctx: Context) -> str:
        answer = await ctx.elicit("Your name?", Name)
        return f"Hello, {answer.data.name}" if answer.accepted else f"No name ({answer.action})"

    @server.tool
    async def ask_llm(ctx: Context) -> str:
        reply = await ctx.sample("Say hello", max_tokens=20)
        return f"{reply.model} says {reply.text}"

    @server.tool
    async def ask_roots(ctx: Context) -> str:
        roots = await ctx.list_roots()
        return ", ".join(f"{root.name}={root.uri}" for root in roots)

    @server.tool
    async def ask_everything(ctx: Context) -> str:
        """All three kinds in one round."""
        answers = await ctx.ask(
            name=Elicit("Your name?", schema=Name), llm=Sample("Say hello", 20), roots=ListRoots()
        )
        roots = ", ".join(root.uri for root in answers["roots"])
        return f"{answers['name'].data.name} / {answers['llm'].text} / {roots}"

    @server.tool
    async def count(steps: int, ctx: Context) -> str:
        for step in range(1, steps + 1):
            await ctx.progress(step, total=steps)
        return "counted"

    return server


# -- answers, as a user, an LLM and a workspace would give them -------------------------------


def elicitation(params: JSONDict) -> JSONDict:
    assert params["requestedSchema"]["required"] == ["name"]
    return {"action": "accept", "content": {"name": "Ada"}}


def sampling(params: JSONDict) -> JSONDict:
    assert params["messages"][0]["content"]["text"] == "Say hello"
    return {"role": "assistant", "content": {"type": "text", "text": "hello"}, "model": "m1"}


def roots(params: JSONDict) -> JSONDict:
    return {"roots": [{"uri": "file:///work", "name": "work"}]}


BY_METHOD: dict[str, Callable[[JSONDict], JSONDict]] = {
    "elicitation/create": elicitation,
    "sampling/createMessage": sampling,
    "roots/list": roots,
}
#: The per-kind option for each method.
OPTIONS = {
    "on_elicit": "elicitation/create",
    "on_sample": "sampling/createMessage",
    "on_list_roots": "roots/list",
}


class Calls:
    """Records the thread each call of a handler ran on."""

    def __init__(self) -> None:
        self.threads: list[threading.Thread] = []
        self.args: list[tuple[Any, ...]] = []

    def shaped(self, shape: str, answer: Callable[..., Any]) -> Callable[..., Any]:
        """``answer`` as an ``async def``, a plain ``def`` or a ``@blocking`` ``def``."""

        def plain(*args: Any) -> Any:
            self.threads.append(threading.current_thread())
            self.args.append(args)
            return answer(*args)

        if shape == "async":

            async def asynchronous(*args: Any) -> Any:
                return plain(*args)

            return asynchronous
        if shape == "blocking":
            return blocking(plain)
        return plain

    def ran_where(self, shape: str, loop_thread: threading.Thread) -> None:
        """Assert every call ran where its shape says: the loop's thread, or the pool's."""
        assert self.threads
        for thread in self.threads:
            if shape == "blocking":
                assert thread is not loop_thread
                assert thread.name.startswith("mcpserve-client")
            else:
                assert thread is loop_thread


def connect(transport: str, **options: Any) -> Client:
    if transport == "memory":
        return Client(build(), **options)
    from wire_helpers import child_env

    return Client.stdio(
        [sys.executable, str(HERE)], cwd=str(HERE.parent), env=child_env(), **options
    )


def text(result: JSONDict) -> str:
    assert result["resultType"] == "complete", result
    return result["content"][0]["text"]  # type: ignore[no-any-return]


async def call(client: Client, tool: str, **options: Any) -> JSONDict:
    return await asyncio.wait_for(client.call_tool(tool, **options), 30)


# -- each per-kind handler, each shape, each transport ----------------------------------------


@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize("shape", SHAPES)
async def test_on_elicit_answers_an_elicitation_in_every_shape(shape: str, transport: str) -> None:
    calls = Calls()
    async with connect(transport, on_elicit=calls.shaped(shape, elicitation)) as client:
        assert text(await call(client, "ask_name")) == "Hello, Ada"
    calls.ran_where(shape, threading.current_thread())
    assert calls.args[0][0]["message"] == "Your name?"


@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize("shape", SHAPES)
async def test_on_sample_answers_a_sampling_request_in_every_shape(
    shape: str, transport: str
) -> None:
    calls = Calls()
    async with connect(transport, on_sample=calls.shaped(shape, sampling)) as client:
        assert text(await call(client, "ask_llm")) == "m1 says hello"
    calls.ran_where(shape, threading.current_thread())


@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize("shape", SHAPES)
async def test_on_list_roots_answers_a_roots_request_in_every_shape(
    shape: str, transport: str
) -> None:
    calls = Calls()
    async with connect(transport, on_list_roots=calls.shaped(shape, roots)) as client:
        assert text(await call(client, "ask_roots")) == "work=file:///work"
    calls.ran_where(shape, threading.current_thread())


@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize("shape", SHAPES)
async def test_on_input_answers_every_kind_in_every_shape(shape: str, transport: str) -> None:
    calls = Calls()

    def answer(method: str, params: JSONDict) -> JSONDict:
        return BY_METHOD[method](params)

    handler = calls.shaped(shape, answer)
    async with connect(transport, capabilities=ALL_KINDS, on_input=handler) as client:
        assert text(await call(client, "ask_everything")) == "Ada / hello / file:///work"
    calls.ran_where(shape, threading.current_thread())
    assert sorted(args[0] for args in calls.args) == sorted(BY_METHOD)


@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize("shape", SHAPES)
async def test_on_notification_hears_every_notification_in_every_shape(
    shape: str, transport: str
) -> None:
    calls = Calls()
    handler = calls.shaped(shape, lambda message: None)
    async with connect(transport, on_notification=handler) as client:
        result = await call(client, "count", arguments={"steps": 3}, progress_token="p")
    assert text(result) == "counted"
    calls.ran_where(shape, threading.current_thread())
    heard = [args[0] for args in calls.args]
    assert [m["method"] for m in heard] == ["notifications/progress"] * 3
    assert [m["params"]["progress"] for m in heard] == [1, 2, 3]


# -- where the shapes run ----------------------------------------------------------------------


async def test_a_blocking_handler_leaves_the_event_loop_free_while_it_waits() -> None:
    # The handler waits for an event only a task on the loop sets: run on the loop, it
    # would wait out its timeout and the task would never run.
    released = threading.Event()

    @blocking
    def wait_for_the_loop(params: JSONDict) -> JSONDict:
        assert released.wait(10), "the event loop was stalled"
        return elicitation(params)

    async def release() -> None:
        await asyncio.sleep(0.05)
        released.set()

    async with Client(build(), on_elicit=wait_for_the_loop) as client:
        releaser = asyncio.create_task(release())
        assert text(await call(client, "ask_name")) == "Hello, Ada"
        await releaser


async def test_the_questions_of_one_round_are_answered_concurrently_by_blocking_handlers() -> None:
    # Three blocking handlers meet at a barrier: only if they run at the same time.
    barrier = threading.Barrier(3, timeout=10)

    def meeting(answer: Callable[[JSONDict], JSONDict]) -> Callable[[JSONDict], JSONDict]:
        @blocking
        def meet(params: JSONDict) -> JSONDict:
            barrier.wait()
            return answer(params)

        return meet

    handlers = {option: meeting(BY_METHOD[method]) for option, method in OPTIONS.items()}
    async with Client(build(), **handlers) as client:
        assert text(await call(client, "ask_everything")) == "Ada / hello / file:///work"


async def test_a_blocking_handler_sees_the_callers_context_variables() -> None:
    import contextvars

    user: contextvars.ContextVar[str] = contextvars.ContextVar("user")
    user.set("Ada")

    @blocking
    def from_context(params: JSONDict) -> JSONDict:
        return {"action": "accept", "content": {"name": user.get()}}

    async with Client(build(), on_elicit=from_context) as client:
        assert text(await call(client, "ask_name")) == "Hello, Ada"


# -- combining handlers, and kinds without one -------------------------------------------------


async def test_a_per_kind_handler_wins_over_on_input_for_its_kind() -> None:
    asked: list[str] = []

    async def fallback(method: str, params: JSONDict) -> JSONDict:
        asked.append(method)
        return BY_METHOD[method](params)

    def llm(params: JSONDict) -> JSONDict:
        return {"role": "assistant", "content": {"type": "text", "text": "hi"}, "model": "m2"}

    options: dict[str, Any] = {"capabilities": ALL_KINDS, "on_input": fallback, "on_sample": llm}
    async with Client(build(), **options) as client:
        assert text(await call(client, "ask_everything")) == "Ada / hi / file:///work"
    assert sorted(asked) == ["elicitation/create", "roots/list"]


async def test_a_question_no_handler_answers_fails_the_call_with_method_not_found() -> None:
    asked: list[JSONDict] = []

    def record(params: JSONDict) -> JSONDict:
        asked.append(params)
        return elicitation(params)

    # The capabilities claim sampling and roots, but nothing here answers them.
    async with Client(build(), capabilities=ALL_KINDS, on_elicit=record) as client:
        with pytest.raises(MethodNotFound) as raised:
            await call(client, "ask_everything")
    assert raised.value.code == -32601
    assert raised.value.data["method"] in ("sampling/createMessage", "roots/list")
    assert asked == []  # the round failed before anyone was asked


async def test_without_any_input_handler_input_required_comes_back_as_it_is() -> None:
    async with Client(build(), capabilities=ALL_KINDS) as client:
        result = await call(client, "ask_name")
    assert result["resultType"] == "input_required"


# -- capabilities that follow the handlers -----------------------------------------------------


def test_each_per_kind_handler_declares_its_capability() -> None:
    assert Client(build(), on_elicit=elicitation).capabilities == {"elicitation": {"form": {}}}
    assert Client(build(), on_sample=sampling).capabilities == {"sampling": {}}
    assert Client(build(), on_list_roots=roots).capabilities == {"roots": {}}
    every = Client(build(), on_elicit=elicitation, on_sample=sampling, on_list_roots=roots)
    assert every.capabilities == ALL_KINDS


def test_on_input_declares_nothing_and_explicit_capabilities_are_sent_as_given() -> None:
    assert Client(build(), on_input=lambda method, params: {}).capabilities == {}
    explicit = {"elicitation": {"url": {}}}
    client = Client(build(), capabilities=explicit, on_elicit=elicitation, on_sample=sampling)
    assert client.capabilities == explicit
    assert client.meta()["io.modelcontextprotocol/clientCapabilities"] == explicit


async def test_a_kind_without_a_handler_is_not_declared_so_the_server_does_not_ask() -> None:
    async with Client(build(), on_elicit=elicitation) as client:
        with pytest.raises(MCPError) as raised:
            await call(client, "ask_llm")
    assert raised.value.code == -32021
    assert raised.value.data["requiredCapabilities"] == {"sampling": {}}


async def test_explicit_capabilities_replace_the_ones_handlers_would_declare() -> None:
    async with Client(build(), capabilities={}, on_elicit=elicitation) as client:
        with pytest.raises(MCPError) as raised:
            await call(client, "ask_name")
    assert raised.value.code == -32021


# -- typed answers -----------------------------------------------------------------------------


async def test_per_kind_handlers_may_answer_with_the_typed_results() -> None:
    options: dict[str, Any] = {
        "on_elicit": lambda params: ElicitResult("accept", data=Name(name="Ada")),
        "on_sample": blocking(lambda params: SampleResult("assistant", "hello", "m1", "endTurn")),
        "on_list_roots": lambda params: [Root("file:///work", "work")],
    }
    async with Client(build(), **options) as client:
        assert text(await call(client, "ask_everything")) == "Ada / hello / file:///work"
        assert text(await call(client, "ask_roots")) == "work=file:///work"


async def test_a_declined_typed_elicitation_goes_back_without_content() -> None:
    async with Client(build(), on_elicit=lambda params: ElicitResult("decline")) as client:
        assert text(await call(client, "ask_name")) == "No name (decline)"


async def test_an_answer_that_is_no_result_fails_the_call_with_a_type_error() -> None:
    async with Client(build(), on_list_roots=lambda params: "file:///work") as client:
        with pytest.raises(TypeError, match="roots/list"):
            await call(client, "ask_roots")


if __name__ == "__main__":
    build().run()
