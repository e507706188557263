"""The stdio transport on the wire: a real subprocess, raw bytes in, stdout lines out.

Every line the server writes is checked to be exactly one compact JSON object and is
validated against the official 2026-07-28 schema (see ``wire_helpers.StdioProcess``).
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from mcpserve import Client
from wire_helpers import (
    BASIC,
    ROOT,
    VERSION,
    call,
    check_line,
    child_env,
    encode,
    request,
    same_id,
    stdio_server,
    wait_for_file,
)
from wire_schema import check, check_response

pytestmark = pytest.mark.subprocess


def text_of(response: dict) -> str:
    return response["result"]["content"][0]["text"]


# --------------------------------------------------------------------------- happy path


async def test_discover_list_call_read_get_complete() -> None:
    async with stdio_server() as proc:
        await proc.send(request("d-1", "server/discover"))
        discover, _ = await proc.read_until("d-1")
        result = discover["result"]
        assert VERSION in result["supportedVersions"]
        assert set(result["capabilities"]) >= {"tools", "resources", "prompts", "completions"}
        assert result["instructions"] == "A server for wire tests."
        assert result["_meta"]["io.modelcontextprotocol/serverInfo"] == {
            "name": "wire-test",
            "version": "1.2.3",
        }

        await proc.send(request(1, "tools/list"))
        listed, _ = await proc.read_until(1)
        tools = {tool["name"]: tool for tool in listed["result"]["tools"]}
        assert {"add", "echo", "sleepy", "execute_sql", "deploy"} <= set(tools)
        assert tools["add"]["inputSchema"]["required"] == ["a", "b"]
        assert tools["execute_sql"]["inputSchema"]["properties"]["region"]["x-mcp-header"] == (
            "Region"
        )
        assert listed["result"]["cacheScope"] in ("public", "private")

        await proc.send(call(2, "add", {"a": 2, "b": 40}))
        added, _ = await proc.read_until(2)
        assert added["result"]["structuredContent"] == {"total": 42}
        assert json.loads(text_of(added)) == {"total": 42}
        assert added["result"]["resultType"] == "complete"

        await proc.send(request(3, "resources/read", {"uri": "notes://abc"}))
        read, _ = await proc.read_until(3)
        assert read["result"]["contents"] == [
            {"uri": "notes://abc", "mimeType": "text/plain", "text": "note abc"}
        ]

        await proc.send(request(4, "prompts/get", {"name": "greet", "arguments": {"who": "Ann"}}))
        prompt, _ = await proc.read_until(4)
        assert prompt["result"]["messages"] == [
            {"role": "user", "content": {"type": "text", "text": "Hello, Ann!"}}
        ]

        await proc.send(
            request(
                5,
                "completion/complete",
                {
                    "ref": {"type": "ref/prompt", "name": "greet"},
                    "argument": {"name": "who", "value": "al"},
                },
            )
        )
        completed, _ = await proc.read_until(5)
        assert completed["result"]["completion"]["values"] == ["alice", "albert"]

        await proc.send(call(6, "fail", {"reason": "nope"}))
        failed, _ = await proc.read_until(6)
        assert failed["result"]["isError"] is True
        assert text_of(failed) == "failed: nope"

        await proc.send(call(7, "no_such_tool", {}))
        unknown, _ = await proc.read_until(7)
        assert unknown["error"]["code"] == -32602

        await proc.send(request(8, "resources/read", {"uri": "file:///missing.txt"}))
        missing, _ = await proc.read_until(8)
        assert missing["error"]["code"] == -32602
        assert missing["error"]["data"] == {"uri": "file:///missing.txt"}


async def test_protocol_errors_on_stdio() -> None:
    async with stdio_server() as proc:
        await proc.send(request(1, "resources/subscribe", {"uri": "file:///a.txt"}))
        response, _ = await proc.read_until(1)
        assert response["error"]["code"] == -32601

        await proc.send({"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}})
        response, _ = await proc.read_until(2)
        assert response["error"]["code"] == -32602

        bad_version = request(3, "tools/list")
        bad_version["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"] = "1900-01-01"
        await proc.send(bad_version)
        response, _ = await proc.read_until(3)
        check("UnsupportedProtocolVersionError", response)
        assert response["error"]["data"]["requested"] == "1900-01-01"
        assert VERSION in response["error"]["data"]["supported"]

        await proc.send({
            "jsonrpc": "2.0",
            "id": 4,
            "method": "initialize",
            "params": {
                "protocolVersion": "1999-01-01",
                "capabilities": {},
                "clientInfo": {"name": "old", "version": "1"},
            },
        })  # fmt: skip
        # A dual-era server answers a legacy initialize with its newest legacy version.
        response = json.loads(await proc.read_line())  # a legacy answer: 2025-11-25 shapes
        assert response["id"] == 4
        assert response["result"]["protocolVersion"] == "2025-11-25"
        assert "resultType" not in response["result"]


async def test_progress_notifications_precede_the_response() -> None:
    async with stdio_server() as proc:
        await proc.send(call(1, "progressive", {"steps": 3}, progressToken="tok-1"))
        response, before = await proc.read_until(1)
        assert text_of(response) == "done after 3"
        assert [m["method"] for m in before] == ["notifications/progress"] * 3
        assert [m["params"]["progress"] for m in before] == [1, 2, 3]
        assert {m["params"]["progressToken"] for m in before} == {"tok-1"}

        # Without a progress token: no notification at all.
        await proc.send(call(2, "progressive", {"steps": 3}))
        response, before = await proc.read_until(2)
        assert before == []


async def test_every_line_is_one_compact_json_message() -> None:
    tricky = 'line1\nline2\r\n\u2028\u2029 "quoted" \\ caf\u00e9 \U0001f600 \x00\x1f'
    async with stdio_server() as proc:
        await proc.send(call(1, "echo", {"text": tricky}), call(2, "echo", {"text": "x" * 200_000}))
        raw_lines = [await proc.read_line(), await proc.read_line()]
        messages = [proc.validate(line) for line in raw_lines]
        by_id = {m["id"]: m for m in messages}
        assert text_of(by_id[1]) == tricky
        assert text_of(by_id[2]) == "x" * 200_000
        for line in raw_lines:
            assert line.count(b"\n") == 1
            assert line.endswith(b"\n")
            assert b"\r" not in line


# --------------------------------------------------------------------------- concurrency


async def test_slow_tool_does_not_block_fast_one(tmp_path: Path) -> None:
    async with stdio_server(env={"MCPSERVE_TEST_MARKER_DIR": str(tmp_path)}) as proc:
        await proc.send(call("slow", "gated", {"tag": "g"}))
        await wait_for_file(tmp_path / "g.started")
        await proc.send(call("fast", "echo", {"text": "quick"}))
        first = await proc.read()
        assert first["id"] == "fast"
        assert text_of(first) == "quick"
        (tmp_path / "g.release").write_text("go")
        second = await proc.read()
        assert second["id"] == "slow"
        assert text_of(second) == "released g"


async def test_many_concurrent_requests_are_correlated_by_id() -> None:
    async with stdio_server() as proc:
        count = 100
        await proc.send(
            *(
                call(i, "sleepy", {"seconds": (count - i) / 2000, "tag": f"t{i}"})
                for i in range(count)
            )
        )
        answers = {}
        for _ in range(count):
            message = await proc.read()
            answers[message["id"]] = text_of(message)
        assert answers == {i: f"slept t{i}" for i in range(count)}


async def test_cancelled_request_writes_nothing_more_and_runs_its_finally(tmp_path: Path) -> None:
    env = {"MCPSERVE_TEST_MARKER_DIR": str(tmp_path)}
    async with stdio_server(env=env) as proc:
        await proc.send(call(10, "wait_forever", {"tag": "c10"}, progressToken="p10"))
        progress = await proc.read()
        assert progress["method"] == "notifications/progress"
        assert progress["params"]["progressToken"] == "p10"
        await wait_for_file(tmp_path / "c10.started")

        await proc.send({
            "jsonrpc": "2.0",
            "method": "notifications/cancelled",
            "params": {"requestId": 10, "reason": "user pressed stop"},
        })  # fmt: skip
        assert await wait_for_file(tmp_path / "c10.finally") == "cancelled=True"

        await proc.send(call(11, "echo", {"text": "after cancel"}))
        response, before = await proc.read_until(11)
        assert text_of(response) == "after cancel"
        assert before == []

        proc.close_stdin()
        rest = await proc.read_rest()
        assert await proc.wait() == 0
        for message in [*before, *rest]:
            assert not same_id(message.get("id"), 10), message
            assert message.get("params", {}).get("progressToken") != "p10", message
        assert not any(same_id(m.get("id"), 10) for m in proc.seen if "method" not in m)


async def test_cancel_for_unknown_or_finished_ids_is_ignored() -> None:
    async with stdio_server() as proc:
        await proc.send(call(1, "echo", {"text": "one"}))
        await proc.read_until(1)
        for request_id in (1, 12345, "nope", None):
            await proc.send({
                "jsonrpc": "2.0",
                "method": "notifications/cancelled",
                "params": {"requestId": request_id},
            })  # fmt: skip
        await proc.send({"jsonrpc": "2.0", "method": "notifications/cancelled"})
        await proc.send(call(2, "echo", {"text": "two"}))
        response = await proc.read()
        assert response["id"] == 2
        assert text_of(response) == "two"


async def test_cancel_matches_the_id_with_its_json_type(tmp_path: Path) -> None:
    env = {"MCPSERVE_TEST_MARKER_DIR": str(tmp_path)}
    async with stdio_server(env=env) as proc:
        await proc.send(call("7", "sleepy", {"seconds": 0.5, "tag": "string seven"}))
        await proc.send(call(8, "wait_forever", {"tag": "w8"}))
        await wait_for_file(tmp_path / "w8.started")
        # requestId 7 (a number) is not the in-flight "7" (a string): nothing is cancelled.
        await proc.send(
            {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 7}}
        )
        response, _ = await proc.read_until("7")
        assert text_of(response) == "slept string seven"
        await proc.send(
            {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 8}}
        )
        await wait_for_file(tmp_path / "w8.finally")


async def test_duplicate_in_flight_id_is_rejected(tmp_path: Path) -> None:
    env = {"MCPSERVE_TEST_MARKER_DIR": str(tmp_path)}
    async with stdio_server(env=env) as proc:
        await proc.send(call(7, "wait_forever", {"tag": "dup"}))
        await wait_for_file(tmp_path / "dup.started")
        await proc.send(call(7, "echo", {"text": "second"}))
        response = await proc.read()
        assert response["id"] == 7
        assert response["error"]["code"] == -32600
        await proc.send(
            {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 7}}
        )
        await wait_for_file(tmp_path / "dup.finally")
        # Once finished, the id can be used again.
        await proc.send(call(7, "echo", {"text": "reused"}))
        response = await proc.read()
        assert response["id"] == 7
        assert text_of(response) == "reused"


async def test_eof_lets_in_flight_requests_finish_then_exits_zero() -> None:
    async with stdio_server() as proc:
        await proc.send(
            call(1, "sleepy", {"seconds": 0.5, "tag": "a"}),
            call(2, "sleepy", {"seconds": 0.2, "tag": "b"}),
            call(3, "progressive", {"steps": 2}, progressToken=3),
        )
        proc.close_stdin()
        rest = await proc.read_rest()
        assert await proc.wait() == 0
        responses = {m["id"]: text_of(m) for m in rest if "id" in m}
        assert responses == {1: "slept a", 2: "slept b", 3: "done after 2"}
        assert [m["params"]["progress"] for m in rest if "method" in m] == [1, 2]


async def test_eof_gives_running_requests_a_grace_period_then_exits_promptly() -> None:
    """A client closing stdin sees the server exit soon, even with a tool
    that would run for a long time; what finishes within the grace is still answered."""
    args = [
        sys.executable, "-m", "mcpserve.cli", "run", str(BASIC), "--shutdown-grace", "0.5",
    ]  # fmt: skip
    async with stdio_server(args) as proc:
        await proc.send(
            call(1, "sleepy", {"seconds": 60, "tag": "never"}),
            call(2, "sleepy", {"seconds": 0.1, "tag": "soon"}),
        )
        proc.close_stdin()
        started = time.monotonic()
        rest = await proc.read_rest(within=10)
        assert await proc.wait(within=10) == 0
        assert time.monotonic() - started < 5
    assert [(m["id"], text_of(m)) for m in rest] == [(2, "slept soon")]
    assert "cancelling 1 request(s)" in proc.stderr.decode()


async def test_server_run_stdio_takes_its_grace_from_the_environment() -> None:
    """server.run("stdio") with no shutdown_grace reads MCPSERVE_SHUTDOWN_GRACE: 0.2 s here,
    so a 2 s call is cut at EOF, which the 5 s default would have let finish."""
    async with stdio_server(env={"MCPSERVE_SHUTDOWN_GRACE": "0.2"}) as proc:
        await proc.send(call(1, "sleepy", {"seconds": 2, "tag": "late"}))
        proc.close_stdin()
        started = time.monotonic()
        rest = await proc.read_rest(within=10)
        assert await proc.wait(within=10) == 0
        assert time.monotonic() - started < 1.5
    assert rest == []
    assert "cancelling 1 request(s)" in proc.stderr.decode()


async def test_last_line_without_newline_is_served_at_eof() -> None:
    async with stdio_server() as proc:
        proc.methods[5] = "tools/call"
        await proc.write(encode(call(5, "echo", {"text": "no newline"})))
        proc.close_stdin()
        rest = await proc.read_rest()
        assert await proc.wait() == 0
        assert [(m["id"], text_of(m)) for m in rest] == [(5, "no newline")]


async def test_eof_with_nothing_in_flight_exits_zero() -> None:
    async with stdio_server() as proc:
        proc.close_stdin()
        assert await proc.read_rest() == []
        assert await proc.wait() == 0


# --------------------------------------------------------------------------- hostile input


@pytest.mark.parametrize(
    "line",
    [
        b"this is not json",
        b'{"jsonrpc": "2.0", "id": 1, "method": "tools/list"',
        b"\xff\xfe\xfd",
        b"{'single': 'quotes'}",
        b'{"jsonrpc":"2.0","id":1,"method":"tools/list"} trailing',
    ],
)
async def test_unparsable_line_gets_parse_error_without_id_and_serving_goes_on(line: bytes) -> None:
    async with stdio_server() as proc:
        await proc.write(line + b"\n")
        error = await proc.read()
        assert "id" not in error
        assert error["error"]["code"] == -32700
        await proc.send(call(1, "echo", {"text": "still here"}))
        response = await proc.read()
        assert text_of(response) == "still here"


@pytest.mark.parametrize("batch", [[], "one-request"])
async def test_batch_array_is_invalid_request(batch: object) -> None:
    payload = [call(1, "echo", {"text": "batched"})] if batch == "one-request" else []
    async with stdio_server() as proc:
        await proc.write(encode(payload) + b"\n")
        error = await proc.read()
        assert "id" not in error
        assert error["error"]["code"] == -32600
        await proc.send(call(2, "echo", {"text": "after batch"}))
        response = await proc.read()
        assert response["id"] == 2
        assert text_of(response) == "after batch"


@pytest.mark.parametrize(
    ("message", "echoed_id"),
    [
        ("a string", None),
        (42, None),
        ({"jsonrpc": "1.0", "id": 3, "method": "tools/list"}, 3),
        ({"id": 3, "method": "tools/list"}, 3),
        ({"jsonrpc": "2.0", "id": None, "method": "tools/list"}, None),
        ({"jsonrpc": "2.0", "id": 1.5, "method": "tools/list"}, None),
        ({"jsonrpc": "2.0", "id": True, "method": "tools/list"}, None),
        ({"jsonrpc": "2.0", "id": [1], "method": "tools/list"}, None),
        ({"jsonrpc": "2.0", "id": 4, "method": 17}, 4),
        ({"jsonrpc": "2.0", "id": 5, "method": "tools/list", "params": [1, 2]}, 5),
        ({"jsonrpc": "2.0", "id": 6}, 6),
    ],
)
async def test_invalid_requests_get_minus_32600(message: object, echoed_id: object) -> None:
    async with stdio_server() as proc:
        await proc.write(encode(message) + b"\n")
        error = await proc.read()
        assert error["error"]["code"] == -32600
        if echoed_id is None:
            assert "id" not in error
        else:
            assert same_id(error["id"], echoed_id)
        await proc.send(call(9, "echo", {"text": "ok"}))
        assert text_of(await proc.read()) == "ok"


async def test_client_responses_and_blank_lines_are_ignored() -> None:
    async with stdio_server() as proc:
        await proc.write(b"\n   \n\t\n")
        await proc.send(
            {"jsonrpc": "2.0", "id": 99, "result": {}},
            {"jsonrpc": "2.0", "id": 98, "error": {"code": -1, "message": "client error"}},
            {"jsonrpc": "2.0", "method": "notifications/whatever", "params": {}},
        )
        await proc.send(call(1, "echo", {"text": "first real answer"}))
        response = await proc.read()
        assert response["id"] == 1
        assert text_of(response) == "first real answer"


async def test_crlf_line_endings_are_accepted() -> None:
    async with stdio_server() as proc:
        await proc.write(encode(call(1, "echo", {"text": "crlf"})) + b"\r\n")
        response = await proc.read()
        assert response["id"] == 1
        assert text_of(response) == "crlf"


@pytest.mark.parametrize(
    "request_id", [0, "", "0", -1, 2**53, 2**64, -(10**30), "id with spaces \u00e9"]
)
async def test_ids_are_echoed_with_their_json_type(request_id: object) -> None:
    async with stdio_server() as proc:
        await proc.send(call(request_id, "echo", {"text": "id"}))
        line = await proc.read_line()
        response = proc.validate(line)
        assert same_id(response["id"], request_id)
        assert json.loads(line)["id"] == request_id


async def test_zero_and_string_zero_and_empty_are_distinct_ids() -> None:
    async with stdio_server() as proc:
        await proc.send(
            call(0, "sleepy", {"seconds": 0.3, "tag": "int zero"}),
            call("0", "sleepy", {"seconds": 0.2, "tag": "string zero"}),
            call("", "sleepy", {"seconds": 0.1, "tag": "empty"}),
        )
        answers = [await proc.read() for _ in range(3)]
        by_type = {(type(m["id"]).__name__, m["id"]): text_of(m) for m in answers}
        assert by_type == {
            ("int", 0): "slept int zero",
            ("str", "0"): "slept string zero",
            ("str", ""): "slept empty",
        }


def _too_big_line(request_id: int = 1) -> bytes:
    return encode(call(request_id, "echo", {"text": "x" * 5000})) + b"\n"


async def test_oversized_line_is_rejected_and_the_next_request_is_served() -> None:
    """Regression: skipping an oversized line used to swallow the line after it."""
    async with stdio_server(env={"MCPSERVE_TEST_MAX_MESSAGE_BYTES": "1000"}) as proc:
        await proc.write(_too_big_line(1))
        await proc.send(call(2, "echo", {"text": "next"}))
        error = await proc.read()
        assert error["error"]["code"] == -32600
        assert "id" not in error
        response = await proc.read(within=5)
        assert response["id"] == 2
        assert text_of(response) == "next"


async def test_oversized_line_does_not_stop_the_server() -> None:
    async with stdio_server(env={"MCPSERVE_TEST_MAX_MESSAGE_BYTES": "1000"}) as proc:
        await proc.write(_too_big_line(1))
        await proc.send(call(2, "echo", {"text": "maybe lost"}))
        await proc.send(call(3, "echo", {"text": "served"}))
        error = await proc.read()
        assert error["error"]["code"] == -32600
        response, _ = await proc.read_until(3)
        assert text_of(response) == "served"
        # A message just under the limit still works.
        small = call(4, "echo", {"text": "y" * 700})
        assert len(encode(small)) < 1000
        await proc.send(small)
        response, _ = await proc.read_until(4)
        assert text_of(response) == "y" * 700


async def test_oversized_line_at_eof_without_newline() -> None:
    async with stdio_server(env={"MCPSERVE_TEST_MAX_MESSAGE_BYTES": "1000"}) as proc:
        await proc.write(_too_big_line(1)[:-1])
        proc.close_stdin()
        rest = await proc.read_rest()
        assert await proc.wait() == 0
        assert [m["error"]["code"] for m in rest] == [-32600]


@pytest.mark.parametrize("tool", ["noisy", "noisy_thread"])
async def test_stray_stdout_writes_go_to_stderr(tool: str) -> None:
    async with stdio_server() as proc:
        await proc.send(call(1, tool, {"text": "zzz"}), call(2, "echo", {"text": "after noise"}))
        lines = [await proc.read_line(), await proc.read_line()]
        messages = {m["id"]: m for m in (proc.validate(line) for line in lines)}
        assert "quiet" in text_of(messages[1])
        assert text_of(messages[2]) == "after noise"
        proc.close_stdin()
        assert await proc.read_rest() == []
        assert await proc.wait() == 0
        stderr = proc.stderr.decode()
        assert "print noise zzz" in stderr
        assert "fd1 noise zzz" in stderr
        if tool == "noisy":
            assert "sys.stdout noise zzz" in stderr


async def test_result_the_encoder_cannot_handle_still_gets_an_answer() -> None:
    """orjson cannot encode integers beyond 64 bits; the standard library writes them."""
    async with stdio_server() as proc:
        await proc.send(call(1, "power", {"base": 2, "exponent": 10}))
        small, _ = await proc.read_until(1)
        assert small["result"]["structuredContent"] == {"value": 1024}
        assert text_of(small) == "1024"
        await proc.send(call(2, "power", {"base": 2, "exponent": 70}))
        await proc.send(call(3, "echo", {"text": "later"}))
        response, _ = await proc.read_until(2, within=5)
        assert response["result"]["structuredContent"] == {"value": 2**70}
        later, _ = await proc.read_until(3)
        assert text_of(later) == "later"


# --------------------------------------------------------------------------- CLI and clients


async def test_cli_runs_a_named_server() -> None:
    command = [sys.executable, "-m", "mcpserve.cli", "run", f"{BASIC}:other"]
    async with stdio_server(command) as proc:
        await proc.send(request(1, "tools/list"))
        listed, _ = await proc.read_until(1)
        assert [tool["name"] for tool in listed["result"]["tools"]] == ["whoami"]
        await proc.send(call(2, "whoami", {}))
        response, _ = await proc.read_until(2)
        assert text_of(response) == "other"
        await proc.send(request(3, "server/discover"))
        response, _ = await proc.read_until(3)
        assert response["result"]["_meta"]["io.modelcontextprotocol/serverInfo"]["name"] == (
            "other-server"
        )


async def test_cli_runs_the_default_server_by_relative_path() -> None:
    command = [sys.executable, "-m", "mcpserve.cli", "run", "tests/support/servers/basic.py"]
    async with stdio_server(command) as proc:
        await proc.send(call(1, "add", {"a": 1, "b": 1}))
        response, _ = await proc.read_until(1)
        assert response["result"]["structuredContent"] == {"total": 2}


def test_cli_unknown_server_name_fails_cleanly() -> None:
    completed = subprocess.run(
        [sys.executable, "-m", "mcpserve.cli", "run", f"{BASIC}:missing"],
        cwd=ROOT,
        env=child_env(),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        timeout=30,
        check=False,
    )
    assert completed.returncode != 0
    assert completed.stdout == b""
    assert b"missing" in completed.stderr


async def test_mcpserve_client_drives_the_subprocess() -> None:
    client = Client.stdio([sys.executable, str(BASIC)], cwd=str(ROOT), env=child_env())
    async with client:
        connection = client.connection
        original = connection.request

        async def checked(message: dict) -> dict:
            response = await original(message)
            check_response(message["method"], response)
            assert same_id(response["id"], message["id"])
            return response

        connection.request = checked  # type: ignore[method-assign]
        tools = await asyncio.wait_for(client.list_tools(), 15)
        assert "add" in [tool["name"] for tool in tools]
        result = await asyncio.wait_for(client.call_tool("add", {"a": 20, "b": 22}), 15)
        assert result["structuredContent"] == {"total": 42}
        slow = asyncio.create_task(client.call_tool("sleepy", {"seconds": 0.3, "tag": "c"}))
        fast = await asyncio.wait_for(client.call_tool("echo", {"text": "f"}), 15)
        assert fast["content"][0]["text"] == "f"
        assert (await asyncio.wait_for(slow, 15))["content"][0]["text"] == "slept c"
        read = await asyncio.wait_for(client.read_resource("file:///a.txt"), 15)
        assert read["contents"][0]["text"] == "hello from a.txt"
        prompt = await asyncio.wait_for(client.get_prompt("greet", {"who": "Zed"}), 15)
        assert prompt["messages"][0]["content"]["text"] == "Hello, Zed!"
        completion = await asyncio.wait_for(
            client.complete({"type": "ref/resource", "uri": "notes://{note_id}"}, "note_id", "n"),
            15,
        )
        assert completion == {"values": ["n1", "n2"], "total": 3}
        discovered = await asyncio.wait_for(client.discover(), 15)
        assert VERSION in discovered["supportedVersions"]
    assert client.connection.process is not None  # type: ignore[attr-defined]
    assert client.connection.process.returncode == 0  # type: ignore[attr-defined]


# --------------------------------------------------------------------------- non-pipe stdio


def _run_with_files(tmp_path: Path, *, stdin_file: bool, stdout_file: bool) -> list[dict]:
    requests = tmp_path / "requests.jsonl"
    requests.write_bytes(
        encode(call(1, "echo", {"text": "from a file"}))
        + b"\n"
        + encode(request(2, "tools/list"))
        + b"\n"
    )
    out_path = tmp_path / "out.jsonl"
    with requests.open("rb") as file_in, out_path.open("wb") as file_out:
        completed = subprocess.run(
            [sys.executable, str(BASIC)],
            cwd=ROOT,
            env=child_env(),
            stdin=file_in if stdin_file else None,
            input=None if stdin_file else requests.read_bytes(),
            stdout=file_out if stdout_file else subprocess.PIPE,
            stderr=subprocess.PIPE,
            timeout=30,
            check=False,
        )
    assert completed.returncode == 0, completed.stderr.decode()[-2000:]
    raw = out_path.read_bytes() if stdout_file else completed.stdout
    lines = raw.splitlines(keepends=True)
    messages = [check_line(line) for line in lines]
    for message in messages:
        check_response({1: "tools/call", 2: "tools/list"}[message["id"]], message)
    return sorted(messages, key=lambda m: m["id"])


def test_stdin_redirected_from_a_regular_file(tmp_path: Path) -> None:
    """Regression: ``connect_read_pipe`` refuses regular files (``< requests.jsonl``)."""
    messages = _run_with_files(tmp_path, stdin_file=True, stdout_file=False)
    assert text_of(messages[0]) == "from a file"
    assert "tools" in messages[1]["result"]


def test_stdout_redirected_to_a_regular_file(tmp_path: Path) -> None:
    """Regression: ``connect_write_pipe`` refuses regular files (``> out.jsonl``)."""
    messages = _run_with_files(tmp_path, stdin_file=False, stdout_file=True)
    assert text_of(messages[0]) == "from a file"
    assert "tools" in messages[1]["result"]


def test_stdin_and_stdout_are_pipes_baseline(tmp_path: Path) -> None:
    messages = _run_with_files(tmp_path, stdin_file=False, stdout_file=False)
    assert text_of(messages[0]) == "from a file"


@pytest.mark.skipif(sys.platform != "linux", reason="F_SETPIPE_SZ is Linux's")
def test_stdio_pipes_are_widened_so_big_answers_leave_in_one_write() -> None:
    import fcntl

    f_getpipe_sz = 1032
    process = subprocess.Popen(
        [sys.executable, str(BASIC)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        cwd=ROOT,
        env=child_env(),
    )
    try:
        assert process.stdin is not None
        assert process.stdout is not None
        before = fcntl.fcntl(process.stdout.fileno(), f_getpipe_sz)
        process.stdin.write(encode(call(1, "echo", {"text": "hi"})) + b"\n")
        process.stdin.flush()
        assert check_line(process.stdout.readline())["id"] == 1
        assert fcntl.fcntl(process.stdout.fileno(), f_getpipe_sz) == 1 << 20 > before
        assert fcntl.fcntl(process.stdin.fileno(), f_getpipe_sz) == 1 << 20
    finally:
        if process.stdin is not None:
            process.stdin.close()
        process.wait(10)
        if process.stdout is not None:
            process.stdout.close()
