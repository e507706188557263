"""``mcpserve run`` (serve a target over stdio or HTTP) and ``mcpserve keygen``.

stdio and single-process HTTP import the target here and call ``server.run``. HTTP with
``--workers N`` or ``--reload`` hands uvicorn an import string instead
(:func:`worker_app`, an app factory), so each process uvicorn starts imports the target
itself; the target, path and host travel in ``MCPSERVE_WORKER_*`` environment variables,
which those processes inherit.

``--reload`` over HTTP is uvicorn's own reloader: it watches the target's directory for
changed ``*.py`` files (with watchfiles, which the cli extra installs; uvicorn polls without
it) and starts a fresh worker process, which imports the edited target anew. Over stdio the
client owns the pipes, so this process keeps them and relays to a server child it restarts
(:mod:`.stdio_reload`).

``--env-file`` is read before anything else, so the target's module-level code sees it;
the processes uvicorn starts inherit it.
"""

from __future__ import annotations

import contextlib
import errno
import importlib
import os
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import click

from .. import _environment as environment
from .._json_logs import LOG_FORMATS
from ..transports.drain import (
    DEFAULT_DRAIN_SECONDS,
    DEFAULT_HTTP_SHUTDOWN_GRACE,
    drain_on_exit_signals,
)
from ..transports.serve import (
    PortUnavailable,
    check_port,
    require_shared_state,
    seconds_from_environment,
    uvicorn_log_config,
)
from ..transports.stdio import DEFAULT_SHUTDOWN_GRACE
from .errors import Mistake
from .project import ProjectCommand, ProjectFile, chosen_target
from .targets import display_name, load_server, target_file
from .terminal import say
from .use import read_env_file

if TYPE_CHECKING:
    from ..server.server import Server

NEEDS_HTTP = (
    'Serving HTTP needs uvicorn, which the http extra installs: pip install "mcpserve[http]"'
)


@click.command(cls=ProjectCommand, defaults_of=ProjectFile.run_defaults)
@click.argument("target", required=False)
@click.option(
    "--http/--stdio",
    "use_http",
    default=False,
    help="Serve Streamable HTTP, or stdio (the default).",
)
@click.option("--host", default="127.0.0.1", show_default=True, help="HTTP bind address.")
@click.option("--port", default=8000, show_default=True, type=int, help="HTTP port.")
@click.option("--path", default="/mcp", show_default=True, help="HTTP endpoint path.")
@click.option(
    "--workers",
    default=1,
    show_default=True,
    type=click.IntRange(1),
    help="HTTP worker processes; more than 1 needs MCPSERVE_STATE_KEYS, and "
    "MCPSERVE_REDIS_URL for handshake-era clients.",
)
@click.option(
    "--reload",
    is_flag=True,
    help="Restart the server when a .py file in the target's directory changes (stdio: "
    "the client keeps its pipes; HTTP: uvicorn's reloader).",
)
@click.option(
    "--env-file",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="Read KEY=VALUE lines into the environment before importing TARGET.",
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
# Graceful drain (HTTP) and the grace of requests still running (both transports)
@click.option(
    "--shutdown-grace",
    type=click.FloatRange(0),
    envvar=environment.SHUTDOWN_GRACE,
    help=f"Seconds requests still running get to answer once the server stops (stdio: "
    f"stdin closed; HTTP: after the drain) [default: {DEFAULT_SHUTDOWN_GRACE:g} for stdio, "
    f"{DEFAULT_HTTP_SHUTDOWN_GRACE:g} for HTTP].",
)
@click.option(
    "--drain-seconds",
    type=click.FloatRange(0),
    envvar=environment.DRAIN_SECONDS,
    help=f"HTTP: on SIGTERM, seconds /readyz fails while requests are still answered, "
    f"before the server stops [default: {DEFAULT_DRAIN_SECONDS:g}].",
)
# Metrics: /metrics for Prometheus (docs/observability.md)
@click.option(
    "--metrics",
    is_flag=True,
    envvar=environment.METRICS,
    help="HTTP: serve /metrics for Prometheus (summed over --workers).",
)
@click.option(
    "--redis-url",
    envvar=environment.REDIS_URL,
    help="The Redis every process of the server shares (sets MCPSERVE_REDIS_URL).",
)
# JSON logs
@click.option(
    "--log-format",
    type=click.Choice(LOG_FORMATS),
    default="text",
    show_default=True,
    envvar=environment.LOG_FORMAT,
    help="text, or json: every line written (stderr) is one JSON object.",
)
def run(
    target: str | None,
    use_http: bool,
    host: str,
    port: int,
    path: str,
    workers: int,
    reload: bool,
    env_file: Path | None,
    access_log: bool,
    proxy_headers: bool,
    shutdown_grace: float | None,
    drain_seconds: float | None,
    metrics: bool,
    redis_url: str | None,
    log_format: Literal["text", "json"],
) -> None:
    """Serve TARGET over stdio or HTTP.

    TARGET is file.py[:server] or module[:server]; without :server, the module's server,
    app or mcp, or its only Server, is served. Without TARGET, the settings of
    [tool.mcpserve] in ./pyproject.toml (or of ./mcpserve.toml) apply; options and their
    environment variables win over them.

    Over HTTP, /healthz (liveness) and /readyz (readiness: lifespan done, Redis answering,
    not draining) answer probes outside auth: a Kubernetes livenessProbe and readinessProbe
    (with the header Host: localhost). On SIGTERM, /readyz fails at once and requests are
    still answered for --drain-seconds, then those running get --shutdown-grace.
    """
    target = chosen_target(target)
    if redis_url:
        os.environ[environment.REDIS_URL] = redis_url  # read by the server it imports
    if log_format == "json":
        os.environ[environment.LOG_FORMAT] = log_format  # for the server processes it starts
    if reload and not use_http:
        read_env_file(env_file)
        serve_stdio_reloading(target)
        return
    if reload and workers > 1:
        raise Mistake("--reload runs one server process; leave out --workers")
    if use_http:
        require_uvicorn()  # before the target is imported: say what is missing first
    read_env_file(env_file)
    if metrics:  # the target's Server(metrics=None) reads it, in this process and the workers
        os.environ[environment.METRICS] = "1"
    if reload:
        serve_reloading(
            target,
            host=host,
            port=port,
            path=path,
            access_log=access_log,
            proxy_headers=proxy_headers,
        )
        return
    server = load_server(target)
    if not use_http:
        grace = DEFAULT_SHUTDOWN_GRACE if shutdown_grace is None else shutdown_grace
        server.run("stdio", shutdown_grace=grace, log_format=log_format)
        return
    if drain_seconds is None:
        drain_seconds = DEFAULT_DRAIN_SECONDS
    if shutdown_grace is None:
        shutdown_grace = DEFAULT_HTTP_SHUTDOWN_GRACE
    if workers == 1:
        with start_failures_said():
            server.run(
                "http",
                host=host,
                port=port,
                path=path,
                access_log=access_log,
                proxy_headers=proxy_headers,
                drain_seconds=drain_seconds,
                shutdown_grace=shutdown_grace,
                log_format=log_format,
            )
        return
    try:
        require_shared_state(server, workers)
    except RuntimeError as exc:
        raise Mistake(str(exc)) from None
    import uvicorn

    with start_failures_said():
        check_port(host, port)
    os.environ.update(
        {
            environment.WORKER_TARGET: target,
            environment.WORKER_PATH: path,
            environment.WORKER_HOST: host,
            environment.DRAIN_SECONDS: str(drain_seconds),  # each worker drains
            environment.SHUTDOWN_GRACE: str(shutdown_grace),  # and gives its tasks the grace
        }
    )
    with worker_metrics(serves_metrics(server)):
        uvicorn.run(
            "mcpserve.cli.serve:worker_app",
            factory=True,
            host=host,
            port=port,
            workers=workers,
            lifespan="on",
            loop="auto",
            http="auto",
            access_log=access_log,
            proxy_headers=proxy_headers,
            timeout_graceful_shutdown=shutdown_grace,  # type: ignore[arg-type]
            log_config=uvicorn_log_config(log_format),
        )


def serves_metrics(server: Server) -> bool:
    """Whether the loaded server answers ``/metrics``: ``Server(metrics=True)``, or
    ``metrics=None`` with ``MCPSERVE_METRICS`` set (by ``--metrics``, the environment or
    ``--env-file``). Read from its options: prometheus-client is not loaded here."""
    metering = server.runtime.metering
    return metering is not None and metering.prometheus


def worker_metrics(metrics: bool) -> contextlib.AbstractContextManager[object]:
    """For a server that answers ``/metrics``, the directory the workers add their
    Prometheus values up in (made before uvicorn starts them, removed once they have all
    stopped): each worker's ``/metrics`` is then the sum over all of them."""
    if not metrics:
        return contextlib.nullcontext()
    from ..metrics.multiprocess import shared_directory

    return shared_directory()


@contextlib.contextmanager
def start_failures_said() -> Iterator[None]:
    """A port that cannot be listened on, said in one line with what to do (exit status 1):
    the command was typed right, but the machine is not ready for it."""
    try:
        yield
    except PortUnavailable as exc:
        raise click.ClickException(cannot_listen(exc)) from None


def cannot_listen(exc: PortUnavailable) -> str:
    """What to say, and what to do, when ``host:port`` cannot be listened on."""
    if exc.in_use:
        return f"Port {exc.port} is in use on {exc.host}: stop what holds it or pass --port"
    if exc.errno == errno.EACCES:
        return f"{exc}: pass a --port above 1023, or run as a user allowed this one"
    return f"{exc}: pass a --host of this machine (127.0.0.1, or 0.0.0.0 for all of them)"


def serve_reloading(target: str, *, host: str, port: int, path: str, **options: Any) -> None:
    """Serve HTTP under uvicorn's reloader, watching the target's directory."""
    import uvicorn

    # Checked here, once: the reloader would otherwise report a missing file only from
    # each worker it starts. The target is not imported here; every worker imports it.
    file = target_file(target)
    watched = (file.resolve().parent if file is not None else Path.cwd()).resolve()
    with start_failures_said():
        check_port(host, port)
    say(
        f"Serving {display_name(target)} at http://{host}:{port}{path}, restarting when "
        f"a .py file in {watched} changes"
    )
    os.environ.update(
        {
            environment.WORKER_TARGET: target,
            environment.WORKER_PATH: path,
            environment.WORKER_HOST: host,
            environment.WORKER_SOLE: "1",
        }
    )
    uvicorn.run(
        "mcpserve.cli.serve:worker_app",
        factory=True,
        host=host,
        port=port,
        reload=True,
        reload_dirs=[str(watched)],
        log_config=uvicorn_log_config(None),  # MCPSERVE_LOG_FORMAT
        lifespan="on",
        loop="auto",
        http="auto",
        **options,
    )


def serve_stdio_reloading(target: str) -> None:
    """Serve stdio through a relay that restarts the server on changes (:mod:`.stdio_reload`)."""
    import asyncio

    from .stdio_reload import relay_stdio

    file = target_file(target)
    watched = (file.resolve().parent if file is not None else Path.cwd()).resolve()
    say(
        f"Serving {display_name(target)} over stdio, restarting it when a .py file in "
        f"{watched} changes"
    )
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(relay_stdio(target, watched))


def require_uvicorn() -> None:
    """Fail with the extra to install, not a ``ModuleNotFoundError``, without uvicorn."""
    try:
        importlib.import_module("uvicorn")
    except ModuleNotFoundError as exc:
        if exc.name != "uvicorn":
            raise
        raise click.ClickException(NEEDS_HTTP) from None


def worker_app() -> Any:
    """The ASGI app of one process started by ``run --workers N`` or ``run --reload``."""
    server = load_server(environment.read(environment.WORKER_TARGET) or "")
    path, host = (
        environment.read(environment.WORKER_PATH),
        environment.read(environment.WORKER_HOST),
    )
    app = server.http_app(path or "/mcp", bind_host=host)
    app.sole_process = environment.read(environment.WORKER_SOLE) == "1"  # type: ignore[attr-defined]
    # uvicorn's supervisor stops each worker with SIGTERM: each drains as one process does.
    drain = seconds_from_environment(environment.DRAIN_SECONDS)
    grace = seconds_from_environment(environment.SHUTDOWN_GRACE)
    drain_on_exit_signals(
        server,
        app.state,  # type: ignore[attr-defined]
        0.0 if drain is None else drain,
        DEFAULT_HTTP_SHUTDOWN_GRACE if grace is None else grace,
    )
    return app


@click.command()
def keygen() -> None:
    """Print a new key for MCPSERVE_STATE_KEYS.

    Give every process of a deployment the same keys; prepend a new one to rotate.
    """
    from ..protocol.request_state import generate_key

    click.echo(generate_key())
