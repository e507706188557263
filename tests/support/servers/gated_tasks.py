"""A server whose task tools run on workers and end when the test says, for
``tests/extensions/test_tasks_redis_restart.py``.

As a script it is a front-end: HTTP on ``MCPSERVE_TEST_HTTP_PORT``, the caller named by the
``x-user`` header. ``mcpserve worker tests/support/servers/gated_tasks.py`` is a worker of
the same server. Both find the queue in ``MCPSERVE_TASK_QUEUE`` and the shared Redis in
``MCPSERVE_REDIS_URL``. ``gated(name)`` runs until a file ``open-<name>`` appears in
``MCPSERVE_TEST_MARKER_DIR``, then writes ``returned-<name>`` there and returns: a test
opens the gate while Redis is down, and knows when the function has ended, since it cannot
ask the task store then. Each run adds a line to ``runs-<name>``, so a test counts them.
``gated_again`` is the same, declared safe to run again (``retries=1``).
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

from mcpserve import Auth, Context, Server

server = Server("gated-tasks", version="1.0.0")


@server.tool(task="optional")
async def gated(name: str, ctx: Context) -> dict[str, Any]:
    """Waits for the file ``open-<name>``; answers its name and the pid it ran in."""
    return await gate(name, ctx)


@server.tool(task="optional", retries=1)
async def gated_again(name: str, ctx: Context) -> dict[str, Any]:
    """As ``gated``, declared safe to run again."""
    return await gate(name, ctx)


async def gate(name: str, ctx: Context) -> dict[str, Any]:
    markers = Path(os.environ["MCPSERVE_TEST_MARKER_DIR"])
    with (markers / f"runs-{name}").open("a") as runs:
        runs.write(f"{os.getpid()}\n")
    await ctx.progress(1, message=f"{name} running in {os.getpid()}")
    while not (markers / f"open-{name}").exists():  # noqa: ASYNC110 (made by another process)
        await asyncio.sleep(0.05)
    (markers / f"returned-{name}").write_text(str(os.getpid()))
    return {"name": name, "pid": os.getpid()}


def who(headers: Any) -> Auth:
    return Auth(principal=headers.get("x-user"))


if __name__ == "__main__":
    port = int(os.environ["MCPSERVE_TEST_HTTP_PORT"])
    server.run("http", host="127.0.0.1", port=port, log_level="warning", authenticate=who)
