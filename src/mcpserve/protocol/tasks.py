"""A task as the wire shows it (the ``io.modelcontextprotocol/tasks`` extension): the
extension's identifier, how a client declares it, and the states a task passes through.

A task is ``working`` until it ends ``completed``, ``failed`` or ``cancelled`` (the terminal
states, which never change); on the way it may be ``input_required``. The server's task
records and the client's task handles read the same states, so they are written here once.
"""

from __future__ import annotations

from typing import Literal

from .._types import JSONDict
from .constants import TASKS_EXTENSION as TASKS_EXTENSION

Status = Literal["working", "input_required", "completed", "failed", "cancelled"]
TERMINAL: frozenset[str] = frozenset({"completed", "failed", "cancelled"})
STATUSES: frozenset[str] = TERMINAL | {"working", "input_required"}


def declaring_tasks(capabilities: JSONDict) -> JSONDict:
    """``capabilities`` with the tasks extension declared too."""
    extensions = capabilities.get("extensions")
    extensions = extensions if isinstance(extensions, dict) else {}
    return {**capabilities, "extensions": {**extensions, TASKS_EXTENSION: {}}}
