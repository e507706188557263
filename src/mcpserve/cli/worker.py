"""``mcpserve worker``: run the task tools that a server's front-ends queue.

::

    MCPSERVE_TASK_QUEUE=redis://127.0.0.1:6379/0 mcpserve worker app.py --concurrency 20

TARGET is the same ``file.py[:server]`` or ``module[:server]`` the front-ends serve, with
the same environment (its task queue, its Redis). The worker says ``worker ready`` on
stderr once it is connected and taking tasks, runs until SIGTERM or SIGINT, and then lets
running tasks finish for ``--grace`` seconds (``mcpserve.extensions.tasks.worker``).
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import click

from .targets import load_server
from .use import read_env_file


@click.command()
@click.argument("target")
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
def worker(target: str, concurrency: int, grace: float, env_file: Path | None) -> None:
    """Run the task tools TARGET's front-ends queue (MCPSERVE_TASK_QUEUE).

    TARGET is file.py[:server] or module[:server], as for `mcpserve run`.
    """
    read_env_file(env_file)
    server = load_server(target)
    from ..extensions.tasks.worker import NotAWorkerServer, run_worker

    def ready() -> None:
        click.echo("worker ready", err=True)

    try:
        asyncio.run(run_worker(server, concurrency=concurrency, grace=grace, ready=ready))
    except NotAWorkerServer as exc:
        raise click.ClickException(str(exc)) from None
