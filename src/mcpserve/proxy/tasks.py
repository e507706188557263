"""The tasks extension across the proxy: an upstream's task followed by one of the proxy's.

A 2026-07-28 upstream that declares ``io.modelcontextprotocol/tasks`` may answer any
``tools/call`` with a task, so each of its tools is a :class:`ForwardedTaskTool`. For a
client whose request declares the extension, the call goes upstream with it declared. An
ordinary answer is the call's answer; a ``CreateTaskResult`` makes the call a task of the
proxy's own (``Server.tasks``, started as ``task_start="handler"`` starts one), which
follows the upstream's (:class:`Follower`):

* it asks ``tasks/get`` at the upstream's ``pollIntervalMs`` and shows its status message;
* the upstream's questions become the task's (``input_required``); the answers a
  ``tasks/update`` brings go upstream under the upstream's keys;
* it ends as the upstream's ends: completed with its result (made fit as any forwarded
  result is), failed with its error, or cancelled;
* a ``tasks/cancel`` of it cancels the upstream's.

Why a task of the proxy's own, rather than the upstream's ``taskId`` passed through: the
upstream sees one caller, the proxy, so it cannot keep one client's tasks from another.
The proxy's task is the caller's, lives in the proxy's task store, is heard of on
``subscriptions/listen``, and under a gateway is the gateway's, as any mounted task tool's
is (``docs/decisions.md``, "Tasks through a proxy").

A client that does not declare the extension gets the ordinary forwarded call, unchanged:
the upstream is not told of tasks, and a task it answers with anyway is an error
(:func:`~.wire.clean_result`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Coroutine
from typing import Any

from .._types import JSONDict, JSONValue
from ..extensions.tasks.runner import TaskMode, Tasks, TaskStart
from ..extensions.tasks.running import RunningTask, running_task_of
from ..protocol.errors import MCPError
from ..server.context.context import Context
from ..server.context.rounds import MISSING, required_capabilities
from .entries import ForwardedTool
from .forwarding import Forwarder
from .upstream import UpstreamUnavailable
from .wire import UpstreamError, clean_result, downstream_error

logger = logging.getLogger("mcpserve.proxy")

#: How often the upstream is asked, whatever its ``pollIntervalMs`` says (seconds).
MIN_POLL, MAX_POLL, DEFAULT_POLL = 0.05, 10.0, 1.0
#: Failed ``tasks/get`` in a row (the upstream unreachable) before the task fails.
MAX_FAILED_POLLS = 5
#: How long a ``tasks/cancel`` sent upstream may take, when the proxy's task is cancelled.
CANCEL_SECONDS = 5.0
_ENDED = frozenset({"completed", "failed", "cancelled"})


class ForwardedTaskTool(ForwardedTool):
    """A tool of an upstream that offers tasks: it may become a task of the proxy's."""

    __slots__ = ("task_mode", "task_start", "tasks")

    def __init__(
        self, entry: JSONDict, forwarder: Forwarder, tasks: Tasks, name: str | None = None
    ) -> None:
        super().__init__(entry, forwarder, name)
        self.tasks = tasks
        self.task_mode: TaskMode = "optional"  # the upstream decides, call by call
        self.task_start: TaskStart = "handler"  # a task once the upstream's answer is one

    def run(self, arguments: JSONValue, ctx: Context) -> Coroutine[Any, Any, JSONDict]:
        if not self.tasks.declared(ctx):
            return ForwardedTool.run(self, arguments, ctx)
        return self.tasks.call(self, arguments, ctx)

    async def work(self, arguments: JSONValue, ctx: Context) -> JSONDict:
        """The call upstream, and the upstream's task (if it answers with one) to its end."""
        result = await self.forwarder.forward(self.forwarded(arguments), ctx)
        if result.get("resultType") == "task":
            follower = Follower(self.forwarder, result, ctx)
            await ctx.start_task(follower.status_message)
            follower.running = running_task_of(ctx)
            result = await follower.outcome()
        return result


class Follower:
    """One upstream task, followed until it ends."""

    def __init__(self, forwarder: Forwarder, created: JSONDict, ctx: Context) -> None:
        task_id = created.get("taskId")
        if type(task_id) is not str or not task_id:
            raise UpstreamError(
                f"The upstream server {forwarder.upstream.label} answered "
                "tools/call with a task that has no taskId"
            )
        self.forwarder = forwarder
        self.task_id = task_id
        self.ctx = ctx
        #: The proxy's task (None when the client does not speak tasks: it waits instead).
        self.running: RunningTask | None = None
        self.status_message = _text(created.get("statusMessage"))
        self.interval = _interval(created.get("pollIntervalMs"))
        self._ended = False

    @property
    def label(self) -> str:
        return self.forwarder.upstream.label

    async def outcome(self) -> JSONDict:
        """The upstream task's result; raises its error. Cancelled, it cancels upstream."""
        try:
            return await self._follow()
        except asyncio.CancelledError:
            if not self._ended:
                await self._cancel_upstream()
            raise

    async def _follow(self) -> JSONDict:
        failures = 0
        #: The client being asked the upstream's open questions, and their keys.
        asking: asyncio.Task[JSONDict] | None = None
        keys: frozenset[str] = frozenset()
        answered: set[str] = set()  # a poll may still show what was answered: not again
        try:
            while True:
                if asking is None:
                    await asyncio.sleep(self.interval)
                else:  # answers go upstream as soon as the client gives them
                    await asyncio.wait({asking}, timeout=self.interval)
                if asking is not None and asking.done():
                    answers, asking, keys = asking.result(), None, frozenset()
                    answered.update(answers)
                    update = {"taskId": self.task_id, "inputResponses": answers}
                    await self._upstream("tasks/update", update)
                try:
                    task = await self._upstream("tasks/get", {"taskId": self.task_id})
                except UpstreamUnavailable:
                    failures += 1
                    if failures >= MAX_FAILED_POLLS:
                        raise
                    continue
                failures = 0
                status = task.get("status")
                self.interval = _interval(task.get("pollIntervalMs"), self.interval)
                if status in _ENDED:
                    self._ended = True
                    return self._ending(status, task)
                await self._show(_text(task.get("statusMessage")))
                questions = task.get("inputRequests")
                open_ = {}
                if status == "input_required" and isinstance(questions, dict):
                    open_ = {k: q for k, q in questions.items() if k not in answered}
                if frozenset(open_) != keys:  # new questions, or the old ones withdrawn
                    if asking is not None:
                        await self._withdraw(asking)
                    keys, asking = frozenset(open_), None
                    if open_:
                        asking = asyncio.create_task(self._ask(open_))
        finally:
            if asking is not None:
                asking.cancel()

    def _ending(self, status: JSONValue, task: JSONDict) -> JSONDict:
        if status == "completed":
            result = task.get("result")
            if isinstance(result, dict):
                return clean_result("tools/call", dict(result), self.label)
            raise UpstreamError(
                f"The upstream server {self.label}'s task completed without a result"
            )
        if status == "failed":
            error = task.get("error")
            error = error if isinstance(error, dict) else {}
            code, message = error.get("code"), error.get("message")
            failed = MCPError(
                message if isinstance(message, str) else "The task failed",
                code=code if type(code) is int else None,
                data=error.get("data"),
            )
            raise downstream_error(failed, "tools/call", {}, self.label)
        if self.running is None:
            raise UpstreamError(f"The upstream server {self.label} cancelled the task")
        raise asyncio.CancelledError  # the upstream's task was cancelled: so is this one

    async def _show(self, message: str | None) -> None:
        if message is not None and message != self.status_message:
            self.status_message = message
            if self.running is not None:
                await self.running.progress(message)

    async def _ask(self, questions: JSONDict) -> JSONDict:
        """The client's answers to the upstream's questions, by the upstream's keys."""
        running = self.running
        if running is None:
            raise UpstreamError(
                f"The upstream server {self.label}'s task asked for input, "
                "which only a client that speaks tasks can give"
            )
        relayed = {key: Question(question) for key, question in questions.items()}
        return await running.ask(relayed)

    async def _withdraw(self, asking: asyncio.Task[JSONDict]) -> None:
        """The upstream no longer asks: neither does the proxy's task."""
        asking.cancel()
        await asyncio.wait({asking})
        if not asking.cancelled():
            asking.exception()  # answered or failed as it was withdrawn: not needed now
        if self.running is not None:
            await self.running.save()

    async def _upstream(self, method: str, params: JSONDict) -> JSONDict:
        return await self.forwarder.ask_once(method, params, self.ctx)

    async def _cancel_upstream(self) -> None:
        with contextlib.suppress(MCPError, ConnectionError, TimeoutError):
            async with asyncio.timeout(CANCEL_SECONDS):
                await asyncio.shield(self._upstream("tasks/cancel", {"taskId": self.task_id}))
                return
        logger.warning(
            "Could not cancel task %s of the upstream server %s", self.task_id, self.label
        )


class Question:
    """An upstream task's question, put to the client as the proxy's task's own."""

    def __init__(self, wire: JSONValue) -> None:
        if not isinstance(wire, dict):
            raise UpstreamError("The upstream server sent an input request that is not an object")
        self.wire: JSONDict = wire
        try:
            self.needed = required_capabilities(wire)
        except ValueError as exc:
            raise UpstreamError(f"The upstream server asked for input: {exc}") from None

    def to_wire(self) -> JSONDict:
        return self.wire

    def required_capabilities(self) -> JSONDict:
        return self.needed

    def parse(self, raw: JSONValue) -> object:
        return raw if isinstance(raw, dict) else MISSING  # the upstream checks the rest


def _interval(value: JSONValue, default: float = DEFAULT_POLL) -> float:
    if type(value) is not int and type(value) is not float:
        return default
    return min(MAX_POLL, max(MIN_POLL, value / 1000))


def _text(value: object) -> str | None:
    return value[:1000] if isinstance(value, str) else None
