"""The project file: ``mcpserve run`` and ``mcpserve install`` without a TARGET take their
settings from ``[tool.mcpserve]`` in ./pyproject.toml or from ./mcpserve.toml.

Serving runs the real command in a subprocess, in the project's folder, and asks it over
HTTP (or stdio); the file's mistakes are checked in process (``CliRunner``)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx2
import pytest
from click.testing import CliRunner, Result

from command_serving import MCPSERVE, served_command
from mcpserve.cli import main
from mcpserve.protocol.request_state import generate_key
from redis_server import RedisServer
from wire_helpers import call, child_env, decode_reply, encode, free_port, mcp_headers

SERVER = """
import logging
import os

from mcpserve import Server

server = Server("shelf")
SHELF = os.environ.get("SHELF_NAME", "unset")


@server.tool
def shelve(title: str) -> str:
    logging.getLogger("shelf").warning("shelving %s", title)
    return f"{title} on {SHELF}"
"""


def write_project(folder: Path, settings: str, *, own_file: bool = False) -> None:
    """The app beside a project file holding ``settings`` (TOML lines)."""
    (folder / "shelf_app.py").write_text(SERVER)
    if own_file:
        (folder / "mcpserve.toml").write_text(settings)
    else:
        (folder / "pyproject.toml").write_text(
            f'[project]\nname = "shelf"\n\n[tool.mcpserve]\n{settings}'
        )


def shelve(url: str, title: str) -> str:
    response = httpx2.post(url, content=encode(call(1, "shelve", {"title": title})),
                           headers=mcp_headers("tools/call", "shelve"), timeout=10)  # fmt: skip
    result = decode_reply("tools/call", response).result
    return str(result["content"][0]["text"])


def listening(port: int) -> bool:
    try:
        httpx2.get(f"http://127.0.0.1:{port}/", timeout=2)
    except httpx2.TransportError:
        return False
    return True


@pytest.mark.subprocess
def test_run_without_a_target_serves_what_pyproject_names_over_http_on_its_port(
    tmp_path: Path,
) -> None:
    port = free_port()
    write_project(tmp_path, f'server = "shelf_app.py:server"\ntransport = "http"\n'
                            f'port = {port}\nenv_file = "shelf.env"\n')  # fmt: skip
    (tmp_path / "shelf.env").write_text("SHELF_NAME=oak\n")
    with served_command(["run"], cwd=tmp_path, port=port) as served:
        assert shelve(served.url, "Dune") == "Dune on oak"


@pytest.mark.subprocess
def test_mcpserve_toml_names_a_module_imported_from_its_folder(tmp_path: Path) -> None:
    port = free_port()
    write_project(tmp_path, f'server = "shelf_app:server"\ntransport = "http"\nport = {port}\n',
                  own_file=True)  # fmt: skip
    # The console script, as a user types it: unlike ``python -m``, it puts no folder of the
    # project on sys.path, so the module is found only through the file's folder.
    script = Path(sys.executable).parent / "mcpserve"
    with served_command(["run"], cwd=tmp_path, port=port, command=[str(script)]) as served:
        assert shelve(served.url, "Emma") == "Emma on unset"


@pytest.mark.subprocess
def test_a_port_on_the_command_line_wins_over_the_files(tmp_path: Path) -> None:
    in_file, given = free_port(), free_port()
    write_project(tmp_path, f'server = "shelf_app.py"\ntransport = "http"\nport = {in_file}\n')
    with served_command(["run", "--port", str(given)], cwd=tmp_path, port=given) as served:
        assert shelve(served.url, "Dune") == "Dune on unset"
        assert not listening(in_file)


@pytest.mark.subprocess
@pytest.mark.parametrize(("metrics", "status"), [("true", 200), ("false", 404)])
def test_metrics_in_the_file_serves_metrics_for_prometheus(
    tmp_path: Path, metrics: str, status: int
) -> None:
    port = free_port()
    write_project(tmp_path, f'server = "shelf_app.py"\ntransport = "http"\nport = {port}\n'
                            f"metrics = {metrics}\n")  # fmt: skip
    with served_command(["run"], cwd=tmp_path, port=port, env={"MCPSERVE_METRICS": ""}) as served:
        assert shelve(served.url, "Dune") == "Dune on unset"
        scraped = httpx2.get(served.url.removesuffix("/mcp") + "/metrics", timeout=10)
    assert scraped.status_code == status
    if status == 200:
        assert 'gen_ai_tool_name="shelve"' in scraped.text


def stdio_stderr(folder: Path, args: list[str], env: dict[str, str]) -> str:
    """What ``mcpserve run ARGS`` in ``folder`` writes on stderr for one stdio tool call."""
    done = subprocess.run(
        [*MCPSERVE, "run", *args], input=encode(call(1, "shelve", {"title": "Dune"})) + b"\n",
        capture_output=True, cwd=folder, env=child_env(**env), timeout=60,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr.decode()
    assert json.loads(done.stdout)["result"]["content"][0]["text"] == "Dune on unset"
    return done.stderr.decode()


def is_json_log(stderr: str) -> bool:
    lines = stderr.splitlines()
    assert any("shelving Dune" in line for line in lines), stderr
    return all(line.startswith("{") and json.loads(line) for line in lines)


@pytest.mark.subprocess
@pytest.mark.parametrize(
    ("args", "env", "json_logs"),
    [
        ([], {}, True),  # the file's log_format
        ([], {"MCPSERVE_LOG_FORMAT": "text"}, False),  # the environment wins over the file
        (["--log-format", "json"], {"MCPSERVE_LOG_FORMAT": "text"}, True),  # the flag over both
    ],
)
def test_flags_win_over_the_environment_which_wins_over_the_file(
    tmp_path: Path, args: list[str], env: dict[str, str], json_logs: bool
) -> None:
    write_project(tmp_path, 'server = "shelf_app.py"\nlog_format = "json"\n')
    environment = {"MCPSERVE_LOG_FORMAT": "", **env}  # unset unless the case sets it
    assert is_json_log(stdio_stderr(tmp_path, args, environment)) is json_logs


@pytest.mark.subprocess
def test_transport_stdio_in_the_file_gives_way_to_http_on_the_command_line(
    tmp_path: Path,
) -> None:
    port = free_port()
    write_project(tmp_path, f'server = "shelf_app.py"\ntransport = "stdio"\nport = {port}\n')
    with served_command(["run", "--http"], cwd=tmp_path, port=port) as served:
        assert shelve(served.url, "Dune") == "Dune on unset"


# --------------------------------------------------------------------------- its mistakes


def run_here(folder: Path, monkeypatch: pytest.MonkeyPatch, *args: str) -> Result:
    monkeypatch.chdir(folder)
    return CliRunner().invoke(main, [*args], prog_name="mcpserve", catch_exceptions=False)


IN_TABLE = "Error: pyproject.toml [tool.mcpserve]: "


@pytest.mark.parametrize(
    ("settings", "said"),
    [
        ('server = "shelf_app.py"\ncolour = "blue"\n',
         f"{IN_TABLE}unknown key 'colour' (the keys are server, transport, host, port, path, "
         "workers, redis_url, env_file, metrics, log_format, worker_concurrency)"),
        ('port = "80a"\n', f'{IN_TABLE}port must be an integer, not "80a"'),
        ("port = true\n", f"{IN_TABLE}port must be an integer, not true"),
        ("metrics = 1\n", f"{IN_TABLE}metrics must be true or false, not 1"),
        ('transport = "sse"\n', f'{IN_TABLE}transport must be "stdio" or "http", not "sse"'),
        ("workers = 0\n", f"{IN_TABLE}workers must be 1 or more, not 0"),
        ("worker_concurrency = 0\n", f"{IN_TABLE}worker_concurrency must be 1 or more, not 0"),
        ('worker_concurrency = "4"\n',
         f'{IN_TABLE}worker_concurrency must be an integer, not "4"'),
        ('server = "shelf_app.py"\nport = 80\nhost =\n',
         "Error: pyproject.toml is not valid TOML: Invalid value (at line 7, column 7); "
         "fix that line"),
    ],
)  # fmt: skip
@pytest.mark.parametrize("command", ["run", "install", "worker"])
def test_a_file_that_cannot_be_used_is_said_in_one_line_with_exit_status_2(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, settings: str, said: str, command: str
) -> None:
    write_project(tmp_path, settings)
    args = ["install", "claude-code"] if command == "install" else [command]
    result = run_here(tmp_path, monkeypatch, *args)
    assert result.exit_code == 2
    assert result.stderr == said + "\n"


def test_malformed_mcpserve_toml_is_named_with_its_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_project(tmp_path, 'server = "shelf_app.py"\n[oops\n', own_file=True)
    result = run_here(tmp_path, monkeypatch, "run")
    assert result.exit_code == 2
    assert result.stderr == (
        "Error: mcpserve.toml is not valid TOML: Expected ']' at the end of a table declaration "
        "(at line 2, column 6); fix that line\n"
    )


def test_settings_in_both_files_are_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_project(tmp_path, 'server = "shelf_app.py"\n')
    (tmp_path / "mcpserve.toml").write_text("port = 9000\n")
    result = run_here(tmp_path, monkeypatch, "run")
    assert result.exit_code == 2
    assert result.stderr == (
        "Error: both pyproject.toml [tool.mcpserve] and mcpserve.toml set mcpserve's options; "
        "keep them in one of the two\n"
    )


def test_a_pyproject_without_the_table_is_no_project_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "shelf"\n')
    (tmp_path / "mcpserve.toml").write_text('server = "shelf_app.py"\nport = "80a"\n')
    result = run_here(tmp_path, monkeypatch, "run")
    assert result.exit_code == 2
    assert result.stderr == 'Error: mcpserve.toml: port must be an integer, not "80a"\n'


def test_no_target_and_no_file_is_the_usage_error_with_a_hint(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    result = run_here(tmp_path, monkeypatch, "run")
    assert result.exit_code == 2
    assert result.stderr.startswith("Usage: mcpserve run [OPTIONS] [TARGET]\n")
    assert result.stderr.endswith(
        "Error: Missing argument 'TARGET': name the server to serve (app.py or app.py:server), "
        'or name it once for the project: server = "app.py:server" under [tool.mcpserve] in '
        "pyproject.toml.\n"
    )


def test_a_file_that_names_no_server_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_project(tmp_path, "port = 9000\n")
    result = run_here(tmp_path, monkeypatch, "run")
    assert result.exit_code == 2
    assert result.stderr.endswith(
        "Error: Missing argument 'TARGET': pyproject.toml [tool.mcpserve] names no server; add "
        'server = "app.py:server" there, or name the server to serve\n'
    )


def test_a_target_on_the_command_line_leaves_the_file_unread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_project(tmp_path, 'colour = "blue"\n')
    config = tmp_path / "clients.json"
    result = run_here(tmp_path, monkeypatch, "install", "claude-code", "shelf_app.py",
                      "--config", str(config))  # fmt: skip
    assert result.exit_code == 0, result.output


# --------------------------------------------------------------------------- install


def test_install_without_a_target_installs_the_files_server_with_its_env_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = tmp_path / "shelf"
    project.mkdir()
    write_project(project, 'server = "shelf_app.py:server"\nenv_file = "prod.env"\n')
    (project / "prod.env").write_text("SHELF_NAME=oak\n")
    config = tmp_path / "clients.json"
    result = run_here(project, monkeypatch, "install", "claude-code", "--config", str(config))
    assert result.exit_code == 0, result.output
    entry: dict[str, Any] = json.loads(config.read_text())["mcpServers"]["shelf_app"]
    app = f"{project.resolve() / 'shelf_app.py'}:server"
    assert entry == {"command": sys.executable, "args": ["-m", "mcpserve.cli", "run", app],
                     "env": {"SHELF_NAME": "oak"}}  # fmt: skip


@pytest.mark.subprocess
@pytest.mark.redis
def test_the_files_redis_url_shares_handshake_era_sessions_between_its_workers(
    tmp_path: Path, redis: RedisServer
) -> None:
    redis.flush()
    port = free_port()
    write_project(tmp_path, f'server = "shelf_app.py"\ntransport = "http"\nport = {port}\n'
                            f'workers = 2\nredis_url = "{redis.url}"\n')  # fmt: skip
    keys = {"MCPSERVE_STATE_KEYS": generate_key(), "MCPSERVE_REDIS_URL": ""}
    with served_command(["run"], cwd=tmp_path, port=port, env=keys) as served:
        headers = {"content-type": "application/json",
                   "accept": "application/json, text/event-stream"}  # fmt: skip
        hello = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "old", "version": "1"}}}  # fmt: skip
        started = httpx2.post(served.url, json=hello, headers=headers, timeout=10)
        assert started.status_code == 200, started.text
        headers |= {"mcp-session-id": started.headers["mcp-session-id"],
                    "mcp-protocol-version": "2025-11-25"}  # fmt: skip
        initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        httpx2.post(served.url, json=initialized, headers=headers, timeout=10)
        for number in range(6):  # each on a new connection, which either worker may take
            params = {"name": "shelve", "arguments": {"title": f"b{number}"}}
            called = {"jsonrpc": "2.0", "id": 2 + number, "method": "tools/call", "params": params}
            answer = httpx2.post(served.url, json=called, headers=headers, timeout=10)
            assert answer.status_code == 200, answer.text
            assert f"b{number} on unset" in answer.text
