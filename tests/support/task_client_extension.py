"""The tasks extension (``io.modelcontextprotocol/tasks``) for the official ``mcp`` client.

``mcp`` 2.3 has no tasks API, but it lets a client extension declare an extension and claim
a result shape: :class:`TasksExtension` declares the tasks extension in each request's
client capabilities and claims ``tools/call`` results whose ``resultType`` is ``"task"``
(:class:`CreatedTask`). ``Client.call_tool`` then hands such a result to
:meth:`TasksExtension.resolve`, which follows the task to its end and returns what the tool
returned, as if the call had not become a task; ``client.session.call_tool(...,
allow_claimed=True)`` gives the :class:`CreatedTask` itself, so a test can read, answer or
cancel the task elsewhere.

The task methods go through any ``ClientSession`` (``client.session``) with the session's
own ``send_request``, so they travel on the official client's transport with its stamp
(protocol version, client capabilities in ``_meta``, ``Mcp-Method``, and ``Mcp-Name`` set
to the task id as the extension asks): :func:`get_task`, :func:`update_task`,
:func:`cancel_task`, and :func:`follow_task`, which polls ``tasks/get`` until the task ends
and, when given ``answer``, answers each question of an ``input_required`` task through
``tasks/update``. ``resolve`` answers with the client's own callbacks (its
``elicitation_callback``, ...), the path ``Client.call_tool`` takes for ``input_required``
results. A ``failed`` task raises :class:`mcp.shared.exceptions.MCPError` with its error; a
``cancelled`` one raises :class:`TaskCancelled`.

Test scaffolding for the official client: nothing in ``mcpserve`` imports it.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Literal

import anyio
from mcp.client import ClientRequestContext
from mcp.client.extension import ClaimContext, ClientExtension, ResultClaim
from mcp.client.session import ClientSession
from mcp.shared.exceptions import MCPError
from mcp_types import (
    CallToolResult,
    ErrorData,
    InputRequest,
    InputRequests,
    InputResponse,
    Request,
    RequestParams,
    Result,
)
from pydantic import ConfigDict

TASKS = "io.modelcontextprotocol/tasks"
TERMINAL = frozenset({"completed", "failed", "cancelled"})
#: The longest a follow waits between two ``tasks/get``, whatever the server suggests.
MOST_BETWEEN_POLLS = 0.5

Answer = Callable[[str, InputRequest], Awaitable[InputResponse | ErrorData]]


class CreatedTask(Result):
    """A ``tools/call`` answered with a task (``resultType: "task"``)."""

    model_config = ConfigDict(extra="allow")
    result_type: Literal["task"]
    task_id: str
    status: str
    status_message: str | None = None
    poll_interval_ms: int | None = None


class TaskState(Result):
    """A ``tasks/get`` answer: the task's status and, once it ended, its result or error."""

    model_config = ConfigDict(extra="allow")
    task_id: str
    status: str
    status_message: str | None = None
    poll_interval_ms: int | None = None
    input_requests: InputRequests | None = None
    result: dict[str, Any] | None = None
    error: ErrorData | None = None


class TaskCancelled(Exception):
    """The task followed ended ``cancelled``."""

    def __init__(self, state: TaskState) -> None:
        super().__init__(f"task {state.task_id} was cancelled")
        self.state = state


class TaskParams(RequestParams):
    task_id: str


class UpdateParams(TaskParams):
    input_responses: dict[str, Any]


class GetTask(Request[TaskParams, Literal["tasks/get"]]):
    method: Literal["tasks/get"] = "tasks/get"
    name_param = "taskId"


class UpdateTask(Request[UpdateParams, Literal["tasks/update"]]):
    method: Literal["tasks/update"] = "tasks/update"
    name_param = "taskId"


class CancelTask(Request[TaskParams, Literal["tasks/cancel"]]):
    method: Literal["tasks/cancel"] = "tasks/cancel"
    name_param = "taskId"


class Acknowledged(Result):
    """The answer to ``tasks/update`` and ``tasks/cancel``."""

    model_config = ConfigDict(extra="allow")


async def get_task(session: ClientSession, task_id: str) -> TaskState:
    """``tasks/get``."""
    return await session.send_request(GetTask(params=TaskParams(task_id=task_id)), TaskState)


async def update_task(
    session: ClientSession, task_id: str, responses: dict[str, InputResponse | ErrorData]
) -> None:
    """``tasks/update`` with the answers to an ``input_required`` task's questions."""
    wire = {
        key: value.model_dump(by_alias=True, mode="json", exclude_none=True)
        for key, value in responses.items()
    }
    params = UpdateParams(task_id=task_id, input_responses=wire)
    await session.send_request(UpdateTask(params=params), Acknowledged)


async def cancel_task(session: ClientSession, task_id: str) -> None:
    """``tasks/cancel``."""
    await session.send_request(CancelTask(params=TaskParams(task_id=task_id)), Acknowledged)


def outcome(state: TaskState) -> CallToolResult:
    """What the tool returned, from an ended task; its error raised when it failed."""
    if state.status == "failed":
        assert state.error is not None, state
        raise MCPError(state.error.code, state.error.message, state.error.data)
    if state.status == "cancelled":
        raise TaskCancelled(state)
    assert state.status == "completed", state
    assert state.result is not None, state
    return CallToolResult.model_validate(state.result)


async def follow_task(
    session: ClientSession,
    task_id: str,
    *,
    within: float,
    answer: Answer | None = None,
) -> TaskState:
    """Poll ``tasks/get`` until the task ends (at most ``within`` seconds: ``TimeoutError``
    past it); with ``answer``, each question of an ``input_required`` task is answered
    through ``tasks/update``, once."""
    deadline = time.monotonic() + within
    answered: set[str] = set()
    while True:
        state = await get_task(session, task_id)
        if state.status in TERMINAL:
            return state
        if state.status == "input_required" and answer is not None and state.input_requests:
            fresh = {k: r for k, r in state.input_requests.items() if k not in answered}
            if fresh:
                responses = {key: await answer(key, request) for key, request in fresh.items()}
                await update_task(session, task_id, responses)
                answered.update(fresh)
        if time.monotonic() > deadline:
            raise TimeoutError(f"task {task_id} still {state.status} after {within} s")
        suggested = (state.poll_interval_ms or 0) / 1000
        await anyio.sleep(min(max(suggested, 0.02), MOST_BETWEEN_POLLS))


def answer_with_callbacks(session: ClientSession) -> Answer:
    """Answers questions with the client's own callbacks, as ``Client.call_tool`` does for
    an ``input_required`` result."""

    async def answer(key: str, request: InputRequest) -> InputResponse | ErrorData:
        meta = request.params.meta if request.params else None
        context = ClientRequestContext(session=session, request_id=key, meta=meta)
        return await session.dispatch_input_request(context, request)

    return answer


class TasksExtension(ClientExtension):
    """Declares the tasks extension; ``Client.call_tool`` follows the tasks it creates.

    ``within`` bounds each follow (seconds).
    """

    identifier = TASKS

    def __init__(self, within: float = 60.0) -> None:
        self.within = within

    def claims(self) -> Sequence[ResultClaim[Any]]:
        return [ResultClaim(result_type="task", model=CreatedTask, resolve=self.resolve)]

    async def resolve(self, created: CreatedTask, context: ClaimContext) -> CallToolResult:
        session = context.session
        state = await follow_task(
            session, created.task_id, within=self.within, answer=answer_with_callbacks(session)
        )
        return outcome(state)
