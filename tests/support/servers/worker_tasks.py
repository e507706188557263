"""A server whose task tools run on workers, for ``tests/extensions/test_tasks_workers.py``.

As a script it is a front-end: HTTP on ``MCPSERVE_TEST_HTTP_PORT``, the caller named by the
``x-user`` header. ``mcpserve worker tests/support/servers/worker_tasks.py`` is a worker of
the same server. Both find the queue in ``MCPSERVE_TASK_QUEUE`` and the shared Redis in
``MCPSERVE_REDIS_URL``. The tools answer the pid they ran in, so a test knows which process
ran them; ``until_cancelled`` writes what its handler saw of the cancellation to
``cancelled-<pid>`` in ``MCPSERVE_TEST_MARKER_DIR``, and ``repeatable`` (``retries=2``) and
``repeatable_once`` (``retries=1``) run until a file ``release`` appears there.
``MCPSERVE_TEST_QUEUE_TIMEOUT`` sets the server's ``task_queue_timeout`` (300 s, the
default, without it), ``MCPSERVE_TEST_TASK_TTL`` its tasks' life in seconds and
``MCPSERVE_TEST_MAX_RESULT_BYTES`` the largest result a task may keep.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from mcpserve import Auth, Context, MCPError, Server

queue_timeout = float(os.environ.get("MCPSERVE_TEST_QUEUE_TIMEOUT", "300"))
server = Server("worker-tasks", version="1.0.0", task_queue_timeout=queue_timeout)


@server.tool(task="optional")
async def where(ctx: Context) -> dict[str, Any]:
    """Who ran the task, for whom, and what the client declared."""
    return {
        "pid": os.getpid(),
        "principal": ctx.principal,
        "capabilities": sorted(ctx.client_capabilities),
    }


@server.tool(task="optional")
async def steps(count: int, pause: float, ctx: Context) -> str:
    """Reports each step as progress, ``pause`` seconds apart."""
    for step in range(1, count + 1):
        await ctx.progress(step, count, message=f"step {step} of {count}")
        await asyncio.sleep(pause)
    return f"{count} steps in {os.getpid()}"


@server.tool(task="optional")
async def crash() -> str:
    """A JSON-RPC error: the task fails with it."""
    raise MCPError("The job crashed", code=-32603, data={"pid": os.getpid()})


@server.tool(task="optional")
async def until_cancelled(ctx: Context) -> str:
    """Runs until cancelled, and records that it was."""
    await ctx.progress(1, message=f"running in {os.getpid()}")
    try:
        await asyncio.sleep(3600)
    except asyncio.CancelledError:
        marker = Path(os.environ["MCPSERVE_TEST_MARKER_DIR"]) / f"cancelled-{os.getpid()}"
        marker.write_text(f"CancelledError ctx.cancelled={ctx.cancelled}")
        raise
    return "never"


async def until_released(ctx: Context) -> str:
    await ctx.progress(1, message=f"running in {os.getpid()}")
    release = Path(os.environ["MCPSERVE_TEST_MARKER_DIR"]) / "release"
    for _ in range(20 * 600):  # a file, not an event: it is made by another process
        if release.exists():
            return f"done in {os.getpid()}"
        await asyncio.sleep(0.05)
    return "never released"


@server.tool(task="optional", retries=2)
async def repeatable(ctx: Context) -> str:
    """Safe to run again: waits for a ``release`` file in the marker folder."""
    return await until_released(ctx)


@server.tool(task="optional", retries=1)
async def repeatable_once(ctx: Context) -> str:
    """As ``repeatable``, with one run more at most."""
    return await until_released(ctx)


class Confirm(BaseModel):
    confirm: bool


@server.tool(task="optional")
async def confirm(ctx: Context) -> str:
    """One question, asked inside the task."""
    answer = await ctx.elicit("Go ahead?", Confirm)
    said = "confirmed" if answer.accepted and answer.data.confirm else "declined"
    return f"{said} in {os.getpid()}"


@server.tool(task="optional", task_start="handler")
async def deploy(env: str, ctx: Context) -> str:
    """Asks first, as the call, then works as a task; leaves ``deployed-<pid>`` behind."""
    answer = await ctx.elicit(f"Deploy to {env}?", Confirm)
    if not (answer.accepted and answer.data.confirm):
        return f"not deployed, said in {os.getpid()}"
    ctx.state["asked in"] = ctx.state.get("asked in", os.getpid())
    await ctx.start_task(f"deploying to {env}")
    (Path(os.environ["MCPSERVE_TEST_MARKER_DIR"]) / f"deployed-{os.getpid()}").touch()
    await asyncio.sleep(0.3)
    return f"deployed to {env} in {os.getpid()}, asked in {ctx.state['asked in']}"


@server.tool(task="optional", task_start="handler")
async def fickle(ctx: Context) -> str:
    """Asks a question of its own process's: the worker's run asks another than the call's."""
    await ctx.elicit("Go ahead?", Confirm, key=f"asked-in-{os.getpid()}")
    await ctx.start_task()
    return "never on a worker"


@server.tool(task="optional")
async def consult(ctx: Context) -> str:
    """Asks the client's model, then for its roots, inside the task."""
    reply = await ctx.sample("Capital of France?", max_tokens=20)
    roots = await ctx.list_roots()
    return f"{reply.text} {[root.uri for root in roots]} in {os.getpid()}"


@server.tool(task="optional")
async def sized(size: int) -> str:
    """A result of ``size`` characters."""
    return "x" * size


assert server.tasks is not None  # made by the first task tool
if "MCPSERVE_TEST_TASK_TTL" in os.environ:  # seconds a task lives (an hour without it)
    server.tasks.ttl_ms = round(float(os.environ["MCPSERVE_TEST_TASK_TTL"]) * 1000)
if "MCPSERVE_TEST_MAX_RESULT_BYTES" in os.environ:
    server.tasks.max_result_bytes = int(os.environ["MCPSERVE_TEST_MAX_RESULT_BYTES"])


def who(headers: Any) -> Auth:
    return Auth(principal=headers.get("x-user"))


if __name__ == "__main__":
    port = int(os.environ["MCPSERVE_TEST_HTTP_PORT"])
    server.run("http", host="127.0.0.1", port=port, log_level="warning", authenticate=who)
