"""One options record per kind of registration, used by the decorator, the ``add_`` method
and the entry's own constructor (``@server.tool``, ``server.add_tool`` and ``Tool(...)``).

:class:`Options` is what every kind takes (and all a prompt takes); :class:`ToolFields` what
a :class:`~.tools.Tool` is made of; :class:`ToolOptions` adds what the server's extensions
make of a tool (a task, an app); :class:`ResourceOptions` is a resource's or a template's.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from math import inf
from typing import Literal, TypedDict

from ..._types import JSONDict
from .cache import CachePolicy
from .kinds import ResourceEntry


class Options(TypedDict, total=False):
    """What every kind of registration takes."""

    name: str | None
    title: str | None
    description: str | None
    icons: list[JSONDict] | None
    meta: JSONDict | None
    #: Run a plain function in the thread pool (``None``: only when marked ``@blocking``).
    blocking: bool | None
    #: Scopes an authenticated caller needs to see and use it (403 with a step-up challenge
    #: otherwise). No restriction when the server has no authentication.
    scopes: Iterable[str]
    #: Labels for the catalogue (``_meta["io.mcpserve/tags"]``), matched by
    #: ``Server(include_tags=..., exclude_tags=...)`` and ``server.enable(tags=...)``.
    tags: Iterable[str]
    #: A PEP 440 version: several versions of one name may be registered; callers see the
    #: highest unless ``server.pin(name, version)`` pins another.
    version: str


class ToolFields(Options, total=False):
    """What a tool is made of (``Tool(fn, pool=..., **fields)``)."""

    annotations: JSONDict | None
    #: Client capabilities the tool cannot do without (-32021 when a request lacks them).
    requires: JSONDict | None
    input_schema: JSONDict | None
    output_schema: JSONDict | None
    #: Who keeps the requestState of its multi round-trip rounds: mcpserve, sealed
    #: ("sealed", default), or the "handler" (``ctx.raw_request_state`` in, verbatim
    #: ``ctx.set_raw_request_state`` out; nothing verified).
    request_state: Literal["sealed", "handler"]
    #: Seconds a call may run before it is cancelled and answered with a tool error naming
    #: the limit (a task fails); overrides ``Server(tool_timeout=...)``. A plain function
    #: given one runs in the thread pool, where it cannot hold the event loop past it.
    timeout: float | None
    #: Calls run at once in this process; more wait their turn (None: no limit).
    max_concurrency: int | None


class ToolOptions(ToolFields, total=False):
    """What ``@server.tool`` and ``server.add_tool`` take: a tool's fields, and what the
    extensions make of it."""

    #: Run as a task (the tasks extension) when the client declares it: "optional" also
    #: runs as an ordinary call for other clients, "required" refuses them (-32021).
    task: Literal["optional", "required"]
    #: When the task starts: with the "call" (default), or when the "handler" awaits
    #: ``ctx.start_task()`` (its questions before that are multi round-trip rounds).
    task_start: Literal["call", "handler"]
    #: Times a task whose worker died runs again from the top on another (safe to repeat).
    retries: int
    #: The MCP App (``server.app(...)``, or its ``ui://`` URI) that shows the tool's results.
    app: ResourceEntry | str
    #: Who may call the tool where apps are shown: "model", "app" (default: both).
    visibility: Iterable[Literal["model", "app"]]


class ResourceOptions(Options, total=False):
    """What a resource or a resource template takes."""

    mime_type: str | None
    size: int | None
    annotations: JSONDict | None
    cache: CachePolicy | None


#: What an option is when it is not given (the others are None).
DEFAULTS: Mapping[str, object] = {"scopes": (), "request_state": "sealed"}


def check_timeout(timeout: float | None, what: str) -> float | None:
    """A timeout is a positive, finite number of seconds, or None for none."""
    if timeout is None:
        return None
    if isinstance(timeout, bool) or not isinstance(timeout, int | float) or not 0 < timeout < inf:
        raise ValueError(f"{what}: a timeout is a positive number of seconds, not {timeout!r}")
    return float(timeout)


def refuse_unknown(options: Mapping[str, object], record: type, what: str) -> None:
    """A keyword ``record`` does not name is a ``TypeError``, as for any call."""
    known: frozenset[str] = getattr(record, "__optional_keys__", frozenset())
    unknown = sorted(set(options) - known)
    if unknown:
        raise TypeError(f"{what}() got an unexpected keyword argument {unknown[0]!r}")
