"""Features tested in memory elsewhere, here on the wire: a real stdio subprocess and
uvicorn over HTTP, every message checked against the official models.

A multi round-trip retry, paging through a list with its cursors, ``ctx.log`` (over HTTP it
turns the answer into SSE) and a ``ToolResult`` checked against the tool's output schema.
"""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from typing import Any

import httpx2
import pytest

from wire_helpers import (
    SERVERS,
    HTTPServerProcess,
    http_server_process,
    post,
    request,
    stdio_server,
)

pytestmark = pytest.mark.subprocess

FEATURES = SERVERS / "features.py"
ELICITS = {"io.modelcontextprotocol/clientCapabilities": {"elicitation": {"form": {}}}}

#: Sends one request; returns the response and the notifications that came before it.
Send = Callable[[dict[str, Any]], Awaitable[tuple[dict[str, Any], list[dict[str, Any]]]]]


@pytest.fixture(scope="module")
def http(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HTTPServerProcess]:
    with http_server_process(
        tmp_path_factory.mktemp("features"), args=[sys.executable, str(FEATURES)]
    ) as srv:
        yield srv


@pytest.fixture(params=["stdio", "http"])
async def send(request: pytest.FixtureRequest) -> AsyncIterator[Send]:
    if request.param == "stdio":
        async with stdio_server([sys.executable, str(FEATURES)]) as proc:

            async def over_stdio(message: dict[str, Any]) -> Any:
                await proc.send(message)
                return await proc.read_until(message["id"])

            yield over_stdio
        return
    srv: HTTPServerProcess = request.getfixturevalue("http")
    async with httpx2.AsyncClient(base_url=f"http://127.0.0.1:{srv.port}", timeout=15) as client:

        async def over_http(message: dict[str, Any]) -> Any:
            reply = await post(client, message)
            assert reply.status == 200, reply
            return reply.message, reply.notifications

        yield over_http


def tool_call(request_id: Any, name: str, arguments: dict[str, Any], **more: Any) -> Any:
    meta = {key: value for key, value in more.items() if key.startswith("io.")}
    params = {"name": name, "arguments": arguments}
    params.update({key: value for key, value in more.items() if not key.startswith("io.")})
    return request(request_id, "tools/call", params, **meta)


async def test_a_multi_round_trip_retry_completes(send: Send) -> None:
    first, _ = await send(tool_call(1, "greet", {}, **ELICITS))
    result = first["result"]
    assert result["resultType"] == "input_required"
    assert result["inputRequests"]["name"]["method"] == "elicitation/create"
    answer = {"action": "accept", "content": {"name": "Ann"}}
    second, _ = await send(
        tool_call(2, "greet", {}, inputResponses={"name": answer},
                  requestState=result["requestState"], **ELICITS)
    )  # fmt: skip
    assert second["result"]["content"] == [{"type": "text", "text": "Hello, Ann!"}]
    tampered, _ = await send(
        tool_call(3, "greet", {}, inputResponses={"name": answer},
                  requestState=result["requestState"][:-2] + "AA", **ELICITS)
    )  # fmt: skip
    assert tampered["error"]["code"] == -32602


async def test_pages_follow_their_cursors_to_every_tool(send: Send) -> None:
    names: list[str] = []
    cursor = None
    pages = 0
    while True:
        params = {"cursor": cursor} if cursor is not None else None
        response, _ = await send(request(10 + pages, "tools/list", params))
        page = response["result"]
        pages += 1
        assert len(page["tools"]) <= 2
        names.extend(tool["name"] for tool in page["tools"])
        cursor = page.get("nextCursor")
        if cursor is None:
            break
    assert names == ["greet", "chatty", "measure", "filler_0", "filler_1", "filler_2"]
    assert pages == 3
    foreign, _ = await send(request(20, "tools/list", {"cursor": "not-ours"}))
    assert foreign["error"]["code"] == -32602


async def test_ctx_log_sends_what_the_request_level_allows(send: Send) -> None:
    response, notes = await send(
        tool_call(30, "chatty", {}, **{"io.modelcontextprotocol/logLevel": "info"})
    )
    assert response["result"]["content"] == [{"type": "text", "text": "said"}]
    assert [(n["params"]["level"], n["params"]["data"]) for n in notes] == [
        ("info", {"step": 1}),
        ("warning", "careful"),
    ]
    assert notes[1]["params"]["logger"] == "chatty"
    quiet, none = await send(tool_call(31, "chatty", {}))  # no log level: nothing is sent
    assert none == []
    assert "result" in quiet


async def test_a_tool_result_is_checked_against_the_output_schema(send: Send) -> None:
    fits, _ = await send(tool_call(40, "measure", {"fits": True}))
    assert fits["result"]["structuredContent"] == {"mm": 3}
    assert fits["result"]["content"] == [{"type": "text", "text": "3 mm"}]
    broken, _ = await send(tool_call(41, "measure", {"fits": False}))
    error = broken["error"]
    assert error["code"] == -32603
    assert error["message"].startswith("Tool measure returned an invalid result (ref ")
    assert "inches" not in error["message"]
