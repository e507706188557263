"""A server with task tools, for the tasks extension's wire tests.

In process, the tests hold a tool with a gate (``GATES[tag]``, an ``asyncio.Event``) to
observe a task while it runs; as a script (stdio, or HTTP with ``MCPSERVE_TEST_HTTP_PORT``)
the tools that sleep are enough, and ``gated`` waits until the process ends. The store comes
from ``MCPSERVE_TASK_STORE`` or ``MCPSERVE_REDIS_URL``; ``MCPSERVE_TEST_TASK_LEASE`` shortens
the lease a process holds on the tasks it runs, ``MCPSERVE_TEST_TASK_POLL_MS`` sets the
``pollIntervalMs`` its tasks give clients.
"""

from __future__ import annotations

import asyncio
import os
from collections import defaultdict

from pydantic import BaseModel

from mcpserve import Context, Elicit, MCPError, Server, ToolError

#: Gates the ``gated`` tool waits on, by tag (made on first use).
GATES: defaultdict[str, asyncio.Event] = defaultdict(asyncio.Event)


class Confirm(BaseModel):
    confirm: bool


class Name(BaseModel):
    name: str


def build(**options: object) -> Server:
    server = Server("tasks-test", version="1.0.0", **options)  # type: ignore[arg-type]

    @server.tool
    def plain(text: str) -> str:
        """Never a task."""
        return f"plain {text}"

    @server.tool(task="optional")
    async def sleepy(seconds: float = 0.0) -> str:
        """Sleep, then answer: a task for clients that take one."""
        await asyncio.sleep(seconds)
        return f"slept {seconds:g}"

    @server.tool(task="optional")
    async def gated(tag: str, ctx: Context) -> str:
        """Report progress, then wait for ``GATES[tag]``."""
        await ctx.progress(1, 2, message=f"waiting for {tag}")
        await GATES[tag].wait()
        return f"released {tag}"

    @server.tool(task="required")
    async def only_task(n: int) -> int:
        """Runs only as a task."""
        return n * 2

    @server.tool(task="optional")
    async def confirm(ctx: Context) -> str:
        """One question, asked inside the task."""
        answer = await ctx.elicit("Go ahead?", Confirm)
        return "confirmed" if answer.accepted and answer.data.confirm else "declined"

    @server.tool(task="optional")
    async def impatient(tag: str, ctx: Context) -> str:
        """Asks, gives up waiting after a moment, then waits for ``GATES[tag]``."""
        try:
            await asyncio.wait_for(ctx.elicit("Quick?", Confirm), 0.3)
        except TimeoutError:
            await ctx.progress(1, message="gave up asking")
        await GATES[tag].wait()
        return "went on"

    @server.tool(task="optional")
    async def two_questions(ctx: Context) -> str:
        """Two questions at once."""
        answers = await ctx.ask(who=Elicit("Who?", Name), sure=Elicit("Sure?", Confirm))
        return f"{answers['who'].data.name} sure={answers['sure'].data.confirm}"

    @server.tool(task="required", task_start="handler")
    async def ask_then_work(ctx: Context) -> str:
        """Ask up front (multi round-trip), then run as a task."""
        answer = await ctx.elicit("Your name?", Name, key="name")
        await ctx.start_task("working for " + answer.data.name)
        await asyncio.sleep(0.05)
        return f"done for {answer.data.name}"

    @server.tool(task="optional", task_start="handler")
    async def maybe_task(ctx: Context) -> str:
        """Becomes a task only for clients that take one."""
        became = await ctx.start_task()
        return f"task={became}"

    @server.tool(task="optional")
    async def protocol_error() -> str:
        """A JSON-RPC error: the task fails."""
        raise MCPError("The job crashed", code=-32603, data={"why": "testing"})

    @server.tool(task="optional")
    async def tool_error() -> str:
        """A tool error: the task completes, with isError."""
        raise ToolError("could not do it")

    @server.tool(task="optional")
    async def huge() -> str:
        """A result over the server's result limit."""
        return "x" * 5000

    server.tasks.max_result_bytes = 4096
    lease = os.environ.get("MCPSERVE_TEST_TASK_LEASE")  # seconds, for the restart tests
    if lease:
        server.tasks.lease_seconds = float(lease)
    poll = os.environ.get("MCPSERVE_TEST_TASK_POLL_MS")  # what tasks tell clients to wait
    if poll:
        server.tasks.poll_interval_ms = int(poll)
    return server


server = build()

if __name__ == "__main__":
    from _serve import serve  # beside this script

    serve(server)
