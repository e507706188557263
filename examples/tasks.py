"""Long work as tasks: an export that runs for a while, and a purge that asks first.

``export_report`` runs as a task for clients that take the tasks extension (and as an
ordinary call for the rest): the client gets a task at once and polls ``tasks/get``,
seeing each step in the task's ``statusMessage``. Halfway it asks whether to include
archived rows; the task waits in ``input_required`` until the client answers with
``tasks/update``.

``purge`` must be a task (``task="required"``) and asks before it starts
(``task_start="handler"``): the confirmation is an ordinary multi round-trip question,
and only a confirmed purge becomes a task. Nothing is deleted before the answer.

Tasks live in memory here; ``MCPSERVE_TASK_STORE=sqlite:///tasks.db`` keeps them in a file
across restarts (docs/tasks.md). Run it::

    python examples/tasks.py
    mcpserve run examples/tasks.py --http --port 8000
"""

from __future__ import annotations

import asyncio
import os

from pydantic import BaseModel

from mcpserve import Context, Server, ToolError

server = Server("reports", "1.0.0", instructions="Exports reports and purges old ones.")
#: Seconds each export step takes; small in the tests.
STEP_SECONDS = float(os.environ.get("REPORTS_STEP_SECONDS", "2"))
REPORTS = {"q1": 1200, "q2": 1350, "q3": 990}


class IncludeArchived(BaseModel):
    include: bool


@server.tool(task="optional")
async def export_report(ctx: Context, report: str, steps: int = 3) -> dict[str, object]:
    """Export a report to CSV, one section at a time."""
    if report not in REPORTS:
        raise ToolError(f"No report {report!r}; there are {', '.join(REPORTS)}")
    rows = REPORTS[report]
    for step in range(steps):
        await ctx.progress(step, steps, message=f"section {step + 1} of {steps}")
        await asyncio.sleep(STEP_SECONDS)
        if step == steps // 2:
            answer = await ctx.elicit("Include archived rows too?", IncludeArchived)
            if answer.accepted and answer.data.include:
                rows += 100
    return {"report": report, "rows": rows, "file": f"{report}.csv"}


class ConfirmPurge(BaseModel):
    confirm: bool


@server.tool(task="required", task_start="handler")
async def purge(ctx: Context, report: str) -> str:
    """Delete a report for good, once the user confirms."""
    answer = await ctx.elicit(f"Delete {report} for good?", ConfirmPurge)
    if not (answer.accepted and answer.data.confirm):
        return f"{report} kept"
    await ctx.start_task(f"deleting {report}")
    await asyncio.sleep(STEP_SECONDS)
    REPORTS.pop(report, None)
    return f"{report} deleted"


if __name__ == "__main__":
    server.run()
