"""``mcpserve run --reload`` and ``--env-file``, in real subprocesses."""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from click.testing import CliRunner

from mcpserve import Client
from mcpserve.cli import main
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
        response = httpx.post(url, content=encode(request(1, "tools/list")),
                              headers=mcp_headers("tools/list"), timeout=5)  # fmt: skip
    except httpx.TransportError:
        return None  # between two server processes
    if response.status_code != 200:
        return None
    return [tool["name"] for tool in decode_reply("tools/list", response).result["tools"]]


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


def test_reload_without_http_is_refused_saying_why_and_what_to_run(tmp_path: Path) -> None:
    app = tmp_path / "app.py"
    app.write_text(FIRST)
    result = CliRunner().invoke(main, ["run", str(app), "--reload"])
    assert result.exit_code == 2
    assert "--reload needs --http: a stdio server's pipes belong to the client" in result.stderr
    assert f"mcpserve run {app} --http --reload" in result.stderr


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


async def test_env_file_variables_are_set_before_the_target_is_imported(tmp_path: Path) -> None:
    app, env_file = env_app(tmp_path)
    greeting = await greeting_of(app, env_file)
    assert greeting == {"at_import": "hello", "now": "hello", "quoted": "a # b"}


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


def test_dev_serves_the_page_and_the_endpoint_from_one_process(tmp_path: Path) -> None:
    app = tmp_path / "app.py"
    app.write_text(FIRST)
    command = [sys.executable, "-m", "mcpserve.cli", "dev", str(app), "--port", "{port}"]
    with http_server_process(tmp_path, args=command) as served:
        page = httpx.get(f"http://127.0.0.1:{served.port}/", timeout=5)
        assert page.status_code == 200
        assert page.headers["content-type"].startswith("text/html")
        assert tool_names(served.url) == ["first"]
    log = served.log.read_text()
    assert f"http://127.0.0.1:{served.port}/" in log  # it says where the page is
    assert f"http://127.0.0.1:{served.port}/mcp" in log  # and the endpoint
