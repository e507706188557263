"""Scenarios: the exact wire requests every server is sent, and how an answer is checked.

Standard library only. Imported by the orchestrator (``run.py``) and the load drivers; the
servers in ``servers/`` import ``servers/_shared.py`` for the matching constants.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE / "servers"))

from _shared import (  # noqa: E402
    BIG_SIZE,
    BIG_URI,
    ECHO_TEXT,
    GREET_QUESTION,
    PROGRESS_STEPS,
    TOOL_COUNT,
    greeting,
    receipt_of,
)

PROTOCOL_VERSION = "2026-07-28"
CLIENT_INFO = {"name": "mcpserve-bench", "version": "1.0.0"}
PROGRESS_TOKEN = "bench-progress"
ORDER = {"sku": "BENCH-42", "quantity": 3, "unit_price": 19.99, "tags": ["fast", "bench"]}
ANSWER_NAME = "Alice"

JSONDict = dict[str, Any]


class CheckFailed(AssertionError):
    """A server answered a benchmark request wrongly: nothing is measured then."""


def client_meta(capabilities: JSONDict | None = None, progress: bool = False) -> JSONDict:
    """The full per-request ``_meta`` of a 2026-07-28 client."""
    meta: JSONDict = {
        "io.modelcontextprotocol/protocolVersion": PROTOCOL_VERSION,
        "io.modelcontextprotocol/clientInfo": CLIENT_INFO,
        "io.modelcontextprotocol/clientCapabilities": capabilities or {},
    }
    if progress:
        meta["progressToken"] = PROGRESS_TOKEN
    return meta


def _text(result: JSONDict) -> str:
    blocks = result.get("content") or []
    return "".join(b.get("text", "") for b in blocks if isinstance(b, dict))


def _expect(condition: bool, what: str, result: Any) -> None:
    if not condition:
        raise CheckFailed(f"{what}; got {json.dumps(result)[:400]}")


def _complete(result: JSONDict) -> None:
    _expect(not result.get("isError"), "tool reported an error", result)
    _expect(result.get("resultType", "complete") == "complete", "resultType not complete", result)


def check_echo(result: JSONDict) -> None:
    _complete(result)
    _expect(_text(result) == ECHO_TEXT, "echo text differs", result)


def check_model(result: JSONDict) -> None:
    _complete(result)
    _expect(
        result.get("structuredContent") == receipt_of(ORDER), "wrong structured receipt", result
    )


def check_list(result: JSONDict) -> None:
    tools = result.get("tools") or []
    _expect(len(tools) == TOOL_COUNT, f"expected {TOOL_COUNT} tools in one page", len(tools))
    _expect(not result.get("nextCursor"), "tools/list paginated", result.get("nextCursor"))
    _expect(all("inputSchema" in t for t in tools), "a tool has no inputSchema", tools[:1])


def check_resource(result: JSONDict) -> None:
    contents = result.get("contents") or [{}]
    text = contents[0].get("text", "")
    _expect(len(contents) == 1 and contents[0].get("uri") == BIG_URI, "wrong resource", contents)
    _expect(len(text) == BIG_SIZE, f"resource text is {len(text)} characters", BIG_SIZE)


def check_progress(result: JSONDict) -> None:
    _complete(result)
    _expect(_text(result) == "done", "progress tool did not finish", result)


def check_input_required(result: JSONDict) -> None:
    _expect(result.get("resultType") == "input_required", "no input_required result", result)
    requests = result.get("inputRequests") or {}
    _expect(len(requests) == 1, "expected exactly one input request", result)
    (request,) = requests.values()
    _expect(request.get("method") == "elicitation/create", "not an elicitation", request)
    _expect(request["params"].get("message") == GREET_QUESTION, "wrong question", request)
    _expect(isinstance(result.get("requestState"), str), "no requestState", result)


def check_greeting(result: JSONDict) -> None:
    _complete(result)
    _expect(_text(result) == greeting(ANSWER_NAME), "wrong greeting", result)


@dataclass(frozen=True)
class Scenario:
    key: str
    title: str
    method: str
    params: JSONDict
    check: Callable[[JSONDict], None]
    capabilities: JSONDict = field(default_factory=dict)
    progress: bool = False  # expects PROGRESS_STEPS notifications before the result
    two_rounds: bool = False  # input_required, then a retry with the answer

    @property
    def mcp_name(self) -> str | None:
        """The ``Mcp-Name`` header value (tools/call name, resources/read URI)."""
        return self.params.get("name") or self.params.get("uri")

    def params_with_meta(self) -> JSONDict:
        meta = client_meta(self.capabilities, self.progress)
        return {**self.params, "_meta": meta}

    def body(self, request_id: int | str = 1) -> bytes:
        message = {"jsonrpc": "2.0", "id": request_id, "method": self.method}
        message["params"] = self.params_with_meta()
        return json.dumps(message, separators=(",", ":")).encode()

    def retry_params(self, first: JSONDict) -> JSONDict:
        """Round 2 of ``input_required``: the same request, the answer and the state."""
        (key,) = first["inputRequests"]
        answer = {"action": "accept", "content": {"name": ANSWER_NAME}}
        params = self.params_with_meta()
        params["inputResponses"] = {key: answer}
        params["requestState"] = first["requestState"]
        return params

    def second_round(self) -> Scenario:
        """How round 2 of a two-round scenario is checked: the final greeting."""
        return replace(self, check=check_greeting, two_rounds=False)

    def headers(self) -> list[tuple[str, str]]:
        """The full 2026-07-28 Streamable HTTP request headers."""
        headers = [
            ("Content-Type", "application/json"),
            ("Accept", "application/json, text/event-stream"),
            ("MCP-Protocol-Version", PROTOCOL_VERSION),
            ("Mcp-Method", self.method),
        ]
        if self.mcp_name is not None:
            headers.append(("Mcp-Name", self.mcp_name))
        return headers


ELICIT = {"elicitation": {"form": {}}}

SCENARIOS: dict[str, Scenario] = {
    s.key: s
    for s in (
        Scenario(
            "echo",
            "tools/call echo",
            "tools/call",
            {"name": "echo", "arguments": {"text": ECHO_TEXT}},
            check_echo,
        ),
        Scenario(
            "model",
            "tools/call pydantic model arg + structured result",
            "tools/call",
            {"name": "place_order", "arguments": {"order": ORDER}},
            check_model,
        ),
        Scenario("list50", "tools/list (50 tools)", "tools/list", {}, check_list),
        Scenario(
            "resource",
            "resources/read 1 MiB text",
            "resources/read",
            {"uri": BIG_URI},
            check_resource,
        ),
        Scenario(
            "progress",
            "tools/call with 10 progress notifications",
            "tools/call",
            {"name": "progress", "arguments": {"steps": PROGRESS_STEPS}},
            check_progress,
            progress=True,
        ),
        Scenario(
            "input_required",
            "input_required round trip (2 requests)",
            "tools/call",
            {"name": "greet", "arguments": {}},
            check_input_required,
            capabilities=ELICIT,
            two_rounds=True,
        ),
    )
}


def is_progress(message: Any) -> bool:
    return isinstance(message, dict) and message.get("method") == "notifications/progress"


def check_exchange(scenario: Scenario, messages: list[JSONDict]) -> JSONDict:
    """Check every message a request produced (notifications, then the response)."""
    if not messages:
        raise CheckFailed("no answer")
    response = messages[-1]
    if "error" in response or "result" not in response:
        raise CheckFailed(f"JSON-RPC error: {json.dumps(response)[:400]}")
    notes = [m for m in messages[:-1] if is_progress(m)]
    if scenario.progress:
        values = [n["params"]["progress"] for n in notes]
        _expect(values == list(range(1, PROGRESS_STEPS + 1)), "progress notifications", values)
        _expect(all(n["params"]["progressToken"] == PROGRESS_TOKEN for n in notes), "token", notes)
    result: JSONDict = response["result"]
    scenario.check(result)
    return result


def parse_sse(body: bytes) -> list[JSONDict]:
    """The JSON-RPC messages of a ``text/event-stream`` body (``data:`` lines)."""
    messages: list[JSONDict] = []
    for event in body.replace(b"\r\n", b"\n").split(b"\n\n"):
        data = [line[5:].strip() for line in event.split(b"\n") if line.startswith(b"data:")]
        if data:
            messages.append(json.loads(b"\n".join(data)))
    return messages
