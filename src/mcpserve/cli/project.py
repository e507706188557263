"""The project file: what ``mcpserve run``, ``mcpserve install`` and ``mcpserve worker`` take
when no TARGET is given.

A project names its server once, in ``[tool.mcpserve]`` of ``./pyproject.toml`` or at the
top of ``./mcpserve.toml`` (the same keys; both setting them is refused, so there is never
a question of which one counts: ``docs/decisions.md``, "The project file")::

    [tool.mcpserve]
    server = "app.py:server"
    transport = "http"
    port = 8000

The file is read only when the command line names no TARGET: a command given a target is
about that target, and a client application that starts ``mcpserve run /abs/app.py`` in
the project's folder gets the stdio server it asked for. ``server`` and ``env_file`` are
relative to the file's folder, wherever the command runs from.

The settings become the command's click ``default_map`` (:class:`ProjectCommand`), so
click's own order of precedence holds: the command line, then an option's environment
variable (``MCPSERVE_LOG_FORMAT``, ``MCPSERVE_REDIS_URL``), then the file, then the
option's default. Each key is checked before anything runs: an unknown key, a value of the
wrong type or a file that is not TOML is a :class:`~.errors.Mistake` naming the file and
the key (or the line).
"""

from __future__ import annotations

import json
import os
import sys
import tomllib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click

from .errors import Mistake
from .targets import is_file_target, split_target

PYPROJECT = "pyproject.toml"
_PROJECT = "mcpserve.project"  # where the command's context keeps the file it read
OWN_FILE = "mcpserve.toml"
#: What to write when no TARGET is given and no file names one.
HINT = (
    "name the server to serve (app.py or app.py:server), or name it once for the project: "
    f'server = "app.py:server" under [tool.mcpserve] in {PYPROJECT}'
)

#: Each key of the file, and what it must be: a TOML type, or the strings it may be.
_TEXT, _INTEGER, _BOOLEAN = "a string", "an integer", "true or false"
KEYS: dict[str, str | tuple[str, ...]] = {
    "server": _TEXT,
    "transport": ("stdio", "http"),
    "host": _TEXT,
    "port": _INTEGER,
    "path": _TEXT,
    "workers": _INTEGER,
    "redis_url": _TEXT,
    "env_file": _TEXT,
    "metrics": _BOOLEAN,
    "log_format": ("text", "json"),
    "worker_concurrency": _INTEGER,
}


@dataclass(frozen=True)
class ProjectFile:
    """The checked settings of one project file."""

    path: Path
    #: How errors name it: ``pyproject.toml [tool.mcpserve]`` or ``mcpserve.toml``.
    label: str
    settings: Mapping[str, Any]

    @property
    def folder(self) -> Path:
        return self.path.parent

    @property
    def target(self) -> str | None:
        """``server``, its file made absolute (a module target is imported from the
        file's folder: :func:`chosen_target`)."""
        target = self.settings.get("server")
        if target is None:
            return None
        location, attribute = split_target(target)
        in_folder = self.folder / location
        if not (location.endswith(".py") or in_folder.exists()):
            return str(target)
        return f"{in_folder.resolve()}:{attribute}" if attribute else str(in_folder.resolve())

    @property
    def env_file(self) -> Path | None:
        name = self.settings.get("env_file")
        return None if name is None else (self.folder / name).resolve()

    def run_defaults(self) -> dict[str, Any]:
        """The ``default_map`` of ``mcpserve run``: each key onto the parameter it sets."""
        defaults: dict[str, Any] = {
            name: value
            for name, value in self.settings.items()
            if name not in ("server", "transport", "env_file", "worker_concurrency")
        }
        if "transport" in self.settings:
            defaults["use_http"] = self.settings["transport"] == "http"
        return {**defaults, **self.install_defaults()}

    def install_defaults(self) -> dict[str, Any]:
        """The ``default_map`` of ``mcpserve install``: the server, and its environment."""
        defaults: dict[str, Any] = {}
        if self.target is not None:
            defaults["target"] = self.target
        if self.env_file is not None:
            defaults["env_file"] = str(self.env_file)
        return defaults

    def worker_defaults(self) -> dict[str, Any]:
        """The ``default_map`` of ``mcpserve worker``: the server, its environment, its
        Redis, and how many tasks it runs at once."""
        defaults = self.install_defaults()
        if "redis_url" in self.settings:
            defaults["redis_url"] = self.settings["redis_url"]
        if "worker_concurrency" in self.settings:
            defaults["concurrency"] = self.settings["worker_concurrency"]
        return defaults


def find_project_file(folder: Path | None = None) -> ProjectFile | None:
    """The project file of ``folder`` (the current directory), checked; None when there is
    none. Raises :class:`~.errors.Mistake` for a file that cannot be used as written."""
    folder = Path.cwd() if folder is None else folder
    found: list[ProjectFile] = []
    pyproject = folder / PYPROJECT
    if pyproject.is_file():
        tool = _read_toml(pyproject).get("tool")
        section = tool.get("mcpserve") if isinstance(tool, dict) else None
        if section is not None:
            found.append(_checked(pyproject, f"{PYPROJECT} [tool.mcpserve]", section))
    own = folder / OWN_FILE
    if own.is_file():
        found.append(_checked(own, OWN_FILE, _read_toml(own)))
    if len(found) > 1:
        raise Mistake(
            f"both {PYPROJECT} [tool.mcpserve] and {OWN_FILE} set mcpserve's options; "
            "keep them in one of the two"
        )
    return found[0] if found else None


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        with path.open("rb") as file:
            return tomllib.load(file)
    except tomllib.TOMLDecodeError as exc:
        # The message ends with where: "(at line 3, column 7)".
        raise Mistake(f"{path.name} is not valid TOML: {exc}; fix that line") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise Mistake(f"cannot read {path.name}: {exc}") from None


def _checked(path: Path, label: str, section: object) -> ProjectFile:
    if not isinstance(section, dict):
        raise Mistake(f"{label} must be a table of settings, not {_shown(section)}")
    for key, value in section.items():
        wanted = KEYS.get(key)
        if wanted is None:
            known = ", ".join(KEYS)
            raise Mistake(f"{label}: unknown key {key!r} (the keys are {known})")
        problem = _type_problem(value, wanted)
        if problem is not None:
            raise Mistake(f"{label}: {key} must be {problem}, not {_shown(value)}")
    if section.get("port") is not None and not 0 <= section["port"] <= 65535:
        raise Mistake(f"{label}: port must be between 0 and 65535, not {section['port']}")
    for count in ("workers", "worker_concurrency"):
        if section.get(count) is not None and section[count] < 1:
            raise Mistake(f"{label}: {count} must be 1 or more, not {section[count]}")
    return ProjectFile(path.resolve(), label, dict(section))


def _type_problem(value: object, wanted: str | tuple[str, ...]) -> str | None:
    """What ``value`` should have been, or None when it is that."""
    if isinstance(wanted, tuple):
        return None if value in wanted else " or ".join(json.dumps(each) for each in wanted)
    fits = {
        _TEXT: isinstance(value, str),
        _INTEGER: isinstance(value, int) and not isinstance(value, bool),
        _BOOLEAN: isinstance(value, bool),
    }[wanted]
    return None if fits else wanted


def _shown(value: object) -> str:
    """A value as it would be written in TOML (near enough for a message)."""
    try:
        return json.dumps(value, default=str)[:80]
    except ValueError:
        return repr(value)[:80]


class ProjectCommand(click.Command):
    """A command whose settings come from the project file when no TARGET is given.

    ``defaults_of`` turns the file into the command's ``default_map``. Whether a TARGET was
    given is learned from a lenient parse of the arguments before the real one, so that
    click's precedence (command line, environment, ``default_map``, default) does the rest.
    """

    def __init__(
        self, *args: Any, defaults_of: Callable[[ProjectFile], dict[str, Any]], **kwargs: Any
    ) -> None:
        super().__init__(*args, **kwargs)
        self.defaults_of = defaults_of

    def make_context(
        self,
        info_name: str | None,
        args: list[str],
        parent: click.Context | None = None,
        **extra: Any,
    ) -> click.Context:
        project = None
        if "default_map" not in extra and not self._names_target(info_name, args, parent):
            project = find_project_file()
            if project is not None:
                extra["default_map"] = self.defaults_of(project)
        ctx = super().make_context(info_name, args, parent, **extra)
        ctx.meta[_PROJECT] = project
        return ctx

    def _names_target(
        self, info_name: str | None, args: Sequence[str], parent: click.Context | None
    ) -> bool:
        if any(arg in self.get_help_option_names(click.Context(self)) for arg in args):
            return True  # help is shown whatever the file says
        probe = click.Context(self, info_name=info_name, parent=parent, resilient_parsing=True)
        options, _, _ = self.make_parser(probe).parse_args(args=list(args))
        return isinstance(options.get("target"), str)  # absent: None, or click's UNSET


def chosen_target(target: str | None) -> str:
    """The TARGET to serve: the command line's, or the project file's ``server`` (a module
    target of the file is imported from the file's folder, here and in the processes this
    one starts). Raises the usage error that says how to name one."""
    project: ProjectFile | None = click.get_current_context().meta.get(_PROJECT)
    if target is None:
        raise missing_target(project)
    if project is not None and target == project.target:
        location, _ = split_target(target)
        if not is_file_target(location):
            folder = str(project.folder)
            sys.path.insert(0, folder)
            inherited = os.environ.get("PYTHONPATH")
            os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, (folder, inherited)))
    return target


def missing_target(project: ProjectFile | None) -> click.UsageError:
    """No TARGET on the command line, and none in a project file: what to say."""
    if project is None:
        return click.UsageError(f"Missing argument 'TARGET': {HINT}.")
    return click.UsageError(
        f"Missing argument 'TARGET': {project.label} names no server; add "
        'server = "app.py:server" there, or name the server to serve'
    )
