"""The server ``benchmarks/tasks.py`` measures in its worker mode: two task tools.

One file, two roles, as a user deploys it. ``python mcpserve_tasks_app.py PORT`` is the
front-end, served the README's way (``server.run("http")`` and the address, nothing else);
``mcpserve worker mcpserve_tasks_app.py`` is a worker of the same server. With
``MCPSERVE_TASK_QUEUE`` set the front-end queues task tools for the workers; without it the
same front-end runs them itself. Either way the task records are in the Redis of
``MCPSERVE_REDIS_URL``, which also carries the bus between front-end and workers.

The store is built here only to lift the limit of live tasks per principal (1,000 by
default): the benchmark's callers share one anonymous principal and create more than that
within the records' hour of life, and that limit is not what is measured.
"""

from __future__ import annotations

import asyncio
import os
import sys

from mcpserve import RedisTaskStore, Server

NAME = "bench-tasks"
#: Far above what a run creates.
NO_LIMIT = 10**9

store = RedisTaskStore(
    os.environ["MCPSERVE_REDIS_URL"], namespace=NAME, max_tasks_per_principal=NO_LIMIT
)
server = Server(NAME, task_store=store, server_info_in_results=False)


@server.tool(task="optional")
async def echo_task(text: str) -> str:
    """The short task: answers at once, so what is measured is the tasks machinery."""
    return text


@server.tool(task="optional")
async def hold(seconds: float) -> str:
    """A task that stays running, so ``tasks/get`` can be read on a running task."""
    await asyncio.sleep(seconds)
    return "held"


if __name__ == "__main__":
    server.run("http", host="127.0.0.1", port=int(sys.argv[1]))
