"""``mcpserve install``: each client application's config entry, written to temporary config
files under a temporary home and working directory."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from mcpserve.cli import main
from mcpserve.cli.install import claude_desktop_config
from mcpserve.cli.jsonedit import set_member


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A temporary HOME, and a project folder as the current directory."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    project = tmp_path / "project"
    project.mkdir()
    monkeypatch.chdir(project)
    (project / "app.py").write_text("from mcpserve import Server\nserver = Server('app')\n")
    return home


def install(*args: str) -> Result:
    return CliRunner().invoke(main, ["install", *args], catch_exceptions=False)


def stdio_entry(**env: str) -> dict[str, Any]:
    """What every application gets for ``app.py`` started over stdio."""
    app = str(Path.cwd() / "app.py")
    entry: dict[str, Any] = {"command": sys.executable, "args": ["-m", "mcpserve.cli", "run", app]}
    if env:
        entry["env"] = env
    return entry


def read(path: Path) -> Any:
    return json.loads(path.read_text())


# --------------------------------------------------------------------------- each application


@pytest.mark.skipif(sys.platform != "linux", reason="the Linux location")
def test_claude_desktop_gets_a_stdio_entry_under_mcp_servers_in_its_config(home: Path) -> None:
    result = install("claude-desktop", "app.py", "--env", "SHELF_DB=/tmp/shelf.db")
    assert result.exit_code == 0, result.output
    config = home / ".config" / "Claude" / "claude_desktop_config.json"
    assert read(config) == {"mcpServers": {"app": stdio_entry(SHELF_DB="/tmp/shelf.db")}}
    assert result.stdout.endswith(f"Wrote {config}. Restart Claude Desktop to load it.\n")


@pytest.mark.parametrize(
    ("platform", "environ", "expected"),
    [
        ("darwin", {}, "Library/Application Support/Claude/claude_desktop_config.json"),
        ("win32", {"APPDATA": "/appdata"}, "/appdata/Claude/claude_desktop_config.json"),
        ("linux", {}, ".config/Claude/claude_desktop_config.json"),
    ],
)
def test_claude_desktops_config_is_where_each_platform_keeps_it(
    home: Path, platform: str, environ: dict[str, str], expected: str
) -> None:
    assert claude_desktop_config(platform, environ) == home / expected


def test_claude_code_gets_a_stdio_entry_in_the_projects_mcp_json(home: Path) -> None:
    result = install("claude-code", "app.py", "--name", "shelf")
    assert result.exit_code == 0, result.output
    assert read(Path(".mcp.json")) == {"mcpServers": {"shelf": stdio_entry()}}


def test_cursor_gets_a_stdio_entry_in_the_users_cursor_config(home: Path) -> None:
    result = install("cursor", "app.py")
    assert result.exit_code == 0, result.output
    assert read(home / ".cursor" / "mcp.json") == {"mcpServers": {"app": stdio_entry()}}


def test_cursor_with_project_writes_the_projects_cursor_config(home: Path) -> None:
    result = install("cursor", "app.py", "--project")
    assert result.exit_code == 0, result.output
    assert read(Path(".cursor/mcp.json")) == {"mcpServers": {"app": stdio_entry()}}
    assert not (home / ".cursor").exists()


def test_vscode_gets_a_typed_stdio_entry_under_servers(home: Path) -> None:
    result = install("vscode", "app.py", "--env", "A=1", "--env", "B=two words")
    assert result.exit_code == 0, result.output
    entry = {"type": "stdio", **stdio_entry(A="1", B="two words")}
    assert read(Path(".vscode/mcp.json")) == {"servers": {"app": entry}}


@pytest.mark.parametrize(
    ("client", "path", "entry"),
    [
        ("claude-code", ".mcp.json", {"mcpServers": {"app": {"type": "http", "url": "U"}}}),
        ("cursor", ".cursor/mcp.json", {"mcpServers": {"app": {"url": "U"}}}),
        ("vscode", ".vscode/mcp.json", {"servers": {"app": {"type": "http", "url": "U"}}}),
    ],
)
def test_with_http_the_entry_is_the_url_in_each_applications_shape(
    home: Path, client: str, path: str, entry: dict[str, Any]
) -> None:
    url = "http://127.0.0.1:8000/mcp"
    project = ["--project"] if client == "cursor" else []
    result = install(client, "app.py", "--http", url, *project)
    assert result.exit_code == 0, result.output
    assert read(Path(path)) == json.loads(json.dumps(entry).replace('"U"', json.dumps(url)))


def test_claude_desktop_with_http_is_refused_pointing_to_its_connectors(home: Path) -> None:
    result = install("claude-desktop", "app.py", "--http", "https://example.test/mcp")
    assert result.exit_code == 2
    assert "add a remote server in its Settings > Connectors" in result.stderr


def test_env_file_variables_go_into_the_entry_and_env_options_win(home: Path) -> None:
    Path("prod.env").write_text("# shelf\nSHELF_DB=/var/shelf.db\nMODE=prod\n")
    result = install("cursor", "app.py", "--env-file", "prod.env", "--env", "MODE=debug")
    assert result.exit_code == 0, result.output
    entry = read(home / ".cursor" / "mcp.json")["mcpServers"]["app"]
    assert entry["env"] == {"SHELF_DB": "/var/shelf.db", "MODE": "debug"}


# --------------------------------------------------------------------------- writing safely


def test_installing_twice_changes_nothing_the_second_time_and_says_so(home: Path) -> None:
    install("claude-code", "app.py")
    before = Path(".mcp.json").read_bytes()
    again = install("claude-code", "app.py")
    assert again.exit_code == 0
    assert again.stdout == f"{Path.cwd() / '.mcp.json'} already has 'app' exactly so; " \
        "nothing to change.\n"  # fmt: skip
    assert Path(".mcp.json").read_bytes() == before


def test_the_diff_of_the_config_is_shown_before_writing(home: Path) -> None:
    result = install("claude-code", "app.py", "--config", "mcp.json")
    lines = result.stdout.splitlines()
    assert lines[:5] == [
        "Adding 'app' to Claude Code's config, mcp.json:",
        "--- /dev/null",
        "+++ mcp.json",
        "@@ -0,0 +1,13 @@",
        "+{",
    ]
    assert f'+      "command": {json.dumps(sys.executable)},' in lines


def test_changing_an_entry_shows_only_the_lines_that_change(home: Path) -> None:
    install("claude-code", "app.py", "--env", "MODE=prod")
    result = install("claude-code", "app.py", "--env", "MODE=debug")
    assert result.exit_code == 0
    changed = [line for line in result.stdout.splitlines() if line[:1] in "+-"]
    assert changed == [
        f"--- {Path.cwd() / '.mcp.json'}",
        f"+++ {Path.cwd() / '.mcp.json'}",
        '-        "MODE": "prod"',
        '+        "MODE": "debug"',
    ]
    assert result.stdout.startswith("Updating 'app' in Claude Code's config")


def test_a_dry_run_shows_the_diff_and_writes_nothing(home: Path) -> None:
    result = install("vscode", "app.py", "--dry-run")
    assert result.exit_code == 0
    assert "+++ " in result.stdout
    assert result.stdout.endswith("Dry run: nothing was written.\n")
    assert not Path(".vscode").exists()


def test_unrelated_entries_and_their_formatting_are_left_as_they_were(home: Path) -> None:
    config = Path("mcp.json")
    config.write_text(
        '{\n    "mcpServers": {\n        "other": {"command": "other-server", "args": []}\n'
        '    },\n    "theme": [1, 2]\n}\n'
    )
    result = install("cursor", "app.py", "--config", "mcp.json")
    assert result.exit_code == 0, result.output
    app = str(Path.cwd() / "app.py")
    assert config.read_text() == (
        '{\n    "mcpServers": {\n        "other": {"command": "other-server", "args": []},\n'
        '        "app": {\n'
        f'            "command": {json.dumps(sys.executable)},\n'
        '            "args": [\n                "-m",\n                "mcpserve.cli",\n'
        f'                "run",\n                {json.dumps(app)}\n            ]\n'
        '        }\n    },\n    "theme": [1, 2]\n}\n'
    )


def test_a_config_that_is_not_valid_json_is_refused_and_left_alone(home: Path) -> None:
    config = Path(".mcp.json")
    config.write_text('{\n  // my servers\n  "mcpServers": {}\n}\n')
    result = install("claude-code", "app.py")
    assert result.exit_code == 1
    assert f"{Path.cwd() / '.mcp.json'} is not valid JSON (" in result.stderr
    assert "it was left as it is" in result.stderr
    assert config.read_text() == '{\n  // my servers\n  "mcpServers": {}\n}\n'


def test_a_config_whose_servers_are_not_an_object_is_refused(home: Path) -> None:
    Path(".mcp.json").write_text('{"mcpServers": []}')
    result = install("claude-code", "app.py")
    assert result.exit_code == 1
    assert '"mcpServers" in' in result.stderr
    assert "is not an object; fix it by hand first" in result.stderr


# --------------------------------------------------------------------------- mistakes


def test_a_missing_target_file_is_refused_before_any_config_is_touched(home: Path) -> None:
    result = install("claude-code", "missing.py")
    assert result.exit_code == 2
    assert "No such file: missing.py" in result.stderr
    assert not Path(".mcp.json").exists()


def test_project_is_refused_for_an_application_without_a_choice_of_file(home: Path) -> None:
    result = install("vscode", "app.py", "--project")
    assert result.exit_code == 2
    assert "--project is for cursor; VS Code always uses .vscode/mcp.json" in result.stderr


def test_env_with_http_is_refused(home: Path) -> None:
    result = install("cursor", "app.py", "--http", "http://x/mcp", "--env", "A=1")
    assert result.exit_code == 2
    assert "an HTTP server has its own environment" in result.stderr


def test_an_env_option_without_equals_shows_the_syntax(home: Path) -> None:
    result = install("cursor", "app.py", "--env", "SHELF_DB")
    assert result.exit_code == 2
    assert "--env takes KEY=VALUE, got 'SHELF_DB'" in result.stderr


# --------------------------------------------------------------------------- editing JSON text


@pytest.mark.parametrize(
    ("before", "after"),
    [
        ("{}", '{\n  "servers": {\n    "app": {\n      "url": "U"\n    }\n  }\n}'),
        ('{\n  "servers": {}\n}\n',
         '{\n  "servers": {\n    "app": {\n      "url": "U"\n    }\n  }\n}\n'),
        ('{"servers": {"x": 1}}', '{"servers": {"x": 1, "app": {"url": "U"}}}'),
        ('{\n\t"theme": "dark"\n}',
         '{\n\t"theme": "dark",\n\t"servers": {\n\t\t"app": {\n\t\t\t"url": "U"\n\t\t}\n\t}\n}'),
        ('{\n  "servers": {\n    "app": {"url": "old"}, "y": 2\n  }\n}',
         '{\n  "servers": {\n    "app": {\n      "url": "U"\n    }, "y": 2\n  }\n}'),
    ],
)  # fmt: skip
def test_setting_an_entry_changes_only_its_bytes_in_the_files_own_layout(
    before: str, after: str
) -> None:
    assert set_member(before, ["servers", "app"], {"url": "U"}) == after
    assert json.loads(after)["servers"]["app"] == {"url": "U"}
