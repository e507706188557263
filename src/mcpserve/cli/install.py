"""``mcpserve install CLIENT TARGET``: the client application's config entry, written for you.

Each supported application (:data:`APPS`) keeps its MCP servers in a JSON file, under a
top-level object (``mcpServers``, or ``servers`` for VS Code), one member per server. The
entry starts the target over stdio with this very interpreter, so the packages installed
next to mcpserve are the ones the server imports::

    {"command": "/path/to/python", "args": ["-m", "mcpserve.cli", "run", "/abs/app.py"],
     "env": {"KEY": "VALUE"}}

or, with ``--http URL``, points at a server already running (``{"url": ...}``, typed
``"http"`` where the application wants a type). ``env`` is written only when given.

Installing is idempotent: when the entry is already there exactly, nothing is written and
the command says so. Otherwise it prints a unified diff of the file, then writes it (not
with ``--dry-run``) through a temporary file, so a crash leaves the old file whole. Only
the entry's bytes change (:mod:`.jsonedit`); a file that is not valid JSON is refused, not
overwritten.
"""

from __future__ import annotations

import difflib
import json
import os
import shutil
import sys
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

import click

from .._types import JSONDict
from .envfile import EnvFileError, parse_env
from .errors import Mistake
from .jsonedit import new_document, set_member
from .project import ProjectCommand, ProjectFile, chosen_target
from .targets import absolute_target, is_file_target, split_target, target_file


def claude_desktop_config(
    platform: str | None = None, environ: Mapping[str, str] | None = None
) -> Path:
    """Where Claude Desktop reads its config on this (or the given) platform."""
    platform = sys.platform if platform is None else platform
    environ = os.environ if environ is None else environ
    if platform == "darwin":
        return Path.home() / "Library" / "Application Support" / "Claude" / _DESKTOP_FILE
    if platform == "win32":
        appdata = environ.get("APPDATA") or str(Path.home() / "AppData" / "Roaming")
        return Path(appdata) / "Claude" / _DESKTOP_FILE
    return Path.home() / ".config" / "Claude" / _DESKTOP_FILE


_DESKTOP_FILE = "claude_desktop_config.json"


@dataclass(frozen=True)
class App:
    """One client application: where its config is and what an entry looks like."""

    label: str
    section: str
    #: The user-wide config file (``None``: the application has none).
    user_file: Callable[[], Path] | None
    #: The config file relative to the current directory (``None``: none per project).
    project_file: str | None
    #: The ``type`` a stdio entry carries, if the application wants one.
    stdio_type: str | None
    #: An HTTP entry for a URL (``None``: the file cannot hold one).
    http_entry: Callable[[str], JSONDict] | None
    then: str

    def config_file(self, project: bool) -> Path:
        if project or self.user_file is None:
            assert self.project_file is not None
            return Path.cwd() / self.project_file
        return self.user_file()

    def stdio_entry(self, command: str, args: list[str], env: dict[str, str]) -> JSONDict:
        entry: JSONDict = {"type": self.stdio_type} if self.stdio_type else {}
        entry.update(command=command, args=args)
        if env:
            entry["env"] = env
        return entry


APPS: dict[str, App] = {
    "claude-desktop": App(
        label="Claude Desktop",
        section="mcpServers",
        user_file=claude_desktop_config,
        project_file=None,
        stdio_type=None,
        http_entry=None,
        then="Restart Claude Desktop to load it.",
    ),
    "claude-code": App(
        label="Claude Code",
        section="mcpServers",
        user_file=None,
        project_file=".mcp.json",
        stdio_type=None,
        http_entry=lambda url: {"type": "http", "url": url},
        then="Claude Code asks you to approve it the next time it starts in this directory.",
    ),
    "cursor": App(
        label="Cursor",
        section="mcpServers",
        user_file=lambda: Path.home() / ".cursor" / "mcp.json",
        project_file=".cursor/mcp.json",
        stdio_type=None,
        http_entry=lambda url: {"url": url},
        then="Cursor lists it under Settings > MCP.",
    ),
    "vscode": App(
        label="VS Code",
        section="servers",
        user_file=None,
        project_file=".vscode/mcp.json",
        stdio_type="stdio",
        http_entry=lambda url: {"type": "http", "url": url},
        then="VS Code lists it among its MCP servers, ready to start.",
    ),
}


class ConfigError(click.ClickException):
    """A config file this command will not touch; the message says what to fix."""


def read_config(path: Path, section: str) -> tuple[str | None, JSONDict]:
    """The file's text (``None`` when absent) and its ``section`` object."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None, {}
    if not text.strip():
        return None, {}
    try:
        document = json.loads(text)
    except ValueError as exc:
        raise ConfigError(
            f"{path} is not valid JSON ({exc}); it was left as it is. Fix it (comments and "
            "trailing commas are not JSON), or move it aside and run this again"
        ) from None
    if not isinstance(document, dict):
        raise ConfigError(
            f"{path} holds a JSON {type(document).__name__}, not an object; it was left as it is"
        )
    servers = document.get(section, {})
    if not isinstance(servers, dict):
        raise ConfigError(f'"{section}" in {path} is not an object; fix it by hand first')
    return text, servers


def updated_text(text: str | None, section: str, name: str, entry: JSONDict) -> str:
    if text is None:
        return new_document([section, name], entry)
    return set_member(text, [section, name], entry)


def diff(path: Path, before: str | None, after: str) -> str:
    lines = difflib.unified_diff(
        (before or "").splitlines(keepends=True),
        after.splitlines(keepends=True),
        fromfile="/dev/null" if before is None else str(path),
        tofile=str(path),
    )
    return "".join(line if line.endswith("\n") else line + "\n" for line in lines)


def write_atomically(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.mcpserve-install")
    temporary.write_text(text, encoding="utf-8")
    if path.exists():
        shutil.copymode(path, temporary)  # a config kept private stays private
    os.replace(temporary, path)


def environment(pairs: Iterable[str], env_file: Path | None) -> dict[str, str]:
    """``--env-file`` then ``--env`` (which wins): the ``env`` the entry carries."""
    env: dict[str, str] = {}
    if env_file is not None:
        try:
            env.update(parse_env(env_file.read_text(encoding="utf-8"), str(env_file)))
        except EnvFileError as exc:
            raise Mistake(f"{exc}; fix that line of the env file") from None
    for pair in pairs:
        key, equals, value = pair.partition("=")
        if not equals or not key:
            raise Mistake(f"--env takes KEY=VALUE, got {pair!r}")
        env[key] = value
    return env


def default_name(target: str) -> str:
    location, _ = split_target(target)
    return Path(location).stem if is_file_target(location) else location.rpartition(".")[2]


@click.command(cls=ProjectCommand, defaults_of=ProjectFile.install_defaults)
@click.argument("client", type=click.Choice(list(APPS)), metavar="CLIENT")
@click.argument("target", required=False)
@click.option("--name", help="The server's name in the config (default: the file's name).")
@click.option(
    "--env",
    "env_pairs",
    multiple=True,
    metavar="KEY=VALUE",
    help="An environment variable for the server (repeatable).",
)
@click.option(
    "--env-file",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="Environment variables for the server, KEY=VALUE lines.",
)
@click.option(
    "--http",
    "url",
    metavar="URL",
    help="Point the client at this running HTTP server, not a process.",
)
@click.option("--project", is_flag=True, help="Cursor: the project's .cursor/mcp.json.")
@click.option(
    "--config",
    "config_path",
    type=click.Path(dir_okay=False, path_type=Path),
    help="The config file to edit, instead of the application's usual one.",
)
@click.option("--dry-run", is_flag=True, help="Show the change without writing it.")
def install(
    client: str,
    target: str | None,
    name: str | None,
    env_pairs: tuple[str, ...],
    env_file: Path | None,
    url: str | None,
    project: bool,
    config_path: Path | None,
    dry_run: bool,
) -> None:
    """Add TARGET to a client application's MCP config.

    CLIENT is claude-desktop, claude-code, cursor or vscode. The entry starts TARGET over
    stdio with this Python (or, with --http, points at a running server). The change is
    shown as a diff before it is written; installing the same entry again changes nothing.

    \b
    mcpserve install claude-desktop app.py --env NOTES_DB=/data/notes.db
    mcpserve install vscode app.py --http http://127.0.0.1:8000/mcp --dry-run

    Without TARGET, the server and env_file of [tool.mcpserve] in ./pyproject.toml (or of
    ./mcpserve.toml) are installed.
    """
    target = chosen_target(target)
    app = APPS[client]
    if project and not (app.user_file and app.project_file):
        where = app.project_file or "its user config"
        raise Mistake(f"--project is for cursor; {app.label} always uses {where}")
    env = environment(env_pairs, env_file)
    if url is not None:
        if app.http_entry is None:
            raise Mistake(
                f"{app.label}'s config file holds only servers it starts itself; add a remote "
                "server in its Settings > Connectors, or install without --http"
            )
        if env:
            raise Mistake(
                "--env and --env-file are for servers the client starts; "
                "an HTTP server has its own environment"
            )
        entry = app.http_entry(url)
    else:
        target_file(target)  # the file must be there: the entry names it
        args = ["-m", "mcpserve.cli", "run", absolute_target(target)]
        entry = app.stdio_entry(sys.executable, args, env)
    name = name or default_name(target)
    path = config_path or app.config_file(project)
    before, servers = read_config(path, app.section)
    if servers.get(name) == entry:
        click.echo(f"{path} already has {name!r} exactly so; nothing to change.")
        return
    after = updated_text(before, app.section, name, entry)
    verb = "Updating {!r} in" if name in servers else "Adding {!r} to"
    click.echo(f"{verb.format(name)} {app.label}'s config, {path}:")
    click.echo(diff(path, before, after), nl=False)
    if dry_run:
        click.echo("Dry run: nothing was written.")
        return
    write_atomically(path, after)
    click.echo(f"Wrote {path}. {app.then}")
