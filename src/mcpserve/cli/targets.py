"""What a command's TARGET names, and how the Server it names is found.

A target is ``path/to/app.py`` or ``package.module``, optionally followed by ``:name``.
The ``:name`` suffix is split off at the last colon only when what follows is a Python
identifier, so a Windows path (``C:\\apps\\app.py``) is still one path.

Without ``:name`` the module's ``server``, ``app`` or ``mcp`` attribute is used, or its only
``Server`` instance. Every failure is a :class:`~.errors.Mistake` that says how to fix it:
which file was looked for, or how to name the server.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from pathlib import Path

from ..server.server import Server
from .errors import Mistake

_CONVENTIONAL_NAMES = ("server", "app", "mcp")


def split_target(target: str) -> tuple[str, str]:
    """``(location, attribute)``: ``"app.py:server"`` is ``("app.py", "server")``."""
    location, colon, attribute = target.rpartition(":")
    if colon and location and attribute.isidentifier():
        return location, attribute
    return target, ""


def is_file_target(location: str) -> bool:
    """Whether ``location`` names a file (rather than an importable module)."""
    return location.endswith(".py") or Path(location).exists()


def target_file(target: str) -> Path | None:
    """The file a target names, checked to exist; ``None`` for a module target."""
    location, _ = split_target(target)
    if not is_file_target(location):
        return None
    path = Path(location)
    if not path.is_file():
        raise Mistake(
            f"No such file: {location} (looked in {Path.cwd()}); give the path to the "
            "Python file that creates your Server"
        )
    return path


def absolute_target(target: str) -> str:
    """The target with its file made absolute, for a process started somewhere else."""
    path = target_file(target)
    if path is None:
        return target
    _, attribute = split_target(target)
    return f"{path.resolve()}:{attribute}" if attribute else str(path.resolve())


def load_server(target: str) -> Server:
    """Import ``file.py[:name]`` or ``package.module[:name]`` and return its Server."""
    location, attribute = split_target(target)
    path = target_file(target)
    if path is not None:
        spec = importlib.util.spec_from_file_location(path.stem, path)
        if spec is None or spec.loader is None:
            raise Mistake(f"Cannot import {location}: is it a Python file?")
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module  # pydantic resolves the module's models through it
        sys.path.insert(0, str(path.resolve().parent))  # its sibling modules import
        spec.loader.exec_module(module)
    else:
        try:
            module = importlib.import_module(location)
        except ModuleNotFoundError as exc:
            missing = exc.name or ""
            if location != missing and not location.startswith(missing + "."):
                raise  # the module exists; something it imports does not
            raise Mistake(
                f"No module named {location!r} and no file of that name; give a path to a "
                ".py file (app.py) or a module importable from here (package.app)"
            ) from None
    servers = {name: value for name, value in vars(module).items() if isinstance(value, Server)}
    if attribute:
        if attribute in servers:
            return servers[attribute]
        found = ", ".join(f"{location}:{name}" for name in servers) or "none"
        raise Mistake(
            f"{location} has no Server named {attribute!r} (Server objects found: {found})"
        )
    for name in _CONVENTIONAL_NAMES:
        if name in servers:
            return servers[name]
    if len(servers) == 1:
        return next(iter(servers.values()))
    if not servers:
        raise Mistake(
            f"{location} defines no Server object at module level; create one there "
            '(server = Server("name")) or name the one to use: '
            f"{location}:NAME"
        )
    raise Mistake(
        f"{location} defines {len(servers)} Server objects ({', '.join(servers)}); name the "
        f"one to use: {location}:{next(iter(servers))}"
    )


def display_name(target: str) -> str:
    """A short name for progress messages: the file's name, or the module's."""
    location, _ = split_target(target)
    return Path(location).name if is_file_target(location) else location
