"""Tools run as tasks, seen from the client: ``await client.call_tool(name, arguments,
task=True)`` returns a :class:`TaskHandle` instead of the result.

::

    handle = await client.call_tool("rebuild_index", {"shards": 4}, task=True)
    print(handle.task_id, (await handle.status())["status"])
    result = await handle.result()   # waits; a failed task raises as a failed call does
    await handle.cancel()            # asks the server to stop it

The era the client agreed with the server decides which protocol carries the task:

* 2026-07-28, the tasks extension (``io.modelcontextprotocol/tasks``): the call declares
  the extension in its per-request capabilities, and the server decides whether it becomes
  a task. :meth:`TaskHandle.result` polls ``tasks/get`` at the task's ``pollIntervalMs``,
  or with ``listen=True`` follows ``notifications/tasks`` on a ``subscriptions/listen``
  stream (and asks ``tasks/get`` when a while passes without one). The open questions of a
  task in ``input_required`` are answered with the client's input handlers and sent with
  ``tasks/update``, each key once. Questions the server asks before the task starts (an
  ``input_required`` answer to the call itself) are answered as any call's rounds are.
* 2025-11-25, the handshake era's own tasks: the call carries ``task: {}`` when the server
  declares ``tasks.requests.tools.call`` and lists the tool with ``execution.taskSupport``
  ``"optional"`` or ``"required"``. ``result()`` polls ``tasks/get`` and asks
  ``tasks/result`` once the task has ended, or as soon as it waits for input if the client
  has input handlers: the server then asks its questions as requests of its own, which the
  connection answers with those handlers.

A call the server answers at once (it chose to, the tool takes no task, the server offers
none) gives a handle that has finished already, whose ``task_id`` is ``None``
(``docs/decisions.md``, "A call that does not become a task"). Without input handlers a
handle answers nothing: a task waiting for input waits for :meth:`TaskHandle.update` (or
another client that knows its id). How a task ends decides what ``result()`` does:
``completed`` returns the result (``isError`` results too, as a call returns them),
``failed`` raises :class:`~mcpserve.MCPError` with the task's error, as a failed call
raises, and ``cancelled`` raises :class:`TaskCancelled`. A handle keeps how its task ended,
which never changes: ``result()`` again asks the server nothing.
"""

from __future__ import annotations

import asyncio
from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import Any, Protocol

from .._types import JSONDict
from ..protocol import constants as c
from ..protocol.errors import MCPError, MethodNotFound
from ..protocol.tasks import TERMINAL, declaring_tasks
from .handlers import Handlers
from .listen import Subscription

__all__ = ["TaskCancelled", "TaskHandle"]


class TaskClient(Protocol):
    """What a task handle needs of a :class:`~mcpserve.Client`, which has it all."""

    capabilities: JSONDict
    handlers: Handlers
    legacy: bool
    max_input_rounds: int
    server_capabilities: JSONDict

    async def request(
        self, method: str, params: JSONDict | None = None, *, capabilities: JSONDict | None = None
    ) -> JSONDict: ...

    async def list_tools(self) -> list[JSONDict]: ...

    def listen(self, *, task_ids: Sequence[str] = ()) -> Subscription: ...


#: How often ``tasks/get`` is asked, whatever the server suggests (seconds).
MIN_POLL, MAX_POLL, DEFAULT_POLL = 0.01, 60.0, 1.0
#: Following notifications: poll intervals without one before ``tasks/get`` is asked anyway.
LISTEN_RECHECK = 20


class TaskCancelled(Exception):
    """The task ended ``cancelled``: raised by :meth:`TaskHandle.result`."""

    def __init__(self, task_id: str, status_message: str | None = None) -> None:
        told = f": {status_message}" if status_message else ""
        super().__init__(f"Task {task_id} was cancelled{told}")
        self.task_id = task_id
        self.status_message = status_message


class TaskHandle(ABC):
    """A tool call the server runs as a task (or has answered already). Made by
    ``client.call_tool(..., task=True)``; usable while its client is open. Three kinds
    implement it: a call answered at once, a task of the tasks extension, a handshake-era
    task."""

    #: The server's id of the task; ``None`` when the call was answered at once.
    task_id: str | None = None

    @abstractmethod
    async def result(self, *, listen: bool = False) -> JSONDict:
        """Wait for the task to end and return the call's result; a failed task raises
        :class:`~mcpserve.MCPError`, a cancelled one :class:`TaskCancelled`. With
        ``listen=True`` (2026-07-28) it follows the task's notifications instead of
        polling."""

    @abstractmethod
    async def status(self) -> JSONDict:
        """The task as the server shows it now (``tasks/get``): ``status``,
        ``statusMessage``, open ``inputRequests``, the ``result`` or ``error`` once ended."""

    @abstractmethod
    async def cancel(self) -> None:
        """Ask the server to cancel the task (``tasks/cancel``); ``result()`` then raises
        :class:`TaskCancelled`, unless the task ended first. A task that has ended stays as
        it ended."""

    @abstractmethod
    async def update(self, input_responses: JSONDict) -> None:
        """Answer open questions of a task in ``input_required`` yourself
        (``tasks/update``), by their keys in ``inputRequests``."""

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.task_id!r})"


async def start(client: TaskClient, params: JSONDict, options: dict[str, Any]) -> TaskHandle:
    """``tools/call`` with ``params``, as a task if the server makes it one."""
    if client.legacy:
        return await _start_core_task(client, params, options)
    asked = options.pop("capabilities", None)
    capabilities = declaring_tasks(client.capabilities if asked is None else asked)
    result = await client.request("tools/call", params, capabilities=capabilities, **options)
    kind = result.get("resultType", "complete")
    if kind == "task":
        return ExtensionTask(client, result, capabilities)
    if kind == "complete":
        return FinishedCall(result)
    if kind == "input_required":
        raise _unanswered(client, result)
    raise MCPError(
        f"The server answered tools/call {params['name']} with resultType {kind!r}, "
        "which this client does not know"
    )


def _unanswered(client: TaskClient, result: JSONDict) -> MCPError:
    """Why a call that asked for input before its task started went no further."""
    if client.handlers.answers_input:
        return MCPError(
            f"The server still asked for input after {client.max_input_rounds} "
            "rounds, so the task did not start"
        )
    requests = result.get("inputRequests")
    methods = sorted(
        {str(r.get("method")) for r in requests.values() if isinstance(r, dict)}
        if isinstance(requests, dict)
        else ()
    )
    return MethodNotFound(
        f"The server asks {', '.join(methods) or 'for input'} before it starts "
        "the task, and this client has no handler to answer: give the Client "
        "on_elicit, on_sample, on_list_roots or on_input"
    )


def _interval(value: Any, default: float = DEFAULT_POLL) -> float:
    if type(value) is not int and type(value) is not float:
        return default
    return min(MAX_POLL, max(MIN_POLL, value / 1000))


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


class FinishedCall(TaskHandle):
    """A call the server answered at once: there is nothing to wait for or cancel."""

    def __init__(self, result: JSONDict) -> None:
        self._result = result

    async def result(self, *, listen: bool = False) -> JSONDict:
        return self._result

    async def status(self) -> JSONDict:
        return {"status": "completed", "result": self._result}

    async def cancel(self) -> None:
        return None  # it has ended: it stays as it ended

    async def update(self, input_responses: JSONDict) -> None:
        return None  # no question is open


class ExtensionTask(TaskHandle):
    """A task of the 2026-07-28 tasks extension."""

    def __init__(self, client: TaskClient, created: JSONDict, capabilities: JSONDict) -> None:
        task_id = created.get("taskId")
        if type(task_id) is not str or not task_id:
            raise MCPError("The server answered tools/call with a task that has no taskId")
        self.task_id: str = task_id
        self._client = client
        #: The call's capabilities: tasks/* must declare the extension as the call did.
        self._capabilities = capabilities
        self._interval = _interval(created.get("pollIntervalMs"))
        #: Keys of questions answered already: a poll may show them until the server acts.
        self._answered: set[str] = set()
        #: The task as it ended, once seen: an ended task never changes.
        self._ended: JSONDict | None = None

    async def _send(self, method: str, params: JSONDict) -> JSONDict:
        return await self._client.request(method, params, capabilities=self._capabilities)

    async def status(self) -> JSONDict:
        task = await self._send("tasks/get", {"taskId": self.task_id})
        self._interval = _interval(task.get("pollIntervalMs"), self._interval)
        if task.get("status") in TERMINAL:
            self._ended = task
        return task

    async def cancel(self) -> None:
        await self._send("tasks/cancel", {"taskId": self.task_id})

    async def update(self, input_responses: JSONDict) -> None:
        update = {"taskId": self.task_id, "inputResponses": input_responses}
        await self._send("tasks/update", update)
        self._answered.update(input_responses)

    async def result(self, *, listen: bool = False) -> JSONDict:
        if self._ended is not None:
            return self._outcome(self._ended)
        task = await (self._follow() if listen else self._poll())
        return self._outcome(task)

    async def _poll(self) -> JSONDict:
        while True:
            await asyncio.sleep(self._interval)
            task = await self.status()
            if task.get("status") in TERMINAL:
                return task
            await self._answer(task)

    async def _follow(self) -> JSONDict:
        async with self._client.listen(task_ids=[self.task_id]) as notes:
            if self.task_id not in (notes.acknowledged or {}).get("taskIds", ()):
                return await self._poll()  # the server sends nothing about this task
            task = await self.status()  # what changed before the stream was acknowledged
            while task.get("status") not in TERMINAL:
                await self._answer(task)
                changed = await self._next_change(notes)
                if changed is None:  # the server ended the stream: back to polling
                    return await self._poll()
                task = changed
            return task

    async def _next_change(self, notes: Subscription) -> JSONDict | None:
        """The task from its next notification, or from ``tasks/get`` after a long quiet."""
        while True:
            try:
                async with asyncio.timeout(self._interval * LISTEN_RECHECK):
                    note = await anext(notes)
            except TimeoutError:
                return await self.status()
            except StopAsyncIteration:
                return None
            params = note.get("params")
            if (
                note.get("method") == "notifications/tasks"
                and isinstance(params, dict)
                and params.get("taskId") == self.task_id
            ):
                self._interval = _interval(params.get("pollIntervalMs"), self._interval)
                task = {key: value for key, value in params.items() if key != "_meta"}
                if task.get("status") in TERMINAL:
                    self._ended = task
                return task

    async def _answer(self, task: JSONDict) -> None:
        """Answer the task's open questions with the client's handlers, if it has any."""
        questions = task.get("inputRequests")
        if (
            task.get("status") != "input_required"
            or not isinstance(questions, dict)
            or not self._client.handlers.answers_input
        ):
            return
        open_ = {
            key: q
            for key, q in questions.items()
            if key not in self._answered and isinstance(q, dict)
        }
        if open_:
            await self.update(await self._client.handlers.answer(open_))

    def _outcome(self, task: JSONDict) -> JSONDict:
        status = task.get("status")
        if status == "completed":
            result = task.get("result")
            if not isinstance(result, dict):
                raise MCPError(f"Task {self.task_id} completed without a result")
            return result
        if status == "failed":
            error = task.get("error")
            error = error if isinstance(error, dict) else {}
            code = error.get("code")
            message = _text(error.get("message")) or _text(task.get("statusMessage"))
            raise MCPError(
                message or f"Task {self.task_id} failed",
                code=code if type(code) is int else None,
                data=error.get("data"),
            )
        raise TaskCancelled(self.task_id, _text(task.get("statusMessage")))


# -- the handshake era's tasks (2025-11-25) ----------------------------------------------------


async def _start_core_task(
    client: TaskClient, params: JSONDict, options: dict[str, Any]
) -> TaskHandle:
    if await _takes_core_task(client, params["name"]):
        params = {**params, "task": {}}
    result = await client.request("tools/call", params, **options)
    created = result.get("task")
    if isinstance(created, dict) and "content" not in result:
        return CoreTask(client, created)
    return FinishedCall(result)


async def _takes_core_task(client: TaskClient, name: str) -> bool:
    """Whether the server offers a task for this tool (``basic/utilities/tasks.mdx`` §
    Tool-Level Negotiation, 2025-11-25): its capability first, then the tool's entry."""
    offered: Any = client.server_capabilities
    for key in ("tasks", "requests", "tools", "call"):
        offered = offered.get(key) if isinstance(offered, dict) else None
    if not isinstance(offered, dict):
        return False
    for tool in await client.list_tools():
        if tool.get("name") == name:
            execution = tool.get("execution")
            support = execution.get("taskSupport") if isinstance(execution, dict) else None
            return support in ("optional", "required")
    return False


class CoreTask(TaskHandle):
    """A task of the 2025-11-25 handshake era."""

    def __init__(self, client: TaskClient, created: JSONDict) -> None:
        task_id = created.get("taskId")
        if type(task_id) is not str or not task_id:
            raise MCPError("The server answered tools/call with a task that has no taskId")
        self.task_id: str = task_id
        self._client = client
        self._interval = _interval(created.get("pollInterval"))
        #: The call's answer, once ``tasks/result`` gave it: an ended task never changes.
        self._call_result: JSONDict | None = None

    async def status(self) -> JSONDict:
        task = await self._client.request("tasks/get", {"taskId": self.task_id})
        self._interval = _interval(task.get("pollInterval"), self._interval)
        return task

    async def cancel(self) -> None:
        try:
            await self._client.request("tasks/cancel", {"taskId": self.task_id})
        except MCPError as exc:
            # This era refuses to cancel a task that has ended (-32602): as with the
            # extension, such a task simply stays as it ended.
            if exc.code != c.INVALID_PARAMS or (await self.status()).get("status") not in TERMINAL:
                raise

    async def update(self, input_responses: JSONDict) -> None:
        raise RuntimeError(
            "2025-11-25 tasks have no tasks/update: the server asks its questions as requests "
            "of its own, which the client's input handlers answer"
        )

    async def result(self, *, listen: bool = False) -> JSONDict:
        if self._call_result is not None:
            return self._call_result
        answers = self._client.handlers.answers_input
        while True:
            task = await self.status()
            status = task.get("status")
            if status == "cancelled":
                raise TaskCancelled(self.task_id, _text(task.get("statusMessage")))
            if status in TERMINAL or (status == "input_required" and answers):
                return await self._final()
            await asyncio.sleep(self._interval)

    async def _final(self) -> JSONDict:
        """``tasks/result``: the call's own answer, once the task ends (its questions asked
        as requests on the way)."""
        try:
            self._call_result = await self._client.request("tasks/result", {"taskId": self.task_id})
            return self._call_result
        except MCPError:
            task = await self.status()
            if task.get("status") == "cancelled":
                raise TaskCancelled(self.task_id, _text(task.get("statusMessage"))) from None
            raise
