"""Running tools as tasks, and the ``tasks/*`` methods.

A tool registered with ``task="optional"`` or ``task="required"`` is a :class:`TaskTool`.
Called by a client whose request declares the tasks extension, it answers with a
``CreateTaskResult`` and its function goes on in the background; without the extension an
optional one runs as an ordinary call, and a required one is -32021. When the task starts
is the tool's choice (``task_start``):

* ``"call"`` (default): at once. Questions the function asks (``ctx.elicit``,
  ``ctx.sample``, ``ctx.list_roots``) park the task in ``input_required`` until
  ``tasks/update`` brings the answers.
* ``"handler"``: the call runs as an ordinary one, multi round-trip rounds included, until
  the function awaits ``ctx.start_task()``; the rest runs as the task. So a tool can ask
  its questions up front, synchronously, and then work for an hour.

Inside a task ``ctx.progress`` sets the task's ``statusMessage``, and nothing is sent to
the client: there is no stream left to send it on (``notifications/progress`` and
``notifications/message`` are not for tasks). ``tasks/cancel`` cancels the function's
asyncio task; it ends ``cancelled`` unless it had already finished.
"""

from __future__ import annotations

import asyncio
import logging
import math
import os
import time
from collections.abc import Awaitable, Callable
from typing import Any, Literal, Protocol

from ..._types import JSONDict, Result, UserFunction
from ...protocol import constants as c
from ...protocol.core import Request, answered
from ...protocol.errors import (
    InternalError,
    InvalidRequest,
    MCPError,
    MissingClientCapability,
    new_ref,
)
from ...protocol.jsonrpc import dumps
from ...server.context.context import Context
from ...server.entries.tools import Tool
from ...server.runtime import Runtime
from .records import (
    TASKS_EXTENSION,
    MemoryTaskStore,
    TaskRecord,
    TaskStore,
    TaskStoreUnavailable,
    TooManyTasks,
)
from .running import RunningTask, running_task_of

logger = logging.getLogger("mcpserve.tasks")

TaskMode = Literal["optional", "required"]
TaskStart = Literal["call", "handler"]
REQUIRED_EXTENSION: JSONDict = {"extensions": {TASKS_EXTENSION: {}}}
#: The bus event type of an update or cancel for a task running in another process.
CONTROL_EVENT = "task-control"
STORE_UNAVAILABLE = "The task store is unavailable; try again shortly"


class Tasks:
    """The tasks extension of one server: starting and running tasks, and the ``tasks/*``
    methods that read, answer and cancel them."""

    def __init__(
        self,
        runtime: Runtime,
        *,
        store: TaskStore | None = None,
        ttl_seconds: float = 3600.0,
        poll_interval_ms: int = 500,
        max_result_bytes: int = 4 * 1024 * 1024,
        publish: Callable[[JSONDict], Awaitable[None]] | None = None,
        queue: Queue | None = None,
    ) -> None:
        self.runtime = runtime
        self.store: TaskStore = store if store is not None else MemoryTaskStore()
        self.ttl_ms = max(1, round(ttl_seconds * 1000))
        self.poll_interval_ms = poll_interval_ms
        self.max_result_bytes = max_result_bytes
        self.publish = publish
        #: Tasks whose functions run in this process, by id.
        self.running: dict[str, RunningTask] = {}
        #: Who runs a task's function: the owner of its lease.
        self.instance = os.urandom(8).hex()
        self.lease_seconds = 30.0
        self._renewer: asyncio.Task[None] | None = None
        #: Where task functions run when not here: workers that take them off this queue.
        self.queue = queue

    @staticmethod
    def declared(ctx: Context) -> bool:
        """Whether this request declares the extension (and speaks a revision that has it)."""
        extensions = ctx.client_capabilities.get("extensions")
        return (
            isinstance(extensions, dict)
            and TASKS_EXTENSION in extensions
            and ctx.protocol_version in c.MODERN_VERSIONS
        )

    async def changed(self, record: TaskRecord, detailed: JSONDict | None = None) -> None:
        """Save the record, and announce ``detailed``: the state that changed, taken when
        it did (:meth:`RunningTask.announce`), by default now."""
        if detailed is None:
            detailed = record.detailed()
        await self._save(record)
        if self.publish is not None:
            await self.publish(
                {
                    "type": "task",
                    "taskId": record.task_id,
                    "principal": record.principal,
                    "task": detailed,
                }
            )

    async def _save(self, record: TaskRecord) -> None:
        """Keep the record. While the store is away a state on the way is dropped, since the
        next change tries again; an end has no next change, so it is tried again until the
        store is back (Redis restarted, say), for as long as the task's lease would have
        lasted: past it, the task reads failed anyway. A server that is stopping does not
        wait."""
        pause, deadline = 0.1, time.monotonic() + self.lease_seconds
        while True:
            try:
                await self.store.save(record)
                return
            except TaskStoreUnavailable:  # the store logged why
                if (
                    not record.terminal
                    or self.runtime.stop_deadline is not None
                    or time.monotonic() + pause > deadline
                ):
                    logger.warning("Task %s: its new state could not be saved", record.task_id)
                    return
            await asyncio.sleep(pause)
            pause = min(pause * 2, 2.0)

    # -- starting --------------------------------------------------------------------------

    async def call(self, tool: Taskable, arguments: Any, ctx: Context) -> Result:
        """``tools/call`` of a task tool."""
        if not self.declared(ctx):
            if tool.task_mode == "required":
                message = f"Tool {tool.name!r} runs only as a task: declare {TASKS_EXTENSION}"
                raise MissingClientCapability(REQUIRED_EXTENSION, message)
            return await tool.work(arguments, ctx)
        if self.queue is not None and isinstance(tool, TaskTool) and tool.task_start == "call":
            return await self.queue.call(self, tool, ctx)
        loop = asyncio.get_running_loop()
        started: asyncio.Future[TaskRecord] = loop.create_future()
        job_ctx = TaskContext(ctx.request, self.runtime)

        queue, queued = self.queue, tool if isinstance(tool, TaskTool) else None
        moves = queue is not None and queued is not None

        async def start(message: str | None) -> None:
            if queue is not None and queued is not None:  # the rest runs on a worker (queue.py)
                started.set_result(await queue.enqueue(self, queued, job_ctx, started=True))
                await asyncio.Future()  # cancelled by call(), which answers the request
            await self._start(job_ctx, started, message)

        job_ctx.task_starter = start
        if tool.task_start == "call":
            running = await self._start(job_ctx, started, None)
            running.job = asyncio.create_task(self.execute(tool, arguments, job_ctx))
            # Let the job take its first step: a tasks/cancel that comes before it would
            # cancel a coroutine that never ran, and nothing would record the task's end.
            await asyncio.sleep(0)
            return {"resultType": "task", **running.record.task()}
        # The function runs until it awaits ctx.start_task() (whose task is then the job's
        # own), or ends first: whichever comes first answers the request.
        job = asyncio.create_task(self.execute(tool, arguments, job_ctx))
        try:
            waiting: set[asyncio.Future[Any]] = {job, started}
            await asyncio.wait(waiting, return_when=asyncio.FIRST_COMPLETED)
        except asyncio.CancelledError:  # the request went away before the task existed
            job.cancel()
            raise
        if started.done():
            if moves:
                job.cancel()
            return {"resultType": "task", **started.result().task()}
        answer = job.result()  # ended before it became a task: its own answer
        assert answer is not None
        return answer

    async def _start(
        self, ctx: TaskContext, started: asyncio.Future[TaskRecord], message: str | None
    ) -> RunningTask:
        """Create the task (durably, before anyone hears of it) for the call ``ctx`` runs."""
        record = TaskRecord(
            ctx.principal,
            ttl_ms=self.ttl_ms,
            poll_interval_ms=self.poll_interval_ms,
            status_message=message,
            owner=self.instance,
            lease_until=time.time() + self.lease_seconds,
        )
        await self.create(record)
        running = self.adopt(record, ctx)
        ctx.request.send = None  # the request is answered: nothing more goes on its stream
        started.set_result(record)
        return running

    async def create(self, record: TaskRecord) -> None:
        """Keep a new task, or say in one JSON-RPC error why it cannot be."""
        try:
            await self.store.create(record)
        except TooManyTasks:
            raise InvalidRequest("Too many tasks: wait for some to finish or expire") from None
        except TaskStoreUnavailable:
            raise InternalError(STORE_UNAVAILABLE) from None

    def adopt(self, record: TaskRecord, ctx: TaskContext) -> RunningTask:
        """The task of ``ctx``'s call runs here from now on, in the current asyncio task:
        its lease is renewed, and updates and cancels for it are heard here."""
        running = RunningTask(self, record, ctx.client_capabilities)
        running.job = asyncio.current_task()
        self.running[record.task_id] = running
        if self._renewer is None or self._renewer.done():
            self._renewer = asyncio.create_task(self._renew(), name="mcpserve-task-leases")
        ctx.task = running
        return running

    async def execute(self, tool: Taskable, arguments: Any, ctx: Context) -> Result | None:
        """The tool's work; once it runs as a task, its end is recorded there."""
        ctx.attach(asyncio.current_task())  # ctx.cancelled follows this job, not the request
        try:
            result = await tool.work(arguments, ctx)
        except asyncio.CancelledError:
            if (running := running_task_of(ctx)) is None:
                raise
            await running.finish("cancelled")
            return None
        except MCPError as exc:
            if (running := running_task_of(ctx)) is None:
                raise
            await running.finish("failed", error=exc)
            return None
        except Exception:
            if (running := running_task_of(ctx)) is None:
                raise
            ref = new_ref()
            logger.exception("Task %s failed (ref %s)", running.record.task_id, ref)
            await running.finish("failed", error=InternalError(f"Internal error (ref {ref})"))
            return None
        finally:
            if (running := running_task_of(ctx)) is not None:
                self.running.pop(running.record.task_id, None)
        running = running_task_of(ctx)
        if running is None:
            return result
        if result.get("resultType") == "input_required":
            error = InternalError(
                "The function asked the worker a question it had not asked the client before "
                "ctx.start_task(): ask the same questions on every run"
                if running.replay is not None
                else "A task cannot answer input_required: ask with ctx.elicit"
            )
            await running.finish("failed", error=error)
        elif len(dumps(result)) > self.max_result_bytes:
            error = InternalError(f"The task's result is larger than {self.max_result_bytes} bytes")
            await running.finish("failed", error=error)
        else:
            result.setdefault("resultType", "complete")
            await running.finish("completed", result=result)
        return None

    async def _renew(self) -> None:
        """While functions run here, renew their leases every sixth of a lease: a process
        that dies stops renewing, and its tasks read as failed once their leases pass, or
        are taken over by a worker once it has been silent for ``HOLDER_LOST_AFTER``
        (``records.py``). After a failure (the store away) it tries again within a second,
        so that a holder back from an outage reads as alive again at once."""
        pause = every = self.lease_seconds / 6
        while self.running:
            await asyncio.sleep(pause)
            until = time.time() + self.lease_seconds
            try:
                await self.store.renew(list(self.running), self.instance, until)
                pause = every
            except TaskStoreUnavailable:  # logged by the store
                pause = min(every, 1.0)

    def control(self, event: JSONDict) -> None:
        """A bus event: an update or cancel, sent by the process that received it, for a
        task whose function runs here."""
        if event.get("type") != CONTROL_EVENT:
            return
        running = self.running.get(event.get("taskId"))  # type: ignore[arg-type]
        if running is None or running.record.terminal:
            return
        if event.get("do") == "cancel" and running.job is not None:
            running.job.cancel()
        elif event.get("do") == "update" and isinstance(event.get("responses"), dict):
            running.answer(event["responses"])
            running.announce()

    async def abandon(self, message: str) -> None:
        """Tasks still running here fail with ``message``, and their functions are cancelled."""
        for running in list(self.running.values()):
            await running.finish("failed", error=InternalError(message))
            if running.job is not None:
                running.job.cancel()
        self.running.clear()

    async def shutdown(self) -> None:
        """The server stops: tasks still running here get until the stop's deadline (the
        grace a drain announced; none otherwise), then fail, saying so."""
        deadline = self.runtime.stop_deadline
        jobs = {r.job for r in self.running.values() if r.job is not None and not r.job.done()}
        if jobs and deadline is not None:
            timeout = None if deadline == math.inf else max(0.0, deadline - time.monotonic())
            await asyncio.wait(jobs, timeout=timeout)
        await self.abandon("The server stopped before the task finished")
        if self._renewer is not None:
            self._renewer.cancel()
        await self.store.close()


class Queue(Protocol):
    """Where task functions run when not in this process (``queue.py``: workers)."""

    async def call(self, tasks: Tasks, tool: TaskTool, ctx: Context) -> Result:
        """``tools/call`` of ``tool``: the task is kept and queued; its ``CreateTaskResult``."""
        ...

    async def enqueue(
        self, tasks: Tasks, tool: TaskTool, ctx: Context, *, started: bool = False
    ) -> TaskRecord:
        """The task kept and queued; ``started``: the function ran here up to
        ``ctx.start_task()`` (its rounds' answers go with the job)."""
        ...


class TaskContext(Context):
    """The context of a task tool's call: it can become a task."""

    __slots__ = ("task", "task_starter")

    def __init__(self, request: Request, runtime: Runtime) -> None:
        super().__init__(request, runtime)
        self.task = None
        self.task_starter = None

    async def start_task(self, message: str | None = None) -> bool:
        running = running_task_of(self)
        if running is None or running.replay is None:
            return await super().start_task(message)
        running.replay = None  # on a worker, past the call's questions: the task's work
        if message is not None:
            await running.progress(message)
        return True


class Taskable(Protocol):
    """What :meth:`Tasks.call` runs: a tool that may become a task, and its work (what the
    call does, in a task or not). A :class:`TaskTool`'s work is its function; a proxy's
    forwarded tool's is the upstream's call, and the upstream's task followed to its end."""

    @property
    def name(self) -> str: ...
    @property
    def task_mode(self) -> TaskMode | None: ...
    @property
    def task_start(self) -> TaskStart: ...
    async def work(self, arguments: Any, ctx: Context) -> Result: ...


class TaskTool(Tool):
    """A tool that may run as a task (see the module's docstring)."""

    __slots__ = ("retries", "task_mode", "task_start", "tasks")

    def __init__(
        self,
        fn: UserFunction,
        *,
        tasks: Tasks,
        task: TaskMode,
        task_start: TaskStart = "call",
        retries: int = 0,
        **options: Any,
    ) -> None:
        super().__init__(fn, **options)
        if type(retries) is not int or retries < 0:
            raise ValueError(f"retries must be a whole number, 0 or more, not {retries!r}")
        if task not in ("optional", "required"):
            raise ValueError(f'task must be "optional" or "required", not {task!r}')
        if task_start not in ("call", "handler"):
            raise ValueError(f'task_start must be "call" or "handler", not {task_start!r}')
        self.tasks = tasks
        self.task_mode: TaskMode = task
        self.task_start: TaskStart = task_start
        #: Runs after the first that a task may have when the worker running it dies: the
        #: function is declared safe to run again from the top (``worker.py``).
        self.retries = retries
        self.synchronous = False  # a task outlives the request: never answered inline

    async def run(self, arguments: Any, ctx: Context) -> Result:
        return await self.tasks.call(self, arguments, ctx)

    async def work(self, arguments: Any, ctx: Context) -> Result:
        return await answered(Tool.run(self, arguments, ctx))
