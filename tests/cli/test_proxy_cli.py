"""``mcpserve proxy``: one upstream, or a gateway of several, served over stdio or HTTP.

The command runs as a subprocess (``python -m mcpserve.cli proxy ...``) and is driven as
a client would: over its stdio in both eras, or over HTTP on a free port. Usage errors are
checked in process, with click's runner.
"""

from __future__ import annotations

import asyncio
import json
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from mcpserve import Client
from mcpserve.cli import main
from wire_helpers import (
    ROOT,
    SERVERS,
    TIMEOUT,
    HTTPServerProcess,
    child_env,
    free_port,
    http_server_process,
    stop_process,
)

UPSTREAM = [sys.executable, str(SERVERS / "proxy_upstream.py")]
OFFICIAL = [sys.executable, str(SERVERS / "proxy_upstream_official.py")]
PROXY = [sys.executable, "-m", "mcpserve.cli", "proxy"]
LEGACY = "2025-11-25"


def name_ada(params: dict[str, Any]) -> dict[str, Any]:
    return {"action": "accept", "content": {"name": "Ada"}}


def text(result: dict[str, Any]) -> str:
    return result["content"][0]["text"]  # type: ignore[no-any-return]


def over_stdio(*args: str, **options: Any) -> Client:
    return Client.stdio([*PROXY, *args], cwd=str(ROOT), env=child_env(), timeout=TIMEOUT,
                        negotiate=True, **options)  # fmt: skip


@pytest.fixture(scope="module")
def upstream_http(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HTTPServerProcess]:
    with http_server_process(tmp_path_factory.mktemp("cli-upstream"), args=UPSTREAM) as up:
        yield up


@contextmanager
def served(*args: str) -> Iterator[str]:
    """``mcpserve proxy ... --http`` on a free port; its URL once it listens."""
    port = free_port()
    process = subprocess.Popen([*PROXY, *args, "--http", "--port", str(port)], cwd=str(ROOT),
                               env=child_env(), stdin=subprocess.DEVNULL,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT)  # fmt: skip
    try:
        deadline = time.monotonic() + 30
        while True:
            if process.poll() is not None:
                assert process.stdout is not None
                raise AssertionError(f"the proxy exited:\n{process.stdout.read().decode()}")
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=1):
                    break
            except OSError:
                assert time.monotonic() < deadline, "the proxy did not listen"
                time.sleep(0.05)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        stop_process(process)
        if process.stdout is not None:
            process.stdout.close()


@pytest.mark.subprocess
@pytest.mark.parametrize("version", [None, LEGACY], ids=["client-modern", "client-legacy"])
async def test_a_command_after_the_dashes_is_proxied_over_stdio(version: str | None) -> None:
    async with over_stdio("--", *UPSTREAM, protocol_version=version, on_elicit=name_ada) as client:
        assert client.legacy == (version == LEGACY)
        assert client.server_info["name"] == "proxy"
        assert text(await client.call_tool("echo", {"text": "hi"})) == "hi"
        assert text(await client.call_tool("greet")) == "Hello, Ada!"


@pytest.mark.subprocess
async def test_a_url_is_proxied_over_http_with_the_upstreams_own_headers(
    upstream_http: HTTPServerProcess,
) -> None:
    with served(upstream_http.url, "--header", "X-Api-Key: proxy-key") as url:
        async with Client(url, timeout=TIMEOUT) as client:
            assert text(await client.call_tool("add", {"a": 2, "b": 2})) == "4"
            seen = (await client.call_tool("seen_headers"))["structuredContent"]
    assert seen["x-api-key"] == "proxy-key"


@pytest.mark.subprocess
async def test_named_upstreams_make_a_gateway_with_namespaces() -> None:
    members = ["--upstream", f"own={' '.join(UPSTREAM)}", "--upstream", f"sdk={' '.join(OFFICIAL)}"]
    async with over_stdio(*members, on_elicit=name_ada) as client:
        names = {tool["name"] for tool in await client.list_tools()}
        assert {"own_echo", "own_greet", "sdk_echo", "sdk_greet"} <= names
        assert text(await client.call_tool("own_greet")) == "Hello, Ada!"
        assert text(await client.call_tool("sdk_greet")) == "Hello, Ada!"
        assert (await client.read_resource("own+notes://n1"))["contents"][0] == {
            "uri": "own+notes://n1", "text": "note n1"}  # fmt: skip
        ref = {"type": "ref/prompt", "name": "own_welcome"}
        assert (await client.complete(ref, "who", "g"))["values"] == ["grace"]
        async with client.listen(resources=["own+file:///a.txt"]) as notes:
            await client.call_tool("own_touch", {"uri": "file:///a.txt"})
            note = await asyncio.wait_for(notes.__anext__(), TIMEOUT)
    assert note["params"]["uri"] == "own+file:///a.txt"


@pytest.mark.subprocess
async def test_a_config_file_names_the_gateways_members(tmp_path: Path) -> None:
    config = tmp_path / "servers.json"
    config.write_text(json.dumps({"mcpServers": {
        "notes": {"command": sys.executable, "args": [str(SERVERS / "proxy_upstream.py")]},
        "sdk": {"command": sys.executable, "args": [str(SERVERS / "proxy_upstream_official.py")],
                "protocolVersion": LEGACY},
    }}))  # fmt: skip
    async with over_stdio("--config", str(config)) as client:
        assert text(await client.call_tool("notes_add", {"a": 1, "b": 2})) == "3"
        assert text(await client.call_tool("sdk_echo", {"text": "old era"})) == "old era"
        assert client.server_info["name"] == "gateway"


@pytest.mark.subprocess
def test_an_unreachable_upstream_stops_the_command_with_its_reason() -> None:
    done = subprocess.run([*PROXY, "--", str(ROOT / "no-such-server")], cwd=str(ROOT),
                          env=child_env(), input=b"", capture_output=True, timeout=60)  # fmt: skip
    assert done.returncode == 1
    assert b"Error: Could not connect to the upstream server" in done.stderr
    assert b"no-such-server" in done.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ([], "Give an UPSTREAM"),
        (["http://x/mcp", "--upstream", "a=http://y/mcp"], "Give one UPSTREAM"),
        (["--upstream", "no-equals-sign"], "is not NAME=VALUE"),
        (["--upstream", "a=http://x/mcp", "--upstream", "a=http://y/mcp"], "given twice"),
        (["--upstream", "bad name=http://x/mcp"], "Namespace 'bad name'"),
        (["http://x/mcp", "--header", "no colon"], "is not NAME:VALUE"),
    ],
)
def test_usage_errors_say_what_is_wrong(args: list[str], message: str) -> None:
    result = CliRunner().invoke(main, ["proxy", *args])
    assert result.exit_code == 2
    assert message in result.output


@pytest.mark.parametrize(
    ("document", "message"),
    [
        ("not json", "not a readable JSON file"),
        ('{"mcpServers": {}}', "expected"),
        ('{"mcpServers": {"a": {"url": "http://x/mcp", "command": "x"}}}', "either"),
        ('{"mcpServers": {"a": {"url": "ftp://x"}}}', "http(s) URL"),
        ('{"mcpServers": {"a": {"command": "x", "args": "y"}}}', "list of strings"),
        ('{"mcpServers": {"a": {"command": "x", "env": {"K": 1}}}}', "map names to strings"),
    ],
)
def test_a_bad_config_file_is_a_usage_error(tmp_path: Path, document: str, message: str) -> None:
    config = tmp_path / "servers.json"
    config.write_text(document)
    result = CliRunner().invoke(main, ["proxy", "--config", str(config)])
    assert result.exit_code == 2
    assert message in result.output
