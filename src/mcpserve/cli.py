"""The ``mcpserve`` command line: ``mcpserve run path/to/app.py[:server]``."""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .transports.stdio import DEFAULT_SHUTDOWN_GRACE

#: What the command says instead of a traceback when an optional dependency is missing.
NEEDS_CLI = (
    'The mcpserve command needs click, which the cli extra installs: pip install "mcpserve[cli]"'
)
NEEDS_HTTP = (
    'Serving HTTP needs uvicorn, which the http extra installs: pip install "mcpserve[http]"'
)

try:
    import click
except ModuleNotFoundError as exc:  # mcpserve installed without the cli extra
    if exc.name != "click":
        raise
    raise SystemExit(NEEDS_CLI) from None

_ENV_TARGET = "MCPSERVE_WORKER_TARGET"
_ENV_PATH = "MCPSERVE_WORKER_PATH"
_ENV_HOST = "MCPSERVE_WORKER_HOST"

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
@click.option(
    "--workers",
    default=1,
    show_default=True,
    type=click.IntRange(1),
    help="HTTP worker processes (needs MCPSERVE_STATE_KEYS when more than 1).",
)
@click.option(
    "--access-log",
    is_flag=True,
    help="HTTP: log every request (off by default; errors are always logged).",
)
@click.option(
    "--proxy-headers",
    is_flag=True,
    help="HTTP: let uvicorn take client addresses from X-Forwarded-For (off by default).",
)
@click.option(
    "--shutdown-grace",
    default=DEFAULT_SHUTDOWN_GRACE,
    show_default=True,
    type=click.FloatRange(0),
    help="stdio: seconds requests still running when stdin closes get to answer.",
)
def run(
    target: str,
    use_http: bool,
    host: str,
    port: int,
    path: str,
    workers: int,
    access_log: bool,
    proxy_headers: bool,
    shutdown_grace: float,
) -> None:
    """Serve TARGET (file.py[:server] or module[:server]) over stdio or HTTP."""
    if use_http:
        require_uvicorn()  # before the target is imported: say what is missing first
    server = load_server(target)
    if not use_http:
        server.run("stdio", shutdown_grace=shutdown_grace)
        return
    if workers == 1:
        server.run("http", host=host, port=port, path=path, access_log=access_log,
                   proxy_headers=proxy_headers)  # fmt: skip
        return
    try:
        server.require_shared_state_keys(workers)
    except RuntimeError as exc:
        raise click.UsageError(str(exc)) from None
    import uvicorn

    os.environ.update({_ENV_TARGET: target, _ENV_PATH: path, _ENV_HOST: host})
    uvicorn.run("mcpserve.cli:worker_app", factory=True, host=host, port=port,
                workers=workers, lifespan="on", loop="auto", http="auto",
                access_log=access_log, proxy_headers=proxy_headers)  # fmt: skip


def require_uvicorn() -> None:
    """Fail with the extra to install, not a ``ModuleNotFoundError``, without uvicorn."""
    try:
        importlib.import_module("uvicorn")
    except ModuleNotFoundError as exc:
        if exc.name != "uvicorn":
            raise
        raise click.ClickException(NEEDS_HTTP) from None


def worker_app() -> Any:
    """The ASGI app of one worker process started by ``run --workers N``."""
    from .transports.serve import end_listens_on_exit_signals

    server = load_server(os.environ[_ENV_TARGET])
    end_listens_on_exit_signals(server)  # uvicorn stops a worker with SIGTERM
    return server.http_app(os.environ[_ENV_PATH], bind_host=os.environ[_ENV_HOST])


@main.command()
def keygen() -> None:
    """Print a new requestState key for MCPSERVE_STATE_KEYS (prepend it to rotate)."""
    from .protocol.request_state import generate_key

    click.echo(generate_key())


if __name__ == "__main__":
    main()
