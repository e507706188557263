"""``mcpserve run --reload`` and ``--env-file``, in real subprocesses."""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest
from click.testing import CliRunner

from mcpserve import Client, MCPError
from mcpserve.cli import main
from redis_server import RedisServer
from wire_helpers import child_env, decode_reply, encode, http_server_process, mcp_headers, request

FIRST = """
from mcpserve import Server

server = Server("reloading")


@server.tool
def first() -> str:
    return "one"
"""

SECOND = """

@server.tool
def second() -> str:
    return "two"
"""

READS_ENV = """
import os

from mcpserve import Server

server = Server("env")
AT_IMPORT = os.environ.get("SHELF_GREETING", "unset")


@server.tool
def greeting() -> dict:
    return {"at_import": AT_IMPORT, "now": os.environ["SHELF_GREETING"],
            "quoted": os.environ["SHELF_QUOTED"]}
"""


def tool_names(url: str) -> list[str] | None:
    """The tools the server at ``url`` lists; ``None`` while it is not answering."""
    try:
        response = httpx2.post(url, content=encode(request(1, "tools/list")),
                              headers=mcp_headers("tools/list"), timeout=5)  # fmt: skip
    except httpx2.TransportError:
        return None  # between two server processes
    if response.status_code != 200:
        return None
    return [tool["name"] for tool in decode_reply("tools/list", response).result["tools"]]


@pytest.mark.subprocess
def test_reload_restarts_the_http_server_when_the_target_file_changes(tmp_path: Path) -> None:
    folder = tmp_path / "app"
    folder.mkdir()
    app = folder / "reloading.py"
    app.write_text(FIRST)
    args = [sys.executable, "-m", "mcpserve.cli", "run", str(app), "--http", "--reload",
            "--port", "{port}"]  # fmt: skip
    with http_server_process(tmp_path, args=args) as served:
        assert tool_names(served.url) == ["first"]
        app.write_text(FIRST + SECOND)
        deadline = time.monotonic() + 30
        while tool_names(served.url) != ["first", "second"]:
            assert time.monotonic() < deadline, served.log.read_text()
            time.sleep(0.1)
        log = served.log.read_text()
    assert f"restarting when a .py file in {folder} changes" in log
    assert "requestState is sealed with a key this process made up" not in log  # one process


RESTARTED = "The server restarted (its source changed); send the request again"


@pytest.mark.subprocess
async def test_reload_over_stdio_keeps_the_clients_pipes_across_restarts(tmp_path: Path) -> None:
    folder = tmp_path / "project"
    folder.mkdir()
    app = folder / "reloading.py"
    app.write_text(FIRST)
    command = [sys.executable, "-m", "mcpserve.cli", "run", str(app), "--reload"]
    async with Client.stdio(command, env=child_env(), timeout=30) as client:
        assert [tool["name"] for tool in await client.list_tools()] == ["first"]
        app.write_text(FIRST + SECOND)
        names: list[str] = []
        refusals: list[str] = []
        deadline = time.monotonic() + 20
        while names != ["first", "second"] and time.monotonic() < deadline:
            await asyncio.sleep(0.2)
            try:
                names = [tool["name"] for tool in await client.list_tools()]
            except MCPError as exc:  # the request in flight while the child was replaced
                refusals.append(exc.message)
        assert names == ["first", "second"]
        assert set(refusals) <= {RESTARTED}
        result = await client.call_tool("second", {})
    assert result["content"] == [{"type": "text", "text": "two"}]


@pytest.mark.subprocess
async def test_reload_over_stdio_keeps_a_handshake_era_session(tmp_path: Path) -> None:
    folder = tmp_path / "project"
    folder.mkdir()
    app = folder / "reloading.py"
    app.write_text(FIRST)
    command = [sys.executable, "-m", "mcpserve.cli", "run", str(app), "--reload"]
    process = await asyncio.create_subprocess_exec(
        *command, env=child_env(), stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE
    )
    assert process.stdin is not None
    assert process.stdout is not None

    async def ask(message: dict[str, Any]) -> dict[str, Any]:
        assert process.stdin is not None
        assert process.stdout is not None
        process.stdin.write(json.dumps(message).encode() + b"\n")
        await process.stdin.drain()
        return json.loads(await asyncio.wait_for(process.stdout.readline(), 20))  # type: ignore[no-any-return]

    try:
        started = await ask({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "old", "version": "1"}}})  # fmt: skip
        assert started["result"]["protocolVersion"] == "2025-11-25"
        process.stdin.write(b'{"jsonrpc": "2.0", "method": "notifications/initialized"}\n')
        listing = {"jsonrpc": "2.0", "method": "tools/list"}
        first = await ask({**listing, "id": 2})
        assert [tool["name"] for tool in first["result"]["tools"]] == ["first"]
        app.write_text(FIRST + SECOND)
        names: list[str] = []
        deadline = time.monotonic() + 20
        request_id = 3
        while names != ["first", "second"] and time.monotonic() < deadline:
            await asyncio.sleep(0.2)
            answer = await ask({**listing, "id": request_id})
            request_id += 1
            if "result" in answer:  # the session's requests reach the new child
                names = [tool["name"] for tool in answer["result"]["tools"]]
        assert names == ["first", "second"]
    finally:
        process.stdin.close()
        await asyncio.wait_for(process.wait(), 20)


@pytest.mark.subprocess
async def test_reload_over_stdio_answers_while_the_new_source_does_not_import(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "project"
    folder.mkdir()
    app = folder / "reloading.py"
    app.write_text(FIRST)
    command = [sys.executable, "-m", "mcpserve.cli", "run", str(app), "--reload"]
    async with Client.stdio(command, env=child_env(), timeout=30) as client:
        await client.list_tools()
        app.write_text(FIRST + "\nthis is not python\n")
        message = ""
        deadline = time.monotonic() + 20
        while "is not running" not in message and time.monotonic() < deadline:
            await asyncio.sleep(0.2)
            try:
                await client.list_tools()
            except MCPError as exc:
                message = exc.message
        assert "The server is not running (it exited with code 1)" in message
        app.write_text(FIRST)  # fixed: the next change brings it back
        names: list[str] = []
        deadline = time.monotonic() + 20
        while names != ["first"] and time.monotonic() < deadline:
            await asyncio.sleep(0.2)
            with contextlib.suppress(MCPError):
                names = [tool["name"] for tool in await client.list_tools()]
        assert names == ["first"]


def test_reload_with_several_workers_is_refused(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["run", "app.py", "--http", "--reload", "--workers", "2"])
    assert result.exit_code == 2
    assert "--reload runs one server process; leave out --workers" in result.stderr


def env_app(tmp_path: Path) -> tuple[Path, Path]:
    app = tmp_path / "env_app.py"
    app.write_text(READS_ENV)
    env_file = tmp_path / "dev.env"
    env_file.write_text('# for the tests\nexport SHELF_GREETING=hello\nSHELF_QUOTED="a # b"\n')
    return app, env_file


async def greeting_of(app: Path, env_file: Path, **env: str) -> dict[str, str]:
    command = [sys.executable, "-m", "mcpserve.cli", "run", str(app), "--env-file", str(env_file)]
    async with Client.stdio(command, env=child_env(**env), timeout=30) as client:
        result = await client.call_tool("greeting")
    assert "isError" not in result, result
    return result["structuredContent"]  # type: ignore[no-any-return]


@pytest.mark.subprocess
async def test_env_file_variables_are_set_before_the_target_is_imported(tmp_path: Path) -> None:
    app, env_file = env_app(tmp_path)
    greeting = await greeting_of(app, env_file)
    assert greeting == {"at_import": "hello", "now": "hello", "quoted": "a # b"}


@pytest.mark.subprocess
async def test_env_file_leaves_a_variable_the_environment_already_has(tmp_path: Path) -> None:
    app, env_file = env_app(tmp_path)
    greeting = await greeting_of(app, env_file, SHELF_GREETING="from the shell")
    assert greeting["now"] == "from the shell"


def test_a_malformed_env_file_is_refused_naming_its_line(tmp_path: Path) -> None:
    env_file = tmp_path / "bad.env"
    env_file.write_text("GOOD=1\nthis is not a variable\n")
    result = CliRunner().invoke(main, ["run", "app.py", "--env-file", str(env_file)])
    assert result.exit_code == 2
    assert f"{env_file}:2: expected KEY=VALUE, got 'this is not a variable'" in result.stderr


def test_call_with_an_env_file_imports_the_target_with_its_variables(
    tmp_path: Path, restore_imports: None
) -> None:
    app, env_file = env_app(tmp_path)
    # The runner puts the two variables back as they were (unset) afterwards.
    unset: dict[str, str | None] = {"SHELF_GREETING": None, "SHELF_QUOTED": None}
    result = CliRunner(env=unset).invoke(
        main, ["call", str(app), "greeting", "--env-file", str(env_file), "--json"]
    )
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["structuredContent"] == {
        "at_import": "hello", "now": "hello", "quoted": "a # b",
    }  # fmt: skip


@pytest.fixture
def restore_imports() -> Iterator[None]:
    """Loading a target adds it to sys.modules and its folder to sys.path: undo both."""
    modules, path = set(sys.modules), list(sys.path)
    yield
    for name in set(sys.modules) - modules:
        del sys.modules[name]
    sys.path[:] = path


@pytest.mark.subprocess
def test_dev_serves_the_page_and_the_endpoint_from_one_process(tmp_path: Path) -> None:
    app = tmp_path / "app.py"
    app.write_text(FIRST)
    command = [sys.executable, "-m", "mcpserve.cli", "dev", str(app), "--port", "{port}"]
    with http_server_process(tmp_path, args=command) as served:
        page = httpx2.get(f"http://127.0.0.1:{served.port}/", timeout=5)
        assert page.status_code == 200
        assert page.headers["content-type"].startswith("text/html")
        assert tool_names(served.url) == ["first"]
    log = served.log.read_text()
    assert f"http://127.0.0.1:{served.port}/" in log  # it says where the page is
    assert f"http://127.0.0.1:{served.port}/mcp" in log  # and the endpoint


# --------------------------------------------------------------------------- a port in use

LIFESPAN_MARKS = """
import contextlib
import os
from pathlib import Path

from mcpserve import Server


@contextlib.asynccontextmanager
async def lifespan(server):
    Path(os.environ["LIFESPAN_MARK"]).write_text("started")
    yield


server = Server("marked", lifespan=lifespan, legacy=False)
"""

UPSTREAM_MARKS = """
import os
from pathlib import Path

Path(os.environ["LIFESPAN_MARK"]).write_text("started")
"""


@pytest.mark.subprocess
@pytest.mark.parametrize(
    "command",
    [
        ["run", "{app}", "--http", "--port", "{port}"],
        ["run", "{app}", "--http", "--port", "{port}", "--workers", "2"],
        ["run", "{app}", "--http", "--port", "{port}", "--reload"],
        ["dev", "{app}", "--port", "{port}"],
        ["proxy", "--http", "--port", "{port}", "--", sys.executable, "{upstream}"],
    ],
    ids=["run", "workers", "reload", "dev", "proxy"],
)
def test_a_port_in_use_is_one_line_before_the_lifespan_starts(
    tmp_path: Path, command: list[str]
) -> None:
    """Said with the address and what to do, exit status 1; the target's lifespan (the
    proxy's: its upstream) never starts, so nothing it opens is left half started."""
    from mcpserve.protocol.request_state import generate_key

    (tmp_path / "marked.py").write_text(LIFESPAN_MARKS)
    (tmp_path / "upstream.py").write_text(UPSTREAM_MARKS)
    mark = tmp_path / "lifespan-started"
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        args = [word.format(app=tmp_path / "marked.py", upstream=tmp_path / "upstream.py",
                            port=port) for word in command]  # fmt: skip
        done = subprocess.run(
            [sys.executable, "-m", "mcpserve.cli", *args],
            capture_output=True, text=True, timeout=60,
            env=child_env(LIFESPAN_MARK=str(mark), MCPSERVE_STATE_KEYS=generate_key()),
        )  # fmt: skip
    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr == (
        f"Error: Port {port} is in use on 127.0.0.1: stop what holds it or pass --port\n"
    )
    assert not mark.exists()


def test_server_run_http_raises_before_its_lifespan_when_the_port_is_taken() -> None:
    from mcpserve import Server
    from mcpserve.transports.serve import PortUnavailable

    started: list[bool] = []

    @contextlib.asynccontextmanager
    async def lifespan(server: Server) -> Any:
        started.append(True)
        yield

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(PortUnavailable) as caught:
            Server("marked", lifespan=lifespan).run("http", port=port)
    assert caught.value.in_use
    assert str(caught.value) == f"Cannot listen on 127.0.0.1:{port}: Address already in use"
    assert started == []


# --------------------------------------------------------------------------- several workers


def workers_command(app: Path) -> list[str]:
    return [sys.executable, "-m", "mcpserve.cli", "run", str(app), "--http", "--port", "{port}",
            "--workers", "2"]  # fmt: skip


@pytest.mark.subprocess
def test_several_workers_serving_the_handshake_era_without_shared_sessions_are_refused(
    tmp_path: Path,
) -> None:
    """A handshake-era client's session would live in one worker and its next request reach
    the other: refused before anything starts, naming both ways out."""
    from mcpserve.protocol.request_state import generate_key

    app = tmp_path / "marked.py"
    app.write_text(LIFESPAN_MARKS.replace(", legacy=False", ""))
    mark = tmp_path / "lifespan-started"
    command = [word.replace("{port}", "8000") for word in workers_command(app)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=60,
                          env=child_env(LIFESPAN_MARK=str(mark), MCPSERVE_STATE_KEYS=generate_key(),
                                        MCPSERVE_REDIS_URL=""))  # fmt: skip
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == (
        "Error: Serving from 2 processes needs the handshake era's sessions shared, or every "
        "2025-11-25 (and older) client breaks at its second request: set MCPSERVE_REDIS_URL "
        "(or pass Server(redis_url=...)), or serve 2026-07-28 clients only with "
        "Server(..., legacy=False)\n"
    )
    assert not mark.exists()


@pytest.mark.subprocess
def test_several_workers_start_when_the_handshake_era_is_off(tmp_path: Path) -> None:
    from mcpserve.protocol.request_state import generate_key

    app = tmp_path / "marked.py"
    app.write_text(LIFESPAN_MARKS + "\n\n@server.tool\ndef first() -> str:\n    return 'one'\n")
    env = {"LIFESPAN_MARK": str(tmp_path / "mark"), "MCPSERVE_STATE_KEYS": generate_key()}
    with http_server_process(tmp_path, args=workers_command(app), env=env) as served:
        assert tool_names(served.url) == ["first"]


@pytest.mark.subprocess
def test_several_workers_start_with_sessions_in_redis(tmp_path: Path, redis: RedisServer) -> None:
    from mcpserve.protocol.request_state import generate_key

    app = tmp_path / "shared.py"
    app.write_text(FIRST)
    env = {"MCPSERVE_STATE_KEYS": generate_key(), "MCPSERVE_REDIS_URL": redis.url}
    with http_server_process(tmp_path, args=workers_command(app), env=env) as served:
        assert tool_names(served.url) == ["first"]


def test_run_help_says_reload_works_over_stdio_and_http() -> None:
    result = CliRunner().invoke(main, ["run", "--help"], terminal_width=200)
    reload_line = next(line for line in result.stdout.splitlines() if "--reload" in line)
    assert "(stdio: the client keeps its pipes; HTTP: uvicorn's reloader)" in reload_line


@pytest.mark.parametrize(
    ("variable", "option"),
    [
        ("MCPSERVE_DRAIN_SECONDS", "--drain-seconds"),
        ("MCPSERVE_SHUTDOWN_GRACE", "--shutdown-grace"),
    ],
)
def test_a_drain_setting_that_is_not_seconds_is_refused_naming_it(
    variable: str, option: str
) -> None:
    """Checked before the target is even looked for: one line, exit status 2."""
    result = CliRunner(env={variable: "soon"}).invoke(main, ["run", "missing.py", "--http"])
    assert result.exit_code == 2, result.output
    assert f"Invalid value for '{option}'" in result.stderr
    assert "'soon' is not a valid float" in result.stderr
    assert "Traceback" not in result.output
