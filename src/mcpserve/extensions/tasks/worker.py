"""A worker: a process that runs the task tools that front-ends queued (``mcpserve worker``).

A worker is the server itself, loaded from the same file as the front-ends, running without
a transport: its lifecycle joins the subscription bus that every process of the server
shares, and a Docket worker takes jobs off the server's queue (``queue.py``), at most
``concurrency`` at once. For each job it:

1. claims the task's record (``TaskStore.claim``): the worker becomes its owner and holds
   its lease, renewed while the function runs, so a worker that dies leaves a task that
   reads failed once the lease passes, as a process running a task in process does. A task
   cancelled while it waited, or expired, is not run. A job that comes again for a task
   another worker holds means Docket gave up on that worker (it stopped renewing its lease
   on the job, SIGKILL say): if that worker has stopped renewing the task's lease too
   (``holder_lost``), a tool declared ``retries=n`` runs again from the top here, while it
   has had at most ``n`` more runs, and any other task fails as lost; if it still renews
   it (it let the job go when Docket lost Redis, ``run_detachable``), the job is dropped
   and the task left to it. A job that
   comes again for a task this worker holds but no longer runs means the store came back
   from a copy made before the task's end (a Redis snapshot): the same rule, failing it
   with "The task's end was lost";
2. builds the call's context again, bound to the caller: the request's ``params`` and
   ``_meta`` (protocol version, client capabilities), and the caller's principal, scopes
   and claims;
3. runs the tool through :meth:`Tasks.execute`, the in-process path (a tool whose task
   starts in its handler from the top, its questions up to ``ctx.start_task()`` answered
   from the job, ``queue.py``): progress and status
   messages, the result or error, the result limit. ``tasks/update`` and ``tasks/cancel``
   reach it as ``task-control`` events on the bus, which this process hears because it
   holds the task (``Tasks.control``).

SIGTERM or SIGINT stops the worker: it takes nothing new and lets running tasks finish for
``grace`` seconds. Then it hands back those safe to run again that have runs left (a tool
declared ``retries=n`` that has had at most ``n`` runs, the one stopped included): their
record is released (``TaskStore.release``: held by no process, ``queued`` again, waiting for
a worker up to the queue timeout) and their job is added to the queue again, so another
worker runs them from the top at once, rather than after Docket's redelivery. It fails the
others with "The worker stopped before the task finished", cancels their functions, and
exits. A function handed back is cancelled too; its end is not recorded, since the task is
no longer this worker's.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import time
from collections.abc import Callable, Coroutine
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from redis.exceptions import RedisError

from ...protocol.core import Auth, Request
from ...protocol.errors import InternalError
from ...protocol.meta import read_meta
from .queue import JOB, TaskQueue, parsed_job
from .records import WORKER_LOST as LOST
from .records import TaskStoreUnavailable, holder_lost
from .runner import TaskContext, Tasks, TaskTool
from .running import RunningTask

if TYPE_CHECKING:
    from docket import Docket

    from ...server.registry import Registry
    from ...server.server import Server

logger = logging.getLogger("mcpserve.tasks")

WORKER_LOST: str = LOST["message"]
WORKER_STOPPED = "The worker stopped before the task finished"
END_LOST = (
    "The task's end was lost: the task store came back from a copy made before it ended "
    "(Redis restarted from a snapshot)"
)
#: How long a job may go unrenewed before Docket gives it to another worker (a live worker
#: renews its jobs four times as often). Docket's sweep finds such a job at most a quarter
#: of this (jittered by up to 25 %) later: about 20 s in all, inside the 30 s lease on the
#: task record, so a lost worker's task is taken over, or failed as lost, before its record
#: lease passes.
REDELIVERY_TIMEOUT = timedelta(seconds=15)
#: How long Docket's loop waits between two looks at the queue and at its finished jobs.
#: With every slot busy it sleeps this long before freeing one, so it caps a worker at
#: ``concurrency`` tasks per interval: Docket's own 250 ms held two workers to 80 short
#: tasks a second (benchmarks/tasks.py). An idle worker asks Redis once per interval.
CHECK_INTERVAL = timedelta(milliseconds=50)


class NotAWorkerServer(Exception):
    """The server cannot run as a worker; the message says what to change."""


async def run_worker(
    server: Server[Any],
    *,
    concurrency: int = 10,
    grace: float = 25.0,
    ready: Callable[[], None] = lambda: None,
) -> None:
    """Run ``server``'s queued tasks until SIGTERM or SIGINT (this owns the process)."""
    tasks = server.tasks
    if tasks is None:
        raise NotAWorkerServer(f"Server {server.name!r} has no task tools: nothing to run")
    queue = tasks.queue
    if not isinstance(queue, TaskQueue):
        raise NotAWorkerServer(
            f"Server {server.name!r} has no task queue: set MCPSERVE_TASK_QUEUE "
            "(or Server(task_queue=...)) to the Redis its front-ends use"
        )
    from docket import Worker

    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    registry = server.registry
    taken: dict[str, str] = {}  # the job of each task this worker runs, by task id
    detached: set[asyncio.Task[None]] = set()

    async with server.running():
        docket = queue.docket
        async with Worker(
            docket,
            concurrency=concurrency,
            redelivery_timeout=REDELIVERY_TIMEOUT,
            minimum_check_interval=CHECK_INTERVAL,
            schedule_automatic_tasks=False,
        ) as worker:

            async def job(raw: str) -> None:
                await run_detachable(worker, run_job(tasks, registry, raw, taken), detached, stop)

            docket.register(job, names=[JOB])
            taking = asyncio.create_task(worker.run_forever(), name="mcpserve-worker")
            announcing = asyncio.create_task(_ready_once_taking(docket, worker.name, ready))
            stopping = asyncio.create_task(stop.wait())
            await asyncio.wait({taking, stopping}, return_when=asyncio.FIRST_COMPLETED)
            stopping.cancel()
            announcing.cancel()
            # Cancelled, Docket takes nothing new and waits for the running jobs.
            taking.cancel()
            _, running = await asyncio.wait({taking, *detached}, timeout=grace)
            if running:
                await hand_back(tasks, queue, registry, taken)
                await tasks.abandon(WORKER_STOPPED)
                await asyncio.wait({taking, *detached}, timeout=grace)
            if taking.done() and not taking.cancelled() and taking.exception() is not None:
                raise taking.exception()  # type: ignore[misc]


async def run_detachable(
    worker: Any,
    run: Coroutine[Any, Any, None],
    detached: set[asyncio.Task[None]],
    stop: asyncio.Event,
) -> None:
    """Docket's job: ``run``, let go of if Docket loses Redis meanwhile. Docket then waits
    for every job it runs before it takes anything new, and a task may run for hours: the
    job ends there, and the task goes on in this process, which holds its lease and hears
    its ``tasks/update`` and ``tasks/cancel`` as before (``stop`` set: a SIGTERM, not Redis,
    ended Docket's session; the job stays). Docket acknowledges the job once Redis is back,
    or gives it again; a job given again for a task this worker runs is dropped
    (``run_job``)."""
    # Docket's session on one connection, which stops when Redis fails. Not its public API:
    # without it, a job is never let go of, as before.
    session_ended = getattr(getattr(worker, "_processing_session", None), "stopping", None)
    task = asyncio.create_task(run)
    try:
        while not task.done():
            await asyncio.wait({task}, timeout=0.25)
            if isinstance(session_ended, asyncio.Event) and session_ended.is_set():
                if not task.done() and not stop.is_set():
                    detached.add(task)
                    task.add_done_callback(detached.discard)
                    return
                break
        await task
    except asyncio.CancelledError:  # cancelled by Docket (its cancel, or a stop)
        task.cancel()
        raise


async def _ready_once_taking(docket: Docket, name: str, ready: Callable[[], None]) -> None:
    """Call ``ready`` once the worker takes jobs: Docket starts its heartbeat, which lists
    the worker among the docket's, only when its consumer group and listeners are set up."""
    while True:
        with contextlib.suppress(RedisError):  # Redis away: the worker reconnects by itself
            if any(seen.name == name for seen in await docket.workers()):
                ready()
                return
        await asyncio.sleep(0.05)


async def hand_back(
    tasks: Tasks, queue: TaskQueue, registry: Registry, taken: dict[str, str]
) -> None:
    """The running tasks that are safe to run again, with runs left, go back on the queue
    (see the module's docstring); the others stay, for :meth:`Tasks.abandon` to fail."""
    for task_id, running in list(tasks.running.items()):
        raw = taken.get(task_id)
        tool = None if raw is None else registry.tool(parsed_job(raw)["tool"])
        if not isinstance(tool, TaskTool) or running.record.attempts > tool.retries:
            continue
        running.released = True  # from now on its function's end is not recorded
        try:
            record = await tasks.store.release(task_id, tasks.instance, queue.deadline())
        except TaskStoreUnavailable:
            record = None
        if record is None or record.owner is not None or record.terminal:
            running.released = False  # not released (ended, or the store away): as the others
            continue
        tasks.running.pop(task_id, None)
        try:
            await queue.docket.add(JOB, key=f"{task_id}:{record.attempts}")(raw)
        except Exception:  # Redis went away: the task fails once the queue timeout passes
            logger.exception("Task %s could not be queued again", task_id)
        else:
            logger.info("Task %s handed back to the queue", task_id)
        await tasks.changed(record)  # listeners hear it queued again
        if running.job is not None:
            running.job.cancel()


async def run_job(
    tasks: Tasks, registry: Registry, raw: Any, taken: dict[str, str] | None = None
) -> None:
    """One queued task, run here (see the module's docstring)."""
    try:
        job = parsed_job(raw)
    except ValueError:
        logger.error("A job on the task queue is not an mcpserve task: dropped")
        return
    tool = registry.tool(job["tool"])
    retries = tool.retries if isinstance(tool, TaskTool) else 0
    until = time.time() + tasks.lease_seconds
    if job["taskId"] in tasks.running:
        return  # given again, while it runs here (``run_detachable``)
    held = await tasks.store.get(job["taskId"])
    # Held by this worker, which does not run it: it ran here and ended, and the store came
    # back from a copy made before its end (Redis restarted from a snapshot), with its job.
    # A tool safe to run again is handed back to be taken again; any other must not run.
    if (
        held is not None
        and not held.terminal
        and held.owner == tasks.instance
        and (
            held.attempts > retries
            or not await tasks.store.release(held.task_id, tasks.instance, None)
        )
    ):
        await RunningTask(tasks, held, {}).finish("failed", error=InternalError(END_LOST))
        return
    record = await tasks.store.claim(job["taskId"], tasks.instance, until, retries)
    if record is None or record.terminal:
        return  # expired, or cancelled while it waited
    if record.owner != tasks.instance:
        if not holder_lost(record, until):  # given again, while its worker runs it
            logger.info("Task %s: its job came again while its worker runs it", record.task_id)
            return
        # Its worker was lost, and it is not safe to run again.
        await RunningTask(tasks, record, {}).finish("failed", error=InternalError(WORKER_LOST))
        return
    params = job["params"]
    caller = job["auth"]
    request = Request(
        job["taskId"],
        "tools/call",
        params,
        read_meta(params),
        auth=Auth(
            caller["principal"],
            frozenset(caller["scopes"]),
            caller["claims"],
            checked=caller["checked"],
        ),
    )
    ctx = TaskContext(request, tasks.runtime)
    running = tasks.adopt(record, ctx)
    await running.save()  # taken: the status message "queued" is gone for every reader
    if not isinstance(tool, TaskTool):
        missing = f"The tool {job['tool']!r} is not a task tool of this worker's server"
        await running.finish("failed", error=InternalError(missing))
        tasks.running.pop(record.task_id, None)
        return
    request.target = tool
    if job.get("started"):  # it ran on the front-end up to ctx.start_task(): again, here
        running.replay = ctx
        if job.get("replay") is not None:
            ctx.replay_rounds(
                params.get("name", tool.key), params.get("arguments") or {}, job["replay"]
            )
    if taken is not None:
        taken[record.task_id] = raw
    try:
        await tasks.execute(tool, params.get("arguments") or {}, ctx)
    finally:
        if taken is not None:
            taken.pop(record.task_id, None)
