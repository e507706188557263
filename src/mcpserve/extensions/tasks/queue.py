"""The queue between the front-ends that receive task calls and the workers that run them.

With ``Server(task_queue="redis://...")`` (or ``MCPSERVE_TASK_QUEUE``) a front-end does not
run a task tool's function. It keeps the task's record as usual, held by no process yet and
with the status message ``queued``, answers ``CreateTaskResult``, and puts a job on the
queue: the task id and the call as the worker needs it again (the tool's name, its
arguments, the request's ``params`` with their ``_meta``, and who called). Docket, a
Redis-backed distributed task system, carries the job to one worker (``docs/decisions.md``,
"Which engine runs tasks on workers"); each server has its own docket, named after it, so
two servers sharing a Redis never take each other's jobs.

A task no worker takes within the queue timeout (``Server(task_queue_timeout=...)``, 300 s
by default) fails with "No worker took the task within 300 s: ...". The front-end gives the
record a lease of that length held by no process, and the lease rule of ``records.py``
fails it: whoever reads it past that time, a front-end answering ``tasks/get`` or a worker
about to claim it, finds it failed, so the timeout holds with no worker running at all
(``docs/decisions.md``, "A task no worker takes").

The worker (``worker.py``) claims the record (``TaskStore.claim``) and from then on is the
task's owner, holding its lease, exactly as the process that received a call is when it
runs the task itself. Everything after the claim is the in-process path of ``runner.py``.

A tool that asks its questions before its task starts (``task_start="handler"``) runs on
the front-end until it awaits ``ctx.start_task()``: its rounds are the call's. Then the
front-end queues the task with the answers the rounds took (:meth:`.Rounds.carried`; the
request's ``requestState`` and ``inputResponses`` left out, since the job carries what they
said) and cancels its own run, since a coroutine cannot move to another machine. The worker
runs the function again from the top: its questions are answered from the job, and
``ctx.start_task()`` there marks where the task's own work begins (``runner.py``).
"""

from __future__ import annotations

import logging
import time
from types import TracebackType
from typing import TYPE_CHECKING, Any, Self

import orjson

from ..._extras import needs_extra, require
from ..._types import JSONDict, Result
from ...protocol.errors import InternalError
from ...server.context.context import Context
from .records import TaskRecord
from .running import RunningTask

if TYPE_CHECKING:
    from docket import Docket

    from .runner import Tasks, TaskTool

logger = logging.getLogger("mcpserve.tasks")

#: The status message of a task no worker has taken yet.
QUEUED = "queued"
#: Seconds a task waits for a worker by default (``Server(task_queue_timeout=...)``).
QUEUE_TIMEOUT = 300.0
#: The name the job function has on every docket of mcpserve.
JOB = "mcpserve_task"
NOT_QUEUED = "The task could not be queued; try again shortly"


class TaskQueue:
    """The queue of one server on the Redis at ``url``; open while the server runs."""

    def __init__(
        self, url: str, *, server_name: str, timeout: float | None = QUEUE_TIMEOUT
    ) -> None:
        require("docket", "Server(task_queue=...)")  # said when the server is built
        if timeout is not None and not (isinstance(timeout, int | float) and timeout > 0):
            raise ValueError(
                f"task_queue_timeout must be a number of seconds above 0, or None, not {timeout!r}"
            )
        self.url = url
        self.name = f"mcpserve-{server_name}"
        #: Seconds a task may wait for a worker; None: as long as it lives.
        self.timeout = None if timeout is None else float(timeout)
        self._docket: Docket | None = None

    @property
    def docket(self) -> Docket:
        """The connected docket (a worker registers its job function on it)."""
        if self._docket is None:
            raise InternalError("The task queue is not connected: the server is not running")
        return self._docket

    async def __aenter__(self) -> Self:
        with needs_extra("Server(task_queue=...)"):
            from docket import Docket

        docket = Docket(name=self.name, url=self.url)
        await docket.__aenter__()
        # Jobs are added by name; on a front-end the name must be known, never run.
        docket.register(_runs_on_a_worker, names=[JOB])
        self._docket = docket
        return self

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        docket, self._docket = self._docket, None
        if docket is not None:
            await docket.__aexit__(kind, error, traceback)

    async def call(self, tasks: Tasks, tool: TaskTool, ctx: Context) -> Result:
        """``tools/call`` of a task tool: the task is kept, queued, and answered at once."""
        return {"resultType": "task", **(await self.enqueue(tasks, tool, ctx)).task()}

    async def enqueue(
        self, tasks: Tasks, tool: TaskTool, ctx: Context, *, started: bool = False
    ) -> TaskRecord:
        """Keep the task, queued, and queue its job; ``started``: the function has run on
        this front-end up to ``ctx.start_task()``, and the job carries its answers."""
        docket = self.docket
        record = TaskRecord(
            ctx.principal,
            ttl_ms=tasks.ttl_ms,
            poll_interval_ms=tasks.poll_interval_ms,
            status_message=QUEUED,
            lease_until=self.deadline(),
            queue_timeout=self.timeout,
        )
        await tasks.create(record)
        job = orjson.dumps(job_of(record.task_id, tool.name, ctx, started=started)).decode()
        try:
            await docket.add(JOB, key=record.task_id)(job)
        except Exception:  # Redis went away between the record and the job
            logger.exception("Task %s could not be queued", record.task_id)
            await RunningTask(tasks, record, {}).finish("failed", error=InternalError(NOT_QUEUED))
            raise InternalError(NOT_QUEUED) from None
        return record

    def deadline(self) -> float | None:
        """Until when a task queued now may wait for a worker."""
        return None if self.timeout is None else time.time() + self.timeout


def job_of(task_id: str, tool: str, ctx: Context, *, started: bool = False) -> JSONDict:
    """What a worker needs to make the call again: the call, and who made it; with
    ``started``, the answers its rounds took before ``ctx.start_task()`` (``replay``)."""
    request = ctx.request
    auth = request.auth
    params = request.params
    replay = ctx.carried_rounds() if started else None
    if replay is not None:  # what the sealed state and the answers said is in the job
        params = {k: v for k, v in params.items() if k not in ("requestState", "inputResponses")}
    return {
        "taskId": task_id,
        "tool": tool,
        "started": started,
        "replay": replay,
        "params": params,
        "auth": {
            "principal": auth.principal,
            "scopes": sorted(auth.scopes),
            "claims": dict(auth.claims),
            "checked": auth.checked,
        },
    }


async def _runs_on_a_worker(job: str) -> None:
    raise RuntimeError("mcpserve task jobs run on workers (mcpserve worker), not here")


def parsed_job(raw: Any) -> JSONDict:
    """The job a front-end queued; ValueError when ``raw`` is not one."""
    job = orjson.loads(raw) if isinstance(raw, str | bytes) else None
    if not (
        isinstance(job, dict)
        and isinstance(job.get("taskId"), str)
        and isinstance(job.get("tool"), str)
        and isinstance(job.get("params"), dict)
        and isinstance(job.get("auth"), dict)
    ):
        raise ValueError("not an mcpserve task job")
    return job
