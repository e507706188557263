"""The ``tasks/*`` methods: reading, answering and cancelling a task.

Every one needs the tasks extension in the request's client capabilities (else -32021) and
names a task the caller may see: one that exists, has not expired, and belongs to the
caller's principal; anything else is the same -32602, so a stranger learns nothing
(``docs/decisions.md``, "Who may see a task").

``tasks/update`` and ``tasks/cancel`` act on the process where the task's function runs:
here directly, or through the subscription bus when another process (another worker, another
machine on the shared Redis) runs it. Both are acknowledged at once; the client sees their
effect on its next ``tasks/get``, as the extension allows. A task still queued for a worker
(held by no process) is cancelled in the store, so no worker takes it.
"""

from __future__ import annotations

from typing import Any

from ..._types import Result
from ...protocol.errors import InternalError, InvalidParams, MissingClientCapability
from ...server.context.context import Context
from .records import TASKS_EXTENSION, TaskRecord, TaskStoreUnavailable
from .runner import CONTROL_EVENT, REQUIRED_EXTENSION, STORE_UNAVAILABLE, Tasks
from .running import RunningTask


class TaskMethods:
    """``tasks/get``, ``tasks/update``, ``tasks/cancel``, and the ``taskIds`` of a listen."""

    def __init__(self, tasks: Tasks) -> None:
        self.tasks = tasks

    def _require_extension(self, ctx: Context, what: str) -> None:
        if not self.tasks.declared(ctx):
            raise MissingClientCapability(
                REQUIRED_EXTENSION, f"{what} needs the {TASKS_EXTENSION} extension"
            )

    async def _lookup(self, task_id: str) -> TaskRecord | None:
        try:
            return await self.tasks.store.get(task_id)
        except TaskStoreUnavailable:
            raise InternalError(STORE_UNAVAILABLE) from None

    async def _record(self, ctx: Context) -> TaskRecord:
        self._require_extension(ctx, ctx.request.method)
        task_id = ctx.request.params.get("taskId")
        if type(task_id) is not str:
            raise InvalidParams('Invalid params: "taskId" must be a string')
        record = await self._lookup(task_id)
        if record is None or record.principal != ctx.principal:
            raise InvalidParams("Task not found (unknown, expired, or not yours)")
        return record

    async def get(self, ctx: Context) -> Result:
        return (await self._record(ctx)).detailed()

    async def update(self, ctx: Context) -> Result:
        record = await self._record(ctx)
        responses = ctx.request.params.get("inputResponses")
        if not isinstance(responses, dict):
            raise InvalidParams('Invalid params: "inputResponses" must be an object')
        if record.terminal:
            return {}
        running = self.tasks.running.get(record.task_id)
        if running is not None:
            running.answer(responses)
            await running.announce()
        else:
            await self._tell(record, "update", responses=responses)
        return {}

    async def cancel(self, ctx: Context) -> Result:
        record = await self._record(ctx)
        if record.terminal:
            return {}
        running = self.tasks.running.get(record.task_id)
        if running is not None:
            if running.job is not None:
                running.job.cancel()
        else:
            if record.owner is None and self.tasks.queue is not None:
                await RunningTask(self.tasks, record, {}).finish("cancelled")
            # Also told: a worker may have taken it between the read and the save.
            await self._tell(record, "cancel")
        return {}

    async def _tell(self, record: TaskRecord, do: str, **details: Any) -> None:
        """The process whose lease the task holds acts on it (``Tasks.control``)."""
        if self.tasks.publish is not None:
            await self.tasks.publish(
                {"type": CONTROL_EVENT, "taskId": record.task_id, "do": do, **details}
            )

    async def listened(self, ctx: Context, requested: list[Any]) -> list[str]:
        """The task ids a ``subscriptions/listen`` may hear of: the caller's own."""
        self._require_extension(ctx, "taskIds")
        owned: list[str] = []
        for task_id in requested:
            if type(task_id) is str and task_id not in owned:
                record = await self._lookup(task_id)
                if record is not None and record.principal == ctx.principal:
                    owned.append(task_id)
        return owned
