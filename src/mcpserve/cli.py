"""The ``mcpserve`` command line: ``mcpserve run path/to/app.py[:server]``."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

if TYPE_CHECKING:
    from .server.server import Server


def load_server(target: str) -> Server:
    """Import ``file.py[:name]`` or ``package.module[:name]`` and return its Server.

    Without ``:name`` the module's ``server``, ``app`` or ``mcp`` attribute is used, or
    its only ``Server`` instance.
    """
    from .server.server import Server

    location, _, attribute = target.partition(":")
    path = Path(location)
    if path.suffix == ".py" or path.exists():
        if not path.is_file():
            raise click.BadParameter(f"No such file: {location}", param_hint="TARGET")
        spec = importlib.util.spec_from_file_location(path.stem, path)
        if spec is None or spec.loader is None:
            raise click.BadParameter(f"Cannot import {location}", param_hint="TARGET")
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module
        sys.path.insert(0, str(path.resolve().parent))
        spec.loader.exec_module(module)
    else:
        module = importlib.import_module(location)
    if attribute:
        found = getattr(module, attribute, None)
        if not isinstance(found, Server):
            raise click.BadParameter(f"{location} has no Server named {attribute!r}",
                                     param_hint="TARGET")  # fmt: skip
        return found
    for name in ("server", "app", "mcp"):
        found = getattr(module, name, None)
        if isinstance(found, Server):
            return found
    servers = [value for value in vars(module).values() if isinstance(value, Server)]
    if len(servers) == 1:
        return servers[0]
    raise click.BadParameter(
        f"{location} defines {len(servers)} Server objects; name one as {location}:NAME",
        param_hint="TARGET",
    )


@click.group()
@click.version_option(package_name="mcpserve")
def main() -> None:
    """Run and inspect mcpserve servers."""


@main.command()
@click.argument("target")
@click.option("--http", "use_http", is_flag=True, help="Serve Streamable HTTP instead of stdio.")
@click.option("--host", default="127.0.0.1", show_default=True, help="HTTP bind address.")
@click.option("--port", default=8000, show_default=True, type=int, help="HTTP port.")
@click.option("--path", default="/mcp", show_default=True, help="HTTP endpoint path.")
def run(target: str, use_http: bool, host: str, port: int, path: str) -> None:
    """Serve TARGET (file.py[:server] or module[:server]) over stdio or HTTP."""
    server = load_server(target)
    if use_http:
        server.run("http", host=host, port=port, path=path)
    else:
        server.run("stdio")


if __name__ == "__main__":
    main()
