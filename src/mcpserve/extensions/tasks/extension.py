"""The tasks extension as it joins a server (the seam of ``server/extension.py``).

What it adds: the ``tasks/*`` methods, answered in both eras, and the running tasks' end
when the server stops. Its capability is not its own to declare: the task tools in the
registry declare it (``server/settings.py``), mounted and proxied ones included.
"""

from __future__ import annotations

from collections.abc import Mapping
from contextlib import AsyncExitStack
from typing import Self

from ..._types import JSONDict
from ...protocol.core import Handler
from ...protocol.tasks import TASKS_EXTENSION
from ...server.methods import Method
from ...server.runtime import Runtime
from ...server.subscriptions import Subscriptions
from .methods import TaskMethods
from .records import TaskStore
from .runner import Tasks


class TasksExtension:
    """The tasks of one server (:class:`~.runner.Tasks`) and their methods."""

    key = TASKS_EXTENSION

    def __init__(self, tasks: Tasks) -> None:
        self.tasks = tasks
        self.task_methods = TaskMethods(tasks)

    @classmethod
    def made(cls, runtime: Runtime, subscriptions: Subscriptions, store: TaskStore) -> Self:
        """The extension for a server: its tasks publish on, and hear, the server's bus."""
        joined = cls(Tasks(runtime, store=store, publish=subscriptions.publish_now))
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
