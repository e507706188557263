"""``mcpserve run --log-format json``: every line on stderr is one JSON object, and the lines
written during a request (the tool's own, uvicorn's access line) name that request.

Real subprocesses, over HTTP (both eras, a JSON and an SSE answer) and stdio."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from typing import Any

import httpx2
import pytest

from command_serving import MCPSERVE, served_command
from mcpserve.protocol.request_state import generate_key
from wire_helpers import call, child_env, decode_reply, encode, free_port, mcp_headers

SERVER = """
import logging

from mcpserve import Context, Server
from mcpserve.auth import ResourceServer
from mcpserve.auth.tokens import AccessToken, InvalidToken

log = logging.getLogger("shelf")


class Tokens:
    async def verify(self, token: str) -> AccessToken:
        if token != "token-of-ana":
            raise InvalidToken("unknown token")
        return AccessToken("ana")


server = Server("shelf", auth=ResourceServer(
    Tokens(), resource="http://127.0.0.1:{port}/mcp",
    authorization_servers=["https://issuer.example"]))


@server.tool
def shelve(title: str) -> str:
    log.info("shelving %s", title)
    return title


@server.tool
async def shelve_slowly(title: str, ctx: Context) -> str:
    await ctx.progress(1, 2)
    log.info("shelving slowly %s", title)
    return title


@server.tool
def shelve_badly() -> str:
    try:
        raise ValueError("the shelf\\nfell")
    except ValueError:
        log.exception("could not shelve")
    return "fallen"
"""

RFC3339_UTC = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z")
AUTH = {"authorization": "Bearer token-of-ana"}
HANDSHAKE = "2025-11-25"


def json_lines(text: str) -> list[dict[str, Any]]:
    """Every line of ``text``, each parsed as one JSON object (a line that is not fails)."""
    lines = []
    for line in text.splitlines():
        parsed = json.loads(line)
        assert isinstance(parsed, dict), line
        for field in ("time", "level", "logger", "message"):
            assert isinstance(parsed.get(field), str), line
        assert RFC3339_UTC.fullmatch(parsed["time"]), line
        lines.append(parsed)
    return lines


def of_request(lines: list[dict[str, Any]], request_id: object) -> dict[str, list[str]]:
    """The messages written during one request, by logger."""
    found: dict[str, list[str]] = {}
    for line in lines:
        if line.get("request_id") == request_id:
            found.setdefault(line["logger"], []).append(line["message"])
    return found


def handshake_requests(url: str) -> None:
    """A handshake-era session: initialize, then a tool call (id ``old-2``)."""
    headers = {"content-type": "application/json",
               "accept": "application/json, text/event-stream", **AUTH}  # fmt: skip
    hello = {"jsonrpc": "2.0", "id": "old-1", "method": "initialize", "params": {
        "protocolVersion": HANDSHAKE, "capabilities": {},
        "clientInfo": {"name": "old", "version": "1"}}}  # fmt: skip
    started = httpx2.post(url, json=hello, headers=headers, timeout=10)
    assert started.status_code == 200, started.text
    headers |= {"mcp-session-id": started.headers["mcp-session-id"],
                "mcp-protocol-version": HANDSHAKE}  # fmt: skip
    initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    assert httpx2.post(url, json=initialized, headers=headers, timeout=10).status_code == 202
    called = {"jsonrpc": "2.0", "id": "old-2", "method": "tools/call",
              "params": {"name": "shelve", "arguments": {"title": "Emma"}}}  # fmt: skip
    answer = httpx2.post(url, json=called, headers=headers, timeout=10)
    assert answer.status_code == 200
    assert "Emma" in answer.text


def modern_call(
    url: str, request_id: str, tool: str, arguments: dict[str, Any], **meta: Any
) -> Any:
    message = call(request_id, tool, arguments, **meta)
    response = httpx2.post(
        url,
        content=encode(message),
        headers={**mcp_headers("tools/call", tool), **AUTH},
        timeout=10,
    )
    return decode_reply("tools/call", response)


def serve_and_log(tmp_path: Path, args: list[str], env: dict[str, str]) -> list[dict[str, Any]]:
    """Serve SERVER with ``args``, send requests of both eras, and return stderr's lines."""
    port = free_port()
    app = tmp_path / "shelf.py"
    app.write_text(SERVER.replace("{port}", str(port)))
    command = ["run", str(app), "--http", "--port", str(port), "--access-log", *args]
    with served_command(command, cwd=tmp_path, port=port, env=env) as served:
        assert modern_call(served.url, "r-inline", "shelve", {"title": "Dune"}).result
        streamed = modern_call(
            served.url, "r-sse", "shelve_slowly", {"title": "Ulysses"}, progressToken="p"
        )
        assert streamed.is_sse  # the progress notification went first
        assert modern_call(served.url, "r-error", "shelve_badly", {}).result
        handshake_requests(served.url)
        return json_lines(served.stop())


@pytest.fixture(scope="module")
def http_lines(tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, Any]]:
    return serve_and_log(tmp_path_factory.mktemp("json-http"), ["--log-format", "json"], {})


@pytest.mark.subprocess
def test_every_line_over_http_is_a_json_object_uvicorns_own_included(
    http_lines: list[dict[str, Any]],
) -> None:
    loggers = {line["logger"] for line in http_lines}
    assert {"uvicorn.error", "uvicorn.access", "shelf"} <= loggers
    assert any(line["message"].startswith("Uvicorn running on") for line in http_lines)


@pytest.mark.subprocess
@pytest.mark.parametrize(
    ("request_id", "tool_line"),
    [
        ("r-inline", "shelving Dune"),
        ("r-sse", "shelving slowly Ulysses"),
        ("old-2", "shelving Emma"),
    ],
)
def test_the_tools_line_and_uvicorns_access_line_carry_the_requests_id(
    http_lines: list[dict[str, Any]], request_id: str, tool_line: str
) -> None:
    written = of_request(http_lines, request_id)
    assert written["shelf"] == [tool_line]
    [access] = written["uvicorn.access"]
    assert '"POST /mcp HTTP/1.1" 200' in access


@pytest.mark.subprocess
def test_a_handshake_era_initialize_names_its_request_on_the_access_line(
    http_lines: list[dict[str, Any]],
) -> None:
    assert len(of_request(http_lines, "old-1")["uvicorn.access"]) == 1


@pytest.mark.subprocess
def test_lines_written_during_an_authenticated_request_name_the_principal(
    http_lines: list[dict[str, Any]],
) -> None:
    during = [line for line in http_lines if "request_id" in line]
    assert len(during) >= 8
    assert {line.get("principal") for line in during} == {"ana"}
    outside = [line for line in http_lines if line["logger"] == "uvicorn.error"]
    assert outside
    assert all("request_id" not in line and "principal" not in line for line in outside)


@pytest.mark.subprocess
def test_an_exceptions_traceback_stays_inside_its_one_line(
    http_lines: list[dict[str, Any]],
) -> None:
    [failed] = [line for line in http_lines if line["message"] == "could not shelve"]
    assert failed["level"] == "ERROR"
    assert failed["request_id"] == "r-error"
    assert failed["exc_info"].startswith("Traceback (most recent call last):\n")
    assert failed["exc_info"].endswith("ValueError: the shelf\nfell")


@pytest.mark.subprocess
def test_mcpserve_log_format_json_in_the_environment_does_the_same(tmp_path: Path) -> None:
    lines = serve_and_log(tmp_path, [], {"MCPSERVE_LOG_FORMAT": "json"})
    assert of_request(lines, "r-inline")["shelf"] == ["shelving Dune"]
    assert len(of_request(lines, "r-inline")["uvicorn.access"]) == 1


@pytest.mark.subprocess
@pytest.mark.parametrize("how", ["flag", "environment"])
def test_over_stdio_the_log_is_json_on_stderr_and_stdout_is_only_the_protocol(
    tmp_path: Path, how: str
) -> None:
    app = tmp_path / "shelf.py"
    app.write_text(SERVER.replace("{port}", "1"))
    args, env = (
        (["--log-format", "json"], {}) if how == "flag" else ([], {"MCPSERVE_LOG_FORMAT": "json"})
    )
    hello = {"jsonrpc": "2.0", "id": 10, "method": "initialize", "params": {
        "protocolVersion": HANDSHAKE, "capabilities": {},
        "clientInfo": {"name": "old", "version": "1"}}}  # fmt: skip
    messages = [
        call(1, "shelve", {"title": "Dune"}),
        call(2, "shelve_slowly", {"title": "Emma"}),
        hello,
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {
            "jsonrpc": "2.0",
            "id": 11,
            "method": "tools/call",
            "params": {"name": "shelve", "arguments": {"title": "Ulysses"}},
        },
    ]
    stdin = b"".join(encode(message) + b"\n" for message in messages)
    done = subprocess.run(
        [*MCPSERVE, "run", str(app), *args], input=stdin, capture_output=True,
        env=child_env(**env), cwd=tmp_path, timeout=60,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr.decode()
    answers = [json.loads(line) for line in done.stdout.splitlines()]
    assert sorted(answer["id"] for answer in answers) == [1, 2, 10, 11]
    lines = json_lines(done.stderr.decode())
    assert of_request(lines, 1) == {"shelf": ["shelving Dune"]}
    assert of_request(lines, 2) == {"shelf": ["shelving slowly Emma"]}
    assert of_request(lines, 11) == {"shelf": ["shelving Ulysses"]}


WORKER_SERVER = """
import logging

from mcpserve import Server

server = Server("shelf", legacy=False)


@server.tool
def shelve(title: str) -> str:
    logging.getLogger("shelf").warning("shelving %s", title)
    return title
"""


@pytest.mark.subprocess
def test_with_workers_every_process_uvicorn_starts_writes_json(tmp_path: Path) -> None:
    port = free_port()
    app = tmp_path / "shelf.py"
    app.write_text(WORKER_SERVER)
    command = ["run", str(app), "--http", "--port", str(port), "--workers", "2",
               "--access-log", "--log-format", "json"]  # fmt: skip
    keys = {"MCPSERVE_STATE_KEYS": generate_key()}
    with served_command(command, cwd=tmp_path, port=port, env=keys) as served:
        for number in range(4):
            message = call(f"w-{number}", "shelve", {"title": f"book {number}"})
            headers = mcp_headers("tools/call", "shelve")
            answer = httpx2.post(served.url, content=encode(message), headers=headers, timeout=10)
            assert decode_reply("tools/call", answer).result
        lines = json_lines(served.stop())
    started = [line for line in lines if line["message"].startswith("Started server process")]
    assert len(started) == 2
    for number in range(4):
        written = of_request(lines, f"w-{number}")
        assert written["shelf"] == [f"shelving book {number}"]
        assert len(written["uvicorn.access"]) == 1
