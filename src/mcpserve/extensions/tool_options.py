"""A tool made of ``@server.tool`` options, with what the extensions make of them.

``app`` and ``visibility`` are the MCP Apps extension's (``_meta.ui``); ``task`` makes a
task tool of the tasks extension, which joins the server then. A tool without these loads
neither extension.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..server.entries.entry import Pool
from ..server.entries.options import ToolOptions
from ..server.entries.tools import Tool

if TYPE_CHECKING:
    from .tasks.runner import Tasks


def make_tool(
    fn: Callable[..., Any], options: ToolOptions, *, pool: Pool, tasks: Callable[[], Tasks]
) -> Tool:
    """The tool ``fn`` with ``options``; ``tasks`` joins the tasks extension when asked."""
    fields: dict[str, Any] = dict(options)  # keyword arguments, checked by Tool itself
    if "app" in fields or "visibility" in fields:
        from .apps import with_app_meta

        fields = with_app_meta(fields)
    if "task" not in fields:
        if "retries" in fields:
            raise TypeError('retries= is for task tools: add task="optional" or "required"')
        return Tool(fn, pool=pool, **fields)
    from .tasks.runner import TaskTool

    return TaskTool(fn, tasks=tasks(), pool=pool, **fields)
