"""``mcpserve worker``: run the task tools that a server's front-ends queue.

::

    MCPSERVE_TASK_QUEUE=redis://127.0.0.1:6379/0 mcpserve worker app.py --concurrency 20

TARGET is the same ``file.py[:server]`` or ``module[:server]`` the front-ends serve, with
the same environment (its task queue, its Redis). The worker says ``worker ready`` on
stderr once it is connected and taking tasks, runs until SIGTERM or SIGINT, and then lets
running tasks finish for ``--grace`` seconds (``mcpserve.extensions.tasks.worker``).

Without TARGET it reads the project file, as ``mcpserve run`` does (``project.py``): its
``server``, ``env_file`` and ``redis_url``, and ``worker_concurrency`` for
``--concurrency``; options and their environment variables win over it.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import click

from .. import _environment as environment
from .project import ProjectCommand, ProjectFile, chosen_target
from .targets import load_server
from .use import read_env_file


@click.command(cls=ProjectCommand, defaults_of=ProjectFile.worker_defaults)
@click.argument("target", required=False)
@click.option(
    "--concurrency",
    default=10,
    show_default=True,
    type=click.IntRange(min=1),
    help="Tasks run at once by this worker.",
)
@click.option(
    "--grace",
    default=25.0,
    show_default=True,
    type=click.FloatRange(min=0),
    help="Seconds running tasks get to finish after SIGTERM.",
)
@click.option(
    "--env-file",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="Read KEY=VALUE lines into the environment before importing TARGET.",
)
@click.option(
    "--redis-url",
    envvar=environment.REDIS_URL,
    help="The Redis every process of the server shares (sets MCPSERVE_REDIS_URL).",
)
def worker(
    target: str | None,
    concurrency: int,
    grace: float,
    env_file: Path | None,
    redis_url: str | None,
) -> None:
    """Run the task tools TARGET's front-ends queue (MCPSERVE_TASK_QUEUE).

    TARGET is file.py[:server] or module[:server], as for `mcpserve run`. Without TARGET,
    the settings of [tool.mcpserve] in ./pyproject.toml (or of ./mcpserve.toml) apply:
    server, env_file, redis_url and worker_concurrency.
    """
    target = chosen_target(target)
    if redis_url:
        os.environ[environment.REDIS_URL] = redis_url  # read by the server it imports
    read_env_file(env_file)
    server = load_server(target)
    from ..extensions.tasks.worker import NotAWorkerServer, run_worker

    def ready() -> None:
        click.echo("worker ready", err=True)

    try:
        asyncio.run(run_worker(server, concurrency=concurrency, grace=grace, ready=ready))
    except NotAWorkerServer as exc:
        raise click.ClickException(str(exc)) from None
