"""Operations, as the MCP semantic conventions see them, and the method table measured.

An operation is one request a server answers. Its outcome, ``error.type``, is absent on
success; ``tool_error`` for a ``tools/call`` answered with an ``isError`` result; the
JSON-RPC code, as a string, for an error answer (an :class:`MCPError`); and the exception's
class for anything else (which the client sees as -32603 with a reference). Its target
attribute names what a request names: a tool, a prompt, a resource. Spans
(``server/tracing.py``) and metrics compute both here.

:func:`metered` wraps each handler of a method table for a server that records metrics
(``recorder.py``); like tracing, a server that does not is not wrapped and pays nothing.
Unlike a span, a measurement needs nothing around an awaited call: a handler that answers
at once is measured at once and still runs inline (no task, no stream), so metrics cost
the fast path two clock reads and a dict lookup. Each request that waits adds one to
``mcpserve.requests.in_flight`` while it does (one answered at once holds the event loop:
no scrape can see it running), and each records its duration in
``mcp.server.operation.duration`` with ``mcp.method.name``, ``mcp.protocol.version``,
``error.type`` and, for ``tools/call``, ``gen_ai.tool.name``: the tool's name when the
server has that tool (a name no tool has is left out, so that callers cannot make a series
per name they invent; ``docs/decisions.md``, "Metric labels stay bounded").
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from time import perf_counter
from typing import Protocol, TypeVar

from .._types import JSONDict
from ..protocol.core import Answer, Handler, HandlerContext, Request
from ..protocol.errors import MCPError
from .names import IN_FLIGHT, OPERATION_DURATION, Bound
from .recorder import Metrics, one_call

TOOL_ERROR = "tool_error"
#: The attribute of each method's target, and the parameter that names it.
TARGETS = {
    "tools/call": ("gen_ai.tool.name", "name"),
    "prompts/get": ("gen_ai.prompt.name", "name"),
    "resources/read": ("mcp.resource.uri", "uri"),
}


def error_type(exc: BaseException) -> str:
    """``error.type`` of an operation that raised ``exc``."""
    if isinstance(exc, MCPError):
        return str(exc.code)
    return type(exc).__qualname__


def result_error_type(result: JSONDict) -> str | None:
    """``error.type`` of an operation that answered ``result``: ``tool_error`` or None."""
    return TOOL_ERROR if result.get("isError") is True else None


class RequestContext(HandlerContext, Protocol):
    """What measuring reads of a handler's context: its request."""

    @property
    def request(self) -> Request: ...


C = TypeVar("C", bound=RequestContext)


def metered(table: Mapping[str, Handler[C]], metrics: Metrics) -> dict[str, Handler[C]]:
    """Each handler of ``table`` measured; inline handlers stay inline."""
    return {
        name: Handler(
            _measured(name, handler.call, metrics),
            inline=handler.inline,
            resolve=handler.resolve,
            scopes=handler.scopes,
        )
        for name, handler in table.items()
    }


def _measured(method: str, call: Callable[[C], Answer], metrics: Metrics) -> Callable[[C], Answer]:
    names_tool = method == "tools/call"
    in_flight = one_call(metrics.bound(IN_FLIGHT, (method,)))
    #: The duration's recording call by (tool, error, version): bound once each.
    durations: dict[tuple[str | None, str | None, str], Bound] = {}

    def finish(ctx: C, started: float, error: str | None) -> None:
        seconds = perf_counter() - started
        request = ctx.request
        tool = None
        if names_tool and request.target is not None:
            name = request.params.get("name")
            tool = name if isinstance(name, str) else None
        key = (tool, error, request.meta.protocol_version)
        observe = durations.get(key)
        if observe is None:
            observe = durations[key] = one_call(metrics.bound(OPERATION_DURATION, (method, *key)))
        observe(seconds)

    async def awaited(ctx: C, started: float, pending: Awaitable[JSONDict]) -> JSONDict:
        # In flight only while it waits: an answer given at once held the event loop, so
        # no scrape could have seen it running.
        in_flight(1)
        try:
            result = await pending
        except BaseException as exc:  # cancelled too: the request is no longer in flight
            in_flight(-1)
            finish(ctx, started, error_type(exc))
            raise
        in_flight(-1)
        finish(ctx, started, result_error_type(result))
        return result

    def measured(ctx: C) -> Answer:
        started = perf_counter()
        try:
            answer = call(ctx)
        except BaseException as exc:
            finish(ctx, started, error_type(exc))
            raise
        if isinstance(answer, dict):
            finish(ctx, started, result_error_type(answer))
            return answer
        return awaited(ctx, started, answer)

    return measured
