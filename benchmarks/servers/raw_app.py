"""The ceiling: no framework, no validation. A bare ASGI app (HTTP) and a bare asyncio line
loop (stdio) that parse with orjson, look the method up in a dict and answer the same JSON
as the frameworks. It checks nothing, so it marks how fast the transport alone can go.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Awaitable, Callable
from typing import Any

import orjson
from _shared import (
    BIG_TEXT,
    BIG_URI,
    FILLER_NAMES,
    GREET_QUESTION,
    SCENARIO_TOOLS,
    filler_description,
    greeting,
    parse_cli,
    receipt_of,
    serve_http,
)

Notify = Callable[[dict[str, Any]], Awaitable[None]]
COMPLETE = {"resultType": "complete"}
TOOLS = [
    {"name": name, "description": name, "inputSchema": {"type": "object"}}
    for name in SCENARIO_TOOLS
] + [
    {
        "name": name,
        "description": filler_description(name),
        "inputSchema": {
            "type": "object",
            "properties": {"a": {"type": "integer"}, "b": {"type": "string", "default": "x"}},
            "required": ["a"],
        },
    }
    for name in FILLER_NAMES
]


def _text(text: str) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": text}], **COMPLETE}


async def _call(params: dict[str, Any], notify: Notify) -> dict[str, Any]:
    name, arguments = params["name"], params.get("arguments") or {}
    if name == "echo":
        return _text(arguments["text"])
    if name == "place_order":
        receipt = receipt_of(arguments["order"])
        return {**_text(orjson.dumps(receipt).decode()), "structuredContent": receipt}
    if name == "progress":
        token = params["_meta"].get("progressToken")
        steps = arguments.get("steps", 10)
        for done in range(1, steps + 1):
            note = {"progressToken": token, "progress": done, "total": steps}
            await notify({"jsonrpc": "2.0", "method": "notifications/progress", "params": note})
        return _text("done")
    if name == "greet":
        answer = (params.get("inputResponses") or {}).get("name")
        if answer and answer.get("action") == "accept":
            return _text(greeting(answer["content"]["name"]))
        schema = {"type": "object", "properties": {"name": {"type": "string"}}}
        ask = {"mode": "form", "message": GREET_QUESTION, "requestedSchema": schema}
        return {
            "resultType": "input_required",
            "inputRequests": {"name": {"method": "elicitation/create", "params": ask}},
            "requestState": "raw",
        }
    raise KeyError(name)


async def _list(params: dict[str, Any], notify: Notify) -> dict[str, Any]:
    return {"tools": TOOLS, **COMPLETE}


async def _read(params: dict[str, Any], notify: Notify) -> dict[str, Any]:
    contents = [{"uri": BIG_URI, "mimeType": "text/plain", "text": BIG_TEXT}]
    return {"contents": contents, **COMPLETE}


METHODS = {"tools/call": _call, "tools/list": _list, "resources/read": _read}


async def answer(message: dict[str, Any], notify: Notify) -> dict[str, Any]:
    result = await METHODS[message["method"]](message["params"], notify)
    return {"jsonrpc": "2.0", "id": message["id"], "result": result}


# -- HTTP -----------------------------------------------------------------------------------

JSON_HEADERS = [(b"content-type", b"application/json")]
SSE_HEADERS = [(b"content-type", b"text/event-stream"), (b"cache-control", b"no-cache")]


async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    if scope["type"] != "http":
        if scope["type"] == "lifespan":
            while True:
                kind = (await receive())["type"]
                done = kind == "lifespan.shutdown"
                await send({"type": "lifespan.shutdown.complete" if done else kind + ".complete"})
                if done:
                    return
        return
    body = b""
    while True:
        chunk = await receive()
        body += chunk.get("body", b"")
        if not chunk.get("more_body"):
            break
    streaming = False

    async def notify(note: dict[str, Any]) -> None:
        nonlocal streaming
        if not streaming:
            streaming = True
            await send({"type": "http.response.start", "status": 200, "headers": SSE_HEADERS})
        event = b"data: " + orjson.dumps(note) + b"\n\n"
        await send({"type": "http.response.body", "body": event, "more_body": True})

    response = orjson.dumps(await answer(orjson.loads(body), notify))
    if streaming:
        await send({"type": "http.response.body", "body": b"data: " + response + b"\n\n"})
        return
    headers = [*JSON_HEADERS, (b"content-length", str(len(response)).encode())]
    await send({"type": "http.response.start", "status": 200, "headers": headers})
    await send({"type": "http.response.body", "body": response})


# -- stdio ----------------------------------------------------------------------------------


async def serve_stdio() -> None:
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=64 * 1024 * 1024)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    transport, protocol = await loop.connect_write_pipe(
        lambda: asyncio.streams.FlowControlMixin(loop), sys.stdout
    )
    writer = asyncio.StreamWriter(transport, protocol, None, loop)

    async def notify(note: dict[str, Any]) -> None:
        writer.write(orjson.dumps(note) + b"\n")

    async def handle(line: bytes) -> None:
        writer.write(orjson.dumps(await answer(orjson.loads(line), notify)) + b"\n")

    tasks: set[asyncio.Task[None]] = set()
    while line := await reader.readline():
        task = asyncio.create_task(handle(line))
        tasks.add(task)
        task.add_done_callback(tasks.discard)
        await writer.drain()
    await asyncio.gather(*tasks)
    await writer.drain()


if __name__ == "__main__":
    transport, port, _sse = parse_cli()
    if transport == "stdio":
        asyncio.run(serve_stdio())
    else:
        serve_http(app, port)
