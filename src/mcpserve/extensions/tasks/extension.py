"""The tasks extension as it joins a server (the seam of ``server/extension.py``).

What it adds: the ``tasks/*`` methods, answered in both eras, the running tasks' end
when the server stops, and with ``task_queue=`` the queue that hands task tools to workers
(``queue.py``), connected while the server runs. Its capability is not its own to declare:
the task tools in the registry declare it (``server/settings.py``), mounted and proxied
ones included.
"""

from __future__ import annotations

from collections.abc import Mapping
from contextlib import AsyncExitStack
from typing import TYPE_CHECKING, Self

from ..._types import JSONDict
from ...protocol.core import Handler
from ...protocol.tasks import TASKS_EXTENSION
from ...server.methods import Method
from ...server.runtime import Runtime
from ...server.subscriptions import Subscriptions
from .methods import TaskMethods
from .runner import Tasks

if TYPE_CHECKING:
    from ...server.config import ServerConfig
    from .queue import TaskQueue


class TasksExtension:
    """The tasks of one server (:class:`~.runner.Tasks`) and their methods."""

    key = TASKS_EXTENSION

    def __init__(self, tasks: Tasks, queue: TaskQueue | None = None) -> None:
        self.tasks = tasks
        #: The queue ``tasks`` hands its task tools to, for workers to run; None runs them here.
        self.queue = queue
        self.task_methods = TaskMethods(tasks)

    @classmethod
    def made(cls, runtime: Runtime, subscriptions: Subscriptions, config: ServerConfig) -> Self:
        """The extension for a server: its tasks publish on, and hear, the server's bus."""
        queue = None
        if config.task_queue is not None:
            from .queue import TaskQueue

            timeout = config.options["task_queue_timeout"]
            queue = TaskQueue(config.task_queue, server_name=config.name, timeout=timeout)
        store = config.task_store()
        tasks = Tasks(runtime, store=store, publish=subscriptions.publish_now, queue=queue)
        joined = cls(tasks, queue)
        subscriptions.sinks.add(joined.tasks.control)
        subscriptions.task_ids = joined.task_methods.listened
        return joined

    def methods(self) -> Mapping[str, Method]:
        answers = self.task_methods
        return {
            "tasks/get": Method(Handler(answers.get)),
            "tasks/update": Method(Handler(answers.update)),
            "tasks/cancel": Method(Handler(answers.cancel)),
        }

    def capability(self) -> JSONDict | None:
        return None

    async def start(self, stack: AsyncExitStack) -> None:
        stack.push_async_callback(self.tasks.shutdown)
        if self.queue is not None:
            await stack.enter_async_context(self.queue)
