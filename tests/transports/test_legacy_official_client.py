"""The official ``mcp`` SDK client (2.3) in every mode against one dual-era server.

Each test connects to the same server kind (``tests/support/servers/legacy_dual.py``: a stdio
subprocess, or uvicorn on a free 127.0.0.1 port) with ``mode="legacy"`` (``initialize``,
the 2025-11-25 wire), ``mode="auto"`` (``server/discover`` first) and
``mode="2026-07-28"`` (pinned), and both eras must get real answers from the same handler
code: tools with structured content, resources and templates, prompts, completion, and
questions to the client (elicitation, sampling, roots) through the client's callbacks.

Against our server ``auto`` negotiates **2026-07-28**: ``server/discover`` answers, so the
client never falls back to ``initialize``; the tests assert it.

Nothing the server sends escapes validation: stdio runs behind a tap
(``tests/support/servers/legacy_tap.py``) that logs every line, and the HTTP server records every
exchange (``MCPSERVE_TEST_WIRE_LOG``). After each connection the whole conversation is
checked, legacy messages against the 2025-11-25 schema and modern ones against the
2026-07-28 schema (``legacy_schema.EraChecker``).
"""

from __future__ import annotations

import asyncio
import itertools
import json
import sys
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, MCPError, StdioServerParameters
from mcp.shared.exceptions import MCPDeprecationWarning
from mcp.types import (
    CreateMessageResult,
    ElicitResult,
    ListRootsResult,
    PromptReference,
    ResourceTemplateReference,
    Root,
    TextContent,
    TextResourceContents,
)

from legacy_schema import LEGACY_DUAL, EraChecker, SSEParser
from servers.legacy_dual import INSTRUCTIONS, NAME, VERSION
from wire_helpers import ROOT, SERVERS, TIMEOUT, HTTPServerProcess, check_line, http_server_process

pytestmark = pytest.mark.subprocess

MODES = ["legacy", "auto", "2026-07-28"]
TAP = SERVERS / "legacy_tap.py"


@dataclass
class Target:
    """Where the official client connects, and how to check what the server sent it."""

    kind: str  # "stdio" or "http"
    directory: Path
    http: HTTPServerProcess | None = None
    wire_log: Path | None = None
    _count: itertools.count[int] = field(default_factory=itertools.count)

    def connect_to(self) -> tuple[Any, Any]:
        """What to give ``Client(...)``, and a token for :meth:`validate`."""
        if self.kind == "stdio":
            log = self.directory / f"tap-{next(self._count)}.log"
            params = StdioServerParameters(
                command=sys.executable,
                args=[str(TAP), str(log), sys.executable, str(LEGACY_DUAL)],
                cwd=str(ROOT),
            )
            return params, log
        assert self.http is not None
        assert self.wire_log is not None
        return self.http.url, _line_count(self.wire_log)

    async def validate(self, token: Any) -> int:
        """Check every message the server sent on this connection; returns how many."""
        if self.kind == "stdio":
            return validate_tap(token)
        assert self.wire_log is not None
        return await validate_http(self.wire_log, token)


def _line_count(path: Path) -> int:
    return len(path.read_text().splitlines()) if path.exists() else 0


def validate_tap(log: Path) -> int:
    checker = EraChecker()
    received = 0
    for raw in log.read_text().splitlines():
        entry = json.loads(raw)
        if entry["dir"] == ">":
            checker.sent(json.loads(entry["line"]))
        else:
            checker.received(check_line(entry["line"].encode()))
            received += 1
    return received


async def validate_http(log: Path, offset: int) -> int:
    """Wait (bounded) until every exchange since ``offset`` ended, then check them all."""
    deadline = time.monotonic() + TIMEOUT
    while True:
        text = await asyncio.to_thread(log.read_text)
        records = [json.loads(line) for line in text.splitlines()[offset:]]
        started = {r["n"] for r in records if r["event"] == "start"}
        ended = {r["n"] for r in records if r["event"] == "end"}
        if started <= ended:
            break
        assert time.monotonic() < deadline, f"exchanges never ended: {started - ended}"
        await asyncio.sleep(0.02)
    received = 0
    for record in records:
        if record["event"] == "end":
            received += validate_exchange(record)
    return received


def validate_exchange(record: dict[str, Any]) -> int:
    checker = EraChecker()
    headers = record["request_headers"]
    if record["body"]:
        checker.sent(json.loads(record["body"]))
    if "mcp-session-id" in headers:  # inside a legacy session
        checker.version = headers.get("mcp-protocol-version", "2025-03-26")
    content_type = record.get("response_headers", {}).get("content-type", "")
    body = record["response_body"]
    if content_type.startswith("application/json"):
        checker.received(json.loads(body))
        return 1
    if content_type.startswith("text/event-stream"):
        events = SSEParser().feed(body)
        for event in events:
            if event.message is not None:
                checker.received(event.message)
        return sum(event.message is not None for event in events)
    assert not body, record
    return 0


@pytest.fixture(scope="module")
def http_dual(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[HTTPServerProcess, Path]]:
    directory = tmp_path_factory.mktemp("official-legacy-http")
    log = directory / "wire.jsonl"
    env = {"MCPSERVE_TEST_WIRE_LOG": str(log)}
    with http_server_process(directory, args=[sys.executable, str(LEGACY_DUAL)], env=env) as srv:
        yield srv, log


@pytest.fixture(params=["stdio", "http"])
def target(request: pytest.FixtureRequest, tmp_path: Path) -> Target:
    if request.param == "stdio":
        return Target("stdio", tmp_path)
    server, log = request.getfixturevalue("http_dual")
    return Target("http", tmp_path, server, log)


@asynccontextmanager
async def connected(target: Target, mode: str, **options: Any) -> AsyncIterator[Client]:
    """A connected official client; afterwards the whole conversation is validated."""
    where, token = target.connect_to()
    async with Client(where, mode=mode, read_timeout_seconds=TIMEOUT, **options) as client:
        yield client
    assert await target.validate(token) > 0


def only_text(result: Any) -> str:
    assert len(result.content) == 1, result
    block = result.content[0]
    assert isinstance(block, TextContent)
    return block.text


async def eventually(condition: Any, what: str) -> None:
    deadline = time.monotonic() + TIMEOUT
    while not condition():
        assert time.monotonic() < deadline, f"never happened: {what}"
        await asyncio.sleep(0.02)


# --------------------------------------------------------------------------- tests


async def test_connect_negotiates_per_mode(target: Target) -> None:
    for mode in MODES:
        async with connected(target, mode) as client:
            if mode == "legacy":
                assert client.protocol_version == "2025-11-25"
                assert client.session.initialize_result is not None
                assert client.server_capabilities.logging is not None
            else:
                # "auto" probes server/discover, which answers: it stays on 2026-07-28.
                assert client.protocol_version == "2026-07-28"
            if mode == "2026-07-28":
                assert client.server_info is None  # pinned: no handshake, no discover
            else:
                assert client.server_info is not None
                assert (client.server_info.name, client.server_info.version) == (NAME, VERSION)
                assert client.instructions == INSTRUCTIONS
                assert client.server_capabilities.tools is not None
                assert client.server_capabilities.completions is not None
            listed = await client.list_tools()  # and the connection answers
            assert "add" in [tool.name for tool in listed.tools]


async def test_tools(target: Target) -> None:
    progress: list[tuple[float, float | None, str | None]] = []

    async def on_progress(done: float, total: float | None, message: str | None) -> None:
        progress.append((done, total, message))

    for mode in MODES:
        legacy = mode == "legacy"
        progress.clear()
        async with connected(target, mode) as client:
            listed = await client.list_tools()
            tools = {tool.name: tool for tool in listed.tools}
            assert {"add", "count", "echo", "fail", "ask_name", "touch"} <= set(tools)
            assert tools["add"].description == "Add two integers (structured result)."
            assert tools["add"].output_schema is not None
            assert tools["add"].output_schema["properties"] == {"total": {"type": "integer"}}
            if legacy:  # legacy output schemas are objects: the number comes wrapped
                assert tools["count"].output_schema == {
                    "type": "object",
                    "properties": {"result": {"type": "integer"}},
                    "required": ["result"],
                }
            else:
                assert tools["count"].output_schema == {"type": "integer"}

            added = await client.call_tool("add", {"a": 2, "b": 3})
            assert added.is_error is False
            assert added.structured_content == {"total": 5}
            assert only_text(added) == '{"total":5}'
            counted = await client.call_tool("count", {"n": 9})
            assert only_text(counted) == "9"
            assert counted.structured_content == ({"result": 9} if legacy else 9)
            echoed = await client.call_tool("echo", {"text": "héllo"})
            assert only_text(echoed) == "héllo"
            failed = await client.call_tool("fail", {"reason": mode})
            assert failed.is_error is True
            assert only_text(failed) == f"failed: {mode}"
            with pytest.raises(MCPError) as caught:
                await client.call_tool("no_such_tool", {})
            assert caught.value.code == -32602
            done = await client.call_tool(
                "progressive", {"steps": 2}, progress_callback=on_progress
            )
            assert only_text(done) == "done after 2"
        assert progress == [(1, 2, "step 1"), (2, 2, "step 2")]


async def test_resources(target: Target) -> None:
    for mode in MODES:
        async with connected(target, mode) as client:
            listed = await client.list_resources()
            assert [(str(r.uri), r.name, r.mime_type) for r in listed.resources] == [
                ("file:///a.txt", "a_txt", "text/plain"),
                ("watched://doc", "watched", "text/plain"),
            ]
            templates = await client.list_resource_templates()
            assert [(t.uri_template, t.name) for t in templates.resource_templates] == [
                ("notes://{note_id}", "note")
            ]
            read = await client.read_resource("file:///a.txt")
            contents = read.contents[0]
            assert isinstance(contents, TextResourceContents)
            assert (contents.text, contents.mime_type) == ("hello from a.txt", "text/plain")
            note = await client.read_resource("notes://n7")
            assert isinstance(note.contents[0], TextResourceContents)
            assert note.contents[0].text == "note n7"
            with pytest.raises(MCPError) as caught:
                await client.read_resource("file:///missing.txt")
            # Resource not found: -32002 in the legacy era, -32602 in 2026-07-28.
            assert caught.value.code == (-32002 if mode == "legacy" else -32602)
            assert caught.value.data == {"uri": "file:///missing.txt"}


async def test_prompts_and_completion(target: Target) -> None:
    for mode in MODES:
        async with connected(target, mode) as client:
            prompts = await client.list_prompts()
            assert [prompt.name for prompt in prompts.prompts] == ["greet"]
            arguments = prompts.prompts[0].arguments or []
            assert [(a.name, a.required) for a in arguments] == [("who", True)]
            rendered = await client.get_prompt("greet", {"who": "Bob"})
            message = rendered.messages[0]
            assert message.role == "user"
            assert isinstance(message.content, TextContent)
            assert message.content.text == "Hello, Bob!"
            with pytest.raises(MCPError) as caught:
                await client.get_prompt("nope", {})
            assert caught.value.code == -32602

            completed = await client.complete(
                PromptReference(type="ref/prompt", name="greet"), {"name": "who", "value": "al"}
            )
            assert completed.completion.values == ["alice", "albert"]
            completed = await client.complete(
                ResourceTemplateReference(type="ref/resource", uri="notes://{note_id}"),
                {"name": "note_id", "value": "n"},
            )
            assert completed.completion.values == ["n1", "n2"]
            assert completed.completion.total == 3


async def test_elicitation_sampling_and_roots(target: Target) -> None:
    asked: list[str] = []

    async def elicit(context: Any, params: Any) -> ElicitResult:
        asked.append(f"elicit:{params.message}")
        return ElicitResult(action="accept", content={"name": "Ann"})

    async def sample(context: Any, params: Any) -> CreateMessageResult:
        asked.append(f"sample:{params.messages[0].content.text}")
        return CreateMessageResult(
            role="assistant", content=TextContent(type="text", text="sampled"), model="m-1"
        )

    async def roots(context: Any) -> ListRootsResult:
        asked.append("roots")
        return ListRootsResult(roots=[Root(uri="file:///home/ann", name="home")])

    callbacks = {
        "elicitation_callback": elicit,
        "sampling_callback": sample,
        "list_roots_callback": roots,
    }
    for mode in MODES:
        asked.clear()
        async with connected(target, mode, **callbacks) as client:
            assert only_text(await client.call_tool("ask_name", {})) == "Hello, Ann!"
            reply = await client.call_tool("ask_llm", {"question": "What is 2+2?"})
            assert only_text(reply) == "LLM said: sampled (m-1)"
            reply = await client.call_tool("ask_roots", {})
            assert only_text(reply) == "Roots: file:///home/ann"
            assert only_text(await client.call_tool("ask_all", {})) == "Ann|sampled|1 roots"
        assert sorted(asked) == sorted(
            [
                "elicit:What is your name?",
                "sample:What is 2+2?",
                "roots",
                "elicit:Who are you?",
                "sample:Say hi",
                "roots",
            ]
        )

        # Without the callbacks the client declares no capability, and is not asked.
        async with connected(target, mode) as client:
            for tool, arguments in (
                ("ask_name", {}),
                ("ask_llm", {"question": "q"}),
                ("ask_roots", {}),
            ):
                with pytest.raises(MCPError) as caught:
                    await client.call_tool(tool, arguments)
                assert caught.value.code == -32021, (mode, tool)


async def test_legacy_session_features(target: Target) -> None:
    """What only the legacy session has: ping, logging/setLevel, resource subscriptions and
    list-changed notifications (stdout, or the client's GET stream over HTTP)."""
    logs: list[tuple[str, Any]] = []
    notes: list[str] = []

    async def on_log(params: Any) -> None:
        logs.append((params.level, params.data))

    async def on_message(message: Any) -> None:
        method = getattr(message, "method", None)
        if isinstance(method, str):
            notes.append(method)

    async with connected(
        target, "legacy", logging_callback=on_log, message_handler=on_message
    ) as client:
        with pytest.warns(MCPDeprecationWarning):
            await client.send_ping()
        with pytest.warns(MCPDeprecationWarning):
            await client.set_logging_level("warning")
        assert only_text(await client.call_tool("chatty", {})) == "warning,error"
        assert logs == [("warning", "warning message"), ("error", "error message")]

        with pytest.warns(MCPDeprecationWarning):
            await client.subscribe_resource("watched://doc")
        await client.call_tool("touch", {"uri": "watched://doc"})
        await eventually(lambda: "notifications/resources/updated" in notes, "updated")
        name = f"dyn_{target.kind}"
        await client.call_tool("add_tool", {"name": name})
        await eventually(lambda: "notifications/tools/list_changed" in notes, "list_changed")
        listed = await client.list_tools()
        assert name in [tool.name for tool in listed.tools]
        assert only_text(await client.call_tool(name, {})) == f"I am {name}"
        with pytest.warns(MCPDeprecationWarning):
            await client.unsubscribe_resource("watched://doc")
