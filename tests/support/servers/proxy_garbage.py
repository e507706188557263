"""A stdio server that misbehaves, for the proxy's and the stdio client's bad-input tests.

It speaks only the handshake era (``2025-06-18``): a request with 2026-07-28 ``_meta``
gets -32601, as from a server that predates it. Then it answers badly: ``tools/list``
mixes good tools with entries that are no tools at all, ``resources/list`` answers
something that is not a list, ``after_noise`` writes a line that is not JSON before its
answer, ``nonsense`` answers a string where a result object belongs, ``no_content`` a
result without ``content``.
"""

from __future__ import annotations

import json
import sys

TOOLS = [
    {"name": "after_noise", "inputSchema": {"type": "object"}},
    {"name": "nonsense", "inputSchema": {"type": "object"}},
    {"name": "no_content", "inputSchema": {"type": "object"}},
    "not a tool",
    {"name": 5, "inputSchema": {"type": "object"}},
    {"name": "no_schema"},
    {"name": "bad_header", "inputSchema": {
        "type": "object", "properties": {"p": {"type": "number", "x-mcp-header": "Score"}}}},
]  # fmt: skip


def answer(request_id: object, result: object) -> None:
    write({"jsonrpc": "2.0", "id": request_id, "result": result})


def write(message: object) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def serve() -> None:
    for line in sys.stdin:
        message = json.loads(line)
        method, request_id = message.get("method"), message.get("id")
        params = message.get("params") or {}
        if request_id is None or method is None:
            continue  # a notification, or an answer
        if "io.modelcontextprotocol/protocolVersion" in (params.get("_meta") or {}):
            error = {"code": -32601, "message": f"Method not found: {method}"}
            write({"jsonrpc": "2.0", "id": request_id, "error": error})
        elif method == "initialize":
            capabilities = {"tools": {"listChanged": True}, "resources": {}}
            answer(request_id, {"protocolVersion": "2025-06-18", "capabilities": capabilities,
                                "serverInfo": {"name": "garbage", "version": "0.0.1"}})  # fmt: skip
        elif method == "tools/list":
            answer(request_id, {"tools": TOOLS})
        elif method == "resources/list":
            answer(request_id, {"resources": "not a list"})
        elif method == "resources/templates/list":
            answer(request_id, {"resourceTemplates": []})
        elif method == "tools/call" and params.get("name") == "after_noise":
            sys.stdout.write("this line is not JSON\n")
            said = {"type": "text", "text": "answered after a line of noise"}
            answer(request_id, {"content": [said]})
        elif method == "tools/call" and params.get("name") == "nonsense":
            answer(request_id, "just a string")
        elif method == "tools/call" and params.get("name") == "no_content":
            answer(request_id, {"foo": 1})
        else:
            answer(request_id, {})


if __name__ == "__main__":
    serve()
