"""Hostile input, through both real transports: a stdio subprocess and uvicorn over HTTP.

Every message here is bytes a client may send. Each one gets a clear answer (a result, or a
JSON-RPC error naming the problem), never a 5xx, never a traceback in the log; the server
keeps serving the next request. The cases are those found by attacking the server: deep
nesting beside a huge or fractional id, integers beyond 64 bits, nesting past the
decoder's limits, numbers that overflow, invalid UTF-8, NaN, repeated keys, and, in the
handshake era, ids that are lists or objects.
"""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx2
import pytest

from legacy_schema import initialize_message, legacy_request
from wire_helpers import (
    META,
    SERVERS,
    HTTPServerProcess,
    StdioProcess,
    decode_reply,
    http_server_process,
    mcp_headers,
    stdio_server,
)

pytestmark = pytest.mark.subprocess

HOSTILE = SERVERS / "hostile.py"
BIG = 2**64  # the smallest integer orjson cannot read exactly
DEEP = 1000  # nesting the standard library's decoder cannot follow by default
META_TEXT = json.dumps(META)


def nested(depth: int) -> str:
    return "[" * depth + "]" * depth


def raw_call(id_text: str, tool: str, arguments_text: str, *, meta: str = META_TEXT) -> bytes:
    """A tools/call as the exact text a client might send."""
    return (
        f'{{"jsonrpc":"2.0","id":{id_text},"method":"tools/call","params":'
        f'{{"name":"{tool}","arguments":{arguments_text},"_meta":{meta}}}}}'
    ).encode()


#: (case, the message, what answers it): ``("result", text)`` for a tool's text result,
#: ``("error", code, id)`` for a JSON-RPC error with that id (None: no id could be read).
CASES: list[tuple[str, bytes, tuple[Any, ...]]] = [
    (
        "an id beyond 64 bits beside deep nesting",
        raw_call(str(BIG), "echo", f'{{"text":"hi","junk":{nested(DEEP)}}}'),
        ("result", "hi", BIG),
    ),
    (
        "a fractional id beside deep nesting",
        raw_call("1.5", "echo", f'{{"text":"hi","junk":{nested(DEEP)}}}'),
        ("error", -32600, None),
    ),
    (
        "an integer argument beyond 64 bits",
        raw_call("2", "exact", f'{{"n":{BIG + 1}}}'),
        ("result", str(BIG + 1), 2),
    ),
    (
        "nesting deeper than 1024 levels",
        raw_call("3", "echo", f'{{"text":"hi","junk":{nested(1100)}}}'),
        ("error", -32700, None),
    ),
    (
        "a number that overflows a double",
        raw_call("4", "echo", '{"text":"hi","junk":1e400}'),
        ("error", -32700, None),
    ),
    (
        "an integer of 5000 digits",
        raw_call("5", "echo", '{"text":"hi","junk":' + "9" * 5000 + "}"),
        ("error", -32700, None),
    ),
    ("NaN", raw_call("6", "echo", '{"text":"hi","junk":NaN}'), ("error", -32700, None)),
    (
        "Infinity",
        raw_call("7", "echo", '{"text":"hi","junk":-Infinity}'),
        ("error", -32700, None),
    ),
    (
        "invalid UTF-8 in a string",
        raw_call("8", "echo", '{"text":"bad XX byte"}').replace(b"XX", b"\xff"),
        ("error", -32700, None),
    ),
    (
        "a lone surrogate",
        raw_call("9", "echo", '{"text":"\\ud800"}'),
        ("error", -32700, None),
    ),
    (
        "repeated keys: the last value counts",
        raw_call("10", "echo", '{"text":"first","text":"second"}').replace(
            b'"id":10,', b'"id":10,"id":11,'
        ),
        ("result", "second", 11),
    ),
]


def headers_for(body: bytes) -> dict[str, str]:
    """What a client mirrors into headers for ``body``; undecodable bodies get the tool's."""
    try:
        message = json.loads(body)
        params = message["params"]
        arguments = params["arguments"]
    except (ValueError, KeyError, TypeError, RecursionError):
        return mcp_headers("tools/call", "echo")
    headers = mcp_headers("tools/call", params["name"])
    if params["name"] == "exact":
        headers["mcp-param-n"] = str(arguments["n"])
    return headers


def check_answer(message: dict[str, Any], expected: tuple[Any, ...]) -> None:
    if expected[0] == "result":
        _, text, request_id = expected
        assert type(message.get("id")) is int, message
        assert message["id"] == request_id, message
        assert message["result"]["content"] == [{"type": "text", "text": text}], message
        return
    _, code, request_id = expected
    assert message["error"]["code"] == code, message
    if request_id is None:
        assert "id" not in message, message
    else:
        assert message["id"] == request_id, message
    assert "Traceback" not in message["error"]["message"]


# --------------------------------------------------------------------------- stdio


@pytest.fixture
async def stdio() -> AsyncIterator[StdioProcess]:
    async with stdio_server([sys.executable, str(HOSTILE)]) as proc:
        yield proc


@pytest.mark.parametrize(("case", "body", "expected"), CASES, ids=[c[0] for c in CASES])
async def test_stdio_answers_each_hostile_line_and_keeps_serving(
    stdio: StdioProcess, case: str, body: bytes, expected: tuple[Any, ...]
) -> None:
    await stdio.write(body + b"\n")
    check_answer(json.loads(await stdio.read_line()), expected)
    await stdio.send(
        {"jsonrpc": "2.0", "id": "after", "method": "tools/call",
         "params": {"name": "echo", "arguments": {"text": case}, "_meta": META}}
    )  # fmt: skip
    after, _ = await stdio.read_until("after")
    assert after["result"]["content"][0]["text"] == case
    assert stdio.process.returncode is None
    assert b"Traceback" not in stdio.stderr, stdio.stderr.decode(errors="replace")


# --------------------------------------------------------------------------- HTTP


@pytest.fixture(scope="module")
def http(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HTTPServerProcess]:
    with http_server_process(
        tmp_path_factory.mktemp("hostile"), args=[sys.executable, str(HOSTILE)]
    ) as srv:
        yield srv


@pytest.fixture
async def client(http: HTTPServerProcess) -> AsyncIterator[httpx2.AsyncClient]:
    async with httpx2.AsyncClient(base_url=f"http://127.0.0.1:{http.port}", timeout=15) as c:
        yield c


@pytest.mark.parametrize(("case", "body", "expected"), CASES, ids=[c[0] for c in CASES])
async def test_http_answers_each_hostile_body_without_a_5xx(
    client: httpx2.AsyncClient,
    http: HTTPServerProcess,
    case: str,
    body: bytes,
    expected: tuple[Any, ...],
) -> None:
    response = await client.post("/mcp", content=body, headers=headers_for(body))
    assert response.status_code < 500, response.text
    assert response.status_code == (200 if expected[0] == "result" else 400), response.text
    check_answer(response.json(), expected)
    after = await client.post(
        "/mcp",
        json={"jsonrpc": "2.0", "id": 1, "method": "tools/call",
              "params": {"name": "echo", "arguments": {"text": case}, "_meta": META}},
        headers=mcp_headers("tools/call", "echo"),
    )  # fmt: skip
    assert decode_reply("tools/call", after).result["content"][0]["text"] == case
    assert "Traceback" not in http.log.read_text()


# --------------------------------------------------------------------------- round trips


async def test_an_eliciting_tool_binds_arguments_it_ignores_however_deep(
    stdio: StdioProcess,
) -> None:
    """The round's binding digests the arguments; an ignored one nested past orjson's 254
    levels used to fail that digest."""
    caps = '{"elicitation":{"form":{}}}'
    meta = META_TEXT.replace('"io.modelcontextprotocol/clientCapabilities": {}',
                             f'"io.modelcontextprotocol/clientCapabilities": {caps}')  # fmt: skip
    arguments = f'{{"junk":{nested(300)}}}'
    await stdio.write(raw_call('"r1"', "confirm", arguments, meta=meta) + b"\n")
    first = json.loads(await stdio.read_line())
    assert first["result"]["resultType"] == "input_required", first
    [key] = first["result"]["inputRequests"]
    retry = json.loads(raw_call('"r2"', "confirm", arguments, meta=meta))
    retry["params"]["inputResponses"] = {key: {"action": "accept", "content": {"ok": True}}}
    retry["params"]["requestState"] = first["result"]["requestState"]
    await stdio.send(retry)
    done, _ = await stdio.read_until("r2")
    assert done["result"]["content"] == [{"type": "text", "text": "accept ok=True"}]


# --------------------------------------------------------------------------- handshake era


LEGACY_ODD_IDS = [
    {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": [1]}},
    {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": {"a": 1}}},
    {"jsonrpc": "2.0", "id": [1], "result": {}},
    {"jsonrpc": "2.0", "id": {"x": 1}, "result": {}},
    {"jsonrpc": "2.0", "id": [1], "error": {"code": 1, "message": "no"}},
]


async def test_stdio_session_survives_ids_that_are_lists_or_objects() -> None:
    async with stdio_server([sys.executable, str(HOSTILE)]) as proc:
        await proc.send(initialize_message(0, "2025-11-25"))
        assert "result" in json.loads(await proc.read_line())
        for message in LEGACY_ODD_IDS:
            await proc.send(message)
        await proc.write(b'{"jsonrpc":"2.0","id":{"obj":1},"method":"ping"}\n')
        refused = json.loads(await proc.read_line())
        assert refused["error"]["code"] == -32600
        assert "id" not in refused
        await proc.send(legacy_request(1, "ping"))
        assert json.loads(await proc.read_line()) == {"jsonrpc": "2.0", "id": 1, "result": {}}
        assert proc.process.returncode is None
        assert b"Traceback" not in proc.stderr, proc.stderr.decode(errors="replace")


async def test_http_session_survives_ids_that_are_lists_or_objects(
    client: httpx2.AsyncClient, http: HTTPServerProcess
) -> None:
    headers = {"content-type": "application/json", "accept": "application/json, text/event-stream"}
    started = await client.post("/mcp", json=initialize_message(0, "2025-11-25"), headers=headers)
    assert started.status_code == 200
    session = {**headers, "mcp-session-id": started.headers["mcp-session-id"],
               "mcp-protocol-version": "2025-11-25"}  # fmt: skip
    for message in LEGACY_ODD_IDS:
        reply = await client.post("/mcp", json=message, headers=session)
        assert reply.status_code == 202, (message, reply.text)
    refused = await client.post(
        "/mcp", json={"jsonrpc": "2.0", "id": {"obj": 1}, "method": "ping"}, headers=session
    )
    assert refused.status_code == 400
    assert refused.json()["error"]["code"] == -32600
    ping = await client.post("/mcp", json=legacy_request(1, "ping"), headers=session)
    assert ping.json() == {"jsonrpc": "2.0", "id": 1, "result": {}}
    assert "Traceback" not in http.log.read_text()
