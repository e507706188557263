"""A task whose function runs in this process: its questions, its status, and its end.

The process that runs a task's function (the one that received the call, or a worker)
holds a :class:`RunningTask` for it. Questions the function asks park the task in
``input_required`` under keys never reused, answers from ``tasks/update`` resume it, and
every change is saved and announced in the order it happened (:meth:`RunningTask.announce`),
so listeners hear the task's states as they were. :class:`.runner.Tasks` starts, runs and
ends them.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any, Literal, Protocol

from ..._types import JSONDict, Result
from ...metrics.names import TASKS
from ...protocol.capabilities import missing_capabilities
from ...protocol.errors import MCPError, MissingClientCapability
from ...server.context.context import Context
from ...server.context.rounds import MISSING, InputRequest
from ...server.runtime import Runtime
from .records import TaskRecord


class Keeper(Protocol):
    """What a running task needs of the extension that runs it (:class:`.runner.Tasks`):
    the server's runtime (its metrics), and where its changes are saved and announced."""

    @property
    def runtime(self) -> Runtime: ...

    async def changed(self, record: TaskRecord, detailed: JSONDict | None = None) -> None: ...


class RunningTask:
    """A task whose function runs in this process: its questions, and its end."""

    def __init__(self, tasks: Keeper, record: TaskRecord, capabilities: JSONDict) -> None:
        self.tasks = tasks
        self.record = record
        self.capabilities = capabilities
        self.job: asyncio.Task[Any] | None = None
        #: Key on the wire -> (what was asked, the answer to come).
        self._pending: dict[str, tuple[InputRequest, asyncio.Future[Any]]] = {}
        self._keys = 0
        #: The last save and announcement under way: each waits for the one before, so
        #: listeners hear the task's states in the order they happened.
        self._announcing: asyncio.Task[None] | None = None
        #: The status ``mcpserve.tasks`` counts this task under, once counted.
        self._counted: str | None = None
        self.count_status()
        #: Handed back to the queue (a worker stopping, ``worker.py``): this process no
        #: longer speaks for the task, whatever its function does before it stops.
        self.released = False
        #: On a worker, the call's context while a ``task_start="handler"`` function runs
        #: again up to ``ctx.start_task()``: its questions are the call's rounds, answered
        #: from the job (``queue.py``), not the task's.
        self.replay: Context | None = None

    def count_status(self) -> None:
        """Move this task to its current status in ``mcpserve.tasks`` (metrics on)."""
        metrics = self.tasks.runtime.metrics
        status = self.record.status
        if metrics is None or status == self._counted:
            return
        if self._counted is not None:
            metrics.record(TASKS, -1, (self._counted,))
        metrics.record(TASKS, 1, (status,))
        self._counted = status

    async def ask(self, requests: Mapping[str, InputRequest]) -> JSONDict:
        """Park the task until the client answers every question (``tasks/update``)."""
        if self.replay is not None:
            return self.replay.rounds.ask(requests)
        needed: JSONDict = {}
        for request in requests.values():
            needed.update(request.required_capabilities())
        missing = missing_capabilities(needed, self.capabilities)
        if missing:
            raise MissingClientCapability(missing)
        loop = asyncio.get_running_loop()
        answers = {key: loop.create_future() for key in requests}
        for key, request in requests.items():
            self._issue(request, answers[key])
        await self._changed()
        try:
            return {key: await answer for key, answer in answers.items()}
        except asyncio.CancelledError:  # nobody waits for these answers any more
            self._withdraw(set(answers.values()))
            raise

    def _withdraw(self, answers: set[asyncio.Future[Any]]) -> None:
        for key, (_, answer) in list(self._pending.items()):
            if answer in answers:
                del self._pending[key]
                self.record.input_requests.pop(key, None)
        if not self._pending and self.record.status == "input_required":
            self.record.status = "working"

    def _issue(self, request: InputRequest, answer: asyncio.Future[Any]) -> None:
        # Keys are never reused over the task's life: a question asked again gets a new one.
        self._keys += 1
        key = f"input-{self._keys}"
        self._pending[key] = (request, answer)
        self.record.input_requests[key] = request.to_wire()
        self.record.status = "input_required"

    def answer(self, responses: Mapping[str, Any]) -> None:
        """``tasks/update``: answers for keys that are outstanding count, others are ignored;
        an answer that does not fit is asked again, under a new key."""
        for key, raw in responses.items():
            pending = self._pending.pop(key, None)
            if pending is None:
                continue
            self.record.input_requests.pop(key, None)
            request, answer = pending
            parsed = request.parse(raw)
            if parsed is MISSING:
                self._issue(request, answer)
            elif not answer.done():
                answer.set_result(parsed)
        if not self._pending and self.record.status == "input_required":
            self.record.status = "working"
        self.record.touch()

    async def progress(self, message: str) -> None:
        self.record.status_message = message
        await self._changed()

    async def save(self) -> None:
        """Keep and announce the task's state as it is now (questions withdrawn, say)."""
        await self._changed()

    async def finish(
        self,
        status: Literal["completed", "failed", "cancelled"],
        *,
        result: Result | None = None,
        error: MCPError | None = None,
    ) -> None:
        record = self.record
        if record.terminal or self.released:  # terminal states never change
            return
        record.status = status
        record.input_requests = {}
        record.result = result
        if error is not None:
            record.error = error.to_wire()
            record.status_message = error.message
        await self._changed()

    def announce(self) -> asyncio.Task[None]:
        """Save and announce the task's state as it is now, after every earlier one. It is
        taken at once: an answer that resumes the function announces the state the answer
        left before the function, resuming, announces its own."""
        self.count_status()
        self.record.touch()
        detailed = self.record.detailed()
        previous = self._announcing

        async def in_turn() -> None:
            if previous is not None:
                await asyncio.wait({previous})
            await self.tasks.changed(self.record, detailed)

        self._announcing = asyncio.get_running_loop().create_task(in_turn())
        return self._announcing

    async def _changed(self) -> None:
        if self.released:
            return
        # Shielded: a function cancelled meanwhile still has its state saved and announced.
        await asyncio.shield(self.announce())


def running_task_of(ctx: Context) -> RunningTask | None:
    """The task this call runs as in this process, once it became one."""
    task = ctx.task
    return task if isinstance(task, RunningTask) else None
