"""The inline path gives exactly the answers of the path through a task.

A ``tools/call`` of a tool whose function is a plain ``def`` (and a server without
middleware) is marked inline by ``prepare`` and answered by ``execute`` where it stands,
without a task or a coroutine; HTTP then answers with JSON at once. Every outcome a tool
call can have is sent three ways here (``execute`` inline, awaited in a task of its own,
as a request not marked inline is served, and HTTP), and the answers must agree.
"""

from __future__ import annotations

import asyncio
import re
from typing import Any

import pytest
from pydantic import BaseModel

from mcpserve import CallNext, Context, Elicit, InputRequired, Server, ToolError
from mcpserve._invoking import is_synchronous
from mcpserve.protocol.core import answered
from mcpserve.transports import http as transports_http
from wire_helpers import asgi_client, call, meta, post, request

REF = re.compile(r"ref [0-9a-f]+")


class Point(BaseModel):
    x: int
    y: int


async def _doubled(value: int) -> int:
    await asyncio.sleep(0)
    return value * 2


async def _refuses() -> str:
    await asyncio.sleep(0)
    raise ToolError("not today")


def build(**options: Any) -> Server:
    server = Server("inline", **options)

    @server.tool
    def echo(text: str) -> str:
        return text

    @server.tool
    def point(x: int, y: int) -> Point:
        return Point(x=x, y=y)

    @server.tool
    def refuse() -> str:
        raise ToolError("refused on purpose")

    @server.tool
    def crash() -> str:
        raise RuntimeError("secret detail")

    @server.tool(requires={"elicitation": {}})
    def needs_elicitation() -> str:
        return "never"

    @server.tool
    def ask() -> Any:
        schema = {"type": "object", "properties": {"name": {"type": "string"}}}
        return InputRequired({"name": Elicit("Your name?", schema=schema)})

    @server.tool
    def hands_back_a_coroutine(value: int) -> Any:
        return _doubled(value)

    @server.tool
    def hands_back_a_failing_coroutine() -> Any:
        return _refuses()

    @server.tool
    def facts(ctx: Context) -> dict[str, Any]:
        return {"id": ctx.request_id, "cancelled": ctx.cancelled, "version": ctx.protocol_version}

    @server.tool
    def hidden() -> str:
        return "hidden"

    server.disable("tools", "hidden")
    return server


ELICITS: dict[str, Any] = {"elicitation": {"form": {}}}
CASES = [
    call(1, "echo", {"text": "hi"}),
    call(2, "point", {"x": 1, "y": 2}),
    call(3, "point", {"x": "not a number", "y": 2}),
    call(4, "refuse", {}),
    call(5, "crash", {}),
    call(6, "needs_elicitation", {}),
    call(7, "ask", {}, **{"io.modelcontextprotocol/clientCapabilities": ELICITS}),
    call(8, "hands_back_a_coroutine", {"value": 21}),
    call(9, "hands_back_a_failing_coroutine", {}),
    call(10, "facts", {}),
    call(11, "hidden", {}),
    call(12, "echo", {"text": "hi", "extra": "ignored"}),
    request(13, "tools/call", {"name": "echo", "arguments": ["not", "an", "object"]}),
    request(14, "tools/call", {"name": "echo"}),
]


def comparable(response: dict[str, Any]) -> dict[str, Any]:
    """The response without what differs from one call to the next by design."""
    result = response.get("result")
    if isinstance(result, dict):
        if "requestState" in result:
            result["requestState"] = "<sealed>"
        for block in result.get("content", []):
            if block.get("type") == "text":
                block["text"] = REF.sub("ref <id>", block["text"])
    return response


@pytest.mark.parametrize("message", CASES, ids=lambda m: f"{m['id']}-{m['params']['name']}")
async def test_inline_and_awaited_answers_agree_and_http_takes_the_inline_path(
    message: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    server = build()
    dispatcher = server.pipeline.dispatcher()
    inline = dispatcher.prepare(message)
    # A disabled tool is unknown: nothing to run inline, the handler answers the error.
    assert inline.inline is (message["params"]["name"] != "hidden")
    # The same request, served as one not marked inline is: awaited in a task of its own.
    awaited = await asyncio.create_task(answered(dispatcher.execute(dispatcher.prepare(message))))
    if inline.inline:
        answer = dispatcher.execute(inline)
        # Answered where it stands; only a plain function that hands back a coroutine
        # leaves something to await.
        assert isinstance(answer, dict) is ("coroutine" not in message["params"]["name"])
        assert comparable(await answered(answer)) == comparable(dict(awaited))
    streamed: list[Any] = []
    stream = transports_http.ResponseStream

    def spy(*args: Any, **kwargs: Any) -> Any:
        streamed.append(args)
        return stream(*args, **kwargs)

    monkeypatch.setattr(transports_http, "ResponseStream", spy)
    async with asgi_client(server.http_app()) as client:
        reply = await post(client, message)
    assert comparable(reply.message) == comparable(awaited)
    # HTTP answers an inline request with JSON at once: no stream, no disconnect watch.
    assert len(streamed) == (0 if inline.inline else 1)


def test_the_cases_cover_plain_functions_only() -> None:
    server = build()
    # The fast path is taken for these; the async helpers are only what they hand back.
    assert all(is_synchronous(tool.invoke) for tool in server.registry.tools.values())


async def test_outcomes_are_what_each_tool_means() -> None:
    server = build()
    async with asgi_client(server.http_app()) as client:
        replies = {m["id"]: await post(client, m) for m in CASES}
    assert replies[1].result["content"] == [{"type": "text", "text": "hi"}]
    assert replies[2].result["structuredContent"] == {"x": 1, "y": 2}
    assert replies[3].result["isError"] is True
    assert replies[4].result["isError"] is True
    assert replies[4].result["content"] == [{"type": "text", "text": "refused on purpose"}]
    crash = replies[5].result["content"][0]["text"]
    assert replies[5].result["isError"] is True
    assert "secret" not in crash
    assert replies[6].status == 400
    assert replies[6].error["code"] == -32021
    assert replies[7].result["resultType"] == "input_required"
    assert replies[8].result["content"] == [{"type": "text", "text": "42"}]
    assert replies[9].result["content"] == [{"type": "text", "text": "not today"}]
    assert replies[10].result["structuredContent"] == {
        "id": 10,
        "cancelled": False,
        "version": meta()["io.modelcontextprotocol/protocolVersion"],
    }
    assert replies[11].error["code"] == -32602
    assert replies[12].result["content"] == [{"type": "text", "text": "hi"}]
    assert replies[13].error["code"] == -32602
    assert "arguments" in replies[13].error["message"]
    assert replies[14].result["isError"] is True  # "text" is required


async def test_middleware_still_sees_calls_of_plain_functions() -> None:
    server = build()
    seen: list[str] = []

    @server.middleware
    async def record(ctx: Context, call_next: CallNext) -> Any:
        seen.append(ctx.method)
        return await call_next()

    async with asgi_client(server.http_app()) as client:
        reply = await post(client, call(1, "echo", {"text": "hi"}))
    assert reply.result["content"] == [{"type": "text", "text": "hi"}]
    assert seen == ["tools/call"]
