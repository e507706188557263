"""One options record per kind of registration, shared by the decorator and the ``add_``
method of each kind (``server.tool`` and ``server.add_tool``, ...)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, Literal, TypedDict

from .resources import CachePolicy

if TYPE_CHECKING:
    from .kinds import ResourceEntry


class Options(TypedDict, total=False):
    """What every kind of registration takes."""

    name: str
    title: str
    description: str
    icons: list[dict[str, Any]]
    meta: dict[str, Any]
    #: Run a plain function in the thread pool (``None``: only when marked ``@blocking``).
    blocking: bool
    #: Scopes an authenticated caller needs to see and use it (403 with a step-up challenge
    #: otherwise). No restriction when the server has no authentication.
    scopes: Iterable[str]


class ToolOptions(Options, total=False):
    annotations: dict[str, Any]
    #: Client capabilities the tool cannot do without (-32021 when a request lacks them).
    requires: dict[str, Any]
    input_schema: dict[str, Any]
    output_schema: dict[str, Any]
    #: Run as a task (the tasks extension) when the client declares it: "optional" also
    #: runs as an ordinary call for other clients, "required" refuses them (-32021).
    task: Literal["optional", "required"]
    #: When the task starts: with the "call" (default), or when the "handler" awaits
    #: ``ctx.start_task()`` (its questions before that are multi round-trip rounds).
    task_start: Literal["call", "handler"]
    #: Who keeps the requestState of its multi round-trip rounds: mcpserve, sealed
    #: ("sealed", default), or the "handler" (``ctx.raw_request_state`` in, verbatim
    #: ``ctx.set_raw_request_state`` out; nothing verified).
    request_state: Literal["sealed", "handler"]
    #: The MCP App (``server.app(...)``, or its ``ui://`` URI) that shows the tool's results.
    app: ResourceEntry | str
    #: Who may call the tool where apps are shown: "model", "app" (default: both).
    visibility: Iterable[Literal["model", "app"]]


class ResourceOptions(Options, total=False):
    mime_type: str
    size: int
    annotations: dict[str, Any]
    cache: CachePolicy
